/*
 * Keeps every symbol listed in exports.def in the firmware image (the table below is referenced
 * from a KEEP section, so --gc-sections cannot drop the functions), so that the addresses in the
 * generated exports.ld are real code for uploaded modules to call.
 *
 * What must stay true: tether__mcu_exports_id() hashes exactly what gen_module_ld.cmake hashes
 * for firmware.json (each address as 8 lowercase hex digits and a newline, in exports.def
 * order; the first 4 bytes of the SHA-256, big-endian), so a host can tell whether the
 * firmware.json it links against describes the firmware that is running.
 */
#include <math.h>
#include <string.h>

#include "firmware.h"

#include "tether/rpc/sha256.h"

/* libgcc's run-time helpers (the AEABI names, Arm only); only their addresses are taken */
#if defined(__arm__)
#define HELPER(name) void name(void);
#else
#define HELPER(name)
#endif
HELPER(__aeabi_fadd)
HELPER(__aeabi_fsub)
HELPER(__aeabi_frsub)
HELPER(__aeabi_fmul)
HELPER(__aeabi_fdiv)
HELPER(__aeabi_fcmpeq)
HELPER(__aeabi_fcmplt)
HELPER(__aeabi_fcmple)
HELPER(__aeabi_fcmpge)
HELPER(__aeabi_fcmpgt)
HELPER(__aeabi_fcmpun)
HELPER(__aeabi_i2f)
HELPER(__aeabi_ui2f)
HELPER(__aeabi_f2iz)
HELPER(__aeabi_f2uiz)
HELPER(__aeabi_idiv)
HELPER(__aeabi_uidiv)
HELPER(__aeabi_idivmod)
HELPER(__aeabi_uidivmod)
#undef HELPER

#define TETHER_EXPORT(name) (const void *)(uintptr_t)&name,
#if defined(__arm__)
#define TETHER_EXPORT_ARM(name) TETHER_EXPORT(name)
#else
#define TETHER_EXPORT_ARM(name)
#endif
__attribute__((used, section(".tether_exports"))) static const void *const exports[] = {
#include "exports.def"
};

uint32_t tether__mcu_exports_id(void) {
    static const char hex[] = "0123456789abcdef";
    tether_sha256_ctx ctx;
    tether_sha256_init(&ctx);
    for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
        uint32_t a = (uint32_t)(uintptr_t)exports[i];
        char line[9];
        for (int k = 0; k < 8; k++) {
            line[k] = hex[(a >> (28 - 4 * k)) & 0xFu];
        }
        line[8] = '\n';
        tether_sha256_update(&ctx, line, sizeof line);
    }
    uint8_t digest[32];
    tether_sha256_final(&ctx, digest);
    return (uint32_t)digest[0] << 24 | (uint32_t)digest[1] << 16 | (uint32_t)digest[2] << 8 |
           (uint32_t)digest[3];
}
