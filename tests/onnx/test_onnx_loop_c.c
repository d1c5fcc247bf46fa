/*
 * Run-time Loops (loop_models.h) in generated C: the while-style and the for-style model,
 * compiled for x86_64-linux in both ABIs and run (tests/compiler/ops_common.c), give exactly the
 * reference interpreter's outputs (M 6, 0 and negative; the initial condition false, a limit
 * below 1), and so do the scan outputs of a Loop of constant M stopped early by its run-time
 * condition (rows and extents), and a scan buffer cut below the iterations is an error
 * (TETHER_ERR_LIMIT, -4), never an overrun, as are scan outputs of a Loop whose M is known only
 * at run time (bounded by --loop-max or by the value-range bound of M = Min(Mraw, 6)), readers
 * of a scan output beyond elementwise ones (sums over the iterations, matmul, concat), the
 * readers by the live extent (NonZero's transpose, slices, gather, concat, flatten; a gather
 * index outside the live count fails the call; the loop's concat along the iterations and
 * transpose moving them) and an
 * ONNX Scan in both directions along two axes (values by hand too); compiled for
 * cortex-m3 in both ABIs they build (the loop is plain C in the graph function), the generated C
 * calls no allocator and the objects need nothing but memcpy/ memmove/memset, the error hook and
 * the compiler's __aeabi helpers. Without arm-none-eabi-gcc the Cortex-M part is skipped.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loop_models.h"
#include "ops_common.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"
#include "tether/onnx.h"

static void load_model(void (*build)(mb *, mb *), tether_ir_graph *g) {
    mb b, body;
    build(&b, &body);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    int rc = tether_onnx_load_buffer(buf, len, "loop.onnx", NULL, g);
    free(buf);
    mb_free(&b);
    mb_free(&body);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
}

/* Runs g through the interpreter and the compiled C, the packed ABI and, when both, the unpacked
 * one too (each is a compile: the tests give the unpacked ABI one representative case of each
 * model, the first, to keep the test's time down); the outputs (nout, of the given byte sizes)
 * must be equal byte for byte; keep receives the compiled outputs. */
static void compare(const tether_ir_graph *g, const char *tag, const void *const *in, int nout,
                    const size_t *bytes, void *const *keep, bool both) {
    static unsigned char ref[16][256], got[16][256];
    void *r[16], *o[16];
    assert_true(nout <= 16);
    for (int j = 0; j < nout; j++) {
        memset(ref[j], 0xA5, sizeof ref[j]);
        r[j] = ref[j];
        o[j] = got[j];
    }
    if (tether_interp_run_typed(g, in, r)) {
        fail_msg("%s: interpreter: %s", tag, tether_last_error());
    }
    for (int abi = 0; abi < (both ? 2 : 1); abi++) {
        for (int j = 0; j < nout; j++) {
            memset(got[j], 0x5A, sizeof got[j]);
        }
        char t[64];
        snprintf(t, sizeof t, "loop_%s", tag);
        if (tt_run_compiled(g, t, abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                            TETHER_INTERFACE_PACKED, true, (const float *const *)in,
                            (float *const *)o)) {
            fail_msg("%s %s: %s", tag, abi ? "unpacked" : "packed", tether_error_detail());
        }
        for (int j = 0; j < nout; j++) {
            if (memcmp(ref[j], got[j], bytes[j]) != 0) {
                fail_msg("%s %s: output %d differs from the interpreter", tag,
                         abi ? "unpacked" : "packed", j);
            }
            memcpy(keep[j], got[j], bytes[j]);
        }
    }
}

static void test_while_compiled(void **state) {
    (void)state;
    tether_ir_graph g;
    load_model(loop_while_model, &g);
    const struct {
        uint8_t c0;
        int64_t limit;
        float x, y0;
        int64_t n;
        float y;
    } cases[] = {{1, 5, 2, 1, 5, 32},
                 {1, 1, 3, 2, 1, 6},
                 {0, 5, 2, 7, 0, 7},
                 {1, -3, 0.5f, 8, 1, 4},
                 {1, 300, 1, 1, 300, 1}};
    const size_t bytes[2] = {8, 4};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const void *in[4] = {&cases[k].c0, &cases[k].limit, &cases[k].x, &cases[k].y0};
        char tag[32];
        snprintf(tag, sizeof tag, "while%zu", k);
        int64_t nf;
        float yf;
        void *out[2] = {&nf, &yf};
        compare(&g, tag, in, 2, bytes, out, k == 0);
        /* and the values themselves (the interpreter's are checked by test_onnx_import) */
        assert_int_equal(nf, cases[k].n);
        assert_true(yf == cases[k].y);
    }
    tether_ir_close(&g);
}

/* Scan outputs of a run-time loop (loop_scan_model, variants 0, 1 and 3: M = 8 constant, stopped
 * early by the data; 3 doubles ys after the loop): the scan outputs (the bound's rows, zero past
 * the iterations run) and their extents equal the interpreter's in both ABIs, and the extents are
 * the iterations. */
static void test_scan_compiled(void **state) {
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        if (variant == 2) {
            continue; /* M a graph input: refused (test_onnx_import) */
        }
        mb b, body;
        loop_scan_model(&b, &body, variant);
        size_t len;
        uint8_t *buf = mb_pack(&b, &len);
        tether_ir_graph g;
        int rc = tether_onnx_load_buffer(buf, len, "loop.onnx", NULL, &g);
        free(buf);
        mb_free(&b);
        mb_free(&body);
        if (rc) {
            fail_msg("%s", tether_last_error());
        }
        assert_int_equal(g.noutputs, 6);
        const struct {
            uint8_t c0;
            int64_t limit, iters;
        } cases[] = {{1, 5, 5}, {1, 20, 8}, {0, 5, 0}, {1, -3, 1}};
        const size_t bytes[6] = {8, 8, 64, 64, 8, 8};
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            if (variant == 1 && !cases[k].c0) {
                continue;
            }
            const float x[2] = {2, 0.5f};
            const void *in0[3] = {&cases[k].c0, &cases[k].limit, x};
            char tag[32];
            snprintf(tag, sizeof tag, "scan%d_%zu", variant, k);
            int64_t nf, nsv[8], ye, ne;
            float yf[2], ysv[16];
            void *out[6] = {&nf, yf, ysv, nsv, &ye, &ne};
            compare(&g, tag, variant == 1 ? in0 + 1 : in0, 6, bytes, out, k == 0);
            assert_int_equal(nf, cases[k].iters);
            assert_int_equal(ye, cases[k].iters);
            assert_int_equal(ne, cases[k].iters);
            for (int r = 0; r < 8; r++) {
                assert_int_equal(nsv[r], r < cases[k].iters ? r + 1 : 0);
            }
        }
        tether_ir_close(&g);
    }
}

/* A scan buffer of fewer rows than the loop runs (loop_scan's k cut to 3 in the IR, which an
 * import never makes: its bound is M): the row past it is TETHER_ERR_LIMIT in the interpreter and
 * -4 from the generated entry in both ABIs, never a write past the buffer; 3 iterations or fewer
 * run as before. */
static void test_scan_over_bound(void **state) {
    (void)state;
    mb b, body;
    loop_scan_model(&b, &body, 0);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    tether_ir_graph g;
    int rc = tether_onnx_load_buffer(buf, len, "loop.onnx", NULL, &g);
    free(buf);
    mb_free(&b);
    mb_free(&body);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    int cut = 0;
    for (int i = 0; i < g.nnodes; i++) {
        if (g.nodes[i].op == TETHER_OP_LOOP_SCAN) {
            g.nodes[i].attrs.k = 3;
            cut++;
        }
        if (g.nodes[i].op == TETHER_OP_LOOP_SCAN ||
            (g.nodes[i].op == TETHER_OP_LOOP_STACK && g.nodes[i].attrs.mode == 0)) {
            g.tensors[g.nodes[i].outputs[0]].shape[0] = 3; /* as declared */
        }
    }
    assert_int_equal(cut, 2);
    if (tether_ir_infer(&g)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(g.tensors[g.outputs[2]].shape[0], 3);
    const uint8_t c0 = 1;
    const int64_t five = 5, three = 3;
    const float x[2] = {2, 0.5f};
    int64_t nf, nsv[8], ye, ne;
    float yf[2], ysv[16];
    void *out[6] = {&nf, yf, ysv, nsv, &ye, &ne};
    const void *in[3] = {&c0, &five, x};
    assert_int_equal(tether_interp_run_typed(&g, in, out), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "iteration 3 is past the 3 rows"));
    for (int abi = 0; abi < 2; abi++) {
        rc = tt_run_compiled(&g, "loop_scan_cut", abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                             TETHER_INTERFACE_PACKED, true, (const float *const *)in,
                             (float *const *)out);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(tether_last_error(), "returned -4"));
    }
    const void *in3[3] = {&c0, &three, x};
    const size_t bytes[6] = {8, 8, 24, 24, 8, 8};
    compare(&g, "scan_cut3", in3, 6, bytes, out, true);
    assert_int_equal(ye, 3);
    assert_int_equal(nsv[2], 3);
    tether_ir_close(&g);
}

/* Scan outputs of a Loop whose trip count M is known only at run time (loop_scan_model variant 2,
 * M a graph input bounded by loop_max 8 or 3; variant 4, M = Min(Mraw, 6), rows 6 from the
 * value-range bound): rows and extents equal the interpreter's in both ABIs; more iterations
 * than the rows are -4 (TETHER_ERR_LIMIT) from the generated entry, as in the interpreter. */
static void test_scan_trip_compiled(void **state) {
    (void)state;
    const struct {
        int variant;
        int64_t loop_max, rows;
        unsigned cases; /* which of cases[] (bit k) it runs: each one is a compile per ABI */
    } models[] = {{2, 8, 8, 5}, {4, 0, 6, 10}, {2, 3, 3, 3}};
    for (int mi = 0; mi < 3; mi++) {
        mb b, body;
        loop_scan_model(&b, &body, models[mi].variant);
        size_t len;
        uint8_t *buf = mb_pack(&b, &len);
        tether_model_load_options lo;
        memset(&lo, 0, sizeof lo);
        lo.loop_max = models[mi].loop_max;
        tether_ir_graph g;
        int rc = tether_onnx_load_buffer(buf, len, "loop.onnx", &lo, &g);
        free(buf);
        mb_free(&b);
        mb_free(&body);
        if (rc) {
            fail_msg("%s", tether_last_error());
        }
        int64_t rows = models[mi].rows;
        assert_int_equal(g.tensors[g.outputs[2]].shape[0], rows);
        /* M, limit -> iterations */
        const int64_t cases[][3] = {{8, 5, 5}, {3, 20, 3}, {0, 20, 0}, {7, 20, 7}};
        const size_t bytes[6] = {8, 8, (size_t)rows * 8, (size_t)rows * 8, 8, 8};
        for (size_t k = 0; k < 4; k++) {
            if (!(models[mi].cases >> k & 1)) {
                continue;
            }
            int64_t iters = cases[k][2];
            iters = models[mi].variant == 4 && iters > 6 ? 6 : iters;
            const uint8_t c0 = 1;
            const float x[2] = {2, 0.5f};
            const void *in[4] = {&cases[k][0], &c0, &cases[k][1], x};
            int64_t nf, nsv[8], ye, ne;
            float yf[2], ysv[16];
            void *out[6] = {&nf, yf, ysv, nsv, &ye, &ne};
            if (iters > rows) {
                assert_int_equal(tether_interp_run_typed(&g, in, out), TETHER_ERR_LIMIT);
                for (int abi = 0; abi < 2; abi++) {
                    rc = tt_run_compiled(&g, "loop_trip_over",
                                         abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED,
                                         TETHER_INTERFACE_PACKED, true, (const float *const *)in,
                                         (float *const *)out);
                    assert_int_not_equal(rc, 0);
                    assert_non_null(strstr(tether_last_error(), "returned -4"));
                }
                continue;
            }
            char tag[32];
            snprintf(tag, sizeof tag, "trip%d_%zu", mi, k);
            compare(&g, tag, in, 6, bytes, out, (models[mi].cases & ((1u << k) - 1)) == 0);
            assert_int_equal(nf, iters);
            assert_int_equal(ye, iters);
            assert_int_equal(ne, iters);
            for (int64_t r = 0; r < rows; r++) {
                assert_int_equal(nsv[r], r < iters ? r + 1 : 0);
            }
        }
        tether_ir_close(&g);
    }
}

/* ONNX Scan with run-time scan inputs in reverse along axis 1 and forward along axis -2, scan
 * outputs along the last axis in reverse and along axis 0 (scan_dirs_model): the compiled C in
 * both ABIs equals the interpreter and the values worked out by hand. */
static void test_scan_directions_compiled(void **state) {
    (void)state;
    tether_ir_graph g;
    load_model(scan_dirs_model, &g);
    const float s0[2] = {0, 1}, seq[6] = {1, 2, 3, 4, 5, 6}, seq2[6] = {10, 20, 30, 40, 50, 60};
    const void *in[3] = {s0, seq, seq2};
    float sf[2], o1[6], o2[6];
    void *out[3] = {sf, o1, o2};
    const size_t bytes[3] = {8, 24, 24};
    compare(&g, "scan_dirs", in, 3, bytes, out, true);
    const float want_s[2] = {96, 136}, want1[6] = {9216, 2025, 169, 18496, 5184, 729},
                want2[6] = {3, 7, 15, 32, 46, 76};
    assert_memory_equal(sf, want_s, sizeof want_s);
    assert_memory_equal(o1, want1, sizeof want1);
    assert_memory_equal(o2, want2, sizeof want2);
    tether_ir_close(&g);
}

/* Readers of a dynamic scan output beyond elementwise ones (loop_scan_model variant 6: a sum over
 * the iterations, a matmul by a constant, a concat with ys * ys along axis 1, a sum over the
 * matmul's rows, and the mean, max, min, prod and sum of Exp(ys) over the iterations, which read
 * the live row count): the compiled C in both ABIs (one artifact per ABI holds every reader)
 * gives the interpreter's bytes, rows past the iterations included, for 5, 8 and no iterations
 * (ONNX's empty reductions), and the sums, max and min equal the iterations' by hand. */
static void test_scan_readers_compiled(void **state) {
    (void)state;
    tether_ir_graph g;
    mb b, body;
    loop_scan_model(&b, &body, 6);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    int rc = tether_onnx_load_buffer(buf, len, "loop.onnx", NULL, &g);
    free(buf);
    mb_free(&b);
    mb_free(&body);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
    const size_t bytes[15] = {8, 8, 8, 32, 128, 4, 8, 8, 8, 8, 8, 64, 8, 8, 8};
    const int64_t limits[3] = {5, 20, 0};
    for (int k = 0; k < 3; k++) {
        const uint8_t c0 = limits[k] > 0;
        const float x[2] = {2, 0.5f};
        const void *in[3] = {&c0, &limits[k], x};
        int64_t nf, nsv[8], pe, ce, ne;
        float yf[2], tot[2], proj[8], cat[32], tot2, mean[2], mx[2], mn[2], prod[2], esum[2];
        void *out[15] = {&nf, yf,   tot,  proj, cat, &tot2, mean, mx,
                         mn,  prod, esum, nsv,  &pe, &ce,   &ne};
        char tag[32];
        snprintf(tag, sizeof tag, "readers%d", k);
        compare(&g, tag, in, 15, bytes, out, k == 0);
        int64_t it = k == 0 ? 5 : (k == 1 ? 8 : 0);
        assert_int_equal(pe, it);
        assert_int_equal(ce, it);
        float p = 1, q = -1, s0 = 0, s1 = 0, s2 = 0;
        for (int r = 0; r < it; r++) {
            p *= 2;
            q *= 0.5f;
            s0 += p;
            s1 += q;
            s2 += p + 2 * q;
        }
        assert_true(tot[0] == s0 && tot[1] == s1 && tot2 == s2);
        if (it == 0) {
            assert_true(isnan(mean[0]) && mx[0] == -INFINITY && mn[1] == INFINITY);
            assert_true(prod[0] == 1 && esum[0] == 0);
        } else {
            assert_true(mx[0] == p && mn[0] == 2 && mx[1] == q && mn[1] == -0.5f);
            assert_true(mean[0] == s0 / (float)it);
        }
    }
    tether_ir_close(&g);
}

static void scan_concat_model(mb *b, mb *body);
static void scan_transpose_model(mb *b, mb *body);

static void load_plain(void (*build)(mb *, int), int variant, tether_ir_graph *g) {
    mb b;
    build(&b, variant);
    size_t len;
    uint8_t *buf = mb_pack(&b, &len);
    int rc = tether_onnx_load_buffer(buf, len, "live.onnx", NULL, g);
    free(buf);
    mb_free(&b);
    if (rc) {
        fail_msg("%s", tether_last_error());
    }
}

/* The readers by the live extent (ir/shapes_dynamic_live.c) in generated C, bit-equal to the
 * interpreter: NonZero's transpose, slices, gather, concat and flatten (3, 1 and 0 nonzero
 * elements), the static gathers t[0] and t[-1] (an index outside the live count: the compiled
 * call fails too), and the loop's concat along the iterations and transpose moving them. */
static void test_live_readers_compiled(void **state) {
    (void)state;
    const float xs[3][6] = {{0, 1, 0, 2, 0, 3}, {0, 0, 0, 0, 5, 0}, {0, 0, 0, 0, 0, 0}};
    tether_ir_graph g;
    load_plain(nonzero_readers_model, 0, &g);
    const size_t bytes[12] = {96, 32, 32, 48, 112, 96, 8, 8, 8, 8, 8, 8};
    for (int k = 0; k < 3; k++) {
        int64_t t[12], head[4], tail[4], cols[6], cat[14], flat[12], ext[6];
        void *out[12] = {t,       head,    tail,    cols,    cat,     flat,
                         &ext[0], &ext[1], &ext[2], &ext[3], &ext[4], &ext[5]};
        const void *in[1] = {xs[k]};
        char tag[32];
        snprintf(tag, sizeof tag, "nzread%d", k);
        compare(&g, tag, in, 12, bytes, out, k == 0);
        assert_int_equal(ext[4], k == 0 ? 4 : k == 1 ? 2 : 1); /* the concat's extent */
    }
    tether_ir_close(&g);
    load_plain(nonzero_readers_model, 1, &g);
    const size_t b2[2] = {16, 16};
    int64_t first[2], last[2];
    void *o2[2] = {first, last};
    const void *in1[1] = {xs[1]};
    compare(&g, "nzfirst", in1, 2, b2, o2, false);
    assert_true(first[0] == 1 && first[1] == 1 && last[0] == 1 && last[1] == 1);
    const void *in2[1] = {xs[2]};
    assert_int_equal(tether_interp_run_typed(&g, in2, o2), TETHER_ERR_INVALID_ARG);
    if (tt_run_compiled(&g, "nzfirst_bad", TETHER_ABI_PACKED, TETHER_INTERFACE_PACKED, true,
                        (const float *const *)in2, (float *const *)o2) == 0) {
        fail_msg("the compiled gather outside the live count did not fail");
    }
    tether_ir_close(&g);
    for (int variant = 7; variant <= 8; variant++) {
        load_model(variant == 7 ? scan_concat_model : scan_transpose_model, &g);
        const size_t bytes6[6] = {8, 8, variant == 7 ? 128u : 64u, 64, 8, 8};
        const int64_t limits[2] = {5, 0};
        for (int k = 0; k < 2; k++) {
            const uint8_t c0 = limits[k] > 0;
            const float x[2] = {2, 0.5f};
            const void *in[3] = {&c0, &limits[k], x};
            int64_t nf, nsv[8], re, ne;
            float yf[2], red[32];
            void *out[6] = {&nf, yf, red, nsv, &re, &ne};
            char tag[32];
            snprintf(tag, sizeof tag, "scanlive%d_%d", variant, k);
            compare(&g, tag, in, 6, bytes6, out, false);
            assert_int_equal(re, (k == 0 ? 5 : 0) * (variant == 7 ? 2 : 1));
        }
        tether_ir_close(&g);
    }
}

static void test_for_compiled(void **state) {
    (void)state;
    tether_ir_graph g;
    load_model(loop_for_model, &g);
    const float a0[2] = {0, 2}, b0[2] = {1, 3};
    const int64_t ms[4] = {6, 0, -2, 1};
    const size_t bytes[3] = {8, 8, 8};
    for (int k = 0; k < 4; k++) {
        const void *in[3] = {&ms[k], a0, b0};
        char tag[32];
        snprintf(tag, sizeof tag, "for%d", k);
        float af[2], bf[2];
        int64_t sf;
        void *out[3] = {af, bf, &sf};
        compare(&g, tag, in, 3, bytes, out, k == 0);
        if (k == 0) {
            assert_true(af[0] == 8 && af[1] == 34 && bf[0] == 13 && bf[1] == 55);
            assert_int_equal(sf, 15);
        }
    }
    tether_ir_close(&g);
}

/* Checks the undefined symbols of obj via arm-none-eabi-nm. */
static void check_symbols(const char *obj) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "arm-none-eabi-nm -u '%s'", obj);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char ln[256];
    int n = 0;
    while (fgets(ln, sizeof ln, p)) {
        char kind[8], name[200];
        if (sscanf(ln, "%7s %199s", kind, name) != 2) {
            continue;
        }
        static const char *const ok[] = {"memcpy", "memmove", "memset", "tether_set_error"};
        int good = strncmp(name, "__aeabi_", 8) == 0;
        for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
            good |= strcmp(name, ok[i]) == 0;
        }
        if (!good) {
            pclose(p);
            fail_msg("%s needs '%s'", obj, name);
        }
        n++;
    }
    assert_int_equal(pclose(p), 0);
    assert_true(n > 0); /* memcpy at least: the check really ran */
}

static void scan_concat_model(mb *b, mb *body) {
    loop_scan_model(b, body, 7);
}

static void scan_transpose_model(mb *b, mb *body) {
    loop_scan_model(b, body, 8);
}

static void scan_model(mb *b, mb *body) {
    loop_scan_model(b, body, 0);
}

/* M = Min(Mraw, 6): scan outputs bounded by the value-range analysis. */
static void scan_trip_model(mb *b, mb *body) {
    loop_scan_model(b, body, 4);
}

static void test_cortex_m3(void **state) {
    (void)state;
    const tether_target *t;
    if (tether_target_find("cortex-m3", &t) != 0 || !tether_target_available(t)) {
        skip();
    }
    void (*models[4])(mb *, mb *) = {loop_while_model, loop_for_model, scan_model, scan_trip_model};
    for (int m = 0; m < 4; m++) {
        for (int abi = 0; abi < 2; abi++) {
            tether_ir_graph g;
            load_model(models[m], &g);
            tether_compile_options o;
            tether_compile_options_init(&o);
            o.codegen.abi = abi ? TETHER_ABI_UNPACKED : TETHER_ABI_PACKED;
            o.codegen.prefix = "loopm";
            o.build.target = "cortex-m3";
            o.build.keep_objects = true;
            char dir[1024], rm[1200], path[1200];
            snprintf(dir, sizeof dir, "%s/tests/onnx/loop-m3-%d-%d", TETHER_BINARY_DIR, m, abi);
            snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
            assert_int_equal(system(rm), 0);
            tether_compile_result res;
            if (tether_compile_graph(&g, dir, &o, &res) != 0) {
                fail_msg("cortex-m3 model %d abi %d: %s", m, abi, tether_last_error());
            }
            assert_true(res.built);
            /* the loop is in the generated C, and no allocator is */
            snprintf(path, sizeof path, "%s/loopm.c", dir);
            FILE *f = fopen(path, "rb");
            assert_non_null(f);
            static char src[1 << 18];
            size_t len = fread(src, 1, sizeof src - 1, f);
            fclose(f);
            src[len] = 0;
            assert_non_null(strstr(src, "a loop */"));
            assert_null(strstr(src, "malloc"));
            assert_null(strstr(src, "calloc"));
            assert_null(strstr(src, "realloc"));
            snprintf(path, sizeof path, "%s/loopm.o", dir);
            check_symbols(path);
            assert_int_equal(system(rm), 0);
            tether_ir_close(&g);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_while_compiled),
        cmocka_unit_test(test_for_compiled),
        cmocka_unit_test(test_scan_compiled),
        cmocka_unit_test(test_scan_over_bound),
        cmocka_unit_test(test_scan_trip_compiled),
        cmocka_unit_test(test_scan_readers_compiled),
        cmocka_unit_test(test_live_readers_compiled),
        cmocka_unit_test(test_scan_directions_compiled),
        cmocka_unit_test(test_cortex_m3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
