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

/* Prints one line about an array: dtype, shape, min/max/mean and the first values. */
void tether_cli_summary(const char *name, const tether_npy *n);

/* model.c: `tether ab` and `tether run --reference` (need the compiler). */
int tether_cli_cmd_ab(int argc, char **argv);
int tether_cli_run_reference(const char *model, int nin, const char *const *inputs, int nout,
                             const char *const *outputs);

#endif
