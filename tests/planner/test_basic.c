/*
 * Planner unit cases with known answers: every algorithm on small hand-made graphs, alignment,
 * multi-pool spill, the "fits nowhere" error, pins, alias groups, graph inputs/outputs left to
 * the caller, the exact-search limit, and rejected input. Every plan goes through the checker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"

static void add_pool(tether_plan_problem *p, const char *name, int64_t cap, int64_t align) {
    tether_plan_pool pool = {name, TETHER_SCOPE_GLOBAL, cap, align, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(p, &pool), 0);
}

static tether_plan_buffer buf(const char *name, int64_t size, int first, int last) {
    tether_plan_buffer b;
    memset(&b, 0, sizeof(b));
    b.name = name;
    b.size = size;
    b.first = first;
    b.last = last;
    b.pin_offset = -1;
    return b;
}

static void add(tether_plan_problem *p, const char *name, int64_t size, int first, int last) {
    tether_plan_buffer b = buf(name, size, first, last);
    assert_int_equal(tether_plan_problem_add_buffer(p, &b, NULL), 0);
}

static int64_t run_algo(const tether_plan_problem *p, tether_plan_algorithm a, tether_plan *out) {
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.algorithm = a;
    int rc = tether_plan_run(p, &o, out);
    if (rc != 0) {
        fail_msg("%s failed: %s", tether_plan_algorithm_name(a), tether_last_error());
    }
    assert_plan_valid(p, &o, out);
    return out->total_bytes;
}

static int64_t total_of(const tether_plan_problem *p, tether_plan_algorithm a) {
    tether_plan plan;
    int64_t t = run_algo(p, a, &plan);
    tether_plan_close(&plan);
    return t;
}

static void test_names(void **state) {
    (void)state;
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        tether_plan_algorithm back;
        const char *n = tether_plan_algorithm_name((tether_plan_algorithm)a);
        assert_non_null(n);
        assert_int_equal(tether_plan_algorithm_parse(n, &back), 0);
        assert_int_equal(back, a);
    }
    tether_plan_algorithm x;
    assert_int_equal(tether_plan_algorithm_parse("greedy", &x), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "greedy-size"));
    assert_null(tether_plan_algorithm_name((tether_plan_algorithm)99));
}

/* a[0,1]=100, b[1,2]=200, c[2,3]=100: optimum 300, naive 400. */
static void test_chain(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 1);
    add(&p, "a", 100, 0, 1);
    add(&p, "b", 200, 1, 2);
    add(&p, "c", 100, 2, 3);
    assert_int_equal(total_of(&p, TETHER_PLAN_NAIVE), 400);
    for (int a = 1; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        assert_int_equal(total_of(&p, (tether_plan_algorithm)a), 300);
    }
    int64_t lb = 0;
    assert_int_equal(tether_plan_lower_bound(&p, NULL, false, &lb), 0);
    assert_int_equal(lb, 300);
    tether_plan plan;
    run_algo(&p, TETHER_PLAN_BEST, &plan);
    assert_int_equal(plan.lower_bound, 300);
    assert_int_equal(plan.pools[0].lower_bound, 300);
    assert_int_equal(plan.pools[0].nbuffers, 3);
    /* a and c do not overlap in time and are the same size: they share bytes */
    assert_int_equal(plan.assign[0].offset, plan.assign[2].offset);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

/* tether_plan_validate rejects broken plans, naming the rule and the buffers. */
static void test_validate_rejects(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    add(&p, "a", 100, 0, 1);
    add(&p, "b", 200, 1, 2);
    add(&p, "c", 100, 2, 3);
    tether_plan plan;
    run_algo(&p, TETHER_PLAN_GREEDY_SIZE, &plan);
    assert_int_equal(tether_plan_validate(&p, NULL, &plan), TETHER_OK);
    /* a and b are live together at operator 1: the same offset overlaps */
    int64_t saved = plan.assign[0].offset;
    plan.assign[0].offset = plan.assign[1].offset;
    assert_int_equal(tether_plan_validate(&p, NULL, &plan), TETHER_ERR_INTERNAL);
    assert_non_null(strstr(tether_last_error(), "invalid plan (greedy-size)"));
    assert_non_null(strstr(tether_last_error(), "overlap in ws while both live"));
    /* misaligned */
    plan.assign[0].offset = 1;
    assert_int_equal(tether_plan_validate(&p, NULL, &plan), TETHER_ERR_INTERNAL);
    assert_non_null(strstr(tether_last_error(), "buffer a: offset 1 not aligned to 16"));
    plan.assign[0].offset = saved;
    /* a wrong total */
    plan.total_bytes += 1;
    assert_int_equal(tether_plan_validate(&p, NULL, &plan), TETHER_ERR_INTERNAL);
    assert_non_null(strstr(tether_last_error(), "but pools sum to"));
    plan.total_bytes -= 1;
    assert_int_equal(tether_plan_validate(&p, NULL, &plan), TETHER_OK);
    assert_int_equal(tether_plan_validate(NULL, NULL, &plan), TETHER_ERR_INVALID_ARG);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

/*
 * A case where largest-first gap search is not optimal but the exact search is:
 *   A=2 [0,1], B=1 [1,2], C=1 [2,3], D=2 [3,4], E=1 [0,0], F=1 [4,4]... checked by value:
 * exact must reach the lower bound here, and no heuristic may beat exact.
 */
static void test_exact_is_optimal(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 1);
    add(&p, "a", 30, 0, 2);
    add(&p, "b", 20, 1, 3);
    add(&p, "c", 20, 3, 5);
    add(&p, "d", 30, 4, 6);
    add(&p, "e", 10, 2, 4);
    add(&p, "f", 25, 6, 7);
    add(&p, "g", 15, 0, 0);
    int64_t exact = total_of(&p, TETHER_PLAN_EXACT);
    int64_t lb = 0;
    assert_int_equal(tether_plan_lower_bound(&p, NULL, false, &lb), 0);
    assert_true(exact >= lb);
    for (int a = 0; a < TETHER_PLAN_BEST; a++) {
        assert_true(exact <= total_of(&p, (tether_plan_algorithm)a));
    }
    assert_int_equal(total_of(&p, TETHER_PLAN_BEST), exact);
    tether_plan_problem_close(&p);
}

static void test_alignment(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 64);
    add(&p, "a", 10, 0, 3);
    add(&p, "b", 10, 0, 3);
    tether_plan_buffer c = buf("c", 10, 0, 3);
    c.alignment = 256;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &c, NULL), 0);
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        tether_plan plan;
        run_algo(&p, (tether_plan_algorithm)a, &plan);
        assert_int_equal(plan.assign[0].offset % 64, 0);
        assert_int_equal(plan.assign[1].offset % 64, 0);
        assert_int_equal(plan.assign[2].offset % 256, 0);
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);
}

/* sram holds 256 bytes; three 200-byte buffers live together: one in sram, two in dram. */
static void test_spill(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 256, 16);
    add_pool(&p, "dram", 0, 16);
    add(&p, "x", 200, 0, 2);
    add(&p, "y", 200, 0, 2);
    add(&p, "z", 200, 0, 2);
    add(&p, "w", 50, 3, 3);
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        if (a == TETHER_PLAN_EXACT) {
            continue; /* two candidate pools: exact declines (tested below) */
        }
        tether_plan plan;
        run_algo(&p, (tether_plan_algorithm)a, &plan);
        assert_true(plan.pools[0].size <= 256);
        assert_int_equal(plan.pools[0].nbuffers + plan.pools[1].nbuffers, 4);
        int in_sram = 0;
        for (int i = 0; i < 3; i++) {
            in_sram += plan.assign[i].pool == 0;
        }
        assert_int_equal(in_sram, 1);
        if (a != TETHER_PLAN_NAIVE) {
            assert_int_equal(plan.assign[3].pool, 0); /* w reuses sram once x..z are dead */
        }
        tether_plan_close(&plan);
    }
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.algorithm = TETHER_PLAN_EXACT;
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), TETHER_ERR_UNSUPPORTED);
    assert_non_null(strstr(tether_last_error(), "one candidate pool"));
    assert_null(plan.assign);
    tether_plan_problem_close(&p);
}

/* Candidate lists restrict pools, in order. */
static void test_candidate_order(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 1024, 16);
    add_pool(&p, "dram", 0, 16);
    const char *dram_first[] = {"dram", "sram"};
    const char *only_sram[] = {"sram"};
    tether_plan_buffer a = buf("a", 100, 0, 1);
    a.pools = dram_first;
    a.npools = 2;
    tether_plan_buffer b = buf("b", 100, 0, 1);
    b.pools = only_sram;
    b.npools = 1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &a, NULL), 0);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    tether_plan plan;
    run_algo(&p, TETHER_PLAN_BEST, &plan);
    assert_int_equal(plan.assign[0].pool, 1);
    assert_int_equal(plan.assign[1].pool, 0);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_fits_nowhere(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 1000, 16);
    add_pool(&p, "tcm", 300, 16);
    add(&p, "big", 600, 0, 3);
    add(&p, "conv7_out", 500, 1, 2);
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        if (a == TETHER_PLAN_EXACT) {
            continue;
        }
        tether_plan_options o;
        tether_plan_options_init(&o);
        o.algorithm = (tether_plan_algorithm)a;
        tether_plan plan;
        int rc = tether_plan_run(&p, &o, &plan);
        assert_int_equal(rc, TETHER_ERR_OUT_OF_MEMORY);
        const char *msg = tether_last_error();
        assert_non_null(strstr(msg, "conv7_out"));
        assert_non_null(strstr(msg, "500 bytes"));
        assert_non_null(strstr(msg, "sram has 392 bytes free"));
        assert_non_null(strstr(msg, "tcm has 300 bytes free"));
        assert_null(plan.assign);
    }
    tether_plan_problem_close(&p);
}

static void test_pins(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 4096, 16);
    add_pool(&p, "dram", 0, 16);
    tether_plan_buffer a = buf("a", 256, 0, 4);
    a.pin_pool = "sram";
    a.pin_offset = 1024;
    tether_plan_buffer b = buf("b", 100, 2, 3);
    b.pin_pool = "dram"; /* any offset */
    assert_int_equal(tether_plan_problem_add_buffer(&p, &a, NULL), 0);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        add(&p, name, 400 + 16 * i, i % 5, i % 5 + 1);
    }
    for (int al = 0; al < TETHER_PLAN_ALGORITHM_COUNT; al++) {
        if (al == TETHER_PLAN_EXACT) {
            continue;
        }
        tether_plan plan;
        run_algo(&p, (tether_plan_algorithm)al, &plan);
        assert_int_equal(plan.assign[0].pool, 0);
        assert_int_equal(plan.assign[0].offset, 1024);
        assert_int_equal(plan.assign[1].pool, 1);
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);

    /* exact honours a fixed pin too (single pool) */
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    a.pin_pool = "ws";
    a.pin_offset = 64;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &a, NULL), 0);
    add(&p, "u", 64, 0, 1);
    add(&p, "v", 32, 1, 6);
    tether_plan plan;
    run_algo(&p, TETHER_PLAN_EXACT, &plan);
    assert_int_equal(plan.assign[0].offset, 64);
    assert_int_equal(plan.assign[1].offset, 0);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_pin_errors(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 512, 16);
    tether_plan_buffer a = buf("a", 256, 0, 4);
    a.pin_pool = "sram";
    a.pin_offset = 0;
    tether_plan_buffer b = buf("b", 256, 3, 5);
    b.pin_pool = "sram";
    b.pin_offset = 128;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &a, NULL), 0);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "'a'"));
    assert_non_null(strstr(tether_last_error(), "'b'"));
    assert_non_null(strstr(tether_last_error(), "overlapping"));
    tether_plan_problem_close(&p);

    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 512, 16);
    b.pin_offset = 384; /* ends at 640 > 512 */
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(tether_last_error(), "capacity 512"));
    tether_plan_problem_close(&p);

    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 512, 16);
    b.pin_offset = 8; /* misaligned */
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_ALIGNMENT);
    tether_plan_problem_close(&p);

    tether_plan_problem_init(&p);
    add_pool(&p, "sram", 512, 16);
    b.pin_pool = "nowhere";
    b.pin_offset = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "nowhere"));
    tether_plan_problem_close(&p);
}

static void test_alias_groups(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    tether_plan_buffer x = buf("x", 400, 0, 2);
    x.alias_group = 7;
    tether_plan_buffer xv = buf("x_reshaped", 400, 2, 5);
    xv.alias_group = 7;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &x, NULL), 0);
    add(&p, "y", 300, 3, 4);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &xv, NULL), 0);
    add(&p, "z", 400, 6, 7);
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        tether_plan plan;
        run_algo(&p, (tether_plan_algorithm)a, &plan);
        assert_int_equal(plan.assign[0].offset, plan.assign[2].offset);
        if (a != TETHER_PLAN_NAIVE) {
            assert_int_equal(plan.total_bytes, 700); /* x|x_reshaped 400 + y 300 */
        }
        tether_plan_close(&plan);
    }
    tether_plan_problem_close(&p);

    /* members with different scopes are rejected */
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &x, NULL), 0);
    xv.scope = TETHER_SCOPE_TEXTURE;
    xv.width = 4;
    xv.height = 4;
    xv.dtype = (DLDataType){kDLFloat, 32, 1};
    assert_int_equal(tether_plan_problem_add_buffer(&p, &xv, NULL), 0);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "alias group 7"));
    tether_plan_problem_close(&p);
}

static void test_inputs_outputs(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    tether_plan_buffer in = buf("input", 1000, 0, 1);
    in.kind = TETHER_PLAN_GRAPH_INPUT;
    tether_plan_buffer out = buf("output", 800, 2, 3);
    out.kind = TETHER_PLAN_GRAPH_OUTPUT;
    tether_plan_buffer view = buf("input_view", 1000, 1, 2);
    view.alias_group = 3;
    in.alias_group = 3;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &in, NULL), 0);
    add(&p, "mid", 500, 1, 2);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &out, NULL), 0);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &view, NULL), 0);
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.plan_inputs = false;
    o.plan_outputs = false;
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        o.algorithm = (tether_plan_algorithm)a;
        tether_plan plan;
        assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
        assert_plan_valid(&p, &o, &plan);
        assert_int_equal(plan.assign[0].pool, -1);
        assert_int_equal(plan.assign[2].pool, -1);
        assert_int_equal(plan.assign[3].pool, -1); /* aliases the caller's input */
        assert_int_equal(plan.assign[1].pool, 0);
        assert_int_equal(plan.total_bytes, 500);
        tether_plan_close(&plan);
    }
    o.plan_inputs = true;
    o.plan_outputs = true;
    o.algorithm = TETHER_PLAN_BEST;
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    assert_plan_valid(&p, &o, &plan);
    assert_int_equal(plan.assign[0].pool, 0);
    assert_int_equal(plan.lower_bound, 2300); /* input+view 1000, mid 500, output 800 at op 2 */
    assert_true(plan.total_bytes >= 2300 && plan.total_bytes <= 2300 + 32);
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_exact_limit(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    add_pool(&p, "ws", 0, 16);
    for (int i = 0; i < 15; i++) {
        char name[16];
        snprintf(name, sizeof(name), "b%d", i);
        add(&p, name, 16 * (i + 1), i, i + 2);
    }
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.algorithm = TETHER_PLAN_EXACT;
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, &o, &plan), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "at most 14"));
    tether_plan_summary rows[TETHER_PLAN_ALGORITHM_COUNT];
    int n = tether_plan_compare(&p, NULL, rows, TETHER_PLAN_ALGORITHM_COUNT);
    assert_int_equal(n, TETHER_PLAN_ALGORITHM_COUNT - 1);
    assert_int_equal(rows[TETHER_PLAN_EXACT].status, TETHER_ERR_LIMIT);
    assert_int_equal(rows[TETHER_PLAN_GREEDY_SIZE].status, 0);
    o.algorithm = TETHER_PLAN_BEST;
    assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
    assert_plan_valid(&p, &o, &plan);
    for (int i = 0; i < n; i++) {
        if (rows[i].status == 0) {
            assert_true(plan.total_bytes <= rows[i].total_bytes);
        }
    }
    tether_plan_close(&plan);
    tether_plan_problem_close(&p);
}

static void test_bad_input(void **state) {
    (void)state;
    tether_plan_problem p;
    tether_plan_problem_init(&p);
    tether_plan_pool pool = {"sram", TETHER_SCOPE_GLOBAL, 0, 24, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), TETHER_ERR_ALIGNMENT);
    pool.alignment = 16;
    pool.name = "9bad";
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), TETHER_ERR_INVALID_ARG);
    pool.name = "sram";
    pool.capacity = -5;
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), TETHER_ERR_INVALID_ARG);
    pool.capacity = 0;
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), 0);
    assert_int_equal(tether_plan_problem_add_pool(&p, &pool), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "twice"));
    tether_plan_buffer b = buf("a", 0, 0, 1);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), TETHER_ERR_INVALID_ARG);
    b = buf("a", 10, 3, 1);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "'a'"));
    b = buf("a", 10, 0, 1);
    b.alignment = 12;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), TETHER_ERR_ALIGNMENT);
    b.alignment = 0;
    int idx = -1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, &idx), 0);
    assert_int_equal(idx, 0);
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), TETHER_ERR_INVALID_ARG);
    assert_int_equal(p.nbuffers, 1);
    const char *unknown[] = {"dram"};
    b = buf("b", 10, 0, 1);
    b.pools = unknown;
    b.npools = 1;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    tether_plan plan;
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "'b' lists pool 'dram'"));
    tether_plan_problem_close(&p);

    /* a global buffer may not list a texture pool */
    tether_plan_problem_init(&p);
    tether_plan_pool tex = {"gpu", TETHER_SCOPE_TEXTURE, 0, 0, 4096, 4096};
    assert_int_equal(tether_plan_problem_add_pool(&p, &tex), 0);
    const char *gpu[] = {"gpu"};
    b.pools = gpu;
    assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_MISMATCH);
    tether_plan_problem_close(&p);

    /* no pools at all */
    tether_plan_problem_init(&p);
    add(&p, "a", 10, 0, 0);
    assert_int_equal(tether_plan_run(&p, NULL, &plan), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "no pools"));
    tether_plan_options o;
    tether_plan_options_init(&o);
    o.texture_max_ratio = 0.5;
    add_pool(&p, "ws", 0, 0);
    assert_int_equal(tether_plan_run(&p, &o, &plan), TETHER_ERR_INVALID_ARG);
    tether_plan_problem_close(&p);
}

static void test_pool_parse(void **state) {
    (void)state;
    tether_plan_pool pool;
    char name[TETHER_POOL_NAME_MAX];
    assert_int_equal(tether_plan_pool_parse("sram:global:256K", &pool, name), 0);
    assert_string_equal(pool.name, "sram");
    assert_int_equal(pool.scope, TETHER_SCOPE_GLOBAL);
    assert_int_equal(pool.capacity, 256 * 1024);
    assert_int_equal(tether_plan_pool_parse("dram:global:unbounded", &pool, name), 0);
    assert_int_equal(pool.capacity, TETHER_PLAN_UNBOUNDED);
    assert_int_equal(tether_plan_pool_parse("gpu:texture:64M:8192x4096", &pool, name), 0);
    assert_int_equal(pool.scope, TETHER_SCOPE_TEXTURE);
    assert_int_equal(pool.capacity, 64 << 20);
    assert_int_equal(pool.max_width, 8192);
    assert_int_equal(pool.max_height, 4096);
    assert_int_equal(tether_plan_pool_parse("w:texture:weight:0", &pool, name), 0);
    assert_int_equal(pool.scope, TETHER_SCOPE_TEXTURE_WEIGHT);
    assert_int_equal(tether_plan_pool_parse("sram", &pool, name), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_plan_pool_parse("sram:flash:1", &pool, name), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_plan_pool_parse("sram:global:12Q", &pool, name),
                     TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_plan_pool_parse("sram:global:1:8x8", &pool, name),
                     TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_plan_pool_parse("s ram:global:1", &pool, name), TETHER_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_validate_rejects),
        cmocka_unit_test(test_exact_is_optimal),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_spill),
        cmocka_unit_test(test_candidate_order),
        cmocka_unit_test(test_fits_nowhere),
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_pin_errors),
        cmocka_unit_test(test_alias_groups),
        cmocka_unit_test(test_inputs_outputs),
        cmocka_unit_test(test_exact_limit),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_pool_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
