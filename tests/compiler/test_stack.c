/*
 * Static stack analysis: worst-case sums over call graphs in GCC's -fcallgraph-info=su format.
 *  - synthetic graphs with known frames (chains, the worst branch, shared callees across two
 *    files, excluded externals) give the hand-computed sums; recursion, indirect calls, dynamic
 *    frames and unknown externals give "unbounded" with the reason;
 *  - a real generated file (the example model, unpacked ABI, -O0 so nothing is inlined) gives
 *    exactly frame(main) + frame(graph) + max(frame(kernel) [+ frame(tg_relu) for the fused
 *    epilogue] [+ the library functions it calls]) taken from its own .su file and the target's
 *    libraries, on x86-64 and on Cortex-M3;
 *  - gcc's .localalias callees are the functions they alias.
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

/* gcc's local aliases: "file.c:foo.localalias" is foo (global title "foo", or a local
 * "file.c:foo"); clones (.constprop.N, .part.N, .isra.N) are functions of their own. */
static void test_local_aliases(void **state) {
    (void)state;
    char p[1024];
    const char *files[] = {tmp("a.ci", p, sizeof p)};
    tether_stack_report r;
    write_ci(p, "graph: { title: \"m.c\"\n" NODE("root", 8) NODE("b0", 40) NODE("b1", 8)
                    NODE("m.c:st", 24) NODE("m.c:k.constprop.0", 12) EDGE("root", "b1")
                        EDGE("b1", "m.c:b0.localalias") EDGE("root", "m.c:st.localalias")
                            EDGE("m.c:st", "m.c:k.constprop.0") "}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_true(r.bounded);
    assert_int_equal(r.bytes, 8 + 8 + 40);
    assert_string_equal(r.path, "root(8) -> b1(8) -> b0(40)");
    /* an alias of nothing analysed stays unknown, named by the function it aliases */
    write_ci(p,
             "graph: { title: \"m.c\"\n" NODE("root", 8) EDGE("root", "m.c:gone.localalias") "}\n");
    assert_int_equal(tether_stack_analyze(files, 1, "root", &r), 0);
    assert_false(r.bounded);
    assert_non_null(strstr(r.reason, "calls gone, whose stack is unknown"));
    unlink(p);
}

/* With a target, the externals get frames from the toolchain's own libraries: memcpy and expf on
 * every available target, libgcc's soft-float helpers on Cortex-M (never 0 for all of them). */
static void test_library_frames(void **state) {
    (void)state;
    static const char *const targets[] = {"x86_64-linux", "cortex-m0", "cortex-m3", "cortex-m4",
                                          "aarch64-linux"};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        const tether_target *t;
        assert_int_equal(tether_target_find(targets[i], &t), 0);
        if (!tether_target_available(t)) {
            continue;
        }
        static const char *const fns[] = {"memcpy", "memset", "expf", "logf",
                                          "tanhf",  "powf",   "sqrtf"};
        for (size_t k = 0; k < sizeof fns / sizeof *fns; k++) {
            tether_stack_report r;
            if (tether_stack_library_function(t, fns[k], &r) != 0) {
                fail_msg("%s %s: %s", targets[i], fns[k], tether_last_error());
            }
            if (!r.bounded) {
                fail_msg("%s %s: unbounded: %s", targets[i], fns[k], r.reason);
            }
            /* x86-64: at least the return address of the call */
            if (strcmp(targets[i], "x86_64-linux") == 0) {
                assert_true(r.bytes >= 8);
            }
        }
        if (strncmp(targets[i], "cortex-m", 8) == 0) {
            static const char *const helpers[] = {
                "__aeabi_fadd",   "__aeabi_fsub",   "__aeabi_fmul", "__aeabi_fdiv",
                "__aeabi_fcmpgt", "__aeabi_fcmplt", "__aeabi_i2f",  "__aeabi_idiv"};
            int64_t most = 0;
            for (size_t k = 0; k < sizeof helpers / sizeof *helpers; k++) {
                tether_stack_report r;
                if (tether_stack_library_function(t, helpers[k], &r) != 0) {
                    fail_msg("%s %s: %s", targets[i], helpers[k], tether_last_error());
                }
                if (!r.bounded) {
                    fail_msg("%s %s: unbounded: %s", targets[i], helpers[k], r.reason);
                }
                most = r.bytes > most ? r.bytes : most;
            }
            assert_true(most > 0);
            tether_stack_report r;
            assert_int_equal(tether_stack_library_function(t, "expf", &r), 0);
            assert_true(r.bytes > 0);
        }
        tether_stack_report r;
        assert_int_equal(tether_stack_library_function(t, "no_such_function_xyz", &r),
                         TETHER_ERR_NOT_FOUND);
    }
    /* the .ci externals of a graph are resolved the same way: root -> expf */
    char p[1024];
    const char *files[] = {tmp("l.ci", p, sizeof p)};
    write_ci(p, "graph: { title: \"m.c\"\n" NODE("root", 8) EXT("expf") EXT("tether_set_error")
                    EDGE("root", "expf") EDGE("root", "tether_set_error") "}\n");
    const tether_target *t;
    assert_int_equal(tether_target_find("x86_64-linux", &t), 0);
    tether_stack_report r, lib;
    assert_int_equal(tether_stack_analyze_target(files, 1, "root", t, &r), 0);
    assert_int_equal(tether_stack_library_function(t, "expf", &lib), 0);
    assert_true(r.bounded);
    assert_int_equal(r.bytes, 8 + lib.bytes);
    assert_string_equal(r.excluded, "tether_set_error");
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
    long fc = su_frame(su, "tgk_kws_conv1"), ffc = su_frame(su, "tgk_kws_fc");
    long fsm = su_frame(su, "tgk_kws_softmax"), frelu = su_frame(su, "tg_relu");
    assert_true(fmain > 0 && fgraph > 0 && fc > 0 && ffc > 0 && fsm > 0 && frelu > 0);
    /* at -O0 the fused relu epilogue is a call from the conv1 kernel; softmax calls expf, whose
     * worst case comes from the target's libm (and, on Cortex-M3, libgcc's soft-float) */
    tether_stack_report lib;
    assert_int_equal(tether_stack_library_function(t, "expf", &lib), 0);
    assert_true(lib.bounded);
    assert_true(lib.bytes > 0);
    fsm += (long)lib.bytes;
    /* without an FPU the relu's comparison is libgcc's __aeabi_fcmpgt (more than expf needs
     * never: softmax compares too, but expf is deeper) */
    long relu_helper = 0;
    if (strncmp(target, "cortex-m", 8) == 0) {
        assert_int_equal(tether_stack_library_function(t, "__aeabi_fcmpgt", &lib), 0);
        assert_true(lib.bounded && lib.bytes > 0 && lib.bytes < (int64_t)fsm);
        relu_helper = (long)lib.bytes;
    }
    fc += frelu + relu_helper;
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
        cmocka_unit_test(test_local_aliases),
        cmocka_unit_test(test_library_frames),
        cmocka_unit_test(test_generated_file_matches_hand_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
