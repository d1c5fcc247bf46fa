/*
 * The OpenCL backend's integer elementwise and pooling operators (docs/quantization.md "Integer
 * elementwise and pooling operators", "OpenCL"): qadd and qmul (numpy broadcasting: each
 * input's element offset from the output index over the coalesced dimensions; the constant
 * parameters written as literals), qlut (the 256-entry table read from params.bin), qmax_pool and
 * qavg_pool (any window, stride, dilation, padding, ceil_mode, count_include_pad), and tgq_rsh,
 * the rounding shift of qadd/qmul. One work-item per output, the `f < total` guard of the caller
 * and a work-group size from the device's limits (tether__ocl_qsize).
 *
 * What must stay true: every kernel computes what the C kernels (emit_c_qelt.c) and the
 * interpreter (interp_qelt.c) compute, byte for byte: the same integer expressions in 64-bit
 * `long` (standard OpenCL C), the floor of v / 2^n taken on the offset unsigned value (a signed
 * right shift is not relied upon), qavg_pool's requantization by tgq_requant of
 * emit_opencl_quant.c with the pair of its window count, no float arithmetic.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"

int tether__ocl_qelt_op(tether_op op) {
    return op == TETHER_OP_QADD || op == TETHER_OP_QMUL || op == TETHER_OP_QLUT ||
           op == TETHER_OP_QMAX_POOL || op == TETHER_OP_QAVG_POOL;
}

static const char qelt_helpers[] =
    "/* round half to even of v / 2^n (1 <= n <= 62), integers only, as the C kernels' tgq_rsh:\n"
    " * the floor from the value offset by 2^63 (no signed right shift), then the remainder. */\n"
    "long tgq_rsh(long v, int n) {\n"
    "    const long r = (long)(((ulong)v + ((ulong)1 << 63)) >> n) - (long)(((ulong)1 << 63) >> "
    "n);\n"
    "    const long rem = (long)((ulong)v & (((ulong)1 << n) - 1));\n"
    "    const long hf = (long)1 << (n - 1);\n"
    "    return r + (rem > hf || (rem == hf && (r & 1)));\n"
    "}\n"
    "int tgq_clamp64(long v, int lo, int hi) {\n"
    "    return v < lo ? lo : v > hi ? hi : (int)v;\n"
    "}\n\n";

void tether__ocl_qelt_helpers(const ocl *e, tether__sbuf *src) {
    for (int i = 0; i < e->g->nnodes; i++) {
        if (e->g->nodes[i].op == TETHER_OP_QADD || e->g->nodes[i].op == TETHER_OP_QMUL) {
            tether__sbuf_puts(src, qelt_helpers);
            return;
        }
    }
}

/* ---- qadd, qmul -------------------------------------------------------------------------------
 */

/* `const int ao, bo`: the element offsets of inputs a and b for output index f (numpy
 * broadcasting over y's shape, dimensions of extent 1 dropped and neighbours coalesced as
 * emit_c_qelt.c's loops do). */
static void bcast_offsets(ocl *e, const tether_ir_tensor *y, const tether_ir_tensor *a,
                          const tether_ir_tensor *b) {
    int64_t ext[TETHER_IR_MAX_NDIM], sa[TETHER_IR_MAX_NDIM], sb[TETHER_IR_MAX_NDIM];
    int64_t rsa[TETHER_IR_MAX_NDIM], rsb[TETHER_IR_MAX_NDIM], stra = 1, strb = 1;
    int nd = 0;
    for (int d = y->ndim - 1; d >= 0; d--) { /* each input's stride along output dim d */
        int da = d - (y->ndim - a->ndim), db = d - (y->ndim - b->ndim);
        int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        rsa[d] = ea == 1 ? 0 : stra;
        rsb[d] = eb == 1 ? 0 : strb;
        stra *= ea;
        strb *= eb;
    }
    for (int d = 0; d < y->ndim; d++) {
        if (y->shape[d] == 1) {
            continue;
        }
        if (nd > 0 && sa[nd - 1] == rsa[d] * y->shape[d] && sb[nd - 1] == rsb[d] * y->shape[d]) {
            ext[nd - 1] *= y->shape[d];
            sa[nd - 1] = rsa[d];
            sb[nd - 1] = rsb[d];
            continue;
        }
        ext[nd] = y->shape[d];
        sa[nd] = rsa[d];
        sb[nd] = rsb[d];
        nd++;
    }
    char ea[1024], eb[1024];
    size_t oa = 0, ob = 0;
    long long inner = 1;
    for (int d = nd - 1; d >= 0; d--) {
        char idx[96];
        snprintf(idx, sizeof idx, "(f / %lld %% %lld)", inner, (long long)ext[d]);
        if (d == 0) { /* the outermost: no modulo (f < total) */
            snprintf(idx, sizeof idx, "(f / %lld)", inner);
        }
        if (sa[d] && oa < sizeof ea) {
            oa += (size_t)snprintf(ea + oa, sizeof ea - oa, "%s%s * %lld", oa ? " + " : "", idx,
                                   (long long)sa[d]);
        }
        if (sb[d] && ob < sizeof eb) {
            ob += (size_t)snprintf(eb + ob, sizeof eb - ob, "%s%s * %lld", ob ? " + " : "", idx,
                                   (long long)sb[d]);
        }
        inner *= ext[d];
    }
    line(e, "const int ao = %s;", oa ? ea : "0");
    line(e, "const int bo = %s;", ob ? eb : "0");
}

static void body_binary(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *a = T(e, n->inputs[0]), *b = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    const int32_t *p = T(e, n->inputs[2])->data;
    bcast_offsets(e, y, a, b);
    line(e, "const int a = (int)in0[ao] - (%ld), b = (int)in1[bo] - (%ld);", (long)p[0],
         (long)p[1]);
    if (n->op == TETHER_OP_QADD) {
        line(e, "const long v = (long)a * (%ldL) + (long)b * (%ldL);", (long)p[3], (long)p[4]);
    } else {
        line(e, "const long v = (long)(a * b) * (%ldL);", (long)p[3]);
    }
    line(e, "y[f] = (%s)tgq_clamp64(tgq_rsh(v, %ld) + (%ld), %ld, %ld);",
         tether__ocl_ctype(y->dtype), (long)p[5], (long)p[2], (long)p[6], (long)p[7]);
}

/* ---- qlut ------------------------------------------------------------------------------------ */

static void body_lut(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]);
    line(e, "y[f] = in1[(int)in0[f]%s];", x->dtype.code == kDLInt ? " + 128" : "");
}

/* ---- qmax_pool, qavg_pool ---------------------------------------------------------------------
 */

static void body_pool(ocl *e, const tether_ir_node *n) {
    const tether_ir_attrs *a = &n->attrs;
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    long long H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    long long KH = a->kernel[0], KW = a->kernel[1], SH = a->strides[0], SW = a->strides[1];
    long long DH = a->dilations[0], DW = a->dilations[1];
    long long PT = a->pads[0], PL = a->pads[1], PB = a->pads[2], PR = a->pads[3];
    int avg = n->op == TETHER_OP_QAVG_POOL;
    const char *xt = tether__ocl_ctype(x->dtype), *yt = tether__ocl_ctype(y->dtype);
    line(e, "const int ow = f %% %lld;", OW);
    line(e, "const int oh = (f / %lld) %% %lld;", OW, OH);
    line(e, "const int nc = f / %lld;", OH * OW);
    line(e, "const __global %s *xp = in0 + nc * %lld;", xt, H * W);
    line(e, "int acc = %d, cnt = 0, cnt_pad = 0;", avg || x->dtype.code != kDLInt ? 0 : -128);
    open_block(e, "for (int kh = 0; kh < %lld; kh++)", KH);
    line(e, "const int ih = oh * %lld - %lld + kh * %lld;", SH, PT, DH);
    open_block(e, "for (int kw = 0; kw < %lld; kw++)", KW);
    line(e, "const int iw = ow * %lld - %lld + kw * %lld;", SW, PL, DW);
    if (avg && a->count_include_pad) {
        line(e, "cnt_pad += ih < %lld && iw < %lld;", H + PB, W + PR);
    }
    open_block(e, "if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld)", H, W);
    line(e, "const int v = xp[ih * %lld + iw];", W);
    if (avg) {
        line(e, "acc += v - in1[0];");
        line(e, "cnt++;");
    } else {
        line(e, "acc = v > acc ? v : acc;");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    if (avg) {
        line(e, "(void)%s;", a->count_include_pad ? "cnt" : "cnt_pad");
        line(e, "const int c = (%s) - 1;", a->count_include_pad ? "cnt_pad" : "cnt");
        line(e,
             "y[f] = (%s)tgq_requant(acc, in1[4 + 2 * c], in1[5 + 2 * c], in1[1], in1[2], "
             "in1[3]);",
             yt);
    } else {
        line(e, "(void)cnt;");
        line(e, "(void)cnt_pad;");
        line(e, "y[f] = (%s)acc;", yt);
    }
}

/* ---- plan and body ----------------------------------------------------------------------------
 */

int tether__ocl_qelt_plan(const ocl *e, const tether_ir_node *n, const tether_schedule *ns,
                          tether__ocl_gpu *p) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    tether__ocl_qsize(e, ns, (int64_t)tether_ir_tensor_elements(y), p);
    if (n->op == TETHER_OP_QADD || n->op == TETHER_OP_QMUL) {
        p->serial = 1;
        snprintf(p->why, sizeof p->why,
                 "integer %s: one element per work-item, broadcast offsets, 64-bit rounding shift",
                 n->op == TETHER_OP_QADD ? "add" : "mul");
    } else if (n->op == TETHER_OP_QLUT) {
        p->serial = 1;
        snprintf(p->why, sizeof p->why, "integer table lookup: one element per work-item");
    } else {
        p->serial = (int64_t)n->attrs.kernel[0] * n->attrs.kernel[1];
        snprintf(p->why, sizeof p->why, "integer %s pool: one output per work-item",
                 n->op == TETHER_OP_QMAX_POOL ? "max" : "average");
    }
    return 1;
}

void tether__ocl_qelt_body(ocl *e, const tether_ir_node *n) {
    if (n->op == TETHER_OP_QADD || n->op == TETHER_OP_QMUL) {
        body_binary(e, n);
    } else if (n->op == TETHER_OP_QLUT) {
        body_lut(e, n);
    } else {
        body_pool(e, n);
    }
}
