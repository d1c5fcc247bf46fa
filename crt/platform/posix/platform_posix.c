/*
 * POSIX implementations of the crt platform hooks. All weak, so that tests and embedders can
 * replace any one of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tether/crt/platform.h"

#define TETHER_WEAK __attribute__((weak))

TETHER_WEAK uint64_t tether_platform_time_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* POSIX gives no portable cycle counter; the monotonic clock in ns stands in at 1 GHz. */
TETHER_WEAK uint64_t tether_platform_cycles(void) {
    return tether_platform_time_ns();
}

TETHER_WEAK uint64_t tether_platform_cycles_hz(void) {
    return 1000000000u;
}

TETHER_WEAK void tether_platform_abort(int status) {
    fprintf(stderr, "tether: abort (status %d)\n", status);
    abort();
}

TETHER_WEAK void tether_platform_log(tether_log_level level, const char *msg) {
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *name = (unsigned)level < 4 ? names[level] : "log";
    fprintf(stderr, "tether %s: %s\n", name, msg);
}
