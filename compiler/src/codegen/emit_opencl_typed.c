/*
 * The OpenCL backend's element types (docs/codegen.md, "OpenCL element types"): the kernels of
 * nodes that touch a tensor other than float32 (elementwise, comparisons, logic, Cast, Where and
 * the data-movement operators on bool, int8..int64, uint8..uint64, float16, bfloat16 and float64)
 * and of the indexing operators on any type (Gather, GatherElements, Slice, Tile); the OpenCL C
 * type each element type is stored in; the conversion and integer helpers written ahead of the
 * kernels; the refusal of a type the device cannot run.
 *
 * What must stay true: integer and bool arithmetic is the interpreter's (the ops.def IFORMULA
 * column through the same tgi_ helpers as generated C, a float -> integer store is NaN 0,
 * truncated, saturated); float16 and bfloat16 are storage only (vload_half/vstore_half_rte and
 * bit shifts, arithmetic in float: no cl_khr_fp16 needed); float64 needs cl_khr_fp64, refused at
 * compile time naming the tensor when the options say the device lacks it, and otherwise an
 * #error naming it in the device's build when the device's compiler does not define it; a graph
 * of float32 tensors only gets exactly the kernels it had before (nothing here is written).
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "emit_opencl_internal.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

int tether__ocl_typed_graph(const tether_ir_graph *g) {
    for (int i = 0; i < g->ntensors; i++) {
        if (!tether_dtype_equal(g->tensors[i].dtype, TETHER_FLOAT32)) {
            return 1;
        }
    }
    return 0;
}

static int is_f16(DLDataType t) {
    return t.code == kDLFloat && t.bits == 16 && t.lanes == 1;
}

static int is_bf16(DLDataType t) {
    return t.code == kDLBfloat && t.bits == 16 && t.lanes == 1;
}

static int is_f64(DLDataType t) {
    return t.code == kDLFloat && t.bits == 64 && t.lanes == 1;
}

const char *tether__ocl_store_type(DLDataType t) {
    if (t.lanes != 1) {
        return NULL;
    }
    if (tether__dtype_is_bool(t)) {
        return "uchar";
    }
    static const char *const s[4] = {"char", "short", "int", "long"};
    static const char *const u[4] = {"uchar", "ushort", "uint", "ulong"};
    int k = t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 3 : -1;
    switch (t.code) {
    case kDLInt:
        return k >= 0 ? s[k] : NULL;
    case kDLUInt:
        return k >= 0 ? u[k] : NULL;
    case kDLFloat:
        return t.bits == 32 ? "float" : t.bits == 64 ? "double" : t.bits == 16 ? "ushort" : NULL;
    case kDLBfloat:
        return t.bits == 16 ? "ushort" : NULL;
    default:
        return NULL;
    }
}

int tether__ocl_typed_check(const tether_ir_graph *g, const tether_opencl_options *o) {
    for (int i = 0; i < g->ntensors; i++) {
        const tether_ir_tensor *t = &g->tensors[i];
        if (!tether__ocl_store_type(t->dtype)) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "tensor '%s' has element type %s, which the OpenCL backend "
                                    "does not store (compile with --backend c)",
                                    t->name, tether__dtype_str(t->dtype));
        }
        if (is_f64(t->dtype) && o->fp64 < 0) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "tensor '%s' is float64: the device lacks the OpenCL "
                                    "extension cl_khr_fp64 (compile with --backend c, or cast "
                                    "the model to float32)",
                                    t->name);
        }
    }
    if (o->fp16 && tether__ocl_typed_graph(g)) {
        for (int i = 0; i < g->ntensors; i++) {
            if (!tether_dtype_equal(g->tensors[i].dtype, TETHER_FLOAT32)) {
                return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                        "--precision fp16: tensor '%s' has element type %s; "
                                        "half precision artifacts hold float32 graphs only "
                                        "(compile without --precision fp16)",
                                        g->tensors[i].name, tether__dtype_str(g->tensors[i].dtype));
            }
        }
    }
    return TETHER_OK;
}

static int touches_typed(const tether_ir_graph *g, const tether_ir_node *n) {
    for (int j = 0; j < n->ninputs; j++) {
        if (n->inputs[j] >= 0 &&
            !tether_dtype_equal(g->tensors[n->inputs[j]].dtype, TETHER_FLOAT32)) {
            return 1;
        }
    }
    for (int j = 0; j < n->noutputs; j++) {
        if (n->outputs[j] >= 0 &&
            !tether_dtype_equal(g->tensors[n->outputs[j]].dtype, TETHER_FLOAT32)) {
            return 1;
        }
    }
    return 0;
}

int tether__ocl_typed_owns(const tether_ir_graph *g, const tether_ir_node *n) {
    if (n->noutputs != 1) {
        return 0;
    }
    switch ((int)n->op) {
        TETHER__CASES_UNARY
        TETHER__CASES_BINARY
        /* an epilogue (fused activation, residual) stays with the float32 kernels */
        return touches_typed(g, n) && n->attrs.act == TETHER_ACT_NONE &&
               n->ninputs == tether__ir_main_inputs(n) && n->op != TETHER_OP_PRELU;
    case TETHER_OP_WHERE:
    case TETHER_OP_GATHER:
    case TETHER_OP_GATHER_ELEMENTS:
    case TETHER_OP_SLICE:
    case TETHER_OP_TILE:
        return 1;
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
    case TETHER_OP_TRANSPOSE:
    case TETHER_OP_CONCAT:
    case TETHER_OP_PAD:
        return touches_typed(g, n);
    default:
        return tether__ocl_index_owns(g, n);
    }
}

/* ---- the prelude ---------------------------------------------------------------------------- */

static const char conv_helpers[] =
    "typedef char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long int64_t;\n"
    "typedef uchar uint8_t;\ntypedef ushort uint16_t;\ntypedef uint uint32_t;\n"
    "typedef ulong uint64_t;\n\n"
    "static inline float tg_bf16_load(ushort h) {\n    return as_float((uint)h << 16);\n}\n\n"
    "/* round to nearest even; NaN stays a quiet NaN */\n"
    "static inline ushort tg_bf16_store(float f) {\n"
    "    uint b = as_uint(f);\n"
    "    if (f != f) {\n        return (ushort)((b >> 16) | 0x40u);\n    }\n"
    "    b += 0x7fffu + ((b >> 16) & 1u);\n"
    "    return (ushort)(b >> 16);\n}\n\n";

/* float (and with fp64 double) to integer type t: NaN 0, truncated, saturated. */
static void sat_helpers(tether__sbuf *s, DLDataType t, int fp64) {
    static const struct {
        uint8_t code, bits;
        const char *lo, *hi, *ilo, *ihi;
    } lim[] = {
        {kDLInt, 8, "-128.0", "127.0", "-128", "127"},
        {kDLInt, 16, "-32768.0", "32767.0", "-32768", "32767"},
        {kDLInt, 32, "-2147483648.0", "2147483647.0", "(-2147483647 - 1)", "2147483647"},
        {kDLInt, 64, "-9223372036854775808.0", "9223372036854775807.0",
         "(-9223372036854775807L - 1)", "9223372036854775807L"},
        {kDLUInt, 8, "0.0", "255.0", "0", "255u"},
        {kDLUInt, 16, "0.0", "65535.0", "0", "65535u"},
        {kDLUInt, 32, "0.0", "4294967295.0", "0", "4294967295u"},
        {kDLUInt, 64, "0.0", "18446744073709551615.0", "0", "18446744073709551615UL"},
    };
    const char *T = tether__ocl_store_type(t), *n = tether__dtype_str(t);
    for (size_t i = 0; i < sizeof lim / sizeof *lim; i++) {
        if (lim[i].code != t.code || lim[i].bits != t.bits) {
            continue;
        }
        tether__sbuf_printf(s,
                            "static inline %s tg_sat_%s(float v) {\n"
                            "    return v != v ? 0 : v <= %sf ? %s : v >= %sf ? %s : (%s)v;\n"
                            "}\n\n",
                            T, n, lim[i].lo, lim[i].ilo, lim[i].hi, lim[i].ihi, T);
        if (fp64) {
            tether__sbuf_printf(s,
                                "static inline %s tg_satd_%s(double v) {\n"
                                "    return v != v ? 0 : v <= %s ? %s : v >= %s ? %s : (%s)v;\n"
                                "}\n\n",
                                T, n, lim[i].lo, lim[i].ilo, lim[i].hi, lim[i].ihi, T);
        }
    }
}

void tether__ocl_typed_prelude(const tether_ir_graph *g, tether__sbuf *src) {
    if (!tether__ocl_typed_graph(g)) {
        return;
    }
    int fp64 = 0;
    for (int i = 0; i < g->ntensors; i++) {
        if (is_f64(g->tensors[i].dtype) && !fp64) {
            fp64 = 1;
            tether__sbuf_printf(src,
                                "#ifndef cl_khr_fp64\n#error \"tether: tensor '%s' is float64: "
                                "the device lacks the OpenCL extension cl_khr_fp64\"\n#endif\n"
                                "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
                                tether__cg_comment_text(g->tensors[i].name));
        }
    }
    tether__sbuf_puts(src, "/* Element types (docs/codegen.md, \"OpenCL element types\"). */\n");
    tether__sbuf_puts(src, conv_helpers);
    static const DLDataType ints[] = {
        {kDLInt, 8, 1},  {kDLInt, 16, 1},  {kDLInt, 32, 1},  {kDLInt, 64, 1},
        {kDLUInt, 8, 1}, {kDLUInt, 16, 1}, {kDLUInt, 32, 1}, {kDLUInt, 64, 1},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        int used = 0;
        for (int t = 0; t < g->ntensors && !used; t++) {
            DLDataType d = g->tensors[t].dtype;
            used = tether_dtype_equal(d, ints[i]) ||
                   (tether__dtype_is_bool(d) && ints[i].code == kDLUInt && ints[i].bits == 8);
        }
        if (used) {
            tether__sbuf b;
            tether__sbuf_init(&b);
            tether__formula_c_int_helpers(ints[i], &b);
            tether__sbuf_puts(src, b.data ? b.data : "");
            if (b.failed) {
                src->failed = 1;
            }
            tether__sbuf_free(&b);
            sat_helpers(src, ints[i], fp64);
        }
    }
    tether__ocl_index_prelude(g, src);
}

/* ---- kernels -------------------------------------------------------------------------------- */

/* The type a kernel computes an element of type t in. */
static const char *compute_type(DLDataType t) {
    if (is_f16(t) || is_bf16(t)) {
        return "float";
    }
    return tether__ocl_store_type(t);
}

/* The value of element idx of ptr (type t) in its compute type. */
static void load(DLDataType t, const char *ptr, const char *idx, char *out, size_t n) {
    if (is_f16(t)) {
        snprintf(out, n, "vload_half(%s, (const __global half *)%s)", idx, ptr);
    } else if (is_bf16(t)) {
        snprintf(out, n, "tg_bf16_load(%s[%s])", ptr, idx);
    } else {
        snprintf(out, n, "%s[%s]", ptr, idx);
    }
}

/* ptr[idx] = v, v of compute type `from`, converted to t (the C backend's conversions). */
static void store(ocl *e, DLDataType from, DLDataType t, const char *ptr, const char *idx,
                  const char *v) {
    int ff = tether__dtype_is_float(from) || is_bf16(from), fd = is_f64(from);
    if (is_f16(t)) {
        line(e, "vstore_half_rte((%s)(%s), %s, (__global half *)%s);", fd ? "double" : "float", v,
             idx, ptr);
    } else if (is_bf16(t)) {
        line(e, "%s[%s] = tg_bf16_store((float)(%s));", ptr, idx, v);
    } else if (tether__dtype_is_bool(t)) {
        line(e, "%s[%s] = (uchar)((%s) != 0);", ptr, idx, v);
    } else if (t.code == kDLFloat) {
        line(e, "%s[%s] = (%s)(%s);", ptr, idx, t.bits == 64 ? "double" : "float", v);
    } else if (ff) {
        line(e, "%s[%s] = tg_sat%s_%s((%s)(%s));", ptr, idx, fd ? "d" : "", tether__dtype_str(t),
             fd ? "double" : "float", v);
    } else {
        line(e, "%s[%s] = (%s)(%s);", ptr, idx, tether__ocl_store_type(t), v);
    }
}

/* const int o0 .. o<nd-1>: the multi-index of work-item f in shape. */
static void unravel(ocl *e, const int64_t *shape, int nd) {
    if (nd == 0) {
        return;
    }
    line(e, "int r_ = f;");
    for (int d = nd - 1; d >= 1; d--) {
        line(e, "const int o%d = r_ %% %lld;", d, (long long)shape[d]);
        line(e, "r_ /= %lld;", (long long)shape[d]);
    }
    line(e, "const int o0 = r_;");
}

/* The flat index into t (broadcast against an output of rank ond, multi-index o0..). */
static void bcast(char *out, size_t n, const tether_ir_tensor *t, const int64_t *oshape, int ond) {
    if (t->ndim == ond && !memcmp(t->shape, oshape, sizeof(int64_t) * (size_t)ond)) {
        snprintf(out, n, "f");
        return;
    }
    size_t o = 0;
    int64_t stride = 1;
    out[0] = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1) {
            o += (size_t)snprintf(out + o, n - o, "%so%d * %lld", o ? " + " : "", ond - t->ndim + i,
                                  (long long)stride);
        }
        stride *= t->shape[i];
    }
    if (!o) {
        snprintf(out, n, "0");
    }
}

static void k_elementwise(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    const tether_ir_tensor *z = tether__ir_main_inputs(n) > 1 ? T(e, n->inputs[1]) : NULL;
    DLDataType ct = x->dtype;
    const char *cty = compute_type(ct);
    tether__dclass dc = tether__dtype_class(ct);
    int integer = dc == TETHER__DC_INT || dc == TETHER__DC_UINT || tether__dtype_is_bool(ct);
    char ix[300] = "f", iz[300] = "f", la[400], lb[400], ex[1200], pre[512] = "";
    unravel(e, y->shape, y->ndim);
    bcast(ix, sizeof ix, x, y->shape, y->ndim);
    load(x->dtype, "in0", ix, la, sizeof la);
    line(e, "%s va = %s;", cty, la);
    if (z) {
        bcast(iz, sizeof iz, z, y->shape, y->ndim);
        load(z->dtype, "in1", iz, lb, sizeof lb);
        line(e, "const %s vb = %s;", compute_type(z->dtype), lb);
    }
    if (tether__formula_text_typed(n->op, integer ? TETHER__FORMULA_C : TETHER__FORMULA_OPENCL, ct,
                                   "va", z ? "vb" : NULL, &n->attrs, NULL, NULL, pre, sizeof pre,
                                   ex, sizeof ex)) {
        snprintf(ex, sizeof ex, "0;\n#error \"tether: no OpenCL formula for operator %s on %s\"",
                 tether_op_name(n->op), tether__dtype_str(ct));
    }
    if (pre[0]) {
        line(e, "va = %s;", pre);
    }
    store(e,
          tether__dtype_class(ct) == TETHER__DC_F64 ? ct
          : integer                                 ? ct
                                                    : TETHER_FLOAT32,
          y->dtype, "y", "f", ex);
}

static void k_where(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    char ix[3][300];
    unravel(e, y->shape, y->ndim);
    for (int i = 0; i < 3; i++) {
        bcast(ix[i], sizeof ix[i], T(e, n->inputs[i]), y->shape, y->ndim);
    }
    line(e, "y[f] = in0[%s] ? in1[%s] : in2[%s];", ix[0], ix[1], ix[2]);
}

static void k_transpose(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int64_t st[TETHER_IR_MAX_NDIM], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
    }
    unravel(e, y->shape, y->ndim);
    char ex[600] = "0";
    size_t o = 0;
    for (int i = 0; i < y->ndim; i++) {
        o += (size_t)snprintf(ex + o, sizeof ex - o, "%so%d * %lld", o ? " + " : "", i,
                              (long long)st[n->attrs.ints[i]]);
    }
    line(e, "y[f] = in0[%s];", ex);
}

static void k_concat(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, y->ndim);
    long long L = y->shape[ax], inner = prod(y->shape, ax + 1, y->ndim), start = 0;
    line(e, "const int i = f %% %lld;", inner);
    line(e, "const int k = (f / %lld) %% %lld;", inner, L);
    line(e, "const int o = f / %lld;", inner * L);
    for (int j = 0; j < n->ninputs; j++) {
        long long Lj = T(e, n->inputs[j])->shape[ax];
        if (Lj == 0) {
            continue;
        }
        open_block(e, "if (k >= %lld && k < %lld)", start, start + Lj);
        line(e, "y[f] = %s[(o * %lld + (k - %lld)) * %lld + i];", in_name(j), Lj, start, inner);
        close_block(e);
        start += Lj;
    }
}

static void k_pad(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int nd = x->ndim;
    unravel(e, y->shape, nd);
    char off[600] = "0", cond[1200] = "1", lit[64];
    size_t oo = 0, co = 0;
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        line(e, "const int k%d = o%d - %lld;", i, i, (long long)n->attrs.ints[i]);
        co += (size_t)snprintf(cond + co, sizeof cond - co, "%sk%d >= 0 && k%d < %lld",
                               co ? " && " : "", i, i, (long long)x->shape[i]);
        oo += (size_t)snprintf(off + oo, sizeof off - oo, "%sk%d * %lld", oo ? " + " : "", i,
                               (long long)s);
        s *= x->shape[i];
    }
    open_block(e, "if (%s)", cond);
    line(e, "y[f] = in0[%s];", off);
    e->depth--;
    open_block(e, "} else");
    flit(lit, sizeof lit, n->attrs.value);
    store(e, TETHER_FLOAT32, y->dtype, "y", "f", lit);
    close_block(e);
}

/* w = the index value at `at` of indices tensor `it` made non-negative against extent dim; an
 * index out of range (the C path's and the interpreter's run-time error) fails the run through
 * the error flag (emit_opencl_check.c) and reads element 0, never outside the tensor. */
static void index_value(ocl *e, const char *ptr, const char *at, int64_t dim) {
    line(e, "long w = (long)%s[%s];", ptr, at);
    line(e, "w = w < 0 ? w + %lld : w;", (long long)dim);
    open_block(e, "if (w < 0 || w >= %lld)", (long long)dim);
    tether__ocl_fail(e);
    line(e, "w = 0;");
    close_block(e);
}

static void k_gather(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *it = T(e, n->inputs[1]);
    int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
    long long dim = x->shape[ax], inner = prod(x->shape, ax + 1, x->ndim);
    long long ni = (long long)tether_ir_tensor_elements(it);
    line(e, "const int r = f %% %lld;", inner);
    line(e, "const int j = (f / %lld) %% %lld;", inner, ni);
    line(e, "const int p = f / %lld;", inner * ni);
    index_value(e, "in1", "j", dim);
    line(e, "y[f] = in0[(p * %lld + (int)w) * %lld + r];", dim, inner);
}

static void k_gather_elements(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    int ax = tether__ir_norm_axis(n->attrs.axis, x->ndim);
    unravel(e, y->shape, y->ndim);
    index_value(e, "in1", "f", x->shape[ax]);
    char ex[600] = "0";
    size_t o = 0;
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (d == ax) {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%s(int)w * %lld", o ? " + " : "",
                                  (long long)s);
        } else {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%so%d * %lld", o ? " + " : "", d,
                                  (long long)s);
        }
        s *= x->shape[d];
    }
    line(e, "y[f] = in0[%s];", ex);
}

static void k_slice_tile(ocl *e, const tether_ir_node *n) {
    const tether_ir_tensor *x = T(e, n->inputs[0]), *y = T(e, n->outputs[0]);
    unravel(e, y->shape, y->ndim);
    int lead = y->ndim - x->ndim;
    char ex[800] = "0";
    size_t o = 0;
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (n->op == TETHER_OP_TILE) {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%s(o%d %% %lld) * %lld", o ? " + " : "",
                                  d + lead, (long long)x->shape[d], (long long)s);
        } else {
            o += (size_t)snprintf(ex + o, sizeof ex - o, "%s(%lld + o%d * %lld) * %lld",
                                  o ? " + " : "", (long long)n->attrs.ints[d], d,
                                  (long long)n->attrs.steps[d], (long long)s);
        }
        s *= x->shape[d];
    }
    line(e, "y[f] = in0[%s];", ex);
}

/* The helpers above, for the kernels of emit_opencl_index.c. */
const char *tether__ocl_compute_type(DLDataType t) {
    return compute_type(t);
}

void tether__ocl_load(DLDataType t, const char *ptr, const char *idx, char *out, size_t n) {
    load(t, ptr, idx, out, n);
}

void tether__ocl_store(ocl *e, DLDataType from, DLDataType t, const char *ptr, const char *idx,
                       const char *v) {
    store(e, from, t, ptr, idx, v);
}

void tether__ocl_typed_body(ocl *e, const tether_ir_node *n) {
    if (tether__ocl_index_owns(e->g, n)) {
        tether__ocl_index_body(e, n);
        return;
    }
    switch ((int)n->op) {
    case TETHER_OP_WHERE:
        k_where(e, n);
        return;
    case TETHER_OP_GATHER:
        k_gather(e, n);
        return;
    case TETHER_OP_GATHER_ELEMENTS:
        k_gather_elements(e, n);
        return;
    case TETHER_OP_SLICE:
    case TETHER_OP_TILE:
        k_slice_tile(e, n);
        return;
    case TETHER_OP_TRANSPOSE:
        k_transpose(e, n);
        return;
    case TETHER_OP_CONCAT:
        k_concat(e, n);
        return;
    case TETHER_OP_PAD:
        k_pad(e, n);
        return;
    case TETHER_OP_RESHAPE:
    case TETHER_OP_FLATTEN:
    case TETHER_OP_SQUEEZE:
    case TETHER_OP_UNSQUEEZE:
        line(e, "y[f] = in0[f];");
        return;
    default:
        k_elementwise(e, n);
        return;
    }
}
