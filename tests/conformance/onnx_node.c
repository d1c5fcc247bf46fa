/*
 * The ONNX backend node tests (../shared/onnx-node, see its README) run end to end:
 * import model.onnx (inputs that operators need as constants are bound from input_K.pb), compile
 * with one ABI, upload to a device (local: = a tetherd child process, or a tetherd on 127.0.0.1
 * started here), feed the run-time inputs, call, and compare every output with output_K.pb
 * (rtol 1e-4, atol 1e-5; float16 rtol 1e-3, bfloat16 1e-2; or, failing that, what ONNX's own
 * backend runner accepts, rtol 1e-3, atol 1e-7, a pass the summary names; integers and bool
 * exactly; shapes must match exactly; bfloat16 data stored as uint16, as ONNX 1.12 does, is read as
 * bfloat16). The reference interpreter is compared too.
 *
 * With --abi opencl the tests run through the OpenCL backend instead (tether/artifact.h, on the
 * device's OpenCL layer, PoCL in CI): each model is compiled twice, activations in buffers and
 * with --texture-activations (images planned in 2D), both must match the test data and each
 * other; a model with an operator the backend lacks counts as "not handled", not as a failure.
 *
 * Usage: test_onnx_node --abi packed|unpacked|both|opencl [--device local|tcp] [--subset FILE]
 *        [--data DIR] [--measure] [NAME...]
 * --data runs another folder of node tests (scripts/conformance: the full suite); --measure
 * prints the figures without failing the case on failed tests.
 * Every run prints two summary lines (the interpreter's count, then the compiled path's):
 *   onnx-node [interpreter]: N passed (of the R run)
 *   onnx-node <abi> on <device>: N passed, F failed, S skipped [failed: a, b] [skipped: c]
 * A test is skipped only when tests/conformance/skips.txt lists it with a reason. The cmocka
 * case fails when any test fails, or when the data folder is missing (exit 77 = skipped, with
 * the reason printed, only when ../shared/onnx-node is absent).
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/host.h"
#include "tether/onnx.h"

#ifdef TETHER_HAVE_TEST_DAEMON
#include "daemon.h"
#endif

#define MAX_IO   16
#define MAX_TEST 1024

static const char *g_abi_name = "unpacked";
static tether_abi g_abi = TETHER_ABI_UNPACKED;
static bool g_opencl; /* --abi opencl: the OpenCL backend, buffers and textures */
static const char *g_device = "local";
static const char *g_subset;
static char **g_only;
static int g_nonly;

static char g_data[1024];
static const char *g_data_arg; /* --data DIR: another node-test folder (the full suite) */
static bool g_measure;         /* --measure: print the figures, do not fail on failed tests */
static int g_interp_passed;    /* tests whose reference-interpreter outputs matched the data */

typedef struct timing {
    double import_s, codegen_s, build_s, run_s;
} timing;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lines "NAME  reason" of a list file; '#' starts a comment. Returns the count. */
static int read_list(const char *path, char names[][128], char reasons[][256], int max) {
    FILE *f = fopen(path, "r");
    if (!f) {
        return -1;
    }
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char *p = line;
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '#' || *p == '\n' || !*p) {
            continue;
        }
        char *e = p;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n') {
            e++;
        }
        snprintf(names[n], 128, "%.*s", (int)(e - p), p);
        while (*e == ' ' || *e == '\t') {
            e++;
        }
        size_t l = strlen(e);
        while (l && (e[l - 1] == '\n' || e[l - 1] == ' ')) {
            e[--l] = 0;
        }
        if (reasons) {
            snprintf(reasons[n], 256, "%s", e);
        }
        n++;
    }
    fclose(f);
    return n;
}

static int file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* Reads input_K.pb / output_K.pb of a test until the first missing index. */
static int read_set(const char *dir, const char *kind, tether_onnx_tensor *t, int *n, char *why,
                    size_t whyn) {
    *n = 0;
    for (int k = 0; k < MAX_IO; k++) {
        char p[1400];
        snprintf(p, sizeof p, "%s/test_data_set_0/%s_%d.pb", dir, kind, k);
        if (!file_exists(p)) {
            break;
        }
        if (tether_onnx_tensor_read(p, &t[k])) {
            snprintf(why, whyn, "%s", tether_last_error());
            return -1;
        }
        (*n)++;
    }
    return 0;
}

/* The data's element type matches the model's (the .pb reader keeps every storage type:
 * float16/bfloat16 bit patterns, bool one byte). The suite (ONNX 1.12) stores bfloat16 test data
 * as uint16 TensorProtos (numpy has no bfloat16): for a bfloat16 tensor such data is taken as
 * its bit patterns, and compared as bfloat16. */
static int same_type(const tether_ir_tensor *t, tether_onnx_tensor *d) {
    if (t->dtype.code == kDLBfloat && d->dtype.code == kDLUInt && d->dtype.bits == 16) {
        d->dtype = t->dtype;
    }
    return tether_dtype_equal(t->dtype, d->dtype);
}

/* Element i of a float16/bfloat16/float32/float64 buffer as a double. */
static double float_elem(const void *p, DLDataType t, size_t i) {
    const unsigned char *b = (const unsigned char *)p + i * (t.bits / 8);
    if (t.bits == 64) {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    if (t.bits == 32) {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, b, 2);
    if (t.code == kDLBfloat) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* The first element of the current test that only ONNX's runner tolerance accepted ("": none). */
static char g_onnx_rule_note[200];

/* Compares the output buffers of element type t (nbytes): floats within the tolerance, integers
 * and bool byte for byte; writes the first mismatch into why. */
static int close_enough_typed(const void *got, const void *want, DLDataType t, size_t nbytes,
                              char *why, size_t whyn) {
    if (t.code != kDLFloat && t.code != kDLBfloat) {
        const unsigned char *a = got, *b = want;
        for (size_t i = 0; i < nbytes; i++) {
            if (a[i] != b[i]) {
                snprintf(why, whyn, "byte %zu: got %u, expected %u (integers equal exactly)", i,
                         a[i], b[i]);
                return 0;
            }
        }
        return 1;
    }
    /* bfloat16 has an 8-bit significand (1 ulp ~ 3.9e-3 relative: the suite's float->bfloat16
     * data truncates where tether rounds to nearest even), float16 an 11-bit one */
    const double rtol = t.code == kDLBfloat ? 1e-2 : t.bits == 16 ? 1e-3 : 1e-4, atol = 1e-5;
    size_t n = nbytes / (t.bits / 8);
    for (size_t i = 0; i < n; i++) {
        double a = float_elem(got, t, i), b = float_elem(want, t, i);
        if (isnan(a) && isnan(b)) {
            continue;
        }
        if (isinf(b) && a == b) {
            continue;
        }
        if (fabs(a - b) <= atol + rtol * fabs(b)) {
            continue;
        }
        /* ONNX's own backend runner (np.testing.assert_allclose, rtol 1e-3, atol 1e-7) accepts
         * it: a pass, noted by name (g_onnx_rule_note) so the summary lists every such test */
        if (fabs(a - b) <= 1e-7 + 1e-3 * fabs(b)) {
            if (!g_onnx_rule_note[0]) {
                snprintf(g_onnx_rule_note, sizeof g_onnx_rule_note,
                         "element %zu: got %.9g, expected %.9g (relative %.2g)", i, a, b,
                         fabs(a - b) / fabs(b));
            }
            continue;
        }
        snprintf(why, whyn, "element %zu: got %.9g, expected %.9g", i, a, b);
        return 0;
    }
    return 1;
}

static int same_shape(const tether_ir_tensor *t, const tether_onnx_tensor *e) {
    if (t->ndim != e->ndim) {
        return 0;
    }
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] != e->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* The data's shape fits the output's: equal, or, for an output of data-dependent size, equal
 * but along its dynamic dimension, where the data's extent is at most the bound. */
static int within_bound(const tether_ir_tensor *t, const tether_onnx_tensor *e) {
    if (t->dyn_dim <= 0 || t->ndim != e->ndim) {
        return same_shape(t, e);
    }
    for (int d = 0; d < t->ndim; d++) {
        if (d == t->dyn_dim - 1 ? e->shape[d] > t->shape[d] : e->shape[d] != t->shape[d]) {
            return 0;
        }
    }
    return 1;
}

/* Output i of a run (buffers bufs, one per graph output, extent outputs after the model's): its
 * actual shape (the extent output's value along the dynamic dimension) equals the data's. */
static int actual_shape(const tether_ir_graph *g, int i, float *const *bufs,
                        const tether_onnx_tensor *e, char *why, size_t whyn) {
    const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
    int k = tether_ir_extent_output(g, i);
    if (k < 0) {
        return 1;
    }
    int64_t ext;
    memcpy(&ext, bufs[k], sizeof ext);
    int64_t want = e->shape[t->dyn_dim - 1];
    if (ext != want) {
        snprintf(why, whyn, "actual extent %lld along dimension %d, expected %lld (bound %lld)",
                 (long long)ext, t->dyn_dim - 1, (long long)want,
                 (long long)t->shape[t->dyn_dim - 1]);
        return 0;
    }
    return 1;
}

static void shape_text(char *buf, size_t n, const int64_t *shape, int ndim) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && o < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)shape[i]);
    }
    if (o < n) {
        snprintf(buf + o, n - o, "]");
    }
}

/* Runs the compiled artifact on the device; outputs into got[] (malloc'd). */
static int run_on_device(tether_session *s, const char *dir, const char *lib, const char *entry,
                         const tether_ir_graph *g, const tether_onnx_tensor *const *rin,
                         float **got, char *why, size_t whyn) {
    char path[1800], name[300];
    snprintf(path, sizeof path, "%s/%s", dir, lib);
    snprintf(name, sizeof name, "%s", lib);
    uint64_t mod;
    tether_remote_func f;
    int rc = tether_session_upload_file(s, 0, name, path);
    if (!rc) {
        rc = tether_session_load_module(s, name, &mod, NULL);
    }
    if (!rc) {
        rc = tether_session_get_function(s, mod, entry, &f);
    }
    if (rc) {
        snprintf(why, whyn, "device: %s", tether_last_error());
        return -1;
    }
    tether_remote_arg args[2 * MAX_IO];
    int nargs = 0;
    int32_t code = f.abi == TETHER_ABI_PACKED ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
    for (int i = 0; i < g->ninputs + g->noutputs && !rc; i++) {
        int is_in = i < g->ninputs;
        const tether_ir_tensor *t = &g->tensors[is_in ? g->inputs[i] : g->outputs[i - g->ninputs]];
        uint64_t h;
        rc =
            tether_session_alloc(s, t->shape, t->ndim, t->dtype, TETHER_SCOPE_GLOBAL, "", &h, NULL);
        if (!rc && is_in) {
            rc = tether_session_copy_to(s, h, 0, rin[i]->data, rin[i]->nbytes);
        }
        args[nargs].type_code = code;
        args[nargs++].v.array = h;
    }
    tether_call_result res;
    if (!rc) {
        rc = tether_session_call(s, &f, args, (uint32_t)nargs, &res);
    }
    if (!rc && res.ret != 0) {
        snprintf(why, whyn, "the entry returned %d", (int)res.ret);
        tether_session_reset(s);
        return -1;
    }
    for (int i = 0; i < g->noutputs && !rc; i++) { /* extent outputs included */
        const tether_ir_tensor *t = &g->tensors[g->outputs[i]];
        size_t nb = tether_ir_tensor_bytes(t);
        got[i] = malloc(nb ? nb : 1);
        rc = got[i] ? tether_session_copy_from(s, args[g->ninputs + i].v.array, 0, got[i], nb)
                    : TETHER_ERR_OUT_OF_MEMORY;
    }
    if (rc) {
        snprintf(why, whyn, "device: %s", tether_last_error());
    }
    if (tether_session_reset(s) && !rc) { /* frees the arrays and unloads the module */
        snprintf(why, whyn, "device reset: %s", tether_last_error());
        rc = -1;
    }
    return rc ? -1 : 0;
}

/* Compiles g with the OpenCL backend into art (textures: --texture-activations) and runs it on
 * the device through the host library's artifact runner; outputs into got[] (malloc'd).
 * Returns 0, -1 (why set) or TETHER_ERR_UNSUPPORTED when the backend lacks an operator. */
static int run_opencl(tether_session *s, const char *art, bool textures, const tether_ir_graph *g,
                      const tether_onnx_tensor *const *rin, float **got, char *why, size_t whyn) {
    tether_ir_graph c;
    memset(&c, 0, sizeof c);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.backend = TETHER_BACKEND_OPENCL;
    o.opencl.texture_activations = textures;
    o.codegen.prefix = "onnx_node";
    const tether_device_info *d = tether_session_info(s);
    o.opencl.image_max_width = d->image_max_width;
    o.opencl.image_max_height = d->image_max_height;
    tether_compile_result res;
    int rc = tether_ir_init(&c, g->name);
    for (int i = 0; !rc && i < g->ntensors; i++) { /* the compile changes its graph: a copy */
        const tether_ir_tensor *t = &g->tensors[i];
        rc = t->kind == TETHER_TENSOR_CONSTANT
                 ? tether_ir_add_constant(&c, t->name, t->dtype, t->ndim, t->shape, t->data,
                                          t->nbytes, NULL)
                 : tether_ir_add_tensor(&c, t->name, t->dtype, t->ndim, t->shape, NULL);
    }
    for (int i = 0; !rc && i < g->nnodes; i++) {
        const tether_ir_node *n = &g->nodes[i];
        rc = tether_ir_add_node(&c, n->name, n->op, n->inputs, n->ninputs, n->outputs, n->noutputs,
                                &n->attrs, NULL);
    }
    for (int i = 0; !rc && i < g->ninputs; i++) {
        rc = tether_ir_add_input(&c, g->inputs[i]);
    }
    for (int i = 0; !rc && i < g->noutputs; i++) {
        rc = tether_ir_add_output(&c, g->outputs[i]);
    }
    if (!rc) {
        rc = tether_ir_infer(&c);
    }
    if (!rc) {
        rc = tether_compile_graph(&c, art, &o, &res);
    }
    tether_ir_close(&c);
    if (rc == TETHER_ERR_UNSUPPORTED) {
        snprintf(why, whyn, "%s", tether_last_error());
        return TETHER_ERR_UNSUPPORTED;
    }
    if (rc) {
        snprintf(why, whyn, "compile (OpenCL%s): %s", textures ? ", textures" : "",
                 tether_last_error());
        return -1;
    }
    tether_artifact *a;
    if (tether_artifact_open(art, &a)) {
        snprintf(why, whyn, "open %s: %s", art, tether_last_error());
        return -1;
    }
    const void *ins[MAX_IO];
    void *outs[MAX_IO];
    for (int i = 0; i < g->ninputs; i++) {
        ins[i] = rin[i]->data;
    }
    for (int i = 0; i < g->noutputs; i++) {
        size_t nb = tether_ir_tensor_bytes(&g->tensors[g->outputs[i]]);
        outs[i] = got[i] = malloc(nb ? nb : 1);
    }
    rc = tether_artifact_prepare(a, s, NULL);
    if (!rc) {
        rc = tether_artifact_run(a, ins, outs, NULL, NULL);
    }
    if (rc) {
        snprintf(why, whyn, "device (OpenCL%s): %s", textures ? ", textures" : "",
                 tether_last_error());
    }
    tether_artifact_free(a);
    if (tether_session_reset(s) && !rc) {
        snprintf(why, whyn, "device reset: %s", tether_last_error());
        rc = -1;
    }
    return rc ? -1 : 0;
}

/* One test folder: 1 passed, 0 failed (why set), -1 not handled by the OpenCL backend. */
static int run_one(tether_session *s, const char *name, timing *tm, char *why, size_t whyn) {
    char dir[1200], model[1300];
    snprintf(dir, sizeof dir, "%s/%s", g_data, name);
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    tether_onnx_tensor in[MAX_IO], out[MAX_IO];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    int nin = 0, nout = 0, ok = 0;
    float *got[MAX_IO] = {0}, *ref[MAX_IO] = {0};
    tether_ir_graph g;
    memset(&g, 0, sizeof g);
    char art[1400];
    /* per device and ABI: the ctest entries run in parallel and must not share directories */
    snprintf(art, sizeof art, "%s/tests/conformance/tmp/%s-%s/%s", TETHER_BINARY_DIR, g_device,
             g_abi_name, name);
    if (read_set(dir, "input", in, &nin, why, whyn) ||
        read_set(dir, "output", out, &nout, why, whyn)) {
        goto out;
    }
    tether_model_value vals[MAX_IO];
    unsigned char bound[MAX_IO] = {0};
    for (int i = 0; i < nin; i++) {
        vals[i] = tether_onnx_tensor_value(&in[i]);
    }
    tether_model_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.input_values = vals;
    lo.ninput_values = nin;
    lo.input_bound = bound;
    double t0 = now_s();
    if (tether_onnx_load(model, &lo, &g)) {
        snprintf(why, whyn, "import: %s", tether_error_detail());
        goto out;
    }
    tm->import_s += now_s() - t0;
    /* the run-time inputs: the test data minus what the importer bound */
    const tether_onnx_tensor *rin[MAX_IO];
    int nr = 0;
    for (int i = 0; i < nin; i++) {
        if (!bound[i]) {
            rin[nr++] = &in[i];
        }
    }
    /* outputs of data-dependent size come with one extent output each, after the model's */
    int nmodel = 0;
    for (int i = 0; i < g.noutputs; i++) {
        nmodel += g.tensors[g.outputs[i]].dyn_dim >= 0;
    }
    if (nr != g.ninputs || nout != nmodel) {
        snprintf(why, whyn, "the model has %d run-time inputs and %d outputs; the data %d and %d",
                 g.ninputs, nmodel, nr, nout);
        goto out;
    }
    for (int i = 0; i < nr; i++) {
        const tether_ir_tensor *t = &g.tensors[g.inputs[i]];
        if (!same_type(t, (tether_onnx_tensor *)rin[i]) || !same_shape(t, rin[i])) {
            char a[96], b[96];
            shape_text(a, sizeof a, t->shape, t->ndim);
            shape_text(b, sizeof b, rin[i]->shape, rin[i]->ndim);
            snprintf(why, whyn,
                     "input %d: the model wants %s, the data is %s of another type or "
                     "shape",
                     i, a, b);
            goto out;
        }
    }
    for (int i = 0; i < nout; i++) {
        const tether_ir_tensor *t = &g.tensors[g.outputs[i]];
        if (!same_type(t, &out[i]) || !within_bound(t, &out[i])) {
            char a[96], b[96];
            shape_text(a, sizeof a, t->shape, t->ndim);
            shape_text(b, sizeof b, out[i].shape, out[i].ndim);
            snprintf(why, whyn,
                     "output %d: the model gives %s, expected %s of another type or "
                     "shape",
                     i, a, b);
            goto out;
        }
    }
    /* reference interpreter on the graph as imported */
    const void *ins[MAX_IO];
    for (int i = 0; i < nr; i++) {
        ins[i] = rin[i]->data;
    }
    for (int i = 0; i < g.noutputs; i++) {
        size_t nb = tether_ir_tensor_bytes(&g.tensors[g.outputs[i]]);
        ref[i] = malloc(nb ? nb : 1);
    }
    if (tether_interp_run_typed(&g, ins, (void *const *)ref)) {
        snprintf(why, whyn, "interpreter: %s", tether_last_error());
        goto out;
    }
    for (int i = 0; i < nout; i++) {
        char w[200];
        if (!actual_shape(&g, i, ref, &out[i], w, sizeof w) ||
            !close_enough_typed(ref[i], out[i].data, out[i].dtype, out[i].nbytes, w, sizeof w)) {
            snprintf(why, whyn, "interpreter, output %d: %s", i, w);
            goto out;
        }
    }
    g_interp_passed++;
    char cmd[1800];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", art);
    if (system(cmd) != 0) {
        snprintf(why, whyn, "cannot create the artifact directory");
        goto out;
    }
    if (g_opencl) { /* buffers, then textures: each equal to the data, and to each other */
        float *tex[MAX_IO] = {0};
        t0 = now_s();
        int r = run_opencl(s, art, false, &g, rin, got, why, whyn);
        if (r == TETHER_ERR_UNSUPPORTED) {
            ok = -1;
            goto out;
        }
        if (!r) {
            r = run_opencl(s, art, true, &g, rin, tex, why, whyn);
        }
        for (int i = 0; !r && i < nout; i++) {
            char w[200];
            if (!close_enough_typed(got[i], out[i].data, out[i].dtype, out[i].nbytes, w,
                                    sizeof w)) {
                snprintf(why, whyn, "OpenCL, output %d: %s", i, w);
                r = -1;
            } else if (!close_enough_typed(tex[i], got[i], out[i].dtype, out[i].nbytes, w,
                                           sizeof w)) {
                snprintf(why, whyn, "OpenCL textures vs buffers, output %d: %s", i, w);
                r = -1;
            }
        }
        for (int i = 0; i < MAX_IO; i++) {
            free(tex[i]);
        }
        tm->run_s += now_s() - t0; /* compile + device, both variants */
        ok = r == 0;
        if (ok) {
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", art);
            ok = system(cmd) == 0;
        }
        goto out;
    }
    /* compile, run on the device, compare */
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = g_abi;
    o.codegen.prefix = "onnx_node";
    o.build.opt_level = 1;
    tether_compile_result res;
    t0 = now_s();
    if (tether_compile_graph(&g, art, &o, &res)) {
        snprintf(why, whyn, "compile: %s", tether_last_error());
        goto out;
    }
    tm->codegen_s += res.codegen_seconds;
    tm->build_s += now_s() - t0 - res.codegen_seconds;
    t0 = now_s();
    if (run_on_device(s, art, res.build.library, res.entry, &g, rin, got, why, whyn)) {
        goto out;
    }
    tm->run_s += now_s() - t0;
    for (int i = 0; i < nout; i++) {
        char w[200];
        if (!actual_shape(&g, i, got, &out[i], w, sizeof w) ||
            !close_enough_typed(got[i], out[i].data, out[i].dtype, out[i].nbytes, w, sizeof w)) {
            snprintf(why, whyn, "output %d: %s", i, w);
            goto out;
        }
    }
    ok = 1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", art); /* failures keep their artifact */
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", art);
    }
out:
    for (int i = 0; i < MAX_IO; i++) {
        tether_onnx_tensor_free(&in[i]);
        tether_onnx_tensor_free(&out[i]);
        free(got[i]);
        free(ref[i]);
    }
    tether_ir_close(&g);
    return ok;
}

static void test_onnx_node(void **state) {
    g_abi_name = *state;
    g_opencl = strcmp(g_abi_name, "opencl") == 0;
    assert_true(g_opencl || tether_abi_parse(g_abi_name, &g_abi) == 0);
    /* the test folders, sorted */
    char **names = calloc(MAX_TEST, sizeof(char *));
    int n = 0;
    DIR *d = opendir(g_data);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_TEST) {
        char m[1400];
        snprintf(m, sizeof m, "%s/%s/model.onnx", g_data, e->d_name);
        if (strncmp(e->d_name, "test_", 5) == 0 && file_exists(m)) {
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    assert_true(n > 0);
    /* skip list (name + reason) and subset */
    static char skip[MAX_TEST][128], reason[MAX_TEST][256], subset[MAX_TEST][128];
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/conformance/skips.txt", TETHER_SOURCE_DIR);
    int nskip = read_list(path, skip, reason, MAX_TEST);
    assert_true(nskip >= 0);
    for (int i = 0; i < nskip; i++) {
        if (!reason[i][0]) {
            fail_msg("skips.txt: '%s' has no reason", skip[i]);
        }
    }
    /* tests whose expected data contradict the ONNX spec (data_errors.txt): still failures, with
     * the proof's summary printed beside them */
    static char bad_data[64][128], bad_why[64][256];
    snprintf(path, sizeof path, "%s/tests/conformance/data_errors.txt", TETHER_SOURCE_DIR);
    int nbad = read_list(path, bad_data, bad_why, 64);
    int nsub = -1;
    if (g_subset) {
        nsub = read_list(g_subset, subset, NULL, MAX_TEST);
        assert_true(nsub > 0);
    }
    tether_session *s = NULL;
    tether_session_options so;
    memset(&so, 0, sizeof so);
    so.tetherd = TETHERD_PATH;
    static const char *const quiet[] = {"--quiet", NULL};
    so.tetherd_args = quiet;
#ifdef TETHER_HAVE_TEST_DAEMON
    test_daemon daemon;
    memset(&daemon, 0, sizeof daemon);
#endif
    const char *url = "local:";
    if (strcmp(g_device, "tcp") == 0) {
#ifdef TETHER_HAVE_TEST_DAEMON
        static const char *const extra[] = {"--quiet", NULL};
        assert_int_equal(daemon_start(&daemon, extra), 0);
        url = daemon.url;
#else
        fail_msg("built without the tetherd test helpers");
#endif
    }
    if (tether_session_open(&s, url, &so)) {
        fail_msg("session %s: %s", url, tether_last_error());
    }
    int passed = 0, failed = 0, skipped = 0, unhandled = 0, loose = 0;
    char *failed_names = calloc(1, 1 << 16), *skipped_names = calloc(1, 1 << 16);
    char *loose_names = calloc(1, 1 << 16);
    timing tm = {0, 0, 0, 0};
    double t_start = now_s();
    for (int i = 0; i < n; i++) {
        int wanted = nsub < 0 && g_nonly == 0;
        for (int k = 0; k < nsub && !wanted; k++) {
            wanted = strcmp(subset[k], names[i]) == 0;
        }
        for (int k = 0; k < g_nonly && !wanted; k++) {
            wanted = strcmp(g_only[k], names[i]) == 0;
        }
        if (!wanted) {
            continue;
        }
        int sk = -1;
        for (int k = 0; k < nskip; k++) {
            if (strcmp(skip[k], names[i]) == 0) {
                sk = k;
            }
        }
        if (sk >= 0) {
            printf("SKIP %s: %s\n", names[i], reason[sk]);
            snprintf(skipped_names + strlen(skipped_names), (1 << 16) - strlen(skipped_names),
                     "%s%s", skipped ? ", " : "", names[i]);
            skipped++;
            continue;
        }
        char why[1024] = "";
        g_onnx_rule_note[0] = 0;
        int r = run_one(s, names[i], &tm, why, sizeof why);
        if (r < 0) {
            printf("NOT HANDLED %s (OpenCL backend): %s\n", names[i], why);
            unhandled++;
        } else if (r) {
            passed++;
            if (g_onnx_rule_note[0]) {
                printf("NOTE %s (%s ABI): passes by ONNX's runner tolerance only (rtol 1e-3, atol "
                       "1e-7): %s\n",
                       names[i], g_abi_name, g_onnx_rule_note);
                snprintf(loose_names + strlen(loose_names), (1 << 16) - strlen(loose_names), "%s%s",
                         loose ? ", " : "", names[i]);
                loose++;
            }
        } else {
            printf("FAIL %s (%s ABI): %s\n", names[i], g_abi_name, why);
            for (int k = 0; k < nbad; k++) {
                if (strcmp(bad_data[k], names[i]) == 0) {
                    printf("  the suite's data are wrong here (data_errors.txt): %s\n", bad_why[k]);
                }
            }
            snprintf(failed_names + strlen(failed_names), (1 << 16) - strlen(failed_names), "%s%s",
                     failed ? ", " : "", names[i]);
            failed++;
            /* a device that died takes the session with it: start a fresh one */
            tether_session_close(s);
            s = NULL;
            if (tether_session_open(&s, url, &so)) {
                fail_msg("session %s: %s", url, tether_last_error());
            }
        }
    }
    for (int k = 0; k < nskip; k++) {
        int found = 0;
        for (int i = 0; i < n && !found; i++) {
            found = strcmp(skip[k], names[i]) == 0;
        }
        if (!found) {
            printf("note: skips.txt lists '%s', which is not a test folder\n", skip[k]);
        }
    }
    double total = now_s() - t_start;
    printf("timing: import %.2f s, codegen %.2f s, C build %.2f s, device %.2f s, total %.2f s\n",
           tm.import_s, tm.codegen_s, tm.build_s, tm.run_s, total);
    printf("onnx-node [interpreter]: %d passed (of the %d run)\n", g_interp_passed,
           passed + failed + unhandled);
    printf("onnx-node [%s ABI, %s]: %d passed, %d failed, %d skipped%s%s%s%s\n", g_abi_name,
           strcmp(g_device, "tcp") == 0 ? "tetherd over TCP" : "local:", passed, failed, skipped,
           failed ? "; failed: " : "", failed_names, skipped ? "; skipped: " : "", skipped_names);
    if (loose) {
        printf("onnx-node [%s ABI]: %d of the passed within ONNX's runner tolerance only: %s\n",
               g_abi_name, loose, loose_names);
    }
    if (g_opencl) {
        printf("onnx-node [opencl]: %d not handled by the OpenCL backend (an operator it lacks)\n",
               unhandled);
    }
    fflush(stdout);
    tether_session_close(s);
#ifdef TETHER_HAVE_TEST_DAEMON
    if (daemon.pid > 0) {
        daemon_stop(&daemon);
    }
#endif
    for (int i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
    free(failed_names);
    free(skipped_names);
    free(loose_names);
    if (!g_measure) {
        assert_int_equal(failed, 0);
        assert_true(passed > 0);
        if (g_opencl && g_subset) { /* a slice lists tests the OpenCL backend must handle */
            assert_int_equal(unhandled, 0);
        }
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--abi") && i + 1 < argc) {
            g_abi_name = argv[++i];
        } else if (!strcmp(a, "--device") && i + 1 < argc) {
            g_device = argv[++i];
        } else if (!strcmp(a, "--data") && i + 1 < argc) {
            g_data_arg = argv[++i];
        } else if (!strcmp(a, "--measure")) {
            g_measure = true;
        } else if (!strcmp(a, "--subset") && i + 1 < argc) {
            g_subset = argv[++i];
        } else if (a[0] != '-') {
            g_only = &argv[i];
            g_nonly = argc - i;
            break;
        } else {
            fprintf(stderr,
                    "usage: %s --abi packed|unpacked|both|opencl [--device local|tcp] "
                    "[--subset FILE] [--data DIR] [--measure] [NAME...]\n",
                    argv[0]);
            return 2;
        }
    }
    bool both = strcmp(g_abi_name, "both") == 0;
    if (!both && strcmp(g_abi_name, "opencl") != 0 && tether_abi_parse(g_abi_name, &g_abi)) {
        fprintf(stderr, "unknown ABI '%s'\n", g_abi_name);
        return 2;
    }
    if (g_data_arg) {
        snprintf(g_data, sizeof g_data, "%s", g_data_arg);
    } else {
        snprintf(g_data, sizeof g_data, "%s/../shared/onnx-node", TETHER_SOURCE_DIR);
    }
    if (!file_exists(g_data)) {
        printf("skipped: the ONNX node tests are not at %s (the shared data folder beside the "
               "checkout)\n",
               g_data);
        return 77;
    }
    static char packed[] = "packed", unpacked[] = "unpacked";
    struct CMUnitTest tests[2] = {
        cmocka_unit_test_prestate(test_onnx_node, both ? unpacked : (char *)g_abi_name),
        cmocka_unit_test_prestate(test_onnx_node, packed),
    };
    return _cmocka_run_group_tests("onnx_node", tests, both ? 2 : 1, NULL, NULL);
}
