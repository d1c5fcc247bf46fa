/*
 * Channel-blocked activations for the C emitter (docs/codegen.md, "Channel-blocked layout").
 * Between convolutions an activation may be stored as NCHW<b>c: [N][C/b][H][W][b], b channels of
 * one pixel contiguous, so that a vector holds b channels of a pixel. Convolutions then vectorise
 * over output channels whatever the plane's size: a pointwise or dense conv is a register block
 * of output-channel vectors x output pixels over packed weights ([O/b][KH][KW][C][b]), each
 * input value broadcast; a depthwise conv multiplies pixel vectors by per-tap channel vectors
 * ([C/b][KH][KW][b]). Small planes (MobileNet's 7x7 and 3x3, DS-CNN's 25x5) no longer leave
 * most of a vector idle or fall back to gathers.
 *
 * tether__c_layouts picks the layout of every tensor: blocked only when its producer and all of
 * its consumers can work on it (convs, zero padding of H/W, global average pooling, elementwise
 * ops whose operands all have its shape), it is neither a graph input nor output, its plane has
 * more than one pixel and a block width divides its channel count; operands that must share a
 * layout (a depthwise conv's input and output, an elementwise op's, a residual and the conv it
 * is added in) are decided together. A conv reading a plain tensor and writing a blocked one
 * (the network's first conv) or the other way round (its last) does the transform itself, so
 * there are no layout-transform nodes. The weights of such convs are repacked here, in the
 * params blob or the linked arrays; the graph and its interpreter are unchanged.
 *
 * What must stay true: graph inputs and outputs and every tensor of a node this file does not
 * emit are plain NCHW; the results equal the plain kernels' up to float rounding (test_compiler_
 * schedules compares both with the interpreter); no load or store leaves a tensor's extent.
 */
#include <stdlib.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/error.h"

/* The widest block of the schedule (channel_block, or the vector width; /2, /4, >= 4) dividing
 * C; 0 when none does or blocking is off. */
static int block_for(const em *e, long long C) {
    int b = e->o->schedule.channel_block < 0 ? e->vw : e->o->schedule.channel_block;
    if (b > e->vw) {
        b = e->vw;
    }
    for (; b >= 4; b /= 2) {
        if (C % b == 0) {
            return b;
        }
    }
    return 0;
}

static int uses_of(const tether_ir_graph *g, int t) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++) {
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            n += g->nodes[i].inputs[j] == t;
        }
    }
    return n;
}

enum { CONV_NO = 0, CONV_DENSE, CONV_DEPTHWISE };

/* Whether a conv2d can run channel-blocked: float 4-D, dense (one group) or depthwise, weights a
 * constant only it reads (they are repacked), output channels divisible by a block. */
static int conv_kind(const em *e, const tether_ir_node *nd) {
    if (nd->op != TETHER_OP_CONV2D || nd->ninputs < 2) {
        return CONV_NO;
    }
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *w = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    if (x->ndim != 4 || y->ndim != 4 || w->kind != TETHER_TENSOR_CONSTANT || !w->data ||
        uses_of(e->g, nd->inputs[1]) != 1 || tether__ir_is_graph_output(e->g, nd->inputs[1]) ||
        x->dtype.code != kDLFloat || block_for(e, y->shape[1]) == 0 ||
        tether_ir_tensor_elements(y) == 0 || tether_ir_tensor_elements(x) == 0) {
        return CONV_NO;
    }
    if (nd->attrs.groups == 1) {
        return CONV_DENSE;
    }
    if (nd->attrs.groups == x->shape[1] && nd->attrs.groups == y->shape[1]) {
        return CONV_DEPTHWISE;
    }
    return CONV_NO;
}

/* A pad of H and W only (non-negative, constant mode): blocked rows copied with borders. */
static int pad_ok(const em *e, const tether_ir_node *nd) {
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    if (nd->op != TETHER_OP_PAD || x->ndim != 4 || nd->attrs.nints != 8) {
        return 0;
    }
    const int64_t *p = nd->attrs.ints;
    if (p[0] || p[1] || p[4] || p[5]) {
        return 0;
    }
    for (int i = 0; i < 8; i++) {
        if (p[i] < 0) {
            return 0;
        }
    }
    for (int i = 1; i < nd->ninputs; i++) {
        if (nd->inputs[i] >= 0) {
            return 0; /* pads or value given as tensors */
        }
    }
    return 1;
}

/* Elementwise: a unary op, or a binary one whose operands all have the output's shape (the
 * kernels index every operand linearly, so any common layout works). */
static int elementwise(const em *e, const tether_ir_node *nd) {
    const tether_ir_tensor *y = T(e, nd->outputs[0]);
    const tether__op_info *info = tether__op_info_of(nd->op);
    if (!info || (info->kind != TETHER__OPK_BINARY && info->kind != TETHER__OPK_UNARY)) {
        return 0;
    }
    for (int i = 0; i < nd->ninputs; i++) {
        if (nd->inputs[i] < 0) {
            continue;
        }
        const tether_ir_tensor *x = T(e, nd->inputs[i]);
        if (x->ndim != y->ndim || memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim)) {
            return 0;
        }
    }
    return 1;
}

static int residual_of(const tether_ir_node *nd) {
    return nd->attrs.has_residual ? nd->inputs[nd->ninputs - 1] : -1;
}

static int find(int *parent, int t) {
    while (parent[t] != t) {
        parent[t] = parent[parent[t]];
        t = parent[t];
    }
    return t;
}

static void join(int *parent, int a, int b) {
    if (a >= 0 && b >= 0) {
        parent[find(parent, a)] = find(parent, b);
    }
}

/* Whether node nd may read tensor t (at input position i) blocked. */
static int may_read_blocked(const em *e, const tether_ir_node *nd, int i) {
    if (!tether__c_node_has_function(e->g, nd)) {
        return 0;
    }
    int kind = conv_kind(e, nd);
    if (kind != CONV_NO) {
        return i == 0 || nd->inputs[i] == residual_of(nd);
    }
    if (nd->op == TETHER_OP_PAD) {
        return i == 0 && pad_ok(e, nd);
    }
    if (nd->op == TETHER_OP_GLOBAL_AVG_POOL) {
        return i == 0;
    }
    return elementwise(e, nd);
}

/* Whether node nd may write its output blocked. */
static int may_write_blocked(const em *e, const tether_ir_node *nd) {
    return tether__c_node_has_function(e->g, nd) &&
           (conv_kind(e, nd) != CONV_NO || (nd->op == TETHER_OP_PAD && pad_ok(e, nd)) ||
            elementwise(e, nd));
}

static int candidate(const em *e, int t) {
    const tether_ir_graph *g = e->g;
    const tether_ir_tensor *x = T(e, t);
    if (x->kind != TETHER_TENSOR_INTERMEDIATE || x->alias_of >= 0 || x->ndim != 4 ||
        x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->producer < 0 ||
        tether__ir_is_graph_output(g, t) || x->shape[2] * x->shape[3] <= 1 ||
        block_for(e, x->shape[1]) == 0 || !may_write_blocked(e, &g->nodes[x->producer])) {
        return 0;
    }
    for (int i = 0; i < g->nnodes; i++) {
        for (int j = 0; j < g->nodes[i].ninputs; j++) {
            if (g->nodes[i].inputs[j] == t && !may_read_blocked(e, &g->nodes[i], j)) {
                return 0;
            }
        }
    }
    return 1;
}

/* Packs conv weights OIHW for output-channel vectors of b: dense [O/b][KH][KW][C][b], depthwise
 * [C/b][KH][KW][b]. */
static float *pack_weights(const tether_ir_tensor *w, int kind, int b) {
    long long O = w->shape[0], C = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    const float *src = w->data;
    float *p = malloc(w->nbytes ? w->nbytes : 1);
    if (!p) {
        return NULL;
    }
    for (long long o = 0; o < O; o++) {
        for (long long c = 0; c < C; c++) {
            for (long long kh = 0; kh < KH; kh++) {
                for (long long kw = 0; kw < KW; kw++) {
                    long long s = ((o * C + c) * KH + kh) * KW + kw, d;
                    if (kind == CONV_DEPTHWISE) {
                        d = ((o / b * KH + kh) * KW + kw) * b + o % b;
                    } else {
                        d = (((o / b * KH + kh) * KW + kw) * C + c) * b + o % b;
                    }
                    p[d] = src[s];
                }
            }
        }
    }
    return p;
}

int tether__c_layouts(em *e) {
    const tether_ir_graph *g = e->g;
    int nt = g->ntensors ? g->ntensors : 1;
    e->cb = calloc((size_t)nt, sizeof(int));
    e->wdata = calloc((size_t)nt, sizeof(float *));
    int *parent = malloc((size_t)nt * sizeof(int)), *ok = malloc((size_t)nt * sizeof(int));
    int *worth = calloc((size_t)nt, sizeof(int));
    if (!e->cb || !e->wdata || !parent || !ok || !worth) {
        free(parent);
        free(ok);
        free(worth);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
    }
    if (e->vw < 4 || block_for(e, 4 * 16) == 0) {
        free(parent);
        free(ok);
        free(worth);
        return TETHER_OK; /* scalar kernels or blocking off: everything plain */
    }
    for (int t = 0; t < g->ntensors; t++) {
        parent[t] = t;
        ok[t] = 1;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        int y = nd->outputs[0];
        int kind = conv_kind(e, nd);
        if (kind == CONV_DEPTHWISE) {
            join(parent, nd->inputs[0], y);
        }
        if (kind != CONV_NO) {
            join(parent, residual_of(nd), y);
        } else if ((nd->op == TETHER_OP_PAD && pad_ok(e, nd)) || elementwise(e, nd)) {
            for (int j = 0; j < nd->ninputs; j++) {
                join(parent, nd->inputs[j], y);
            }
        }
    }
    /* worth it (for some tensor of the group): rows narrower than two vectors (the plain row
     * kernels' blocks do not fill), or a depthwise conv's operand (its plain kernel loads a
     * vector per tap for one weight); U-Net's wide dense convs stay plain */
    for (int i = 0; i < g->nnodes; i++) {
        if (conv_kind(e, &g->nodes[i]) == CONV_DEPTHWISE) {
            worth[g->nodes[i].inputs[0]] = worth[g->nodes[i].outputs[0]] = 1;
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        if (!candidate(e, t)) {
            ok[find(parent, t)] = 0;
        }
        if (T(e, t)->ndim == 4 && T(e, t)->shape[3] < 2 * e->vw) {
            worth[t] = 1;
        }
    }
    for (int t = 0; t < g->ntensors; t++) {
        worth[find(parent, t)] |= worth[t];
    }
    for (int t = 0; t < g->ntensors; t++) {
        int r = find(parent, t);
        e->cb[t] = ok[r] && worth[r] ? block_for(e, T(e, t)->shape[1]) : 0;
    }
    free(parent);
    free(ok);
    free(worth);
    /* weights of the convs that touch a blocked tensor */
    for (int i = 0; i < g->nnodes; i++) {
        const tether_ir_node *nd = &g->nodes[i];
        int kind = conv_kind(e, nd);
        if (kind == CONV_NO || (!e->cb[nd->inputs[0]] && !e->cb[nd->outputs[0]])) {
            continue;
        }
        const tether_ir_tensor *w = T(e, nd->inputs[1]);
        e->wdata[nd->inputs[1]] =
            pack_weights(w, kind, block_for(e, T(e, nd->outputs[0])->shape[1]));
        if (!e->wdata[nd->inputs[1]]) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "codegen: out of memory");
        }
    }
    return TETHER_OK;
}

void tether__c_layouts_free(em *e) {
    for (int t = 0; e->wdata && t < e->g->ntensors; t++) {
        free(e->wdata[t]);
    }
    free(e->wdata);
    free(e->cb);
    e->wdata = NULL;
    e->cb = NULL;
}

const void *tether__c_tensor_data(const em *e, int t) {
    return e->wdata && e->wdata[t] ? (const void *)e->wdata[t] : T(e, t)->data;
}

/* ---- kernels ----------------------------------------------------------------------------- */

/* Declares tg_v (b floats) and tg_vu (unaligned, may alias). */
static void vtypes(em *e, int b) {
    line(e, "typedef float tg_v __attribute__((vector_size(%d)));", b * 4);
    line(e, "typedef float tg_vu __attribute__((vector_size(%d), aligned(4), may_alias));", b * 4);
}

typedef struct bconv {
    conv_geo g;
    const tether_ir_node *nd;
    const kargs *k;
    int kind;
    int cbi, cbo, b; /* input block (1: plain), output block (0: plain), vector width */
} bconv;

/* Accumulators a<r>_<j> (pixel r, output-channel vector j) start at the bias or 0. */
static void bacc_init(em *e, const bconv *c, int R, int J) {
    for (int r = 0; r < R; r++) {
        for (int j = 0; j < J; j++) {
            if (c->k->in[2]) {
                line(e, "tg_v a%d_%d = *(const tg_vu *)(%s + (ob + %d) * %d);", r, j, c->k->in[2],
                     j, c->b);
            } else {
                line(e, "tg_v a%d_%d = (tg_v){0};", r, j);
            }
        }
    }
}

/* Stores the block: blocked output as R contiguous vectors per j, then the epilogue over them;
 * a plain output lane by lane. */
static void bacc_store(em *e, const bconv *c, int R, int J) {
    const kargs *k = c->k;
    const tether_ir_attrs *a = &c->nd->attrs;
    long long plane = c->g.OH * c->g.OW;
    for (int j = 0; j < J; j++) {
        line(e, "{");
        e->depth++;
        if (c->cbo) {
            line(e, "const long long at = ((n * %lld + ob + %d) * %lld + oh * %lld + ow) * %d;",
                 c->g.O / c->b, j, plane, c->g.OW, c->b);
            line(e, "float *restrict yq = %s + at;", k->out);
            if (k->res) {
                line(e, "const float *restrict rq = %s + at;", k->res);
            }
            for (int r = 0; r < R; r++) {
                line(e, "*(tg_vu *)(yq + %d) = a%d_%d;", r * c->b, r, j);
            }
            if (a->act != TETHER_ACT_NONE || k->res) {
                loop(e, "q", (long long)R * c->b);
                tether__c_store(e, a, "yq", k->res ? "rq" : NULL, "q", "yq[q]");
                close_block(e);
            }
        } else {
            line(e, "const long long at = (n * %lld + (ob + %d) * %d) * %lld + oh * %lld + ow;",
                 c->g.O, j, c->b, plane, c->g.OW);
            line(e, "float *restrict yq = %s + at;", k->out);
            if (k->res) {
                line(e, "const float *restrict rq = %s + at;", k->res);
            }
            for (int r = 0; r < R; r++) {
                char idx[64], val[32];
                snprintf(idx, sizeof idx, "q * %lld + %d", plane, r);
                snprintf(val, sizeof val, "a%d_%d[q]", r, j);
                loop(e, "q", c->b);
                tether__c_store(e, a, "yq", k->res ? "rq" : NULL, idx, val);
                close_block(e);
            }
        }
        close_block(e);
    }
}

/* The row loop over kernel rows: `ih` valid or skipped. */
static void krow(em *e, const bconv *c) {
    loop(e, "kh", c->g.KH);
    line(e, "const int ih = ih0 + kh * %lld;", c->g.DH);
    if (c->g.rows_checked) {
        line(e, "if (ih < 0 || ih >= %lld) {", c->g.H);
        line(e, "    continue;");
        line(e, "}");
    }
    loop(e, "kw", c->g.KW);
}

/* Dense conv block: J vectors of output channels from ob x R pixels from (oh, ow). `checked`:
 * a one-pixel block whose taps may fall outside the row. */
static void dense_block(em *e, const bconv *c, int R, int J, int checked) {
    long long ncb = c->g.C / c->cbi;
    bacc_init(e, c, R, J);
    krow(e, c);
    line(e, "const int iw = ow * %lld - %lld + kw * %lld;", c->g.SW, c->g.PL, c->g.DW);
    if (checked) {
        line(e, "if (iw < 0 || iw >= %lld) {", c->g.W);
        line(e, "    continue;");
        line(e, "}");
    }
    line(e, "const float *restrict xk = xn + ((long long)ih * %lld + iw) * %d;", c->g.W, c->cbi);
    line(e, "const float *restrict wk = wb + (kh * %lld + kw) * %lld;", c->g.KW, c->g.C * c->b);
    line(e, "for (int icb = 0; icb < %lld; ++icb) {", ncb);
    e->depth++;
    line(e, "const float *restrict xc = xk + (long long)icb * %lld;", c->g.H * c->g.W * c->cbi);
    line(e, "const float *restrict wc = wk + icb * %d;", c->cbi * c->b);
    loop(e, "ici", c->cbi);
    for (int j = 0; j < J; j++) {
        line(e, "const tg_v w%d = *(const tg_vu *)(wc + ici * %d + %lld);", j, c->b,
             (long long)j * c->g.KH * c->g.KW * c->g.C * c->b);
    }
    for (int r = 0; r < R; r++) {
        line(e, "const float x%d = xc[%lld + ici];", r, (long long)r * c->g.SW * c->cbi);
        for (int j = 0; j < J; j++) {
            line(e, "a%d_%d += x%d * w%d;", r, j, r, j);
        }
    }
    close_block(e);
    close_block(e);
    close_block(e); /* kw */
    close_block(e); /* kh */
    bacc_store(e, c, R, J);
}

/* Depthwise conv block: R pixels of one channel vector (ob). */
static void dw_block(em *e, const bconv *c, int R, int checked) {
    bacc_init(e, c, R, 1);
    krow(e, c);
    line(e, "const int iw = ow * %lld - %lld + kw * %lld;", c->g.SW, c->g.PL, c->g.DW);
    if (checked) {
        line(e, "if (iw < 0 || iw >= %lld) {", c->g.W);
        line(e, "    continue;");
        line(e, "}");
    }
    line(e, "const tg_v w0 = *(const tg_vu *)(wb + (kh * %lld + kw) * %d);", c->g.KW, c->b);
    line(e, "const float *restrict xk = xn + ((long long)ih * %lld + iw) * %d;", c->g.W, c->b);
    for (int r = 0; r < R; r++) {
        line(e, "a%d_0 += *(const tg_vu *)(xk + %lld) * w0;", r, (long long)r * c->g.SW * c->b);
    }
    close_block(e);
    close_block(e);
    bacc_store(e, c, R, 1);
}

static void any_block(em *e, const bconv *c, int R, int J, int checked) {
    if (c->kind == CONV_DEPTHWISE) {
        dw_block(e, c, R, checked);
    } else {
        dense_block(e, c, R, J, checked);
    }
}

/* One output row of J channel vectors: interior blocks of R pixels, the interior's remainder
 * one pixel at a time, border pixels checked. */
static void brow(em *e, const bconv *c, int R, int J) {
    long long lo = c->g.lo, hi = c->g.hi;
    long long vend = lo + (hi - lo) / R * R;
    if (vend > lo) {
        line(e, "for (int ow = %lld; ow < %lld; ow += %d) {", lo, vend, R);
        e->depth++;
        any_block(e, c, R, J, 0);
        close_block(e);
    }
    if (hi > vend) {
        line(e, "for (int ow = %lld; ow < %lld; ++ow) {", vend, hi);
        e->depth++;
        any_block(e, c, 1, J, 0);
        close_block(e);
    }
    long long seg[2][2] = {{0, lo}, {hi, c->g.OW}};
    for (int s = 0; s < 2; s++) {
        if (seg[s][1] > seg[s][0]) {
            line(e, "for (int ow = %lld; ow < %lld; ++ow) {", seg[s][0], seg[s][1]);
            e->depth++;
            any_block(e, c, 1, J, 1);
            close_block(e);
        }
    }
}

/* Every output row for channel vectors ob .. ob+J-1. */
static void bchannels(em *e, const bconv *c, int R, int J) {
    if (c->kind == CONV_DEPTHWISE) {
        line(e, "const float *restrict xn = %s + (n * %lld + ob) * %lld;", c->k->in[0],
             c->g.C / c->b, c->g.H * c->g.W * c->b);
        line(e, "const float *restrict wb = %s + ob * %lld;", c->k->in[1],
             c->g.KH * c->g.KW * c->b);
    } else {
        line(e, "const float *restrict xn = %s + n * %lld;", c->k->in[0], c->g.C * c->g.H * c->g.W);
        line(e, "const float *restrict wb = %s + ob * %lld;", c->k->in[1],
             c->g.KH * c->g.KW * c->g.C * c->b);
    }
    loop(e, "oh", c->g.OH);
    line(e, "const int ih0 = oh * %lld - %lld;", c->g.SH, c->g.PT);
    brow(e, c, R, J);
    close_block(e);
}

static int conv_blocked(em *e, const tether_ir_node *nd, const kargs *k) {
    int kind = conv_kind(e, nd);
    int yi = nd->outputs[0], xi = nd->inputs[0];
    if (kind == CONV_NO || (!e->cb[xi] && !e->cb[yi])) {
        return 0;
    }
    const tether_schedule *sc = e->sc;
    bconv c;
    tether__c_conv_geo(e, nd, k, &c.g);
    c.nd = nd;
    c.k = k;
    c.kind = kind;
    c.cbi = e->cb[xi] ? e->cb[xi] : 1;
    c.cbo = e->cb[yi];
    c.b = block_for(e, c.g.O);
    long long nvec = c.g.O / c.b;
    int J = 1, R = sc->nchwc_dw_pixels;
    if (kind == CONV_DENSE) {
        J = sc->nchwc_oc_vectors ? sc->nchwc_oc_vectors : 4;
        if (J > nvec) {
            J = (int)nvec;
        }
        R = sc->nchwc_pixels ? sc->nchwc_pixels : 16 / J > 8 ? 8 : 16 / J;
    }
    long long full = nvec / J * J;
    line(e,
         "/* schedule: channel-blocked %s conv (input %s, output %s), %d vector%s of %d "
         "channels x %d pixel%s */",
         kind == CONV_DEPTHWISE ? "depthwise" : "dense", c.cbi > 1 ? "blocked" : "plain",
         c.cbo ? "blocked" : "plain", J, J == 1 ? "" : "s", c.b, R, R == 1 ? "" : "s");
    vtypes(e, c.b);
    loop(e, "n", c.g.N);
    line(e, "for (int ob = 0; ob < %lld; ob += %d) {", full, J);
    e->depth++;
    bchannels(e, &c, R, J);
    close_block(e);
    if (nvec > full) {
        line(e, "{");
        e->depth++;
        line(e, "const int ob = %lld;", full);
        bchannels(e, &c, R, (int)(nvec - full));
        close_block(e);
    }
    close_block(e);
    return 1;
}

/* Zero (value) padding of H and W in the blocked layout. */
static int pad_blocked(em *e, const tether_ir_node *nd, const kargs *k) {
    int b = e->cb[nd->outputs[0]];
    if (!b) {
        return 0;
    }
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    const int64_t *p = nd->attrs.ints;
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    char v[48];
    flit(v, sizeof v, nd->attrs.value);
    line(e, "/* channel-blocked (%d) */", b);
    loop(e, "nc", x->shape[0] * x->shape[1] / b);
    line(e, "const float *restrict xp = %s + nc * %lld;", k->in[0], H * W * b);
    line(e, "float *restrict yp = %s + nc * %lld;", k->out, OH * OW * b);
    loop(e, "oh", OH);
    line(e, "float *restrict yr = yp + oh * %lld;", OW * b);
    line(e, "const int ih = oh - %lld;", (long long)p[2]);
    line(e, "if (ih < 0 || ih >= %lld) {", H);
    e->depth++;
    loop(e, "i", OW * b);
    line(e, "yr[i] = %s;", v);
    close_block(e);
    line(e, "continue;");
    close_block(e);
    if (p[3] > 0) {
        loop(e, "i", (long long)p[3] * b);
        line(e, "yr[i] = %s;", v);
        close_block(e);
    }
    line(e, "memcpy(yr + %lld, xp + ih * %lld, %lld * sizeof(float));", (long long)p[3] * b, W * b,
         W * b);
    if (p[7] > 0) {
        line(e, "for (int i = %lld; i < %lld; ++i) {", (p[3] + W) * b, OW * b);
        line(e, "    yr[i] = %s;", v);
        line(e, "}");
    }
    close_block(e);
    close_block(e);
    return 1;
}

/* Global average pooling of a blocked input (the output, one pixel, is plain). */
static int gap_blocked(em *e, const tether_ir_node *nd, const kargs *k) {
    int b = e->cb[nd->inputs[0]];
    if (!b) {
        return 0;
    }
    const tether_ir_tensor *x = T(e, nd->inputs[0]);
    long long P = x->shape[2] * x->shape[3];
    char f[48];
    flit(f, sizeof f, (float)(1.0 / (double)P));
    line(e, "/* channel-blocked (%d) */", b);
    vtypes(e, b);
    loop(e, "nc", x->shape[0] * x->shape[1] / b);
    line(e, "const float *restrict xc = %s + nc * %lld;", k->in[0], P * b);
    line(e, "tg_v acc = (tg_v){0};");
    loop(e, "i", P);
    line(e, "acc += *(const tg_vu *)(xc + i * %d);", b);
    close_block(e);
    line(e, "*(tg_vu *)(%s + nc * %d) = acc * %s;", k->out, b, f);
    close_block(e);
    return 1;
}

int tether__c_blocked_body(em *e, const tether_ir_node *nd, const kargs *k) {
    if (!e->cb) {
        return 0;
    }
    /* elementwise kernels index every operand linearly: any common layout works as it is */
    if (nd->op == TETHER_OP_CONV2D) {
        return conv_blocked(e, nd, k);
    }
    if (nd->op == TETHER_OP_PAD) {
        return pad_blocked(e, nd, k);
    }
    if (nd->op == TETHER_OP_GLOBAL_AVG_POOL) {
        return gap_blocked(e, nd, k);
    }
    return 0;
}
