/*
 * tether compiler: the RAM-upload link step for tether MCU firmware (docs/mcu.md).
 *
 * A module compiled for a Cortex-M target (`tether compile --target cortex-m3`, a static
 * library of relocatable objects) becomes an uploadable image by linking it at the firmware's
 * load region against the firmware's exported symbols. Everything needed comes from the
 * firmware build's firmware.json (board, CPU flags, load region, exports id, module.ld and
 * exports.ld next to it). This module finds and reads that description, checks it against what
 * the device reported in HELLO, runs the cross linker (argv arrays, never a shell), and checks
 * the resulting image the way the firmware will (header, link address, region, registry
 * alignment, Thumb bit of every function on Arm) so problems are reported on the host with the file
 * and the reason before anything is uploaded.
 *
 * Ownership: plain structs filled by the calls, no heap memory to release. Errors: negative
 * tether_status with the message in tether_last_error(); nothing partial is left behind (a
 * failed link removes its output files). Host only.
 */
#ifndef TETHER_MCU_LINK_H
#define TETHER_MCU_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TETHER_MCU_PATH_MAX 1024

/* One firmware build, as described by its firmware.json. */
typedef struct tether_mcu_firmware {
    char json[TETHER_MCU_PATH_MAX]; /* path of firmware.json */
    char board[64];                 /* "mps2-an385" */
    char cpu_flags[256];            /* "-mcpu=cortex-m3 -mthumb -mfloat-abi=soft" */
    char
        toolchain[32]; /* "arm-none-eabi" (default), "riscv64-unknown-elf": <toolchain>-gcc links */
    char core[32];     /* "cortex-m4" (the board table's core); "" in older descriptions */
    char features[128];                  /* "dsp fp.sp hard-float", as HELLO's cpu_features */
    uint64_t load_addr, load_size;       /* RAM load region */
    uint32_t exports_id;                 /* 0 when the file has none */
    char module_ld[TETHER_MCU_PATH_MAX]; /* absolute paths of the linker scripts */
    char exports_ld[TETHER_MCU_PATH_MAX];
} tether_mcu_firmware;

/* Reads `path`: a firmware.json, or a folder holding one. Errors name the file and the field. */
int tether_mcu_firmware_load(const char *path, tether_mcu_firmware *out);

/* Finds the description of `board`: $TETHER_FIRMWARE (a firmware.json, or a folder holding one
 * or <board>/firmware.json) when set, else each of dirs[0..n) as <dir>/<board>/firmware.json and
 * <dir>/firmware.json. TETHER_ERR_NOT_FOUND lists where it looked. */
int tether_mcu_firmware_find(const char *board, const char *const *dirs, int n,
                             tether_mcu_firmware *out);

/* Checks that the device that sent HELLO runs the described firmware: board name, load region
 * and exports id (TETHER_ERR_MISMATCH naming the field and both values; an exports id of 0 on
 * either side is not checked). */
int tether_mcu_firmware_check(const tether_mcu_firmware *fw, const char *board, uint64_t load_addr,
                              uint64_t load_size, uint32_t exports_id);

/* Whether code compiled for `target` (a profile name such as "cortex-m55") runs on an MCU
 * core: `core` and `features` as the board's HELLO says them (arch, cpu_features: dsp, fp.sp,
 * fp.dp, hard-float, mve, mve.fp). Refused (TETHER_ERR_MISMATCH, naming what the core lacks and
 * the --target to use): a Linux target, an instruction set above the core's (Armv6-M < Armv7-M
 * < Armv7E-M < Armv8-M Mainline < Armv8.1-M), another float ABI, an FPU precision, DSP or MVE
 * the core does not have. `board` only names the board in the message. */
int tether_mcu_target_check(const char *target, const char *board, const char *core,
                            const char *features);

/* What the link produced. */
typedef struct tether_mcu_image {
    uint64_t size;      /* bytes to upload (header, code, read-only data, data) */
    uint64_t link_addr; /* = the load region */
    uint64_t bss_addr, bss_size;
    uint64_t registry; /* address of tether_module_registry */
    uint64_t code;     /* executable bytes (instructions, veneers, libgcc helpers) */
    uint64_t rodata;   /* read-only data (weights linked into the module, names) */
    uint32_t num_functions;
    char functions[16][64]; /* the first 16 registry names */
} tether_mcu_image;

/* Checks an image as the firmware's LOAD_MODULE will: magic and version, link address = load
 * region, header size = `size`, .bss inside the region, registry and entry table 4-byte aligned
 * and inside the image, every function pointer with the Thumb bit (Arm) or 2-byte aligned
 * (RISC-V) and inside the image's code,
 * names NUL-terminated inside the image. Fills img (size, addresses, functions). */
int tether_mcu_image_check(const tether_mcu_firmware *fw, const uint8_t *data, size_t size,
                           tether_mcu_image *img);

/* Links inputs (objects or static libraries, e.g. an artifact's libtether_model.a) for the
 * firmware into out_elf and its raw image out_bin, and checks the image. `target` is the
 * compile target the inputs were built for (a profile name such as "cortex-m3"; its CPU and
 * float ABI must run on the firmware's CPU; NULL = not checked). The linker's output goes to
 * <out_bin>.log; a region overflow or a call to a symbol the firmware does not export are
 * reported as such. */
int tether_mcu_link(const tether_mcu_firmware *fw, const char *target, const char *const *inputs,
                    int ninputs, const char *out_elf, const char *out_bin, tether_mcu_image *img);

/* Links the library of an artifact directory (metadata.json: target, library) into
 * <out_dir>/<library base>-<board>.elf/.bin; bin_path receives the image path. */
int tether_mcu_link_artifact(const tether_mcu_firmware *fw, const char *artifact_dir,
                             const char *out_dir, char *bin_path, size_t bin_path_size,
                             tether_mcu_image *img);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_MCU_LINK_H */
