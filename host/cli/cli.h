/*
 * Internal interface between the `tether` CLI's files (not installed, not a library API).
 * main.c owns the device-facing commands (info, upload, run, bench) and exports the artifact
 * runner so that model.c (ab, run --reference; built with the compiler) reuses the exact path a
 * user's `tether run ARTIFACT_DIR` takes. Errors are printed by the callee as one line
 * "tether <command>: <reason>" on stderr; return values are CLI exit codes (0, 1 failed, 2 usage).
 */
#ifndef TETHER_CLI_H
#define TETHER_CLI_H

#include <stdint.h>

#include "tether/host.h"
#include "tether/npy.h"

#define TETHER_CLI_MAX_IO 32

/* Where and how to reach the device (the common options of every device command). */
typedef struct tether_cli_device {
    const char *url;        /* NULL: $TETHER_DEVICE, else local: */
    const char *token_file; /* NULL: $TETHER_TOKEN_FILE, else none */
    int timeout_ms;         /* 0: the library default */
} tether_cli_device;

/* What one artifact run measured. The outputs are owned by the report (tether_cli_report_free). */
typedef struct tether_cli_report {
    tether_call_result call; /* the first call: return code, time, stack high-water mark */
    tether_time_stats time;  /* TIME over number x repeat calls */
    int nout;
    tether_npy out[TETHER_CLI_MAX_IO];
} tether_cli_report;

/* Uploads the artifact in `dir` to the device, feeds the .npy/.pb inputs, calls the entry once
 * and then TIME (number, repeat, min_repeat_ms), and fills *rep. Prints nothing on success. */
int tether_cli_run_artifact(const tether_cli_device *dev, const char *dir, int nin,
                            const char *const *inputs, uint32_t number, uint32_t repeat,
                            uint32_t min_repeat_ms, tether_cli_report *rep);
void tether_cli_report_free(tether_cli_report *rep);

/* Prints "tether <command>: <formatted reason>" on stderr and returns code. */
int tether_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tempdir.c: makes $TMPDIR/tether-<tag>-XXXXXX into out (size >= 64) and registers it so that it
 * is removed on SIGINT/SIGTERM/SIGHUP too; tether_cli_tempdir_remove deletes it (recursively)
 * and unregisters it. */
int tether_cli_tempdir_make(char *out, size_t size, const char *tag);
void tether_cli_tempdir_remove(const char *dir);

/* Prints one line about an array: dtype, shape, min/max/mean and the first values. */
void tether_cli_summary(const char *name, const tether_npy *n);

/* main.c: opens a session like every device command (token file, progress bar, device LOG
 * lines on stderr). Prints the error and returns 1 on failure. */
int tether_cli_open(const tether_cli_device *dev, tether_session **s);

/* ---- mcu.c: what depends on the kind of device ---- */

/* Device LOG lines on stderr ("tether CMD: device warning: ..."): errors and warnings always,
 * info and debug with TETHER_VERBOSE=1. ctx is the command name. */
void tether_cli_device_log(void *ctx, int level, const char *text);
/* True when the device takes MCU RAM images (its HELLO announced a load region). */
int tether_cli_is_mcu(const tether_device_info *d);
/* Uploads and loads a module the way the device takes it: OpenCL C (.cl) and shared objects for
 * tetherd; for MCU firmware a RAM image (.bin, checked) or objects/static libraries (.o/.a)
 * linked at the device's load region against its firmware.json (`firmware`: the --firmware
 * value or NULL for $TETHER_FIRMWARE and the build tree; `target`: the compile target of .o/.a,
 * NULL = unchecked). A module the device cannot run is refused before anything is sent. Prints
 * the error and returns 1 on failure. */
int tether_cli_load_module(tether_session *s, const char *path, const char *target,
                           const char *firmware, const char *name, uint64_t *module,
                           uint32_t *nfuncs);
/* 0 when code compiled for `target` can run on the device; else prints why (`what` names the
 * artifact) and returns 1. */
int tether_cli_check_target(tether_session *s, const char *target, const char *what);
/* After a failed command: when the session was lost to a fault on an MCU, reconnects (the
 * board has reset) and says so, so the board is known to be ready for the next command. */
void tether_cli_after_failure(tether_session *s, const char *cmd);
/* tether compile ... --upload [--device URL] [--firmware PATH]: compile, link for the device,
 * upload (SHA-256 checked by the device) and load. */
int tether_cli_cmd_compile_upload(int argc, char **argv);

/* The compile target a model needs for the device: an MCU board's core from its HELLO (e.g.
 * "cortex-m3"), or "" for the default host profile (tetherd, local:). 0, or an exit code after
 * printing the error. Built with the compiler only. */
int tether_cli_probe_target(const tether_cli_device *dev, char *out, size_t n);

/* model.c: `tether ab` and `tether run --reference` (need the compiler). */
int tether_cli_cmd_ab(int argc, char **argv);
int tether_cli_run_reference(const char *model, int nin, const char *const *inputs, int nout,
                             const char *const *outputs);

/* opencl_run.c: `tether run/bench DIR` and tether_cli_run_artifact for an OpenCL artifact
 * (metadata.json "backend": "opencl", docs/codegen.md); main.c's run_artifact hands it over. */
typedef struct tether_cli_ocl_request {
    tether_cli_device dev;
    int nin;
    const char *const *inputs; /* .npy files in model input order */
    int nout;                  /* 0 = out0.npy, out1.npy, ... */
    const char *const *outputs;
    int bench; /* TIME after the first run; print the statistics instead of outputs */
    uint32_t number, repeat, min_repeat_ms, cooldown_ms;
    tether_cli_report *report; /* non-NULL: fill it (outputs, TIME) instead of files and lines */
} tether_cli_ocl_request;
int tether_cli_run_opencl(const char *dir, const tether_cli_ocl_request *q);

#endif
