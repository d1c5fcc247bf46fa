/*
 * Seeded property tests over thousands of random interval sets. For every set: every
 * algorithm's plan passes the independent checker, every total is >= the lower bound, best is
 * <= every algorithm, and on small single-pool sets the exact search is <= every heuristic.
 * Multi-pool sets (capacities, candidate lists, pins, alias groups, caller-owned inputs) and
 * texture sets (limits, dtypes, fallback) are checked the same way; failures must be the
 * documented "fits in no candidate pool" error. Sizes are bounded so the whole file runs in
 * seconds, also under ASan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "checker.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? (uint32_t)(rng_state % n) : 0;
}

static void seed(uint64_t s) {
    rng_state = s * 0x9E3779B97F4A7C15ULL + 12345;
    for (int i = 0; i < 4; i++) {
        rnd(2);
    }
}

static int64_t rand_size(void) {
    switch (rnd(4)) {
    case 0:
        return 1 + rnd(64);
    case 1:
        return (int64_t)(1 + rnd(16)) << (4 + rnd(8)); /* tensor-like multiples */
    default:
        return 1 + rnd(4096);
    }
}

static void rand_interval(int nops, int32_t *first, int32_t *last) {
    *first = (int32_t)rnd((uint32_t)nops);
    int len = rnd(3) == 0 ? (int)rnd((uint32_t)nops) : (int)rnd(4);
    *last = *first + len;
    if (*last >= nops) {
        *last = nops - 1;
    }
}

/* One unbounded pool, n random buffers. */
static void gen_single(tether_plan_problem *p, int n) {
    tether_plan_problem_init(p);
    tether_plan_pool pool = {"ws", TETHER_SCOPE_GLOBAL, 0, rnd(2) ? 16 : 1, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(p, &pool), 0);
    int nops = 2 + (int)rnd((uint32_t)(2 * n + 1));
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "b%d", i);
        tether_plan_buffer b;
        memset(&b, 0, sizeof(b));
        b.name = name;
        b.size = rand_size();
        b.alignment = rnd(4) == 0 ? (int64_t)1 << (rnd(7)) : 0;
        rand_interval(nops, &b.first, &b.last);
        b.pin_offset = -1;
        assert_int_equal(tether_plan_problem_add_buffer(p, &b, NULL), 0);
    }
}

static int64_t run_checked(const tether_plan_problem *p, const tether_plan_options *base,
                           tether_plan_algorithm a, int *status) {
    tether_plan_options o = *base;
    o.algorithm = a;
    tether_plan plan;
    *status = tether_plan_run(p, &o, &plan);
    if (*status != 0) {
        assert_null(plan.assign);
        return -1;
    }
    assert_plan_valid(p, &o, &plan);
    int64_t t = plan.total_bytes;
    int64_t lb = 0;
    assert_int_equal(tether_plan_lower_bound(p, &o, true, &lb), 0);
    assert_int_equal(lb, plan.lower_bound);
    assert_true(t >= lb);
    tether_plan_close(&plan);
    return t;
}

static void check_all(const tether_plan_problem *p, const tether_plan_options *o, bool with_exact,
                      bool multi_pool) {
    int64_t totals[TETHER_PLAN_ALGORITHM_COUNT];
    int status[TETHER_PLAN_ALGORITHM_COUNT];
    for (int a = 0; a < TETHER_PLAN_ALGORITHM_COUNT; a++) {
        if (a == TETHER_PLAN_EXACT && !with_exact) {
            status[a] = -100;
            continue;
        }
        totals[a] = run_checked(p, o, (tether_plan_algorithm)a, &status[a]);
        if (status[a] != 0) {
            const char *msg = tether_last_error();
            if (multi_pool) {
                bool expected = status[a] == TETHER_ERR_OUT_OF_MEMORY ||
                                (a == TETHER_PLAN_EXACT && (status[a] == TETHER_ERR_UNSUPPORTED ||
                                                            status[a] == TETHER_ERR_LIMIT));
                if (!expected) {
                    fail_msg("%s: unexpected failure %d: %s",
                             tether_plan_algorithm_name((tether_plan_algorithm)a), status[a], msg);
                }
                if (status[a] == TETHER_ERR_OUT_OF_MEMORY) {
                    assert_non_null(strstr(msg, "fits in no candidate pool"));
                    assert_non_null(strstr(msg, "bytes free"));
                }
            } else {
                fail_msg("%s failed on a single unbounded pool: %s",
                         tether_plan_algorithm_name((tether_plan_algorithm)a), msg);
            }
        }
    }
    for (int a = 0; a < TETHER_PLAN_BEST; a++) {
        if (status[a] == 0) {
            if (status[TETHER_PLAN_BEST] != 0) {
                fail_msg("best failed but %s succeeded",
                         tether_plan_algorithm_name((tether_plan_algorithm)a));
            }
            assert_true(totals[TETHER_PLAN_BEST] <= totals[a]);
        }
    }
    if (with_exact && !multi_pool) {
        assert_int_equal(status[TETHER_PLAN_EXACT], 0);
        for (int a = 0; a < TETHER_PLAN_BEST; a++) {
            if (totals[TETHER_PLAN_EXACT] > totals[a]) {
                fail_msg("exact %lld > %s %lld", (long long)totals[TETHER_PLAN_EXACT],
                         tether_plan_algorithm_name((tether_plan_algorithm)a),
                         (long long)totals[a]);
            }
        }
        assert_int_equal(totals[TETHER_PLAN_BEST], totals[TETHER_PLAN_EXACT]);
    }
}

static void base_options(tether_plan_options *o) {
    tether_plan_options_init(o);
    o->search_budget = 60;
}

/* 3000 small single-pool sets (1..11 buffers): exact <= every heuristic, best == exact. */
static void test_small_exact(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    for (int s = 0; s < 3000; s++) {
        seed((uint64_t)s + 1);
        tether_plan_problem p;
        gen_single(&p, 1 + (int)rnd(11));
        o.seed = (uint64_t)s;
        check_all(&p, &o, true, false);
        tether_plan_problem_close(&p);
    }
}

/*
 * Brute force, written independently of the planner: every permutation of the buffers placed
 * with lowest fit (the test's own implementation). Some order reproduces any optimal placement
 * bottom-up, so the minimum over all orders is the optimum; the exact search must equal it.
 */
static int64_t brute_perm(const tether_plan_problem *p, int *perm, int k, int n) {
    if (k == n) {
        int64_t off[8], top = 0;
        for (int a = 0; a < n; a++) {
            const tether_plan_buffer *b = &p->buffers[perm[a]];
            int64_t al =
                b->alignment > p->pools[0].alignment ? b->alignment : p->pools[0].alignment;
            int64_t o = 0;
            for (bool moved = true; moved;) {
                moved = false;
                for (int c = 0; c < a; c++) {
                    const tether_plan_buffer *d = &p->buffers[perm[c]];
                    bool live = b->first <= d->last && d->first <= b->last;
                    if (live && o < off[c] + d->size && off[c] < o + b->size) {
                        o = (off[c] + d->size + al - 1) / al * al;
                        moved = true;
                    }
                }
            }
            off[a] = o;
            if (o + b->size > top) {
                top = o + b->size;
            }
        }
        return top;
    }
    int64_t best = INT64_MAX;
    for (int i = k; i < n; i++) {
        int t = perm[k];
        perm[k] = perm[i];
        perm[i] = t;
        int64_t v = brute_perm(p, perm, k + 1, n);
        best = v < best ? v : best;
        perm[i] = perm[k];
        perm[k] = t;
    }
    return best;
}

static void test_exact_vs_brute_force(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    o.algorithm = TETHER_PLAN_EXACT;
    for (int s = 0; s < 400; s++) {
        seed((uint64_t)s + 70001);
        tether_plan_problem p;
        gen_single(&p, 1 + (int)rnd(6));
        int perm[8];
        for (int i = 0; i < p.nbuffers; i++) {
            perm[i] = i;
        }
        int64_t brute = brute_perm(&p, perm, 0, p.nbuffers);
        tether_plan plan;
        assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
        assert_plan_valid(&p, &o, &plan);
        if (plan.total_bytes != brute) {
            fail_msg("seed %d: exact %lld, brute force %lld", s, (long long)plan.total_bytes,
                     (long long)brute);
        }
        tether_plan_close(&plan);
        tether_plan_problem_close(&p);
    }
}

/* A few exact runs at the documented size limit (14 buffers) must finish and stay optimal. */
static void test_exact_at_limit(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    for (int s = 0; s < 40; s++) {
        seed((uint64_t)s + 90001);
        tether_plan_problem p;
        gen_single(&p, 12 + (int)rnd(3));
        check_all(&p, &o, true, false);
        tether_plan_problem_close(&p);
    }
}

/* 1000 medium single-pool sets (10..40 buffers): heuristics vs lower bound and best. */
static void test_medium(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    for (int s = 0; s < 1000; s++) {
        seed((uint64_t)s + 20001);
        tether_plan_problem p;
        gen_single(&p, 10 + (int)rnd(31));
        o.seed = (uint64_t)s;
        check_all(&p, &o, false, false);
        tether_plan_problem_close(&p);
    }
}

/* Multi-pool sets with capacities, candidate lists, pins, alias groups and inputs/outputs. */
static void gen_multi(tether_plan_problem *p, int n) {
    tether_plan_problem_init(p);
    tether_plan_pool sram = {"sram", TETHER_SCOPE_GLOBAL, 1024 + rnd(8192), 16, 0, 0};
    tether_plan_pool tcm = {"tcm", TETHER_SCOPE_GLOBAL, 512 + rnd(2048), 8, 0, 0};
    tether_plan_pool dram = {"dram", TETHER_SCOPE_GLOBAL, rnd(3) ? 0 : 8192 + rnd(32768), 64, 0, 0};
    assert_int_equal(tether_plan_problem_add_pool(p, &sram), 0);
    assert_int_equal(tether_plan_problem_add_pool(p, &tcm), 0);
    assert_int_equal(tether_plan_problem_add_pool(p, &dram), 0);
    static const char *const lists[][3] = {
        {"sram", "dram", NULL}, {"tcm", "sram", "dram"}, {"dram", NULL, NULL},
        {"sram", NULL, NULL},   {"tcm", "dram", NULL},
    };
    int nops = 2 + (int)rnd((uint32_t)(2 * n + 1));
    int next_pin = 0;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "m%d", i);
        tether_plan_buffer b;
        memset(&b, 0, sizeof(b));
        b.name = name;
        b.size = 1 + rnd(2048);
        rand_interval(nops, &b.first, &b.last);
        b.pin_offset = -1;
        int which = (int)rnd(6);
        if (which < 5) {
            b.pools = lists[which];
            b.npools = lists[which][2] ? 3 : (lists[which][1] ? 2 : 1);
        }
        uint32_t r = rnd(20);
        if (r == 0) {
            b.pin_pool = "dram"; /* any offset */
        } else if (r == 1 && dram.capacity == 0) {
            /* fixed pins in dram on disjoint 4 KiB slots never conflict */
            b.pin_pool = "dram";
            b.pin_offset = 4096 * (next_pin++);
            b.size = 1 + rnd(4096);
        }
        if (rnd(8) == 0) {
            b.kind = rnd(2) ? TETHER_PLAN_GRAPH_INPUT : TETHER_PLAN_GRAPH_OUTPUT;
        }
        if (i > 0 && rnd(10) == 0 && b.pin_pool == NULL) {
            /* alias the previous buffer when it is compatible */
            tether_plan_buffer *prev = &p->buffers[p->nbuffers - 1];
            if (prev->pin_pool == NULL) {
                if (prev->alias_group == 0) {
                    prev->alias_group = 1000 + i;
                }
                b.alias_group = prev->alias_group;
                b.pools = prev->pools;
                b.npools = prev->npools;
            }
        }
        assert_int_equal(tether_plan_problem_add_buffer(p, &b, NULL), 0);
    }
}

static void test_multi_pool(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    int failures = 0, successes = 0;
    for (int s = 0; s < 800; s++) {
        seed((uint64_t)s + 40001);
        tether_plan_problem p;
        int n = 1 + (int)rnd(24);
        gen_multi(&p, n);
        o.seed = (uint64_t)s;
        o.plan_inputs = rnd(2);
        o.plan_outputs = rnd(2);
        check_all(&p, &o, n <= 9, true);
        tether_plan plan;
        if (tether_plan_run(&p, &o, &plan) == 0) {
            successes++;
            tether_plan_close(&plan);
        } else {
            failures++;
        }
        tether_plan_problem_close(&p);
    }
    /* the generator must exercise both outcomes */
    assert_true(successes > 100);
    assert_true(failures > 10);
}

/* Texture sets: one texture pool with device limits, one global fallback pool. */
static void test_textures(void **state) {
    (void)state;
    tether_plan_options o;
    base_options(&o);
    int fallbacks = 0, reused = 0;
    for (int s = 0; s < 800; s++) {
        seed((uint64_t)s + 60001);
        tether_plan_problem p;
        tether_plan_problem_init(&p);
        int64_t lim = 64 + rnd(512);
        tether_plan_pool tex = {"gpu", TETHER_SCOPE_TEXTURE, 0, 0, lim, lim};
        tether_plan_pool glob = {"ws", TETHER_SCOPE_GLOBAL, 0, 16, 0, 0};
        assert_int_equal(tether_plan_problem_add_pool(&p, &tex), 0);
        assert_int_equal(tether_plan_problem_add_pool(&p, &glob), 0);
        int n = 1 + (int)rnd(20);
        int nops = 2 + (int)rnd((uint32_t)(2 * n + 1));
        int over = 0;
        for (int i = 0; i < n; i++) {
            char name[16];
            snprintf(name, sizeof(name), "t%d", i);
            tether_plan_buffer b;
            memset(&b, 0, sizeof(b));
            b.name = name;
            rand_interval(nops, &b.first, &b.last);
            b.pin_offset = -1;
            if (rnd(4) == 0) {
                b.size = rand_size();
            } else {
                b.scope = TETHER_SCOPE_TEXTURE;
                b.width = 1 + rnd((uint32_t)(lim + lim / 4));
                b.height = 1 + rnd((uint32_t)lim);
                b.dtype = rnd(3) ? (DLDataType){kDLFloat, 32, 1} : (DLDataType){kDLFloat, 16, 1};
                over += b.width > lim;
            }
            assert_int_equal(tether_plan_problem_add_buffer(&p, &b, NULL), 0);
        }
        check_all(&p, &o, n <= 8, false);
        tether_plan plan;
        o.algorithm = TETHER_PLAN_GREEDY_SIZE;
        assert_int_equal(tether_plan_run(&p, &o, &plan), 0);
        assert_int_equal(plan.nfallbacks, over); /* exactly the ones over the limit */
        fallbacks += over;
        int ntex = 0;
        for (int i = 0; i < n; i++) {
            ntex += plan.assign[i].image >= 0;
        }
        reused += plan.nimages < ntex;
        tether_plan_close(&plan);
        o.algorithm = TETHER_PLAN_BEST;
        tether_plan_problem_close(&p);
    }
    assert_true(fallbacks > 50);
    assert_true(reused > 50);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        cmocka_set_test_filter(argv[1]); /* run one test by name while debugging */
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_exact),    cmocka_unit_test(test_exact_vs_brute_force),
        cmocka_unit_test(test_exact_at_limit), cmocka_unit_test(test_medium),
        cmocka_unit_test(test_multi_pool),     cmocka_unit_test(test_textures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
