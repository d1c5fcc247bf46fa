/*
 * Every operator, generated C vs the reference interpreter: each case is a one-node graph (plus
 * a relu after reshape-like operators, so the alias path runs) whose operands are all graph
 * inputs filled with random values. Each case is compiled in both ABIs, with the C interface
 * (whose artifact is the packed interface's plus <prefix>_run), one of the two at the target's
 * -O3, the ABI alternating over the cases, the other at -O1 to keep gcc's time down, built as a
 * shared object, dlopen'ed, called through its module registry and through <prefix>_run, and
 * both results compared with the interpreter's element by element. Shapes include 1x1 kernels,
 * stride > kernel, asymmetric pads, dilations, groups, rank-1 and scalar broadcasting. The cases
 * are tests/compiler/op_cases.c's (those marked TT_C), shared with the OpenCL backend's test; cases
 * of other element types than float32 are drawn per type and compared exactly (integers, bool) or
 * within a tolerance (floats). A data-dependent output size (nonzero, compress, unique, nms) gets
 * its extent output: the extents are equal and only the data of the actual shape are compared.
 * TT_OPS_FILTER (a cmocka pattern, e.g. 'nms*') runs some of the tests only.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ops_common.h"
#include "tether/crt.h"

/* The element type of input i of case c (its dtypes list; the last one repeats). */
static DLDataType case_dtype(const tt_op_case *c, int i) {
    DLDataType t = TETHER_FLOAT32;
    const char *p = c->dtypes;
    for (int k = 0; p && *p; k++) {
        char nm[24];
        size_t n = strcspn(p, " ");
        snprintf(nm, sizeof nm, "%.*s", (int)n, p);
        assert_int_equal(tether_dtype_parse(nm, &t), 0);
        if (k == i) {
            break;
        }
        p += n;
        p += *p == ' ';
    }
    return t;
}

static void build_case(const tt_op_case *c, tether_ir_graph *g) {
    assert_int_equal(tether_ir_init(g, c->name), 0);
    if (c->op == TETHER_OP_CUSTOM) {
        g->custom = tt_custom_registry();
        assert_non_null(g->custom);
    }
    int in[TT_MAXIN];
    for (int i = 0; i < c->nin; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "in%d", i);
        assert_int_equal(
            tether_ir_add_tensor(g, nm, case_dtype(c, i), c->ndim[i], c->shape[i], &in[i]), 0);
        assert_int_equal(tether_ir_add_input(g, in[i]), 0);
    }
    int mid, out;
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &mid), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(c->op, &a);
    if (c->attrs) {
        c->attrs(&a);
    }
    int nin = c->nin;
    if (c->op == TETHER_OP_TFIDF) { /* its pool and weights are constants (op_cases_text.h) */
        nin += tt_tfidf_operands(g, in + nin, a.mode == 2);
    }
    nin += tt_qelt_operands(g, c->op, &a, in + nin); /* op_cases_qelt.h: constant parameters */
    assert_int_equal(tether_ir_add_node(g, "op", c->op, in, nin, &mid, 1, &a, NULL), 0);
    out = mid;
    if (c->then != TT_NONE) {
        assert_int_equal(tether_ir_add_tensor(g, "z", TETHER_FLOAT32, -1, NULL, &out), 0);
        assert_int_equal(tether_ir_add_node(g, "after", c->then, &mid, 1, &out, 1, NULL, NULL), 0);
    }
    assert_int_equal(tether_ir_add_output(g, out), 0);
    /* a data-dependent output size (nonzero, compress, unique, nms): its extent output too */
    assert_int_equal(tether_ir_add_extent_outputs(g), 0);
    int rc = tether_ir_infer(g);
    if (rc) {
        fail_msg("%s: %s", c->name, tether_last_error());
    }
}

/* n elements of type t: floats from tt_fill (x 4, with a NaN and infinities among float64 and
 * float32 ones past the 8th), integers in [-20, 20] ([0, 40] unsigned, shifts [0, 9]), bool 0/1. */
static void *fill_typed(DLDataType t, size_t n, bool positive, uint32_t *seed, bool shift) {
    size_t es = tether_dtype_bytes(t);
    unsigned char *v = malloc(n * es + 1);
    float *f = malloc((n + 1) * sizeof(float));
    tt_fill(f, n, positive, seed);
    for (size_t i = 0; i < n; i++) {
        double d = f[i] * 4.0;
        if (i == 8 && !positive) {
            d = NAN;
        } else if (i >= 9 && i < 11 && !positive) {
            d = i == 9 ? INFINITY : -INFINITY;
        }
        long long q = (long long)(f[i] * 20.0f);
        unsigned char *p = v + i * es;
        if (t.code == kDLFloat && t.bits == 64) {
            memcpy(p, &d, 8);
        } else if (t.code == kDLFloat && t.bits == 32) {
            float x = (float)d;
            memcpy(p, &x, 4);
        } else if (t.code == kDLFloat || t.code == kDLBfloat) {
            float x = (float)d; /* float16: an exact pattern from the top bits; bf16 likewise */
            uint32_t b;
            memcpy(&b, &x, 4);
            uint16_t h = t.code == kDLBfloat
                             ? (uint16_t)(b >> 16)
                             : (uint16_t)(((b >> 16) & 0x8000u) |
                                          (((b >> 23) & 0xffu) > 112u
                                               ? ((((b >> 23) & 0xffu) - 112u) & 31u) << 10 |
                                                     ((b >> 13) & 1023u)
                                               : 0u));
            memcpy(p, &h, 2);
        } else if (t.code == kDLUInt && t.bits == 1) {
            p[0] = f[i] > 0.0f;
        } else {
            long long x = t.code == kDLUInt ? (q < 0 ? -q : q) * 2 % 41 : q;
            if (shift) {
                x = (q < 0 ? -q : q) % 10;
            }
            memcpy(p, &x, es); /* little-endian: the low bytes */
        }
    }
    free(f);
    return v;
}

/* Element k of buffer p (type t) as a double (float16/bfloat16 decoded by the interpreter's
 * rules: a one-element cast graph would be circular, so decode here). */
static double elem(const void *p, DLDataType t, size_t k) {
    const unsigned char *b = (const unsigned char *)p + k * tether_dtype_bytes(t);
    if (t.code == kDLFloat && t.bits == 64) {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    if (t.code == kDLFloat && t.bits == 32) {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    uint16_t h;
    if (t.code == kDLBfloat) {
        memcpy(&h, b, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    if (t.code == kDLFloat) {
        memcpy(&h, b, 2);
        int e = (h >> 10) & 31, m = h & 1023;
        double v = e == 0    ? ldexp(m, -24)
                   : e == 31 ? (m ? NAN : INFINITY)
                             : ldexp(m + 1024, e - 25);
        return (h & 0x8000) ? -v : v;
    }
    return NAN; /* integers are compared as bytes */
}

static void run_case(const tt_op_case *c) {
    tether_ir_graph g;
    build_case(c, &g);
    uint32_t seed = 42;
    void *inputs[TT_MAXIN];
    for (int i = 0; i < c->nin; i++) {
        const tether_ir_tensor *t = &g.tensors[g.inputs[i]];
        size_t n = tether_ir_tensor_elements(t);
        if (tether_dtype_equal(t->dtype, TETHER_FLOAT32) && !c->dtypes) {
            inputs[i] = malloc(n * sizeof(float) + 1);
            tt_fill(inputs[i], n, (c->positive >> i) & 1u, &seed);
        } else {
            inputs[i] = fill_typed(
                t->dtype, n, (c->positive >> i) & 1u, &seed,
                i == 1 && (c->op == TETHER_OP_BITSHIFT_LEFT || c->op == TETHER_OP_BITSHIFT_RIGHT));
        }
    }
    const tether_ir_tensor *ot = &g.tensors[g.outputs[0]];
    size_t on = tether_ir_tensor_elements(ot), ob = tether_ir_tensor_bytes(ot);
    void *ref = malloc(ob + 1), *got = malloc(ob + 1), *got2 = malloc(ob + 1);
    /* a dynamic output (dyn_dim > 0): its extent is output 1; only the data of the actual shape
     * (dense at the start) are compared, the bytes past it are unwritten or a terminator */
    int64_t ref_ext = -1, got_ext = -1;
    void *refs[2] = {ref, &ref_ext}, *gots[2] = {got, &got_ext};
    assert_int_equal(g.noutputs, ot->dyn_dim > 0 ? 2 : 1);
    assert_int_equal(tether_interp_run_typed(&g, (const void *const *)inputs, refs), 0);
    if (ot->dyn_dim > 0) {
        int d = ot->dyn_dim - 1;
        if (ref_ext <= 0 || ref_ext > ot->shape[d]) {
            fail_msg("%s: extent %lld, expected 1 .. %lld (the case must exercise data)", c->name,
                     (long long)ref_ext, (long long)ot->shape[d]);
        }
        on = on / (size_t)ot->shape[d] * (size_t)ref_ext;
        ob = on * tether_dtype_bytes(ot->dtype);
    }
    int is_float = ot->dtype.code == kDLFloat || ot->dtype.code == kDLBfloat;
    /* One build per ABI, of the C interface, run through both entries (its registry's packed
     * <prefix>_main and the typed <prefix>_run): an artifact of the packed interface is the same
     * code without <prefix>_run (emit_c.c), so a build of it would check nothing more. One of the
     * two builds is at the target's default level (-O3, -Werror: the kernel as users get it,
     * with the warnings only optimisation finds), which one alternating with the case's index so
     * both ABIs get -O3 builds; the other at -O1 (its code's speed is not under test, and gcc at
     * -O3 was most of this test's time). */
    int o3 = (int)((size_t)(c - tt_op_cases) % 2u); /* c is an element of tt_op_cases */
    for (int abi = 0; abi < 2; abi++) {
        int64_t got_ext2 = -1;
        void *gots2[2] = {got2, &got_ext2};
        memset(got, 0xA5, ob);
        memset(got2, 0x5A, ob);
        got_ext = -1;
        tt_opt_level = abi == o3 ? TETHER_OPT_DEFAULT : 1;
        int rc = tt_run_compiled_both(&g, c->name, (tether_abi)abi, TETHER_INTERFACE_C, true, NULL,
                                      0, NULL, NULL, (const float *const *)inputs,
                                      (float *const *)gots, (float *const *)gots2);
        tt_opt_level = TETHER_OPT_DEFAULT;
        if (rc) {
            fail_msg("%s (%s ABI): %s", c->name, tether_abi_name((tether_abi)abi),
                     tether_last_error());
        }
        for (int iface = 0; iface < 2; iface++) {
            const void *out = iface == TETHER_INTERFACE_C ? got2 : got;
            int64_t ext = iface == TETHER_INTERFACE_C ? got_ext2 : got_ext;
            if (ext != ref_ext) {
                fail_msg("%s (%s ABI, %s interface): extent %lld, the interpreter's %lld", c->name,
                         tether_abi_name((tether_abi)abi),
                         tether_interface_name((tether_interface)iface), (long long)ext,
                         (long long)ref_ext);
            }
            double cl = 0.0;
            if (tether_dtype_equal(ot->dtype, TETHER_FLOAT32)) {
                cl = tt_close(out, ref, on, 1e-5, 1e-4);
            } else if (is_float) {
                double tol = ot->dtype.bits == 16 ? 1e-2 : 1e-4;
                for (size_t k = 0; k < on; k++) {
                    double x = elem(out, ot->dtype, k), y = elem(ref, ot->dtype, k);
                    if (x != y && !(x != x && y != y)) {
                        double r = fabs(x - y) / (1e-5 + tol * fabs(y));
                        cl = r > cl || r != r ? r : cl;
                    }
                }
            } else if (memcmp(out, ref, ob) != 0) {
                cl = 2.0; /* integers and bool: equal exactly */
            }
            if (cl > 1.0 || cl != cl) {
                fail_msg("%s (%s ABI, %s interface): output differs from the interpreter "
                         "(%.3g x tolerance)",
                         c->name, tether_abi_name((tether_abi)abi),
                         tether_interface_name((tether_interface)iface), cl);
            }
        }
    }
    for (int i = 0; i < c->nin; i++) {
        free(inputs[i]);
    }
    free(ref);
    free(got);
    free(got2);
    tether_ir_close(&g);
}

static void test_case(void **state) {
    run_case((const tt_op_case *)*state);
}

/* The interpreter itself against hand-computed values, so the ground truth is not circular. */
static void test_interpreter_known_values(void **state) {
    (void)state;
    const tt_op_case conv = {
        "k",  TETHER_OP_CONV2D, 3,    {4, 4, 1}, {{1, 1, 3, 3}, {1, 1, 2, 2}, {1}}, 0,
        NULL, TT_NONE,          TT_C, NULL};
    tether_ir_graph g;
    build_case(&conv, &g);
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 0, 0, -1}, b[1] = {10};
    const float *in[3] = {x, w, b};
    float y[4];
    float *out[1] = {y};
    assert_int_equal(tether_interp_run(&g, in, out), 0);
    /* 1*x00 - x11 + 10 = 1-5+10 = 6; 2-6+10 = 6; 4-8+10 = 6; 5-9+10 = 6 */
    for (int i = 0; i < 4; i++) {
        assert_true(y[i] == 6.0f);
    }
    tether_ir_close(&g);
    const tt_op_case sm = {"s", TETHER_OP_SOFTMAX, 1, {1}, {{2}}, 0, NULL, TT_NONE, TT_C, NULL};
    build_case(&sm, &g);
    float xs[2] = {0.0f, 0.0f}, ys[2];
    const float *in2[1] = {xs};
    float *out2[1] = {ys};
    assert_int_equal(tether_interp_run(&g, in2, out2), 0);
    assert_true(ys[0] == 0.5f && ys[1] == 0.5f);
    tether_ir_close(&g);
    const tt_op_case ap = {"a", TETHER_OP_AVG_POOL, 1,       {4},  {{1, 1, 2, 2}},
                           0,   tt_attrs_pool2,     TT_NONE, TT_C, NULL};
    build_case(&ap, &g);
    float xa[4] = {1, 2, 3, 6}, ya[1];
    const float *in3[1] = {xa};
    float *out3[1] = {ya};
    assert_int_equal(tether_interp_run(&g, in3, out3), 0);
    assert_true(ya[0] == 3.0f);
    tether_ir_close(&g);
    /* rank-1 matmul: [1,2,3] . [[1,0],[0,1],[1,1]] = [4, 5]; [1,2,3] . [4,5,6] = 32 */
    const tt_op_case mv = {"mv", TETHER_OP_MATMUL, 2,    {1, 2}, {{3}, {3, 2}}, 0,
                           NULL, TT_NONE,          TT_C, NULL};
    build_case(&mv, &g);
    assert_int_equal(g.tensors[g.outputs[0]].ndim, 1);
    float xv[3] = {1, 2, 3}, wm[6] = {1, 0, 0, 1, 1, 1}, yv[2];
    const float *in4[2] = {xv, wm};
    float *out4[1] = {yv};
    assert_int_equal(tether_interp_run(&g, in4, out4), 0);
    assert_true(yv[0] == 4.0f && yv[1] == 5.0f);
    tether_ir_close(&g);
    const tt_op_case dot = {"dot", TETHER_OP_MATMUL, 2,    {1, 1}, {{3}, {3}}, 0,
                            NULL,  TT_NONE,          TT_C, NULL};
    build_case(&dot, &g);
    assert_int_equal(g.tensors[g.outputs[0]].ndim, 0);
    float x2[3] = {4, 5, 6}, yd[1];
    const float *in5[2] = {xv, x2};
    float *out5[1] = {yd};
    assert_int_equal(tether_interp_run(&g, in5, out5), 0);
    assert_true(yd[0] == 32.0f);
    tether_ir_close(&g);
}

/* erf, the operator added by its table row alone (ops.def: formula erff(x)): the interpreter and
 * the generated C in both ABIs give the values of the Gauss error function (math.erf). */
static void test_erf_known_values(void **state) {
    (void)state;
    const tt_op_case c = {"erf_known", TETHER_OP_ERF, 1, {1}, {{8}}, 0, NULL, TT_NONE, TT_C, NULL};
    tether_ir_graph g;
    build_case(&c, &g);
    const float x[8] = {0.0f, 0.5f, 1.0f, -1.0f, -2.0f, 3.0f, 0.1f, -0.25f};
    const double want[8] = {0.0,
                            0.5204998778130465,
                            0.8427007929497149,
                            -0.8427007929497149,
                            -0.9953222650189527,
                            0.9999779095030014,
                            0.1124629160182849,
                            -0.2763263901682369};
    float ref[8], got[8];
    const float *in[1] = {x};
    float *r[1] = {ref}, *o[1] = {got};
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    for (int i = 0; i < 8; i++) {
        assert_true(fabs(ref[i] - want[i]) < 1e-6);
    }
    for (int abi = 0; abi < 2; abi++) {
        memset(got, 0, sizeof got);
        assert_int_equal(
            tt_run_compiled(&g, "erf_known", (tether_abi)abi, TETHER_INTERFACE_PACKED, true, in, o),
            0);
        for (int i = 0; i < 8; i++) {
            assert_true(fabs(got[i] - want[i]) < 1e-6);
        }
    }
    tether_ir_close(&g);
}

/* Runs case c on x through the interpreter and the compiled C of both ABIs; each must equal want
 * (n values) within tol. */
static void check_known(const tt_op_case *c, const float *const *in, const double *want, int n,
                        double tol) {
    tether_ir_graph g;
    build_case(c, &g);
    float ref[64], got[64];
    float *r[1] = {ref}, *o[1] = {got};
    assert_true(n <= 64);
    assert_int_equal((int)tether_ir_tensor_elements(&g.tensors[g.outputs[0]]), n);
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    for (int i = 0; i < n; i++) {
        assert_true(fabs(ref[i] - want[i]) <= tol);
    }
    for (int abi = 0; abi < 2; abi++) {
        memset(got, 0, sizeof got);
        assert_int_equal(
            tt_run_compiled(&g, c->name, (tether_abi)abi, TETHER_INTERFACE_PACKED, true, in, o), 0);
        for (int i = 0; i < n; i++) {
            assert_true(fabs(got[i] - want[i]) <= tol);
        }
    }
    tether_ir_close(&g);
}

/* Case c through the interpreter only (its C kernel is checked against it by the shared cases). */
static void check_known_interp(const tt_op_case *c, const float *const *in, const double *want,
                               int n, double tol) {
    tether_ir_graph g;
    build_case(c, &g);
    float ref[64];
    float *r[1] = {ref};
    assert_true(n <= 64);
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    for (int i = 0; i < n; i++) {
        assert_true(fabs(ref[i] - want[i]) <= tol);
    }
    tether_ir_close(&g);
}

/* The unary math block against values from Python's math module (double): round is half to even
 * (0.49999997 is not 1: no floor(x + 0.5)); round, atan, sinh and acos compiled too (the C
 * helpers' own polynomials; the interpreter uses <math.h>), selu's defaults are ONNX's. */
static void test_math_known_values(void **state) {
    (void)state;
    const float r_in[8] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 0.49999997f, 3.7f};
    const double r_want[8] = {-2, -2, 0, 0, 2, 2, 0, 4};
    const float y[8] = {-3.0f, -1.0f, -0.3f, 0.0f, 0.2f, 0.9f, 1.0f, 7.5f};
    const double atan_want[8] = {
        -1.2490457723982544, -0.7853981633974483, -0.2914567944778671, 0.0,
        0.19739555984988078, 0.7328151017865066,  0.7853981633974483,  1.4382447944982226};
    const double sinh_want[8] = {
        -10.017874927409903, -1.1752011936438014, -0.3045202934471426, 0.0,
        0.20133600254109402, 1.0265167257081753,  1.1752011936438014,  904.0209306858466};
    const double selu_want[8] = {
        -1.670568733989153,  -1.1113307412864784, -0.4556673168034953, 0.0,
        0.21014020442962647, 0.9456309199333192,  1.0507010221481323,  7.880257666110992};
    const double mish_want[8] = {
        -0.1456474612756246, -0.30340146137410895, -0.15113317713833455, 0.0,
        0.13259900186215923, 0.7612059289525154,   0.8650983882673103,   7.499995416538079};
    const float u[6] = {-1.0f, -0.3f, 0.0f, 0.2f, 0.9f, 1.0f};
    const double asin_want[6] = {-1.5707963267948966, -0.3046926540153975, 0.0,
                                 0.2013579207903308,  1.1197695149986342,  1.5707963267948966};
    const double acos_want[6] = {3.141592653589793, 1.8754889808102941,  1.5707963267948966,
                                 1.369438406004566, 0.45102681179626236, 0.0};
    const float *rin[1] = {r_in}, *yin[1] = {y}, *uin[1] = {u};
    const tt_op_case round_c = {"round_known", TETHER_OP_ROUND, 1,    {1}, {{8}}, 0,
                                NULL,          TT_NONE,         TT_C, NULL};
    check_known(&round_c, rin, r_want, 8, 0.0);
    const tt_op_case atan_c = {"atan_known", TETHER_OP_ATAN, 1,    {1}, {{8}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known(&atan_c, yin, atan_want, 8, 2e-7);
    const tt_op_case sinh_c = {"sinh_known", TETHER_OP_SINH, 1,    {1}, {{8}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known(&sinh_c, yin, sinh_want, 8, 1e-4);
    const tt_op_case selu_c = {"selu_known", TETHER_OP_SELU, 1,    {1}, {{8}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known_interp(&selu_c, yin, selu_want, 8, 1e-6);
    const tt_op_case mish_c = {"mish_known", TETHER_OP_MISH, 1,    {1}, {{8}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known_interp(&mish_c, yin, mish_want, 8, 1e-6);
    const tt_op_case asin_c = {"asin_known", TETHER_OP_ASIN, 1,    {1}, {{6}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known_interp(&asin_c, uin, asin_want, 6, 1e-6);
    const tt_op_case acos_c = {"acos_known", TETHER_OP_ACOS, 1,    {1}, {{6}}, 0,
                               NULL,         TT_NONE,        TT_C, NULL};
    check_known(&acos_c, uin, acos_want, 6, 1e-6);
}

/* conv_transpose of x = [1, 2, 3] with w = [1, 1, 1], stride 2, the end pad -1 (output_padding
 * 1): each input spreads over 3 outputs 2 apart, overlapping in one; the extra output is 0. */
static void a_convt_known(tether_ir_attrs *a) {
    a->nwin = 1;
    a->wstrides[0] = 2;
    a->wpads[3] = -1;
}
static void test_conv_transpose_known_values(void **state) {
    (void)state;
    const tt_op_case c = {"convt_known",
                          TETHER_OP_CONV_TRANSPOSE,
                          2,
                          {3, 3},
                          {{1, 1, 3}, {1, 1, 3}},
                          0,
                          a_convt_known,
                          TT_NONE,
                          TT_C,
                          NULL};
    const float x[3] = {1.0f, 2.0f, 3.0f}, w[3] = {1.0f, 1.0f, 1.0f};
    const float *in[2] = {x, w};
    const double want[8] = {1, 1, 3, 2, 5, 3, 3, 0};
    check_known(&c, in, want, 8, 1e-6);
}

/* reduce_log_sum_exp of values near 1e4 (the sum of exp would overflow without the maximum taken
 * out first), reduce_prod, and hardmax with a tie (the first maximum wins). */
static void test_reduce_known_values(void **state) {
    (void)state;
    const tt_op_case lse = {
        "lse_known", TETHER_OP_REDUCE_LOG_SUM_EXP, 1, {2}, {{2, 3}}, 0, NULL, TT_NONE, TT_C, NULL};
    const float x[6] = {10000.0f, 10001.0f, 10002.0f, -1.0f, 0.0f, 1.0f};
    /* all axes: log(sum exp) = 10002 + log(1 + e^-1 + e^-2) (the small row vanishes) */
    const double want[1] = {10002.0 + 0.40760596444438};
    const float *in[1] = {x};
    check_known(&lse, in, want, 1, 2e-3);
    const tt_op_case prod = {
        "prod_known", TETHER_OP_REDUCE_PROD, 1, {2}, {{2, 3}}, 0, NULL, TT_NONE, TT_C, NULL};
    const float xp[6] = {1.5f, -2.0f, 3.0f, 0.5f, 4.0f, -1.0f};
    const double wp[1] = {18.0};
    in[0] = xp;
    check_known(&prod, in, wp, 1, 1e-5);
    const tt_op_case hm = {
        "hardmax_known", TETHER_OP_HARDMAX, 1, {2}, {{2, 3}}, 0, NULL, TT_NONE, TT_C, NULL};
    const float xh[6] = {1.0f, 3.0f, 3.0f, -5.0f, -7.0f, -6.0f};
    const double wh[6] = {0, 1, 0, 1, 0, 0};
    in[0] = xh;
    check_known(&hm, in, wh, 6, 0.0);
}

/* log_softmax of large values (the ONNX test logsoftmax_large_number): the generated code must
 * keep log(sum) apart from the row maximum, or float rounding at 1e4 eats its low bits. */
static void test_log_softmax_large_values(void **state) {
    (void)state;
    const tt_op_case c = {
        "lsm_large", TETHER_OP_LOG_SOFTMAX, 1, {2}, {{2, 4}}, 0, NULL, TT_NONE, TT_C, NULL};
    tether_ir_graph g;
    build_case(&c, &g);
    float x[8] = {0.0f, 1.0f, 2.0f, 3.0f, 10000.0f, 10001.0f, 10002.0f, 10003.0f};
    float ref[8], got[8];
    const float *in[1] = {x};
    float *r[1] = {ref}, *o[1] = {got};
    assert_int_equal(tether_interp_run(&g, in, r), 0);
    /* both rows are the same distribution: -3.4401896, -2.4401896, -1.4401896, -0.4401897 */
    for (int i = 0; i < 4; i++) {
        assert_true(fabs(ref[i] - ref[i + 4]) < 1e-6);
    }
    for (int abi = 0; abi < 2; abi++) {
        assert_int_equal(
            tt_run_compiled(&g, "lsm_large", (tether_abi)abi, TETHER_INTERFACE_PACKED, true, in, o),
            0);
        assert_true(tt_close(got, ref, 8, 1e-5, 1e-4) <= 1.0);
    }
    tether_ir_close(&g);
}

/* Empty tensors (an extent of 0, ONNX Reshape with allowzero): they flow through nodes with empty
 * outputs, which are no-ops in every ABI and in the interpreter; a node that would read an empty
 * tensor into a non-empty output is refused; JSON keeps allowzero and 0 extents. */
static void test_empty_tensors(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_ir_init(&g, "empty"), 0);
    int64_t xs[3] = {0, 3, 4};
    int x, y, z;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 3, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "z", TETHER_FLOAT32, -1, NULL, &z), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    a.nints = 3;
    a.ints[0] = 3;
    a.ints[1] = 4;
    a.ints[2] = 0;
    a.allowzero = true;
    assert_int_equal(tether_ir_add_node(&g, "r", TETHER_OP_RESHAPE, &x, 1, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_node(&g, "e", TETHER_OP_EXP, &y, 1, &z, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_output(&g, z), 0);
    assert_int_equal(tether_ir_infer(&g), 0);
    assert_int_equal(g.tensors[z].ndim, 3);
    assert_int_equal(g.tensors[z].shape[0], 3);
    assert_int_equal(g.tensors[z].shape[2], 0);
    float dummy_in[1] = {1.0f}, dummy_out[1] = {-7.0f};
    const float *in[1] = {dummy_in};
    float *out[1] = {dummy_out};
    assert_int_equal(tether_interp_run(&g, in, out), 0);
    assert_true(dummy_out[0] == -7.0f); /* nothing written */
    for (int abi = 0; abi < 2; abi++) { /* both interfaces: the registry's entry and _run */
        int rc = tt_run_compiled_both(&g, "empty", (tether_abi)abi, TETHER_INTERFACE_C, true, NULL,
                                      0, NULL, NULL, in, out, out);
        if (rc) {
            fail_msg("%s ABI: %s", tether_abi_name((tether_abi)abi), tether_last_error());
        }
        assert_true(dummy_out[0] == -7.0f);
    }
    /* without allowzero the 0 copies the input's extent: [3,4,3] needs 36 elements, not 0 */
    g.nodes[0].attrs.allowzero = false;
    g.tensors[y].ndim = g.tensors[z].ndim = TETHER_IR_SHAPE_UNKNOWN;
    assert_int_equal(tether_ir_infer(&g), TETHER_ERR_MISMATCH);
    tether_ir_close(&g);
    /* an empty input may not feed a non-empty output */
    assert_int_equal(tether_ir_init(&g, "empty2"), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 3, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    tether_ir_attrs_init(TETHER_OP_REDUCE_MEAN, &a);
    a.nints = 1;
    a.ints[0] = 0;
    assert_int_equal(tether_ir_add_node(&g, "m", TETHER_OP_REDUCE_MEAN, &x, 1, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    assert_int_equal(tether_ir_infer(&g), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "input 'x' is empty"));
    tether_ir_close(&g);
    /* JSON: 0 extents and allowzero survive a round trip */
    const char *json = "{\"format\": \"tether-model\", \"version\": 1, \"tensors\": "
                       "[{\"name\": \"x\", \"shape\": [0, 3, 4]}], \"inputs\": [\"x\"], "
                       "\"outputs\": [\"y\"], \"nodes\": [{\"name\": \"r\", \"op\": "
                       "\"reshape\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"attrs\": "
                       "{\"shape\": [3, 4, 0], \"allowzero\": true}}]}";
    assert_int_equal(tether_model_parse_json(json, "empty.json", NULL, &g), 0);
    y = tether_ir_find_tensor(&g, "y");
    assert_int_equal(g.tensors[y].shape[2], 0);
    char jp[1024], wp[1024];
    snprintf(jp, sizeof jp, "%s/tests/compiler/empty.json", TETHER_BINARY_DIR);
    snprintf(wp, sizeof wp, "%s/tests/compiler/empty.bin", TETHER_BINARY_DIR);
    assert_int_equal(tether_model_save_json(&g, jp, wp), 0);
    tether_ir_close(&g);
    assert_int_equal(tether_model_load(jp, &g), 0);
    assert_true(g.nodes[0].attrs.allowzero);
    tether_ir_close(&g);
    unlink(jp);
    unlink(wp);
}

/* Weights in a params blob instead of linked arrays, all four combinations. */
static void test_params_blob(void **state) {
    (void)state;
    tether_ir_graph g;
    tether_ir_init(&g, "blob");
    int64_t sx[] = {1, 2, 5, 5}, sw[] = {3, 2, 3, 3}, sb[] = {3};
    float w[54], b[3];
    uint32_t seed = 7;
    tt_fill(w, 54, false, &seed);
    tt_fill(b, 3, false, &seed);
    int x, cw, cb, y;
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 4, sx, &x), 0);
    assert_int_equal(tether_ir_add_constant(&g, "w", TETHER_FLOAT32, 4, sw, w, sizeof w, &cw), 0);
    assert_int_equal(tether_ir_add_constant(&g, "b", TETHER_FLOAT32, 1, sb, b, sizeof b, &cb), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    int in[] = {x, cw, cb};
    assert_int_equal(tether_ir_add_node(&g, "conv", TETHER_OP_CONV2D, in, 3, &y, 1, NULL, NULL), 0);
    tether_ir_add_input(&g, x);
    tether_ir_add_output(&g, y);
    assert_int_equal(tether_ir_infer(&g), 0);
    float xin[50], ref[27], got[27];
    tt_fill(xin, 50, false, &seed);
    const float *ins[1] = {xin};
    float *r[1] = {ref}, *o[1] = {got};
    assert_int_equal(tether_interp_run(&g, ins, r), 0);
    for (int abi = 0; abi < 2; abi++) { /* both interfaces: the registry's entry and _run */
        float got_c[27];
        float *oc[1] = {got_c};
        memset(got, 0, sizeof got);
        memset(got_c, 0, sizeof got_c);
        int rc = tt_run_compiled_both(&g, "params_blob", (tether_abi)abi, TETHER_INTERFACE_C, false,
                                      NULL, 0, NULL, NULL, ins, o, oc);
        if (rc) {
            fail_msg("blob: %s", tether_last_error());
        }
        assert_true(tt_close(got, ref, 27, 1e-5, 1e-4) <= 1.0);
        assert_true(tt_close(got_c, ref, 27, 1e-5, 1e-4) <= 1.0);
    }
    tether_ir_close(&g);
}

/* The operator table (compiler/src/ir/ops.def) and the cases agree: every operator's name
 * round-trips, and every operator has a case this backend runs, so a row added to the table
 * without a case in op_cases.c fails here (docs/adding-an-operator.md); the run-time Loop's
 * marker operators are checked as whole loops in tests/onnx/test_onnx_loop_c.c. */
static void test_every_op_has_a_case(void **state) {
    (void)state;
    for (int op = 0; op < TETHER_OP_COUNT_; op++) {
        const char *name = tether_op_name((tether_op)op);
        assert_non_null(name);
        tether_op back;
        assert_int_equal(tether_op_parse(name, &back), 0);
        assert_int_equal(back, op);
        switch (op) {
        case TETHER_OP_LOOP_BEGIN: /* the run-time Loop's markers: no graph of one of them runs; */
        case TETHER_OP_LOOP_STATE: /* tests/onnx/test_onnx_loop_c.c compares whole loops,      */
        case TETHER_OP_LOOP_END:   /* interpreter against generated C in both ABIs            */
        case TETHER_OP_LOOP_RESULT:
        case TETHER_OP_LOOP_COPY:
        case TETHER_OP_LOOP_SCAN:
        case TETHER_OP_LOOP_STACK:
            continue;
        default:
            break;
        }
        int have = 0;
        for (size_t i = 0; i < tt_num_op_cases; i++) {
            have |= (tt_op_cases[i].op == (tether_op)op || tt_op_cases[i].then == (tether_op)op) &&
                    (tt_op_cases[i].backends & TT_C);
        }
        if (!have) {
            fail_msg("operator %s has no case in tests/compiler/op_cases.c", name);
        }
    }
    assert_null(tether_op_name((tether_op)TETHER_OP_COUNT_));
}

/* The DATA family against hand-computed values, the run-time error of an index out of range in
 * the interpreter and in generated C (both ABIs), and constant folding (exact values; an index
 * out of range is an error naming the node). */
static void data_graph(tether_ir_graph *g, tether_op op, const tether_ir_attrs *a, int nin,
                       const int *ndim, const int64_t (*shape)[3], const DLDataType *dt,
                       const void *const *consts) {
    assert_int_equal(tether_ir_init(g, "data"), 0);
    int in[3], y;
    for (int i = 0; i < nin; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "in%d", i);
        size_t n = 1;
        for (int d = 0; d < ndim[i]; d++) {
            n *= (size_t)shape[i][d];
        }
        if (consts && consts[i]) {
            assert_int_equal(tether_ir_add_constant(g, nm, dt[i], ndim[i], shape[i], consts[i],
                                                    n * tether_dtype_bytes(dt[i]), &in[i]),
                             0);
        } else {
            assert_int_equal(tether_ir_add_tensor(g, nm, dt[i], ndim[i], shape[i], &in[i]), 0);
            assert_int_equal(tether_ir_add_input(g, in[i]), 0);
        }
    }
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    assert_int_equal(tether_ir_add_node(g, "op", op, in, nin, &y, 1, a, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

static void test_data_known_values(void **state) {
    (void)state;
    tether_ir_graph g;
    tether_ir_attrs a;
    const int nd1[2] = {1, 1};
    const int64_t sh[2][3] = {{4}, {3}};
    const DLDataType gdt[2] = {TETHER_FLOAT32, TETHER_INT64};
    /* gather: negative indices wrap */
    tether_ir_attrs_init(TETHER_OP_GATHER, &a);
    data_graph(&g, TETHER_OP_GATHER, &a, 2, nd1, sh, gdt, NULL);
    float x[4] = {10, 11, 12, 13}, y[3];
    int64_t idx[3] = {-1, 0, 2};
    const void *in[2] = {x, idx};
    void *out[1] = {y};
    assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
    assert_true(y[0] == 13.0f && y[1] == 10.0f && y[2] == 12.0f);
    for (int abi = 0; abi < 2; abi++) {
        memset(y, 0, sizeof y);
        assert_int_equal(tt_run_compiled(&g, "gather_known", (tether_abi)abi, TETHER_INTERFACE_C,
                                         true, (const float *const *)in, (float *const *)out),
                         0);
        assert_true(y[0] == 13.0f && y[1] == 10.0f && y[2] == 12.0f);
    }
    /* an index out of range (4 for an extent of 4, and -5): an error, never an access */
    int64_t bad[3] = {0, 4, -5};
    in[1] = bad;
    assert_int_equal(tether_interp_run_typed(&g, in, out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "index 4 out of range"));
    for (int abi = 0; abi < 2; abi++) {
        assert_int_not_equal(tt_run_compiled(&g, "gather_bad", (tether_abi)abi, TETHER_INTERFACE_C,
                                             true, (const float *const *)in, (float *const *)out),
                             0);
    }
    tether_ir_close(&g);
    /* folding: constant data and indices, the gather feeding a tile: the gather becomes a
     * constant of the exact values; with an index out of range folding fails naming the node */
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(tether_ir_init(&g, "fold"), 0);
        int t[4];
        assert_int_equal(
            tether_ir_add_constant(&g, "x", TETHER_FLOAT32, 1, sh[0], x, sizeof x, &t[0]), 0);
        assert_int_equal(tether_ir_add_constant(&g, "i", TETHER_INT64, 1, sh[1],
                                                pass ? (const void *)bad : (const void *)idx,
                                                sizeof idx, &t[1]),
                         0);
        assert_int_equal(tether_ir_add_tensor(&g, "g", TETHER_FLOAT32, -1, NULL, &t[2]), 0);
        assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &t[3]), 0);
        tether_ir_attrs ta;
        tether_ir_attrs_init(TETHER_OP_TILE, &ta);
        ta.nints = 1;
        ta.ints[0] = 3;
        assert_int_equal(
            tether_ir_add_node(&g, "gather", TETHER_OP_GATHER, t, 2, &t[2], 1, &a, NULL), 0);
        assert_int_equal(
            tether_ir_add_node(&g, "copy", TETHER_OP_TILE, &t[2], 1, &t[3], 1, &ta, NULL), 0);
        assert_int_equal(tether_ir_add_output(&g, t[3]), 0);
        assert_int_equal(tether_ir_infer(&g), 0);
        int rc = tether_pass_fold_constants(&g);
        if (pass) {
            assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
            assert_non_null(strstr(tether_last_error(), "gather"));
        } else {
            assert_int_equal(rc, 0);
            const tether_ir_tensor *gt = &g.tensors[tether_ir_find_tensor(&g, "g")];
            assert_int_equal(gt->kind, TETHER_TENSOR_CONSTANT);
            const float *v = gt->data;
            assert_true(v[0] == 13.0f && v[1] == 10.0f && v[2] == 12.0f);
        }
        tether_ir_close(&g);
    }
    /* topk (largest, indices) and arg_max (last of equal maxima) on int32 */
    const int nd2[1] = {1};
    const int64_t sh2[1][3] = {{5}};
    const DLDataType it[1] = {TETHER_INT32};
    int32_t xi[5] = {3, 7, -2, 7, 5};
    int64_t yi[3];
    const void *in1[1] = {xi};
    void *out1[1] = {yi};
    tether_ir_attrs_init(TETHER_OP_TOPK, &a);
    a.k = 3;
    a.mode = 7;
    data_graph(&g, TETHER_OP_TOPK, &a, 1, nd2, sh2, it, NULL);
    assert_int_equal(tether_interp_run_typed(&g, in1, out1), 0);
    assert_true(yi[0] == 1 && yi[1] == 3 && yi[2] == 4); /* 7 (first), 7, 5 */
    assert_int_equal(tt_run_compiled(&g, "topk_known", TETHER_ABI_PACKED, TETHER_INTERFACE_C, true,
                                     (const float *const *)in1, (float *const *)out1),
                     0);
    assert_true(yi[0] == 1 && yi[1] == 3 && yi[2] == 4);
    tether_ir_close(&g);
    tether_ir_attrs_init(TETHER_OP_ARG_MAX, &a);
    a.mode = 1;
    data_graph(&g, TETHER_OP_ARG_MAX, &a, 1, nd2, sh2, it, NULL);
    assert_int_equal(tether_interp_run_typed(&g, in1, out1), 0);
    assert_true(yi[0] == 3);
    tether_ir_close(&g);
    /* cumsum exclusive: 0, 3, 10, 8, 15 */
    tether_ir_attrs_init(TETHER_OP_CUMSUM, &a);
    a.mode = 1;
    data_graph(&g, TETHER_OP_CUMSUM, &a, 1, nd2, sh2, it, NULL);
    int32_t ys[5];
    out1[0] = ys;
    assert_int_equal(tether_interp_run_typed(&g, in1, out1), 0);
    assert_true(ys[0] == 0 && ys[1] == 3 && ys[2] == 10 && ys[3] == 8 && ys[4] == 15);
    tether_ir_close(&g);
}

int main(void) {
    /* the shared cases this backend runs, then the tests of this file */
    struct CMUnitTest *tests = calloc(tt_num_op_cases + 16, sizeof *tests);
    if (!tests) {
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < tt_num_op_cases; i++) {
        if (tt_op_cases[i].backends & TT_C) {
            tests[n++] = (struct CMUnitTest){tt_op_cases[i].name, test_case, NULL, NULL,
                                             (void *)&tt_op_cases[i]};
        }
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_every_op_has_a_case);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interpreter_known_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_params_blob);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_log_softmax_large_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_erf_known_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_math_known_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_conv_transpose_known_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_reduce_known_values);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_empty_tensors);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_data_known_values);
    if (getenv("TT_OPS_FILTER")) { /* e.g. TT_OPS_FILTER='nms*' runs those cases only */
        cmocka_set_test_filter(getenv("TT_OPS_FILTER"));
    }
    int rc = _cmocka_run_group_tests("compiler_ops", tests, n, NULL, NULL);
    free(tests);
    return rc;
}
