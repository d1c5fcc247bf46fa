/*
 * RAM-upload images: validation of an uploaded module before any of its code can run.
 *
 * What must stay true: nothing in the image is trusted. Every address the device will follow
 * (registry, entry table, names, function pointers) must lie inside the uploaded bytes; function
 * pointers must carry the Thumb bit (on RISC-V: be 2-byte aligned) and point into the image; .bss
 * must fit the load region. Only after every check passes is .bss zeroed and the registry returned.
 * Errors say what is wrong and how to fix it (which linker script to use, which flag is missing).
 */
#include <stdint.h>
#include <string.h>

#include "firmware.h"

static bool inside(uint32_t addr, uint32_t len, uint32_t lo, uint32_t hi) {
    return addr >= lo && addr <= hi && len <= hi - addr;
}

int tether__mcu_image_load(const tether_board_info *board, uint32_t size,
                           const tether_func_registry **out) {
    const uint32_t base = (uint32_t)board->load_base;
    const uint32_t region_end = base + board->load_size;
    const tether_mcu_image_header *h = (const tether_mcu_image_header *)board->load_base;
    *out = NULL;
    if (size < sizeof *h) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "module image of %u bytes is smaller than its %u-byte header",
                                (unsigned)size, (unsigned)sizeof *h);
    }
    if (h->magic != TETHER_MCU_IMAGE_MAGIC || h->version != TETHER_MCU_IMAGE_VERSION) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "not a tether MCU image (magic 0x%08x version %u; expected 0x%08x "
                                "version %u): link with the firmware's module.ld and upload the "
                                "objcopy -O binary output",
                                (unsigned)h->magic, (unsigned)h->version,
                                (unsigned)TETHER_MCU_IMAGE_MAGIC,
                                (unsigned)TETHER_MCU_IMAGE_VERSION);
    }
    if (h->link_addr != base) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image linked for address 0x%08x but this device's load region "
                                "starts at 0x%08x: re-link with this firmware's module.ld",
                                (unsigned)h->link_addr, (unsigned)base);
    }
    if (h->image_size != size) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image header says %u bytes but %u were uploaded",
                                (unsigned)h->image_size, (unsigned)size);
    }
    const uint32_t image_end = base + size;
    if ((h->bss_start & 3u) != 0 || h->bss_start < image_end ||
        !inside(h->bss_start, h->bss_size, base, region_end)) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "image needs the load region up to 0x%08x (%u bytes of code/data, "
                                ".bss 0x%08x + %u bytes) but the region is 0x%08x + %u bytes",
                                (unsigned)(h->bss_start + h->bss_size), (unsigned)size,
                                (unsigned)h->bss_start, (unsigned)h->bss_size, (unsigned)base,
                                (unsigned)board->load_size);
    }
    if ((h->registry & 3u) != 0 ||
        !inside(h->registry, (uint32_t)sizeof(tether_func_registry), base, image_end)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "image registry address 0x%08x is not an aligned address inside "
                                "the image [0x%08x, 0x%08x)",
                                (unsigned)h->registry, (unsigned)base, (unsigned)image_end);
    }
    const tether_func_registry *reg = (const tether_func_registry *)(uintptr_t)h->registry;
    if (reg->count == 0 || reg->count > TETHER_MCU_MAX_MODULE_FUNCS) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "image registry lists %u functions; 1..%u are supported",
                                (unsigned)reg->count, (unsigned)TETHER_MCU_MAX_MODULE_FUNCS);
    }
    uint32_t entries = (uint32_t)(uintptr_t)reg->entries;
    if ((entries & 3u) != 0 ||
        !inside(entries, (uint32_t)(reg->count * sizeof(tether_func_entry)), base, image_end)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "image registry entries at 0x%08x are not inside the image",
                                (unsigned)entries);
    }
    for (size_t i = 0; i < reg->count; i++) {
        const tether_func_entry *e = &reg->entries[i];
        uint32_t name = (uint32_t)(uintptr_t)e->name;
        if (!inside(name, 1, base, image_end) || memchr(e->name, 0, image_end - name) == NULL) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "image registry entry %u: name at 0x%08x is not a string "
                                    "inside the image",
                                    (unsigned)i, (unsigned)name);
        }
        uint32_t fn = (uint32_t)(uintptr_t)e->fn.packed;
#if defined(__riscv)
        if ((fn & 1u) != 0) { /* RISC-V instructions are 2-byte aligned (C extension) */
            return tether_set_error(TETHER_ERR_ALIGNMENT,
                                    "function '%s' at 0x%08x is not 2-byte aligned: not a RISC-V "
                                    "instruction address",
                                    e->name, (unsigned)fn);
        }
        fn |= 1u; /* the range check below ignores bit 0 */
#endif
        if ((fn & 1u) == 0) {
            return tether_set_error(TETHER_ERR_ALIGNMENT,
                                    "function '%s' at 0x%08x lacks the Thumb bit: Cortex-M runs "
                                    "Thumb code only (compile with -mthumb, and take function "
                                    "addresses from C, not from raw labels)",
                                    e->name, (unsigned)fn);
        }
        if (!inside(fn & ~1u, 2, base + (uint32_t)sizeof *h, image_end)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "function '%s' at 0x%08x points outside the image code "
                                    "[0x%08x, 0x%08x)",
                                    e->name, (unsigned)fn, (unsigned)(base + sizeof *h),
                                    (unsigned)image_end);
        }
    }
    int rc = tether_registry_check(reg);
    if (rc != TETHER_OK) {
        return rc;
    }
    memset((void *)(uintptr_t)h->bss_start, 0, h->bss_size);
    /* The code was written with data stores: make sure they complete before it is fetched. */
#if defined(__riscv)
    __asm volatile(".option push\n.option arch, +zifencei\nfence rw, rw\nfence.i\n.option pop" ::
                       : "memory");
#else
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    *out = reg;
    return TETHER_OK;
}
