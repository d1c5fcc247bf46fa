/*
 * The integer elementwise and pooling operators (docs/quantization.md "Integer elementwise and
 * pooling operators"): a residual int8 block in QDQ form (conv -> relu -> add with the skip ->
 * relu, max_pool with a new scale, sigmoid, concat of differently scaled inputs, mul, avg_pool
 * with uncounted padding) goes through the integer pass with no float operator left between
 * its input quantize and output dequantize; the integer result is within one output step of the
 * float islands' (>= 90% of elements equal after 8 chained requantizations), generated C equals the
 * interpreter byte for byte in both ABIs, and the integer kernels' text has no float arithmetic.
 * The block with a broadcasting add, a uint8 stage and a leaky_relu (QB_BCAST) is integer
 * throughout too (within 2 steps after 11 requantizations), C == interpreter. qadd and qmul on
 * exact rounding ties equal the float islands, C == interpreter. The block with int8
 * graph input and output (QB_INT_ENDS) is integer end to end, equals the float-ended block's
 * quantized output, and its Cortex-M3 object needs no soft-float helper or float libm function
 * (arm-none-eabi-nm -u; the float-ended block as the control that needs them; skipped without
 * arm-none-eabi-gcc).
 *
 * What must stay true: the float reference is the same graph without the pass (the interpreter
 * running the float islands).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ops_common.h"
#include "qelt_block.h"
#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static void test_residual_block_integer(void **state) {
    (void)state;
    tether_ir_graph g, h;
    qb_build(&g, 0);
    qb_build(&h, 0);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o)) {
        fail_msg("%s", tether_last_error());
    }
    /* no float operator left: only the input quantize and the output dequantize touch floats */
    int nint = 0;
    for (int i = 0; i < h.nnodes; i++) {
        tether_op op = h.nodes[i].op;
        if (op == TETHER_OP_QUANTIZE || op == TETHER_OP_DEQUANTIZE) {
            continue;
        }
        nint++;
        if (tether_dtype_equal(h.tensors[h.nodes[i].outputs[0]].dtype, TETHER_FLOAT32)) {
            fail_msg("node %s (%s) is still float", h.nodes[i].name, tether_op_name(op));
        }
    }
    assert_true(nint >= 8);
    enum { NX = 256, NY = 128 };
    float x[NX], ref[NY], got[NY], cc[NY];
    uint32_t seed = 5;
    tt_fill(x, NX, false, &seed);
    for (int i = 0; i < NX; i++) {
        x[i] *= 4.0f; /* saturates some inputs */
    }
    const float *in[1] = {x};
    float *o1[1] = {ref}, *o2[1] = {got}, *o3[1] = {cc};
    assert_int_equal(tether_interp_run(&g, in, o1), 0);
    assert_int_equal(tether_interp_run(&h, in, o2), 0);
    int off = 0;
    for (int i = 0; i < NY; i++) {
        float d = fabsf(ref[i] - got[i]);
        if (d > 0.01f * 1.0001f) {
            fail_msg("element %d: float islands %g, integer %g (more than one step)", i,
                     (double)ref[i], (double)got[i]);
        }
        off += d > 0.0f;
    }
    print_message("integer vs float islands: %d of %d elements one step apart\n", off, NY);
    /* one-step differences of 8 chained requantizations carry on (5 of 128 measured); every
     * element is within one step, >= 90% equal */
    assert_true(off * 10 <= NY);
    static const tether_abi abis[2] = {TETHER_ABI_UNPACKED, TETHER_ABI_PACKED};
    for (int k = 0; k < 2; k++) {
        memset(cc, 0, sizeof cc);
        if (tt_run_compiled(&h, k ? "qelt_packed" : "qelt_unpacked", abis[k],
                            TETHER_INTERFACE_PACKED, true, in, o3)) {
            fail_msg("%s", tether_last_error());
        }
        assert_memory_equal(cc, got, sizeof got);
    }
    /* the integer kernels' text: no float type, literal or call */
    tether_memplan plan;
    tether_codegen_options co;
    tether_codegen_output out;
    tether_codegen_options_init(&co);
    assert_int_equal(tether_memplan_build(&h, NULL, &plan), 0);
    assert_int_equal(tether_codegen_c(&h, &plan, &co, &out), 0);
    int checked = 0;
    for (const char *k = out.source, *end; (end = strstr(k, "\n}\n")) != NULL; k = end + 3) {
        char *body = strndup(k, (size_t)(end - k));
        if (strstr(body, "tgk_") && strstr(body, "tgq_") && !strstr(body, "tgq_rne") &&
            !strstr(body, "(float)") && !strstr(body, "static inline")) {
            assert_null(strstr(body, "float"));
            assert_null(strstr(body, "double"));
            checked++;
        }
        free(body);
    }
    print_message("%d integer kernels checked for float arithmetic\n", checked);
    assert_true(checked >= 4); /* qconv, qadd, qmul, qavg_pool at least */
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

/* The block with a broadcasting add of a per-channel constant and a uint8 stage (scalar mul,
 * avg_pool with ceil_mode, leaky_relu): every node integer, C == interpreter. */
static void test_broadcast_uint8_integer(void **state) {
    (void)state;
    tether_ir_graph g, h;
    qb_build(&g, QB_BCAST);
    qb_build(&h, QB_BCAST);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o)) {
        fail_msg("%s", tether_last_error());
    }
    int seen[5] = {0};
    for (int i = 0; i < h.nnodes; i++) {
        tether_op op = h.nodes[i].op;
        if (op == TETHER_OP_QUANTIZE || op == TETHER_OP_DEQUANTIZE) {
            continue;
        }
        if (tether_dtype_equal(h.tensors[h.nodes[i].outputs[0]].dtype, TETHER_FLOAT32)) {
            fail_msg("node %s (%s) is still float", h.nodes[i].name, tether_op_name(op));
        }
        seen[0] += op == TETHER_OP_QADD;
        seen[1] += op == TETHER_OP_QMUL;
        seen[2] += op == TETHER_OP_QLUT;
        seen[3] += op == TETHER_OP_QMAX_POOL;
        seen[4] += op == TETHER_OP_QAVG_POOL;
    }
    assert_int_equal(seen[0], 2);
    assert_int_equal(seen[1], 2);
    assert_true(seen[2] >= 2);
    assert_int_equal(seen[3], 1);
    assert_int_equal(seen[4], 2);
    enum { NX = 256, NY = 120 }; /* y [1, 8, 5, 3] */
    float x[NX], ref[NY], got[NY], cc[NY];
    uint32_t seed = 9;
    tt_fill(x, NX, false, &seed);
    for (int i = 0; i < NX; i++) {
        x[i] *= 4.0f;
    }
    const float *in[1] = {x};
    float *o1[1] = {ref}, *o2[1] = {got}, *o3[1] = {cc};
    assert_int_equal(tether_interp_run(&g, in, o1), 0);
    assert_int_equal(tether_interp_run(&h, in, o2), 0);
    int off = 0, worst = 0;
    for (int i = 0; i < NY; i++) {
        int steps = (int)lrintf(fabsf(ref[i] - got[i]) / 0.01f);
        worst = steps > worst ? steps : worst;
        off += steps > 0;
    }
    print_message("integer vs float islands: %d of %d elements apart, at most %d steps\n", off, NY,
                  worst);
    /* 11 chained requantizations: one-step differences carry into the next operators
     * (measured: 12 of 120 elements apart, at most 2 steps) */
    assert_true(worst <= 2);
    assert_true(off * 100 <= NY * 15);
    memset(cc, 0, sizeof cc);
    if (tt_run_compiled(&h, "qelt_bcast", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true, in,
                        o3)) {
        fail_msg("%s", tether_last_error());
    }
    assert_memory_equal(cc, got, sizeof got);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

/* qadd and qmul on exact rounding ties (multipliers 1/2): equal to the float islands (which
 * quantize the exact halves half to even too), C == interpreter. */
static void test_rounding_ties(void **state) {
    (void)state;
    tether_ir_graph g, h;
    qb_build_ties(&g);
    qb_build_ties(&h);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o)) {
        fail_msg("%s", tether_last_error());
    }
    int nadd = 0, nmul = 0;
    for (int i = 0; i < h.nnodes; i++) {
        nadd += h.nodes[i].op == TETHER_OP_QADD;
        nmul += h.nodes[i].op == TETHER_OP_QMUL;
    }
    assert_int_equal(nadd, 1);
    assert_int_equal(nmul, 1);
    float x[64], r0[64], r1[64], i0[64], i1[64], c0[64], c1[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)i * 0.25f - 8.0f;
    }
    const float *in[1] = {x};
    float *ref[2] = {r0, r1}, *got[2] = {i0, i1}, *cc[2] = {c0, c1};
    assert_int_equal(tether_interp_run(&g, in, ref), 0);
    assert_int_equal(tether_interp_run(&h, in, got), 0);
    assert_memory_equal(r0, i0, sizeof r0);
    assert_memory_equal(r1, i1, sizeof r1);
    if (tt_run_compiled(&h, "qelt_ties", TETHER_ABI_UNPACKED, TETHER_INTERFACE_PACKED, true, in,
                        cc)) {
        fail_msg("%s", tether_last_error());
    }
    assert_memory_equal(c0, i0, sizeof c0);
    assert_memory_equal(c1, i1, sizeof c1);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

/* MaxPool reading an 8-bit tensor directly (QOperator models; imported as max_pool_arg's values)
 * becomes qmax_pool when every window holds an input element; the same bytes as before the pass,
 * interpreter and C; with ceil_mode it stays. */
static void test_maxpool_arg_8bit(void **state) {
    (void)state;
    for (int v = 0; v < 3; v++) {
        tether_ir_graph g, h;
        tether_ir_graph *gs[2] = {&g, &h};
        DLDataType t = v == 1 ? TETHER_UINT8 : TETHER_INT8;
        for (int k = 0; k < 2; k++) {
            assert_int_equal(tether_ir_init(gs[k], "mpa"), 0);
            int64_t sx[4] = {1, 3, 7, 6};
            int x, y;
            assert_int_equal(tether_ir_add_tensor(gs[k], "x", t, 4, sx, &x), 0);
            assert_int_equal(tether_ir_add_input(gs[k], x), 0);
            assert_int_equal(tether_ir_add_tensor(gs[k], "y", t, -1, NULL, &y), 0);
            tether_ir_attrs a;
            tether_ir_attrs_init(TETHER_OP_MAX_POOL_ARG, &a);
            a.kernel[0] = 3;
            a.kernel[1] = 2;
            a.strides[0] = a.strides[1] = 2;
            a.pads[0] = a.pads[1] = a.pads[2] = 1;
            a.ceil_mode = v == 2;
            assert_int_equal(
                tether_ir_add_node(gs[k], "pool", TETHER_OP_MAX_POOL_ARG, &x, 1, &y, 1, &a, NULL),
                0);
            assert_int_equal(tether_ir_add_output(gs[k], y), 0);
            assert_int_equal(tether_ir_infer(gs[k]), 0);
        }
        tether_pass_options o;
        tether_pass_options_init(&o);
        if (tether_passes_run(&h, &o)) {
            fail_msg("%s", tether_last_error());
        }
        int q = 0;
        for (int i = 0; i < h.nnodes; i++) {
            q += h.nodes[i].op == TETHER_OP_QMAX_POOL;
        }
        assert_int_equal(q, v == 2 ? 0 : 1);
        uint8_t x[126], r[64], o1[64];
        uint32_t seed = 3u + (uint32_t)v;
        for (int i = 0; i < 126; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = (uint8_t)(seed >> 24);
        }
        size_t ny = tether_ir_tensor_elements(&h.tensors[h.outputs[0]]);
        assert_true(ny <= sizeof r);
        const void *in[1] = {x};
        void *out[1] = {r}, *out1[1] = {o1};
        memset(r, 0x55, sizeof r);
        memset(o1, 0xaa, sizeof o1);
        assert_int_equal(tether_interp_run_typed(&g, in, out), 0);
        assert_int_equal(tether_interp_run_typed(&h, in, out1), 0);
        assert_memory_equal(r, o1, ny);
        tether_ir_close(&g);
        tether_ir_close(&h);
    }
}

/* Compiles g for cortex-m3 (an object kept in <binary dir>/tests/compiler/<tag>) and counts the
 * undefined symbols of the object that are soft-float helpers (__aeabi_f*, __aeabi_d*, int to
 * float conversions) or float libm functions; *first names the first (static storage). */
static int m3_float_symbols(tether_ir_graph *g, const char *tag, const char **first) {
    static char name[200];
    tether_compile_options co;
    tether_compile_options_init(&co);
    co.codegen.prefix = "qelt";
    co.build.target = "cortex-m3";
    co.build.keep_objects = true;
    char dir[1024], cmd[1400];
    snprintf(dir, sizeof dir, "%s/tests/compiler/%s", TETHER_BINARY_DIR, tag);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    tether_compile_result res;
    if (tether_compile_graph(g, dir, &co, &res)) {
        fail_msg("cortex-m3: %s", tether_last_error());
    }
    assert_true(res.built);
    snprintf(cmd, sizeof cmd, "arm-none-eabi-nm '%s/qelt.o'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char ln[256];
    int defined = 0, undefined = 0, bad = 0;
    while (fgets(ln, sizeof ln, p)) {
        char a[200], b[200], c[200];
        int k = sscanf(ln, "%199s %199s %199s", a, b, c);
        if (k == 2 && strcmp(a, "U") == 0) {
            static const char *const fl[] = {"expf",  "logf",       "sqrtf",  "tanhf",  "powf",
                                             "exp",   "log",        "sqrt",   "floorf", "roundf",
                                             "fabsf", "nearbyintf", "lrintf", "rintf"};
            int isf = strncmp(b, "__aeabi_f", 9) == 0 || strncmp(b, "__aeabi_d", 9) == 0 ||
                      strncmp(b, "__aeabi_i2f", 11) == 0 || strncmp(b, "__aeabi_ui2f", 12) == 0 ||
                      strncmp(b, "__aeabi_l2f", 11) == 0 || strncmp(b, "__aeabi_ul2f", 12) == 0;
            for (size_t q = 0; q < sizeof fl / sizeof *fl; q++) {
                isf |= strcmp(b, fl[q]) == 0;
            }
            if (isf && !bad++) {
                snprintf(name, sizeof name, "%s", b);
                *first = name;
            }
            undefined++;
        } else if (k == 3) {
            defined++;
        }
    }
    assert_int_equal(pclose(p), 0);
    print_message("%s: %d defined, %d undefined symbols, %d float\n", tag, defined, undefined, bad);
    assert_true(defined > 0); /* the check read the object */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    return bad;
}

/* The block with int8 graph input and output (no float at either end): every node is an integer
 * operator, its output is the float-ended block's (integer pass run) quantized output exactly, and
 * its Cortex-M3 object (no FPU) needs no soft-float helper (__aeabi_f*, __aeabi_d*) or float libm
 * function. The object check is skipped without arm-none-eabi-gcc. */
static void test_int_ends_cortex_m3(void **state) {
    (void)state;
    tether_ir_graph f, g, h;
    qb_build(&f, 0);
    qb_build(&g, QB_INT_ENDS);
    qb_build(&h, QB_INT_ENDS);
    tether_pass_options o;
    tether_pass_options_init(&o);
    if (tether_passes_run(&h, &o) || tether_passes_run(&f, &o)) {
        fail_msg("%s", tether_last_error());
    }
    for (int i = 0; i < h.nnodes; i++) {
        for (int j = 0; j < h.nodes[i].noutputs; j++) {
            if (h.tensors[h.nodes[i].outputs[j]].dtype.code == kDLFloat) {
                fail_msg("node %s (%s) writes a float tensor", h.nodes[i].name,
                         tether_op_name(h.nodes[i].op));
            }
        }
    }
    /* int8 inputs; the float-ended block gets their dequantized values (quantize gives them back)
     */
    enum { NX = 256, NY = 128 };
    int8_t xq[NX], yq[NY];
    float x[NX], ref[NY];
    uint32_t seed = 21;
    for (int i = 0; i < NX; i++) {
        seed = seed * 1664525u + 1013904223u;
        xq[i] = (int8_t)((int)(seed >> 24) - 128);
        x[i] = (float)(xq[i] - 2) * 0.03f;
    }
    const float *in[1] = {x};
    float *out[1] = {ref};
    const void *tin[1] = {xq};
    void *tout[1] = {yq};
    assert_int_equal(tether_interp_run(&f, in, out), 0);
    assert_int_equal(tether_interp_run_typed(&h, tin, tout), 0);
    for (int i = 0; i < NY; i++) {
        if ((float)(yq[i] + 50) * 0.01f != ref[i]) {
            fail_msg("element %d: int8 %d, float-ended %g", i, yq[i], (double)ref[i]);
        }
    }
    const tether_target *t;
    if (tether_target_find("cortex-m3", &t) != 0 || !tether_target_available(t)) {
        print_message("skipped the Cortex-M3 object check: no arm-none-eabi-gcc\n");
    } else {
        const char *first = NULL;
        assert_int_equal(m3_float_symbols(&g, "qelt-m3", &first), 0);
        /* the control: the float-ended block quantizes its input in float (soft-float) */
        tether_ir_graph c;
        qb_build(&c, 0);
        assert_true(m3_float_symbols(&c, "qelt-m3-float", &first) > 0);
        print_message("the float-ended block's object needs %s\n", first);
        tether_ir_close(&c);
    }
    tether_ir_close(&f);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_residual_block_integer),
        cmocka_unit_test(test_broadcast_uint8_integer),
        cmocka_unit_test(test_rounding_ties),
        cmocka_unit_test(test_maxpool_arg_8bit),
        cmocka_unit_test(test_int_ends_cortex_m3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
