/*
 * `tether profile` on the firmware under QEMU mps2-an385 (-icount shift=0): the KWS example
 * compiled for the board's core, plain and profiling, linked, uploaded and run as a user does;
 * every node of the model has a record with its time from the cycle counter, its MACs/cycle and
 * its stack bytes (tether_mcu_profile_stack, repainted between nodes); the node times add up to
 * within 10% of the profiled call; the whole call's stack high-water mark is at least every
 * node's; the trace holds one event per node call. Prints the table (docs/profile.md's example).
 * Channel: semihosting's console (mcu_board_start_fast; the UART where the firmware lacks it),
 * since the byte path is not the subject here and the UART model uploads at 8-16 KiB/s;
 * test_mcu_server/upload/rpc_client/tcp_serial keep the UART covered. -icount as before: the
 * channel is outside the timed region.
 * usage: test_mcu_profile FIRMWARE_DIR TETHER_EXECUTABLE
 */
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
#include "tether/crt.h"
#include "tether/file.h"

static mcu_board board;
static const char *tether_exe;
static char workdir[256];

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "profile") != 0) {
        return -1;
    }
    unsetenv("TETHER_FIRMWARE");
    unsetenv("TETHER_DEVICE");
    if (mcu_board_start_fast(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    close(board.fd); /* the CLI opens the channel itself */
    board.fd = -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

static cJSON *read_json(const char *path) {
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(path, 1 << 24, &text, &len), 0);
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static void test_profile_kws(void **state) {
    (void)state;
    char cmd[3000], json[300], trace[300], out[300];
    snprintf(json, sizeof json, "%s/kws.json", workdir);
    snprintf(trace, sizeof trace, "%s/kws.trace.json", workdir);
    snprintf(out, sizeof out, "%s/out.txt", workdir);
    snprintf(cmd, sizeof cmd,
             "'%s' profile '%s/examples/kws/kws.json' --device '%s' --runs 3 --json '%s' --trace "
             "'%s' >'%s' 2>&1",
             tether_exe, TETHER_SOURCE_DIR, board.url, json, trace, out);
    int st = system(cmd);
    char *text = NULL;
    size_t len;
    assert_int_equal(tether_file_read_text(out, 1 << 20, &text, &len), 0);
    printf("%s", text);
    free(text);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    cJSON *j = read_json(json);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "target")), "cortex-m3");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "clock")), "cycles");
    assert_true(num(j, "clock_hz") == 25000000.0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "stack_per_node")));
    assert_true(num(j, "plain_ns") > 0);
    double call = num(j, "call_ns"), sum = num(j, "sum_ns"),
           call_stack = num(j, "call_stack_bytes");
    assert_true(sum <= call * 1.10 && sum >= call * 0.90);
    const cJSON *nodes = cJSON_GetObjectItem(j, "nodes");
    /* the scalar kernels of a board: conv1 (padding in the kernel), fc, softmax */
    const char *names[] = {"conv1", "fc", "softmax"};
    assert_int_equal(cJSON_GetArraySize(nodes), 3);
    for (int i = 0; i < 3; i++) {
        const cJSON *x = cJSON_GetArrayItem(nodes, i);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(x, "name")), names[i]);
        assert_true(num(x, "median_ns") > 0);
        assert_true(num(x, "cycles") > 0);
        double stack = num(x, "stack_bytes");
        assert_true(stack > 0);
        assert_true(stack <= call_stack);
        if (i < 2) { /* conv1 and fc multiply-accumulate */
            assert_true(num(x, "macs") > 0);
            assert_true(num(x, "macs_per_cycle") > 0);
        }
    }
    cJSON_Delete(j);
    cJSON *t = read_json(trace);
    int x = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(t, "traceEvents")) {
        x += !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph")), "X");
    }
    assert_int_equal(x, 3 * 3);
    cJSON_Delete(t);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR TETHER_EXECUTABLE\n", argv[0]);
        return 2;
    }
    mcu_fw_dir = argv[1];
    tether_exe = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_kws),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
