/*
 * `tether quantize`: calibration and evaluation (quantize.h). The float model runs on the
 * reference interpreter over every calibration sample; each activation tensor to quantize is a
 * graph output of the calibration graph, so its values are seen whole. Ranges:
 *  - min/max: the smallest and largest finite value over every sample;
 *  - percentile p (ONNX Runtime's rule): a histogram of TQ_BINS bins over [min, max]; the range
 *    keeps the central p % of the values ((100 - p) / 2 % cut off each side);
 *  - entropy (TensorRT's rule): a histogram of |x| over [0, max |x|]; for every threshold of
 *    i >= 128 bins, the distribution clipped there (the outliers added to its last bin) is
 *    compared with its quantization to 128 levels by KL divergence; the threshold of least
 *    divergence clips both ends of [min, max].
 * Scale and zero point as ONNX Runtime computes them: the range widened to include 0, scale =
 * (hi - lo) / (qmax - qmin) in float32 (1 when the range is empty), zero point
 * round(qmin - lo / scale) clamped to the type.
 *
 * What must stay true: two passes over the samples only when a histogram is needed (its bins
 * are fixed by the first pass's min/max); non-finite values never enter a range.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantize.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

/* The sample's input pointers in g's input order (by name). */
static int inputs_for(const tether_ir_graph *g, const tq_set *set, int s, const void **ptrs) {
    for (int i = 0; i < g->ninputs; i++) {
        const char *nm = g->tensors[g->inputs[i]].name;
        int k = 0;
        while (k < set->nin && strcmp(set->shapes[k].name, nm) != 0) {
            k++;
        }
        if (k == set->nin) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "calibration: no values for model input '%s'", nm);
        }
        ptrs[i] = set->data[(size_t)s * (size_t)set->nin + (size_t)k];
    }
    return 0;
}

static void free_outputs(void **outs, int n) {
    for (int i = 0; i < n; i++) {
        free(outs[i]);
    }
    free(outs);
}

/* Runs g on sample s; *outs gets one malloc'd buffer per graph output. */
static int run_sample(const tether_ir_graph *g, const tq_set *set, int s, void ***outs) {
    const void *ins[64];
    if (g->ninputs > 64) {
        return tether_set_error(TETHER_ERR_LIMIT, "calibration: more than 64 model inputs");
    }
    int rc = inputs_for(g, set, s, ins);
    if (rc) {
        return rc;
    }
    void **o = calloc((size_t)g->noutputs + 1, sizeof *o);
    if (!o) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "calibration: out of memory");
    }
    for (int i = 0; i < g->noutputs; i++) {
        size_t nb = tether_ir_tensor_bytes(&g->tensors[g->outputs[i]]);
        o[i] = calloc(1, nb ? nb : 1);
        if (!o[i]) {
            free_outputs(o, g->noutputs);
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "calibration: out of memory");
        }
    }
    rc = tether_interp_run_typed(g, ins, o);
    if (rc) {
        free_outputs(o, g->noutputs);
        return rc;
    }
    *outs = o;
    return 0;
}

int tq_calibrate(const tether_ir_graph *gc, int first, int ncal, const tq_set *set,
                 tether_qcalib method, tq_range *r) {
    for (int k = 0; k < ncal; k++) {
        r[k].lo = INFINITY;
        r[k].hi = -INFINITY;
        r[k].seen = 0;
    }
    int passes = method == TETHER_QCALIB_MINMAX ? 1 : 2;
    for (int pass = 0; pass < passes; pass++) {
        if (pass == 1) {
            for (int k = 0; k < ncal; k++) {
                r[k].hist = calloc(TQ_BINS, sizeof *r[k].hist);
                if (!r[k].hist) {
                    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "calibration: out of memory");
                }
            }
        }
        for (int s = 0; s < set->n; s++) {
            void **o;
            int rc = run_sample(gc, set, s, &o);
            if (rc) {
                return rc;
            }
            for (int k = 0; k < ncal; k++) {
                const tether_ir_tensor *t = &gc->tensors[gc->outputs[first + k]];
                const float *v = o[first + k];
                size_t n = tether_ir_tensor_elements(t);
                tq_range *q = &r[k];
                if (pass == 0) {
                    for (size_t i = 0; i < n; i++) {
                        if (isfinite(v[i])) {
                            q->lo = v[i] < q->lo ? v[i] : q->lo;
                            q->hi = v[i] > q->hi ? v[i] : q->hi;
                            q->seen = 1;
                        }
                    }
                    continue;
                }
                if (!q->seen) {
                    continue;
                }
                double base = method == TETHER_QCALIB_ENTROPY ? 0 : q->lo;
                double top =
                    method == TETHER_QCALIB_ENTROPY ? fmax(fabs(q->lo), fabs(q->hi)) : q->hi;
                double w = (top - base) / TQ_BINS;
                for (size_t i = 0; i < n; i++) {
                    if (!isfinite(v[i])) {
                        continue;
                    }
                    double x = method == TETHER_QCALIB_ENTROPY ? fabs(v[i]) : v[i];
                    long b = w > 0 ? (long)((x - base) / w) : 0;
                    b = b < 0 ? 0 : b >= TQ_BINS ? TQ_BINS - 1 : b;
                    q->hist[b]++;
                }
            }
            free_outputs(o, gc->noutputs);
        }
    }
    return 0;
}

/* TensorRT's threshold: the bin count i (128..TQ_BINS) of least KL divergence. */
static int kl_bins(const uint64_t *h) {
    enum { LEVELS = 128 };
    static double p[TQ_BINS], q[TQ_BINS];
    double best = INFINITY;
    int best_i = TQ_BINS;
    for (int i = LEVELS; i <= TQ_BINS; i++) {
        double outl = 0, ptot = 0;
        for (int j = i; j < TQ_BINS; j++) {
            outl += (double)h[j];
        }
        for (int j = 0; j < i; j++) {
            p[j] = (double)h[j];
        }
        p[i - 1] += outl;
        for (int j = 0; j < i; j++) {
            ptot += p[j];
        }
        if (ptot <= 0) {
            continue;
        }
        /* the first i bins merged into LEVELS levels, each spread over its non-empty bins */
        double per = (double)i / LEVELS;
        for (int l = 0; l < LEVELS; l++) {
            int a = (int)floor(l * per), b = (int)floor((l + 1) * per);
            b = l == LEVELS - 1 ? i : b;
            double sum = 0;
            int nz = 0;
            for (int j = a; j < b; j++) {
                sum += (double)h[j];
                nz += h[j] != 0;
            }
            for (int j = a; j < b; j++) {
                q[j] = h[j] != 0 && nz ? sum / nz : 0;
            }
        }
        double qtot = 0;
        for (int j = 0; j < i; j++) {
            qtot += q[j];
        }
        double kl = 0;
        for (int j = 0; j < i; j++) {
            if (p[j] > 0) {
                double pj = p[j] / ptot, qj = qtot > 0 && q[j] > 0 ? q[j] / qtot : 1e-12;
                kl += pj * log(pj / qj);
            }
        }
        if (kl < best) {
            best = kl;
            best_i = i;
        }
    }
    return best_i;
}

void tq_range_pick(const tq_range *r, tether_qcalib method, double percentile, double *lo,
                   double *hi) {
    *lo = r->seen ? r->lo : 0;
    *hi = r->seen ? r->hi : 0;
    if (!r->seen || !r->hist || method == TETHER_QCALIB_MINMAX) {
        return;
    }
    uint64_t total = 0;
    for (int b = 0; b < TQ_BINS; b++) {
        total += r->hist[b];
    }
    if (!total) {
        return;
    }
    if (method == TETHER_QCALIB_PERCENTILE) {
        double cut = (100.0 - percentile) / 200.0, w = (r->hi - r->lo) / TQ_BINS, acc = 0;
        int left = 0, right = TQ_BINS - 1;
        for (int b = 0; b < TQ_BINS; b++) {
            acc += (double)r->hist[b] / (double)total;
            if (acc < cut) {
                left = b + 1;
            }
            if (acc >= 1.0 - cut) {
                right = b;
                break;
            }
        }
        *lo = r->lo + left * w;
        *hi = r->lo + (right + 1) * w;
        *hi = *hi > r->hi ? r->hi : *hi;
        return;
    }
    double top = fmax(fabs(r->lo), fabs(r->hi)), thr = top * kl_bins(r->hist) / TQ_BINS;
    *lo = r->lo < -thr ? -thr : r->lo;
    *hi = r->hi > thr ? thr : r->hi;
}

void tq_params(double lo, double hi, int uint8, float *scale, int *zp) {
    int qmin = uint8 ? 0 : -128, qmax = uint8 ? 255 : 127;
    float rmin = (float)(lo < 0 ? lo : 0), rmax = (float)(hi > 0 ? hi : 0);
    float s = (rmax - rmin) / (float)(qmax - qmin);
    if (!(s > 0) || !isfinite(s) || s < 1e-30f) {
        *scale = 1.0f;
        *zp = uint8 ? 0 : 0;
        return;
    }
    double z = nearbyint((double)qmin - (double)rmin / (double)s);
    *scale = s;
    *zp = z < qmin ? qmin : z > qmax ? qmax : (int)z;
}

int tq_evaluate(const tether_ir_graph *gf, const tether_ir_graph *gq, const tq_set *set,
                tether_onnx_quantize_result *r) {
    int nout = gf->noutputs < 32 ? gf->noutputs : 32;
    if (gq->noutputs != gf->noutputs) {
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "the quantized model has %d outputs, the float model %d",
                                gq->noutputs, gf->noutputs);
    }
    r->noutputs = nout;
    double lo[32], hi[32], sum[32];
    for (int i = 0; i < nout; i++) {
        const tether_ir_tensor *t = &gf->tensors[gf->outputs[i]];
        tether_onnx_qoutput *q = &r->outputs[i];
        memset(q, 0, sizeof *q);
        snprintf(q->name, sizeof q->name, "%s", t->name);
        q->elements = (int64_t)tether_ir_tensor_elements(t);
        q->compared = tether_dtype_equal(t->dtype, TETHER_FLOAT32) &&
                      tether_dtype_equal(gq->tensors[gq->outputs[i]].dtype, TETHER_FLOAT32);
        lo[i] = INFINITY;
        hi[i] = -INFINITY;
        sum[i] = 0;
    }
    for (int s = 0; s < set->n; s++) {
        void **of, **oq;
        int rc = run_sample(gf, set, s, &of);
        if (rc) {
            return rc;
        }
        rc = run_sample(gq, set, s, &oq);
        if (rc) {
            free_outputs(of, gf->noutputs);
            return rc;
        }
        for (int i = 0; i < nout; i++) {
            tether_onnx_qoutput *q = &r->outputs[i];
            if (!q->compared) {
                continue;
            }
            const tether_ir_tensor *t = &gf->tensors[gf->outputs[i]];
            const float *a = of[i], *b = oq[i];
            size_t n = (size_t)q->elements;
            for (size_t e = 0; e < n; e++) {
                double d = fabs((double)a[e] - (double)b[e]);
                d = d == d ? d : INFINITY;
                q->max_abs = d > q->max_abs ? d : q->max_abs;
                sum[i] += d;
                lo[i] = a[e] < lo[i] ? a[e] : lo[i];
                hi[i] = a[e] > hi[i] ? a[e] : hi[i];
            }
            int64_t classes = t->ndim ? t->shape[t->ndim - 1] : 1;
            if (classes < 2) {
                continue;
            }
            for (size_t row = 0; row + (size_t)classes <= n; row += (size_t)classes) {
                size_t ia = row, ib = row;
                for (size_t c = row; c < row + (size_t)classes; c++) {
                    ia = a[c] > a[ia] ? c : ia;
                    ib = b[c] > b[ib] ? c : ib;
                }
                q->rows++;
                q->top1_agree += ia - row == ib - row;
            }
        }
        free_outputs(of, gf->noutputs);
        free_outputs(oq, gq->noutputs);
    }
    for (int i = 0; i < nout; i++) {
        tether_onnx_qoutput *q = &r->outputs[i];
        double cnt = (double)q->elements * set->n;
        q->mean_abs = cnt > 0 ? sum[i] / cnt : 0;
        q->float_range = hi[i] >= lo[i] ? hi[i] - lo[i] : 0;
    }
    r->nsamples = set->n;
    return 0;
}
