/*
 * Internal interface between the `tether` CLI's files (not installed, not a library API).
 * main.c has the device-facing commands (info, upload, run, bench), model.c those that need
 * the compiler (ab, run --reference), mcu.c what depends on the kind of device (module loading,
 * MCU linking, reconnecting), tempdir.c temporary folders. Running artifacts is the host
 * library's (tether/artifact.h); the CLI parses options and prints. Errors are printed by the
 * callee as
 * one line "tether <command>: <reason>" on stderr; return values are CLI exit codes (0, 1
 * failed, 2 usage). Every --json output goes through tether_cli_write_json (cJSON,
 * tether_file_write), its path checked with tether_file_out_check before the work.
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
    int wait;               /* --wait: queue for a serial device another process holds */
} tether_cli_device;

/* The options every device command takes (main.c's info and upload, run.c's run and bench). */
typedef struct tether_cli_common {
    const char *device;
    const char *token_file;
    const char *firmware; /* --firmware: firmware.json of an MCU device (or its folder) */
    int timeout_ms;
    int wait;              /* --wait: queue for a busy serial device instead of failing */
    int json;              /* info --json: JSON on stdout (or into json_file) */
    const char *json_file; /* run/bench/upload/info --json FILE */
} tether_cli_common;
/* Returns 1 when argv[*i] was a common option (consumed, *i moved past its value), 0 when not,
 * negative after printing a usage error. */
int tether_cli_common_opt(tether_cli_common *c, int argc, char **argv, int *i);
/* tether_cli_open with c's device options. */
int tether_cli_common_open(const tether_cli_common *c, tether_session **s);
/* -h or --help */
int tether_cli_is_help(const char *a);
/* The last component of a path. */
const char *tether_cli_base_name(const char *p);

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

/* ---- common.c: what every file here shares (it calls no other file of host/cli) ---- */

/* The subcommand named in messages ("run"); main() sets it. */
void tether_cli_set_command(const char *cmd);
const char *tether_cli_command(void);

/* Prints "tether <command>: <formatted reason>" on stderr and returns code. */
int tether_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tempdir.c: installs the handler of SIGINT, SIGTERM and SIGHUP (those not ignored): it ends the
 * compilers a build started and removes what the compile wrote (tether_build_interrupt), removes
 * the temporary directories, then ends the process by that signal. main() calls it first. */
void tether_cli_signals_init(void);
/* tempdir.c: makes $TMPDIR/tether-<tag>-XXXXXX into out (size >= 64) and registers it so that it
 * is removed on SIGINT/SIGTERM/SIGHUP too (a negative status with the error set on failure, not
 * printed); tether_cli_tempdir_remove deletes it (recursively) and unregisters it. */
int tether_cli_tempdir_make(char *out, size_t size, const char *tag);
void tether_cli_tempdir_remove(const char *dir);
/* The path to show in a message: a file inside a registered temporary directory is named relative
 * to it (the directory will be gone when the user reads the message), others unchanged. */
const char *tether_cli_tempdir_shown(const char *path);

/* ---- array arguments: --in / --out FILE, NAME=FILE, .npz archives (common.c) ----
 * FILE is .npy, .pb (ONNX TensorProto, inputs only) or an .npz archive. "NAME=FILE" binds the
 * model input (output) NAME; an .npz without a NAME stands for every array in it, each bound by
 * its name (an --out .npz: every output, by name). Named and positional arguments of one kind
 * are not mixed. NAME is what comes before the first '=' (it may hold '/' and ':'); an argument
 * that names an existing file, or starts with "/" or "./", is a path as a whole. */
typedef struct tether_cli_array {
    const char *path;
    char name[128];   /* "" = by position */
    int npz;          /* the array `name` of the .npz archive at path (inputs), or: the outputs go
                         into the archive (outputs; then name is the output's, or "" for all) */
    char member[128]; /* inputs from an .npz: the archive's array to read */
    char label[1200]; /* for messages and reports: "x.npy", "in.npz:x" */
    /* `run MODULE FUNC` only: the --scope of the array, and an output's PATH:DTYPE:D0xD1 */
    tether_scope scope;
    int has_shape;
    DLDataType dtype;
    int ndim;
    int64_t shape[TETHER_MAX_NDIM];
} tether_cli_array;

/* Parses the value of --in (is_out 0) or --out (is_out 1) into list[*n...] (an input .npz
 * expands into its arrays: the archive is listed now, its data read later). Returns 0, or 2
 * after printing why (1 when an .npz cannot be read). */
int tether_cli_array_parse(const char *arg, int is_out, tether_cli_array *list, int *n, int max);
/* Reads an input argument (.npy, a registered format, or an .npz member). Sets the error, does
 * not print. */
int tether_cli_array_read(const tether_cli_array *a, tether_npy *out);
/* The same, checked against what the input it is for must hold (e NULL: nothing; ndim < 0: any
 * shape): an .npz member from its .npy header, before it is inflated (tether/npy.h). */
int tether_cli_array_read_expect(const tether_cli_array *a, const tether_npy_expect *e,
                                 tether_npy *out);
/* Puts named arguments into the order of `names` (the model's inputs or outputs, nnames of them;
 * what = "input" / "output"). Positional lists are left as they are (the caller checks the
 * count). Named inputs must cover every input; named outputs may leave some out: the list
 * then has nnames entries, those not named with path NULL (not written). Errors (printed, exit
 * code 2): mixed named and positional, a name the model lacks (listing the names it has), a
 * name given twice, an input without an argument. names NULL: only the checks that need no
 * names (mixing, twice), before a model is loaded. */
int tether_cli_array_order(tether_cli_array *list, int *n, int nnames, const char *const *names,
                           const char *what);
/* True when some argument of the list is named. */
int tether_cli_array_named(const tether_cli_array *list, int n);
/* The single --out that collects every output into an .npz archive: path, else NULL. */
const char *tether_cli_out_npz(const tether_cli_array *list, int n);

/* Writes n outputs (names[i], arrays[i]) as the --out arguments say (nspecs of them, after
 * tether_cli_array_order): each to its file, all into the one .npz by name, an output without a
 * file only summarised; prints a summary line each and adds them to jouts when not NULL
 * (tether_cli_array_json). Returns 0 or 1 after printing the error. */
int tether_cli_write_outputs(const tether_cli_array *out, int nspecs, int n,
                             const char *const *names, const tether_npy *arrays,
                             struct cJSON *jouts);

/* ---- progress.c: how far long work is, its rate and the time left (docs/cli.md) ----
 * start with the total (bytes when unit is NULL or "", else a count of unit: "rounds"), update
 * with the amount done (the update that reaches the total ends it), end after an early stop. */
typedef struct tether_cli_progress {
    char what[192], unit[16];
    uint64_t done, total;
    double start, last;
    int mode, shown, active;
} tether_cli_progress;
void tether_cli_progress_start(tether_cli_progress *p, const char *what, uint64_t total,
                               const char *unit);
void tether_cli_progress_update(tether_cli_progress *p, uint64_t done);
void tether_cli_progress_end(tether_cli_progress *p);

/* ---- svg.c: pictures (docs/cli.md, "Pictures") ----
 * Each writes one SVG file through tether_file_write, records it (tether_cli_wrote) and returns
 * 0, or 1 after printing the error. */
typedef struct tether_cli_ab_row {
    const char *label;     /* "unpacked ABI", "OpenCL, texture weights" */
    double text_bytes;     /* < 0: not a CPU library */
    double code_bytes;     /* instructions of text; < 0 = not known */
    double static_stack;   /* < 0: unbounded or not a CPU library */
    double stack_hwm;      /* < 0: no call stack (OpenCL) */
    const double *seconds; /* seconds per call, one per repeat */
    int nrepeats;
    const char *note; /* beside the latency row: "1.45x (95% CI 1.40..1.50)" */
} tether_cli_ab_row;
int tether_cli_svg_ab(const char *path, const char *title, const char *subtitle,
                      const tether_cli_ab_row *rows, int n);
/* The repeats of ts (at most 32), and for OpenCL artifacts each kernel's median seconds
 * (nkernels 0 = none). */
int tether_cli_svg_bench(const char *path, const char *title, const char *subtitle,
                         const tether_time_stats *ts, int nkernels, const char *const *kernels,
                         const double *kernel_median);

/* Every command says which files it wrote: tether_cli_wrote records a path once it is written
 * (tether_cli_write_json does it for --json files; /dev/ paths are not files), and main prints
 * them as one line "wrote A, B" at the end of the command. */
void tether_cli_wrote(const char *path);
void tether_cli_say_written(void);

/* Prints one line about an array: dtype, shape, min/max/mean and the first values. */
void tether_cli_summary(const char *name, const tether_npy *n);

/* pool.c: `tether pool add|status` (docs/remote-boards.md). */
int tether_cli_cmd_pool(int argc, char **argv);

/* Opens a session like every device command (token file, progress bar, device LOG
 * lines on stderr). Prints the error and returns 1 on failure. */
int tether_cli_open(const tether_cli_device *dev, tether_session **s);
/* Does the device answer? A session opened as tether_cli_open does (HELLO, AUTH) and closed
 * again: 0, or its status with the reason in tether_last_error() (nothing printed). */
int tether_cli_probe(const tether_cli_device *dev);
/* Device LOG lines on stderr ("tether CMD: device warning: ..."): errors and warnings always,
 * info and debug with TETHER_VERBOSE=1. ctx is the command name. */
void tether_cli_device_log(void *ctx, int level, const char *text);
/* True when the device takes MCU RAM images (its HELLO announced a load region). */
int tether_cli_is_mcu(const tether_device_info *d);

/* ---- mcu.c: what depends on the kind of device ---- */

/* Uploads and loads a module the way the device takes it: OpenCL C (.cl) and shared objects for
 * tetherd; for MCU firmware a RAM image (.bin, checked) or objects/static libraries (.o/.a)
 * linked at the device's load region against its firmware.json (`firmware`: the --firmware
 * value or NULL for $TETHER_FIRMWARE and the build tree; `target`: the compile target of .o/.a,
 * NULL = unchecked). A module the device cannot run is refused before anything is sent
 * (tether_artifact_module_kind). Returns a negative status with tether_last_error() set. */
typedef struct tether_cli_module_info {
    uint32_t kind;       /* TETHER_MODULE_* of what was uploaded */
    uint64_t bytes;      /* the bytes uploaded (for .o/.a: the linked image) */
    uint8_t sha256[32];  /* their SHA-256 (the device checked the same) */
    int cached;          /* the device had these bytes already (upload cache): none were sent */
    int nnames;          /* -1: the function names are not known on the host (shared objects) */
    char names[64][128]; /* MCU images: from the link; OpenCL C: the __kernel functions */
} tether_cli_module_info;
int tether_cli_load_module(tether_session *s, const char *path, const char *target,
                           const char *firmware, const char *name, uint64_t *module,
                           uint32_t *nfuncs, tether_cli_module_info *info);
/* How many uploads of this process the device answered from its upload cache. */
int tether_cli_uploads_cached(void);
/* The host library's loader (tether_device_loader: .o/.a linked for an MCU board) as the
 * artifact runner's loader hook, counting the uploads the device had cached; ctx: a
 * tether_device_compile_options (tether_cli_device_options sets it). */
int tether_cli_artifact_loader(void *ctx, tether_session *s, const char *path, const char *target,
                               const char *name, uint64_t *module);
/* The host library's compile-for-a-device options (tether/device_compile.h) as every CLI command
 * uses them: init, `firmware` (--firmware or NULL), temporary folders registered for the signal
 * handler (tempdir.c), the MCU image line on stdout, tether_cli_artifact_loader. */
struct tether_device_compile_options;
void tether_cli_device_options(struct tether_device_compile_options *o, const char *firmware);
/* tether_device_target (tether/device_compile.h): the compile target and CPU for the device d,
 * printing the error and returning 1 when the compiler has no such target. */
int tether_cli_device_target(const tether_device_info *d, char *target, size_t tn, char *cpu,
                             size_t cn);
/* After a failed command: when the session was lost to a fault on an MCU, reconnects (the
 * board has reset) and says so, so the board is known to be ready for the next command. */
void tether_cli_after_failure(tether_session *s, const char *cmd);
/* tether compile ... --upload [--device URL] [--firmware PATH]: compile, link for the device,
 * upload (SHA-256 checked by the device) and load. */
int tether_cli_cmd_compile_upload(int argc, char **argv);

/* run.c: `tether run` (bench 0) and `tether bench` (bench 1). */
int tether_cli_cmd_run(int argc, char **argv, int bench);

/* tune.c: `tether tune` (needs the compiler). */
int tether_cli_cmd_tune(int argc, char **argv);

/* model.c: `tether ab` and `tether run --reference` (need the compiler). */
int tether_cli_cmd_ab(int argc, char **argv);
/* quantize_cli.c (builds with the ONNX front end): `tether quantize`; -1 after --help. */
int tether_cli_cmd_quantize(int argc, char **argv);
/* profile.c: `tether profile` (also `run/bench --profile`); the per-node table of a profile and
 * its --json/--trace/--svg files (0, or 1 after printing the error). */
int tether_cli_cmd_profile(int argc, char **argv);
struct tether_profile;
void tether_cli_profile_print(FILE *f, const struct tether_profile *p);
int tether_cli_profile_write(const struct tether_profile *p, const char *json, const char *trace,
                             const char *svg);
/* `ab --profile`: compiles each side's options (dco[k], with profile set) into dir/<k>-profile,
 * profiles it on the inputs and prints every node's time in both, the largest change first. */
struct tether_device_compile_options;
int tether_cli_profile_ab(tether_session *s, const char *model, const char *dir,
                          struct tether_device_compile_options *const *dco,
                          const char *const *labels, const tether_cli_array *in, int nin);
int tether_cli_run_reference(const char *model, int nin, tether_cli_array *inputs, int nout,
                             tether_cli_array *outputs);

#endif
