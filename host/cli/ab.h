/*
 * What model.c (`tether ab`: options, compiling every side for the device, the measurement),
 * ab_int8.c (`ab --int8`: the quantized model, its check against the float one, the int8 vs
 * float comparison and its report) and ab_report.c (the table, verdict lines, --json and --svg)
 * share: the parsed options and each side's figures. Built with the compiler only.
 *
 * Two kinds of A/B: one model with the unpacked and the packed ABI (and --opencl's two OpenCL
 * builds), or with --int8 a float model beside its int8 form (two models, one ABI). Each side
 * names its own model, graph and reference outputs.
 *
 * What must stay true: ab_args is filled by model.c's parser only, except its int8 member's
 * results (ab_int8.c); a report never contacts the device and never changes a side's figures.
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
    const char *label;        /* "unpacked ABI", "packed ABI", "buffer weights", "texture weights";
                                 with --int8 "float32", "int8" */
    const char *model;        /* the model file it compiles */
    const tether_ir_graph *g; /* that model, loaded (its reference interpreter's graph) */
    const tether_npy *ref;    /* the interpreter's outputs of g on the A/B's inputs */
    double step[TETHER_CLI_MAX_IO]; /* --int8 side: each output's quantization step (its
                                       (de)quantize scale), 0 = none: compared as usual */
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
    tether_ratio vs_unpacked; /* this side's time over side 0's (the unpacked ABI, the float32
                                 model) */
    int kernels;              /* OpenCL: launches per call */
    /* OpenCL: per repeat, the wall-clock seconds of one call on the device (first kernel's start
     * to last kernel's end, TIME_SEQ) and the launch overhead (wall - kernel sum); their spreads
     * over the repeats; has_wall 0 when the device does not report it (old tetherd, C sides) */
    double wall[AB_MAX_REPEAT], overhead[AB_MAX_REPEAT];
    int has_wall;
    tether_spread wall_spread, overhead_spread;
    double max_abs; /* worst difference to the interpreter over all outputs */
    int equal;      /* every output equal (integer/bool) or within rtol/atol (float); an int8 side's
                       outputs with a step: within one step */
    int ncmp;       /* outputs compared, each in cmp[] */
    tether_compare_result cmp[TETHER_CLI_MAX_IO];
} ab_side;

/* --int8: one output of the int8 model against the float model's on the device (the int8
 * output dequantized when it is an integer tensor). */
typedef struct ab_int8_output {
    char name[128];
    int compared; /* a float output of the float model, of the same shape */
    int64_t elements;
    double max_abs, mean_abs, float_range;
    int64_t rows, top1_agree; /* top-1 over the last axis (rows 0: under 2 classes) */
    double step;              /* the int8 output's step (0: not a quantized output) */
    double ref_max_steps;     /* max |int8 device - int8 interpreter| in steps */
    size_t ref_off_by_one;    /* elements one step apart from the interpreter */
} ab_int8_output;

#define AB_MAX_CALIB 64
typedef struct ab_int8 {
    int on;                          /* --int8 given */
    const char *model;               /* --int8 MODEL.onnx, else the quantized temporary file */
    const char *calib[AB_MAX_CALIB]; /* --int8 a.npz ...: quantized on the fly */
    int ncalib;
    int abi_given;
    tether_abi abi; /* --abi: both models' (default unpacked) */
    /* filled by ab_int8.c */
    int quantized; /* the model was quantized here (tether_cli_quantize) */
    char tmpdir[1024];
    char path[1200];
    unsigned char *bytes; /* the quantized model (kept in -o DIR as model.int8.onnx) */
    size_t nbytes;
    int nsamples, quantized_nodes, float_nodes, integer_nodes;
    int noutputs;
    ab_int8_output out[TETHER_CLI_MAX_IO];
} ab_int8;

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
    ab_int8 *int8;          /* --int8, --abi */
} ab_args;

/* ---- ab_int8.c ---- */
struct tether_cli_model_load;
/* --int8 before the device is contacted: quantizes the float model a->model (already loaded
 * as g with ml's bound inputs) on a->int8->calib into a temporary file, or takes the given
 * int8 model; loads it with the same --in files into *g8 (ml8) and checks that it is a form of
 * the float model: the same run-time inputs (names, types, shapes) and as many outputs of the
 * same shapes. 0, or an exit code after printing the error (nothing left behind). */
int tether_cli_ab_int8_prepare(ab_args *a, const tether_ir_graph *g,
                               struct tether_cli_model_load *ml, struct tether_cli_model_load *ml8,
                               tether_ir_graph *g8);
/* Each output's step of the int8 graph into s->step (0 where none). */
void tether_cli_ab_int8_steps(const tether_ir_graph *g8, ab_side *s);
/* A side's comparison with its interpreter (s->ref), output by output (s->cmp[i]): integer and
 * bool exactly, floats within rtol/atol (negative: the defaults of each output's type); an
 * output with a step (the int8 side) within one step instead. */
void tether_cli_ab_compare_ref(ab_side *s, int nout, double rtol, double atol);
/* The int8 side's outputs against the float side's (a->int8->out). */
void tether_cli_ab_int8_vs_float(ab_args *a, const ab_side *f, const ab_side *q);
/* Its text (after the table) and JSON members. */
void tether_cli_ab_int8_print(const ab_args *a, const ab_side *s);
struct cJSON;
void tether_cli_ab_int8_json(struct cJSON *root, const ab_args *a);
/* -o DIR: writes the quantized model there as model.int8.onnx (0, or 1 after the error); then
 * the temporary file is removed (on every path). */
int tether_cli_ab_int8_keep(const ab_args *a, const char *out_dir);
void tether_cli_ab_int8_cleanup(ab_args *a);

/* Code + weights of a C side: text + data, plus the params blob's bytes when the weights are
 * not linked. */
double tether_cli_ab_size(const ab_side *s);
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
