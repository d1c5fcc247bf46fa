/*
 * What `tether ab` prints and writes once the sides are measured (ab.h): the side-by-side table
 * (columns as wide as their widest cell) with the ratio column, the verdict lines (Hodges-Lehmann
 * ratio, 95% interval, Mann-Whitney p, the 1% practical-significance threshold), the OpenCL
 * sides' table (kernel-time latency, wall-clock latency on the device, launch overhead), --json
 * and --svg (svg.c). With --int8 the two sides are the float32 and the int8
 * model (ratio int8/float32, a code + weights row, "sides" instead of "abis" in the JSON; the
 * int8-specific figures are ab_int8.c's).
 *
 * What must stay true: the text and the JSON say the same figures (docs/cli.md, "How ab
 * measures"); a figure a side does not have (a stack for OpenCL kernels, an unbounded static
 * stack) is "-" in the table and null in the JSON, never 0; --json goes through tether/file.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ab.h"
#include "tether/crt.h"

#define fail tether_cli_fail

/* ---- the table: columns as wide as their widest cell ---- */

#define TABLE_ROWS 24
typedef struct table {
    char cell[TABLE_ROWS][4][96];
    int n;
} table;

static void row(table *t, const char *label, const char *a, const char *b, const char *ratio) {
    if (t->n >= TABLE_ROWS) {
        return;
    }
    const char *c[4] = {label, a, b, ratio};
    for (int k = 0; k < 4; k++) {
        snprintf(t->cell[t->n][k], sizeof t->cell[t->n][k], "%s", c[k]);
    }
    t->n++;
}

/* Display width of UTF-8 text (the table has no wide characters). */
static int text_width(const char *s) {
    int w = 0;
    for (; *s; s++) {
        w += ((unsigned char)*s & 0xC0) != 0x80;
    }
    return w;
}

static void table_print(const table *t) {
    int w[4] = {0, 0, 0, 0};
    for (int r = 0; r < t->n; r++) {
        for (int k = 0; k < 4; k++) {
            int x = text_width(t->cell[r][k]);
            w[k] = x > w[k] ? x : w[k];
        }
    }
    for (int r = 0; r < t->n; r++) {
        char line[512];
        int o = snprintf(line, sizeof line, "%s%*s", t->cell[r][0],
                         w[0] - text_width(t->cell[r][0]), "");
        for (int k = 1; k < 4 && o < (int)sizeof line; k++) {
            o += snprintf(line + o, sizeof line - (size_t)o, "   %*s%s",
                          w[k] - text_width(t->cell[r][k]), "", t->cell[r][k]);
        }
        while (o > 0 && line[o - 1] == ' ') {
            line[--o] = 0;
        }
        puts(line);
    }
}

static void ratio_str(char *buf, size_t n, double num, double den) {
    if (den > 0 && num >= 0) {
        snprintf(buf, n, "%.2fx", num / den);
    } else {
        snprintf(buf, n, "-");
    }
}

static void ci_str(char *buf, size_t n, const tether_ratio *r) {
    if (r->have_ci) {
        snprintf(buf, n, "%.3fx..%.3fx", r->ci_low, r->ci_high);
    } else {
        snprintf(buf, n, "-");
    }
}

/* The significance line of side b against side a (the unpacked ABI). */
static void print_verdict(const char *what, const char *bname, const tether_ratio *r) {
    char ci[64];
    ci_str(ci, sizeof ci, r);
    const char *v = r->verdict == TETHER_VERDICT_FASTER   ? "significantly faster"
                    : r->verdict == TETHER_VERDICT_SLOWER ? "significantly slower"
                    : r->verdict == TETHER_VERDICT_TOO_FEW
                        ? "too few repeats to tell (give --repeat 4 or more)"
                    : r->verdict == TETHER_VERDICT_NOT_MEASURABLE ? "not measurable (zero timer)"
                    : r->verdict == TETHER_VERDICT_EQUAL
                        ? "equal within 1% (significant, but under the 1% threshold)"
                        : "no significant difference";
    if (r->verdict == TETHER_VERDICT_NOT_MEASURABLE) {
        printf("%s: %s\n", what, v);
        return;
    }
    if (r->verdict == TETHER_VERDICT_FASTER || r->verdict == TETHER_VERDICT_SLOWER) {
        printf("%s: %.3fx (95%% CI %s, Mann-Whitney p = %.2g): the %s is %s\n", what, r->estimate,
               ci, r->p_value, bname, v);
    } else {
        printf("%s: %.3fx (95%% CI %s, Mann-Whitney p = %.2g): %s\n", what, r->estimate, ci,
               r->p_value, v);
    }
}

static void latency_rows(table *t, const ab_side *a, const ab_side *b, const char *ratio) {
    char x[96], y[96];
    snprintf(x, sizeof x, "%.2f", a->spread.median * 1e6);
    snprintf(y, sizeof y, "%.2f", b->spread.median * 1e6);
    row(t, "latency median (us)", x, y, ratio);
    snprintf(x, sizeof x, "%.2f..%.2f", a->spread.q1 * 1e6, a->spread.q3 * 1e6);
    snprintf(y, sizeof y, "%.2f..%.2f", b->spread.q1 * 1e6, b->spread.q3 * 1e6);
    row(t, "  IQR (quartiles, us)", x, y, "");
    snprintf(x, sizeof x, "%.2f..%.2f", a->spread.min * 1e6, a->spread.max * 1e6);
    snprintf(y, sizeof y, "%.2f..%.2f", b->spread.min * 1e6, b->spread.max * 1e6);
    row(t, "  min..max over repeats", x, y, "");
    snprintf(x, sizeof x, "%u", a->number);
    snprintf(y, sizeof y, "%u", b->number);
    row(t, "  calls per repeat", x, y, "");
}

/* A figure of an OpenCL side that the device may not report: "-" then. */
static void wall_cell(char *buf, size_t n, const ab_side *s, const tether_spread *v) {
    if (s->has_wall) {
        snprintf(buf, n, "%.2f", v->median * 1e6);
    } else {
        snprintf(buf, n, "-");
    }
}

/* The OpenCL sides' wall clock on the device (unprofiled runs: first enqueue to clFinish) and
 * launch overhead (wall - kernel sum), medians over the repeats. */
static void wall_rows(table *t, const ab_side *a, const ab_side *b) {
    char x[96], y[96];
    wall_cell(x, sizeof x, a, &a->wall_spread);
    wall_cell(y, sizeof y, b, &b->wall_spread);
    row(t, "wall-clock median (us)", x, y, "");
    wall_cell(x, sizeof x, a, &a->overhead_spread);
    wall_cell(y, sizeof y, b, &b->overhead_spread);
    row(t, "  launch overhead (us)", x, y, "");
}

double tether_cli_ab_size(const ab_side *s) {
    const tether_device_compile_options *o = &s->dco;
    int blob = !o->compile.codegen.link_params || s->comp.params_blob_auto;
    return (double)s->comp.build.sizes.text + (double)s->comp.build.sizes.data +
           (blob ? (double)s->comp.params_bytes : 0);
}

void tether_cli_ab_print_table(const ab_args *a, const tether_ir_graph *g, ab_side *s,
                               int interleaved) {
    char x[96], y[96], r[96];
    table t;
    t.n = 0;
    int q8 = a->int8->on;
    const char *rname = q8 ? "int8/float32" : "packed/unpacked";
    if (q8) {
        printf("\nA/B of %s (float32, %d operators, %d after passes) and %s (int8, %d operators, "
               "%d after passes), %s ABI, for %s on %s\n",
               a->model, g->nnodes, s[0].comp.nnodes_out,
               a->int8->quantized ? "its quantization" : a->int8->model, s[1].g->nnodes,
               s[1].comp.nnodes_out, tether_abi_name(s[0].abi), a->target,
               tether_cli_device_url(a->dev.url));
    } else {
        printf("\nA/B of %s (%d operators, %d after passes) for %s on %s\n", a->model, g->nnodes,
               s[0].comp.nnodes_out, a->target, tether_cli_device_url(a->dev.url));
    }
    row(&t, "", s[0].label, s[1].label, rname);
    row(&t, "outputs equal the interpreter", s[0].equal ? "yes" : "NO", s[1].equal ? "yes" : "NO",
        "");
    snprintf(x, sizeof x, "%.3g", s[0].max_abs);
    snprintf(y, sizeof y, "%.3g", s[1].max_abs);
    row(&t, "  max |difference|", x, y, "");
    const tether_elf_sizes *z0 = &s[0].comp.build.sizes, *z1 = &s[1].comp.build.sizes;
    snprintf(x, sizeof x, "%llu/%llu/%llu", (unsigned long long)z0->text,
             (unsigned long long)z0->data, (unsigned long long)z0->bss);
    snprintf(y, sizeof y, "%llu/%llu/%llu", (unsigned long long)z1->text,
             (unsigned long long)z1->data, (unsigned long long)z1->bss);
    ratio_str(r, sizeof r, (double)z1->text, (double)z0->text);
    row(&t, "text/data/bss (bytes)", x, y, r);
    snprintf(x, sizeof x, "%llu", (unsigned long long)z0->code);
    snprintf(y, sizeof y, "%llu", (unsigned long long)z1->code);
    ratio_str(r, sizeof r, (double)z1->code, (double)z0->code);
    row(&t, "  of text: instructions", x, y, r);
    snprintf(x, sizeof x, "%zu", s[0].comp.params_bytes);
    snprintf(y, sizeof y, "%zu", s[1].comp.params_bytes);
    ratio_str(r, sizeof r, (double)s[1].comp.params_bytes, (double)s[0].comp.params_bytes);
    row(&t, "params (bytes)", x, y, q8 ? r : "");
    if (q8) {
        double w0 = tether_cli_ab_size(&s[0]), w1 = tether_cli_ab_size(&s[1]);
        snprintf(x, sizeof x, "%.0f", w0);
        snprintf(y, sizeof y, "%.0f", w1);
        ratio_str(r, sizeof r, w1, w0);
        row(&t, "code + weights (bytes)", x, y, r);
    }
    snprintf(x, sizeof x, "%lld", (long long)s[0].comp.workspace_size);
    snprintf(y, sizeof y, "%lld", (long long)s[1].comp.workspace_size);
    ratio_str(r, sizeof r, (double)s[1].comp.workspace_size, (double)s[0].comp.workspace_size);
    row(&t, "workspace (bytes)", x, y, q8 ? r : "");
    const tether_stack_report *k0 = &s[0].comp.build.stack, *k1 = &s[1].comp.build.stack;
    snprintf(x, sizeof x, k0->bounded ? "%lld" : "unbounded", (long long)k0->bytes);
    snprintf(y, sizeof y, k1->bounded ? "%lld" : "unbounded", (long long)k1->bytes);
    ratio_str(r, sizeof r, k0->bounded && k1->bounded ? (double)k1->bytes : -1, (double)k0->bytes);
    row(&t, "static stack (bytes)", x, y, r);
    snprintf(x, sizeof x, "%llu", (unsigned long long)s[0].run.call.stack_bytes);
    snprintf(y, sizeof y, "%llu", (unsigned long long)s[1].run.call.stack_bytes);
    ratio_str(r, sizeof r, (double)s[1].run.call.stack_bytes, (double)s[0].run.call.stack_bytes);
    row(&t, "measured stack HWM (bytes)", x, y, r);
    const tether_ratio *q = &s[1].vs_unpacked;
    if (q->verdict == TETHER_VERDICT_NOT_MEASURABLE) {
        snprintf(r, sizeof r, "-");
    } else {
        snprintf(r, sizeof r, "%.2fx", q->estimate);
    }
    latency_rows(&t, &s[0], &s[1], r);
    ci_str(r, sizeof r, q);
    row(&t, "  95% CI of the ratio", "", "", r);
    table_print(&t);
    printf("(%u repeats per %s, %s, each at least %u ms; ratio = Hodges-Lehmann estimate over "
           "the repeats; HWM is measured on the device's painted call stack%s)\n",
           a->repeat, q8 ? "side" : "ABI",
           interleaved ? "interleaved A B, B A, ..."
           : q8        ? "one side after the other (the device holds one module at a time)"
                       : "one ABI after the other (the device holds one module at a time)",
           a->min_repeat_ms, q8 ? "; code + weights = text + data + a params blob's bytes" : "");
    if (q8) {
        print_verdict("int8/float32 latency", "int8 model", q);
    } else {
        print_verdict("packed/unpacked latency", "packed ABI", q);
    }
}

/* The OpenCL sides (s[2] buffers, s[3] texture weights) against the unpacked ABI. */
void tether_cli_ab_print_outputs(const tether_ir_graph *g, const ab_side *s, int nsides) {
    printf("\nOutputs against the reference interpreter (integer and bool exactly)\n");
    for (int i = 0; i < g->noutputs; i++) {
        const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
        char dt[TETHER_DTYPE_NAME_MAX] = "?";
        tether_dtype_name(t->dtype, dt, sizeof dt);
        printf("  '%s' (%s)\n", t->name, dt);
        for (int k = 0; k < nsides; k++) {
            char line[400] = "not compared";
            const tether_compare_result *c = &s[k].cmp[i];
            if (i < s[k].ncmp && s[k].step[i] > 0 && c->equal && c->mismatches) {
                /* an int8 integer output: one step is 1 */
                snprintf(line, sizeof line,
                         "within one output step: %zu of %zu elements one step off, first [%zu]: "
                         "got %lld, expected %lld",
                         c->mismatches, c->count, c->first, (long long)c->got_int,
                         (long long)c->want_int);
            } else if (i < s[k].ncmp) {
                tether_compare_describe(c, line, sizeof line);
            }
            printf("    %-16s %s\n", s[k].label, line);
        }
    }
}

void tether_cli_ab_print_fp16(const tether_ir_graph *g, const ab_side *s) {
    const ab_side *a = &s[2], *h = &s[4];
    printf("\nOpenCL fp16 against fp32 (buffer weights; --precision fp16: half storage, float "
           "arithmetic)\n");
    for (int i = 0; i < g->noutputs && i < a->run.nout && i < h->run.nout; i++) {
        const tether_npy *x = &a->run.out[i], *y = &h->run.out[i];
        if (x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->nbytes != y->nbytes) {
            continue;
        }
        const float *p = x->data, *q = y->data;
        size_t n = x->nbytes / 4;
        size_t row = x->ndim > 0 && x->shape[x->ndim - 1] > 0 ? (size_t)x->shape[x->ndim - 1] : 1;
        double mabs = 0, mrel = 0, peak = 0;
        for (size_t k = 0; k < n; k++) {
            peak = fabs(p[k]) > peak ? fabs(p[k]) : peak;
        }
        for (size_t k = 0; k < n; k++) {
            double d = fabs((double)p[k] - q[k]);
            mabs = d > mabs ? d : mabs;
            /* relative to the element, floored at 1e-3 of the output's peak */
            double r = d / fmax(fabs(p[k]), 1e-3 * peak + 1e-30);
            mrel = r > mrel ? r : mrel;
        }
        size_t rows = n / row, agree = 0;
        for (size_t r = 0; r < rows; r++) {
            size_t ap = 0, aq = 0;
            for (size_t k = 1; k < row; k++) {
                ap = p[r * row + k] > p[r * row + ap] ? k : ap;
                aq = q[r * row + k] > q[r * row + aq] ? k : aq;
            }
            agree += ap == aq;
        }
        printf("  '%s': max |fp16 - fp32| %.3g, max relative %.3g, top-1 agreement %zu/%zu rows "
               "(argmax over the last axis)\n",
               g->tensors[g->outputs[i]].name, mabs, mrel, agree, rows);
    }
    if (h->spread.median > 0) {
        printf("  kernel time median: fp32 %.2f us, fp16 %.2f us, fp32/fp16 %.2fx\n",
               a->spread.median * 1e6, h->spread.median * 1e6, a->spread.median / h->spread.median);
    }
    if (a->has_wall && h->has_wall && h->wall_spread.median > 0) {
        printf("  wall-clock median: fp32 %.2f us, fp16 %.2f us, fp32/fp16 %.2fx; launch overhead "
               "fp32 %.2f us, fp16 %.2f us\n",
               a->wall_spread.median * 1e6, h->wall_spread.median * 1e6,
               a->wall_spread.median / h->wall_spread.median, a->overhead_spread.median * 1e6,
               h->overhead_spread.median * 1e6);
    }
    printf("  params %zu -> %zu bytes, workspace %lld -> %lld bytes\n", a->comp.params_bytes,
           h->comp.params_bytes, (long long)a->comp.workspace_size,
           (long long)h->comp.workspace_size);
}

void tether_cli_ab_print_opencl(const ab_side *s) {
    char x[96], y[96], r[128];
    table t;
    t.n = 0;
    printf("\nOpenCL backend on the same device (time = sum of the kernels' profiled times)\n");
    row(&t, "", "buffer weights", "texture weights", "vs unpacked ABI");
    row(&t, "outputs equal the interpreter", s[2].equal ? "yes" : "NO", s[3].equal ? "yes" : "NO",
        "");
    snprintf(x, sizeof x, "%.3g", s[2].max_abs);
    snprintf(y, sizeof y, "%.3g", s[3].max_abs);
    row(&t, "  max |difference|", x, y, "");
    snprintf(x, sizeof x, "%d", s[2].kernels);
    snprintf(y, sizeof y, "%d", s[3].kernels);
    row(&t, "kernels", x, y, "");
    snprintf(x, sizeof x, "%zu", s[2].comp.params_bytes);
    snprintf(y, sizeof y, "%zu", s[3].comp.params_bytes);
    row(&t, "params (bytes)", x, y, "");
    snprintf(x, sizeof x, "%lld", (long long)s[2].comp.workspace_size);
    snprintf(y, sizeof y, "%lld", (long long)s[3].comp.workspace_size);
    row(&t, "workspace (bytes)", x, y, "");
    snprintf(r, sizeof r, "%.2fx / %.2fx", s[2].vs_unpacked.estimate, s[3].vs_unpacked.estimate);
    latency_rows(&t, &s[2], &s[3], r);
    char c2[40], c3[40];
    ci_str(c2, sizeof c2, &s[2].vs_unpacked);
    ci_str(c3, sizeof c3, &s[3].vs_unpacked);
    snprintf(r, sizeof r, "%s / %s", c2, c3);
    row(&t, "  95% CI of the ratio", "", "", r);
    wall_rows(&t, &s[2], &s[3]);
    table_print(&t);
    print_verdict("OpenCL buffer weights/unpacked latency", "OpenCL build with buffer weights",
                  &s[2].vs_unpacked);
    print_verdict("OpenCL texture weights/unpacked latency", "OpenCL build with texture weights",
                  &s[3].vs_unpacked);
}

static cJSON *ratio_json(const tether_ratio *r, const char *num, const char *den) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "numerator", num);
    cJSON_AddStringToObject(o, "denominator", den);
    cJSON_AddStringToObject(o, "method", "hodges-lehmann, mann-whitney");
    if (r->verdict == TETHER_VERDICT_NOT_MEASURABLE) {
        cJSON_AddNullToObject(o, "estimate");
    } else {
        cJSON_AddNumberToObject(o, "estimate", r->estimate);
    }
    if (r->have_ci) {
        cJSON_AddNumberToObject(o, "ci95_low", r->ci_low);
        cJSON_AddNumberToObject(o, "ci95_high", r->ci_high);
    } else {
        cJSON_AddNullToObject(o, "ci95_low");
        cJSON_AddNullToObject(o, "ci95_high");
    }
    cJSON_AddNumberToObject(o, "p_value", r->p_value);
    cJSON_AddStringToObject(o, "verdict", tether_verdict_name(r->verdict));
    return o;
}

/* The timing fields every side shares. */
static void latency_json(cJSON *o, const ab_side *s, uint32_t repeat) {
    cJSON_AddNumberToObject(o, "first_call_us", (double)s->run.call.elapsed_ns / 1e3);
    cJSON_AddNumberToObject(o, "latency_median_us", s->spread.median * 1e6);
    cJSON_AddNumberToObject(o, "latency_q1_us", s->spread.q1 * 1e6);
    cJSON_AddNumberToObject(o, "latency_q3_us", s->spread.q3 * 1e6);
    cJSON_AddNumberToObject(o, "latency_iqr_us", (s->spread.q3 - s->spread.q1) * 1e6);
    cJSON_AddNumberToObject(o, "latency_mean_us", s->spread.mean * 1e6);
    cJSON_AddNumberToObject(o, "latency_min_us", s->spread.min * 1e6);
    cJSON_AddNumberToObject(o, "latency_max_us", s->spread.max * 1e6);
    cJSON *r = cJSON_AddArrayToObject(o, "repeats_us");
    for (uint32_t i = 0; i < repeat; i++) {
        cJSON_AddItemToArray(r, cJSON_CreateNumber(s->t[i] * 1e6));
    }
    cJSON_AddNumberToObject(o, "number", s->number);
    cJSON_AddNumberToObject(o, "repeat", repeat);
    cJSON_AddBoolToObject(o, "zero_timer", s->zero_timer);
}

/* Each output's comparison with the interpreter: [{"index", "dtype", "equal", "exact", "rtol",
 * "atol", "mismatches", "max_abs_difference"}]. */
static void outputs_json(cJSON *o, const ab_side *s) {
    cJSON *arr = cJSON_AddArrayToObject(o, "outputs");
    for (int i = 0; i < s->ncmp; i++) {
        const tether_compare_result *r = &s->cmp[i];
        char dt[TETHER_DTYPE_NAME_MAX] = "?";
        tether_dtype_name(r->dtype, dt, sizeof dt);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", i);
        cJSON_AddStringToObject(e, "dtype", dt);
        cJSON_AddBoolToObject(e, "equal", r->equal);
        cJSON_AddBoolToObject(e, "exact", r->exact);
        cJSON_AddNumberToObject(e, "rtol", r->rtol);
        cJSON_AddNumberToObject(e, "atol", r->atol);
        cJSON_AddNumberToObject(e, "mismatches", (double)r->mismatches);
        cJSON_AddNumberToObject(e, "max_abs_difference", r->max_abs);
        cJSON_AddItemToArray(arr, e);
    }
}

static cJSON *opencl_json(const ab_side *s, const char *weights, uint32_t repeat) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "weights", weights);
    cJSON_AddBoolToObject(o, "outputs_equal", s->equal);
    cJSON_AddNumberToObject(o, "max_abs_difference", s->max_abs);
    outputs_json(o, s);
    cJSON_AddNumberToObject(o, "kernels", s->kernels);
    cJSON_AddNumberToObject(o, "params_bytes", (double)s->comp.params_bytes);
    cJSON_AddNumberToObject(o, "workspace_bytes", (double)s->comp.workspace_size);
    latency_json(o, s, repeat);
    /* the wall clock on the device and the launch overhead (null: not reported) */
    if (s->has_wall) {
        cJSON_AddNumberToObject(o, "wall_median_us", s->wall_spread.median * 1e6);
        cJSON_AddNumberToObject(o, "launch_overhead_median_us", s->overhead_spread.median * 1e6);
        cJSON *w = cJSON_AddArrayToObject(o, "wall_repeats_us");
        for (uint32_t i = 0; i < repeat; i++) {
            cJSON_AddItemToArray(w, cJSON_CreateNumber(s->wall[i] * 1e6));
        }
    } else {
        cJSON_AddNullToObject(o, "wall_median_us");
        cJSON_AddNullToObject(o, "launch_overhead_median_us");
        cJSON_AddNullToObject(o, "wall_repeats_us");
    }
    cJSON_AddItemToObject(o, "latency_ratio", ratio_json(&s->vs_unpacked, weights, "unpacked"));
    return o;
}

static cJSON *side_json(const ab_side *s, uint32_t repeat, int int8) {
    cJSON *o = cJSON_CreateObject();
    if (int8) { /* --int8: which model */
        cJSON_AddStringToObject(o, "side", s->label);
        cJSON_AddStringToObject(o, "model", s->model);
    }
    cJSON_AddStringToObject(o, "abi", tether_abi_name(s->abi));
    cJSON_AddBoolToObject(o, "outputs_equal", s->equal);
    cJSON_AddNumberToObject(o, "max_abs_difference", s->max_abs);
    outputs_json(o, s);
    cJSON_AddNumberToObject(o, "text", (double)s->comp.build.sizes.text);
    cJSON_AddNumberToObject(o, "data", (double)s->comp.build.sizes.data);
    cJSON_AddNumberToObject(o, "bss", (double)s->comp.build.sizes.bss);
    cJSON_AddNumberToObject(o, "code", (double)s->comp.build.sizes.code);
    cJSON_AddNumberToObject(o, "params_bytes", (double)s->comp.params_bytes);
    cJSON_AddNumberToObject(o, "workspace_bytes", (double)s->comp.workspace_size);
    if (int8) {
        cJSON_AddNumberToObject(o, "code_plus_weights_bytes", tether_cli_ab_size(s));
    }
    if (s->comp.build.stack.bounded) {
        cJSON_AddNumberToObject(o, "static_stack", (double)s->comp.build.stack.bytes);
    } else {
        cJSON_AddNullToObject(o, "static_stack");
    }
    cJSON_AddNumberToObject(o, "stack_hwm", (double)s->run.call.stack_bytes);
    latency_json(o, s, repeat);
    return o;
}

int tether_cli_ab_write_json(const ab_args *a, const tether_device_info *d, const ab_side *s,
                             int interleaved) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "command", "ab");
    cJSON_AddItemToObject(root, "device", tether_cli_device_json(a->dev.url, d)); /* as run's */
    cJSON_AddStringToObject(root, "model", a->model);
    cJSON_AddStringToObject(root, "target", a->target);
    if (a->rtol >= 0) { /* else null: each output's type's default (its "outputs" entry) */
        cJSON_AddNumberToObject(root, "rtol", a->rtol);
    } else {
        cJSON_AddNullToObject(root, "rtol");
    }
    if (a->atol >= 0) {
        cJSON_AddNumberToObject(root, "atol", a->atol);
    } else {
        cJSON_AddNullToObject(root, "atol");
    }
    cJSON *m = cJSON_AddObjectToObject(root, "measurement");
    cJSON_AddBoolToObject(m, "interleaved", interleaved);
    cJSON_AddStringToObject(m, "order", interleaved ? "A B, B A, ..." : "one after the other");
    cJSON_AddNumberToObject(m, "repeat", a->repeat);
    cJSON_AddNumberToObject(m, "min_repeat_ms", a->min_repeat_ms);
    cJSON_AddNumberToObject(m, "initial_number", a->number);
    int q8 = a->int8->on;
    cJSON *arr = cJSON_AddArrayToObject(root, q8 ? "sides" : "abis");
    cJSON_AddItemToArray(arr, side_json(&s[0], a->repeat, q8));
    cJSON_AddItemToArray(arr, side_json(&s[1], a->repeat, q8));
    cJSON_AddItemToObject(root, "latency_ratio",
                          q8 ? ratio_json(&s[1].vs_unpacked, "int8", "float32")
                             : ratio_json(&s[1].vs_unpacked, "packed", "unpacked"));
    if (q8) {
        tether_cli_ab_int8_json(root, a);
    }
    if (a->opencl) {
        cJSON *ocl = cJSON_AddArrayToObject(root, "opencl");
        cJSON_AddItemToArray(ocl, opencl_json(&s[2], "buffer", a->repeat));
        cJSON_AddItemToArray(ocl, opencl_json(&s[3], "texture", a->repeat));
    }
    return tether_cli_write_json(a->json, root);
}

/* --svg: code size, stack and latency spread of every side (svg.c). */
int tether_cli_ab_write_svg(const ab_args *a, const tether_ir_graph *g, const ab_side *s,
                            int nsides) {
    static const char *const opencl_labels[] = {"OpenCL, buffer weights", "OpenCL, texture weights",
                                                "OpenCL, buffer weights, fp16"};
    tether_cli_ab_row rows[5];
    char notes[5][128];
    nsides = nsides > 5 ? 5 : nsides;
    for (int k = 0; k < nsides; k++) {
        const ab_side *x = &s[k];
        tether_cli_ab_row *r = &rows[k];
        int ocl = k >= 2;
        r->label = ocl ? opencl_labels[k - 2] : x->label;
        r->text_bytes = ocl ? -1 : (double)x->comp.build.sizes.text;
        r->code_bytes = ocl ? -1 : (double)x->comp.build.sizes.code;
        r->static_stack =
            ocl || !x->comp.build.stack.bounded ? -1 : (double)x->comp.build.stack.bytes;
        r->stack_hwm = ocl ? -1 : (double)x->run.call.stack_bytes;
        r->seconds = x->t;
        r->nrepeats = (int)a->repeat;
        if (k == 0) {
            snprintf(notes[k], sizeof notes[k], "median %.4g us (baseline)",
                     x->spread.median * 1e6);
        } else if (x->vs_unpacked.verdict == TETHER_VERDICT_NOT_MEASURABLE) {
            snprintf(notes[k], sizeof notes[k], "median %.4g us", x->spread.median * 1e6);
        } else {
            snprintf(notes[k], sizeof notes[k], "median %.4g us, %.2fx%s", x->spread.median * 1e6,
                     x->vs_unpacked.estimate,
                     x->vs_unpacked.verdict == TETHER_VERDICT_FASTER   ? " (faster)"
                     : x->vs_unpacked.verdict == TETHER_VERDICT_SLOWER ? " (slower)"
                     : x->vs_unpacked.verdict == TETHER_VERDICT_EQUAL  ? " (equal within 1%)"
                                                                       : "");
        }
        if (ocl && x->has_wall) { /* the wall clock on the device beside the kernel time */
            size_t used = strlen(notes[k]);
            snprintf(notes[k] + used, sizeof notes[k] - used, "; wall %.4g us",
                     x->wall_spread.median * 1e6);
        }
        r->note = notes[k];
    }
    char title[300], sub[600];
    if (a->int8->on) {
        snprintf(title, sizeof title, "tether ab --int8: %s", a->model);
    } else {
        snprintf(title, sizeof title, "tether ab: %s", a->model);
    }
    char cpu_flags[256]; /* -march=x86-64-v3 -mavxvnni for "x86-64-v3+avxvnni" */
    if (tether_cpu_flags(a->target, a->cpu, cpu_flags, sizeof cpu_flags)) {
        cpu_flags[0] = 0;
    }
    snprintf(sub, sizeof sub,
             "%d operators (%d after passes), target %s%s%s, on %s; %u repeats per side, ratios "
             "against the %s",
             g->nnodes, s[0].comp.nnodes_out, a->target, cpu_flags[0] ? " " : "", cpu_flags,
             tether_cli_device_url(a->dev.url), a->repeat,
             a->int8->on ? "float32 model" : "unpacked ABI");
    return tether_cli_svg_ab(a->svg, title, sub, rows, nsides);
}
