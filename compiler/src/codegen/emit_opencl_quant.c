/*
 * The OpenCL backend's quantized operators (docs/quantization.md, "OpenCL"): which integer
 * tensors the backend takes (check), the packing of constant 8-bit weights into params.bin, the
 * helpers every quantized program defines (tgq_requant, tgq_div, tgq_rne), and the kernels of
 * quantize, dequantize and qmatmul (qconv: emit_opencl_qconv.c; qadd, qmul, qlut, qmax_pool,
 * qavg_pool: emit_opencl_qelt.c). Every kernel has one work-item
 * per output (qmatmul: K read 4 at a time as char4/uchar4 with vload4, int4 products), the
 * `f < total` guard and a work-group size from the device's limits.
 *
 * What must stay true: every kernel computes what the C kernels (emit_c_quant.c) and the
 * interpreter (interp_quant.c) compute, byte for byte: int32 accumulation of (x - x_zp) *
 * (w - w_zp) plus the int32 bias, tgq_requant (the integer requantization of ir/quant.c, one
 * rounding half to even of the exact 64-bit product), the clamp to the output type within the
 * node's min..max; quantize divides correctly rounded in float32 (tgq_div: OpenCL's `/` may be
 * 2.5 ulp off) and rounds half to even; dequantize subtracts in integers and multiplies once.
 * Integer tensors are never in textures or fp16 artifacts; check names the tensor or node
 * otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"

int tether__ocl_quant_op(tether_op op) {
    return op == TETHER_OP_QUANTIZE || op == TETHER_OP_DEQUANTIZE || op == TETHER_OP_QCONV ||
           op == TETHER_OP_QMATMUL || tether__ocl_qelt_op(op);
}

const char *tether__ocl_ctype(DLDataType t) {
    if (t.lanes != 1) {
        return NULL;
    }
    if (t.code == kDLFloat && t.bits == 32) {
        return "float";
    }
    if (t.code == kDLInt) {
        return t.bits == 8 ? "char" : t.bits == 16 ? "short" : t.bits == 32 ? "int" : NULL;
    }
    if (t.code == kDLUInt) {
        return t.bits == 8 ? "uchar" : t.bits == 16 ? "ushort" : t.bits == 32 ? "uint" : NULL;
    }
    return NULL;
}

/* Operators that only move elements: they run on integer tensors unchanged (typed pointers). */
/* ---- packed weights -------------------------------------------------------------------------- */

/* Whether a constant is the weight (input 1) of a qconv: then it is packed OIHW4o. */
static int qconv_weight(const ocl *e, int t) {
    for (int i = 0; i < e->g->nnodes; i++) {
        const tether_ir_node *n = &e->g->nodes[i];
        if (n->op == TETHER_OP_QCONV && n->ninputs > 1 && n->inputs[1] == t) {
            return 1;
        }
    }
    return 0;
}

int tether__ocl_quant_packed(const ocl *e, const tether_ir_node *n) {
    if ((n->op != TETHER_OP_QCONV && n->op != TETHER_OP_QMATMUL) || n->ninputs < 2 ||
        n->inputs[1] < 0) {
        return 0;
    }
    int t = n->inputs[1];
    const tether_ir_tensor *w = T(e, t);
    if (w->kind != TETHER_TENSOR_CONSTANT || w->alias_of >= 0 || !w->data) {
        return 0;
    }
    /* a constant read by both a qconv and a qmatmul is packed for the qconv */
    return n->op == TETHER_OP_QCONV || !qconv_weight(e, t);
}

size_t tether__ocl_quant_pack_bytes(const ocl *e, int t) {
    const tether_ir_tensor *w = T(e, t);
    if (qconv_weight(e, t)) {
        return (size_t)((w->shape[0] + 3) / 4 * w->shape[1] * w->shape[2] * w->shape[3] * 4);
    }
    return w->nbytes; /* qmatmul: B transposed, the same bytes */
}

void tether__ocl_quant_pack(const ocl *e, int t, unsigned char *dst) {
    const tether_ir_tensor *w = T(e, t);
    const unsigned char *src = w->data;
    if (qconv_weight(e, t)) {
        /* OIHW4o: [ceil(O/4), C/g*KH*KW, 4], zeros past O */
        int64_t O = w->shape[0], R = w->shape[1] * w->shape[2] * w->shape[3], OB = (O + 3) / 4;
        for (int64_t ob = 0; ob < OB; ob++) {
            for (int64_t r = 0; r < R; r++) {
                for (int64_t j = 0; j < 4; j++) {
                    int64_t oc = ob * 4 + j;
                    dst[(ob * R + r) * 4 + j] = oc < O ? src[oc * R + r] : 0;
                }
            }
        }
        return;
    }
    /* qmatmul's B [..., K, N] as [..., N, K]: a column's K values contiguous */
    int64_t K = w->ndim >= 2 ? w->shape[w->ndim - 2] : w->shape[0];
    int64_t N = w->ndim >= 2 ? w->shape[w->ndim - 1] : 1;
    int64_t B = K > 0 && N > 0 ? (int64_t)tether_ir_tensor_elements(w) / (K * N) : 0;
    for (int64_t b = 0; b < B; b++) {
        for (int64_t k = 0; k < K; k++) {
            for (int64_t j = 0; j < N; j++) {
                dst[b * K * N + j * K + k] = src[b * K * N + k * N + j];
            }
        }
    }
}

/* ---- helpers ----------------------------------------------------------------------------------
 */

static const char helpers[] =
    "/* Quantized operators (docs/quantization.md): the integer requantization, round half to\n"
    " * even of acc * mult / 2^(31 - shift) (one rounding of the exact 64-bit product), + zp,\n"
    " * clamped to lo..hi; the same integers as the C kernels' tgq_requant. */\n"
    "int tgq_requant(int acc, int mult, int shift, int zp, int lo, int hi) {\n"
    "    const long p = (long)acc * (long)mult;\n"
    "    const int n = 31 - shift;\n"
    "    long r;\n"
    "    if (n <= 0) {\n"
    "        r = p;\n"
    "    } else if (n >= 63) {\n"
    "        r = 0;\n"
    "    } else {\n"
    "        ulong u = (ulong)p + ((ulong)1 << 63);\n"
    "        u += (((ulong)1 << (n - 1)) - 1) + ((u >> n) & 1);\n"
    "        r = (long)(u >> n) - (long)(((ulong)1 << 63) >> n);\n"
    "    }\n"
    "    r += zp;\n"
    "    return r < lo ? lo : r > hi ? hi : (int)r;\n"
    "}\n\n"
    "/* x / s rounded to nearest even in float32, as C divides (OpenCL's `/` may be 2.5 ulp off):\n"
    " * the mantissas' quotient in integers with a guard bit and a sticky remainder. Zero,\n"
    " * infinite and NaN operands take `/` (exact there); a quotient below 2^-126 gives a signed\n"
    " * zero (quantize rounds it to 0 either way). */\n"
    "float tgq_div(float x, float s) {\n"
    "    const uint ux = as_uint(x), us = as_uint(s);\n"
    "    const uint ax = ux & 0x7fffffffu, as = us & 0x7fffffffu;\n"
    "    if (ax == 0u || as == 0u || ax >= 0x7f800000u || as >= 0x7f800000u) {\n"
    "        return x / s;\n"
    "    }\n"
    "    const uint sign = (ux ^ us) & 0x80000000u;\n"
    "    int ex = (int)(ax >> 23), es = (int)(as >> 23);\n"
    "    uint mx = ax & 0x7fffffu, ms = as & 0x7fffffu;\n"
    "    if (ex) {\n"
    "        mx |= 0x800000u;\n"
    "    } else {\n"
    "        const int z = (int)clz(mx) - 8;\n"
    "        mx <<= z;\n"
    "        ex = 1 - z;\n"
    "    }\n"
    "    if (es) {\n"
    "        ms |= 0x800000u;\n"
    "    } else {\n"
    "        const int z = (int)clz(ms) - 8;\n"
    "        ms <<= z;\n"
    "        es = 1 - z;\n"
    "    }\n"
    "    const ulong num = (ulong)mx << 25;\n"
    "    uint q = (uint)(num / ms); /* in [2^24, 2^26) */\n"
    "    uint sticky = (uint)(num - (ulong)q * ms) != 0u;\n"
    "    int k = ex - es - 25;\n"
    "    if (q >= 0x2000000u) {\n"
    "        sticky |= q & 1u;\n"
    "        q >>= 1;\n"
    "        k++;\n"
    "    }\n"
    "    uint m = q >> 1;\n"
    "    int eb = k + 151;\n"
    "    if ((q & 1u) && (sticky || (m & 1u))) {\n"
    "        m++;\n"
    "        if (m == 0x1000000u) {\n"
    "            m >>= 1;\n"
    "            eb++;\n"
    "        }\n"
    "    }\n"
    "    if (eb >= 255) {\n"
    "        return as_float(sign | 0x7f800000u);\n"
    "    }\n"
    "    if (eb <= 0) {\n"
    "        return as_float(sign);\n"
    "    }\n"
    "    return as_float(sign | ((uint)eb << 23) | (m & 0x7fffffu));\n"
    "}\n\n"
    "/* round half to even of a float (|v| clamped to 2^30), as the C kernels' tgq_rne */\n"
    "int tgq_rne(float v) {\n"
    "    if (v >= 1073741824.0f) {\n"
    "        return 1073741824;\n"
    "    }\n"
    "    if (v <= -1073741824.0f) {\n"
    "        return -1073741824;\n"
    "    }\n"
    "    int i = (int)v;\n"
    "    const float fr = v - (float)i;\n"
    "    if (fr > 0.5f || (fr == 0.5f && (i & 1))) {\n"
    "        i++;\n"
    "    } else if (fr < -0.5f || (fr == -0.5f && (i & 1))) {\n"
    "        i--;\n"
    "    }\n"
    "    return i;\n"
    "}\n\n";

void tether__ocl_quant_helpers(const ocl *e, tether__sbuf *src) {
    for (int i = 0; i < e->g->nnodes; i++) {
        if (tether__ocl_quant_op(e->g->nodes[i].op)) {
            tether__sbuf_puts(src, helpers);
            tether__ocl_qelt_helpers(e, src);
            return;
        }
    }
}

/* ---- shared pieces of the kernels -------------------------------------------------------------
 */

void tether__ocl_qparam(const ocl *e, const tether_ir_node *n, int i, const char *c, char *out,
                        size_t cap) {
    if (i >= n->ninputs || n->inputs[i] < 0) {
        snprintf(out, cap, "0");
        return;
    }
    snprintf(out, cap, "(int)%s[%s]", in_name(i),
             tether_ir_tensor_elements(T(e, n->inputs[i])) == 1 ? "0" : c);
}

void tether__ocl_qclamp(const tether_ir_node *n, DLDataType t, long long *lo, long long *hi) {
    int64_t l, h;
    if (!tether__quant_range(t, &l, &h)) {
        l = INT32_MIN;
        h = INT32_MAX;
    }
    if (n->attrs.min > (float)l) {
        l = (int64_t)n->attrs.min + ((float)(int64_t)n->attrs.min < n->attrs.min);
    }
    if (n->attrs.max < (float)h) {
        h = (int64_t)n->attrs.max - ((float)(int64_t)n->attrs.max > n->attrs.max);
    }
    *lo = (long long)l;
    *hi = (long long)h;
}

void tether__ocl_qstore_expr(const ocl *e, const tether_ir_node *n, const char *acc, const char *c,
                             char *out, size_t cap) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    if (n->ninputs <= 5 || n->inputs[5] < 0) {
        snprintf(out, cap, "%s", acc); /* int32: the accumulator */
        return;
    }
    long long lo, hi;
    tether__ocl_qclamp(n, y->dtype, &lo, &hi);
    const char *row = T(e, n->inputs[5])->shape[0] == 1 ? "0" : c;
    char yz[96];
    tether__ocl_qparam(e, n, 6, "0", yz, sizeof yz);
    snprintf(out, cap, "(%s)tgq_requant(%s, in5[2 * (%s)], in5[2 * (%s) + 1], %s, %lld, %lld)",
             tether__ocl_ctype(y->dtype), acc, row, row, yz, lo, hi);
}

/* One work-item per output, work-groups of the tuned size, --local-size or 64, within the
 * device's limit. */
void tether__ocl_qsize(const ocl *e, const tether_schedule *ns, int64_t total, tether__ocl_gpu *p) {
    int64_t mx = e->o->max_work_group_size > 0 ? e->o->max_work_group_size : 256;
    int64_t wg = ns && ns->local_size > 0 ? ns->local_size : e->local;
    wg = wg > mx ? mx : wg;
    p->kind = TETHER__OCL_GPU_QUANT;
    p->total = total;
    p->local = total >= wg ? wg : 0;
    p->global = p->local ? (total + wg - 1) / wg * wg : total;
}

/* ---- quantize / dequantize ------------------------------------------------------------------- */

static void body_qdq(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *s = T(e, n->inputs[1]),
                           *y = T(e, n->outputs[0]);
    long long ch = 1, inner = 1;
    if (tether_ir_tensor_elements(s) > 1) {
        int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
        ch = x->shape[ax];
        inner = prod(x->shape, ax + 1, x->ndim);
    }
    if (ch > 1) {
        line(e, "const int c = (f / %lld) %% %lld;", inner, ch);
    } else {
        line(e, "const int c = 0;");
    }
    char zp[96];
    tether__ocl_qparam(e, n, 2, "c", zp, sizeof zp);
    if (n->op == TETHER_OP_DEQUANTIZE) {
        line(e, "y[f] = (float)((long)in0[f] - %s) * in1[c];", zp);
        return;
    }
    int64_t lo = 0, hi = 0;
    tether__quant_range(y->dtype, &lo, &hi);
    line(e, "const float q = tgq_div(in0[f], in1[c]);");
    line(e, "const int v = q != q ? %s : tgq_rne(q) + %s;", zp, zp);
    line(e, "y[f] = (%s)(v < %lld ? %lld : v > %lld ? %lld : v);", tether__ocl_ctype(y->dtype),
         (long long)lo, (long long)lo, (long long)hi, (long long)hi);
}

/* ---- qmatmul ----------------------------------------------------------------------------------
 */

/* `name = ` the element offset of batch `bt`'s matrix in t (broadcast against the batch shape of
 * the output, as emit_c_quant.c's offset tables). */
static void batch_offset(ocl *e, const char *name, const int64_t *bshape, int nb,
                         const tether_ir_tensor *t, int64_t mat) {
    int tb = t->ndim - 2;
    char ex[1024];
    size_t o = 0;
    ex[0] = 0;
    int64_t stride = mat, div = 1;
    for (int d = nb - 1; d >= 0; d--) {
        int td = d - (nb - tb);
        if (td >= 0 && t->shape[td] != 1 && o < sizeof ex) {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%s(bt / %lld %% %lld) * %lld",
                                  o ? " + " : "", (long long)div, (long long)bshape[d],
                                  (long long)stride);
        }
        if (td >= 0) {
            stride *= t->shape[td];
        }
        div *= bshape[d];
    }
    line(e, "const int %s = %s;", name, o ? ex : "0");
}

static void body_qmatmul(ocl *e, const tether_ir_node *n, const kern *k) {
    tether_ir_tensor av, bv, yv;
    tether__ir_matmul_view(e->g, n, &av, &bv, &yv);
    int nb = yv.ndim - 2;
    long long M = yv.shape[nb], N = yv.shape[nb + 1], K = av.shape[av.ndim - 1];
    const char *at = tether__ocl_ctype(T(e, n->inputs[0])->dtype);
    const char *bt = tether__ocl_ctype(T(e, n->inputs[1])->dtype);
    line(e, "const int j = f %% %lld;", N);
    line(e, "const int i = (f / %lld) %% %lld;", N, M);
    line(e, "const int bt = f / %lld;", M * N);
    line(e, "(void)bt;");
    batch_offset(e, "aoff", yv.shape, nb, &av, M * K);
    batch_offset(e, "boff", yv.shape, nb, &bv, K * N);
    char az[96], bz[96], bias[96], st[512];
    tether__ocl_qparam(e, n, 3, "i", az, sizeof az);
    tether__ocl_qparam(e, n, 4, "j", bz, sizeof bz);
    tether__ocl_qparam(e, n, 2, "j", bias, sizeof bias);
    line(e, "const int az = %s, bz = %s;", az, bz);
    line(e, "const __global %s *ar = in0 + aoff + i * %lld;", at, K);
    line(e, "int acc = %s;", bias);
    if (k->packed) {
        /* B transposed at compile time: column j's K values contiguous, 4 at a time */
        line(e, "const __global %s *bc = wp + boff + j * %lld;", bt, K);
        line(e, "int4 acc4 = (int4)(0);");
        line(e, "int kk = 0;");
        open_block(e, "for (; kk + 4 <= %lld; kk += 4)", K);
        line(e, "const int4 a4 = convert_int4(vload4(0, ar + kk)) - az;");
        line(e, "const int4 b4 = convert_int4(vload4(0, bc + kk)) - bz;");
        line(e, "acc4 += a4 * b4;");
        close_block(e);
        line(e, "acc += acc4.s0 + acc4.s1 + acc4.s2 + acc4.s3;");
        open_block(e, "for (; kk < %lld; kk++)", K);
        line(e, "acc += ((int)ar[kk] - az) * ((int)bc[kk] - bz);");
        close_block(e);
    } else {
        line(e, "const __global %s *bb = in1 + boff + j;", bt);
        open_block(e, "for (int kk = 0; kk < %lld; kk++)", K);
        line(e, "acc += ((int)ar[kk] - az) * ((int)bb[kk * %lld] - bz);", N);
        close_block(e);
    }
    tether__ocl_qstore_expr(e, n, "acc", "j", st, sizeof st);
    line(e, "y[f] = %s;", st);
}

/* ---- plan and body ----------------------------------------------------------------------------
 */

int tether__ocl_quant_plan(const ocl *e, const tether_ir_node *n, const kern *k,
                           const tether_schedule *ns, tether__ocl_gpu *p) {
    memset(p, 0, sizeof *p);
    if (n->op == TETHER_OP_QCONV) {
        return tether__ocl_qconv_plan(e, n, k, ns, p);
    }
    if (tether__ocl_qelt_op(n->op)) {
        return tether__ocl_qelt_plan(e, n, ns, p);
    }
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    tether__ocl_qsize(e, ns, (int64_t)tether_ir_tensor_elements(y), p);
    if (n->op == TETHER_OP_QMATMUL) {
        tether_ir_tensor av, bv, yv;
        tether__ir_matmul_view(e->g, n, &av, &bv, &yv);
        int64_t K = av.shape[av.ndim - 1];
        p->serial = k->packed ? (K + 3) / 4 : K;
        snprintf(p->why, sizeof p->why,
                 "integer matmul: one output per work-item, %s, int32 accumulation",
                 k->packed ? "K read 4 at a time (vload4, B transposed in params.bin, int4 "
                             "products)"
                           : "B read by column");
    } else {
        p->serial = 1;
        snprintf(p->why, sizeof p->why, "%s: one element per work-item",
                 n->op == TETHER_OP_QUANTIZE ? "quantize (correctly rounded division)"
                                             : "dequantize");
    }
    return 1;
}

void tether__ocl_quant_body(ocl *e, const tether_ir_node *n, const kern *k,
                            const tether__ocl_gpu *p) {
    if (n->op == TETHER_OP_QCONV) {
        tether__ocl_qconv_body(e, n, k, p);
    } else if (n->op == TETHER_OP_QMATMUL) {
        body_qmatmul(e, n, k);
    } else if (tether__ocl_qelt_op(n->op)) {
        tether__ocl_qelt_body(e, n);
    } else {
        body_qdq(e, n);
    }
}
