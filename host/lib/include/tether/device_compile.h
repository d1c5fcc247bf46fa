/*
 * tether device compile: compile a model for the device a session talks to, in one call
 * (docs/architecture.md, "compile for a device"). What `tether run/bench MODEL`, `ab`, `tune`,
 * `compile --device/--upload` and the Python package (`Session.run_model`, `.ab`) use, so that
 * the choices they take from the device are made in one place:
 *
 *   target   an MCU board's core from HELLO arch (mps2-an385: cortex-m3), else "<arch>-linux"
 *            with the device's CPU (-march, e.g. x86-64-v4) unless the caller names them;
 *   pools    a memory pool given with capacity TETHER_POOL_SIZE_FROM_DEVICE (`--pool NAME`)
 *            takes the size of the device's pool of that name (HELLO pools);
 *   images   OpenCL texture activations stay within the device's image limits (HELLO), unless
 *            the caller set them;
 *   link     on an MCU board the artifact's static library (or any .o/.a) is linked at the
 *            board's load region against its firmware.json, found from `firmware`,
 *            $TETHER_FIRMWARE or `firmware_dirs`, and checked against HELLO (board, load
 *            region, exports id) before anything is uploaded; a .bin image is checked the same.
 *
 * tether_compile_for_device = resolve + compile (+ tuning log) + open + prepare (upload through
 * tether_device_loader, which does the MCU link). Built into tether_host, which links the
 * compiler (tether_compiler).
 *
 * Ownership: the options struct holds what resolve filled in (target, cpu, pools) and
 * o->compile points into it: do not copy it after resolve. The session is borrowed and must
 * outlive a prepared artifact. Errors: negative tether_status, the message in
 * tether_last_error() (a compile error's full text in tether_error_detail()); temporary link
 * folders are removed on every path; a failed compile_for_device leaves no artifact open.
 */
#ifndef TETHER_DEVICE_COMPILE_H
#define TETHER_DEVICE_COMPILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/host.h"
#include "tether/mcu_link.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A memory pool's capacity meaning "the size of the device's pool of this name" (HELLO). */
#define TETHER_POOL_SIZE_FROM_DEVICE (-2)

typedef struct tether_device_compile_options {
    /* What tether_compile_model takes. build.target NULL: the device's target; build.cpu NULL
     * with the target left to the device: the device's CPU. */
    tether_compile_options compile;
    const char *tuning_log; /* `tether tune`'s log: its best schedules are applied; NULL none */
    FILE *notes;            /* the tuning log's note and the MCU image line; NULL = silent */
    /* MCU boards: firmware.json, its folder or a folder of per-board folders; NULL:
     * $TETHER_FIRMWARE, then <dir>/<board>/firmware.json for each of firmware_dirs (NULL: beside
     * the running program: its build tree's device/mcu, <prefix>/share/tether/firmware). */
    const char *firmware;
    const char *const *firmware_dirs;
    int nfirmware_dirs;
    /* Where a link's temporary folder is made and how it is removed (the CLI registers its
     * folders for its signal handler); NULL: mkdtemp under $TMPDIR, removed recursively. */
    int (*tempdir_make)(char *out, size_t size, const char *tag);
    void (*tempdir_remove)(const char *dir);
    /* Called for every MCU image made or checked (what: the file's name), e.g. to print it
     * (tether_device_image_line); NULL: the line goes to notes, when set. */
    void (*on_image)(void *ctx, const char *what, const tether_mcu_firmware *fw,
                     const tether_mcu_image *img);
    void *on_image_ctx;
    /* How a file appears in messages (the CLI names its temporary artifacts); NULL: as is. */
    const char *(*path_shown)(const char *path);
    /* The loader prepare uses; NULL = tether_device_loader with this struct as its context. */
    tether_artifact_loader loader;
    void *loader_ctx;
    /* Filled by tether_device_compile_resolve. */
    char target[64], cpu[128];
    tether_plan_pool pools[TETHER_MEMORY_MAX_POOLS];
    int resolved;
} tether_device_compile_options;

/* tether_compile_options_init's defaults, but build.target NULL (the device's). */
void tether_device_compile_options_init(tether_device_compile_options *o);

/* The compile target and CPU ("" = the target's baseline) for code that runs on the device d:
 * an MCU board's core (cpu ""), or "<arch>-linux" with the CPU its HELLO reports, on x86-64
 * with +avxvnni / +avx512vnni when its cpu_features name them (tether_cpu_for_device).
 * TETHER_ERR_UNSUPPORTED ("... give --target") when the compiler has no such target. */
int tether_device_target(const tether_device_info *d, char *target, size_t tn, char *cpu,
                         size_t cn);

/* Fills in what o leaves to the device d (target and CPU, pool sizes, image limits; see the top
 * of this file). TETHER_ERR_INVALID_ARG for an unknown target or a pool the device lacks ("--pool
 * sram: the device has no such pool (its pools: ...)"). Idempotent. */
int tether_device_compile_resolve(const tether_device_info *d, tether_device_compile_options *o);

/* The firmware description of an MCU device d (see `firmware` above), checked against HELLO. */
int tether_device_firmware(const tether_device_info *d, const tether_device_compile_options *o,
                           tether_mcu_firmware *fw);

/* An MCU RAM image of `path` for the device d: a .bin is read and checked, object code (.o/.a,
 * compiled for `target`, NULL = unchecked) is linked in a temporary folder. *data (malloc'd, the
 * caller frees it) holds *size bytes; img describes it (o->on_image is told). A link error names
 * `path` and the linker's first line, never the temporary folder. */
int tether_device_image(const tether_device_info *d, const tether_device_compile_options *o,
                        const char *path, const char *target, uint8_t **data, size_t *size,
                        tether_mcu_image *img);

/* The image line: "NAME: MCU image N bytes (code C, read-only data R) + .bss B bytes, linked at
 * 0xADDR for BOARD, K functions". */
void tether_device_image_line(FILE *f, const char *what, const tether_mcu_firmware *fw,
                              const tether_mcu_image *img);

/* An artifact loader (tether/artifact.h) that runs anything on the device it can: shared
 * objects, OpenCL C and .bin images as they are, .o/.a linked for an MCU board first
 * (tether_device_image). ctx: a tether_device_compile_options or NULL (defaults). */
int tether_device_loader(void *ctx, tether_session *s, const char *path, const char *target,
                         const char *name, uint64_t *module);

/* tether_artifact_prepare with o's loader (default tether_device_loader; o NULL = defaults). */
int tether_device_prepare(tether_artifact *a, tether_session *s,
                          const tether_device_compile_options *o);

/* Compiles `model` into `dir` for the device of session s (resolve, then the tuning log, then
 * tether_compile_model; res may be NULL), then, when out is not NULL, opens the artifact and
 * prepares it on s (the MCU link included): *out is a prepared artifact, or NULL on failure.
 * With out NULL it only compiles (an MCU holds one module at a time: `ab` prepares each side in
 * turn with tether_device_prepare). */
int tether_compile_for_device(tether_session *s, const char *model, const char *dir,
                              tether_device_compile_options *o, tether_compile_result *res,
                              tether_artifact **out);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_DEVICE_COMPILE_H */
