/*
 * The C emitter's integer elementwise and pooling operators (docs/quantization.md "Integer
 * elementwise and pooling operators"): qadd, qmul (numpy broadcasting, coalesced loops), qlut (a
 * 256-entry table), qmax_pool, qavg_pool, in portable C99, and tgq_rsh, the rounding shift they
 * share. The constant parameters of qadd/qmul are written as literals (the shift a constant).
 *
 * What must stay true: every kernel computes what interp_qelt.c computes, byte for byte, with
 * integer arithmetic only (no float type, literal or call: test_quant_elt checks the text and the
 * Cortex-M3 object's undefined symbols).
 */
#include <stdio.h>
#include <string.h>

#include "emit_c_internal.h"
#include "tether/crt/dtype.h"

static const char qelt_helpers[] =
    "/* round half to even of v / 2^n (1 <= n <= 62), integers only (docs/quantization.md) */\n"
    "static inline int64_t tgq_rsh(int64_t v, int n) {\n"
    "    const int64_t r = v >> n;\n"
    "    const int64_t rem = (int64_t)((uint64_t)v & (((uint64_t)1 << n) - 1u));\n"
    "    const int64_t half = (int64_t)1 << (n - 1);\n"
    "    return r + (rem > half || (rem == half && (r & 1)));\n"
    "}\n"
    "static inline int32_t tgq_clamp64(int64_t v, int32_t lo, int32_t hi) {\n"
    "    return v < lo ? lo : v > hi ? hi : (int32_t)v;\n"
    "}\n\n";

void tether__c_qelt_helpers(tether__sbuf *out) {
    tether__sbuf_puts(out, qelt_helpers);
}

/* Coalesced loops over output y with the element offsets of inputs a and b (numpy broadcasting):
 * opens the loops, leaving `ao`, `bo` and `f` defined. Returns the loop count. */
static int bcast_loops(em *e, const tether_ir_tensor *y, const tether_ir_tensor *a,
                       const tether_ir_tensor *b) {
    int64_t ext[TETHER_IR_MAX_NDIM], sa[TETHER_IR_MAX_NDIM], sb[TETHER_IR_MAX_NDIM];
    int nd = 0;
    int64_t stra = 1, strb = 1, rsa[TETHER_IR_MAX_NDIM], rsb[TETHER_IR_MAX_NDIM];
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
            ext[nd - 1] *= y->shape[d]; /* merges with the outer dimension */
            sa[nd - 1] = rsa[d];
            sb[nd - 1] = rsb[d];
            continue;
        }
        ext[nd] = y->shape[d];
        sa[nd] = rsa[d];
        sb[nd] = rsb[d];
        nd++;
    }
    line(e, "size_t f = 0;");
    line(e, "{");
    e->depth++;
    line(e, "const size_t ao0 = 0, bo0 = 0;");
    for (int d = 0; d < nd; d++) {
        line(e, "for (size_t i%d = 0; i%d < %lld; ++i%d) {", d, d, (long long)ext[d], d);
        e->depth++;
        line(e, "const size_t ao%d = ao%d + i%d * %lld, bo%d = bo%d + i%d * %lld;", d + 1, d, d,
             (long long)sa[d], d + 1, d, d, (long long)sb[d]);
    }
    line(e, "const size_t ao = ao%d, bo = bo%d;", nd, nd);
    return nd + 1;
}

static void k_binary(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_tensor *a = T(e, nd->inputs[0]), *b = T(e, nd->inputs[1]),
                           *y = T(e, nd->outputs[0]);
    const int32_t *p = T(e, nd->inputs[2])->data;
    if (tether__c_qbin_x86(e, nd, k)) {
        return; /* emit_c_qelt_x86.c: no broadcasting, 8-bit: AVX2 steps, then this loop's form */
    }
    line(e, "(void)%s; /* its values are the literals below */", k->in[2]);
    int loops = bcast_loops(e, y, a, b);
    line(e, "const int32_t a = (int32_t)%s[ao] - %ld, b = (int32_t)%s[bo] - %ld;", k->in[0],
         (long)p[0], k->in[1], (long)p[1]);
    if (nd->op == TETHER_OP_QADD) {
        line(e, "const int64_t v = (int64_t)a * %ld + (int64_t)b * %ld;", (long)p[3], (long)p[4]);
    } else {
        line(e, "const int64_t v = (int64_t)(a * b) * %ld;", (long)p[3]);
    }
    line(e, "%s[f++] = (%s)tgq_clamp64(tgq_rsh(v, %ld) + %ld, %ld, %ld);", k->out,
         tether__c_type(y->dtype), (long)p[5], (long)p[2], (long)p[6], (long)p[7]);
    for (int i = 0; i < loops; i++) {
        close_block(e);
    }
}

static void k_pool(em *e, const tether_ir_node *nd, const kargs *k) {
    const tether_ir_attrs *a = &nd->attrs;
    const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
    long long NC = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    long long OH = y->shape[2], OW = y->shape[3], KH = a->kernel[0], KW = a->kernel[1];
    long long SH = a->strides[0], SW = a->strides[1], DH = a->dilations[0], DW = a->dilations[1];
    long long PT = a->pads[0], PL = a->pads[1], PB = a->pads[2], PR = a->pads[3];
    int avg = nd->op == TETHER_OP_QAVG_POOL;
    const char *yt = tether__c_type(y->dtype);
    loop(e, "nc", NC);
    line(e, "const %s *restrict xp = %s + nc * %lld;", ctype(e, nd->inputs[0]), k->in[0], H * W);
    line(e, "%s *restrict yp = %s + nc * %lld;", yt, k->out, OH * OW);
    loop(e, "oh", OH);
    loop(e, "ow", OW);
    line(e, "int32_t acc = %d, cnt = 0, cnt_pad = 0;", avg || x->dtype.code != kDLInt ? 0 : -128);
    loop(e, "kh", KH);
    line(e, "const int ih = oh * %lld - %lld + kh * %lld;", SH, PT, DH);
    loop(e, "kw", KW);
    line(e, "const int iw = ow * %lld - %lld + kw * %lld;", SW, PL, DW);
    if (avg && a->count_include_pad) {
        line(e, "cnt_pad += ih < %lld && iw < %lld;", H + PB, W + PR);
    }
    line(e, "if (ih >= 0 && ih < %lld && iw >= 0 && iw < %lld) {", H, W);
    e->depth++;
    line(e, "const int32_t v = xp[ih * %lld + iw];", W);
    if (avg) {
        line(e, "acc += v - %s[0];", k->in[1]);
        line(e, "cnt++;");
    } else {
        line(e, "acc = v > acc ? v : acc;");
    }
    close_block(e);
    close_block(e);
    close_block(e);
    if (avg) {
        line(e, "(void)%s;", a->count_include_pad ? "cnt" : "cnt_pad");
        line(e, "const int32_t c = (%s) - 1;", a->count_include_pad ? "cnt_pad" : "cnt");
        line(e,
             "yp[oh * %lld + ow] = (%s)tgq_requant(acc, %s[4 + 2 * c], %s[5 + 2 * c], %s[1], "
             "%s[2], %s[3]);",
             OW, yt, k->in[1], k->in[1], k->in[1], k->in[1], k->in[1]);
    } else {
        line(e, "(void)cnt;");
        line(e, "(void)cnt_pad;");
        line(e, "yp[oh * %lld + ow] = (%s)acc;", OW, yt);
    }
    close_block(e);
    close_block(e);
    close_block(e);
}

void tether__c_qelt_body(em *e, const tether_ir_node *nd, const kargs *k) {
    if (nd->op == TETHER_OP_QADD || nd->op == TETHER_OP_QMUL) {
        k_binary(e, nd, k);
    } else if (nd->op == TETHER_OP_QLUT) {
        const tether_ir_tensor *x = T(e, nd->inputs[0]), *y = T(e, nd->outputs[0]);
        loop(e, "f", (int64_t)tether_ir_tensor_elements(y));
        line(e, "%s[f] = %s[(int32_t)%s[f]%s];", k->out, k->in[1], k->in[0],
             x->dtype.code == kDLInt ? " + 128" : "");
        close_block(e);
    } else {
        k_pool(e, nd, k);
    }
}
