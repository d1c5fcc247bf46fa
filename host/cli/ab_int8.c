/*
 * `tether ab MODEL --int8 calib.npz [more.npz ...]` and `tether ab MODEL --int8 MODEL.int8.onnx`
 * (docs/cli.md, docs/quantization.md): the float model beside its int8 form. This file gets the
 * int8 model (quantized here with `tether quantize`'s library call into a temporary file, or the
 * one given), checks that it is a form of the float model, finds each output's quantization step,
 * compares the int8 side with its own reference interpreter (within one step) and with the float
 * side (max and mean |difference|, top-1 agreement), and prints and writes those figures; the
 * sizes, RAM, stack and latency are model.c's measurement and ab_report.c's table.
 *
 * What must stay true: everything here happens before the device is contacted or after it was
 * measured (never in between); the temporary file of a quantized model is removed on every path
 * (tether_cli_ab_int8_cleanup, and the signal handler through tempdir.c); an int8 model whose
 * run-time inputs differ from the float model's (names, types, shapes) or whose outputs differ in
 * count or shape is refused with both signatures named; a figure that cannot be computed (an
 * output that is not float in the float model) is "not compared", never 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_onnx.h"

#ifdef TETHER_HAVE_COMPILER
#include "tether/crt.h"
#include "tether/file.h"

#include "ab.h"

#define fail tether_cli_fail

/* "float32[1,3,8,8]" */
static void sig(const tether_ir_tensor *t, char *buf, size_t n) {
    char dt[TETHER_DTYPE_NAME_MAX] = "?";
    tether_dtype_name(t->dtype, dt, sizeof dt);
    int o = snprintf(buf, n, "%s[", dt);
    for (int d = 0; d < t->ndim && o < (int)n; d++) {
        o += snprintf(buf + o, n - (size_t)o, "%s%lld", d ? "," : "", (long long)t->shape[d]);
    }
    if (o < (int)n) {
        snprintf(buf + o, n - (size_t)o, "]");
    }
}

static int same_shape(const tether_ir_tensor *a, const tether_ir_tensor *b) {
    if (a->ndim != b->ndim) {
        return 0;
    }
    for (int d = 0; d < a->ndim; d++) {
        if (a->shape[d] != b->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* The int8 model is a form of the float model: the same run-time inputs, as many outputs, each
 * of the same shape (its type may be an integer one: a QuantizeLinear output). */
static int check_form(const char *fm, const tether_ir_graph *g, const char *qm,
                      const tether_ir_graph *q) {
    char x[160], y[160];
    if (g->ninputs != q->ninputs) {
        return fail(1,
                    "--int8: %s is not a quantized form of %s: it has %d run-time inputs, the "
                    "float model %d",
                    qm, fm, q->ninputs, g->ninputs);
    }
    for (int i = 0; i < g->ninputs; i++) {
        const tether_ir_tensor *a = &g->tensors[g->inputs[i]], *b = &q->tensors[q->inputs[i]];
        if (strcmp(a->name, b->name) || a->dtype.code != b->dtype.code ||
            a->dtype.bits != b->dtype.bits || !same_shape(a, b)) {
            sig(a, x, sizeof x);
            sig(b, y, sizeof y);
            return fail(1,
                        "--int8: %s is not a quantized form of %s: its input %d is '%s' %s, the "
                        "float model's '%s' %s (both models must take the same inputs)",
                        qm, fm, i, b->name, y, a->name, x);
        }
    }
    if (g->noutputs != q->noutputs) {
        return fail(1,
                    "--int8: %s is not a quantized form of %s: it has %d outputs, the float "
                    "model %d",
                    qm, fm, q->noutputs, g->noutputs);
    }
    for (int i = 0; i < g->noutputs; i++) {
        const tether_ir_tensor *a = &g->tensors[g->outputs[i]], *b = &q->tensors[q->outputs[i]];
        if (!same_shape(a, b)) {
            sig(a, x, sizeof x);
            sig(b, y, sizeof y);
            return fail(1,
                        "--int8: %s is not a quantized form of %s: its output %d '%s' is %s, the "
                        "float model's '%s' %s",
                        qm, fm, i, b->name, y, a->name, x);
        }
    }
    return 0;
}

void tether_cli_ab_int8_cleanup(ab_args *a) {
    ab_int8 *q = a->int8;
    if (q->tmpdir[0]) {
        tether_cli_tempdir_remove(q->tmpdir);
        q->tmpdir[0] = 0;
    }
    free(q->bytes);
    q->bytes = NULL;
    q->nbytes = 0;
}

#ifdef TETHER_HAVE_ONNX
/* Quantizes a->model on the calibration archives (tether quantize's defaults: minmax, int8
 * activations, per-channel weights) into q->tmpdir/model.int8.onnx. */
static int quantize(ab_args *a, tether_cli_model_load *ml) {
    ab_int8 *q = a->int8;
    tether_onnx_quantize_options o;
    memset(&o, 0, sizeof o);
    o.load = &ml->lo; /* custom operators; the samples give the shapes */
    tether_onnx_quantize_result r;
    if (tether_cli_quantize(a->model, q->ncalib, q->calib, &o, &r)) {
        return 1;
    }
    int rc = 0;
    if (tether_cli_tempdir_make(q->tmpdir, sizeof q->tmpdir, "ab-int8")) {
        q->tmpdir[0] = 0;
        rc = fail(1, "%s", tether_last_error());
    } else {
        snprintf(q->path, sizeof q->path, "%s/model.int8.onnx", q->tmpdir);
        if (tether_file_write(q->path, r.model, r.model_len)) {
            rc = fail(1, "%s", tether_last_error());
        }
    }
    if (!rc) {
        q->bytes = r.model; /* kept for -o DIR */
        q->nbytes = r.model_len;
        r.model = NULL;
        q->model = q->path;
        q->quantized = 1;
        q->nsamples = r.nsamples;
        q->quantized_nodes = r.quantized_nodes;
        q->float_nodes = r.float_nodes;
        q->integer_nodes = r.integer_nodes;
        printf("quantized %s on %d calibration samples (%d file%s; minmax, int8 activations, "
               "int8 weights per channel): %d nodes quantized, %d float, %d integer operators\n",
               a->model, r.nsamples, q->ncalib, q->ncalib == 1 ? "" : "s", r.quantized_nodes,
               r.float_nodes, r.integer_nodes);
        if (r.float_node_names) {
            printf("float nodes: %s\n", r.float_node_names);
        }
    }
    tether_onnx_quantize_free(&r);
    return rc;
}
#endif

int tether_cli_ab_int8_prepare(ab_args *a, const tether_ir_graph *g, tether_cli_model_load *ml,
                               tether_cli_model_load *ml8, tether_ir_graph *g8) {
    ab_int8 *q = a->int8;
    if (q->ncalib) {
#ifdef TETHER_HAVE_ONNX
        if (quantize(a, ml)) {
            tether_cli_ab_int8_cleanup(a);
            return 1;
        }
#else
        (void)ml;
        return fail(2, "--int8 FILE.npz quantizes an ONNX model, and this build has no ONNX "
                       "front end");
#endif
    }
    int lrc = tether_cli_model_inputs_check(q->model, ml8, a->nin, a->in, a->ninput_shapes,
                                            a->input_shapes, 1, g8);
    if (lrc) {
        tether_cli_ab_int8_cleanup(a);
        return lrc;
    }
    if (check_form(a->model, g, q->quantized ? "the quantized model" : q->model, g8)) {
        tether_cli_model_load_free(ml8);
        tether_ir_close(g8);
        tether_cli_ab_int8_cleanup(a);
        return 1;
    }
    return 0;
}

/* ---- each output's quantization step ---- */

/* The node that writes tensor t (-1: none). */
static int producer(const tether_ir_graph *g, int t) {
    for (int n = 0; n < g->nnodes; n++) {
        for (int k = 0; k < g->nodes[n].noutputs; k++) {
            if (g->nodes[n].outputs[k] == t) {
                return n;
            }
        }
    }
    return -1;
}

/* The (de)quantize node whose scale gives output i its step: the output's producer, through
 * operators that only move values (reshape-likes, transpose). -1: none. */
static int step_node(const tether_ir_graph *g, int i) {
    int t = g->outputs[i];
    for (int hops = 0; hops < 16; hops++) {
        int n = producer(g, t);
        if (n < 0) {
            return -1;
        }
        tether_op op = g->nodes[n].op;
        if (op == TETHER_OP_QUANTIZE || op == TETHER_OP_DEQUANTIZE) {
            return n;
        }
        if (op != TETHER_OP_RESHAPE && op != TETHER_OP_FLATTEN && op != TETHER_OP_SQUEEZE &&
            op != TETHER_OP_UNSQUEEZE && op != TETHER_OP_TRANSPOSE) {
            return -1;
        }
        t = g->nodes[n].inputs[0];
    }
    return -1;
}

/* A constant float32 scale's largest element (0 when it is not a constant). */
static double max_scale(const tether_ir_graph *g, int t) {
    if (t < 0 || g->tensors[t].kind != TETHER_TENSOR_CONSTANT || !g->tensors[t].data) {
        return 0;
    }
    const tether_ir_tensor *s = &g->tensors[t];
    double m = 0;
    size_t n = s->nbytes / ((size_t)(s->dtype.bits + 7) / 8);
    for (size_t k = 0; k < n; k++) {
        double v = tether_elem_double(s->dtype, s->data, k);
        m = v > m ? v : m;
    }
    return m;
}

void tether_cli_ab_int8_steps(const tether_ir_graph *g8, ab_side *s) {
    for (int i = 0; i < g8->noutputs && i < TETHER_CLI_MAX_IO; i++) {
        int n = step_node(g8, i);
        s->step[i] = n < 0 ? 0 : max_scale(g8, g8->nodes[n].inputs[1]);
    }
}

/* ---- comparisons ---- */

static int is_int(DLDataType t) {
    return t.code == kDLInt || t.code == kDLUInt;
}

static size_t elements(const tether_npy *a) {
    size_t n = 1;
    for (int d = 0; d < a->ndim; d++) {
        n *= (size_t)a->shape[d];
    }
    return n;
}

void tether_cli_ab_compare_ref(ab_side *s, int nout, double rtol, double atol) {
    s->equal = s->run.nout == nout;
    s->ncmp = nout;
    for (int i = 0; i < nout && i < s->run.nout; i++) {
        tether_compare_result *r = &s->cmp[i];
        const tether_npy *got = &s->run.out[i], *want = &s->ref[i];
        double st = s->step[i];
        if (st > 0 && !is_int(want->dtype)) { /* float (dequantized): within one step */
            double tol = st * (1 + 1e-6);
            tether_compare_arrays(got, want, 0, atol > tol ? atol : tol, r);
        } else {
            tether_compare_arrays(got, want, rtol, atol, r);
        }
        if (st > 0 && is_int(want->dtype) && r->same_layout && !r->equal) {
            /* an integer (quantized) output: one step is 1 */
            size_t n = elements(want), far = 0;
            for (size_t k = 0; k < n; k++) {
                int64_t d = tether_elem_int(got->dtype, got->data, k) -
                            tether_elem_int(want->dtype, want->data, k);
                far += d > 1 || d < -1;
            }
            r->equal = far == 0;
        }
        if (!r->equal) {
            s->equal = 0;
        }
        if (!r->same_layout || r->max_abs > s->max_abs || r->max_abs != r->max_abs) {
            s->max_abs = r->same_layout ? r->max_abs : NAN;
        }
    }
}

/* The quantized output's element k as the float it stands for: integer outputs dequantized with
 * their quantize node's scale and zero point (per channel along its axis). */
typedef struct deq {
    const tether_ir_graph *g;
    int node;     /* the quantize node, -1: the values are floats already */
    size_t inner; /* elements after the axis */
    int64_t channels;
} deq;

static double deq_value(const deq *q, const tether_npy *a, size_t k) {
    double v = tether_elem_double(a->dtype, a->data, k);
    if (q->node < 0) {
        return v;
    }
    const tether_ir_node *n = &q->g->nodes[q->node];
    const tether_ir_tensor *sc = &q->g->tensors[n->inputs[1]];
    size_t c = q->channels > 1 ? (k / q->inner) % (size_t)q->channels : 0;
    double scale = tether_elem_double(sc->dtype, sc->data, c), zp = 0;
    if (n->ninputs > 2 && n->inputs[2] >= 0) {
        const tether_ir_tensor *z = &q->g->tensors[n->inputs[2]];
        zp = z->data ? tether_elem_double(z->dtype, z->data, c) : 0;
    }
    return (v - zp) * scale;
}

/* How output i of the int8 graph reads as floats: 0, or -1 when it cannot (an integer output
 * whose step node is not a quantize with constant parameters of the output's layout). */
static int deq_of(const tether_ir_graph *g, int i, const tether_npy *a, deq *q) {
    memset(q, 0, sizeof *q);
    q->g = g;
    q->node = -1;
    if (!is_int(a->dtype)) {
        return a->dtype.code == kDLFloat ? 0 : -1;
    }
    int n = step_node(g, i);
    if (n < 0 || g->nodes[n].op != TETHER_OP_QUANTIZE) {
        return -1;
    }
    const tether_ir_node *nd = &g->nodes[n];
    const tether_ir_tensor *sc = &g->tensors[nd->inputs[1]];
    if (sc->kind != TETHER_TENSOR_CONSTANT || !sc->data ||
        (nd->ninputs > 2 && nd->inputs[2] >= 0 &&
         g->tensors[nd->inputs[2]].kind != TETHER_TENSOR_CONSTANT)) {
        return -1;
    }
    size_t ns = sc->nbytes / ((size_t)(sc->dtype.bits + 7) / 8);
    if (ns > 1) { /* per channel: only directly on the output (no reshape between) */
        int64_t axis = nd->attrs.axis < 0 ? nd->attrs.axis + a->ndim : nd->attrs.axis;
        if (nd->outputs[0] != g->outputs[i] || axis < 0 || axis >= a->ndim ||
            a->shape[axis] != (int64_t)ns) {
            return -1;
        }
        q->inner = 1;
        for (int d = (int)axis + 1; d < a->ndim; d++) {
            q->inner *= (size_t)a->shape[d];
        }
        q->channels = (int64_t)ns;
    }
    q->node = n;
    return 0;
}

void tether_cli_ab_int8_vs_float(ab_args *a, const ab_side *f, const ab_side *q) {
    ab_int8 *r = a->int8;
    r->noutputs = f->g->noutputs < TETHER_CLI_MAX_IO ? f->g->noutputs : TETHER_CLI_MAX_IO;
    for (int i = 0; i < r->noutputs; i++) {
        ab_int8_output *o = &r->out[i];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%s", f->g->tensors[f->g->outputs[i]].name);
        o->step = q->step[i];
        const tether_npy *x = &f->run.out[i], *y = &q->run.out[i], *yr = &q->ref[i];
        size_t n = elements(x);
        o->elements = (int64_t)n;
        deq d;
        if (i >= f->run.nout || i >= q->run.nout || x->dtype.code != kDLFloat || elements(y) != n ||
            deq_of(q->g, i, y, &d)) {
            continue;
        }
        o->compared = 1;
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (size_t k = 0; k < n; k++) {
            double fv = tether_elem_double(x->dtype, x->data, k), qv = deq_value(&d, y, k);
            double e = fabs(fv - qv);
            o->max_abs = e > o->max_abs || e != e ? e : o->max_abs;
            sum += e;
            lo = fv < lo ? fv : lo;
            hi = fv > hi ? fv : hi;
            if (o->step > 0 && yr->data && elements(yr) == n) {
                double s = fabs(qv - deq_value(&d, yr, k)) / o->step;
                o->ref_max_steps = s > o->ref_max_steps ? s : o->ref_max_steps;
                o->ref_off_by_one += s > 0.5;
            }
        }
        o->mean_abs = n ? sum / (double)n : 0;
        o->float_range = n ? hi - lo : 0;
        int64_t c = x->ndim ? x->shape[x->ndim - 1] : 1;
        if (c >= 2) { /* top-1 over the last axis */
            o->rows = (int64_t)n / c;
            for (int64_t row = 0; row < o->rows; row++) {
                size_t b = (size_t)(row * c), af = b, aq = b;
                for (size_t k = b + 1; k < b + (size_t)c; k++) {
                    af = tether_elem_double(x->dtype, x->data, k) >
                                 tether_elem_double(x->dtype, x->data, af)
                             ? k
                             : af;
                    aq = deq_value(&d, y, k) > deq_value(&d, y, aq) ? k : aq;
                }
                o->top1_agree += af == aq;
            }
        }
    }
}

/* ---- the report ---- */

void tether_cli_ab_int8_print(const ab_args *a, const ab_side *s) {
    const ab_int8 *r = a->int8;
    printf("\nint8 model against the float32 model on the device (the same inputs)\n");
    printf("  %-20s %9s %12s %12s %12s %8s  %s\n", "output", "elements", "max |diff|",
           "mean |diff|", "float range", "steps", "top-1 agreement");
    for (int i = 0; i < r->noutputs; i++) {
        const ab_int8_output *o = &r->out[i];
        if (!o->compared) {
            printf("  %-20.20s %9lld  not compared (not a float output of the float model, or "
                   "an integer output without constant quantization parameters)\n",
                   o->name, (long long)o->elements);
            continue;
        }
        char steps[32] = "-", top[64] = "-";
        if (o->step > 0) {
            snprintf(steps, sizeof steps, "%.1f", o->max_abs / o->step);
        }
        if (o->rows) {
            snprintf(top, sizeof top, "%lld/%lld (%.1f%%)", (long long)o->top1_agree,
                     (long long)o->rows, 100.0 * (double)o->top1_agree / (double)o->rows);
        }
        printf("  %-20.20s %9lld %12.4g %12.4g %12.4g %8s  %s\n", o->name, (long long)o->elements,
               o->max_abs, o->mean_abs, o->float_range, steps, top);
    }
    printf("  (steps: max |diff| in the int8 output's quantization steps)\n");
    printf("int8 model against its own reference interpreter: %s\n",
           s[1].equal ? "every output exact or within one output step"
                      : "DIFFERS by more than one output step");
    for (int i = 0; i < r->noutputs; i++) {
        const ab_int8_output *o = &r->out[i];
        if (o->step > 0 && o->compared) {
            printf("  %-20.20s step %.4g: max %.0f step%s apart, %zu of %lld elements one step "
                   "off\n",
                   o->name, o->step, o->ref_max_steps, o->ref_max_steps == 1 ? "" : "s",
                   o->ref_off_by_one, (long long)o->elements);
        }
    }
}

void tether_cli_ab_int8_json(cJSON *root, const ab_args *a) {
    const ab_int8 *r = a->int8;
    cJSON *j = cJSON_AddObjectToObject(root, "int8");
    cJSON_AddBoolToObject(j, "quantized_here", r->quantized);
    if (r->quantized) {
        cJSON_AddNullToObject(j, "model"); /* a temporary file (-o DIR keeps model.int8.onnx) */
        cJSON *c = cJSON_AddArrayToObject(j, "calibration");
        for (int k = 0; k < r->ncalib; k++) {
            cJSON_AddItemToArray(c, cJSON_CreateString(r->calib[k]));
        }
        cJSON_AddNumberToObject(j, "samples", r->nsamples);
        cJSON_AddNumberToObject(j, "quantized_nodes", r->quantized_nodes);
        cJSON_AddNumberToObject(j, "float_nodes", r->float_nodes);
        cJSON_AddNumberToObject(j, "integer_nodes", r->integer_nodes);
    } else {
        cJSON_AddStringToObject(j, "model", r->model);
        cJSON_AddNullToObject(j, "calibration");
    }
    cJSON *vs = cJSON_AddArrayToObject(root, "int8_vs_float");
    for (int i = 0; i < r->noutputs; i++) {
        const ab_int8_output *o = &r->out[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "name", o->name);
        cJSON_AddNumberToObject(e, "elements", (double)o->elements);
        cJSON_AddBoolToObject(e, "compared", o->compared);
        if (o->step > 0) {
            cJSON_AddNumberToObject(e, "step", o->step);
        } else {
            cJSON_AddNullToObject(e, "step");
        }
        if (o->compared) {
            cJSON_AddNumberToObject(e, "max_abs_difference", o->max_abs);
            cJSON_AddNumberToObject(e, "mean_abs_difference", o->mean_abs);
            cJSON_AddNumberToObject(e, "float_range", o->float_range);
        } else {
            cJSON_AddNullToObject(e, "max_abs_difference");
            cJSON_AddNullToObject(e, "mean_abs_difference");
            cJSON_AddNullToObject(e, "float_range");
        }
        if (o->compared && o->rows) {
            cJSON_AddNumberToObject(e, "top1_rows", (double)o->rows);
            cJSON_AddNumberToObject(e, "top1_agree", (double)o->top1_agree);
            cJSON_AddNumberToObject(e, "top1_agreement", (double)o->top1_agree / (double)o->rows);
        } else {
            cJSON_AddNullToObject(e, "top1_agreement");
        }
        cJSON_AddItemToArray(vs, e);
    }
    cJSON *rf = cJSON_AddArrayToObject(root, "int8_vs_reference");
    for (int i = 0; i < r->noutputs; i++) {
        const ab_int8_output *o = &r->out[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "name", o->name);
        if (o->step > 0 && o->compared) {
            cJSON_AddNumberToObject(e, "step", o->step);
            cJSON_AddNumberToObject(e, "max_steps", o->ref_max_steps);
            cJSON_AddNumberToObject(e, "off_by_one_step", (double)o->ref_off_by_one);
            cJSON_AddBoolToObject(e, "within_one_step", o->ref_max_steps <= 1 + 1e-6);
        } else {
            cJSON_AddNullToObject(e, "step");
        }
        cJSON_AddItemToArray(rf, e);
    }
}

int tether_cli_ab_int8_keep(const ab_args *a, const char *out_dir) {
    const ab_int8 *r = a->int8;
    if (!r->quantized || !out_dir) {
        return 0;
    }
    char p[1200];
    snprintf(p, sizeof p, "%s/model.int8.onnx", out_dir);
    if (tether_file_write(p, r->bytes, r->nbytes)) {
        return fail(1, "%s", tether_last_error());
    }
    return 0;
}

#endif /* TETHER_HAVE_COMPILER */
