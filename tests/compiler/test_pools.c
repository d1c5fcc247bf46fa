/*
 * Memory pools in compiled artifacts (`tether compile --pool/--pin/--plan-inputs/--plan-outputs`,
 * docs/memory.md): two-pool builds of the conv net and the MobileNet-style block in every ABI and
 * interface (one build per ABI run through both interfaces' entries; one of the two at -O3, the
 * other at -O1), with and without planned graph
 * inputs/outputs, equal to the reference interpreter; spilling, pins, the report and header; the C
 * interface with inputs written in place; and the refusals with their messages (nothing left
 * behind).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>

#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt.h"

static tether_plan_pool pool(const char *name, int64_t capacity) {
    tether_plan_pool p = {.name = name, .scope = TETHER_SCOPE_GLOBAL, .capacity = capacity};
    return p;
}

/* The default (one workspace) size of g's plan. */
static int64_t default_workspace(const tether_ir_graph *g0) {
    tether_ir_graph g;
    assert_int_equal(tt_graph_copy(g0, &g), 0);
    assert_int_equal(tether_passes_run(&g, NULL), 0);
    tether_memplan plan;
    assert_int_equal(tether_memplan_build(&g, NULL, &plan), 0);
    int64_t ws = plan.workspace_size;
    tether_memplan_close(&plan);
    tether_ir_close(&g);
    return ws;
}

static size_t elements(const tether_ir_tensor *t) {
    return tether_ir_tensor_elements(t);
}

/* Runs g compiled with m in every ABI x interface and compares with the interpreter: one build
 * per ABI, of the C interface, run through both entries (the registry's packed one, with the
 * pools after the outputs, and <prefix>_run, with the pools in the workspace struct): the packed
 * interface's artifact is the same code without _run (emit_c.c). One of the two builds is at the
 * target's -O3 (aliasing between tensors of one pool is where optimisation bites), which one
 * alternating over the calls; the other at -O1 (gcc's time). */
static void check_model(const tether_ir_graph *g, const char *tag, const tether_memory_options *m,
                        tether_compile_result *res) {
    static int calls;
    int o3 = calls++ % 2;
    size_t nin = elements(&g->tensors[g->inputs[0]]);
    size_t nout = elements(&g->tensors[g->outputs[0]]);
    float *x = malloc(nin * sizeof *x), *ref = malloc(nout * sizeof *ref),
          *y = malloc(nout * sizeof *y), *yc = malloc(nout * sizeof *yc);
    uint32_t seed = 7;
    tt_fill(x, nin, false, &seed);
    const float *ins[1] = {x};
    float *refs[1] = {ref}, *outs[1] = {y}, *outs_c[1] = {yc};
    assert_int_equal(tether_interp_run(g, ins, refs), 0);
    for (int abi = 0; abi < 2; abi++) {
        char t[64];
        snprintf(t, sizeof t, "%s-%d", tag, abi);
        memset(y, 0, nout * sizeof *y);
        memset(yc, 0, nout * sizeof *yc);
        tt_opt_level = abi == o3 ? TETHER_OPT_DEFAULT : 1;
        int rc =
            tt_run_compiled_both(g, t, abi ? TETHER_ABI_PACKED : TETHER_ABI_UNPACKED,
                                 TETHER_INTERFACE_C, abi == 1, NULL, 0, m, res, ins, outs, outs_c);
        tt_opt_level = TETHER_OPT_DEFAULT;
        if (rc) {
            fail_msg("%s: %s", t, tether_error_detail());
        }
        for (int iface = 0; iface < 2; iface++) {
            double err = tt_close(iface ? yc : y, ref, nout, 1e-5, 1e-4);
            if (err > 1.0) {
                fail_msg("%s (%s interface): outputs differ from the interpreter (%g)", t,
                         iface ? "c" : "packed", err);
            }
        }
    }
    free(yc);
    free(x);
    free(ref);
    free(y);
}

static void test_two_pools_spill(void **state) {
    (void)state;
    const char *names[] = {"convnet", "mobile"};
    for (int k = 0; k < 2; k++) {
        tether_ir_graph g;
        assert_int_equal(tt_build_model(names[k], false, &g), 0);
        int64_t ws = default_workspace(&g);
        /* a fast pool of half the workspace (not a multiple of 16): some tensors must spill to
         * the second pool, and the fast pool's size stays within its capacity */
        tether_plan_pool pools[2] = {pool("fast", ws / 2 + 8), pool("slow.dram", 0)};
        for (int io = 0; io < 2; io++) {
            tether_memory_options m;
            tether_memory_options_init(&m);
            m.pools = pools;
            m.npools = 2;
            m.plan_inputs = m.plan_outputs = io == 1;
            tether_compile_result res;
            char tag[64];
            snprintf(tag, sizeof tag, "pools-%s-%d", names[k], io);
            check_model(&g, tag, &m, &res);
            assert_int_equal(res.npools, 2);
            assert_string_equal(res.pools[0].name, "fast");
            assert_string_equal(res.pools[1].name, "slow.dram");
            assert_true(res.pools[0].size > 0 && res.pools[0].size <= ws / 2 + 8);
            assert_true(res.pools[1].size > 0);
            assert_true(res.nspilled > 0);
            assert_int_equal(res.pools[0].size % 16, 0);
        }
        /* everything fits the fast pool: nothing spills, the second pool stays a token */
        tether_plan_pool big[2] = {pool("fast", 0), pool("slow", 0)};
        tether_memory_options m;
        tether_memory_options_init(&m);
        m.pools = big;
        m.npools = 2;
        tether_compile_result res;
        char tag[64];
        snprintf(tag, sizeof tag, "pools-%s-fit", names[k]);
        check_model(&g, tag, &m, &res);
        assert_int_equal(res.nspilled, 0);
        assert_int_equal(res.pools[0].size, ws);
        assert_int_equal(res.pools[1].size, 16);
        tether_ir_close(&g);
    }
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
    t[n] = 0;
    fclose(f);
    return t;
}

/* Pool names that are C keywords or differ only in case, and a graph input whose C name is the
 * unpacked entry's pool parameter: the generated code still builds and runs. */
static void test_pool_names(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tt_build_model("convnet", true, &g), 0);
    char *old = g.tensors[g.inputs[0]].name;
    g.tensors[g.inputs[0]].name = strdup("pool_int");
    free(old);
    int64_t ws = default_workspace(&g);
    tether_plan_pool pools[2] = {pool("int", ws / 2), pool("Static", 0)};
    tether_memory_options m;
    tether_memory_options_init(&m);
    m.pools = pools;
    m.npools = 2;
    m.plan_inputs = true;
    tether_compile_result res;
    check_model(&g, "pools-names", &m, &res);
    assert_string_equal(res.pools[0].name, "int");
    tether_ir_close(&g);
}

/* The report, metadata and header of a two-pool build with a pin and planned I/O; then the C
 * interface with the input written into its pool and the output read from its pool (NULL
 * pointers: nothing copied). */
static void test_artifact_in_place(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tt_build_model("convnet", true, &g), 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp", TETHER_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/pools-in-place", TETHER_BINARY_DIR);
    tether_plan_pool pools[2] = {pool("sram", 0), pool("dram", 0)};
    tether_memory_options m;
    tether_memory_options_init(&m);
    m.pools = pools;
    m.npools = 2;
    m.plan_inputs = m.plan_outputs = true;
    /* pin the first node's output (after the passes) to dram */
    tether_ir_graph h;
    assert_int_equal(tt_graph_copy(&g, &h), 0);
    assert_int_equal(tether_passes_run(&h, NULL), 0);
    char pinned_name[128], pin[200];
    snprintf(pinned_name, sizeof pinned_name, "%s", h.tensors[h.nodes[0].outputs[0]].name);
    snprintf(pin, sizeof pin, "%s=dram", pinned_name);
    const char *pins[1] = {pin};
    m.pins = pins;
    m.npins = 1;
    tether_ir_close(&h);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.interface = TETHER_INTERFACE_C;
    o.codegen.prefix = "pm";
    o.memory = m;
    tether_ir_graph c;
    assert_int_equal(tt_graph_copy(&g, &c), 0);
    tether_compile_result res;
    if (tether_compile_graph(&c, dir, &o, &res) != 0) {
        fail_msg("%s", tether_error_detail());
    }
    tether_ir_close(&c);
    /* report.json: both pools, the pin honoured, graph input and output placed */
    char p[1200];
    snprintf(p, sizeof p, "%s/report.json", dir);
    char *t = slurp(p);
    cJSON *r = cJSON_Parse(t);
    free(t);
    assert_non_null(r);
    cJSON *rp = cJSON_GetObjectItem(r, "pools");
    assert_int_equal(cJSON_GetArraySize(rp), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rp, 1), "name")->valuestring,
                        "dram");
    int64_t in_off = -1, out_off = -1;
    int in_pool = -1, out_pool = -1, pinned = 0;
    const char *xin = g.tensors[g.inputs[0]].name, *yout = g.tensors[g.outputs[0]].name;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "placements")) {
        const char *tn = cJSON_GetObjectItem(e, "tensor")->valuestring;
        int pi = strcmp(cJSON_GetObjectItem(e, "pool")->valuestring, "sram") == 0 ? 0 : 1;
        int64_t off = (int64_t)cJSON_GetObjectItem(e, "offset")->valuedouble;
        if (strcmp(tn, xin) == 0) {
            in_off = off;
            in_pool = pi;
        }
        if (strcmp(tn, yout) == 0) {
            out_off = off;
            out_pool = pi;
        }
        if (strcmp(tn, pinned_name) == 0) {
            pinned = pi == 1;
        }
    }
    cJSON_Delete(r);
    assert_true(pinned);
    assert_true(in_off >= 0 && out_off >= 0);
    /* metadata.json: pool arguments with sizes */
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    t = slurp(p);
    cJSON *md = cJSON_Parse(t);
    free(t);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(md, "pool_arguments")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(md, "pools")), 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(md, "entry"), "num_args")->valueint,
                     4);
    cJSON_Delete(md);
    /* the header: a size macro per pool, the planned input's place, one struct member per pool */
    snprintf(p, sizeof p, "%s/pm.h", dir);
    t = slurp(p);
    char want[200];
    snprintf(want, sizeof want, "#define PM_POOL_SRAM_SIZE %lld\n", (long long)res.pools[0].size);
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof want, "#define PM_POOL_DRAM_SIZE %lld\n", (long long)res.pools[1].size);
    assert_non_null(strstr(t, want));
    snprintf(want, sizeof want, "#define PM_INPUT_0_POOL \"%s\"\n#define PM_INPUT_0_OFFSET %lld\n",
             in_pool ? "dram" : "sram", (long long)in_off);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "struct pm_workspace {\n    uint8_t *sram;\n    uint8_t *dram;\n};"));
    free(t);
    snprintf(p, sizeof p, "%s/memory_plan.svg", dir);
    t = slurp(p);
    assert_non_null(strstr(t, "<svg"));
    free(t);
    /* in place: the input written into its pool, NULL pointers, the output read from its pool */
    size_t nin = elements(&g.tensors[g.inputs[0]]), nout = elements(&g.tensors[g.outputs[0]]);
    float *x = malloc(nin * sizeof *x), *ref = malloc(nout * sizeof *ref);
    uint32_t seed = 3;
    tt_fill(x, nin, false, &seed);
    const float *ins[1] = {x};
    float *refs[1] = {ref};
    assert_int_equal(tether_interp_run(&g, ins, refs), 0);
    snprintf(p, sizeof p, "%s/libpm.so", dir);
    void *lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    typedef int32_t (*run_fn)(void *, void *, void *);
    run_fn run = (run_fn)dlsym(lib, "pm_run");
    assert_non_null(run);
    uint8_t *pm[2];
    for (int k = 0; k < 2; k++) {
        pm[k] = aligned_alloc(16, (size_t)res.pools[k].size);
        memset(pm[k], 0xA5, (size_t)res.pools[k].size);
    }
    memcpy(pm[in_pool] + in_off, x, nin * sizeof *x);
    void *in_ptrs[1] = {NULL}, *out_ptrs[1] = {NULL}, *ws[2] = {pm[0], pm[1]};
    assert_int_equal(run(in_ptrs, out_ptrs, ws), 0);
    assert_true(tt_close((const float *)(pm[out_pool] + out_off), ref, nout, 1e-5, 1e-4) <= 1.0);
    void *bad_ws[2] = {pm[0] + 4, pm[1]}; /* misaligned pool: -7 */
    assert_int_equal(run(in_ptrs, out_ptrs, bad_ws), -7);
    dlclose(lib);
    free(pm[0]);
    free(pm[1]);
    free(x);
    free(ref);
    tether_ir_close(&g);
}

/* Each refusal names the problem; nothing is left in the output directory. */
static void test_refusals(void **state) {
    (void)state;
    tether_ir_graph g;
    assert_int_equal(tt_build_model("convnet", true, &g), 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/compiler/tmp/pools-refused", TETHER_BINARY_DIR);
    struct {
        tether_plan_pool pools[2];
        int npools;
        const char *pin;
        int backend_opencl;
        const char *params_pool;
        const char *want;
    } cases[] = {
        {{{.name = "tiny", .capacity = 256}}, 1, NULL, 0, NULL, "fits in no candidate pool"},
        {{{.name = "sram"}}, 1, "nosuch.t=sram", 0, NULL, "the model has no tensor 'nosuch.t'"},
        {{{.name = "sram"}}, 1, "x=dram", 0, NULL, "no pool 'dram' (the pools are: sram)"},
        {{{.name = "sram"}}, 1, "x=sram", 0, NULL, "is a graph input (add --plan-inputs"},
        {{{.name = "a.b"}, {.name = "a-b"}}, 2, NULL, 0, NULL, "have the same C name 'a_b'"},
        {{{.name = "SRAM"}, {.name = "sram"}}, 2, NULL, 0, NULL, "have the same C name 'sram'"},
        {{{.name = "sram", .capacity = 8}}, 1, NULL, 0, NULL, "a pool holds at least 16"},
        {{{.name = "gpu", .scope = TETHER_SCOPE_TEXTURE}}, 1, NULL, 0, NULL, "global pools only"},
        {{{.name = "sram"}}, 1, NULL, 1, NULL, "the OpenCL backend has its own storage scopes"},
        {{{.name = "sram"}}, 1, NULL, 0, "code", "add --params blob"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tether_compile_options o;
        tether_compile_options_init(&o);
        o.memory.pools = cases[i].pools;
        o.memory.npools = cases[i].npools;
        const char *pins[1] = {cases[i].pin};
        o.memory.pins = pins;
        o.memory.npins = cases[i].pin ? 1 : 0;
        o.memory.params_pool = cases[i].params_pool;
        o.backend = cases[i].backend_opencl ? TETHER_BACKEND_OPENCL : TETHER_BACKEND_C;
        tether_ir_graph c;
        assert_int_equal(tt_graph_copy(&g, &c), 0);
        int rc = tether_compile_graph(&c, dir, &o, NULL);
        tether_ir_close(&c);
        if (rc == 0 || !strstr(tether_last_error(), cases[i].want)) {
            fail_msg("case %zu: rc %d, message '%s' lacks '%s'", i, rc, tether_last_error(),
                     cases[i].want);
        }
        struct stat st;
        assert_int_not_equal(stat(dir, &st), 0); /* nothing written */
    }
    tether_ir_close(&g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_pools_spill),
        cmocka_unit_test(test_pool_names),
        cmocka_unit_test(test_artifact_in_place),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
