/*
 * What model.c (`tether ab`: options, compiling every side for the device, the measurement) and
 * ab_report.c (its table, verdict lines, --json and --svg) share: the parsed options and each
 * side's figures. Built with the compiler only.
 *
 * What must stay true: ab_args is filled by model.c's parser only; a report never contacts the
 * device and never changes a side's figures.
 */
#ifndef TETHER_CLI_AB_H
#define TETHER_CLI_AB_H

#include "cli.h"
#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/compare.h"
#include "tether/device_compile.h"
#include "tether/stats.h"

#define AB_MAX_REPEAT 200

typedef struct ab_side {
    tether_abi abi;
    const char *label; /* "unpacked ABI", "packed ABI", "buffer weights", "texture weights" */
    char dir[1100];
    tether_device_compile_options dco; /* how it is compiled for the device and prepared there */
    tether_compile_result comp;
    tether_artifact *art; /* on the device, between side_start and release */
    struct {
        tether_call_result call; /* the first call: return code, time, stack high-water mark */
        int nout;
        tether_npy out[TETHER_CLI_MAX_IO]; /* its outputs */
    } run;
    double t[AB_MAX_REPEAT]; /* seconds per call, one per repeat */
    uint32_t number;         /* calls per repeat (grown to fill min_repeat_ms) */
    int zero_timer;
    tether_spread spread;
    tether_ratio vs_unpacked; /* this side's time over the unpacked ABI's */
    int kernels;              /* OpenCL: launches per call */
    double max_abs;           /* worst difference to the interpreter over all outputs */
    int equal;                /* every output equal (integer/bool) or within rtol/atol (float) */
    int ncmp;                 /* outputs compared, each in cmp[] */
    tether_compare_result cmp[TETHER_CLI_MAX_IO];
} ab_side;

typedef struct ab_args {
    tether_cli_device dev;
    const char *model, *target, *out_dir, *json, *svg;
    tether_cli_array in[TETHER_CLI_MAX_IO];
    int nin;
    uint32_t number, repeat, min_repeat_ms;
    double rtol, atol; /* negative: the defaults of each output's type (tether/compare.h) */
    int opt_level;
    const char *cpu; /* --mcpu, else the device's (HELLO cpu) when the target is the device's */
    int opencl;      /* --opencl: also the OpenCL backend, buffer and texture weights */
    int fp16;        /* --precision fp32,fp16 (with --opencl): also buffer weights in fp16 */
    int profile;     /* --profile: also each ABI's profiling build, node by node */
    const char *tuning_log; /* --tuning-log: every side compiled with tuned schedules */
    const char *firmware;   /* --firmware: an MCU board's firmware.json (or its folder) */
    const char *input_shapes[TETHER_CLI_MAX_IO]; /* --input-shape NAME=D0xD1...: dynamic dims */
    int ninput_shapes;
    int params;             /* --params: 1 linked, 0 blob, -1 default (blob above 4 MiB) */
    tether_memory_cli *mem; /* --pool, --pin, --plan-inputs, --plan-outputs, --params-pool */
} ab_args;

/* The side-by-side table (and the verdict lines) of the C sides; the OpenCL sides' table. */
void tether_cli_ab_print_table(const ab_args *a, const tether_ir_graph *g, ab_side *s,
                               int interleaved);
void tether_cli_ab_print_opencl(const ab_side *s);
/* --precision fp32,fp16: s[4] (fp16, buffer weights) against s[2] (fp32): per float output the
 * max abs/rel difference and the top-1 agreement over the last axis, and the kernel-time ratio. */
void tether_cli_ab_print_fp16(const tether_ir_graph *g, const ab_side *s);
/* Each output's comparison with the interpreter, per side (tether_compare_describe). */
void tether_cli_ab_print_outputs(const tether_ir_graph *g, const ab_side *s, int nsides);
/* --json FILE and --svg FILE of the measured sides: 0, or 1 after saying why. */
int tether_cli_ab_write_json(const ab_args *a, const tether_device_info *d, const ab_side *s,
                             int interleaved);
int tether_cli_ab_write_svg(const ab_args *a, const tether_ir_graph *g, const ab_side *s,
                            int nsides);

#endif
