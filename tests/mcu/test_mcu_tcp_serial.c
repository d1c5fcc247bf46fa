/*
 * tcp-serial://HOST:PORT: a board's UART carried unchanged over a TCP byte stream, the way
 * ser2net exports a real board's serial port. The board here is the firmware on QEMU with its
 * UART as a TCP server on 127.0.0.1 (scripts/qemu-board --tcp-serial PORT). The tether CLI reads
 * its HELLO, runs the KWS example on it equal to the reference interpreter, and a malformed URL
 * or a port nobody listens on is a clean error.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "free_port.h"
#include "mcu_client.h"
#include "tether/npy.h"

static const char *tether_exe;
static char workdir[256], url[128];
static pid_t board_pid = -1;
static char out_text[65536];

/* Runs `tether ARGS` (one shell word each, no quoting needed); output in out_text. */
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

static int setup(void **state) {
    (void)state;
    if (system("command -v qemu-system-arm >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: qemu-system-arm not installed (scripts/setup installs it)\n");
        exit(77);
    }
    if (mcu_workdir_create(workdir, sizeof workdir, "tcp-serial") != 0) {
        return -1;
    }
    char fw[512], script[512], port[16];
    snprintf(fw, sizeof fw, "%s/tether-fw.elf", mcu_fw_dir);
    snprintf(script, sizeof script, "%s/scripts/qemu-board", TETHER_SOURCE_DIR);
    int p = tether_test_free_port();
    if (p <= 0) {
        return -1;
    }
    snprintf(port, sizeof port, "%d", p);
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        return -1;
    }
    board_pid = fork();
    if (board_pid < 0) {
        return -1;
    }
    if (board_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* the board stops with this test, however it ends */
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        execl(script, script, "--icount", "--tcp-serial", port, fw, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    size_t have = 0; /* the URL line, within 15 s */
    while (have < sizeof url - 1) {
        struct pollfd pf = {pipefd[0], POLLIN, 0};
        if (poll(&pf, 1, 15000) <= 0 || read(pipefd[0], url + have, 1) != 1) {
            close(pipefd[0]);
            return -1;
        }
        if (url[have] == '\n') {
            break;
        }
        have++;
    }
    url[have] = 0;
    close(pipefd[0]);
    return strncmp(url, "tcp-serial://127.0.0.1:", 23) == 0 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    if (board_pid > 0) {
        kill(board_pid, SIGTERM);
        while (waitpid(board_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    return mcu_workdir_remove(workdir);
}

static void test_info_and_run(void **state) {
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "info --device %s", url);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out_text, "board              mps2-an385\n"));
    static float x[490];
    mcu_kws_input(x, 490);
    char in[300], out[300], ref[300];
    snprintf(in, sizeof in, "%s/in.npy", workdir);
    snprintf(out, sizeof out, "%s/out.npy", workdir);
    snprintf(ref, sizeof ref, "%s/ref.npy", workdir);
    int64_t shape[4] = {1, 1, 49, 10};
    assert_int_equal(tether_npy_write(in, TETHER_FLOAT32, shape, 4, x), 0);
    snprintf(args, sizeof args, "run %s/examples/kws/kws.json --reference --in %s --out %s",
             TETHER_SOURCE_DIR, in, ref);
    assert_int_equal(cli(args), 0);
    /* compiled for the board's core from its HELLO, linked, uploaded and run over TCP; the
     * board's pools come from HELLO too */
    snprintf(args, sizeof args,
             "run %s/examples/kws/kws.json --device %s --pool sram --in %s --out %s",
             TETHER_SOURCE_DIR, url, in, out);
    assert_int_equal(cli(args), 0);
    assert_non_null(strstr(out_text, "linked at 0x20050000 for mps2-an385"));
    tether_npy a, b;
    assert_int_equal(tether_npy_read(out, &a), 0);
    assert_int_equal(tether_npy_read(ref, &b), 0);
    assert_int_equal(a.nbytes, b.nbytes);
    for (size_t i = 0; i < a.nbytes / 4; i++) {
        float u = ((float *)a.data)[i], v = ((float *)b.data)[i];
        assert_true(fabsf(u - v) <= 1e-5f + 1e-4f * fabsf(v));
    }
    tether_npy_free(&a);
    tether_npy_free(&b);
}

static void test_bad_urls(void **state) {
    (void)state;
    assert_int_not_equal(cli("info --device tcp-serial://127.0.0.1"), 0);
    assert_non_null(strstr(out_text, "want tcp-serial://HOST:PORT"));
    char args[256];
    int p = tether_test_free_port(); /* nobody listens there */
    snprintf(args, sizeof args, "info --device tcp-serial://127.0.0.1:%d --timeout-ms 2000", p);
    assert_int_equal(cli(args), 1);
    assert_non_null(strstr(out_text, "cannot connect to 127.0.0.1 port"));
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
        cmocka_unit_test(test_info_and_run),
        cmocka_unit_test(test_bad_urls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
