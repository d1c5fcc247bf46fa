/*
 * Test helpers for the tetherd tests: start a daemon on 127.0.0.1 with a port file, stop it,
 * read its stderr log, and common session steps (open, upload the test module, make arrays).
 */
#ifndef TETHER_TEST_DAEMON_H
#define TETHER_TEST_DAEMON_H

#include <stdint.h>
#include <sys/types.h>

#include "tether/host.h"

typedef struct test_daemon {
    pid_t pid;
    char dir[256];
    char log[300];
    int port;
    char url[64];
} test_daemon;

/* Starts tetherd with extra arguments (NULL-terminated) plus --tcp 127.0.0.1:0 --port-file.
 * Returns 0 once the port is known. */
int daemon_start(test_daemon *d, const char *const *extra);
void daemon_stop(test_daemon *d);
/* Reads the daemon's log into a malloc'ed string. */
char *daemon_log(const test_daemon *d);

/* Uploads and loads the test module; returns the module handle (fails the test otherwise). */
uint64_t load_testmod(tether_session *s);
/* Allocates float32 [n] and copies vals in (vals may be NULL). */
uint64_t alloc_f32(tether_session *s, int64_t n, const float *vals);

/* The full functional check (packed, unpacked, 17 args, time, stack HWM) on an open session. */
void check_session_functions(tether_session *s);

extern const char *const k_tetherd;
extern const char *const k_testmod;

#endif
