/*
 * `tether quantize MODEL.onnx --calibrate a.npz [b.npz ...] -o OUT.onnx [--method M]
 * [--keep-float NODE,...] [--per-tensor] [--activations int8|uint8] [--json FILE]`: static
 * post-training quantization into a QDQ ONNX model (tether/onnx_quantize.h,
 * docs/quantization.md). This file parses, reads the calibration archives, prints the
 * per-output error of the quantized model against the float one and writes the model.
 * tether_cli_quantize (cli_onnx.h) is the reading and quantizing alone, shared with
 * `tether ab MODEL --int8 calib.npz` (ab_int8.c).
 *
 * What must stay true: every path is checked before the work (-o and --json are bad usage when
 * they cannot be written); the model file is written whole through tether_file_write, and only
 * after everything succeeded: a failure leaves no output file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_onnx.h"
#include "tether/file.h"
#include "tether/npy.h"
#include "tether/onnx_quantize.h"

#define fail tether_cli_fail

static const char quantize_usage[] =
    "usage: tether quantize MODEL.onnx --calibrate FILE.npz [FILE.npz ...] -o OUT.onnx\n"
    "                       [--method minmax|percentile[=P]|entropy] [--keep-float NODE,...]\n"
    "                       [--per-tensor] [--activations int8|uint8] [--json FILE]\n"
    "  Static post-training quantization: writes OUT.onnx, a standard QDQ ONNX model\n"
    "  (QuantizeLinear/DequantizeLinear pairs, as ONNX Runtime's static quantizer writes them)\n"
    "  that tether and any ONNX runtime load. Weights: symmetric int8 per output channel\n"
    "  (--per-tensor: one scale per tensor), biases int32. Activations: int8 (or uint8) with\n"
    "  the scale and zero point of the range the float model shows on the calibration inputs,\n"
    "  run on the reference interpreter: --method minmax (default), percentile[=P] (the central\n"
    "  P % of the values, default 99.99) or entropy (TensorRT's KL-divergence threshold).\n"
    "  Each --calibrate .npz holds one array per model input, named after it (one sample, or a\n"
    "  stack of samples along a first axis). --keep-float leaves the named nodes (a node's name\n"
    "  or its first output's) in float. Prints each output's error against the float model on\n"
    "  the calibration set (max and mean |difference|, top-1 agreement); --json writes it.\n";

typedef struct qfile {
    const char *path;
    int n;
    char names[TETHER_NPZ_MAX_ARRAYS][TETHER_NPZ_NAME_MAX];
    const char *name_ptrs[TETHER_NPZ_MAX_ARRAYS];
    tether_npy arrays[TETHER_NPZ_MAX_ARRAYS];
    tether_model_value values[TETHER_NPZ_MAX_ARRAYS];
} qfile;

static int read_calibration(qfile *f) {
    if (tether_npz_list(f->path, f->names, TETHER_NPZ_MAX_ARRAYS, &f->n)) {
        return fail(1, "--calibrate: %s", tether_last_error());
    }
    if (!f->n) {
        return fail(1,
                    "--calibrate: %s holds no arrays (it needs one per model input, named "
                    "after it)",
                    f->path);
    }
    for (int i = 0; i < f->n; i++) {
        if (tether_npz_read_member(f->path, f->names[i], &f->arrays[i])) {
            return fail(1, "--calibrate: %s", tether_last_error());
        }
        tether_model_value *v = &f->values[i];
        v->dtype = f->arrays[i].dtype;
        v->ndim = f->arrays[i].ndim;
        memcpy(v->shape, f->arrays[i].shape, sizeof(int64_t) * (size_t)v->ndim);
        v->data = f->arrays[i].data;
        v->nbytes = f->arrays[i].nbytes;
        f->name_ptrs[i] = f->names[i];
    }
    return 0;
}

static void free_calibration(qfile *f) {
    for (int i = 0; i < f->n; i++) {
        tether_npy_free(&f->arrays[i]);
    }
}

static const char *method_name(tether_qcalib m) {
    return m == TETHER_QCALIB_PERCENTILE ? "percentile"
           : m == TETHER_QCALIB_ENTROPY  ? "entropy"
                                         : "minmax";
}

static int parse_method(const char *v, tether_onnx_quantize_options *o) {
    if (!v) {
        return fail(2, "--method needs minmax, percentile[=P] or entropy");
    }
    if (!strcmp(v, "minmax")) {
        o->method = TETHER_QCALIB_MINMAX;
    } else if (!strcmp(v, "entropy")) {
        o->method = TETHER_QCALIB_ENTROPY;
    } else if (!strncmp(v, "percentile", 10) && (!v[10] || v[10] == '=')) {
        o->method = TETHER_QCALIB_PERCENTILE;
        o->percentile = 99.99;
        if (v[10] == '=') {
            char *end;
            double p = strtod(v + 11, &end);
            if (end == v + 11 || *end || !(p > 50 && p <= 100)) {
                return fail(2, "--method percentile=P: P must be a number in (50, 100], not '%s'",
                            v + 11);
            }
            o->percentile = p;
        }
    } else {
        return fail(2, "--method: '%s' is not minmax, percentile[=P] or entropy", v);
    }
    return 0;
}

static void print_result(const char *model, const char *out, const tether_onnx_quantize_options *o,
                         const tether_onnx_quantize_result *r) {
    printf("quantized %s -> %s (%zu bytes): %d nodes quantized, %d float, %d integer operators "
           "in tether (qconv/qmatmul)\n",
           model, out, r->model_len, r->quantized_nodes, r->float_nodes, r->integer_nodes);
    if (r->float_node_names) {
        printf("float nodes: %s\n", r->float_node_names);
    }
    printf("calibration: %d samples, method %s", r->nsamples, method_name(o->method));
    if (o->method == TETHER_QCALIB_PERCENTILE) {
        printf(" %g", o->percentile);
    }
    printf(", %s activations, int8 weights per %s\n", o->uint8_activations ? "uint8" : "int8",
           o->per_tensor ? "tensor" : "channel");
    printf("weights quantized: %zu bytes float32 -> %zu bytes (int8 and int32 biases, with "
           "scales)\n",
           r->float_weight_bytes, r->quant_weight_bytes);
    printf("%-24s %10s %12s %12s %12s  %s\n", "output", "elements", "max |diff|", "mean |diff|",
           "float range", "top-1 agreement");
    for (int i = 0; i < r->noutputs; i++) {
        const tether_onnx_qoutput *q = &r->outputs[i];
        if (!q->compared) {
            printf("%-24s %10lld  (not float32: not compared)\n", q->name, (long long)q->elements);
            continue;
        }
        printf("%-24s %10lld %12.6g %12.6g %12.6g  ", q->name, (long long)q->elements, q->max_abs,
               q->mean_abs, q->float_range);
        if (q->rows) {
            printf("%lld/%lld (%.1f%%)\n", (long long)q->top1_agree, (long long)q->rows,
                   100.0 * (double)q->top1_agree / (double)q->rows);
        } else {
            printf("-\n");
        }
    }
}

static int write_json(const char *path, const char *model, const char *out,
                      const tether_onnx_quantize_options *o, const tether_onnx_quantize_result *r) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "command", "quantize");
    cJSON_AddStringToObject(j, "model", model);
    cJSON_AddStringToObject(j, "output", out);
    cJSON_AddNumberToObject(j, "output_bytes", (double)r->model_len);
    cJSON_AddStringToObject(j, "method", method_name(o->method));
    if (o->method == TETHER_QCALIB_PERCENTILE) {
        cJSON_AddNumberToObject(j, "percentile", o->percentile);
    } else {
        cJSON_AddNullToObject(j, "percentile");
    }
    cJSON_AddStringToObject(j, "activations", o->uint8_activations ? "uint8" : "int8");
    cJSON_AddStringToObject(j, "weights", o->per_tensor ? "per_tensor" : "per_channel");
    cJSON_AddNumberToObject(j, "samples", r->nsamples);
    cJSON_AddNumberToObject(j, "quantized_nodes", r->quantized_nodes);
    cJSON_AddNumberToObject(j, "float_nodes", r->float_nodes);
    cJSON_AddNumberToObject(j, "integer_nodes", r->integer_nodes);
    cJSON_AddNumberToObject(j, "float_weight_bytes", (double)r->float_weight_bytes);
    cJSON_AddNumberToObject(j, "quantized_weight_bytes", (double)r->quant_weight_bytes);
    cJSON *a = cJSON_AddArrayToObject(j, "outputs");
    for (int i = 0; i < r->noutputs; i++) {
        const tether_onnx_qoutput *q = &r->outputs[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", q->name);
        cJSON_AddNumberToObject(e, "elements", (double)q->elements);
        cJSON_AddBoolToObject(e, "compared", q->compared);
        if (q->compared) {
            cJSON_AddNumberToObject(e, "max_abs_difference", q->max_abs);
            cJSON_AddNumberToObject(e, "mean_abs_difference", q->mean_abs);
            cJSON_AddNumberToObject(e, "float_range", q->float_range);
        }
        if (q->compared && q->rows) {
            cJSON_AddNumberToObject(e, "top1_rows", (double)q->rows);
            cJSON_AddNumberToObject(e, "top1_agree", (double)q->top1_agree);
            cJSON_AddNumberToObject(e, "top1_agreement", (double)q->top1_agree / (double)q->rows);
        } else {
            cJSON_AddNullToObject(e, "top1_agreement");
        }
        cJSON_AddItemToArray(a, e);
    }
    return tether_cli_write_json(path, j);
}

int tether_cli_quantize(const char *model, int ncal, const char *const *cal_paths,
                        tether_onnx_quantize_options *o, tether_onnx_quantize_result *r) {
    memset(r, 0, sizeof *r);
    qfile *files = calloc((size_t)ncal, sizeof *files);
    tether_onnx_qsample *samples = calloc((size_t)ncal, sizeof *samples);
    int rc = files && samples ? 0 : fail(1, "out of memory");
    for (int k = 0; !rc && k < ncal; k++) {
        files[k].path = cal_paths[k];
        rc = read_calibration(&files[k]);
        samples[k].source = files[k].path;
        samples[k].n = files[k].n;
        samples[k].names = files[k].name_ptrs;
        samples[k].values = files[k].values;
    }
    o->samples = samples;
    o->nsamples = ncal;
    if (!rc && tether_onnx_quantize(model, o, r)) {
        rc = fail(1, "%s", tether_last_error());
    }
    o->samples = NULL; /* freed below */
    o->nsamples = 0;
    for (int k = 0; files && k < ncal; k++) {
        free_calibration(&files[k]);
    }
    free(files);
    free(samples);
    if (rc) {
        tether_onnx_quantize_free(r);
    }
    return rc;
}

int tether_cli_cmd_quantize(int argc, char **argv) {
    tether_onnx_quantize_options o;
    memset(&o, 0, sizeof o);
    const char *model = NULL, *out = NULL, *json = NULL;
    static const char *keep[256];
    static const char *cal_paths[256];
    static char keep_buf[8192];
    size_t keep_used = 0;
    int ncal = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(quantize_usage, stdout);
            return -1;
        } else if (!strcmp(a, "--calibrate")) {
            if (!v || v[0] == '-') {
                return fail(2, "--calibrate needs at least one .npz file");
            }
            while (i + 1 < argc && argv[i + 1][0] != '-') {
                if (ncal == 256) {
                    return fail(2, "--calibrate: more than 256 files");
                }
                cal_paths[ncal++] = argv[++i];
            }
        } else if (!strcmp(a, "-o")) {
            if (!v) {
                return fail(2, "-o needs a file");
            }
            out = argv[++i];
        } else if (!strcmp(a, "--json")) {
            if (!v) {
                return fail(2, "--json needs a file");
            }
            json = argv[++i];
        } else if (!strncmp(a, "--method", 8) && (!a[8] || a[8] == '=')) {
            const char *m = a[8] == '=' ? a + 9 : (i++, v);
            if (parse_method(m, &o)) {
                return 2;
            }
        } else if (!strcmp(a, "--keep-float")) {
            if (!v || !*v) {
                return fail(2, "--keep-float needs node names (NODE,...)");
            }
            i++;
            size_t l = strlen(v);
            if (keep_used + l + 1 > sizeof keep_buf) {
                return fail(2, "--keep-float: too many names");
            }
            char *s = memcpy(keep_buf + keep_used, v, l + 1);
            keep_used += l + 1;
            for (char *t = strtok(s, ","); t; t = strtok(NULL, ",")) {
                if (o.nkeep_float == 256) {
                    return fail(2, "--keep-float: more than 256 names");
                }
                keep[o.nkeep_float++] = t;
            }
        } else if (!strcmp(a, "--per-tensor")) {
            o.per_tensor = true;
        } else if (!strcmp(a, "--activations")) {
            if (!v || (strcmp(v, "int8") != 0 && strcmp(v, "uint8") != 0)) {
                return fail(2, "--activations needs int8 or uint8");
            }
            o.uint8_activations = !strcmp(argv[++i], "uint8");
        } else if (a[0] == '-') {
            return fail(2, "unknown option '%s' (see tether quantize --help)", a);
        } else if (model) {
            return fail(2, "one model only (%s and %s given)", model, a);
        } else {
            model = a;
        }
    }
    if (!model || !ncal || !out) {
        return fail(2, "needs MODEL.onnx, --calibrate FILE.npz and -o OUT.onnx (see tether "
                       "quantize --help)");
    }
    if (tether_file_out_check(out)) {
        return fail(2, "-o: %s", tether_last_error());
    }
    if (json && tether_file_out_check(json)) {
        return fail(2, "--json: %s", tether_last_error());
    }
    o.keep_float = keep;
    tether_onnx_quantize_result r;
    int rc = tether_cli_quantize(model, ncal, cal_paths, &o, &r);
    if (!rc) {
        print_result(model, out, &o, &r);
        if (tether_file_write(out, r.model, r.model_len)) {
            rc = fail(1, "%s", tether_last_error());
        } else {
            tether_cli_wrote(out);
        }
    }
    if (!rc && json) {
        rc = write_json(json, model, out, &o, &r);
    }
    tether_onnx_quantize_free(&r);
    return rc;
}
