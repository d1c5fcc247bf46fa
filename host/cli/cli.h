/*
 * Internal interface between the `tether` CLI's files (not installed, not a library API).
 * main.c owns the device-facing commands (info, upload, run, bench) and exports the artifact
 * runner in steps (prepare, call, time, release) so that model.c (ab, run --reference; built
 * with the compiler) reuses the exact path a user's `tether run ARTIFACT_DIR` takes, with several
 * artifacts on one session; stats.c holds ab's statistics. Errors are printed by the callee as
 * one line "tether <command>: <reason>" on stderr; return values are CLI exit codes (0, 1
 * failed, 2 usage). Every --json output goes through tether_cli_write_json (cJSON,
 * tether_file_write), its path checked with tether_file_out_check before the work.
 */
#ifndef TETHER_CLI_H
#define TETHER_CLI_H

#include <stdint.h>

#include "opencl_artifact.h"
#include "tether/host.h"
#include "tether/npy.h"

#define TETHER_CLI_MAX_IO 32

/* Where and how to reach the device (the common options of every device command). */
typedef struct tether_cli_device {
    const char *url;        /* NULL: $TETHER_DEVICE, else local: */
    const char *token_file; /* NULL: $TETHER_TOKEN_FILE, else none */
    int timeout_ms;         /* 0: the library default */
    int wait;               /* --wait: queue for a serial device another process holds */
} tether_cli_device;

/* What one artifact run measured. The outputs are owned by the report (tether_cli_report_free). */
typedef struct tether_cli_report {
    tether_call_result call; /* the first call: return code, time, stack high-water mark */
    tether_time_stats time;  /* TIME over number x repeat calls */
    int nout;
    tether_npy out[TETHER_CLI_MAX_IO];
} tether_cli_report;

/* An artifact (C or OpenCL, `tether compile`) made ready on a device, in steps so that `ab` can
 * hold several at once and interleave their measurements (the session is borrowed and must
 * outlive the object):
 *   prepare  checks the metadata and inputs, uploads and loads the library (or builds the
 *            kernels), sets the params, allocates every array and copies the inputs in;
 *   call     one call of the entry (or the OpenCL sequence); *rep is overwritten (free it
 *            first): the outputs read back into rep->out (copies it owns), the call's time and
 *            stack high-water mark into rep->call;
 *   time     TIME (TIME_SEQ) with TVM semantics; `number` grows to fill min_repeat_ms;
 *   release  frees the remote arrays (unless the session was lost) and everything local.
 * Each prints its error as one line and returns the exit code (1, or 2 for bad usage). */
typedef struct tether_cli_run tether_cli_run;
int tether_cli_run_prepare(tether_session *s, const char *dir, int nin, const char *const *inputs,
                           const char *firmware, tether_cli_run **out);
int tether_cli_run_call(tether_cli_run *r, tether_cli_report *rep);
int tether_cli_run_time(tether_cli_run *r, uint32_t number, uint32_t repeat, uint32_t min_repeat_ms,
                        uint32_t cooldown_ms, tether_time_stats *ts);
/* OpenCL artifacts: the number of kernel launches of one call (0 for a C artifact). */
int tether_cli_run_kernels(const tether_cli_run *r);
void tether_cli_run_release(tether_cli_run *r);
void tether_cli_report_free(tether_cli_report *rep);

/* ---- JSON outputs (--json FILE), written with cJSON through tether_file_write ---- */
struct cJSON;
/* {"url", "triple", "arch", "board" (null for tetherd), "clock_rate_hz" (null: nanoseconds)} */
struct cJSON *tether_cli_device_json(const char *url, const tether_device_info *d);
/* {"name", "file" (null when none was written), "dtype", "shape", "min", "max", "mean"} */
struct cJSON *tether_cli_array_json(const char *name, const char *file, const tether_npy *n);
/* Adds "number", "repeat", "repeats_us", "median_us", "mean_us", "min_us", "max_us",
 * "zero_timer" of a TIME measurement to o. */
void tether_cli_time_json(struct cJSON *o, const tether_time_stats *ts);
/* Prints root (a newline at the end) into path through tether_file_write and deletes root.
 * Prints the error and returns 1 on failure. */
int tether_cli_write_json(const char *path, struct cJSON *root);
/* The device URL a command uses: the --device value, else $TETHER_DEVICE, else "local:". */
const char *tether_cli_device_url(const char *url);

/* Prints "tether <command>: <formatted reason>" on stderr and returns code. */
int tether_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tempdir.c: makes $TMPDIR/tether-<tag>-XXXXXX into out (size >= 64) and registers it so that it
 * is removed on SIGINT/SIGTERM/SIGHUP too; tether_cli_tempdir_remove deletes it (recursively)
 * and unregisters it. */
int tether_cli_tempdir_make(char *out, size_t size, const char *tag);
void tether_cli_tempdir_remove(const char *dir);
/* The path to show in a message: a file inside a registered temporary directory is named relative
 * to it (the directory will be gone when the user reads the message), others unchanged. */
const char *tether_cli_tempdir_shown(const char *path);

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
typedef struct tether_cli_module_info {
    uint32_t kind;       /* TETHER_MODULE_* of what was uploaded */
    uint64_t bytes;      /* the bytes uploaded (for .o/.a: the linked image) */
    uint8_t sha256[32];  /* their SHA-256 (the device checked the same) */
    int nnames;          /* -1: the function names are not known on the host (shared objects) */
    char names[64][128]; /* MCU images: from the link; OpenCL C: the __kernel functions */
} tether_cli_module_info;
int tether_cli_load_module(tether_session *s, const char *path, const char *target,
                           const char *firmware, const char *name, uint64_t *module,
                           uint32_t *nfuncs, tether_cli_module_info *info);
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

/* ---- stats.c: the statistics of `tether ab` (see there) ---- */
typedef struct tether_cli_spread {
    int n;
    double median, q1, q3, min, max, mean; /* q1/q3: quartiles, linear interpolation */
} tether_cli_spread;
void tether_cli_spread_of(const double *x, int n, tether_cli_spread *out);

typedef enum tether_cli_verdict {
    TETHER_CLI_FASTER = 0,        /* B is faster than A: the ratio's 95% CI lies below 1 */
    TETHER_CLI_SLOWER = 1,        /* ... above 1 */
    TETHER_CLI_NO_DIFFERENCE = 2, /* the CI contains 1 */
    TETHER_CLI_TOO_FEW = 3,       /* too few repeats for a 95% CI (fewer than 4 a side) */
    TETHER_CLI_NOT_MEASURABLE = 4 /* a time <= 0 (a zero timer) */
} tether_cli_verdict;
/* "faster", "slower", "no_significant_difference", "too_few_repeats", "not_measurable" */
const char *tether_cli_verdict_name(tether_cli_verdict v);

typedef struct tether_cli_ratio {
    double estimate;        /* Hodges-Lehmann estimate of B/A */
    double ci_low, ci_high; /* its 95% confidence interval (have_ci) */
    int have_ci;
    double p_value; /* two-sided Mann-Whitney */
    tether_cli_verdict verdict;
} tether_cli_ratio;
/* The ratio of B's times to A's (per-repeat seconds per call). */
void tether_cli_ratio_of(const double *a, int na, const double *b, int nb, tether_cli_ratio *out);

/* model.c: `tether ab` and `tether run --reference` (need the compiler). */
int tether_cli_cmd_ab(int argc, char **argv);
int tether_cli_run_reference(const char *model, int nin, const char *const *inputs, int nout,
                             const char *const *outputs);

/* opencl_run.c: `tether run/bench DIR` for an OpenCL artifact (metadata.json "backend":
 * "opencl", docs/codegen.md); main.c's run_artifact hands it over. */
typedef struct tether_cli_ocl_request {
    tether_cli_device dev;
    int nin;
    const char *const *inputs; /* .npy files in model input order */
    int nout;                  /* 0 = out0.npy, out1.npy, ... */
    const char *const *outputs;
    int bench; /* TIME after the first run; print the statistics instead of outputs */
    uint32_t number, repeat, min_repeat_ms, cooldown_ms;
    const char *json; /* --json FILE: the run's or bench's figures as JSON, NULL = none */
} tether_cli_ocl_request;
int tether_cli_run_opencl(const char *dir, const tether_cli_ocl_request *q);
/* Reads the input files of an OpenCL artifact and checks them against its signature (float32,
 * shape); in[] receives them (the caller frees them). */
int tether_cli_ocl_read_inputs(const tether_ocl_artifact *a, int nin, const char *const *inputs,
                               tether_npy *in);

#endif
