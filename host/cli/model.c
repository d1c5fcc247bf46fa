/*
 * The CLI commands that need the compiler (built only when tether_compiler is part of the build):
 *
 *   tether ab MODEL [--device URL] [--target T] [--in x.npy ...] [--input-shape N=D0xD1...]
 *             [--params linked|blob] [--pool SPEC] [--pin T=POOL] ... [-o DIR] [--json FILE]
 *       compiles MODEL with the unpacked and the packed ABI (and with --opencl the OpenCL
 *       backend) for the device of its session (tether_compile_for_device: target, CPU and pool
 *       sizes from its HELLO; the memory options as for run), prepares every artifact on that
 *       session through the same steps as `tether run ARTIFACT_DIR` (tether_device_prepare, the
 *       MCU link included), compares every output with the host's reference interpreter,
 *       measures the sides interleaved (A B, B A, ...; one after the other on an MCU, which holds
 *       one module at a time); ab_report.c prints the side-by-side table with each side's median
 *       and IQR and the ratio's Hodges-Lehmann estimate, 95% interval and verdict (stats.c;
 *       docs/cli.md, "How ab measures").
 *   tether ab MODEL --int8 calib.npz... | --int8 MODEL.int8.onnx [--abi A] ...
 *       the same A/B with two models instead of two ABIs: the float model and its int8 form
 *       (ab_int8.c: quantized on the fly or given, checked against the float model, compared
 *       with it and with its own interpreter), each side with its own model, graph, load options
 *       and reference outputs.
 *   tether run MODEL --reference --in x.npy ... [--out y.npy ...]
 *       runs the model on the reference interpreter on this machine (no device).
 *
 * What must stay true: both sides see the same input bytes; the model and the --in files are
 * checked (tether_cli_model_inputs_check) before the device is contacted, and the device's HELLO
 * is known before anything is compiled (--opencl on a device without OpenCL is refused first); a
 * mismatch against the interpreter (rtol/atol) makes the exit code 1 even though the table is
 * printed; a temporary directory made by `ab` is removed on every path, and a -o DIR is left
 * with complete artifacts only; every prepared artifact is released and the session closed on
 * every path.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_onnx.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/artifact.h"
#include "tether/stats.h"
#include "tether/compiler.h"
#include "tether/compiler_cli.h"
#include "tether/crt.h"
#include "tether/device_compile.h"

#include "ab.h"

#define fail tether_cli_fail

/* ---- model inputs and the reference interpreter ---- */

/* Reads input i of the model from its argument and checks it against the graph's signature. */
static int read_model_input(const tether_ir_graph *g, int i, const tether_cli_array *a,
                            tether_npy *out) {
    const tether_ir_tensor *t = &g->tensors[g->inputs[i]];
    if (tether_cli_array_read(a, out)) {
        return fail(1, "%s", tether_last_error());
    }
    if (tether_npy_check(out, a->label, "model input", t->name, t->dtype, t->ndim, t->shape)) {
        tether_npy_free(out);
        return fail(1, "%s", tether_last_error());
    }
    return 0;
}

/* The model's outputs without the extent outputs of those of data-dependent size (which come
 * last, dyn_dim -1: docs/onnx.md, "Data-dependent output sizes"). */
static int model_outputs(const tether_ir_graph *g) {
    int n = g->noutputs;
    while (n > 0 && g->tensors[g->outputs[n - 1]].dyn_dim < 0) {
        n--;
    }
    return n;
}

/* After interpret: each output of data-dependent size at its actual shape (its extent output's
 * value; the data are dense at the start of the buffer). */
static void trim_outputs(const tether_ir_graph *g, tether_npy *out) {
    for (int i = 0; i < g->noutputs; i++) {
        int k = tether_ir_extent_output(g, i), d = g->tensors[g->outputs[i]].dyn_dim - 1;
        if (k < 0 || d < 0) {
            continue;
        }
        memcpy(&out[i].shape[d], out[k].data, sizeof(int64_t));
        tether_shape_bytes(out[i].shape, out[i].ndim, out[i].dtype, &out[i].nbytes);
    }
}

/* Runs the interpreter on inputs in[] (checked against the model: any element type); outputs
 * are allocated npy arrays of the outputs' types. A QDQ model first goes through the
 * integer-operator pass (only it: the value-preserving passes stay off), so the reference
 * computes the integers the compiled code computes (qconv/qmatmul/qadd... with their
 * requantization) rather than the float convolution the DequantizeLinear/QuantizeLinear pairs
 * describe, whose own rounding differs by one step near ties and, through the following layers,
 * by more (docs/quantization.md, "The reference"). */
static int interpret(tether_ir_graph *g, const tether_npy *in, tether_npy *out) {
    tether_pass_options po;
    memset(&po, 0, sizeof po);
    po.integer_ops = true;
    po.pad_conv_min_width = -1;
    if (tether_passes_run(g, &po)) {
        return fail(1, "reference interpreter: integer operators: %s", tether_last_error());
    }
    const void *ins[TETHER_CLI_MAX_IO];
    void *outs[TETHER_CLI_MAX_IO];
    for (int i = 0; i < g->ninputs; i++) {
        ins[i] = in[i].data;
    }
    for (int i = 0; i < g->noutputs; i++) {
        const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
        memset(&out[i], 0, sizeof out[i]);
        out[i].dtype = t->dtype;
        out[i].ndim = t->ndim;
        memcpy(out[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        out[i].nbytes = tether_ir_tensor_bytes(t);
        out[i].data = calloc(1, out[i].nbytes ? out[i].nbytes : 1);
        if (!out[i].data) {
            return fail(1, "out of memory");
        }
        outs[i] = out[i].data;
    }
    if (tether_interp_run_typed(g, ins, outs)) {
        return fail(1, "reference interpreter: %s", tether_last_error());
    }
    trim_outputs(g, out);
    return 0;
}

/* Models with at most TETHER_CLI_MAX_IO inputs/outputs can be interpreted here (every element
 * type: the interpreter computes them all). */
static int check_io_model(const char *model, const tether_ir_graph *g) {
    if (g->ninputs > TETHER_CLI_MAX_IO || g->noutputs > TETHER_CLI_MAX_IO) {
        return fail(1, "%s: more than %d inputs or outputs", model, TETHER_CLI_MAX_IO);
    }
    return 0;
}

/* The graph's input (outputs = 0) or output names, for tether_cli_array_order. */
static void graph_names(const tether_ir_graph *g, int outputs, const char **names) {
    int n = outputs ? g->noutputs : g->ninputs;
    for (int i = 0; i < n && i < TETHER_CLI_MAX_IO; i++) {
        names[i] = g->tensors[outputs ? g->outputs[i] : g->inputs[i]].name;
    }
}

int tether_cli_run_reference(const char *model, int nin, tether_cli_array *inputs, int nout,
                             tether_cli_array *outputs) {
    tether_ir_graph g;
    /* an ONNX model binds the inputs its operators need as constants from their --in files;
     * every file is checked against the model (an .npz member from its header) */
    static tether_cli_model_load ml;
    int lrc = tether_cli_model_inputs_check(model, &ml, nin, inputs, 0, NULL, 0, &g);
    if (lrc) {
        return lrc;
    }
    int nkept = 0;
    for (int i = 0; i < nin; i++) {
        if (!ml.bound[i]) {
            inputs[nkept++] = inputs[i];
        }
    }
    tether_cli_model_load_free(&ml);
    nin = nkept;
    tether_npy in[TETHER_CLI_MAX_IO], out[TETHER_CLI_MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    int rc = 1;
    const char *in_names[TETHER_CLI_MAX_IO], *out_names[TETHER_CLI_MAX_IO];
    if (check_io_model(model, &g)) {
        goto done;
    }
    graph_names(&g, 0, in_names);
    graph_names(&g, 1, out_names);
    int nmodel = model_outputs(&g); /* extent outputs: no files (the .npy's shape has it) */
    if ((rc = tether_cli_array_order(inputs, &nin, g.ninputs, in_names, "input")) ||
        (!tether_cli_out_npz(outputs, nout) &&
         (rc = tether_cli_array_order(outputs, &nout, nmodel, out_names, "output")))) {
        goto done;
    }
    rc = 1;
    if (nin != g.ninputs || (nout && !tether_cli_out_npz(outputs, nout) && nout != nmodel)) {
        rc = fail(2, "%s has %d inputs and %d outputs; %d --in and %d --out given", model,
                  g.ninputs, nmodel, nin, nout);
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        if (read_model_input(&g, i, &inputs[i], &in[i])) {
            goto done;
        }
    }
    if (interpret(&g, in, out)) {
        goto done;
    }
    static tether_cli_array defaults[TETHER_CLI_MAX_IO];
    if (!nout) { /* out0.npy, out1.npy, ... */
        for (int i = 0; i < nmodel; i++) {
            memset(&defaults[i], 0, sizeof defaults[i]);
            snprintf(defaults[i].label, sizeof defaults[i].label, "out%d.npy", i);
            defaults[i].path = defaults[i].label;
        }
        outputs = defaults;
        nout = nmodel;
    }
    if (tether_cli_write_outputs(outputs, nout, nmodel, out_names, out, NULL)) {
        goto done;
    }
    printf("%s: reference interpreter, %d operators\n", model, g.nnodes);
    rc = 0;
done:
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++) {
        tether_npy_free(&in[i]);
        tether_npy_free(&out[i]);
    }
    tether_ir_close(&g);
    return rc;
}

/* ---- tether ab ---- */

static const char ab_usage[] =
    "usage: tether ab MODEL [--device URL] [--token-file FILE] [--timeout-ms MS] [--wait]\n"
    "                 [--target T] [--mcpu CPU] [--opt-level 0|1|2|3|s] [--in FILE|NAME=FILE ...]\n"
    "                 [--input-shape NAME=D0xD1...] [-o DIR] [--firmware PATH]\n"
    "                 [--number N] [--repeat R] [--min-repeat-ms MS] [--rtol R] [--atol A]\n"
    "                 [--json FILE] [--svg FILE] [--opencl [--precision fp32,fp16]]\n"
    "                 [--tuning-log FILE] [--profile]\n"
    "                 [--params linked|blob] [--pool NAME[:global:SIZE]] [--pin TENSOR=POOL]\n"
    "                 [--plan-inputs] [--plan-outputs] [--params-pool NAME]\n"
    "                 [--int8 CALIB.npz [CALIB.npz ...] | --int8 MODEL.int8.onnx]\n"
    "                 [--abi packed|unpacked]\n"
    "  Compiles MODEL with the unpacked and the packed ABI, runs both on the device (default\n"
    "  local:), compares every output with the reference interpreter and prints code size,\n"
    "  static stack, measured stack high-water mark and latency side by side. The target\n"
    "  comes from the device's HELLO unless --target is given: an MCU board's core (e.g.\n"
    "  cortex-m3), else <arch>-linux with the device's CPU (-march, e.g. x86-64-v4; --mcpu\n"
    "  overrides). --input-shape fixes a dynamic input dimension of an ONNX model, --loop-max N\n"
    "  bounds its run-time Loops' scan outputs, as for run.\n"
    "  --firmware PATH: an MCU board's firmware.json or its folder, for linking the artifacts\n"
    "  (default: $TETHER_FIRMWARE, then the build tree). Without --in, inputs are generated\n"
    "  (uniform in [-1, 1), fixed seed). -o keeps the artifacts and inputs in DIR; --json\n"
    "  writes the table as JSON. Exit code 1 when an ABI's outputs differ from the\n"
    "  interpreter: integer and bool outputs exactly, float outputs within rtol/atol (by\n"
    "  default each output's type's: float32/float64 1e-4/1e-5, float16 1e-3/1e-3, bfloat16\n"
    "  1e-2/1e-2; --rtol/--atol override them for every float output). Every output's comparison\n"
    "  is printed under the table. Generated inputs follow each input's type (small integers,\n"
    "  bool 0/1).\n"
    "  Timing: both artifacts are prepared on the device first, then measured interleaved\n"
    "  (A B, B A, A B, ...; one ABI after the other on an MCU, which holds one module at a\n"
    "  time): --repeat R repeats per ABI (15, at most 200), each at least --min-repeat-ms MS\n"
    "  long (50; the calls per repeat start at --number N (1) and grow to fill it). Per ABI:\n"
    "  median and IQR of the time per call; packed/unpacked: the Hodges-Lehmann ratio with a\n"
    "  95% confidence interval (Mann-Whitney), and whether the difference is significant.\n"
    "  --opencl also compiles MODEL with the OpenCL backend (buffer and texture weights), runs\n"
    "  both on the device's OpenCL layer in the same rotation (time = sum of the kernels'\n"
    "  profiled times); a device whose HELLO has no OpenCL is refused before any work.\n"
    "  --precision fp32,fp16 (with --opencl) also runs buffer weights in fp16 (--precision fp16\n"
    "  of compile) and prints its outputs' difference from fp32 (max abs/rel, top-1 agreement\n"
    "  over the last axis) and the fp32/fp16 kernel-time ratio.\n"
    "  --tuning-log FILE compiles every side with the best records of `tether tune`'s log for\n"
    "  its target and CPU (OpenCL: work-group sizes) and says how many kernels they cover.\n"
    "  --params and the memory options (--pool NAME takes the size of the device's pool) apply\n"
    "  to both ABIs as for run and bench: a model that needs them on a board (weights in flash,\n"
    "  a second RAM pool) can be compared there.\n"
    "  --profile then also runs each ABI's profiling build (docs/profile.md) and prints the time\n"
    "  of every node in both, the nodes that changed most first.\n"
    "  --int8 compares the float MODEL with its int8 form instead of the two ABIs: CALIB.npz\n"
    "  archives (one array per model input, named after it, a stack of samples along a first\n"
    "  axis) quantize it on the fly as `tether quantize` does (minmax, int8 activations, int8\n"
    "  weights per channel) into a temporary file (-o DIR keeps it as DIR/model.int8.onnx);\n"
    "  MODEL.int8.onnx is an already quantized model taking the same inputs. Both models are\n"
    "  compiled with one ABI (--abi, default unpacked) for the same device and measured alike;\n"
    "  the table adds code + weights, and after it come the int8 outputs against the float\n"
    "  model's (max and mean |difference|, in output steps, top-1 agreement) and against the\n"
    "  int8 model's own interpreter, which they must equal within one output step (exit code\n"
    "  1 otherwise). Not with --opencl or --profile.\n";

/* *out is set on every path (0 on an error), so callers stay defined for -O3's flow analysis. */
static int parse_num(const char *opt, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    *out = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || errno || end == v || *end || !(x >= lo && x <= hi)) {
        return fail(2, "%s needs a number in [%g, %g]", opt, lo, hi);
    }
    *out = x;
    return 0;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* --int8 a.npz [b.npz ...] (every following argument ending in .npz) or --int8 MODEL.onnx. */
static int parse_int8(ab_int8 *q, int argc, char **argv, int *i) {
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!v || v[0] == '-') {
        return fail(2, "--int8 needs calibration archives (FILE.npz ...) or an int8 model");
    }
    q->on = 1;
    if (!ends_with(v, ".npz")) {
        if (q->model || q->ncalib) {
            return fail(2, "--int8 takes calibration archives or one int8 model, not both");
        }
        q->model = v;
        (*i)++;
        return 0;
    }
    if (q->model) {
        return fail(2, "--int8 takes calibration archives or one int8 model, not both");
    }
    while (*i + 1 < argc && ends_with(argv[*i + 1], ".npz")) {
        if (q->ncalib == AB_MAX_CALIB) {
            return fail(2, "--int8: more than %d calibration archives", AB_MAX_CALIB);
        }
        q->calib[q->ncalib++] = argv[++*i];
    }
    return 0;
}

static int parse_ab(int argc, char **argv, ab_args *a) {
    memset(a, 0, sizeof *a);
    a->target = NULL; /* the device decides (an MCU board's core), else x86_64-linux */
    a->number = 1;
    a->repeat = 15;
    a->min_repeat_ms = 50;
    a->rtol = -1; /* the defaults of each output's type (tether/compare.h) */
    a->atol = -1;
    a->opt_level = TETHER_OPT_DEFAULT;
    a->params = -1;
    static tether_memory_cli mem;
    tether_memory_cli_init(&mem);
    a->mem = &mem;
    static ab_int8 int8;
    memset(&int8, 0, sizeof int8);
    int8.abi = TETHER_ABI_UNPACKED;
    a->int8 = &int8;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            fputs(ab_usage, stdout);
            return -1;
        }
        if (!strcmp(o, "--pool") || !strcmp(o, "--pin") || !strcmp(o, "--plan-inputs") ||
            !strcmp(o, "--plan-outputs") || !strcmp(o, "--params-pool")) {
            if (tether_memory_cli_parse(a->mem, "ab", argc, argv, &i) != 1) {
                return 2;
            }
            continue;
        }
        if (!strcmp(o, "--opencl")) {
            a->opencl = 1;
            continue;
        }
        if (!strcmp(o, "--precision")) {
            const char *v = i + 1 < argc ? argv[i + 1] : "";
            if (strcmp(v, "fp32") && strcmp(v, "fp32,fp16") && strcmp(v, "fp16,fp32") &&
                strcmp(v, "fp16")) {
                fprintf(stderr, "tether ab: --precision wants fp32,fp16 (or fp32)\n");
                return 2;
            }
            a->fp16 = strcmp(v, "fp32") != 0;
            i++;
            continue;
        }
        if (!strcmp(o, "--profile")) {
            a->profile = 1;
            continue;
        }
        if (!strcmp(o, "--wait")) {
            a->dev.wait = 1;
            continue;
        }
        if (!strcmp(o, "--int8")) {
            if (parse_int8(a->int8, argc, argv, &i)) {
                return 2;
            }
            continue;
        }
        if (o[0] != '-') {
            if (a->model) {
                return fail(2, "unexpected argument '%s' (one model)", o);
            }
            a->model = o;
            continue;
        }
        if (!v) {
            return fail(2, "%s needs a value", o);
        }
        i++;
        if (!strcmp(o, "--device")) {
            if (tether_device_url_check(v)) {
                return fail(2, "--device: %s", tether_last_error());
            }
            a->dev.url = v;
        } else if (!strcmp(o, "--token-file")) {
            a->dev.token_file = v;
        } else if (!strcmp(o, "--timeout-ms")) {
            if (parse_num(o, v, 1, 86400000, &x)) {
                return 2;
            }
            a->dev.timeout_ms = (int)x;
        } else if (!strcmp(o, "--target")) {
            a->target = v;
        } else if (!strcmp(o, "--mcpu")) {
            a->cpu = v;
        } else if (!strcmp(o, "--abi")) {
            if (tether_abi_parse(v, &a->int8->abi)) {
                return fail(2, "--abi '%s' is not packed or unpacked", v);
            }
            a->int8->abi_given = 1;
        } else if (!strcmp(o, "--tuning-log")) {
            a->tuning_log = v;
        } else if (!strcmp(o, "--firmware")) {
            a->firmware = v;
        } else if (!strcmp(o, "--params")) {
            if (strcmp(v, "linked") && strcmp(v, "blob")) {
                return fail(2, "--params wants linked or blob");
            }
            a->params = !strcmp(v, "linked");
        } else if (!strcmp(o, "--loop-max")) {
            if (tether_cli_loop_max_parse(v)) {
                return 2;
            }
        } else if (!strcmp(o, "--input-shape")) {
            if (a->ninput_shapes >= TETHER_CLI_MAX_IO) {
                return fail(2, "--input-shape: at most %d", TETHER_CLI_MAX_IO);
            }
            a->input_shapes[a->ninput_shapes++] = v;
        } else if (!strcmp(o, "--opt-level")) {
            if (!strcmp(v, "s")) {
                a->opt_level = -1;
            } else if (parse_num(o, v, 0, 3, &x)) {
                return 2;
            } else {
                a->opt_level = (int)x;
            }
        } else if (!strcmp(o, "--in")) {
            int prc = tether_cli_array_parse(v, 0, a->in, &a->nin, TETHER_CLI_MAX_IO);
            if (prc) {
                return prc;
            }
        } else if (!strcmp(o, "-o")) {
            a->out_dir = v;
        } else if (!strcmp(o, "--json")) {
            a->json = v;
        } else if (!strcmp(o, "--svg")) {
            a->svg = v;
        } else if (!strcmp(o, "--number")) {
            if (parse_num(o, v, 1, 1e8, &x)) {
                return 2;
            }
            a->number = (uint32_t)x;
        } else if (!strcmp(o, "--repeat")) {
            if (parse_num(o, v, 1, AB_MAX_REPEAT, &x)) {
                return 2;
            }
            a->repeat = (uint32_t)x;
        } else if (!strcmp(o, "--min-repeat-ms")) {
            if (parse_num(o, v, 0, 1e6, &x)) {
                return 2;
            }
            a->min_repeat_ms = (uint32_t)x;
        } else if (!strcmp(o, "--rtol")) {
            if (parse_num(o, v, 0, 1, &a->rtol)) {
                return 2;
            }
        } else if (!strcmp(o, "--atol")) {
            if (parse_num(o, v, 0, 1e6, &a->atol)) {
                return 2;
            }
        } else {
            return fail(2, "unknown option '%s' (try --help)", o);
        }
    }
    if (!a->model) {
        return fail(2, "give the model to compare (try --help)");
    }
    if (a->int8->abi_given && !a->int8->on) {
        return fail(2, "--abi applies with --int8 (without it ab compares both ABIs)");
    }
    if (a->int8->on && a->opencl) {
        return fail(2, "--opencl with --int8: the OpenCL backend has no integer kernels; compare "
                       "the float and int8 models on the C backend");
    }
    if (a->int8->on && a->profile) {
        return fail(2, "--profile with --int8: the two models' nodes differ; profile each with "
                       "`tether profile`");
    }
    if (a->svg && tether_file_out_check(a->svg)) {
        return fail(2, "--svg: %s", tether_last_error());
    }
    if (a->json) { /* found out now, not after the whole A/B */
        if (tether_file_out_check(a->json)) {
            return fail(2, "--json: %s", tether_last_error());
        }
    }
    return 0;
}

/* Writes generated inputs of each input's element type (tether_fill_inputs: floats uniform in
 * [-1, 1), small integers, bool 0/1; a fixed LCG seed) to dir/input_K.npy. */
static int generate_inputs(const tether_ir_graph *g, const char *dir, char paths[][1200]) {
    uint32_t seed = 20261123u;
    for (int i = 0; i < g->ninputs; i++) {
        const tether_ir_tensor *t = &g->tensors[g->inputs[i]];
        size_t n = tether_ir_tensor_elements(t), nb = tether_ir_tensor_bytes(t);
        void *v = malloc(nb ? nb : 1);
        if (!v) {
            return fail(1, "out of memory");
        }
        tether_fill_inputs(t->dtype, n, &seed, v);
        snprintf(paths[i], 1200, "%s/input_%d.npy", dir, i);
        int rc = tether_npy_write(paths[i], t->dtype, t->shape, t->ndim, v);
        free(v);
        if (rc) {
            return fail(1, "%s", tether_last_error());
        }
    }
    return 0;
}

/* One TIME of one side: repeat r's per-call seconds (r < 0: the warm-up, not kept) and, OpenCL,
 * its wall clock on the device; the side's number keeps its grown value. */
static int time_side(ab_side *s, const ab_args *a, int r) {
    tether_time_stats ts;
    if (tether_artifact_time(s->art, s->number, 1, a->min_repeat_ms, 0, &ts, NULL)) {
        return fail(1, "%s", tether_last_error());
    }
    s->number = ts.number > s->number ? ts.number : s->number;
    s->zero_timer |= ts.zero_timer;
    if (r >= 0) {
        s->t[r] = ts.seconds[0];
        s->wall[r] = ts.wall_seconds;
    }
    return 0;
}

/* Prepares side k on the device (upload, load, params, arrays, inputs), calls it once for its
 * outputs and stack high-water mark, and compares them with the interpreter. */
static int side_start(ab_side *s, const ab_args *a, tether_session *ses) {
    if (tether_artifact_open(s->dir, &s->art)) {
        return fail(1, "%s", tether_last_error());
    }
    int nin = tether_artifact_num_inputs(s->art), nout = tether_artifact_num_outputs(s->art);
    if (nin != a->nin) {
        return fail(2, "the model has %d inputs, %d --in given", nin, a->nin);
    }
    tether_npy in[TETHER_CLI_MAX_IO];
    const void *ins[TETHER_CLI_MAX_IO];
    void *outs[TETHER_CLI_MAX_IO];
    memset(in, 0, sizeof in);
    int rc = 0;
    for (int i = 0; !rc && i < nin; i++) {
        if (tether_cli_array_read(&a->in[i], &in[i]) ||
            tether_artifact_check_input(s->art, i, a->in[i].label, &in[i])) {
            rc = fail(1, "%s", tether_last_error());
        }
        ins[i] = in[i].data;
    }
    for (int i = 0; !rc && i < nout; i++) {
        tether_artifact_io io;
        tether_npy *o = &s->run.out[i];
        tether_artifact_io_of(s->art, 1, i, &io);
        o->dtype = io.dtype;
        o->ndim = io.ndim;
        memcpy(o->shape, io.shape, sizeof(int64_t) * (size_t)io.ndim);
        o->nbytes = io.nbytes;
        o->data = outs[i] = calloc(1, io.nbytes ? io.nbytes : 1);
        if (!o->data) {
            rc = fail(1, "out of memory");
        }
        s->run.nout = i + 1;
    }
    /* prepared with the host library's loader (the MCU link included) */
    if (!rc && (tether_device_prepare(s->art, ses, &s->dco) ||
                tether_artifact_run(s->art, ins, outs, &s->run.call, NULL))) {
        rc = fail(1, "%s", tether_last_error());
    }
    for (int i = 0; !rc && i < nout; i++) { /* a data-dependent size: the actual shape */
        if (tether_artifact_output_shape(s->art, i, (const void *const *)outs, s->run.out[i].shape,
                                         &s->run.out[i].nbytes)) {
            rc = fail(1, "%s", tether_last_error());
        }
    }
    for (int i = 0; i < nin; i++) {
        tether_npy_free(&in[i]);
    }
    if (rc) {
        return rc;
    }
    s->kernels = tether_artifact_num_kernels(s->art);
    tether_cli_ab_compare_ref(s, s->g->noutputs, a->rtol, a->atol);
    s->number = a->number;
    return 0;
}

/* The measurement: every side prepared first, then (after one TIME each that sets the calls per
 * repeat and warms up) `repeat` rounds of one TIME per side, the order reversed every other round
 * (A B, B A, ...) so that drift hits every side alike. An MCU holds one module at a time: there
 * each side is prepared, measured and released in turn. */
static int measure(ab_args *a, tether_session *ses, ab_side *s, int nsides, int interleaved) {
    /* progress over the TIME requests: a warm-up and `repeat` measurements per side */
    tether_cli_progress p;
    uint64_t done = 0;
    tether_cli_progress_start(&p, "measuring", (uint64_t)nsides * (a->repeat + 1), "TIMEs");
    int rc = 1;
    if (!interleaved) {
        for (int k = 0; k < nsides; k++) {
            if (side_start(&s[k], a, ses) || time_side(&s[k], a, -1)) {
                goto out;
            }
            tether_cli_progress_update(&p, ++done);
            for (uint32_t r = 0; r < a->repeat; r++) {
                if (time_side(&s[k], a, (int)r)) {
                    goto out;
                }
                tether_cli_progress_update(&p, ++done);
            }
            tether_artifact_free(s[k].art);
            s[k].art = NULL;
        }
        rc = 0;
        goto out;
    }
    for (int k = 0; k < nsides; k++) {
        if (side_start(&s[k], a, ses)) {
            goto out;
        }
    }
    for (int k = 0; k < nsides; k++) {
        if (time_side(&s[k], a, -1)) {
            goto out;
        }
        tether_cli_progress_update(&p, ++done);
    }
    for (uint32_t r = 0; r < a->repeat; r++) {
        for (int i = 0; i < nsides; i++) {
            int k = r % 2 ? nsides - 1 - i : i;
            if (time_side(&s[k], a, (int)r)) {
                goto out;
            }
            tether_cli_progress_update(&p, ++done);
        }
    }
    rc = 0;
out:
    tether_cli_progress_end(&p);
    return rc;
}

/* The loaded models (the float one, with --int8 the int8 one) and a quantized temporary file. */
static void ab_models_free(ab_args *a, tether_cli_model_load *ml, tether_ir_graph *g,
                           tether_cli_model_load *ml8, tether_ir_graph *g8) {
    tether_cli_model_load_free(ml);
    tether_ir_close(g);
    if (a->int8->on) {
        tether_cli_model_load_free(ml8);
        tether_ir_close(g8);
        tether_cli_ab_int8_cleanup(a);
    }
}

int tether_cli_cmd_ab(int argc, char **argv) {
    ab_args a;
    int prc = parse_ab(argc, argv, &a);
    if (prc) {
        return prc == -1 ? 0 : prc;
    }
    if (a.fp16 && !a.opencl) {
        return fail(2, "--precision fp32,fp16 needs --opencl");
    }
    /* the model and the --in files first, without the device (an ONNX model binds the inputs
     * its operators need as constants, a Reshape's shape, from their files; only the others are
     * fed at run time): a bad file is refused before any device is contacted */
    static tether_cli_model_load ml, ml8;
    tether_ir_graph g, g8;
    memset(&g8, 0, sizeof g8);
    int lrc = tether_cli_model_inputs_check(a.model, &ml, a.nin, a.in, a.ninput_shapes,
                                            a.input_shapes, 1, &g);
    if (lrc) {
        return lrc;
    }
    /* --int8: the int8 model (quantized here on the calibration archives, or given), checked
     * against the float model, before the device too */
    if (a.int8->on && (lrc = tether_cli_ab_int8_prepare(&a, &g, &ml, &ml8, &g8))) {
        tether_cli_model_load_free(&ml);
        tether_ir_close(&g);
        return lrc;
    }
    /* then the device: its HELLO decides the target and whether --opencl can run at all */
    tether_session *ses = NULL;
    if (tether_cli_open(&a.dev, &ses)) {
        ab_models_free(&a, &ml, &g, &ml8, &g8);
        return 1;
    }
    const tether_device_info *d = tether_session_info(ses);
    int rc = 1;
    if (a.opencl && !d->opencl) {
        tether_cli_fail(1,
                        "--opencl: the device %s has no OpenCL layer (its HELLO says opencl: no); "
                        "run ab without --opencl",
                        tether_cli_device_url(a.dev.url));
        tether_session_close(ses);
        ab_models_free(&a, &ml, &g, &ml8, &g8);
        return 1;
    }
    /* the C sides' options, completed for the device by the host library: its target and CPU
     * unless --target/--mcpu say otherwise, its pool sizes for --pool NAME */
    static tether_device_compile_options base;
    tether_cli_device_options(&base, a.firmware);
    base.compile.build.target = a.target;
    base.compile.build.cpu = a.cpu;
    base.compile.build.opt_level = a.opt_level;
    base.compile.load = &ml.lo;
    for (int k = 0; k < a.mem->opts.npools; k++) { /* "--pool NAME": the device's pool size */
        if (a.mem->from_device[k]) {
            a.mem->pools[k].capacity = TETHER_POOL_SIZE_FROM_DEVICE;
            a.mem->from_device[k] = false;
        }
    }
    base.compile.memory = a.mem->opts;
    if (a.params != -1) {
        base.compile.codegen.link_params = a.params == 1;
    } else { /* large weights go to a params blob unless --params says otherwise */
        base.compile.params_link_max = TETHER_PARAMS_LINK_MAX;
    }
    base.tuning_log = a.tuning_log;
    int rrc = tether_device_compile_resolve(d, &base);
    if (rrc) {
        tether_session_close(ses);
        ab_models_free(&a, &ml, &g, &ml8, &g8);
        return fail(rrc == TETHER_ERR_INVALID_ARG ? 2 : 1, "%s", tether_last_error());
    }
    a.target = base.compile.build.target;
    a.cpu = base.compile.build.cpu;
    int interleaved = !tether_cli_is_mcu(d);
    const tether_target *tg;
    if (tether_target_find(a.target, &tg)) {
        tether_session_close(ses);
        ab_models_free(&a, &ml, &g, &ml8, &g8);
        return fail(2, "--target: %s", tether_last_error());
    }
    if (!tether_target_available(tg)) {
        tether_session_close(ses);
        ab_models_free(&a, &ml, &g, &ml8, &g8);
        return fail(1, "target %s: its compiler %s is not installed", a.target, tg->cc);
    }
    int given = a.nin, kept = 0;
    for (int i = 0; i < given; i++) {
        if (!ml.bound[i]) {
            a.in[kept++] = a.in[i];
        }
    }
    a.nin = kept;
    int made_tmp = 0;
    char dir[1024];
    static char gen[TETHER_CLI_MAX_IO][1200];
    tether_npy in[TETHER_CLI_MAX_IO], ref[TETHER_CLI_MAX_IO], ref8[TETHER_CLI_MAX_IO];
    memset(in, 0, sizeof in);
    memset(ref, 0, sizeof ref);
    memset(ref8, 0, sizeof ref8);
    /* unpacked, packed; with --opencl: OpenCL buffer and texture weights; --precision fp32,fp16:
     * OpenCL buffer weights in fp16 */
    static ab_side s[5];
    memset(s, 0, sizeof s);
    int nsides = a.opencl ? (a.fp16 ? 5 : 4) : 2;
    for (int k = 0; k < 5; k++) { /* --int8: side 1 is the int8 model */
        int q = a.int8->on && k == 1;
        s[k].model = q ? a.int8->model : a.model;
        s[k].g = q ? &g8 : &g;
        s[k].ref = q ? ref8 : ref;
    }
    if (check_io_model(a.model, &g) || (a.int8->on && check_io_model(a.int8->model, &g8))) {
        goto done;
    }
    const char *in_names[TETHER_CLI_MAX_IO];
    graph_names(&g, 0, in_names);
    if (given && (rc = tether_cli_array_order(a.in, &a.nin, g.ninputs, in_names, "input"))) {
        goto done;
    }
    rc = 1;
    if (given && a.nin != g.ninputs) {
        rc = fail(2, "%s has %d run-time inputs, %d --in given (%d bound as constants)", a.model,
                  g.ninputs, given, given - a.nin);
        goto done;
    }
    if (a.out_dir) {
        if (mkdir(a.out_dir, 0755) != 0 && errno != EEXIST) {
            fail(1, "cannot create %s: %s", a.out_dir, strerror(errno));
            goto done;
        }
        snprintf(dir, sizeof dir, "%s", a.out_dir);
    } else {
        if (tether_cli_tempdir_make(dir, sizeof dir, "ab")) {
            fail(1, "%s", tether_last_error());
            goto done;
        }
        made_tmp = 1;
    }
    if (!given) {
        if (generate_inputs(&g, dir, gen)) {
            goto done;
        }
        for (int i = 0; i < g.ninputs; i++) {
            memset(&a.in[i], 0, sizeof a.in[i]);
            a.in[i].path = gen[i];
            snprintf(a.in[i].label, sizeof a.in[i].label, "%.1100s", gen[i]);
        }
        a.nin = g.ninputs;
    }
    for (int i = 0; i < a.nin; i++) {
        if (read_model_input(&g, i, &a.in[i], &in[i])) {
            goto done;
        }
    }
    if (interpret(&g, in, ref) || (a.int8->on && interpret(&g8, in, ref8))) {
        goto done;
    }
    if (a.int8->on) {
        tether_cli_ab_int8_steps(&g8, &s[1]);
    }
    /* compile every side for the device before it does anything (tether_compile_for_device;
     * each side is prepared on it in measure) */
    for (int k = 0; k < nsides; k++) {
        tether_device_compile_options *o = &s[k].dco;
        if (a.int8->on) { /* the float and the int8 model, one ABI */
            *o = base;
            o->compile.load = k == 1 ? &ml8.lo : &ml.lo;
            s[k].abi = a.int8->abi;
            s[k].label = k == 0 ? "float32" : "int8";
            snprintf(s[k].dir, sizeof s[k].dir, "%s/%s", dir, k == 0 ? "float" : "int8");
            o->compile.codegen.abi = s[k].abi;
        } else if (k < 2) {
            *o = base; /* its pointers stay into base, which outlives the sides */
            s[k].abi = k == 0 ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED;
            s[k].label = k == 0 ? "unpacked ABI" : "packed ABI";
            snprintf(s[k].dir, sizeof s[k].dir, "%s/%s", dir, tether_abi_name(s[k].abi));
            o->compile.codegen.abi = s[k].abi;
        } else {
            tether_cli_device_options(o, a.firmware);
            o->compile.load = &ml.lo;
            o->tuning_log = a.tuning_log;
            s[k].label = k == 2 ? "buffer weights" : k == 3 ? "texture weights" : "buffer fp16";
            snprintf(s[k].dir, sizeof s[k].dir, "%s/%s", dir,
                     k == 2   ? "opencl"
                     : k == 3 ? "opencl_texture"
                              : "opencl_fp16");
            o->compile.backend = TETHER_BACKEND_OPENCL;
            o->compile.opencl.texture_weights = k == 3;
            o->compile.opencl.fp16 = k == 4;
        }
        o->loader_ctx = o; /* tether_cli_artifact_loader's context: this side's options */
        o->notes = k == 0 || k == 2 ? stdout : NULL; /* the tuning log's note, once per backend */
        if (tether_compile_for_device(ses, s[k].model, s[k].dir, o, &s[k].comp, NULL)) {
            if (a.int8->on) {
                fail(1, "compile (%s model): %s", s[k].label, tether_last_error());
            } else if (k < 2) {
                fail(1, "compile (%s ABI): %s", tether_abi_name(s[k].abi), tether_last_error());
            } else {
                fail(1, "compile (OpenCL): %s", tether_error_detail());
            }
            goto done;
        }
    }
    if (measure(&a, ses, s, nsides, interleaved)) {
        goto done;
    }
    for (int k = 0; k < nsides; k++) {
        tether_spread_of(s[k].t, (int)a.repeat, &s[k].spread);
        tether_ratio_of(s[0].t, (int)a.repeat, s[k].t, (int)a.repeat, &s[k].vs_unpacked);
        s[k].has_wall = a.repeat > 0;
        for (uint32_t r = 0; r < a.repeat; r++) {
            s[k].has_wall &= s[k].wall[r] > 0;
            s[k].overhead[r] = s[k].wall[r] - s[k].t[r];
        }
        if (s[k].has_wall) {
            tether_spread_of(s[k].wall, (int)a.repeat, &s[k].wall_spread);
            tether_spread_of(s[k].overhead, (int)a.repeat, &s[k].overhead_spread);
        }
    }
    tether_cli_ab_print_table(&a, &g, s, interleaved);
    if (a.opencl) {
        tether_cli_ab_print_opencl(s);
    }
    if (a.fp16) {
        tether_cli_ab_print_fp16(&g, s);
    }
    tether_cli_ab_print_outputs(&g, s, nsides);
    if (a.int8->on) {
        tether_cli_ab_int8_vs_float(&a, &s[0], &s[1]);
        tether_cli_ab_int8_print(&a, s);
    }
    if (a.profile) { /* each ABI's profiling build, node by node (profile.c) */
        for (int k = 0; k < nsides; k++) { /* an MCU holds one module at a time */
            tether_artifact_free(s[k].art);
            s[k].art = NULL;
        }
        tether_device_compile_options *po[2] = {&s[0].dco, &s[1].dco};
        const char *labels[2] = {s[0].label, s[1].label};
        if (tether_cli_profile_ab(ses, a.model, dir, po, labels, a.in, a.nin)) {
            goto done;
        }
    }
    if (a.json && tether_cli_ab_write_json(&a, d, s, interleaved)) {
        goto done;
    }
    if (a.svg && tether_cli_ab_write_svg(&a, &g, s, nsides)) {
        goto done;
    }
    if (a.out_dir) { /* the artifacts and inputs kept there (and a quantized model) */
        if (tether_cli_ab_int8_keep(&a, a.out_dir)) {
            goto done;
        }
        tether_cli_wrote(a.out_dir);
    }
    rc = s[0].equal && s[1].equal && (!a.opencl || (s[2].equal && s[3].equal)) ? 0 : 1;
    if (rc && a.int8->on) {
        fail(1, "outputs differ from the reference interpreter (the float32 model's within its "
                "tolerance, the int8 model's by more than one output step)");
    } else if (rc) {
        if (a.rtol < 0 && a.atol < 0) {
            fail(1, "outputs differ from the reference interpreter (integer and bool exactly, "
                    "floats within their type's tolerance)");
        } else {
            fail(1, "outputs differ from the reference interpreter (rtol %g, atol %g)", a.rtol,
                 a.atol);
        }
    }
done:
    if (rc) {
        tether_cli_after_failure(ses, "ab");
    }
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++) {
        tether_npy_free(&in[i]);
        tether_npy_free(&ref[i]);
        tether_npy_free(&ref8[i]);
    }
    for (int k = 0; k < 5; k++) {
        tether_artifact_free(s[k].art);
        s[k].art = NULL;
        for (int i = 0; i < TETHER_CLI_MAX_IO; i++) {
            tether_npy_free(&s[k].run.out[i]);
        }
    }
    tether_session_close(ses);
    if (made_tmp) {
        tether_cli_tempdir_remove(dir);
    }
    ab_models_free(&a, &ml, &g, &ml8, &g8);
    return rc;
}

#else /* !TETHER_HAVE_COMPILER */

int tether_cli_cmd_ab(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return tether_cli_fail(2, "ab needs the compiler, which this build lacks");
}

int tether_cli_run_reference(const char *model, int nin, tether_cli_array *inputs, int nout,
                             tether_cli_array *outputs) {
    (void)nin;
    (void)inputs;
    (void)nout;
    (void)outputs;
    return tether_cli_fail(2, "%s: --reference needs the compiler, which this build lacks", model);
}

#endif
