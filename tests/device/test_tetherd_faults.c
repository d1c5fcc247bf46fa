/*
 * tetherd faults and errors: a segfaulting, an aborting and a hanging function (short call
 * timeout) each give the host an error naming the function and the signal or timeout, and a new
 * session on the same daemon then works; wrong/missing token, non-loopback bind without a token,
 * oversized upload, unknown function, bad handles and a dtype/shape mismatch are clear errors;
 * the session directories of a tetherd that is gone are swept at start, a live one's are not.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon.h"
#include "tether/crt.h"

static tether_session *open_ok(const char *url, const tether_session_options *o) {
    tether_session *s = NULL;
    if (tether_session_open(&s, url, o)) {
        fail_msg("open %s: %s", url, tether_last_error());
    }
    return s;
}

/* Calls `name` (one int32 argument) and expects `code` with text containing each of words. */
static void expect_fault(const char *url, const char *name, int code, const char *w1,
                         const char *w2) {
    tether_session *s = open_ok(url, NULL);
    uint64_t mod = load_testmod(s);
    tether_remote_func f;
    assert_int_equal(tether_session_get_function(s, mod, name, &f), 0);
    int64_t one = 1;
    uint64_t h, nb;
    assert_int_equal(
        tether_session_alloc(s, &one, 1, TETHER_INT32, TETHER_SCOPE_GLOBAL, "", &h, &nb), 0);
    tether_remote_arg a = {TETHER_TYPE_HANDLE, {.array = h}};
    int rc = tether_session_call(s, &f, &a, 1, NULL);
    const char *e = tether_last_error();
    if (rc != code || !strstr(e, name) || !strstr(e, w1) || (w2 && !strstr(e, w2))) {
        fail_msg("%s: rc %d, message '%s'", name, rc, e);
    }
    /* the session is gone: the next request fails with an I/O error, not a hang */
    assert_true(tether_session_alloc(s, &one, 1, TETHER_INT32, TETHER_SCOPE_GLOBAL, "", &h, &nb) ==
                TETHER_ERR_IO);
    tether_session_close(s);
}

static void test_faults(void **state) {
    (void)state;
    test_daemon d;
    const char *args[] = {"--call-timeout-ms", "300", NULL};
    assert_int_equal(daemon_start(&d, args), 0);
    expect_fault(d.url, "crash", TETHER_ERR_CRASHED, "signal 11", "SIGSEGV");
    expect_fault(d.url, "do_abort", TETHER_ERR_CRASHED, "SIGABRT", NULL);
    expect_fault(d.url, "spin", TETHER_ERR_TIMEOUT, "300 ms", NULL);
    /* the daemon still serves sessions */
    tether_session *s = open_ok(d.url, NULL);
    check_session_functions(s);
    tether_session_close(s);
    char *log = daemon_log(&d);
    assert_non_null(strstr(log, "killed by signal 11"));
    assert_non_null(strstr(log, "killed: function 'spin' did not return within the call timeout"));
    free(log);
    daemon_stop(&d);
}

static void test_auth(void **state) {
    (void)state;
    char tokfile[] = "/tmp/ttokXXXXXX";
    int fd = mkstemp(tokfile);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cret-token\n", 13), 13);
    close(fd);
    test_daemon d;
    const char *args[] = {"--token-file", tokfile, NULL};
    assert_int_equal(daemon_start(&d, args), 0);
    tether_session *s = NULL;
    /* missing token */
    assert_int_equal(tether_session_open(&s, d.url, NULL), TETHER_ERR_AUTH);
    assert_non_null(strstr(tether_last_error(), "token"));
    assert_null(s);
    /* wrong token */
    tether_session_options o = {0};
    o.token = "wrong";
    o.token_len = 5;
    assert_int_equal(tether_session_open(&s, d.url, &o), TETHER_ERR_AUTH);
    assert_non_null(strstr(tether_last_error(), "wrong token"));
    /* right token */
    o.token = "s3cret-token";
    o.token_len = 12;
    s = open_ok(d.url, &o);
    assert_true(tether_session_info(s)->auth_required);
    check_session_functions(s);
    tether_session_close(s);
    char *log = daemon_log(&d);
    assert_non_null(strstr(log, "auth failed"));
    free(log);
    daemon_stop(&d);
    unlink(tokfile);
}

/* Runs tetherd with the given arguments, which it must refuse at start-up (exit code 2, nothing
 * bound); returns its stderr. */
static const char *refused_at_start(const char *const *args) {
    static char buf[1024];
    memset(buf, 0, sizeof buf);
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], STDERR_FILENO);
        execv(k_tetherd, (char *const *)args);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while ((r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0) {
        n += (size_t)r;
    }
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_null(strstr(buf, "listening"));
    return buf;
}

static void test_nonloopback_needs_token(void **state) {
    (void)state;
    /* refused while parsing, before any socket exists: nothing is ever bound */
    const char *const args[] = {"tetherd", "--tcp", "0.0.0.0:0", NULL};
    assert_non_null(strstr(refused_at_start(args), "without a token"));
}

/* A work directory that cannot hold session directories is refused at start-up, not after
 * every connection. */
static void test_bad_work_dir(void **state) {
    (void)state;
    const char *const missing[] = {
        "tetherd", "--tcp", "127.0.0.1:0", "--work-dir", "/nonexistent/tetherd", NULL};
    assert_non_null(strstr(refused_at_start(missing), "--work-dir /nonexistent/tetherd: No such"));
    const char *const file[] = {"tetherd", "--tcp", "127.0.0.1:0", "--work-dir", k_tetherd, NULL};
    assert_non_null(strstr(refused_at_start(file), "not a directory"));
}

/* Entries of dir whose names start with prefix. */
static int count_entries(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    }
    closedir(d);
    return n;
}

/* A tetherd killed with SIGKILL leaves its session directories; the next tetherd on that work
 * directory removes them at start, but never those of a live tetherd (or any live process), nor
 * a directory without a daemon pid in its name. */
static void test_stale_session_dirs(void **state) {
    (void)state;
    test_daemon live;
    assert_int_equal(daemon_start(&live, NULL), 0);
    tether_session *s = open_ok(live.url, NULL); /* its session directory exists while open */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "tetherd-%d-", (int)live.pid);
    for (int i = 0; i < 200 && count_entries(live.dir, prefix) == 0; i++) {
        usleep(10000);
    }
    assert_int_equal(count_entries(live.dir, prefix), 1);
    /* a daemon that is gone: a child that has exited and been reaped */
    pid_t gone = fork();
    if (gone == 0) {
        _exit(0);
    }
    waitpid(gone, NULL, 0);
    char stale[512], file[600], old[512], cmd[1200];
    snprintf(stale, sizeof stale, "%s/tetherd-%d-Ab12Cd", live.dir, (int)gone);
    assert_int_equal(mkdir(stale, 0700), 0);
    snprintf(file, sizeof file, "%s/module.so", stale);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("uploaded bytes", f);
    fclose(f);
    snprintf(old, sizeof old, "%s/tetherd-Xy12Zw", live.dir); /* no pid: cannot tell, kept */
    assert_int_equal(mkdir(old, 0700), 0);
    test_daemon next;
    const char *args[] = {"--work-dir", live.dir, NULL};
    assert_int_equal(daemon_start(&next, args), 0);
    assert_int_not_equal(access(stale, F_OK), 0);         /* swept */
    assert_int_equal(count_entries(live.dir, prefix), 1); /* the live daemon's kept */
    assert_int_equal(access(old, F_OK), 0);               /* kept */
    char *log = daemon_log(&next);
    if (!strstr(log, "removed 1 session directory left in")) {
        fail_msg("no sweep said: %s", log);
    }
    free(log);
    /* the live daemon's session still works */
    int64_t one = 1;
    uint64_t h, nb;
    assert_int_equal(
        tether_session_alloc(s, &one, 1, TETHER_INT32, TETHER_SCOPE_GLOBAL, "", &h, &nb), 0);
    tether_session_close(s);
    daemon_stop(&next);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", old);
    assert_int_equal(system(cmd), 0);
    daemon_stop(&live);
}

static void test_errors(void **state) {
    (void)state;
    test_daemon d;
    const char *args[] = {"--max-upload", "1024", "--max-alloc", "4096", NULL};
    assert_int_equal(daemon_start(&d, args), 0);
    tether_session *s = open_ok(d.url, NULL);
    /* oversized upload */
    assert_int_equal(tether_session_upload_file(s, 0, "testmod", k_testmod), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "upload limit of 1024"));
    /* loading something never uploaded */
    assert_int_equal(tether_session_load_module(s, "testmod", NULL, NULL), TETHER_ERR_NOT_FOUND);
    /* a small non-ELF upload is refused by dlopen with a message */
    assert_int_equal(tether_session_upload(s, 0, "junk", "not an elf", 10), 0);
    assert_int_equal(tether_session_load_module(s, "junk", NULL, NULL), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "dlopen"));
    /* unknown function in the system library */
    tether_remote_func f;
    assert_int_equal(tether_session_get_function(s, 0, "nope", &f), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "'nope'"));
    /* bad handles */
    uint8_t b[8] = {0};
    assert_int_equal(tether_session_copy_to(s, 999, 0, b, 4), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "handle 999"));
    assert_int_equal(tether_session_copy_from(s, 999, 0, b, 4), TETHER_ERR_NOT_FOUND);
    assert_int_equal(tether_session_free(s, 999), TETHER_ERR_NOT_FOUND);
    tether_remote_func bad = {.handle = 999, .abi = TETHER_ABI_PACKED, .num_args = -1};
    assert_int_equal(tether_session_call(s, &bad, NULL, 0, NULL), TETHER_ERR_NOT_FOUND);
    assert_non_null(strstr(tether_last_error(), "function with handle 999"));
    /* out-of-range copy and the allocation limit */
    uint64_t h = alloc_f32(s, 4, NULL);
    assert_int_equal(tether_session_copy_to(s, h, 12, b, 8), TETHER_ERR_LIMIT);
    int64_t big = 2048;
    uint64_t h2;
    assert_int_equal(
        tether_session_alloc(s, &big, 1, TETHER_FLOAT32, TETHER_SCOPE_GLOBAL, "", &h2, NULL),
        TETHER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(tether_last_error(), "session limit"));
    tether_session_close(s);

    /* dtype/shape mismatch and ABI mismatch against a real module */
    daemon_stop(&d);
    assert_int_equal(daemon_start(&d, NULL), 0);
    s = open_ok(d.url, NULL);
    uint64_t mod = load_testmod(s);
    assert_int_equal(tether_session_get_function(s, mod, "missing_fn", &f), TETHER_ERR_NOT_FOUND);
    assert_int_equal(tether_session_get_function(s, mod, "add_packed", &f), 0);
    int64_t n = 8;
    uint64_t hi, hf1 = alloc_f32(s, 8, NULL), hf2 = alloc_f32(s, 8, NULL),
                 hf3 = alloc_f32(s, 4, NULL);
    assert_int_equal(
        tether_session_alloc(s, &n, 1, TETHER_INT32, TETHER_SCOPE_GLOBAL, "", &hi, NULL), 0);
    tether_remote_arg a[3] = {{TETHER_TYPE_DLTENSOR, {.array = hf1}},
                              {TETHER_TYPE_DLTENSOR, {.array = hi}},
                              {TETHER_TYPE_DLTENSOR, {.array = hf2}}};
    assert_int_equal(tether_session_call(s, &f, a, 3, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "dtype must be float32"));
    a[1].v.array = hf3;
    assert_int_equal(tether_session_call(s, &f, a, 3, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "shape"));
    assert_int_equal(tether_session_call(s, &f, a, 2, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "takes 3 arguments"));
    tether_remote_func wrong = f;
    wrong.abi = TETHER_ABI_UNPACKED;
    assert_int_equal(tether_session_call(s, &wrong, a, 3, NULL), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "ABI"));
    tether_session_close(s);
    daemon_stop(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_nonloopback_needs_token),
        cmocka_unit_test(test_bad_work_dir),
        cmocka_unit_test(test_stale_session_dirs),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
