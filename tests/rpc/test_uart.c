/*
 * tether rpc tests (integration): the UART transport over an openpty pair. The device end opens
 * the slave tty by path (raw mode, a standard and a non-standard baud rate) and runs the test
 * server in a thread; the host end uses the master fd. Corrupted frames and garbage on the line
 * are dropped and counted, a lost reply is recovered by a resend answered from the reply cache.
 * The serial port lock: a second opener (another process, forked here, or this one) is refused
 * with TETHER_ERR_BUSY naming the holder's pid and leaves the holder's line settings alone; the
 * lock goes with close, exec and SIGKILL; a waiting open gets the port once the holder closes
 * (told once whom it waits for), a bounded wait gives up with TETHER_ERR_BUSY.
 */
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "session.h"
#include "test_server.h"
#include "tether/crt.h"

typedef struct dev {
    tether_transport t;
    int result;
    ts_stats st;
} dev;

static void *serve_thread(void *arg) {
    dev *d = arg;
    d->result = ts_serve(&d->t, &d->st);
    return NULL;
}

static void run_at(uint32_t baud) {
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip(); /* no pty support (some containers) */
    }
    static dev d;
    memset(&d, 0, sizeof d);
    if (tether_transport_uart_open(&d.t, path, baud, 1024) != 0) {
        fail_msg("uart open %s: %s", path, tether_last_error());
    }
    uint32_t got = 0;
    assert_int_equal(tether_uart_get_baud(d.t.fd_read, &got), 0);
    assert_int_equal(got, baud);
    /* the device end is raw: no echo, no canonical mode, 8 bits */
    struct termios tio;
    assert_int_equal(tcgetattr(d.t.fd_read, &tio), 0);
    assert_int_equal(tio.c_lflag & (ECHO | ICANON | ISIG), 0);
    assert_int_equal(tio.c_cflag & CSIZE, CS8);
    close(slave);

    tether_transport host;
    assert_int_equal(tether_uart_make_raw(master), TETHER_OK);
    assert_int_equal(
        tether_transport_fd_open(&host, TETHER_TRANSPORT_UART, master, master, 1024, true), 0);
    /* garbage and a corrupted frame before the first request */
    uint8_t bad[64];
    size_t bl;
    assert_int_equal(tether_uart_frame_encode("broken frame", 12, bad, sizeof bad, &bl), 0);
    bad[bl - 1] ^= 0x40;
    const uint8_t junk[] = {0x55, 0xaa, 0x00};
    assert_int_equal(write(master, junk, sizeof junk), (ssize_t)sizeof junk);
    assert_int_equal(write(master, bad, bl), (ssize_t)bl);

    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve_thread, &d), 0);
    session_run(&host, 64 * 1024 + 3, true);
    pthread_join(th, NULL);
    assert_int_equal(d.result, 0);
    assert_true(d.t.stats.frames_dropped >= 1);
    assert_true(d.t.stats.garbage_bytes >= 3);
    assert_true(d.st.duplicates >= 1);
    tether_transport_close(&d.t);
    tether_transport_close(&host);
}

static void test_uart_115200(void **state) {
    (void)state;
    run_at(115200);
}

static void test_uart_nonstandard_250000(void **state) {
    (void)state;
    run_at(250000);
}

static void test_uart_errors(void **state) {
    (void)state;
    tether_transport t;
    assert_int_equal(tether_transport_uart_open(&t, "/nonexistent/tty", 115200, 0), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "/nonexistent/tty"));
    assert_int_equal(tether_transport_uart_open(&t, "/dev/null", 115200, 0),
                     TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not a terminal"));
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    assert_int_equal(tether_transport_uart_open(&t, path, 0, 0), TETHER_ERR_INVALID_ARG);
    /* a message larger than the UART frame limit is refused before anything is written */
    assert_int_equal(tether_transport_uart_open(&t, path, 9600, 0), 0);
    assert_int_equal(t.max_frame, TETHER_UART_MAX_PAYLOAD);
    static uint8_t big[70000];
    assert_int_equal(tether_transport_send(&t, big, sizeof big, 100), TETHER_ERR_LIMIT);
    tether_transport_close(&t);
    close(master);
    close(slave);
}

/* ---- serial port lock ---- */

/* A process holding the device: started by holder_start, it opens `path` at 9600 baud, writes
 * 'k' (or 'e' on failure) to `ready`, then waits for a byte on `go` and closes (or, with
 * exec_after, execs `sleep` without closing: O_CLOEXEC must close it). It dies with the test. */
typedef struct holder {
    pid_t pid;
    int ready; /* read end */
    int go;    /* write end */
} holder;

static void holder_start(holder *h, const char *path, bool exec_after) {
    int ready[2], go[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    assert_int_equal(pipe2(go, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ready[0]);
        close(go[1]);
        tether_transport t;
        int rc = tether_transport_uart_open(&t, path, 9600, 0);
        char c = rc == 0 ? 'k' : 'e';
        if (write(ready[1], &c, 1) != 1 || rc != 0) {
            _exit(1);
        }
        if (read(go[0], &c, 1) < 0) {
            _exit(1);
        }
        if (exec_after) {
            execlp("sleep", "sleep", "600", (char *)NULL);
            _exit(127);
        }
        tether_transport_close(&t);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    h->pid = pid;
    h->ready = ready[0];
    h->go = go[1];
    char c = 0;
    assert_int_equal(read(h->ready, &c, 1), 1);
    assert_int_equal(c, 'k');
}

/* Lets the holder close the device and exit; asserts it exited cleanly. */
static void holder_release(holder *h) {
    char c = 'g';
    assert_int_equal(write(h->go, &c, 1), 1);
    int st;
    assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(h->go);
    close(h->ready);
}

static void holder_kill(holder *h) {
    kill(h->pid, SIGKILL);
    waitpid(h->pid, NULL, 0);
    close(h->go);
    close(h->ready);
}

static void expect_busy(const char *path, pid_t pid, const char *extra) {
    char want[256];
    snprintf(want, sizeof want, "device busy: %s is held by pid %d%s", path, (int)pid,
             extra ? extra : "");
    if (strncmp(tether_last_error(), want, strlen(want)) != 0) {
        fail_msg("want '%s', got '%s'", want, tether_last_error());
    }
}

static void test_uart_lock_busy(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    assert_string_equal(tether_status_name(TETHER_ERR_BUSY), "TETHER_ERR_BUSY");
    holder h;
    holder_start(&h, path, false);
    tether_transport t;
    assert_int_equal(tether_transport_uart_open(&t, path, 115200, 0), TETHER_ERR_BUSY);
    expect_busy(path, h.pid, NULL);
    assert_int_equal(t.fd_read, -1);
    /* the refused opener left the holder's line alone */
    uint32_t baud = 0;
    assert_int_equal(tether_uart_get_baud(slave, &baud), 0);
    assert_int_equal(baud, 9600);
    holder_release(&h);
    assert_int_equal(tether_transport_uart_open(&t, path, 115200, 0), 0);
    assert_int_equal(tether_uart_get_baud(slave, &baud), 0);
    assert_int_equal(baud, 115200);
    tether_transport_close(&t);
    close(master);
    close(slave);
}

static void test_uart_lock_same_process(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    tether_transport a, b;
    assert_int_equal(tether_transport_uart_open(&a, path, 115200, 0), 0);
    assert_int_equal(tether_transport_uart_open(&b, path, 115200, 0), TETHER_ERR_BUSY);
    expect_busy(path, getpid(), " (this process)");
    /* the refusal kept this process's holder record: another process still sees our pid */
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tether_transport c;
        char want[256];
        snprintf(want, sizeof want, "device busy: %s is held by pid %d", path, (int)parent);
        int rc = tether_transport_uart_open(&c, path, 115200, 0);
        _exit(rc == TETHER_ERR_BUSY && strcmp(tether_last_error(), want) == 0 ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tether_transport_close(&a);
    assert_int_equal(tether_transport_uart_open(&b, path, 115200, 0), 0);
    tether_transport_close(&b);
    close(master);
    close(slave);
}

static void test_uart_lock_killed_holder(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    holder h;
    holder_start(&h, path, false);
    tether_transport t;
    assert_int_equal(tether_transport_uart_open(&t, path, 115200, 0), TETHER_ERR_BUSY);
    holder_kill(&h);
    assert_int_equal(tether_transport_uart_open(&t, path, 115200, 0), 0);
    tether_transport_close(&t);
    close(master);
    close(slave);
}

static int waits_seen, waited_for;

static void on_wait_release(void *ctx, const char *path, int pid) {
    (void)path;
    holder *h = ctx;
    waits_seen++;
    waited_for = pid;
    char c = 'g';
    if (write(h->go, &c, 1) != 1) {
        waited_for = -1;
    }
}

static void on_wait_count(void *ctx, const char *path, int pid) {
    (void)ctx;
    (void)path;
    waits_seen++;
    waited_for = pid;
}

static void test_uart_lock_exec_releases(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    holder h;
    holder_start(&h, path, true);
    tether_transport t;
    assert_int_equal(tether_transport_uart_open(&t, path, 115200, 0), TETHER_ERR_BUSY);
    expect_busy(path, h.pid, NULL);
    char c = 'g';
    assert_int_equal(write(h.go, &c, 1), 1);
    assert_int_equal(read(h.ready, &c, 1), 0); /* EOF: the holder has exec'ed */
    /* the exec'ed program still runs but no longer has the device (bounded wait: the pipe and
     * the tty are closed by the same exec) */
    tether_uart_open_options o = {.wait_ms = 10000};
    assert_int_equal(tether_transport_uart_open_ex(&t, path, 115200, 0, &o), 0);
    assert_int_equal(kill(h.pid, 0), 0);
    tether_transport_close(&t);
    holder_kill(&h);
    close(master);
    close(slave);
}

static void test_uart_lock_wait(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    holder h;
    holder_start(&h, path, false);
    /* the callback (called once the open waits) lets the holder go */
    waits_seen = 0;
    waited_for = 0;
    tether_uart_open_options o = {.wait_ms = -1, .on_wait = on_wait_release, .wait_ctx = &h};
    tether_transport t;
    assert_int_equal(tether_transport_uart_open_ex(&t, path, 115200, 0, &o), 0);
    assert_int_equal(waits_seen, 1);
    assert_int_equal(waited_for, h.pid);
    int st;
    assert_int_equal(waitpid(h.pid, &st, 0), h.pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(h.go);
    close(h.ready);
    tether_transport_close(&t);
    close(master);
    close(slave);
}

static void test_uart_lock_wait_timeout(void **state) {
    (void)state;
    int master, slave;
    char path[128];
    if (openpty(&master, &slave, path, NULL, NULL) != 0) {
        skip();
    }
    holder h;
    holder_start(&h, path, false);
    waits_seen = 0;
    waited_for = 0;
    tether_uart_open_options o = {.wait_ms = 200, .on_wait = on_wait_count};
    tether_transport t;
    assert_int_equal(tether_transport_uart_open_ex(&t, path, 115200, 0, &o), TETHER_ERR_BUSY);
    expect_busy(path, h.pid, " (waited 200 ms)");
    assert_int_equal(waits_seen, 1);
    assert_int_equal(waited_for, h.pid);
    o.wait_ms = -2;
    assert_int_equal(tether_transport_uart_open_ex(&t, path, 115200, 0, &o),
                     TETHER_ERR_INVALID_ARG);
    holder_release(&h);
    close(master);
    close(slave);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uart_115200),
        cmocka_unit_test(test_uart_nonstandard_250000),
        cmocka_unit_test(test_uart_errors),
        cmocka_unit_test(test_uart_lock_busy),
        cmocka_unit_test(test_uart_lock_same_process),
        cmocka_unit_test(test_uart_lock_killed_holder),
        cmocka_unit_test(test_uart_lock_exec_releases),
        cmocka_unit_test(test_uart_lock_wait),
        cmocka_unit_test(test_uart_lock_wait_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
