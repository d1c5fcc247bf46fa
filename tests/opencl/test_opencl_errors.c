/*
 * The OpenCL backend's run-time errors on PoCL (emit_opencl_check.c, host/lib/opencl_run.c;
 * docs/codegen.md "Run-time errors"): for every kernel that checks an index at run time (gather,
 * gather_elements, gather_nd, scatter_elements, scatter_nd, roi_align's batch indices,
 * max_unpool, the sequence lengths of rnn/gru/lstm and reverse_sequence) the case of
 * tests/compiler/op_cases*.h is a node of one program (one PoCL build); the program runs with
 * every index in range (outputs as the interpreter's), then, node by node, with that node's
 * indices out of range: the run fails with TETHER_ERR_INVALID_ARG (the interpreter's and the C
 * path's code) naming the node and the check, copying no output, then runs in range again (the
 * flag was cleared). A graph without such a kernel has no status object. (--precision fp16
 * holds float32 graphs only, so no index operand reaches a half artifact.) A damaged "errors"
 * list or status object in metadata.json (missing, wrong type, value or code out of range, empty
 * names, two status objects, none) is refused before any kernel runs, naming the problem; a flag
 * value "errors" does not name fails the run (TETHER_ERR_INTERNAL).
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
#include "tether/file.h"

static const struct {
    const char *name;
    int bad_in; /* the index operand */
    long long bad;
    int i32; /* the index operand is int32 (else int64) */
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
#define NCASES ((int)(sizeof cases / sizeof *cases))

static const tt_op_case *find_case(const char *name) {
    for (size_t k = 0; k < tt_num_op_cases; k++) {
        if (!strcmp(tt_op_cases[k].name, name)) {
            return &tt_op_cases[k];
        }
    }
    fail_msg("no operator case '%s'", name);
    return NULL;
}

/* Every case's node, its operands graph inputs (float32; the index operand int64/int32), its
 * output graph output k; first[k]: the case's first input, idx[k] its index input. */
static void build(tether_ir_graph *g, int *first, int *idx) {
    assert_int_equal(tether_ir_init(g, "checks"), 0);
    for (int k = 0; k < NCASES; k++) {
        const tt_op_case *c = find_case(cases[k].name);
        int in[TT_MAXIN], y;
        first[k] = g->ninputs;
        for (int i = 0; i < c->nin; i++) {
            char nm[96];
            snprintf(nm, sizeof nm, "%s.in%d", c->name, i);
            DLDataType t = i != cases[k].bad_in ? TETHER_FLOAT32
                           : cases[k].i32       ? TETHER_DTYPE(kDLInt, 32)
                                                : TETHER_DTYPE(kDLInt, 64);
            assert_int_equal(tether_ir_add_tensor(g, nm, t, c->ndim[i], c->shape[i], &in[i]), 0);
            if (i == cases[k].bad_in) {
                idx[k] = g->ninputs;
            }
            assert_int_equal(tether_ir_add_input(g, in[i]), 0);
        }
        char yn[96];
        snprintf(yn, sizeof yn, "%s.y", c->name);
        assert_int_equal(tether_ir_add_tensor(g, yn, TETHER_FLOAT32, -1, NULL, &y), 0);
        tether_ir_attrs a;
        tether_ir_attrs_init(c->op, &a);
        if (c->attrs) {
            c->attrs(&a);
        }
        assert_int_equal(tether_ir_add_node(g, c->name, c->op, in, c->nin, &y, 1, &a, NULL), 0);
        assert_int_equal(tether_ir_add_output(g, y), 0);
    }
    if (tether_ir_infer(g)) {
        fail_msg("%s", tether_last_error());
    }
}

static size_t elems(const tether_ir_graph *g, int t) {
    return tether_ir_tensor_elements(&g->tensors[t]);
}

/* Index input i (case k) all v. */
static void set_index(const tether_ir_graph *g, void **in, int i, int k, long long v) {
    size_t n = elems(g, g->inputs[i]);
    for (size_t j = 0; j < n; j++) {
        if (cases[k].i32) {
            ((int32_t *)in[i])[j] = (int32_t)v;
        } else {
            ((int64_t *)in[i])[j] = (int64_t)v;
        }
    }
}

static void test_bad_indices(void **state) {
    (void)state;
    tether_ir_graph g;
    int first[NCASES], idx[NCASES];
    build(&g, first, idx);
    void *in[64], *ref[NCASES], *y[NCASES];
    assert_true(g.ninputs <= 64 && g.noutputs == NCASES);
    uint32_t seed = 7;
    for (int i = 0, k = 0; i < g.ninputs; i++) {
        size_t n = elems(&g, g.inputs[i]);
        in[i] = calloc(n ? n : 1, 8); /* index operands 0: in range */
        while (k + 1 < NCASES && i >= first[k + 1]) {
            k++;
        }
        if (i != idx[k]) {
            tt_fill(in[i], n, (find_case(cases[k].name)->positive >> (i - first[k])) & 1u, &seed);
        }
    }
    for (int k = 0; k < NCASES; k++) {
        size_t n = elems(&g, g.outputs[k]);
        ref[k] = calloc(n ? n : 1, sizeof(float));
        y[k] = calloc(n ? n : 1, sizeof(float));
    }
    assert_int_equal(tether_interp_run_typed(&g, (const void *const *)in, ref), 0);
    char dir[128], cmd[400];
    compile_ocl(&g, false, true, dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "grep -q '\"status\"' %s/metadata.json && grep -q tg_err %s/m.cl",
             dir, dir);
    assert_int_equal(system(cmd), 0);
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    if (tether_artifact_prepare(a, g_s, NULL)) {
        fail_msg("prepare: %s", tether_last_error());
    }
    /* run -1: all in range; run k: case k's indices out of range; the last: in range again */
    for (int run = -1; run <= NCASES; run++) {
        int bad = run >= 0 && run < NCASES;
        if (bad) {
            set_index(&g, in, idx[run], run, cases[run].bad);
        }
        for (int k = 0; k < NCASES; k++) {
            size_t n = elems(&g, g.outputs[k]);
            for (size_t j = 0; j < n; j++) {
                ((float *)y[k])[j] = NAN;
            }
        }
        int rc = tether_artifact_run(a, (const void *const *)in, y, NULL, NULL);
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        if (!bad) {
            if (rc) {
                fail_msg("run %d: %s", run, msg);
            }
            for (int k = 0; k < NCASES; k++) {
                if (tt_close(y[k], ref[k], elems(&g, g.outputs[k]), 1e-5, 1e-5) > 1.0) {
                    fail_msg("run %d: %s differs from the interpreter", run, cases[k].name);
                }
            }
            continue;
        }
        assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
        char want[160];
        snprintf(want, sizeof want, "node '%s'", cases[run].name);
        if (!strstr(msg, want) || !strstr(msg, " out of ")) {
            fail_msg("%s: the message does not name the node and the check: %s", cases[run].name,
                     msg);
        }
        for (int k = 0; k < NCASES; k++) { /* no output copied */
            assert_true(isnan(((float *)y[k])[0]));
        }
        /* the interpreter (ground truth, as the C path) refuses the same input, same code */
        void *scratch[NCASES];
        for (int k = 0; k < NCASES; k++) {
            scratch[k] = calloc(elems(&g, g.outputs[k]) + 1, sizeof(float));
        }
        assert_int_equal(tether_interp_run_typed(&g, (const void *const *)in, scratch),
                         TETHER_ERR_INVALID_ARG);
        for (int k = 0; k < NCASES; k++) {
            free(scratch[k]);
        }
        set_index(&g, in, idx[run], run, 0);
    }
    tether_artifact_free(a);
    assert_int_equal(tether_session_reset(g_s), 0);
    rm_tree(dir);
    for (int i = 0; i < g.ninputs; i++) {
        free(in[i]);
    }
    for (int k = 0; k < NCASES; k++) {
        free(ref[k]);
        free(y[k]);
    }
    tether_ir_close(&g);
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

/* One checking node (Gather, indices int64 graph input 1), compiled into a fresh directory. */
static void build_gather(tether_ir_graph *g, char *dir, size_t n) {
    int64_t xs[2] = {3, 4}, is[1] = {2};
    int x, i, y;
    assert_int_equal(tether_ir_init(g, "one_gather"), 0);
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 2, xs, &x), 0);
    assert_int_equal(tether_ir_add_tensor(g, "i", TETHER_DTYPE(kDLInt, 64), 1, is, &i), 0);
    assert_int_equal(tether_ir_add_tensor(g, "y", TETHER_FLOAT32, -1, NULL, &y), 0);
    int in[2] = {x, i};
    assert_int_equal(tether_ir_add_node(g, "pick", TETHER_OP_GATHER, in, 2, &y, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    assert_int_equal(tether_ir_add_input(g, i), 0);
    assert_int_equal(tether_ir_add_output(g, y), 0);
    if (tether_ir_infer(g)) {
        fail_msg("%s", tether_last_error());
    }
    compile_ocl(g, false, true, dir, n);
}

static cJSON *status_mem(cJSON *m) {
    cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(m, "memory")) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, "status")) {
            return o;
        }
    }
    fail_msg("metadata.json has no status memory object");
    return NULL;
}

static cJSON *err0(cJSON *m) {
    cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "errors"), 0);
    assert_non_null(e);
    return e;
}

static void set(cJSON *o, const char *key, cJSON *v) {
    if (cJSON_GetObjectItemCaseSensitive(o, key)) {
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    } else {
        cJSON_AddItemToObject(o, key, v);
    }
}

/* The damages of test_damaged_errors: edit k of metadata m. */
static void damage(cJSON *m, int k) {
    cJSON *st = status_mem(m);
    switch (k) {
    case 0: /* missing */
        cJSON_DeleteItemFromObjectCaseSensitive(m, "errors");
        break;
    case 1: /* wrong type */
        set(m, "errors", cJSON_CreateString("pick"));
        break;
    case 2: /* empty */
        set(m, "errors", cJSON_CreateArray());
        break;
    case 3: /* value out of range (the flag's 1..n) */
        set(err0(m), "value", cJSON_CreateNumber(2));
        break;
    case 4:
        set(err0(m), "value", cJSON_CreateNumber(0));
        break;
    case 5: /* not an error code */
        set(err0(m), "code", cJSON_CreateNumber(3));
        break;
    case 6:
        set(err0(m), "code", cJSON_CreateString("-1"));
        break;
    case 7: /* node of the wrong type, missing, empty */
        set(err0(m), "node", cJSON_CreateNumber(0));
        break;
    case 8:
        cJSON_DeleteItemFromObjectCaseSensitive(err0(m), "node");
        break;
    case 9:
        set(err0(m), "node", cJSON_CreateString(""));
        break;
    case 10:
        cJSON_DeleteItemFromObjectCaseSensitive(err0(m), "what");
        break;
    case 11: /* an entry that is not an object */
        cJSON_ReplaceItemInArray(cJSON_GetObjectItemCaseSensitive(m, "errors"), 0,
                                 cJSON_CreateNumber(1));
        break;
    case 12: /* the status object: wrong type, size, scope; two of them; none */
        set(st, "dtype", cJSON_CreateString("float32"));
        break;
    case 13: {
        cJSON *sh = cJSON_CreateArray();
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(2));
        set(st, "shape", sh);
        set(st, "bytes", cJSON_CreateNumber(8));
        break;
    }
    case 14:
        set(st, "scope", cJSON_CreateString("texture"));
        break;
    case 15:
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(m, "memory"), cJSON_Duplicate(st, 1));
        break;
    default: /* 16: errors without a status object */
        cJSON_DetachItemViaPointer(cJSON_GetObjectItemCaseSensitive(m, "memory"), st);
        cJSON_Delete(st);
        break;
    }
}
#define NDAMAGES 17

/* A damaged "errors" list or status object in metadata.json is refused before any kernel runs
 * (tether_artifact_open or _prepare), with a message naming what is wrong; a kernel that sets a
 * value "errors" does not name fails the run (TETHER_ERR_INTERNAL, no output copied). */
static void test_damaged_errors(void **state) {
    (void)state;
    static const char *const want[NDAMAGES] = {
        "needs a non-empty 'errors' list",
        "needs a non-empty 'errors' list",
        "needs a non-empty 'errors' list",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "errors[0] must be {\"value\": 1",
        "int32 for the one status object",
        "the status object is one int32 (4 bytes)",
        "scope must be",
        "a second status object",
        "'errors' without a status memory object",
    };
    tether_ir_graph g;
    char dir[128], p[200], *text;
    build_gather(&g, dir, sizeof dir);
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    for (int k = 0; k < NDAMAGES; k++) {
        cJSON *m = cJSON_Parse(text);
        assert_non_null(m);
        damage(m, k);
        char *out = cJSON_Print(m);
        cJSON_Delete(m);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        assert_true(fputs(out, f) >= 0);
        assert_int_equal(fclose(f), 0);
        free(out);
        tether_artifact *a = NULL;
        int rc = tether_artifact_open(dir, &a);
        if (!rc) {
            rc = tether_artifact_prepare(a, g_s, NULL);
            tether_artifact_free(a);
        }
        assert_int_equal(rc, TETHER_ERR_INVALID_ARG);
        if (!strstr(tether_last_error(), want[k])) {
            fail_msg("damage %d: '%s' does not say '%s'", k, tether_last_error(), want[k]);
        }
    }
    /* the original metadata, a kernel that stores a value "errors" does not name */
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    free(text);
    char cmd[400];
    snprintf(cmd, sizeof cmd,
             "sed -i 's/atomic_cmpxchg(tg_err, 0, 1)/atomic_cmpxchg(tg_err, 0, 7)/' "
             "%s/m.cl && grep -q 'tg_err, 0, 7' %s/m.cl",
             dir, dir);
    assert_int_equal(system(cmd), 0);
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    if (tether_artifact_prepare(a, g_s, NULL)) {
        fail_msg("prepare: %s", tether_last_error());
    }
    float x[12] = {0}, y[8];
    int64_t idx[2] = {1, 5}; /* 5: out of range (3 rows) */
    for (int j = 0; j < 8; j++) {
        y[j] = NAN;
    }
    const void *in[2] = {x, idx};
    void *out[1] = {y};
    assert_int_equal(tether_artifact_run(a, in, out, NULL, NULL), TETHER_ERR_INTERNAL);
    if (!strstr(tether_last_error(), "the run-time error flag holds 7") ||
        !strstr(tether_last_error(), "'errors' (1..1) does not name")) {
        fail_msg("%s", tether_last_error());
    }
    assert_true(isnan(y[0]));
    /* in range again: the flag was cleared, the run gives the rows */
    idx[1] = 2;
    x[8] = 3.0f;
    assert_int_equal(tether_artifact_run(a, in, out, NULL, NULL), 0);
    assert_true(y[4] == 3.0f && y[0] == 0.0f);
    tether_artifact_free(a);
    assert_int_equal(tether_session_reset(g_s), 0);
    rm_tree(dir);
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_indices),
        cmocka_unit_test(test_no_status_without_checks),
        cmocka_unit_test(test_damaged_errors),
    };
    return ocl_test_main("/tmp/toclerrXXXXXX", tests, sizeof tests / sizeof tests[0]);
}
