/*
 * Model loading, passes, determinism, artifacts and the CLI entry points:
 *  - every file of tests/compiler/bad_models fails with the message listed in EXPECTED, which
 *    names the file and (where there is one) the node;
 *  - the example KWS model loads, survives a save/load round trip, and its regenerated files
 *    are byte-identical to the committed ones;
 *  - constant folding, batch-norm folding, epilogue fusion and dead-node elimination shrink the
 *    graph without changing what the interpreter computes;
 *  - code generation is deterministic; artifacts carry the documented metadata; a failed build
 *    leaves nothing behind; `tether compile` / `tether plan` exit codes.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "ops_common.h"
#include "tether/compiler_cli.h"
#include "tether/crt.h"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = 0;
    if (len) {
        *len = got;
    }
    return b;
}

static void test_bad_models(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/compiler/bad_models/EXPECTED", TETHER_SOURCE_DIR);
    char *text = slurp(path, NULL);
    assert_non_null(text);
    int count = 0;
    char *save = NULL;
    for (char *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        if (ln[0] == '#' || !ln[0]) {
            continue;
        }
        char *bar = strchr(ln, '|');
        assert_non_null(bar);
        *bar = 0;
        char model[1024];
        snprintf(model, sizeof model, "%s/tests/compiler/bad_models/%s", TETHER_SOURCE_DIR, ln);
        tether_ir_graph g;
        int rc = tether_model_load(model, &g);
        if (rc == 0) {
            tether_ir_close(&g);
            fail_msg("%s loaded, expected: %s", ln, bar + 1);
        }
        const char *msg = tether_last_error();
        if (!strstr(msg, bar + 1) || !strstr(msg, ln)) {
            fail_msg("%s: message '%s' lacks '%s' or the file name", ln, msg, bar + 1);
        }
        assert_true(g.ntensors == 0 && g.nodes == NULL);
        count++;
    }
    free(text);
    assert_true(count >= 25);
}

static void kws_path(char *buf, size_t n) {
    snprintf(buf, n, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
}

static void test_example_regenerates(void **state) {
    (void)state;
    char gen[1024], cmd[4096], j[1024], b[1024];
    snprintf(gen, sizeof gen, "%s/examples/gen_kws_model", TETHER_BINARY_DIR);
    snprintf(j, sizeof j, "%s/tests/compiler/regen", TETHER_BINARY_DIR);
    mkdir(j, 0755);
    snprintf(j, sizeof j, "%s/tests/compiler/regen/kws.json", TETHER_BINARY_DIR);
    snprintf(b, sizeof b, "%s/tests/compiler/regen/kws.bin", TETHER_BINARY_DIR);
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", gen, j, b);
    assert_int_equal(system(cmd), 0);
    const char *names[2][2] = {{"kws.json", j}, {"kws.bin", b}};
    for (int i = 0; i < 2; i++) {
        char committed[1024];
        snprintf(committed, sizeof committed, "%s/examples/kws/%s", TETHER_SOURCE_DIR, names[i][0]);
        size_t la, lb;
        char *x = slurp(committed, &la), *y = slurp(names[i][1], &lb);
        assert_non_null(x);
        assert_non_null(y);
        assert_int_equal(la, lb);
        assert_memory_equal(x, y, la);
        free(x);
        free(y);
        unlink(names[i][1]);
    }
}

static void test_example_loads_and_roundtrips(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    tether_ir_graph g, g2;
    assert_int_equal(tether_model_load(p, &g), 0);
    assert_int_equal(g.nnodes, 5);
    assert_int_equal(g.ninputs, 1);
    int y = g.outputs[0];
    assert_int_equal(g.tensors[y].ndim, 2);
    assert_int_equal(g.tensors[y].shape[1], 12);
    char j[1024], b[1024];
    snprintf(j, sizeof j, "%s/tests/compiler/rt.json", TETHER_BINARY_DIR);
    snprintf(b, sizeof b, "%s/tests/compiler/rt.bin", TETHER_BINARY_DIR);
    assert_int_equal(tether_model_save_json(&g, j, b), 0);
    assert_int_equal(tether_model_load(j, &g2), 0);
    assert_int_equal(g2.nnodes, g.nnodes);
    float x[490], o1[12], o2[12];
    uint32_t seed = 3;
    tt_fill(x, 490, false, &seed);
    const float *in[1] = {x};
    float *out1[1] = {o1}, *out2[1] = {o2};
    assert_int_equal(tether_interp_run(&g, in, out1), 0);
    assert_int_equal(tether_interp_run(&g2, in, out2), 0);
    assert_memory_equal(o1, o2, sizeof o1);
    float sum = 0;
    for (int i = 0; i < 12; i++) {
        sum += o1[i];
    }
    assert_true(sum > 0.999f && sum < 1.001f);
    tether_ir_close(&g);
    tether_ir_close(&g2);
    unlink(j);
    unlink(b);
}

/* conv -> batch_norm -> add(bias const) -> relu -> (dead branch) ; folding everything. */
static void build_pass_graph(tether_ir_graph *g) {
    uint32_t seed = 11;
    float w[6 * 3 * 3 * 3], sc[6], bi[6], mu[6], var[6], k1[6], k2[6];
    tt_fill(w, 162, false, &seed);
    tt_fill(sc, 6, false, &seed);
    tt_fill(bi, 6, false, &seed);
    tt_fill(mu, 6, false, &seed);
    tt_fill(var, 6, true, &seed);
    tt_fill(k1, 6, false, &seed);
    tt_fill(k2, 6, false, &seed);
    assert_int_equal(tether_ir_init(g, "passes"), 0);
    int64_t sx[] = {1, 3, 6, 6}, sw[] = {6, 3, 3, 3}, s6[] = {6}, sb[] = {1, 6, 1, 1};
    int x, wt, tsc, tbi, tmu, tvar, tk1, tk2, c, bn, kk, ad, r, dead, res, out;
    tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, sx, &x);
    tether_ir_add_constant(g, "w", TETHER_FLOAT32, 4, sw, w, sizeof w, &wt);
    tether_ir_add_constant(g, "bn.scale", TETHER_FLOAT32, 1, s6, sc, sizeof sc, &tsc);
    tether_ir_add_constant(g, "bn.bias", TETHER_FLOAT32, 1, s6, bi, sizeof bi, &tbi);
    tether_ir_add_constant(g, "bn.mean", TETHER_FLOAT32, 1, s6, mu, sizeof mu, &tmu);
    tether_ir_add_constant(g, "bn.var", TETHER_FLOAT32, 1, s6, var, sizeof var, &tvar);
    tether_ir_add_constant(g, "k1", TETHER_FLOAT32, 4, sb, k1, sizeof k1, &tk1);
    tether_ir_add_constant(g, "k2", TETHER_FLOAT32, 4, sb, k2, sizeof k2, &tk2);
    tether_ir_add_tensor(g, "c", TETHER_FLOAT32, -1, NULL, &c);
    tether_ir_add_tensor(g, "bn", TETHER_FLOAT32, -1, NULL, &bn);
    tether_ir_add_tensor(g, "kk", TETHER_FLOAT32, -1, NULL, &kk);
    tether_ir_add_tensor(g, "ad", TETHER_FLOAT32, -1, NULL, &ad);
    tether_ir_add_tensor(g, "r", TETHER_FLOAT32, -1, NULL, &r);
    tether_ir_add_tensor(g, "dead", TETHER_FLOAT32, -1, NULL, &dead);
    tether_ir_add_tensor(g, "res", TETHER_FLOAT32, -1, NULL, &res);
    tether_ir_add_tensor(g, "out", TETHER_FLOAT32, -1, NULL, &out);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int i1[] = {x, wt}, i2[] = {c, tsc, tbi, tmu, tvar}, i3[] = {tk1, tk2}, i4[] = {bn, kk},
        i5[] = {ad}, i6[] = {x}, i8[] = {r, res};
    assert_int_equal(tether_ir_add_node(g, "conv", TETHER_OP_CONV2D, i1, 2, &c, 1, &a, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "bn", TETHER_OP_BATCH_NORM, i2, 5, &bn, 1, NULL, NULL),
                     0);
    assert_int_equal(tether_ir_add_node(g, "kmul", TETHER_OP_MUL, i3, 2, &kk, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "bias", TETHER_OP_ADD, i4, 2, &ad, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "relu", TETHER_OP_RELU, i5, 1, &r, 1, NULL, NULL), 0);
    assert_int_equal(tether_ir_add_node(g, "unused", TETHER_OP_EXP, i6, 1, &dead, 1, NULL, NULL),
                     0);
    /* residual: r + conv2(x) where conv2 keeps its own output */
    float w2[6 * 3];
    tt_fill(w2, 18, false, &seed);
    int64_t sw2[] = {6, 3, 1, 1};
    int tw2;
    tether_ir_add_constant(g, "w2", TETHER_FLOAT32, 4, sw2, w2, sizeof w2, &tw2);
    int i9[] = {x, tw2};
    assert_int_equal(tether_ir_add_node(g, "conv2", TETHER_OP_CONV2D, i9, 2, &res, 1, NULL, NULL),
                     0);
    assert_int_equal(tether_ir_add_node(g, "sum", TETHER_OP_ADD, i8, 2, &out, 1, NULL, NULL), 0);
    tether_ir_add_input(g, x);
    tether_ir_add_output(g, out);
    assert_int_equal(tether_ir_infer(g), 0);
}

static void test_passes_preserve_results(void **state) {
    (void)state;
    tether_ir_graph g, h;
    build_pass_graph(&g);
    assert_int_equal(tt_graph_copy(&g, &h), 0);
    tether_pass_options o;
    tether_pass_options_init(&o);
    int rc = tether_passes_run(&h, &o);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    /* conv(+bn folded, +bias, relu) and conv2(+residual from conv) remain: 2 nodes. */
    assert_int_equal(h.nnodes, 2);
    int fused = 0, folded_bias = 0;
    for (int i = 0; i < h.nnodes; i++) {
        fused += h.nodes[i].attrs.has_residual;
        folded_bias += h.nodes[i].attrs.act == TETHER_ACT_RELU && h.nodes[i].inputs[2] >= 0;
    }
    assert_int_equal(fused, 1);
    assert_int_equal(folded_bias, 1);
    float x[108], o1[216], o2[216];
    uint32_t seed = 5;
    tt_fill(x, 108, false, &seed);
    const float *in[1] = {x};
    float *a[1] = {o1}, *b[1] = {o2};
    assert_int_equal(tether_interp_run(&g, in, a), 0);
    assert_int_equal(tether_interp_run(&h, in, b), 0);
    assert_true(tt_close(o2, o1, 216, 1e-5, 1e-4) <= 1.0);
    /* and the compiled code of the optimised graph agrees too */
    assert_int_equal(
        tt_run_compiled(&h, "passes", TETHER_ABI_UNPACKED, TETHER_INTERFACE_C, true, in, b), 0);
    assert_true(tt_close(o2, o1, 216, 1e-5, 1e-4) <= 1.0);
    tether_ir_close(&g);
    tether_ir_close(&h);
}

static void test_codegen_deterministic(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    char *src[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        tether_ir_graph g;
        assert_int_equal(tether_model_load(p, &g), 0);
        assert_int_equal(tether_passes_run(&g, NULL), 0);
        tether_memplan plan;
        assert_int_equal(tether_memplan_build(&g, NULL, &plan), 0);
        tether_codegen_options o;
        tether_codegen_options_init(&o);
        o.abi = TETHER_ABI_PACKED;
        o.interface = TETHER_INTERFACE_C;
        tether_codegen_output out;
        assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
        size_t n = strlen(out.source) + strlen(out.header) + 1;
        src[k] = malloc(n);
        snprintf(src[k], n, "%s%s", out.source, out.header);
        /* no absolute path of this machine ends up in generated code */
        assert_null(strstr(src[k], TETHER_SOURCE_DIR));
        tether_codegen_output_close(&out);
        tether_memplan_close(&plan);
        tether_ir_close(&g);
    }
    assert_string_equal(src[0], src[1]);
    free(src[0]);
    free(src[1]);
}

static cJSON *load_json(const char *dir, const char *name) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *t = slurp(p, NULL);
    assert_non_null(t);
    cJSON *j = cJSON_Parse(t);
    free(t);
    assert_non_null(j);
    return j;
}

static void test_artifact_metadata(void **state) {
    (void)state;
    char p[1024], dir[1024];
    kws_path(p, sizeof p);
    snprintf(dir, sizeof dir, "%s/tests/compiler/art_kws", TETHER_BINARY_DIR);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = TETHER_ABI_PACKED;
    o.codegen.prefix = "kws";
    tether_compile_result res;
    int rc = tether_compile_model(p, dir, &o, &res);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    cJSON *m = load_json(dir, "metadata.json");
    assert_string_equal(cJSON_GetObjectItem(m, "format")->valuestring, "tether-artifact");
    assert_int_equal(cJSON_GetObjectItem(m, "version")->valueint, 1);
    assert_string_equal(cJSON_GetObjectItem(m, "prefix")->valuestring, "kws");
    assert_string_equal(cJSON_GetObjectItem(m, "abi")->valuestring, "packed");
    assert_string_equal(cJSON_GetObjectItem(m, "interface")->valuestring, "packed");
    assert_string_equal(cJSON_GetObjectItem(m, "target")->valuestring, "x86_64-linux");
    assert_string_equal(cJSON_GetObjectItem(m, "library")->valuestring, "libkws.so");
    cJSON *e = cJSON_GetObjectItem(m, "entry");
    assert_string_equal(cJSON_GetObjectItem(e, "name")->valuestring, "kws_main");
    assert_int_equal(cJSON_GetObjectItem(e, "num_args")->valueint, 2);
    cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "inputs"), 0);
    assert_string_equal(cJSON_GetObjectItem(in, "name")->valuestring, "mfcc");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(in, "shape")), 4);
    /* conv1.pad (the padded copy the blocked conv kernel reads), conv1 (relu fused), fc,
     * softmax + the entry; flatten is an alias */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m, "functions")), 5);
    cJSON *pool = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "pools"), 0);
    assert_string_equal(cJSON_GetObjectItem(pool, "name")->valuestring, "workspace");
    assert_int_equal(cJSON_GetObjectItem(pool, "size")->valueint, res.workspace_size);
    assert_int_equal(cJSON_GetObjectItem(m, "params_bytes")->valueint, 49360);
    cJSON_Delete(m);
    cJSON *r = load_json(dir, "report.json");
    cJSON *st = cJSON_GetObjectItem(r, "stack");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(st, "bounded")));
    /* expf (softmax) is counted with its frames from the target's libm, not excluded */
    assert_null(strstr(cJSON_GetObjectItem(st, "excluded")->valuestring, "expf"));
    assert_true(cJSON_GetObjectItem(st, "bytes")->valueint > 0);
    assert_true(cJSON_GetObjectItem(r, "text")->valueint > 49000); /* weights are in .rodata */
    assert_true(cJSON_GetObjectItem(r, "code")->valueint > 0);
    assert_true(cJSON_GetObjectItem(r, "code")->valueint <
                cJSON_GetObjectItem(r, "text")->valueint - 49000);
    cJSON_Delete(r);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(tether_report_print(devnull, dir), 0);
    fclose(devnull);

    /* The packed entry rejects bad arguments with -6 and a message (the weak tether_set_error
     * resolves to this test's exported runtime), without touching the buffers. */
    char lib[1200];
    snprintf(lib, sizeof lib, "%s/libkws.so", dir);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    const tether_func_registry *reg = dlsym(h, "tether_module_registry");
    assert_non_null(reg);
    assert_int_equal(tether_registry_check(reg), 0);
    const tether_func_entry *fn;
    assert_int_equal(tether_registry_find(reg, "kws_main", &fn), 0);
    assert_int_equal(fn->abi, TETHER_ABI_PACKED);
    float x[490] = {0}, y[12];
    for (int i = 0; i < 12; i++) {
        y[i] = 7.0f;
    }
    int64_t xs[4] = {1, 1, 49, 10}, bad[4] = {1, 1, 48, 10}, ys[2] = {1, 12};
    DLTensor t[2] = {{0}};
    t[0].data = x;
    t[0].ndim = 4;
    t[0].shape = bad;
    t[0].dtype = TETHER_FLOAT32;
    t[1].data = y;
    t[1].ndim = 2;
    t[1].shape = ys;
    t[1].dtype = TETHER_FLOAT32;
    tether_value v[2] = {{.v_handle = &t[0]}, {.v_handle = &t[1]}}, ret;
    int32_t codes[2] = {TETHER_TYPE_DLTENSOR, TETHER_TYPE_DLTENSOR}, rcode;
    tether_clear_error();
    assert_int_equal(fn->fn.packed(v, codes, 2, &ret, &rcode, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "kws_main: argument 0: shape differs"));
    assert_true(y[0] == 7.0f);
    t[0].shape = xs;
    t[1].dtype = TETHER_INT32;
    assert_int_equal(fn->fn.packed(v, codes, 2, &ret, &rcode, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "argument 1: dtype differs"));
    t[1].dtype = TETHER_FLOAT32;
    assert_int_equal(fn->fn.packed(v, codes, 1, &ret, &rcode, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "argument count differs from 2"));
    codes[1] = TETHER_TYPE_HANDLE;
    assert_int_equal(fn->fn.packed(v, codes, 2, &ret, &rcode, NULL), TETHER_ERR_MISMATCH);
    codes[1] = TETHER_TYPE_DLTENSOR;
    int64_t strides[2] = {24, 2}; /* dimension 1 is not compact (dimension 0 has extent 1) */
    t[1].strides = strides;
    assert_int_equal(fn->fn.packed(v, codes, 2, &ret, &rcode, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "not compact"));
    assert_true(y[0] == 7.0f);
    t[1].strides = NULL;
    assert_int_equal(fn->fn.packed(v, codes, 2, &ret, &rcode, NULL), 0);
    float sum = 0;
    for (int i = 0; i < 12; i++) {
        sum += y[i];
    }
    assert_true(sum > 0.999f && sum < 1.001f);
    /* every operator function of the registry is listed in metadata.json and vice versa */
    assert_int_equal(reg->count, 5);
    dlclose(h);
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_failed_build_leaves_nothing(void **state) {
    (void)state;
    const tether_target *t;
    assert_int_equal(tether_target_find("aarch64-linux", &t), 0);
    if (tether_target_available(t)) {
        skip(); /* needs a target whose compiler is missing */
    }
    char p[1024], dir[1024];
    kws_path(p, sizeof p);
    snprintf(dir, sizeof dir, "%s/tests/compiler/art_fail", TETHER_BINARY_DIR);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.build.target = "aarch64-linux";
    assert_int_not_equal(tether_compile_model(p, dir, &o, NULL), 0);
    assert_non_null(strstr(tether_last_error(), "aarch64-linux-gnu-gcc"));
    assert_false(file_exists(dir));
}

static int run_cli(int (*fn)(int, char **), const char *a0, ...) {
    char *argv[24];
    int argc = 0;
    va_list ap;
    va_start(ap, a0);
    for (const char *s = a0; s && argc < 23; s = va_arg(ap, const char *)) {
        argv[argc++] = (char *)s;
    }
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    return fn(argc, argv);
}

static void test_cli_exit_codes(void **state) {
    (void)state;
    char p[1024], dir[1024], bad[1024], svg[1024];
    kws_path(p, sizeof p);
    snprintf(dir, sizeof dir, "%s/tests/compiler/art_cli", TETHER_BINARY_DIR);
    snprintf(bad, sizeof bad, "%s/tests/compiler/bad_models/unknown_op.json", TETHER_SOURCE_DIR);
    snprintf(svg, sizeof svg, "%s/tests/compiler/kws_plan.svg", TETHER_BINARY_DIR);
    char rm[1200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", "--help", NULL), 0);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", NULL), 2);
    assert_int_equal(
        run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--abi", "sideways", NULL), 2);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--target", "z80", NULL),
                     2);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--frobnicate", NULL), 2);
    /* option-like or invalid values are usage errors found before any work */
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", "--quiet", NULL), 2);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--prefix", "1bad", NULL),
                     2);
    assert_int_equal(
        run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--planner", "bogus", NULL), 2);
    assert_false(file_exists(dir));
    /* a relative output directory that starts with '-' is a directory, not a compiler option */
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", "-art-dash", "--quiet", NULL),
                     0);
    assert_true(file_exists("-art-dash/metadata.json"));
    assert_int_equal(system("rm -rf ./-art-dash"), 0);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", bad, "-o", dir, NULL), 1);
    assert_false(file_exists(dir));
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--abi", "unpacked",
                             "--interface", "c", "--params", "blob", "--quiet", NULL),
                     0);
    char f[1200];
    snprintf(f, sizeof f, "%s/params.bin", dir);
    assert_true(file_exists(f));
    /* recompiling into the same directory replaces the artifact: no stale params.bin; a failed
     * recompile leaves no metadata.json behind (the directory is no longer an artifact) */
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--quiet", NULL), 0);
    assert_false(file_exists(f));
    char meta[1200];
    snprintf(meta, sizeof meta, "%s/metadata.json", dir);
    assert_true(file_exists(meta));
    const tether_target *a64;
    assert_int_equal(tether_target_find("aarch64-linux", &a64), 0);
    if (!tether_target_available(a64)) {
        assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--target",
                                 "aarch64-linux", "--quiet", NULL),
                         1);
        assert_false(file_exists(meta));
    }
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--abi", "unpacked",
                             "--interface", "c", "--params", "blob", "--quiet", NULL),
                     0);
    snprintf(f, sizeof f, "%s/tether_model.h", dir);
    char *h = slurp(f, NULL);
    assert_non_null(strstr(h, "int32_t tether_model_run(struct tether_model_inputs *inputs"));
    assert_non_null(strstr(h, "#define TETHER_MODEL_WORKSPACE_SIZE"));
    assert_non_null(strstr(h, "#define TETHER_MODEL_INPUT_0_SHAPE {1, 1, 49, 10}"));
    assert_null(strstr(h, "DLTensor"));
    free(h);
    /* --json FILE: the report as JSON (checked before the compile: a directory is refused) */
    char js[1200];
    snprintf(js, sizeof js, "%s/tests/compiler/kws_report.json", TETHER_BINARY_DIR);
    unlink(js);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--json", dir, NULL), 2);
    assert_int_equal(run_cli(tether_cmd_compile, "compile", p, "--json", js, "--dump-ir", NULL), 2);
    assert_int_equal(
        run_cli(tether_cmd_compile, "compile", p, "-o", dir, "--quiet", "--json", js, NULL), 0);
    char *jt = slurp(js, NULL);
    cJSON *rep = cJSON_Parse(jt);
    free(jt);
    assert_non_null(rep);
    assert_string_equal(cJSON_GetObjectItem(rep, "format")->valuestring, "tether-report");
    assert_true(cJSON_GetObjectItem(rep, "text")->valuedouble > 0);
    assert_non_null(cJSON_GetObjectItem(rep, "stack"));
    cJSON *cc = cJSON_GetObjectItem(rep, "compile");
    assert_non_null(cc);
    assert_string_equal(cJSON_GetObjectItem(cc, "backend")->valuestring, "c");
    assert_string_equal(cJSON_GetObjectItem(cc, "artifact")->valuestring, dir);
    cJSON_Delete(rep);
    unlink(js);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", "--help", NULL), 0);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", NULL), 2);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", bad, NULL), 1);
    assert_int_equal(run_cli(tether_cmd_plan, "plan", p, "--svg", svg, NULL), 0);
    assert_true(file_exists(svg));
    unlink(svg);
}

/* The unpacked ABI source mentions no DLTensor/tether_value; the packed one checks arguments. */
static void test_abi_shapes_of_code(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    for (int abi = 0; abi < 2; abi++) {
        tether_ir_graph g;
        assert_int_equal(tether_model_load(p, &g), 0);
        assert_int_equal(tether_passes_run(&g, NULL), 0);
        tether_memplan plan;
        assert_int_equal(tether_memplan_build(&g, "naive", &plan), 0);
        assert_int_equal(plan.workspace_size, plan.naive_size);
        tether_codegen_options o;
        tether_codegen_options_init(&o);
        o.abi = (tether_abi)abi;
        tether_codegen_output out;
        assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
        if (abi == TETHER_ABI_UNPACKED) {
            assert_null(strstr(out.source, "tg_tensor"));
            assert_null(strstr(out.source, "tether_value"));
            assert_null(strstr(out.source, "dlpack"));
            assert_non_null(strstr(out.source, "int32_t tether_model_conv1(const float *restrict "
                                               "p_mfcc"));
        } else {
            assert_non_null(strstr(out.source, "tg_check(\"tether_model_conv1\", args"));
        }
        assert_non_null(strstr(out.source, "/* conv1: conv2d(mfcc[1,1,49,10]"));
        assert_string_equal(out.math_functions, "expf");
        tether_codegen_output_close(&out);
        tether_memplan_close(&plan);
        tether_ir_close(&g);
    }
}

/* Argument limits of the ABIs (docs/abi.md) are compile errors, never unloadable modules. */
static void test_argument_limits(void **state) {
    (void)state;
    tether_ir_graph g;
    tether_ir_init(&g, "wide");
    int in[26], y;
    int64_t s[] = {1, 2};
    for (int i = 0; i < 26; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "x%d", i);
        tether_ir_add_tensor(&g, nm, TETHER_FLOAT32, 2, s, &in[i]);
        tether_ir_add_input(&g, in[i]);
    }
    tether_ir_add_tensor(&g, "y", TETHER_FLOAT32, -1, NULL, &y);
    assert_int_equal(tether_ir_add_node(&g, "cat", TETHER_OP_CONCAT, in, 26, &y, 1, NULL, NULL), 0);
    tether_ir_add_output(&g, y);
    assert_int_equal(tether_ir_infer(&g), 0);
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, NULL, &plan), 0);
    tether_codegen_options o;
    tether_codegen_options_init(&o);
    tether_codegen_output out;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "the unpacked ABI allows at most 24"));
    o.abi = TETHER_ABI_PACKED;
    assert_int_equal(tether_codegen_c(&g, &plan, &o, &out), 0);
    tether_codegen_output_close(&out);
    tether_memplan_close(&plan);
    tether_ir_close(&g);
}

static int fake_loads;

static int fake_loader(const char *path, tether_ir_graph *g) {
    fake_loads++;
    char p[1024];
    kws_path(p, sizeof p);
    (void)path;
    return tether_model_load(p, g);
}

static void test_registered_loader(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tether_model_load("model.fake", &g), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "model.fake: unknown model format"));
    assert_int_equal(tether_model_register_loader("fake", fake_loader), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_model_register_loader(".json", fake_loader), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_model_register_loader(".fake", fake_loader), 0);
    assert_int_equal(tether_model_load("model.fake", &g), 0);
    assert_int_equal(fake_loads, 1);
    assert_int_equal(g.nnodes, 5);
    tether_ir_close(&g);
}

static void test_ir_printer(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    tether_ir_graph g;
    assert_int_equal(tether_model_load(p, &g), 0);
    assert_int_equal(tether_passes_run(&g, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(tether_ir_print(f, &g), 0);
    fclose(f);
    assert_non_null(strstr(buf, "graph kws: "));
    assert_non_null(strstr(buf, "node conv1 = conv2d(mfcc, conv1.weight, conv1.bias) -> relu1.out "
                                "[1,8,25,5] kernel=10x4 strides=2,2 pads=4,1,5,2 groups=1 +relu"));
    assert_non_null(strstr(buf, "flat float32[1,1000] alias of relu1.out"));
    assert_non_null(strstr(buf, "inputs: mfcc"));
    free(buf);
    tether_ir_close(&g);
}

/* The work estimate: conv1 of KWS is 8x25x5 outputs of a 1x10x4 window, plus bias and the fused
 * relu; absurd shapes saturate instead of wrapping to a small count. */
static void test_flops(void **state) {
    (void)state;
    char p[1024];
    kws_path(p, sizeof p);
    tether_ir_graph g;
    assert_int_equal(tether_model_load(p, &g), 0);
    assert_int_equal(tether_passes_run(&g, NULL), 0);
    uint64_t total = 0;
    int found = 0;
    for (int i = 0; i < g.nnodes; i++) {
        uint64_t f = tether_ir_node_flops(&g, &g.nodes[i]);
        total += f;
        if (strcmp(g.nodes[i].name, "conv1") == 0) {
            assert_int_equal(f, 2u * 1000u * 40u + 1000u + 1000u);
            found = 1;
        }
    }
    assert_true(found);
    assert_int_equal(tether_ir_graph_flops(&g), total);
    tether_ir_close(&g);

    tether_ir_graph h;
    assert_int_equal(tether_ir_init(&h, "huge"), 0);
    DLDataType f32 = {kDLFloat, 32, 1};
    int64_t big[4] = {1, 1, 1 << 20, 1 << 20};
    int x = -1, y = -1, node = -1;
    assert_int_equal(tether_ir_add_tensor(&h, "x", f32, 4, big, &x), 0);
    assert_int_equal(tether_ir_add_tensor(&h, "y", f32, 4, big, &y), 0);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_MAX_POOL, &a);
    a.kernel[0] = INT64_C(1) << 40;
    a.kernel[1] = INT64_C(1) << 40;
    assert_int_equal(tether_ir_add_node(&h, "pool", TETHER_OP_MAX_POOL, &x, 1, &y, 1, &a, &node),
                     0);
    assert_true(tether_ir_node_flops(&h, &h.nodes[node]) == UINT64_MAX);
    assert_true(tether_ir_graph_flops(&h) == UINT64_MAX);
    tether_ir_close(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_example_regenerates),
        cmocka_unit_test(test_example_loads_and_roundtrips),
        cmocka_unit_test(test_passes_preserve_results),
        cmocka_unit_test(test_codegen_deterministic),
        cmocka_unit_test(test_artifact_metadata),
        cmocka_unit_test(test_failed_build_leaves_nothing),
        cmocka_unit_test(test_cli_exit_codes),
        cmocka_unit_test(test_abi_shapes_of_code),
        cmocka_unit_test(test_ir_printer),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_argument_limits),
        cmocka_unit_test(test_registered_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
