/*
 * tetherd over a noisy serial line: tether_uart_noise (bench/uart_noise) relays between two
 * ptys, flipping bits and dropping bytes, with `tetherd --uart` on one side and a host session on
 * the other. On a clean line HELLO agrees on link 2 and nothing is resent; at 1% of bytes
 * flipped and 0.01% dropped the test module uploads (its SHA-256 checked by tetherd), arrays go
 * both ways and functions run with every byte right, and the link figures show the damage the
 * ARQ repaired (resends, CRC errors, the device's NAKs); on a clean line paced to 38400 baud,
 * where one frame takes longer than the retransmission timeout's floor, nothing is sent twice
 * (the timeout counts the line time of the bytes ahead of a reply). Every request has a 5 s
 * timeout, so a link that stalls on damage fails here instead of hanging.
 *
 * What must stay true: the relay, tetherd and the session are always stopped; the noise is
 * seeded, so a failure can be replayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "tether/crt.h"

static const char *g_relay; /* argv[1] */

typedef struct line {
    pid_t relay, tetherd;
    char dev[128], host[128];
    char url[160];
    char log[300];
} line;

static void stop(pid_t *pid) {
    if (*pid > 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
        *pid = 0;
    }
}

/* A failed assertion skips line_stop: what is still running is stopped at exit. */
static line *g_live;

static void stop_leftovers(void) {
    if (g_live) {
        stop(&g_live->tetherd);
        stop(&g_live->relay);
        unlink(g_live->log);
    }
}

/* Starts the relay (flip, drop, seed; paced to baud, "0" = unpaced) and tetherd --uart on its
 * device side. */
static void line_start_paced(line *l, const char *flip, const char *drop, const char *seed,
                             const char *baud) {
    memset(l, 0, sizeof *l);
    int p[2];
    assert_int_equal(pipe(p), 0);
    l->relay = fork();
    if (l->relay == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        execl(g_relay, g_relay, "--flip", flip, "--drop", drop, "--seed", seed, "--baud", baud,
              (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char buf[300] = "";
    size_t n = 0;
    while (n + 1 < sizeof buf && !memchr(buf, '\n', n)) {
        ssize_t r = read(p[0], buf + n, sizeof buf - 1 - n);
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
        buf[n] = 0;
    }
    close(p[0]);
    if (sscanf(buf, "%127s %127s", l->dev, l->host) != 2) {
        fail_msg("relay said '%s'", buf);
    }
    snprintf(l->url, sizeof l->url, "uart://%s", l->host);
    snprintf(l->log, sizeof l->log, "%s/tuartXXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(l->log);
    assert_true(fd >= 0);
    l->tetherd = fork();
    if (l->tetherd == 0) {
        dup2(fd, STDERR_FILENO);
        execl(k_tetherd, k_tetherd, "--uart", l->dev, "--upload-cache", "off", (char *)NULL);
        _exit(127);
    }
    close(fd);
    g_live = l;
    /* tetherd has its side of the line open once it logs the session */
    for (int i = 0; i < 100; i++) {
        char *log = NULL;
        FILE *f = fopen(l->log, "r");
        if (f) {
            log = calloc(1, 8192);
            if (fread(log, 1, 8191, f) == 0) {
                log[0] = 0;
            }
            fclose(f);
        }
        int up = log && strstr(log, "session started");
        free(log);
        if (up) {
            return;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("tetherd --uart %s did not start a session", l->dev);
}

static void line_start(line *l, const char *flip, const char *drop, const char *seed) {
    line_start_paced(l, flip, drop, seed, "0");
}

static void line_stop(line *l) {
    stop(&l->tetherd);
    stop(&l->relay);
    unlink(l->log);
    g_live = NULL;
}

static tether_session *open_line(const line *l) {
    tether_session_options o = {0};
    o.timeout_ms = 5000;
    tether_session *s = NULL;
    if (tether_session_open(&s, l->url, &o) != 0) {
        fail_msg("open %s: %s", l->url, tether_last_error());
    }
    return s;
}

/* Arrays of n bytes both ways, `rounds` times, every byte compared. */
static void round_trips(tether_session *s, size_t n, int rounds) {
    int64_t shape = (int64_t)n;
    uint64_t h, nb;
    assert_int_equal(
        tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nb), 0);
    uint8_t *out = malloc(n), *back = malloc(n);
    uint32_t x = 12345;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            out[i] = (uint8_t)(x >> 16);
        }
        if (tether_session_copy_to(s, h, 0, out, n)) {
            fail_msg("copy to: %s", tether_last_error());
        }
        memset(back, 0, n);
        if (tether_session_copy_from(s, h, 0, back, n)) {
            fail_msg("copy from: %s", tether_last_error());
        }
        assert_memory_equal(back, out, n);
    }
    free(out);
    free(back);
    assert_int_equal(tether_session_free(s, h), 0);
}

static void test_clean_line(void **state) {
    (void)state;
    line l;
    line_start(&l, "0", "0", "1");
    tether_session *s = open_line(&l);
    check_session_functions(s);
    round_trips(s, 8192, 2);
    tether_link_stats st;
    assert_int_equal(tether_session_link_stats(s, &st), 0);
    assert_true(st.serial);
    assert_true(st.link2); /* agreed in HELLO */
    assert_int_equal(st.frames_resent, 0);
    assert_int_equal(st.frames_dropped, 0);
    assert_int_equal(st.naks_received, 0);
    tether_session_close(s);
    line_stop(&l);
}

static void test_noisy_line(void **state) {
    (void)state;
    line l;
    line_start(&l, "0.01", "0.0001", "42");
    tether_session *s = open_line(&l);
    check_session_functions(s); /* uploads and runs the test module */
    round_trips(s, 16384, 4);
    tether_link_stats st;
    assert_int_equal(tether_session_link_stats(s, &st), 0);
    assert_true(st.link2);
    fprintf(stderr,
            "noisy line: %llu frames sent, %llu resent, %llu received, %llu damaged (%llu CRC), "
            "%llu NAKs from tetherd, byte error rate %.2g, chunk %zu\n",
            (unsigned long long)st.frames_sent, (unsigned long long)st.frames_resent,
            (unsigned long long)st.frames_received, (unsigned long long)st.frames_dropped,
            (unsigned long long)st.crc_errors, (unsigned long long)st.naks_received, st.error_rate,
            st.chunk);
    assert_true(st.frames_resent > 0);
    assert_true(st.crc_errors > 0);
    assert_true(st.naks_received > 0);
    assert_true(st.error_rate > 0.001 && st.error_rate < 0.1);
    assert_true(st.chunk < st.max_chunk); /* sized down to the line */
    tether_session_close(s);
    line_stop(&l);
}

/* A clean line slower than the retransmission timeout's floor: a 1 KiB frame takes 270 ms at
 * 38400 baud, four in flight over a second. The timeout counts the line time of the bytes ahead
 * of each reply (learned from the exchanges so far), so nothing is sent twice. */
static void test_slow_line(void **state) {
    (void)state;
    line l;
    line_start_paced(&l, "0", "0", "1", "38400");
    tether_session *s = open_line(&l);
    round_trips(s, 6000, 1);
    tether_link_stats st;
    assert_int_equal(tether_session_link_stats(s, &st), 0);
    assert_true(st.link2);
    if (st.frames_resent != 0) {
        fail_msg("%llu of %llu frames sent twice on a clean 38400-baud line",
                 (unsigned long long)st.frames_resent, (unsigned long long)st.frames_sent);
    }
    assert_int_equal(st.naks_received, 0);
    tether_session_close(s);
    line_stop(&l);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TETHER_UART_NOISE\n", argv[0]);
        return 2;
    }
    g_relay = argv[1];
    atexit(stop_leftovers);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_line),
        cmocka_unit_test(test_noisy_line),
        cmocka_unit_test(test_slow_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
