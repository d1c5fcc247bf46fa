/*
 * One board of the board table (device/mcu/boards/boards.txt) under QEMU (-icount shift=0),
 * through the tether CLI as a user drives it: `tether info` says the board's name, core,
 * features (FPU, float ABI, DSP, MVE) and clock as the table has them; `tether ab` of the KWS
 * example (on a part with less than 64 KiB of RAM, the micro:bit: a 16-8-4 MLP,
 * tests/mcu/models/tiny_mlp.json) compiles both ABIs for the core from HELLO, runs them on the
 * board and both equal the reference interpreter; a model compiled for a core this board cannot
 * run is refused from HELLO, naming what the core lacks, before any byte of it is uploaded; on
 * the small part, the KWS example is refused by the link step saying how far over it is.
 *
 * usage: test_mcu_board FIRMWARE_DIR TETHER_EXECUTABLE BOARDS_TXT
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "mcu_client.h"
#include "tether/file.h"
#include "tether/npy.h"

static const char *tether_exe, *boards_txt;
static char workdir[256];
static mcu_board board;
static char out_text[65536];
/* the board's line of the table */
static char name[64], core[32], features[128], clock_hz[32];
static long ram_kib;
/* the A/B model: the KWS example, or on a part with little RAM (the micro:bit) a small MLP */
static char model[600];
static int small_board;

/* Runs `tether ARGS` (one shell word each); stdout and stderr in out_text. */
static int cli(const char *args) {
    char cmd[2048], out[300];
    snprintf(out, sizeof out, "%s/out.txt", workdir);
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2>&1", tether_exe, args, out);
    int st = system(cmd);
    FILE *f = fopen(out, "r");
    out_text[f ? fread(out_text, 1, sizeof out_text - 1, f) : 0] = 0;
    if (f) {
        fclose(f);
    }
    printf("$ tether %s\n%s", args, out_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The board named by the firmware build's firmware.json, and its line of the table. */
static int read_board(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/firmware.json", mcu_fw_dir);
    char *text;
    size_t len;
    if (tether_file_read_text(path, 1 << 20, &text, &len) != 0) {
        return -1;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "board");
    if (!cJSON_IsString(b)) {
        cJSON_Delete(j);
        return -1;
    }
    snprintf(name, sizeof name, "%s", b->valuestring);
    cJSON_Delete(j);
    FILE *f = fopen(boards_txt, "r");
    if (!f) {
        return -1;
    }
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char n[64], tc[64], q[64], m[64], c[32], tr[64], fpu[32], mve[32], ram[32], clk[32],
            ft[128];
        if (sscanf(line, "%63s %63s %63s %63s %31s %63s %31s %31s %31s %31s %127s", n, tc, q, m, c,
                   tr, fpu, mve, ram, clk, ft) == 11 &&
            strcmp(n, name) == 0) {
            snprintf(core, sizeof core, "%s", c);
            snprintf(clock_hz, sizeof clock_hz, "%s", clk);
            snprintf(features, sizeof features, "%s", strcmp(ft, "-") == 0 ? "" : ft);
            ram_kib = strtol(ram, NULL, 10);
            found = 1;
        }
    }
    fclose(f);
    return found ? 0 : -1;
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "board") != 0) {
        return -1;
    }
    unsetenv("TETHER_FIRMWARE");
    unsetenv("TETHER_DEVICE");
    if (read_board() != 0) {
        fprintf(stderr, "%s/firmware.json names no board of %s\n", mcu_fw_dir, boards_txt);
        return -1;
    }
    small_board = ram_kib < 64;
    if (small_board) {
        snprintf(model, sizeof model, "%s/tests/mcu/models/tiny_mlp.json", TETHER_SOURCE_DIR);
    } else {
        snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    }
    if (mcu_board_start(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    /* QEMU keeps running; every CLI process opens the pty itself. */
    close(board.fd);
    board.fd = -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

/* HELLO as the table says: board, core, features (comma-separated in the table, listed with
 * ", " by info), clock. */
static void test_hello(void **state) {
    (void)state;
    char args[600], want[300];
    snprintf(args, sizeof args, "info --device %s", board.url);
    assert_int_equal(cli(args), 0);
    snprintf(want, sizeof want, "board              %s\n", name);
    assert_non_null(strstr(out_text, want));
    snprintf(want, sizeof want, "arch               %s\n", core);
    assert_non_null(strstr(out_text, want));
    snprintf(want, sizeof want, "clock rate         %s Hz\n", clock_hz);
    assert_non_null(strstr(out_text, want));
    char listed[200] = "";
    for (const char *p = features; *p; p++) {
        size_t l = strlen(listed);
        snprintf(listed + l, sizeof listed - l, "%s", *p == ',' ? ", " : (char[]){*p, 0});
    }
    if (listed[0]) {
        snprintf(want, sizeof want, "cpu features       %s\n", listed);
        assert_non_null(strstr(out_text, want));
    } else {
        assert_null(strstr(out_text, "cpu features"));
    }
}

/* The model's input: the KWS input, or 16 values for the MLP. */
static void write_input(const char *in) {
    static float x[490];
    mcu_kws_input(x, 490);
    int64_t kws_shape[4] = {1, 1, 49, 10}, mlp_shape[2] = {1, 16};
    if (small_board) {
        assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, mlp_shape, 2, x), 0);
    } else {
        assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, kws_shape, 4, x), 0);
    }
}

/* Both ABIs of the model, compiled for the board's core, equal the interpreter. */
static void test_kws_ab(void **state) {
    (void)state;
    char in[300], json[300], args[1400];
    snprintf(in, sizeof in, "%s/in.npy", workdir);
    snprintf(json, sizeof json, "%s/ab.json", workdir);
    write_input(in);
    snprintf(args, sizeof args, "ab %s --device %s --in %s --repeat 3 --min-repeat-ms 5 --json %s",
             model, board.url, in, json);
    assert_int_equal(cli(args), 0);
    char want[200];
    snprintf(want, sizeof want, "for %s on %s", core, board.url);
    assert_non_null(strstr(out_text, want));
    const char *eq = strstr(out_text, "outputs equal the interpreter");
    assert_non_null(eq);
    char row[200];
    snprintf(row, sizeof row, "%.*s", (int)strcspn(eq, "\n"), eq);
    const char *yes = strstr(row, " yes ");
    assert_non_null(yes);
    assert_non_null(strstr(yes + 4, " yes"));
    char *text;
    size_t len;
    assert_int_equal(tether_file_read_text(json, 1 << 22, &text, &len), 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    /* both sides ran on the board: equal outputs, a measured stack, a bounded static stack (an
     * interrupt's exception frame may land in the measured one, so they are not compared) */
    const cJSON *abis = cJSON_GetObjectItemCaseSensitive(j, "abis");
    assert_int_equal(cJSON_GetArraySize(abis), 2);
    for (const cJSON *o = abis->child; o; o = o->next) {
        const cJSON *eq = cJSON_GetObjectItemCaseSensitive(o, "outputs_equal"),
                    *hwm = cJSON_GetObjectItemCaseSensitive(o, "stack_hwm"),
                    *st = cJSON_GetObjectItemCaseSensitive(o, "static_stack");
        assert_true(cJSON_IsTrue(eq));
        assert_true(cJSON_IsNumber(hwm) && hwm->valuedouble > 0);
        assert_true(cJSON_IsNumber(st) && st->valuedouble > 0);
    }
    cJSON_Delete(j);
}

/* A target this core cannot run (a higher instruction set, an FPU or MVE it lacks, the other
 * float ABI): refused from HELLO with the reason, nothing uploaded. */
static void test_other_core_refused(void **state) {
    (void)state;
    static const struct {
        const char *core, *other, *why;
    } refuse[] = {
        {"cortex-m0", "cortex-m3", "cannot run"},   {"cortex-m3", "cortex-m4", "cannot run"},
        {"cortex-m4", "cortex-m55", "cannot run"},  {"cortex-m7", "cortex-m55", "cannot run"},
        {"cortex-m33", "cortex-m7", "lacks fp.dp"}, {"cortex-m55", "cortex-m3", "soft-float ABI"},
        {"rv32imac", "cortex-m3", "cannot run"}};
    const char *other = NULL, *why = NULL;
    for (size_t i = 0; i < sizeof refuse / sizeof *refuse; i++) {
        if (strcmp(refuse[i].core, core) == 0) {
            other = refuse[i].other;
            why = refuse[i].why;
        }
    }
    if (!other) {
        fail_msg("no refused target listed for core %s: add one to this test", core);
    }
    char dir[300], in[300], out[300], args[1400];
    snprintf(dir, sizeof dir, "%s/other", workdir);
    snprintf(in, sizeof in, "%s/in.npy", workdir);
    snprintf(out, sizeof out, "%s/y.npy", workdir);
    snprintf(args, sizeof args, "compile %s -o %s --target %s", model, dir, other);
    assert_int_equal(cli(args), 0);
    snprintf(args, sizeof args, "run %s --device %s --in %s --out %s", dir, board.url, in, out);
    assert_int_equal(cli(args), 1);
    char want[200];
    snprintf(want, sizeof want, "the module was compiled for %s", other);
    assert_non_null(strstr(out_text, want));
    assert_non_null(strstr(out_text, why));
    snprintf(want, sizeof want, "compile with --target %s", core);
    assert_non_null(strstr(out_text, want));
    assert_null(strstr(out_text, "upload"));
    assert_int_equal(access(out, F_OK), -1);
}

/* On a small part, the KWS example (52 KB of weights) is refused by the link step before any
 * upload, saying how far over the load region it is and what would help. */
static void test_too_big_refused(void **state) {
    (void)state;
    if (!small_board) {
        skip(); /* the KWS example fits every other board */
    }
    char in[300], out[300], args[1400];
    snprintf(in, sizeof in, "%s/kws_in.npy", workdir);
    snprintf(out, sizeof out, "%s/kws_out.npy", workdir);
    static float x[490];
    mcu_kws_input(x, 490);
    int64_t shape[4] = {1, 1, 49, 10};
    assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, shape, 4, x), 0);
    snprintf(args, sizeof args, "run %s/examples/kws/kws.json --device %s --in %s --out %s",
             TETHER_SOURCE_DIR, board.url, in, out);
    assert_int_equal(cli(args), 1);
    char want[200];
    snprintf(want, sizeof want, "load region of the %s firmware: ", name);
    const char *p = strstr(out_text, want);
    assert_non_null(p);
    long over = strtol(p + strlen(want), NULL, 10);
    assert_true(over > 40000); /* 49 KB of weights alone */
    assert_non_null(strstr(out_text, "bytes too large"));
    assert_non_null(strstr(out_text, "--params blob"));
    assert_non_null(strstr(out_text, "int8"));
    assert_null(strstr(out_text, "upload"));
    assert_int_equal(access(out, F_OK), -1);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR TETHER_EXECUTABLE BOARDS_TXT\n", argv[0]);
        return 2;
    }
    mcu_fw_dir = argv[1];
    tether_exe = argv[2];
    boards_txt = argv[3];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_kws_ab),
        cmocka_unit_test(test_other_core_refused),
        cmocka_unit_test(test_too_big_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
