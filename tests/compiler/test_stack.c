/*
 * Static stack analysis: worst-case sums over call graphs in GCC's -fcallgraph-info=su format.
 *  - synthetic graphs with known frames (chains, the worst branch, shared callees across two
 *    files, excluded externals) give the hand-computed sums; recursion, indirect calls, dynamic
 *    frames and unknown externals give "unbounded" with the reason;
 *  - a real generated file (the example model, unpacked ABI, -O0 so nothing is inlined) gives
 *    exactly frame(main) + frame(graph) + max(frame(operator) [+ frame(tg_relu) for the fused
 *    epilogue]) taken from its own .su file, on x86-64 and on Cortex-M3.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt.h"

static void write_ci(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#define NODE(t, b) "node: { title: \"" t "\" label: \"" t "\\nm.c:1:1\\n" #b " bytes (static)\" }\n"
#define EXT(t)     "node: { title: \"" t "\" label: \"" t "\\n<built-in>\" shape : ellipse }\n"
#define EDGE(a, b) "edge: { sourcename: \"" a "\" targetname: \"" b "\" label: \"m.c:2:2\" }\n"

static const char *tmp(const char *name, char *buf, size_t n) {
    snprintf(buf, n, "%s/tests/compiler/%s", TETHER_BINARY_DIR, name);
    return buf;
}

static void test_synthetic_sums(void **state) {
    (void)state;
    char p1[1024], p2[1024];
    /* root(8) -> a(16) -> b(32) ; root -> c(100) ; c -> memcpy (excluded) ; a -> d(40) in file 2
     * worst: root + max(a + max(b, d), c) = 8 + max(16 + 40, 100) = 108 */
    write_ci(tmp("s1.ci", p1, sizeof p1),
             "graph: { title: \"m.c\"\n" NODE("root", 8) NODE("a", 16) NODE("b", 32) NODE("c", 100)
                 EXT("memcpy") EDGE("root", "a") EDGE("root", "c") EDGE("a", "b")
                     EDGE("c", "memcpy") EDGE("a", "d") "}\n");
    write_ci(tmp("s2.ci", p2, sizeof p2), "graph: { title: \"n.c\"\n" NODE("d", 40) "}\n");
    const char *files[] = {p1, p2};
    tether_stack_report r;
    assert_int_equal(tether_stack_analyze(files, 2, "root", &r), 0);
    assert_true(r.bounded);
    assert_int_equal(r.bytes, 108);
    assert_string_equal(r.path, "root(8) -> c(100) -> memcpy(0)");
    assert_string_equal(r.excluded, "memcpy");
    /* make a's branch deeper: d = 90 -> 8 + 16 + 90 = 114 via a -> d */
    write_ci(p2, "graph: { title: \"n.c\"\n" NODE("d", 90) "}\n");
    assert_int_equal(tether_stack_analyze(files, 2, "root", &r), 0);
    assert_int_equal(r.bytes, 114);
    assert_string_equal(r.path, "root(8) -> a(16) -> d(90)");
    /* without file 2, d is an unknown external */
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_false(r.bounded);
    assert_non_null(strstr(r.reason, "calls d, whose stack is unknown"));
    /* the root must exist */
    assert_int_equal(tether_stack_analyze(files, 1, "nosuch", &r), TETHER_ERR_NOT_FOUND);
    unlink(p2);
    unlink(p1);
}

static void test_unbounded_cases(void **state) {
    (void)state;
    char p[1024];
    const char *files[] = {tmp("u.ci", p, sizeof p)};
    tether_stack_report r;
    write_ci(p, "graph: { title: \"m.c\"\n" NODE("root", 8) NODE("f", 16) NODE("g", 16)
                    EDGE("root", "f") EDGE("f", "g") EDGE("g", "f") "}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_false(r.bounded);
    assert_non_null(strstr(r.reason, "recursion"));
    write_ci(
        p, "graph: { title: \"m.c\"\n" NODE(
               "root", 8) "node: { title: \"__indirect_call\" label: \"Indirect Call Placeholder\" "
                          "shape : ellipse }\n" EDGE("root", "__indirect_call") "}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_false(r.bounded);
    assert_non_null(strstr(r.reason, "function pointer"));
    write_ci(p, "graph: { title: \"m.c\"\n"
                "node: { title: \"root\" label: \"root\\nm.c:1:1\\n24 bytes (dynamic)\" }\n}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_false(r.bounded);
    assert_non_null(strstr(r.reason, "dynamic"));
    write_ci(p, "graph: { title: \"m.c\"\n"
                "node: { title: \"root\" label: \"root\\nm.c:1:1\\n24 bytes (dynamic,bounded)\" "
                "}\n}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_true(r.bounded);
    assert_int_equal(r.bytes, 24);
    unlink(p);
}

/* Frame of `fn` from a .su file ("file:line:col:fn<TAB>bytes<TAB>static"). */
static long su_frame(const char *su, const char *fn) {
    FILE *f = fopen(su, "r");
    assert_non_null(f);
    char ln[512];
    long bytes = -1;
    while (fgets(ln, sizeof ln, f)) {
        char *tab = strchr(ln, '\t');
        if (!tab) {
            continue;
        }
        *tab = 0;
        char *colon = strrchr(ln, ':');
        if (colon && strcmp(colon + 1, fn) == 0) {
            bytes = strtol(tab + 1, NULL, 10);
        }
    }
    fclose(f);
    return bytes;
}

static void check_real(const char *target) {
    const tether_target *t;
    assert_int_equal(tether_target_find(target, &t), 0);
    if (!tether_target_available(t)) {
        return;
    }
    char model[1024], dir[1024], su[1200];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    snprintf(dir, sizeof dir, "%s/tests/compiler/stack-%s", TETHER_BINARY_DIR, target);
    tether_compile_options o;
    tether_compile_options_init(&o);
    o.codegen.abi = TETHER_ABI_UNPACKED;
    o.codegen.prefix = "kws";
    o.build.target = target;
    o.build.opt_level = 0;
    tether_compile_result res;
    if (tether_compile_model(model, dir, &o, &res) != 0) {
        fail_msg("%s", tether_last_error());
    }
    snprintf(su, sizeof su, "%s/kws.su", dir);
    long fmain = su_frame(su, "kws_main"), fgraph = su_frame(su, "kws_graph");
    long fc = su_frame(su, "kws_conv1"), ffc = su_frame(su, "kws_fc");
    long fsm = su_frame(su, "kws_softmax"), frelu = su_frame(su, "tg_relu");
    assert_true(fmain > 0 && fgraph > 0 && fc > 0 && ffc > 0 && fsm > 0 && frelu > 0);
    /* at -O0 the fused relu epilogue is a call from conv1; expf is an excluded external */
    fc += frelu;
    long worst = fc > ffc ? fc : ffc;
    worst = fsm > worst ? fsm : worst;
    assert_true(res.build.stack.bounded);
    assert_int_equal(res.build.stack.bytes, fmain + fgraph + worst);
}

static void test_generated_file_matches_hand_sum(void **state) {
    (void)state;
    check_real("x86_64-linux");
    check_real("cortex-m3");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synthetic_sums),
        cmocka_unit_test(test_unbounded_cases),
        cmocka_unit_test(test_generated_file_matches_hand_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
