/*
 * Test helpers for the tetherd tests (see daemon.h). Daemons bind 127.0.0.1 only and are always
 * stopped by the test that started them.
 */
#if defined(__SANITIZE_ADDRESS__)
#define TETHER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_TEST_ASAN 1
#endif
#endif
#ifndef TETHER_TEST_ASAN
#define TETHER_TEST_ASAN 0
#endif

#include "daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"

const char *const k_tetherd = TETHERD_PATH;
const char *const k_testmod = TESTMOD_PATH;

extern char **environ;

/* Daemons still running when the test process exits (a failed assertion skips daemon_stop) are
 * stopped by an atexit handler, so a failing test never leaves a tetherd behind. */
static pid_t g_live[32];

static void stop_leftovers(void) {
    for (int i = 0; i < 32; i++) {
        if (g_live[i] > 0) {
            kill(g_live[i], SIGTERM);
            waitpid(g_live[i], NULL, 0);
            g_live[i] = 0;
        }
    }
}

static void track(pid_t pid, pid_t old) {
    static int registered;
    if (!registered) {
        registered = atexit(stop_leftovers) == 0;
    }
    for (int i = 0; i < 32; i++) {
        if (g_live[i] == old) {
            g_live[i] = pid;
            return;
        }
    }
}

int daemon_start(test_daemon *d, const char *const *extra) {
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s/tdXXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(d->dir)) {
        return -1;
    }
    char portfile[300];
    snprintf(portfile, sizeof portfile, "%s/port", d->dir);
    snprintf(d->log, sizeof d->log, "%s/log", d->dir);
    const char *argv[40];
    int n = 0;
    argv[n++] = k_tetherd;
    argv[n++] = "--tcp";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = portfile;
    argv[n++] = "--work-dir";
    argv[n++] = d->dir;
    for (int i = 0; extra && extra[i] && n < 38; i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, d->log, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    int rc = posix_spawn(&d->pid, k_tetherd, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        return -1;
    }
    track(d->pid, 0);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(portfile, "r");
        if (f) {
            int ok = fscanf(f, "%d", &d->port) == 1;
            fclose(f);
            if (ok) {
                snprintf(d->url, sizeof d->url, "tcp://127.0.0.1:%d", d->port);
                return 0;
            }
        }
        int st;
        if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
            d->pid = 0;
            return -1;
        }
        usleep(10000);
    }
    return -1;
}

void daemon_stop(test_daemon *d) {
    if (d->pid > 0) {
        track(0, d->pid);
        kill(d->pid, SIGTERM);
        int st;
        waitpid(d->pid, &st, 0);
        d->pid = 0;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", d->dir);
    }
}

char *daemon_log(const test_daemon *d) {
    FILE *f = fopen(d->log, "r");
    if (!f) {
        return strdup("");
    }
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

uint64_t load_testmod(tether_session *s) {
    int rc = tether_session_upload_file(s, 0, "testmod", k_testmod);
    if (rc) {
        fail_msg("upload: %s", tether_last_error());
    }
    uint64_t mod = 0;
    uint32_t nf = 0;
    rc = tether_session_load_module(s, "testmod", &mod, &nf);
    if (rc) {
        fail_msg("load: %s", tether_last_error());
    }
    assert_int_equal(nf, 12);
    assert_true(mod != 0);
    return mod;
}

uint64_t alloc_f32(tether_session *s, int64_t n, const float *vals) {
    uint64_t h = 0, nb = 0;
    int rc = tether_session_alloc(s, &n, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &h, &nb);
    if (rc) {
        fail_msg("alloc: %s", tether_last_error());
    }
    assert_int_equal(nb, (uint64_t)n * 4);
    if (vals) {
        assert_int_equal(tether_session_copy_to(s, h, 0, vals, (size_t)n * 4), 0);
    }
    return h;
}

static tether_remote_arg arr(uint64_t h, int packed) {
    tether_remote_arg a;
    a.type_code = packed ? TETHER_TYPE_DLTENSOR : TETHER_TYPE_HANDLE;
    a.v.array = h;
    return a;
}

void check_session_functions(tether_session *s) {
    uint64_t mod = load_testmod(s);
    float a[16], b[16], o[16];
    for (int i = 0; i < 16; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i + 1);
    }
    uint64_t ha = alloc_f32(s, 16, a), hb = alloc_f32(s, 16, b), ho = alloc_f32(s, 16, NULL);
    tether_remote_func f;
    /* packed */
    assert_int_equal(tether_session_get_function(s, mod, "add_packed", &f), 0);
    assert_int_equal(f.abi, TETHER_ABI_PACKED);
    assert_int_equal(f.num_args, 3);
    tether_remote_arg args[17] = {arr(ha, 1), arr(hb, 1), arr(ho, 1)};
    tether_call_result r;
    if (tether_session_call(s, &f, args, 3, &r)) {
        fail_msg("call: %s", tether_last_error());
    }
    assert_int_equal(r.ret, 0);
    /* the function's own bytes: tetherd's call path (hundreds of bytes) is not counted (under
     * AddressSanitizer the trampoline's clock reads go through interceptors that reach deeper
     * than a small function, and that depth is what is left) */
    assert_true(r.stack_bytes > 0);
#if !TETHER_TEST_ASAN
    assert_true(r.stack_bytes < 256);
#endif
    assert_int_equal(tether_session_copy_from(s, ho, 0, o, sizeof o), 0);
    for (int i = 0; i < 16; i++) {
        assert_true(o[i] == a[i] + b[i]);
    }
    /* unpacked */
    assert_int_equal(tether_session_get_function(s, mod, "mul_unpacked", &f), 0);
    assert_int_equal(f.abi, TETHER_ABI_UNPACKED);
    args[0] = arr(ha, 0), args[1] = arr(hb, 0), args[2] = arr(ho, 0);
    assert_int_equal(tether_session_call(s, &f, args, 3, &r), 0);
    assert_int_equal(tether_session_copy_from(s, ho, 0, o, sizeof o), 0);
    for (int i = 0; i < 16; i++) {
        assert_true(o[i] == a[i] * b[i]);
    }
    /* 17 pointer arguments */
    uint64_t in[16];
    for (int k = 0; k < 16; k++) {
        float v[4] = {(float)k, (float)(k * 2), 1.0f, -1.0f};
        in[k] = alloc_f32(s, 4, v);
        args[k] = arr(in[k], 0);
    }
    uint64_t h4 = alloc_f32(s, 4, NULL);
    args[16] = arr(h4, 0);
    assert_int_equal(tether_session_get_function(s, mod, "sum16", &f), 0);
    assert_int_equal(tether_session_call(s, &f, args, 17, &r), 0);
    float o4[4];
    assert_int_equal(tether_session_copy_from(s, h4, 0, o4, sizeof o4), 0);
    assert_true(o4[0] == 120.0f && o4[1] == 240.0f && o4[2] == 16.0f && o4[3] == -16.0f);
    /* stack high-water mark of a function with a 64 KiB local array */
    int64_t one = 1;
    uint64_t hi, nb;
    assert_int_equal(
        tether_session_alloc(s, &one, 1, TETHER_INT32, TETHER_SCOPE_GLOBAL, "", &hi, &nb), 0);
    assert_int_equal(tether_session_get_function(s, mod, "big_stack", &f), 0);
    args[0] = arr(hi, 0);
    assert_int_equal(tether_session_call(s, &f, args, 1, &r), 0);
    assert_true(r.stack_bytes >= 64 * 1024);
    int32_t sum = 0;
    assert_int_equal(tether_session_copy_from(s, hi, 0, &sum, 4), 0);
    int32_t expect = 0;
    for (int i = 0; i < 64 * 1024; i += 4096) {
        expect += (uint8_t)i;
    }
    assert_int_equal(sum, expect);
    /* TIME */
    assert_int_equal(tether_session_get_function(s, mod, "mul_unpacked", &f), 0);
    args[0] = arr(ha, 0), args[1] = arr(hb, 0), args[2] = arr(ho, 0);
    tether_time_stats ts;
    if (tether_session_time(s, &f, args, 3, 5, 3, 0, 0, &ts)) {
        fail_msg("time: %s", tether_last_error());
    }
    assert_int_equal(ts.repeat, 3);
    assert_true(ts.number >= 5);
    assert_true(ts.min <= ts.median && ts.median <= ts.max);
    /* free */
    assert_int_equal(tether_session_free(s, h4), 0);
    assert_true(tether_session_free(s, h4) == TETHER_ERR_NOT_FOUND);
}
