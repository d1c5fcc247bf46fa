/*
 * tether rpc tests (integration): the stdio/pipe transport with the test device running as a
 * child process (tether_transport_spawn); the child's stdin/stdout carry stream frames.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "session.h"
#include "tether/crt.h"

static const char *server_path;

static void test_stdio_child(void **state) {
    (void)state;
    tether_transport t;
    const char *argv[] = {server_path, NULL};
    if (tether_transport_spawn(&t, argv, 0) != 0) {
        fail_msg("spawn %s: %s", server_path, tether_last_error());
    }
    assert_true(t.child_pid > 0);
    assert_int_equal(t.kind, TETHER_TRANSPORT_PIPE);
    session_run(&t, 2 * 1024 * 1024 + 11, false);
    tether_transport_close(&t);
    assert_int_equal(t.child_pid, 0); /* reaped */
}

/* Closing the pipes ends the child (it sees EOF); a missing program is an error. */
static void test_stdio_eof_and_errors(void **state) {
    (void)state;
    tether_transport t;
    const char *argv[] = {server_path, NULL};
    assert_int_equal(tether_transport_spawn(&t, argv, 0), 0);
    int pid = t.child_pid;
    tether_transport_close(&t);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1); /* already reaped by close */
    const char *missing[] = {"tether-no-such-program-xyz", NULL};
    assert_int_equal(tether_transport_spawn(&t, missing, 0), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "tether-no-such-program-xyz"));
    const char *empty[] = {NULL};
    assert_int_equal(tether_transport_spawn(&t, empty, 0), TETHER_ERR_INVALID_ARG);
    /* a child that exits at once: sending eventually fails with EPIPE, never SIGPIPE */
    const char *tru[] = {"true", NULL};
    assert_int_equal(tether_transport_spawn(&t, tru, 0), 0);
    const uint8_t *m;
    size_t n;
    assert_int_equal(tether_transport_recv(&t, &m, &n, 5000), TETHER_ERR_IO);
    static uint8_t big[1 << 20];
    assert_int_equal(tether_transport_send(&t, big, sizeof big, 5000), TETHER_ERR_IO);
    tether_transport_close(&t);
}

/* A child busy in a call (here `sleep`, which never reads its stdin) is killed by
 * tether_transport_kill_spawned's reaper (after its 2 s of grace), the signal handlers' hook; a
 * reaped child is no longer killed. */
static void test_kill_spawned(void **state) {
    (void)state;
    tether_transport t;
    const char *argv[] = {"sleep", "30", NULL};
    assert_int_equal(tether_transport_spawn(&t, argv, 0), 0);
    int pid = t.child_pid;
    assert_int_equal(waitpid(pid, NULL, WNOHANG), 0); /* running */
    tether_transport_kill_spawned();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    tether_transport_close(&t); /* already reaped: close sees ECHILD and forgets it */
    /* a child closed (reaped) before the hook runs is not in its list any more */
    const char *argv2[] = {server_path, NULL};
    assert_int_equal(tether_transport_spawn(&t, argv2, 0), 0);
    tether_transport_close(&t);
    tether_transport_kill_spawned(); /* nothing to kill: no stray kill of a reused pid */
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-rpc_test_server\n", argv[0]);
        return 1;
    }
    server_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stdio_child),
        cmocka_unit_test(test_stdio_eof_and_errors),
        cmocka_unit_test(test_kill_spawned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
