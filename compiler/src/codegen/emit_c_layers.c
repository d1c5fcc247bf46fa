/*
 * The C emitter's kernels for the N-D, reduction and normalization layers: conv_nd and
 * conv_transpose over 1 to 3 spatial dimensions, the reductions (mean, sum, max, min, prod, l1,
 * l2, log_sum, log_sum_exp, sum_square), hardmax, batch_norm and layer_norm, as C99 text.
 * emit_c_kernels.c's tether__c_kernel_body calls them.
 *
 * What must stay true: trip counts and strides are constants baked in, every index stays inside
 * its tensor (window positions outside the input are skipped, never read), the body touches only
 * its kargs and records the math functions it calls (math_used).
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"

/* The spatial geometry seen as 3 dimensions (leading extents 1). */
typedef struct geo3 {
    long long in[3], out[3], k[3], s[3], d[3], p[3];
} geo3;

static void geo3_of(const em *e, const tether_ir_node *nd, geo3 *g) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const tether_ir_attrs *a = &nd->attrs;
    int nsp = x->ndim - 2, off = 3 - nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        g->in[i] = j >= 0 ? x->shape[2 + j] : 1;
        g->out[i] = j >= 0 ? y->shape[2 + j] : 1;
        g->k[i] = j >= 0 ? a->wkernel[j] : 1;
        g->s[i] = j >= 0 ? a->wstrides[j] : 1;
        g->d[i] = j >= 0 ? a->wdilations[j] : 1;
        g->p[i] = j >= 0 ? a->wpads[j] : 0;
    }
}

/* conv_nd: one output at a time, the window's positions outside the input skipped. */
static void conv_nd(em *e, const tether_ir_node *nd, const kargs *k, const geo3 *g) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long N = x->shape[0], C = x->shape[1], O = y->shape[1], G = nd->attrs.groups;
    long long CG = C / G, OG = O / G, K = g->k[0] * g->k[1] * g->k[2];
    long long IS = g->in[0] * g->in[1] * g->in[2], OS = g->out[0] * g->out[1] * g->out[2];
    loop(e, "n", N);
    loop(e, "oc", O);
    line(e, "const float *restrict xg = %s + (n * %lld + (oc / %lld) * %lld) * %lld;", k->in[0], C,
         OG, CG, IS);
    line(e, "const float *restrict wo = %s + oc * %lld;", k->in[1], CG * K);
    line(e, "float *restrict yo = %s + (n * %lld + oc) * %lld;", k->out, O, OS);
    loop(e, "o0", g->out[0]);
    loop(e, "o1", g->out[1]);
    loop(e, "o2", g->out[2]);
    line(e, "float acc = %s;", "0.0f");
    if (k->in[2]) {
        line(e, "acc = %s[oc];", k->in[2]);
    }
    loop(e, "ic", CG);
    loop(e, "k0", g->k[0]);
    line(e, "const int i0 = o0 * %lld - %lld + k0 * %lld;", g->s[0], g->p[0], g->d[0]);
    line(e, "if (i0 < 0 || i0 >= %lld) {", g->in[0]);
    line(e, "    continue;");
    line(e, "}");
    loop(e, "k1", g->k[1]);
    line(e, "const int i1 = o1 * %lld - %lld + k1 * %lld;", g->s[1], g->p[1], g->d[1]);
    line(e, "if (i1 < 0 || i1 >= %lld) {", g->in[1]);
    line(e, "    continue;");
    line(e, "}");
    line(e, "const float *restrict xr = xg + ic * %lld + (i0 * %lld + i1) * %lld;", IS, g->in[1],
         g->in[2]);
    line(e, "const float *restrict wr = wo + ic * %lld + (k0 * %lld + k1) * %lld;", K, g->k[1],
         g->k[2]);
    loop(e, "k2", g->k[2]);
    line(e, "const int i2 = o2 * %lld - %lld + k2 * %lld;", g->s[2], g->p[2], g->d[2]);
    line(e, "if (i2 >= 0 && i2 < %lld) {", g->in[2]);
    line(e, "    acc += xr[i2] * wr[k2];");
    line(e, "}");
    close_block(e); /* k2 */
    close_block(e); /* k1 */
    close_block(e); /* k0 */
    close_block(e); /* ic */
    line(e, "yo[(o0 * %lld + o1) * %lld + o2] = acc;", g->out[1], g->out[2]);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
    close_block(e);
}

/* conv_transpose: each output plane starts at its bias, then every input position adds
 * x * w to the outputs its window reaches; the innermost loop runs over the input positions of a
 * row whose output falls inside (bounds computed per kernel column, no test per element). */
static void conv_transpose(em *e, const tether_ir_node *nd, const kargs *k, const geo3 *g) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long N = x->shape[0], C = x->shape[1], O = y->shape[1], G = nd->attrs.groups;
    long long CG = C / G, OG = O / G, K = g->k[0] * g->k[1] * g->k[2];
    long long IS = g->in[0] * g->in[1] * g->in[2], OS = g->out[0] * g->out[1] * g->out[2];
    loop(e, "n", N);
    loop(e, "oc", O);
    line(e, "float *restrict yo = %s + (n * %lld + oc) * %lld;", k->out, O, OS);
    loop(e, "f", OS);
    line(e, "yo[f] = %s;", k->in[2] ? "0.0f" : "0.0f");
    if (k->in[2]) {
        line(e, "yo[f] = %s[oc];", k->in[2]);
    }
    close_block(e);
    line(e, "const int gi = oc / %lld, ocg = oc %% %lld;", OG, OG);
    loop(e, "ic", CG);
    line(e, "const float *restrict xc = %s + (n * %lld + gi * %lld + ic) * %lld;", k->in[0], C, CG,
         IS);
    line(e, "const float *restrict wc = %s + ((gi * %lld + ic) * %lld + ocg) * %lld;", k->in[1], CG,
         OG, K);
    loop(e, "k0", g->k[0]);
    loop(e, "k1", g->k[1]);
    loop(e, "k2", g->k[2]);
    line(e, "const float wv = wc[(k0 * %lld + k1) * %lld + k2];", g->k[1], g->k[2]);
    /* o2 = i2 * s - p + k2 * d inside [0, out): i2 in [lo, hi) */
    line(e, "const int t2 = %lld - k2 * %lld;", g->p[2], g->d[2]);
    line(e, "const int lo = t2 > 0 ? (t2 + %lld) / %lld : 0;", g->s[2] - 1, g->s[2]);
    line(e, "int hi = %lld + t2 >= 0 ? (%lld + t2) / %lld + 1 : 0;", g->out[2] - 1, g->out[2] - 1,
         g->s[2]);
    line(e, "hi = hi < %lld ? hi : %lld;", g->in[2], g->in[2]);
    loop(e, "i0", g->in[0]);
    line(e, "const int o0 = i0 * %lld - %lld + k0 * %lld;", g->s[0], g->p[0], g->d[0]);
    line(e, "if (o0 < 0 || o0 >= %lld) {", g->out[0]);
    line(e, "    continue;");
    line(e, "}");
    loop(e, "i1", g->in[1]);
    line(e, "const int o1 = i1 * %lld - %lld + k1 * %lld;", g->s[1], g->p[1], g->d[1]);
    line(e, "if (o1 < 0 || o1 >= %lld) {", g->out[1]);
    line(e, "    continue;");
    line(e, "}");
    line(e, "const float *restrict xr = xc + (i0 * %lld + i1) * %lld;", g->in[1], g->in[2]);
    line(e, "float *restrict yr = yo + (o0 * %lld + o1) * %lld - t2;", g->out[1], g->out[2]);
    line(e, "for (int i2 = lo; i2 < hi; ++i2) {");
    line(e, "    yr[i2 * %lld] += xr[i2] * wv;", g->s[2]);
    line(e, "}");
    close_block(e); /* i1 */
    close_block(e); /* i0 */
    close_block(e); /* k2 */
    close_block(e); /* k1 */
    close_block(e); /* k0 */
    close_block(e); /* ic */
    close_block(e); /* oc */
    close_block(e); /* n */
}

void tether__c_conv_nd(em *e, const tether_ir_node *nd, const kargs *k) {
    geo3 g;
    geo3_of(e, nd, &g);
    if (nd->op == TETHER_OP_CONV_TRANSPOSE) {
        conv_transpose(e, nd, k, &g);
    } else {
        conv_nd(e, nd, k, &g);
    }
}

void tether__c_reduce_mean(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < nd->attrs.nints; i++) {
        red[nd->attrs.ints[i]] = 1;
    }
    int64_t st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = red[d] ? 0 : s;
        s *= red[d] ? 1 : x->shape[d];
    }
    size_t total = tether_ir_tensor_elements(y);
    char idx[256] = "";
    size_t o = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (st[d]) {
            o += (size_t)snprintf(idx + o, sizeof idx - o, "%si%d * %lld", o ? " + " : "", d,
                                  (long long)st[d]);
        }
    }
    loop(e, "i", (int64_t)total);
    line(e, "%s[i] = 0.0f;", k->out);
    close_block(e);
    line(e, "const float *restrict xp = %s;", k->in[0]);
    for (int d = 0; d < x->ndim; d++) {
        char v[8];
        snprintf(v, sizeof v, "i%d", d);
        loop(e, v, x->shape[d]);
    }
    line(e, "%s[%s] += *xp++;", k->out, o ? idx : "0");
    for (int d = 0; d < x->ndim; d++) {
        close_block(e);
    }
    char f[48];
    flit(f, sizeof f, (float)((double)total / (double)tether_ir_tensor_elements(x)));
    loop(e, "i", (int64_t)total);
    line(e, "%s[i] *= %s;", k->out, f);
    close_block(e);
}

/* hardmax: 1 at the first maximum along the axis, 0 elsewhere. */
void tether__c_hardmax(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    int ax = tether__ir_norm_axis(nd->attrs.axis, y->ndim);
    long long outer = 1, inner = 1, len = y->shape[ax];
    for (int i = 0; i < ax; i++) {
        outer *= y->shape[i];
    }
    for (int i = ax + 1; i < y->ndim; i++) {
        inner *= y->shape[i];
    }
    loop(e, "o", outer);
    loop(e, "q", inner);
    line(e, "const float *restrict x = %s + o * %lld + q;", k->in[0], len * inner);
    line(e, "float *restrict y = %s + o * %lld + q;", k->out, len * inner);
    line(e, "float m = x[0];");
    line(e, "int at = 0;");
    line(e, "for (int c = 1; c < %lld; ++c) {", len);
    line(e, "    if (x[c * %lld] > m) {", inner);
    line(e, "        m = x[c * %lld];", inner);
    line(e, "        at = c;");
    line(e, "    }");
    line(e, "}");
    loop(e, "c", len);
    line(e, "y[c * %lld] = c == at ? 1.0f : 0.0f;", inner);
    close_block(e);
    close_block(e);
    close_block(e);
}

void tether__c_reduce(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    tether_op op = nd->op;
    int red[TETHER_IR_MAX_NDIM] = {0};
    for (int i = 0; i < nd->attrs.nints; i++) {
        red[nd->attrs.ints[i]] = 1;
    }
    long long st[TETHER_IR_MAX_NDIM], s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= x->shape[d];
    }
    char base[320] = "0", idx[320] = "0";
    size_t ob = 1, oi = 1;
    line(e, "float *restrict yp = %s;", k->out);
    int opened = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (!red[d]) {
            char v[8];
            snprintf(v, sizeof v, "i%d", d);
            loop(e, v, x->shape[d]);
            opened++;
            ob += (size_t)snprintf(base + ob, sizeof base - ob, " + i%d * %lld", d, st[d]);
        }
    }
    line(e, "const float *restrict xb = %s + %s;", k->in[0], base);
    const char *init = op == TETHER_OP_REDUCE_PROD  ? "1.0f"
                       : op == TETHER_OP_REDUCE_MAX ? "-HUGE_VALF"
                       : op == TETHER_OP_REDUCE_MIN ? "HUGE_VALF"
                                                    : "0.0f";
    int passes = op == TETHER_OP_REDUCE_LOG_SUM_EXP ? 2 : 1;
    if (passes == 2) {
        line(e, "float m = -HUGE_VALF;");
        e->math_used[M_EXPF] = 1;
    }
    line(e, "float acc = %s;", init);
    for (int d = 0; d < x->ndim; d++) {
        if (red[d]) {
            oi += (size_t)snprintf(idx + oi, sizeof idx - oi, " + r%d * %lld", d, st[d]);
        }
    }
    for (int pass = 2 - passes; pass < 2; pass++) {
        int loops = 0;
        for (int d = 0; d < x->ndim; d++) {
            if (red[d]) {
                char v[8];
                snprintf(v, sizeof v, "r%d", d);
                loop(e, v, x->shape[d]);
                loops++;
            }
        }
        line(e, "const float v = xb[%s];", idx);
        if (pass == 0) {
            line(e, "m = v > m ? v : m;");
        } else if (op == TETHER_OP_REDUCE_MAX) {
            line(e, "acc = v > acc ? v : acc;");
        } else if (op == TETHER_OP_REDUCE_MIN) {
            line(e, "acc = v < acc ? v : acc;");
        } else if (op == TETHER_OP_REDUCE_PROD) {
            line(e, "acc *= v;");
        } else if (op == TETHER_OP_REDUCE_L1) {
            line(e, "acc += v < 0.0f ? -v : v;");
        } else if (op == TETHER_OP_REDUCE_L2 || op == TETHER_OP_REDUCE_SUM_SQUARE) {
            line(e, "acc += v * v;");
        } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
            line(e, "acc += expf(v - m);");
        } else {
            line(e, "acc += v;");
        }
        while (loops--) {
            close_block(e);
        }
    }
    if (op == TETHER_OP_REDUCE_L2) {
        e->math_used[M_SQRTF] = 1;
        line(e, "*yp++ = sqrtf(acc);");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM) {
        e->math_used[M_LOGF] = 1;
        line(e, "*yp++ = logf(acc);");
    } else if (op == TETHER_OP_REDUCE_LOG_SUM_EXP) {
        e->math_used[M_LOGF] = 1;
        line(e, "*yp++ = m + logf(acc);");
    } else {
        line(e, "*yp++ = acc;");
    }
    while (opened--) {
        close_block(e);
    }
}

/* batch_norm (unfolded, inference): per channel y = x * s + t. */
void tether__c_batch_norm(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long inner = 1;
    for (int i = 2; i < x->ndim; i++) {
        inner *= x->shape[i];
    }
    char eps[48];
    flit(eps, sizeof eps, nd->attrs.epsilon);
    e->math_used[M_SQRTF] = 1;
    loop(e, "n", x->shape[0]);
    loop(e, "c", x->shape[1]);
    line(e, "const float s = %s[c] / sqrtf(%s[c] + %s);", k->in[1], k->in[4], eps);
    line(e, "const float t = %s[c] - %s[c] * s;", k->in[2], k->in[3]);
    line(e, "const float *restrict xc = %s + (n * %lld + c) * %lld;", k->in[0],
         (long long)x->shape[1], inner);
    line(e, "float *restrict yc = %s + (n * %lld + c) * %lld;", k->out, (long long)x->shape[1],
         inner);
    loop(e, "i", inner);
    line(e, "yc[i] = xc[i] * s + t;");
    close_block(e);
    close_block(e);
    close_block(e);
}

/* layer_norm over the dimensions from axis on: mean, variance, scale and optional bias. */
void tether__c_layer_norm(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long outer = 1, inner = 1;
    for (int i = 0; i < nd->attrs.axis; i++) {
        outer *= x->shape[i];
    }
    for (int i = (int)nd->attrs.axis; i < x->ndim; i++) {
        inner *= x->shape[i];
    }
    char eps[48], rn[48];
    flit(eps, sizeof eps, nd->attrs.epsilon);
    flit(rn, sizeof rn, (float)(1.0 / (double)inner));
    e->math_used[M_SQRTF] = 1;
    loop(e, "o", outer);
    line(e, "const float *restrict x = %s + o * %lld;", k->in[0], inner);
    line(e, "float *restrict y = %s + o * %lld;", k->out, inner);
    line(e, "float mean = 0.0f, var = 0.0f;");
    loop(e, "i", inner);
    line(e, "mean += x[i];");
    close_block(e);
    line(e, "mean *= %s;", rn);
    loop(e, "i", inner);
    line(e, "const float d = x[i] - mean;");
    line(e, "var += d * d;");
    close_block(e);
    line(e, "const float inv = 1.0f / sqrtf(var * %s + %s);", rn, eps);
    loop(e, "i", inner);
    if (k->in[2]) {
        line(e, "y[i] = (x[i] - mean) * inv * %s[i] + %s[i];", k->in[1], k->in[2]);
    } else {
        line(e, "y[i] = (x[i] - mean) * inv * %s[i];", k->in[1]);
    }
    close_block(e);
    close_block(e);
}
