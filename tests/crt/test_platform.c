/* Unit tests: the POSIX platform hooks (clock, cycles, abort, log) and their weak linkage. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt.h"

static void clock_is_monotonic_and_in_ns(void **state) {
    (void)state;
    uint64_t t0 = tether_platform_time_ns();
    struct timespec pause = {0, 2000000}; /* 2 ms */
    nanosleep(&pause, NULL);
    uint64_t t1 = tether_platform_time_ns();
    assert_true(t1 > t0);
    assert_true(t1 - t0 >= 2000000u);
    assert_true(t1 - t0 < 2000000000u);
    assert_int_equal(tether_platform_cycles_hz(), 1000000000u);
    uint64_t c0 = tether_platform_cycles();
    uint64_t c1 = tether_platform_cycles();
    assert_true(c1 >= c0);
}

static void abort_hook_stops_the_process(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* keep the child's abort message out of the test log */
        close(2);
        tether_platform_abort(TETHER_ERR_INTERNAL);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void log_hook_writes_stderr_line(void **state) {
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    tether_log(TETHER_LOG_WARN, "pool %s is %d%% full", "sram", 93);
    tether_log(TETHER_LOG_DEBUG, "not shown at the default level");
    dup2(saved, 2);
    close(saved);
    close(fds[1]);
    char buf[256] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    assert_true(n > 0);
    assert_string_equal(buf, "tether warn: pool sram is 93% full\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clock_is_monotonic_and_in_ns),
        cmocka_unit_test(abort_hook_stops_the_process),
        cmocka_unit_test(log_hook_writes_stderr_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
