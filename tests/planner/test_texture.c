/*
 * 2D texture pools: image reuse across disjoint lifetimes (same scope and dtype only), growth
 * under the aspect-ratio bound, device limits, capacity, fallback to a global pool (and the
 * report saying so), and the error when no fallback exists. Every plan goes through the checker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"

#define F32 ((DLDataType){kDLFloat, 32, 1})
#define F16 ((DLDataType){kDLFloat, 16, 1})

static void add_tex_pool(tether_plan_problem *p, const char *name, tether_scope scope, int64_t cap,
                         int64_t maxw, int64_t maxh) {
    tether_plan_pool pool = {name, scope, cap, 0, maxw, maxh};
    assert_int_equal(tether_plan_problem_add_pool(p, &pool), 0);
}

static void add_global_pool(tether_plan_problem *p, const char *name) {
    tether_plan_pool pool = {name, TETHER_SCOPE_GLOBAL, 0, 16, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(p, &pool), 0);
}

static void add_tex(tether_plan_problem *p, const char *name, int64_t w, int64_t h, DLDataType dt,
                    int first, int last) {
    tether_plan_buffer b;
    memset(&b, 0, sizeof(b));
    b.name = name;
    b.scope = TETHER_SCOPE_TEXTURE;
    b.width = w;
    b.height = h;
    b.dtype = dt;
    b.first = first;
    b.last = last;
    b.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(p, &b, NULL), 0);
}

static void plan_with(const tether_plan_problem *p, tether_plan_algorithm a, double ratio,
                      tether_plan *out) {
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.algorithm = a;
    if (ratio > 0) {
        o.texture_max_ratio = ratio;
    }
    int rc = tether_plan_run(p, &o, out);
    if (rc != 0) {
        fail_msg("%s: %s", tether_plan_algorithm_name(a), tether_last_error());
    }
    assert_plan_valid(p, &o, out);
}

static void test_reuse_same_extent(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 8192, 8192);
    add_tex(&p, "t0", 64, 64, F32, 0, 1);
    add_tex(&p, "t1", 64, 64, F32, 1, 2); /* overlaps t0: separate image */
    add_tex(&p, "t2", 64, 64, F32, 2, 3); /* reuses t0's image */
    add_tex(&p, "t3", 64, 64, F16, 4, 5); /* other dtype: new image */
    tether_plan plan;
    plan_with(&p, TETHER_PLAN_GREEDY_SIZE, 0, &plan);
    assert_int_equal(plan.nimages, 3);
    assert_int_equal(plan.pools[0].nimages, 3);
    assert_int_equal(plan.assign[0].image, plan.assign[2].image);
    assert_int_not_equal(plan.assign[0].image, plan.assign[1].image);
    assert_int_not_equal(plan.assign[3].image, plan.assign[0].image);
    assert_int_not_equal(plan.assign[3].image, plan.assign[1].image);
    assert_int_equal(plan.pools[0].texel_area, 3 * 64 * 64);
    /* at most 2 buffers live at once: waste = 3 images - 2 live */
    assert_int_equal(plan.pools[0].texel_waste, 64 * 64);
    assert_int_equal(plan.pools[0].size, 2 * 64 * 64 * 16 + 64 * 64 * 8);
    assert_int_equal(plan.nfallbacks, 0);
    tether_plan_close(&plan);
    /* naive: one image per buffer */
    plan_with(&p, TETHER_PLAN_NAIVE, 0, &plan);
    assert_int_equal(plan.nimages, 4);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_growth_and_ratio(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 8192, 8192);
    add_tex(&p, "a", 64, 64, F32, 0, 1);
    add_tex(&p, "b", 80, 60, F32, 2, 3); /* grows the image to 80x64 */
    tether_plan plan;
    plan_with(&p, TETHER_PLAN_BEST, 0, &plan);
    assert_int_equal(plan.nimages, 1);
    assert_int_equal(plan.images[0].width, 80);
    assert_int_equal(plan.images[0].height, 64);
    assert_int_equal(plan.pools[0].texel_area, 80 * 64);
    assert_int_equal(plan.pools[0].texel_waste, 80 * 64 - 80 * 60);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);

    /* 64x64 then 300x60: growing to 300x64 has aspect 4.7 (<= 5) -> reuse */
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 8192, 8192);
    add_tex(&p, "a", 64, 64, F32, 0, 1);
    add_tex(&p, "b", 300, 60, F32, 2, 3);
    plan_with(&p, TETHER_PLAN_GREEDY_SIZE, 0, &plan);
    assert_int_equal(plan.nimages, 1);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);

    /* 64x64 then 400x60: 400x64 has aspect 6.25 > 5 -> a second image; ratio 10 -> reuse */
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 8192, 8192);
    add_tex(&p, "a", 64, 64, F32, 0, 1);
    add_tex(&p, "b", 400, 60, F32, 2, 3);
    plan_with(&p, TETHER_PLAN_GREEDY_SIZE, 0, &plan);
    assert_int_equal(plan.nimages, 2);
    tether_plan_close(&plan);
    plan_with(&p, TETHER_PLAN_GREEDY_SIZE, 10.0, &plan);
    assert_int_equal(plan.nimages, 1);
    assert_int_equal(plan.images[0].width, 400);
    assert_int_equal(plan.images[0].height, 64);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);

    /* growth along both axes, up to the device limit */
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 100, 100);
    add_tex(&p, "a", 100, 70, F32, 0, 1);
    add_tex(&p, "b", 70, 100, F32, 2, 3); /* growing adds 3000 texels < a new 7000 */
    plan_with(&p, TETHER_PLAN_GREEDY_SIZE, 0, &plan);
    assert_int_equal(plan.nimages, 1);
    assert_int_equal(plan.images[0].width, 100);
    assert_int_equal(plan.images[0].height, 100);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_weight_scope(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "act", TETHER_SCOPE_TEXTURE, 0, 4096, 4096);
    add_tex_pool(&p, "wgt", TETHER_SCOPE_TEXTURE_WEIGHT, 0, 4096, 4096);
    add_tex(&p, "x", 32, 32, F32, 0, 1);
    tether_plan_buffer w;
    memset(&w, 0, sizeof(w));
    w.name = "w";
    w.scope = TETHER_SCOPE_TEXTURE_WEIGHT;
    w.width = 36;
    w.height = 16;
    w.dtype = F32;
    w.first = 2;
    w.last = 3;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &w, NULL), 0);
    tether_plan plan;
    plan_with(&p, TETHER_PLAN_BEST, 0, &plan);
    assert_int_equal(plan.assign[0].pool, 0);
    assert_int_equal(plan.assign[1].pool, 1);
    assert_int_equal(plan.nimages, 2);
    assert_int_equal(plan.images[plan.assign[1].image].scope, TETHER_SCOPE_TEXTURE_WEIGHT);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_fallback_over_limit(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 4096, 4096);
    add_global_pool(&p, "dram");
    add_tex(&p, "small", 64, 64, F32, 0, 2);
    add_tex(&p, "wide", 5000, 2, F32, 1, 3);
    tether_plan plan;
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        plan_with(&p, (tether_plan_algorithm)a, 0, &plan);
        assert_int_equal(plan.nfallbacks, 1);
        assert_false(plan.assign[0].fallback);
        assert_int_equal(plan.assign[0].pool, 0);
        assert_true(plan.assign[1].fallback);
        assert_int_equal(plan.assign[1].pool, 1);
        assert_int_equal(plan.assign[1].image, -1);
        assert_int_equal(plan.pools[1].size, 5000 * 2 * 16);
        tether_plan_close(&plan);
    }
    plan_with(&p, TETHER_PLAN_BEST, 0, &plan);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(tether_plan_report(f, &p, &plan, NULL, 0), 0);
    fclose(f);
    assert_non_null(strstr(buf, "fallback: texture buffer 'wide' (5000x2 texels) placed in "
                                "global pool dram"));
    free(buf);
    char *json = NULL;
    assert_int_equal(tether_plan_to_json(&p, &plan, &json), 0);
    assert_non_null(strstr(json, "\"fallback\":\ttrue"));
    free(json);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_no_fallback_is_error(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 8192, 8192);
    add_tex(&p, "tall", 4, 9000, F32, 0, 1);
    tether_plan plan;
    tether_plan_options o;
    tether_plan_options_init(&o);
    assert_int_equal(tether_plan_run(&p, &o, &plan), TETHER_ERR_LIMIT);
    const char *msg = tether_last_error();
    assert_non_null(strstr(msg, "'tall'"));
    assert_non_null(strstr(msg, "4x9000"));
    assert_non_null(strstr(msg, "8192x8192"));
    assert_null(plan.assign);
    tether_plan_problem_close(&p);
}

static void test_texture_capacity(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    /* room for exactly one 64x64 float image (65536 bytes) */
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 65536, 8192, 8192);
    add_global_pool(&p, "dram");
    add_tex(&p, "a", 64, 64, F32, 0, 1);
    add_tex(&p, "b", 64, 64, F32, 1, 2); /* live with a: no room -> fallback */
    add_tex(&p, "c", 64, 64, F32, 3, 4); /* reuses a's image */
    tether_plan plan;
    plan_with(&p, TETHER_PLAN_GREEDY_CONFLICTS, 0, &plan);
    assert_int_equal(plan.nimages, 1);
    assert_int_equal(plan.pools[0].size, 65536);
    assert_int_equal(plan.nfallbacks, 1);
    assert_int_equal(plan.assign[0].image, plan.assign[2].image);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

/* Texture buffers pinned to a pool, mixed with global buffers in one problem. */
static void test_mixed(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_global_pool(&p, "ws");
    add_tex_pool(&p, "gpu", TETHER_SCOPE_TEXTURE, 0, 2048, 2048);
    tether_plan_buffer g;
    memset(&g, 0, sizeof(g));
    g.name = "g";
    g.size = 1000;
    g.first = 0;
    g.last = 3;
    g.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &g, NULL), 0);
    add_tex(&p, "t", 16, 16, F32, 1, 2);
    tether_plan_buffer t2;
    memset(&t2, 0, sizeof(t2));
    t2.name = "forced_global";
    t2.scope = TETHER_SCOPE_TEXTURE;
    t2.width = 8;
    t2.height = 8;
    t2.dtype = F32;
    t2.first = 2;
    t2.last = 4;
    t2.pin_pool = "ws";
    t2.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &t2, NULL), 0);
    tether_plan plan;
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        plan_with(&p, (tether_plan_algorithm)a, 0, &plan);
        assert_int_equal(plan.assign[1].pool, 1);
        assert_int_equal(plan.assign[2].pool, 0);
        assert_true(plan.assign[2].fallback);
        assert_int_equal(plan.total_bytes, plan.pools[0].size + 16 * 16 * 16);
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_same_extent),
        cmocka_unit_test(test_growth_and_ratio),
        cmocka_unit_test(test_weight_scope),
        cmocka_unit_test(test_fallback_over_limit),
        cmocka_unit_test(test_no_fallback_is_error),
        cmocka_unit_test(test_texture_capacity),
        cmocka_unit_test(test_mixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
