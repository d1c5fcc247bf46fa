/*
 * Two clients on one board (QEMU mps2-an385) through the host library, each in its own process:
 * the serial port lock. While one session uploads a module and runs it, a second session is
 * refused with "device busy: /dev/pts/N is held by pid N" (also after the first one reconnected:
 * reconnect keeps the line locked); with a wait, the second session waits for the first one to
 * close (told once, with the holder's pid), and both upload, run and get correct results (without
 * the lock their uploads interleaved: "UPLOAD_CHUNK failed: no upload with id 8").
 * usage: test_mcu_lock FIRMWARE_DIR
 *
 * What must stay true: every worker process is reaped (teardown kills any left over); workers
 * never use cmocka (they report over a pipe and through their exit status).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcu_client.h"
#include "tether/host.h"

static mcu_board board;
static char workdir[256];
static uint8_t *image; /* math_module, linked for the board's load region */
static size_t image_size;

/* A worker process with one session. It writes lines to `msg`: "W<pid>" when its open starts
 * waiting for holder <pid>, "O" once open, "E<status> <message>" when open failed, "R" after a
 * reconnect; it reads one byte from `go` before it uploads and runs, and (with reconnect) one
 * more after "R" before it closes. Exit status 0 = every result was correct. */
typedef struct worker {
    pid_t pid;
    int msg; /* read end */
    int go;  /* write end */
} worker;

#define MAX_WORKERS 4
static pid_t workers[MAX_WORKERS];

static void say(int fd, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n > (int)sizeof line - 2) {
        n = (int)sizeof line - 2;
    }
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) != n) {
        _exit(3);
    }
}

static void on_wait(void *ctx, const char *device, int holder_pid) {
    (void)device;
    say(*(int *)ctx, "W%d", holder_pid);
}

static int check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "worker %d: %s: %s\n", (int)getpid(), what, tether_last_error());
    }
    return ok ? 0 : 1;
}

/* Uploads math_module, runs softmax16 and dot_f32 on inputs derived from `seed`, checks them. */
static int work(tether_session *s, int seed) {
    int bad = 0;
    uint64_t module = 0;
    uint32_t nfuncs = 0;
    bad |= check(tether_session_upload(s, TETHER_MODULE_MCU_IMAGE, "math", image, image_size) == 0,
                 "upload");
    bad |=
        check(tether_session_load_module(s, "math", &module, &nfuncs) == 0 && nfuncs == 2, "load");
    if (bad) {
        return bad;
    }
    tether_remote_func softmax, dot;
    bad |= check(tether_session_get_function(s, module, "softmax16", &softmax) == 0, "softmax16");
    bad |= check(tether_session_get_function(s, module, "dot_f32", &dot) == 0, "dot_f32");
    float in[16], out[17];
    for (int i = 0; i < 16; i++) {
        in[i] = (float)((i * 7 + seed) % 16 - 8) * 0.25f;
    }
    int64_t s16[1] = {16}, s17[1] = {17}, s10[1] = {10}, s1[1] = {1};
    uint64_t hin = 0, hout = 0, ha = 0, hb = 0, hd = 0, nb;
    bad |= check(
        tether_session_alloc(s, s16, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hin, &nb) == 0 &&
            tether_session_alloc(s, s17, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hout, &nb) ==
                0 &&
            tether_session_copy_to(s, hin, 0, in, sizeof in) == 0,
        "softmax arrays");
    if (bad) {
        return bad;
    }
    tether_remote_arg args[3];
    memset(args, 0, sizeof args);
    for (int i = 0; i < 3; i++) {
        args[i].type_code = TETHER_TYPE_DLTENSOR;
    }
    args[0].v.array = hin;
    args[1].v.array = hout;
    tether_call_result r;
    bad |= check(tether_session_call(s, &softmax, args, 2, &r) == 0 &&
                     tether_session_copy_from(s, hout, 0, out, sizeof out) == 0,
                 "softmax16 call");
    double sum = 0;
    for (int i = 0; i < 16; i++) {
        sum += exp((double)in[i]);
    }
    for (int i = 0; i < 16 && !bad; i++) {
        double want = exp((double)in[i]) / sum;
        bad |= check(fabs(out[i] - want) <= 1e-6 + 1e-5 * want, "softmax16 result");
    }
    bad |= check(out[16] == 1.0f, "softmax16 call count (the module was loaded fresh)");
    float a[10], b[10], d = 0, want = 0;
    for (int i = 0; i < 10; i++) {
        a[i] = (float)(i + seed);
        b[i] = (float)(3 - i);
        want += a[i] * b[i];
    }
    want = 2 * want + 1.0f; /* scale 2, bias[10 % 4] */
    bad |= check(
        tether_session_alloc(s, s10, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &ha, &nb) == 0 &&
            tether_session_alloc(s, s10, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hb, &nb) ==
                0 &&
            tether_session_alloc(s, s1, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hd, &nb) ==
                0 &&
            tether_session_copy_to(s, ha, 0, a, sizeof a) == 0 &&
            tether_session_copy_to(s, hb, 0, b, sizeof b) == 0,
        "dot arrays");
    if (bad) {
        return bad;
    }
    args[0].v.array = ha;
    args[1].v.array = hb;
    args[2].v.array = hd;
    bad |= check(tether_session_call(s, &dot, args, 3, &r) == 0 &&
                     tether_session_copy_from(s, hd, 0, &d, sizeof d) == 0,
                 "dot_f32 call");
    bad |= check(d == want, "dot_f32 result");
    return bad;
}

/* The body of a worker process. */
static int worker_main(int msg, int go, int wait_ms, bool reconnect, int seed) {
    tether_session_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 30000;
    o.wait_ms = wait_ms;
    o.on_wait = on_wait;
    o.wait_ctx = &msg;
    tether_session *s;
    int rc = tether_session_open(&s, board.url, &o);
    if (rc) {
        say(msg, "E%d %s", rc, tether_last_error());
        return 2;
    }
    say(msg, "O");
    char c;
    int bad = 0;
    if (read(go, &c, 1) != 1) {
        bad = 1;
    }
    if (!bad) {
        bad = work(s, seed);
    }
    if (reconnect && !bad) {
        bad = check(tether_session_reconnect(s) == 0, "reconnect");
        say(msg, "R");
        if (read(go, &c, 1) != 1) {
            bad = 1;
        }
    }
    tether_session_close(s);
    return bad;
}

static void worker_start(worker *w, int wait_ms, bool reconnect, int seed) {
    int msg[2], go[2];
    assert_int_equal(pipe2(msg, O_CLOEXEC), 0);
    assert_int_equal(pipe2(go, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(msg[0]);
        close(go[1]);
        _exit(worker_main(msg[1], go[0], wait_ms, reconnect, seed));
    }
    close(msg[1]);
    close(go[0]);
    for (int i = 0; i < MAX_WORKERS; i++) {
        if (workers[i] == 0) {
            workers[i] = pid;
            break;
        }
    }
    w->pid = pid;
    w->msg = msg[0];
    w->go = go[1];
}

/* The worker's next line ("" at EOF). */
static void worker_line(worker *w, char *line, size_t n) {
    size_t have = 0;
    char c;
    while (have + 1 < n && read(w->msg, &c, 1) == 1 && c != '\n') {
        line[have++] = c;
    }
    line[have] = 0;
}

static void worker_go(worker *w) {
    char c = 'g';
    assert_int_equal(write(w->go, &c, 1), 1);
}

/* Waits for the worker; its exit status. */
static int worker_end(worker *w) {
    int st = 0;
    assert_int_equal(waitpid(w->pid, &st, 0), w->pid);
    for (int i = 0; i < MAX_WORKERS; i++) {
        if (workers[i] == w->pid) {
            workers[i] = 0;
        }
    }
    close(w->msg);
    close(w->go);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void expect_line(worker *w, const char *want) {
    char line[512];
    worker_line(w, line, sizeof line);
    if (strcmp(line, want) != 0) {
        fail_msg("worker %d said '%s', expected '%s'", (int)w->pid, line, want);
    }
}

/* Opens a session in this process and expects it refused for `holder`. */
static void expect_busy(pid_t holder) {
    tether_session_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 10000;
    tether_session *s = NULL;
    char want[256];
    snprintf(want, sizeof want, "device busy: %.127s is held by pid %d",
             board.url + strlen("uart://"), (int)holder);
    int rc = tether_session_open(&s, board.url, &o);
    if (rc == 0) {
        tether_session_close(s);
    }
    assert_int_equal(rc, TETHER_ERR_BUSY);
    assert_null(s);
    assert_string_equal(tether_last_error(), want);
}

static void test_second_session_refused(void **state) {
    (void)state;
    worker a;
    worker_start(&a, 0, true, 1);
    expect_line(&a, "O");
    worker_go(&a); /* uploads and runs now */
    expect_busy(a.pid);
    expect_line(&a, "R"); /* done and reconnected: still holding the line */
    expect_busy(a.pid);
    worker_go(&a);
    assert_int_equal(worker_end(&a), 0);
    /* closed: the board is free and works for the next client */
    tether_session_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 30000;
    tether_session *s;
    if (tether_session_open(&s, board.url, &o) != 0) {
        fail_msg("open after the holder closed: %s", tether_last_error());
    }
    assert_int_equal(work(s, 5), 0);
    tether_session_close(s);
}

static void test_waiting_session_queues(void **state) {
    (void)state;
    worker b, c;
    worker_start(&b, 0, false, 2);
    expect_line(&b, "O");
    worker_start(&c, 120000, false, 3);
    char want[64];
    snprintf(want, sizeof want, "W%d", (int)b.pid);
    expect_line(&c, want); /* c waits for b */
    worker_go(&b);
    worker_go(&c);
    expect_line(&c, "O"); /* once b has closed */
    assert_int_equal(worker_end(&b), 0);
    assert_int_equal(worker_end(&c), 0);
}

static int setup(void **state) {
    (void)state;
    if (mcu_workdir_create(workdir, sizeof workdir, "lock") != 0) {
        return -1;
    }
    if (mcu_board_start(&board, true) != 0) {
        mcu_board_stop(&board);
        return -1;
    }
    /* the sessions own the line */
    close(board.fd);
    board.fd = -1;
    char cmd[4096], elf[512], bin[512];
    snprintf(elf, sizeof elf, "%s/math.elf", workdir);
    snprintf(bin, sizeof bin, "%s/math.bin", workdir);
    snprintf(cmd, sizeof cmd,
             "arm-none-eabi-gcc -mcpu=cortex-m3 -mthumb -std=c11 -Os -ffreestanding "
             "-ffunction-sections -fdata-sections -mlong-calls -Wall -Wextra -Werror "
             "-I%s/crt/include -I%s/dlpack-include -nostdlib -Wl,--gc-sections -T %s/module.ld "
             "%s/exports.ld %s/tests/mcu/modules/math_module.c -lgcc -o %s && "
             "arm-none-eabi-objcopy -O binary %s %s",
             TETHER_SOURCE_DIR, TETHER_BINARY_DIR, mcu_fw_dir, mcu_fw_dir, TETHER_SOURCE_DIR, elf,
             elf, bin);
    if (system(cmd) != 0) {
        fprintf(stderr, "building math_module failed: %s\n", cmd);
        return -1;
    }
    FILE *f = fopen(bin, "rb");
    if (!f) {
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    image = n > 0 ? malloc((size_t)n) : NULL;
    if (!image || fread(image, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return -1;
    }
    fclose(f);
    image_size = (size_t)n;
    return 0;
}

/* After each test: no worker survives it (a failed test leaves them waiting on their pipes). */
static int kill_workers(void **state) {
    (void)state;
    for (int i = 0; i < MAX_WORKERS; i++) {
        if (workers[i] > 0) {
            kill(workers[i], SIGKILL);
            waitpid(workers[i], NULL, 0);
            workers[i] = 0;
        }
    }
    return 0;
}

static int teardown(void **state) {
    kill_workers(state);
    free(image);
    mcu_board_stop(&board);
    return mcu_workdir_remove(workdir);
}

int main(int argc, char **argv) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_second_session_refused, kill_workers),
        cmocka_unit_test_teardown(test_waiting_session_queues, kill_workers),
    };
    return mcu_test_main(argc, argv, tests, sizeof tests / sizeof tests[0], setup, teardown);
}
