/*
 * tether rpc tests (integration): the UART transport over an openpty pair. The device end opens
 * the slave tty by path (raw mode, a standard and a non-standard baud rate) and runs the test
 * server in a thread; the host end uses the master fd. Corrupted frames and garbage on the line
 * are dropped and counted, a lost reply is recovered by a resend answered from the reply cache.
 */
#include <fcntl.h>
#include <pthread.h>
#include <pty.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
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
    if (openpty(&master, &slave, path, NULL, NULL) != 0)
        skip(); /* no pty support (some containers) */
    static dev d;
    memset(&d, 0, sizeof d);
    if (tether_transport_uart_open(&d.t, path, baud, 1024) != 0)
        fail_msg("uart open %s: %s", path, tether_last_error());
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
    if (openpty(&master, &slave, path, NULL, NULL) != 0)
        skip();
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uart_115200),
        cmocka_unit_test(test_uart_nonstandard_250000),
        cmocka_unit_test(test_uart_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
