/*
 * tetherd under load: 200 sequential and 16 concurrent sessions on one daemon, each with a
 * packed call checked for the right output; the daemon's fd count (/proc/PID/fd) must be the same
 * after as before and its RSS (/proc/PID/status VmRSS) must not grow by more than 2 MiB; no
 * session process (child of the daemon) may be left over.
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "tether/crt.h"

static int fd_count(pid_t pid) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(p);
    if (!d) {
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

static long rss_kb(pid_t pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return kb;
}

/* Session processes still alive under the daemon (from /proc/PID/task/PID/children). */
static int child_count(pid_t pid) {
    char p[96], buf[4096];
    snprintf(p, sizeof p, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(p, "r");
    if (!f) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    int c = 0;
    for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n")) {
        c++;
    }
    return c;
}

static void wait_no_children(pid_t pid) {
    for (int i = 0; i < 500 && child_count(pid) > 0; i++) {
        usleep(10000);
    }
    assert_int_equal(child_count(pid), 0);
}

static const char *g_url;

/* One short session: system-library null call plus an uploaded-module add, checked. */
static int one_session(int seed) {
    tether_session *s;
    tether_session_options opt = {0};
    opt.timeout_ms = 10000; /* a stuck session fails the test with a message instead of hanging */
    if (tether_session_open(&s, g_url, &opt)) {
        print_error("session %d: open: %s\n", seed, tether_last_error());
        return -1;
    }
    int rc = -1;
    float a[8], b[8], o[8];
    for (int i = 0; i < 8; i++) {
        a[i] = (float)(seed + i), b[i] = (float)(i * 3);
    }
    uint64_t mod, ha, hb, ho;
    int64_t n = 8;
    tether_remote_func f;
    if (tether_session_upload_file(s, 0, "m", k_testmod) ||
        tether_session_load_module(s, "m", &mod, NULL) ||
        tether_session_get_function(s, mod, "add_packed", &f) ||
        tether_session_alloc(s, &n, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &ha, NULL) ||
        tether_session_alloc(s, &n, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &hb, NULL) ||
        tether_session_alloc(s, &n, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &ho, NULL) ||
        tether_session_copy_to(s, ha, 0, a, sizeof a) ||
        tether_session_copy_to(s, hb, 0, b, sizeof b)) {
        goto out;
    }
    tether_remote_arg args[3] = {{TETHER_TYPE_DLTENSOR, {.array = ha}},
                                 {TETHER_TYPE_DLTENSOR, {.array = hb}},
                                 {TETHER_TYPE_DLTENSOR, {.array = ho}}};
    if (tether_session_call(s, &f, args, 3, NULL) ||
        tether_session_copy_from(s, ho, 0, o, sizeof o)) {
        goto out;
    }
    rc = 0;
    for (int i = 0; i < 8; i++) {
        if (o[i] != a[i] + b[i]) {
            rc = -2;
        }
    }
out:
    if (rc == -1) {
        print_error("session %d: %s\n", seed, tether_last_error());
    }
    tether_session_close(s);
    return rc;
}

static void *worker(void *p) {
    intptr_t id = (intptr_t)p;
    intptr_t bad = 0;
    for (int k = 0; k < 4; k++) {
        bad += one_session((int)id * 10 + k) != 0;
    }
    return (void *)bad;
}

static void test_load(void **state) {
    (void)state;
    test_daemon d;
    const char *args[] = {"--quiet", NULL};
    assert_int_equal(daemon_start(&d, args), 0);
    g_url = d.url;
    /* warm up (first allocations of the daemon's libuv loop and libc) */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(one_session(i), 0);
    }
    wait_no_children(d.pid);
    int fd0 = fd_count(d.pid);
    long rss0 = rss_kb(d.pid);
    assert_true(fd0 > 0 && rss0 > 0);
    for (int i = 0; i < 200; i++) {
        if (one_session(i) != 0) {
            fail_msg("sequential session %d failed: %s", i, tether_last_error());
        }
    }
    pthread_t th[16];
    for (intptr_t i = 0; i < 16; i++) {
        assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)i), 0);
    }
    for (int i = 0; i < 16; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        assert_int_equal((intptr_t)bad, 0);
    }
    wait_no_children(d.pid);
    /* the daemon closes a finished session's descriptors after reaping it: give it up to 5 s (a
     * leaked descriptor stays and still fails below) */
    int fd1 = fd_count(d.pid);
    for (int i = 0; i < 500 && fd1 != fd0; i++) {
        usleep(10000);
        fd1 = fd_count(d.pid);
    }
    long rss1 = rss_kb(d.pid);
    print_message("daemon fds %d -> %d, RSS %ld -> %ld KiB\n", fd0, fd1, rss0, rss1);
    assert_int_equal(fd1, fd0);
    /* AddressSanitizer's allocator keeps freed blocks in a quarantine, so the daemon's RSS rises
     * to the quarantine size before it is flat; the bound is larger there. */
#if defined(__SANITIZE_ADDRESS__)
    const long limit_kb = 16384;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    const long limit_kb = 16384;
#else
    const long limit_kb = 2048;
#endif
#else
    const long limit_kb = 2048;
#endif
    assert_true(rss1 - rss0 < limit_kb);
    /* every session directory was removed: the daemon removes one when it reaps the session's
     * process, which may come a moment after the process is gone from /proc, so poll (5 s) */
    char left[300] = "";
    for (int tries = 0; tries < 500; tries++) {
        DIR *dir = opendir(d.dir);
        assert_non_null(dir);
        struct dirent *e;
        left[0] = 0;
        while ((e = readdir(dir)) != NULL) {
            if (strncmp(e->d_name, "tetherd-", 8) == 0) {
                snprintf(left, sizeof left, "%s", e->d_name);
            }
        }
        closedir(dir);
        if (!left[0]) {
            break;
        }
        usleep(10000);
    }
    if (left[0]) {
        fail_msg("session directory %s left behind", left);
    }
    daemon_stop(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_load)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
