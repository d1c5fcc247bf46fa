/*
 * The OpenCL backend's run-time errors on PoCL (emit_opencl_check.c, host/lib/opencl_run.c;
 * docs/codegen.md "Run-time errors"): for every kernel that checks an index at run time (gather,
 * gather_elements, gather_nd, scatter_elements, scatter_nd, roi_align's batch indices,
 * max_unpool, the sequence lengths of rnn/gru/lstm and reverse_sequence) the case of
 * tests/compiler/op_cases*.h runs with indices in range (outputs as the interpreter's), then with
 * one index out of range: the run fails with TETHER_ERR_INVALID_ARG (the interpreter's and the C
 * path's code) naming the node and the check, copying no output, then runs in range again (the
 * flag was cleared). A graph without such a kernel has no status object. (--precision fp16
 * holds float32 graphs only, so no index operand reaches a half artifact.)
 *
 * What must stay true: tetherd is started by the test (local:) and stopped at the end; every
 * assertion is on return codes, messages and output values.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen_common.h"
#include "ops_common.h"
#include "tether/artifact.h"

/* The case's node alone, every operand a graph input: float32, the index operand ix of type it
 * (ix -1: none). */
static void build_case(tether_ir_graph *g, const tt_op_case *c, int ix, DLDataType it) {
    assert_int_equal(tether_ir_init(g, c->name), 0);
    int in[TT_MAXIN], y;
    for (int i = 0; i < c->nin; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "in%d", i);
        assert_int_equal(tether_ir_add_tensor(g, nm, i == ix ? it : TETHER_FLOAT32, c->ndim[i],
                                              c->shape[i], &in[i]),
                         0);
        assert_int_equal(tether_ir_add_input(g, in[i]), 0);
    }
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(c->op, &a);
    if (c->attrs) {
        c->attrs(&a);
    }
    assert_int_equal(tether_ir_add_node(g, c->name, c->op, in, c->nin, &y, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s: %s", c->name, tether_last_error());
    }
}

static const tt_op_case *find_case(const char *name) {
    for (size_t k = 0; k < tt_num_op_cases; k++) {
        if (!strcmp(tt_op_cases[k].name, name)) {
            return &tt_op_cases[k];
        }
    }
    fail_msg("no operator case '%s'", name);
    return NULL;
}

static size_t elems(const tether_ir_graph *g, int t) {
    return tether_ir_tensor_elements(&g->tensors[t]);
}

/* Runs the case good, bad (index input bad_in all `bad`), good again on one prepared artifact;
 * the index operand is int64 (int32: i32). */
static void check_case(const char *name, int bad_in, long long bad, int i32) {
    const tt_op_case *c = find_case(name);
    tether_ir_graph g;
    build_case(&g, c, bad_in, i32 ? TETHER_DTYPE(kDLInt, 32) : TETHER_DTYPE(kDLInt, 64));
    void *in[TT_MAXIN];
    uint32_t seed = 7;
    for (int i = 0; i < g.ninputs; i++) {
        size_t n = elems(&g, g.inputs[i]);
        in[i] = calloc(n ? n : 1, 8);
        if (i != bad_in) { /* the index operand stays 0: in range */
            tt_fill(in[i], n, (c->positive >> i) & 1u, &seed);
        }
    }
    size_t ny = elems(&g, g.outputs[0]);
    float *ref = calloc(ny ? ny : 1, sizeof(float)), *y = calloc(ny ? ny : 1, sizeof(float));
    assert_int_equal(tether_interp_run_typed(&g, (const void *const *)in, (void *const *)&ref), 0);
    char dir[128];
    compile_ocl(&g, false, true, dir, sizeof dir);
    char path[400];
    snprintf(path, sizeof path, "grep -q '\"status\"' %s/metadata.json && grep -q tg_err %s/m.cl",
             dir, dir);
    assert_int_equal(system(path), 0);
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    if (tether_artifact_prepare(a, g_s, NULL)) {
        fail_msg("%s: prepare: %s", name, tether_last_error());
    }
    for (int pass = 0; pass < 3; pass++) {
        size_t n = elems(&g, g.inputs[bad_in]);
        for (size_t k = 0; k < n; k++) {
            long long v = pass == 1 ? bad : 0;
            if (i32) {
                ((int32_t *)in[bad_in])[k] = (int32_t)v;
            } else {
                ((int64_t *)in[bad_in])[k] = (int64_t)v;
            }
        }
        for (size_t k = 0; k < ny; k++) {
            y[k] = NAN;
        }
        int rc = tether_artifact_run(a, (const void *const *)in, (void *const *)&y, NULL, NULL);
        if (pass == 1) {
            char msg[TETHER_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", tether_last_error());
            assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
            char want[160];
            snprintf(want, sizeof want, "node '%s'", name);
            if (!strstr(msg, want) || !strstr(msg, "out of")) {
                fail_msg("%s: the message does not name the node and check: %s", name, msg);
            }
            for (size_t k = 0; k < ny; k++) {
                assert_true(isnan(y[k])); /* no output copied */
            }
            /* the interpreter refuses the same input with the same code */
            assert_int_equal(
                tether_interp_run_typed(&g, (const void *const *)in, (void *const *)&ref),
                TETHER_ERR_INVALID_ARG);
            continue;
        }
        if (rc) {
            fail_msg("%s: run %d: %s", name, pass, tether_last_error());
        }
        assert_int_equal(tether_interp_run_typed(&g, (const void *const *)in, (void *const *)&ref),
                         0);
        double tol = 1e-5;
        if (tt_close(y, ref, ny, tol, tol) > 1.0) {
            fail_msg("%s: run %d differs from the interpreter", name, pass);
        }
    }
    tether_artifact_free(a);
    assert_int_equal(tether_session_reset(g_s), 0);
    rm_tree(dir);
    for (int i = 0; i < g.ninputs; i++) {
        free(in[i]);
    }
    free(ref);
    free(y);
    tether_ir_close(&g);
}

static const struct {
    const char *name;
    int bad_in;
    long long bad;
    int i32;
} cases[] = {
    {"gather_axis1", 1, 1000, 0},
    {"gather_elements", 1, -1000, 0},
    {"gather_nd_batch", 1, 1000, 0},
    {"scatter_elements_max", 1, 1000, 0},
    {"scatter_nd_mul", 1, -1000, 0},
    {"roi_align_max_adaptive", 2, 1000, 0},
    {"max_unpool_padded", 1, 1000, 0},
    {"rnn_reverse_lens", 4, 1000, 1},
    {"lstm_bidir_lens_states_peepholes", 4, -3, 1},
    {"reverse_sequence", 1, 1000, 0},
};

static void test_bad_indices(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_case(cases[i].name, cases[i].bad_in, cases[i].bad, cases[i].i32);
    }
}

/* A graph without a checking kernel has no status object and no "errors". */
static void test_no_status_without_checks(void **state) {
    (void)state;
    tether_ir_graph g;
    int64_t s[2] = {2, 3};
    int x, y;
    assert_int_equal(tether_ir_init(&g, "plain"), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "x", TETHER_FLOAT32, 2, s, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, 2, s, &y), 0);
    int in[2] = {x, x};
    assert_int_equal(tether_ir_add_node(&g, "add", TETHER_OP_ADD, in, 2, &y, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(&g, x), 0);
    assert_int_equal(tether_ir_add_output(&g, y), 0);
    assert_int_equal(tether_ir_infer(&g), 0);
    char dir[128], cmd[800];
    compile_ocl(&g, false, true, dir, sizeof dir);
    snprintf(cmd, sizeof cmd,
             "! grep -q '\"status\"' %s/metadata.json && ! grep -q '\"errors\"' %s/metadata.json "
             "&& ! grep -q tg_err %s/m.cl",
             dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    rm_tree(dir);
    tether_ir_close(&g);
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/toclerrXXXXXX");
    if (!mkdtemp(g_tmp)) {
        return 1;
    }
    if (open_local(&g_s)) {
        fprintf(stderr, "cannot start tetherd: %s\n", tether_last_error());
        rm_tree(g_tmp);
        return 1;
    }
    if (!tether_session_info(g_s)->opencl) {
        printf("skipped: tetherd reports no OpenCL device\n");
        tether_session_close(g_s);
        rm_tree(g_tmp);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_indices),
        cmocka_unit_test(test_no_status_without_checks),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tether_session_close(g_s);
    rm_tree(g_tmp);
    return rc;
}
