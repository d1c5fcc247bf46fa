/*
 * What run.c (`tether run` / `tether bench`: options, the module or artifact run, a model
 * compiled for the device through the host library) and run_report.c (what they print and write)
 * share: the parsed options and one run's results.
 *
 * What must stay true: run_args is filled by run.c's parser only; a report never contacts the
 * device (it reads the session's HELLO, already known).
 */
#ifndef TETHER_CLI_RUN_H
#define TETHER_CLI_RUN_H

#include <cjson/cJSON.h>

#include "cli.h"
#include "tether/compiler_cli.h"
#include "tether/device_compile.h"

#define RUN_MAX_IO TETHER_CLI_MAX_IO

typedef tether_cli_array io_spec; /* an --in/--out argument */

typedef struct run_args {
    tether_cli_common c;
    const char *target; /* module .so, artifact dir or model file */
    const char *func;
    io_spec in[RUN_MAX_IO], out[RUN_MAX_IO];
    int nin, nout;
    int out_given;   /* --out was given (bench writes outputs only then) */
    int default_out; /* run without --out: the outputs go to out0.npy ... in the cwd (said) */
    int ordered;     /* in/out are in the artifact's order (a requeued run orders nothing again) */
    const char *svg; /* bench --svg FILE: the latency distribution */
    uint32_t number, repeat, min_repeat_ms, cooldown_ms;
    int pool_requeues; /* pool:// devices lost mid-run so far (the run is queued again) */
    uint32_t work_dim;
    uint64_t global[3], local[3];
    tether_remote_arg scalars[16];
    int nscalars;
    int reference;              /* --reference: run a model on the host's reference interpreter */
    int nbound;                 /* --in files an ONNX model bound as constants when compiled */
    const char *compile_target; /* --target: compile a model for it (default: for the device) */
    const char *cpu;        /* --mcpu: the CPU a model is compiled for (default: the device's) */
    int opencl;             /* --backend opencl: compile a model to OpenCL kernels */
    int texture_weights;    /* --texture-weights: ... with conv weights in images */
    int texture_acts;       /* --texture-activations: ... activations in texture images */
    int fp16;               /* --precision fp16 (--backend opencl) */
    const char *tuning_log; /* --tuning-log FILE: tuned schedules for a MODEL (C backend) */
    const char *abi;        /* --abi: ABI of a compiled model (default: the compiler's) */
    const char *input_shapes[RUN_MAX_IO]; /* --input-shape NAME=D0xD1...: dynamic model dims */
    int ninput_shapes;
    int opt_level;          /* --opt-level of a compiled model: 0..3, -1 = s; -2 = default */
    int params;             /* --params of a compiled model: 1 linked, 0 blob, -1 default */
    cJSON *compiled;        /* a model compiled on the fly: how (for --json), owned here */
    tether_memory_cli *mem; /* --pool/--pin/--plan-inputs/--plan-outputs of a MODEL (static) */
    /* a MODEL: compiled for the device of each run's session (tether_compile_for_device) */
    const char *model;
    tether_device_compile_options *dco;
    tether_compile_result comp;
} run_args;

/* What one run or bench produced, for the printed lines and --json. */
typedef struct run_result {
    tether_session *s;
    const char *fname; /* the function called (or the OpenCL kernels' prefix) */
    int nout;
    const tether_npy *out;            /* nout arrays */
    const char *out_name[RUN_MAX_IO]; /* the artifact's output names, NULL = "outN" */
    tether_call_result call;
    tether_time_stats ts;
} run_result;

/* What `run`/`bench` print and write (--json) after the work is done: a C function or artifact,
 * or an OpenCL artifact a (kernel times instead of a stack, per-kernel lines in bench). 0 or 1. */
int tether_cli_report_run(run_args *r, int bench, const run_result *q);
int tether_cli_report_opencl(run_args *r, int bench, const run_result *q, const tether_artifact *a,
                             const uint64_t *kernel_ns, const double *kernel_median);
/* run without --out wrote out0.npy ... into the current directory: says so on stderr. */
void tether_cli_say_default_outputs(const run_args *r, const run_result *q);

#endif
