/*
 * tetherd: what guards a session process around uploaded code (see session_internal.h):
 * the log line, the daemon's watch (docs/tetherd.md), and the fatal-signal handler.
 *
 * What must stay true:
 *  - the call timeout is the daemon's (the watch): a call costs no system call here; leaving a
 *    call, the session moves CALL -> BUSY and the fatal-signal handler CALL -> REPORTING by
 *    compare-and-swap, so exactly one of the session and the daemon answers a call;
 *  - a fatal signal during a call sends the host one ERROR naming the function and the signal,
 *    then the process dies by that signal; a fault on the call stack's guard page is not a
 *    crash (the guard moves down and the call goes on);
 *  - tetherd_write_error is async-signal-safe (no allocation).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session_internal.h"

/* ---- logging ---- */

void tetherd_log(const tetherd_config *cfg, int level, const char *peer, const char *fmt, ...) {
    if (cfg && level > cfg->verbose) {
        return;
    }
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tetherd[%d] %s: %s\n", (int)getpid(), peer ? peer : "-", buf);
}

/* ---- fatal signals during a call, and the watch ---- */

static volatile sig_atomic_t g_in_call;
static int g_fd_write = -1;
static tether_transport_kind g_kind;
static uint32_t g_call_id;
static char g_func_name[TETHER_RPC_MAX_NAME];
static tetherd_watch *g_watch; /* NULL = the daemon does not watch this session */

uint64_t tetherd_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sets the watch's phase and deadline (deadline first, so the daemon never pairs a new phase
 * with an old deadline). */
void tetherd_watch_set(uint32_t phase, uint64_t deadline_ns) {
    if (!g_watch) {
        return;
    }
    __atomic_store_n(&g_watch->deadline_ns, deadline_ns, __ATOMIC_RELEASE);
    __atomic_store_n(&g_watch->phase, phase, __ATOMIC_RELEASE);
}

/* A request arrived: HELLO/IDLE -> BUSY, unless the daemon has just ended this session for
 * being idle (then nothing more is done here; its SIGKILL follows). */
void tetherd_watch_busy(void) {
    if (!g_watch) {
        return;
    }
    uint32_t expect = __atomic_load_n(&g_watch->phase, __ATOMIC_ACQUIRE);
    if (expect == TETHERD_PHASE_CONDEMNED ||
        !__atomic_compare_exchange_n(&g_watch->phase, &expect, TETHERD_PHASE_BUSY, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        for (;;) {
            pause();
        }
    }
    __atomic_store_n(&g_watch->deadline_ns, 0, __ATOMIC_RELEASE);
}

/* Moves the watch from CALL to `to`; false when the daemon condemned the call first. */
static bool watch_leave_call(uint32_t to) {
    if (!g_watch) {
        return true;
    }
    uint32_t expect = TETHERD_PHASE_CALL;
    return __atomic_compare_exchange_n(&g_watch->phase, &expect, to, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

static const char *sig_name(int sig) {
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGABRT:
        return "SIGABRT";
    default:
        return "signal";
    }
}

/* Writes all of buf to fd with poll (the fd may be non-blocking); async-signal-safe. */
static void write_all_raw(int fd, const uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, 1000) <= 0) {
                return;
            }
        } else {
            return;
        }
    }
}

void tetherd_write_error(int fd, tether_transport_kind kind, uint32_t id, int code,
                         const char *text) {
    uint8_t msg[2048];
    uint8_t frame[TETHER_UART_ENCODED_MAX(2048)];
    tether_rpc_msg m;
    tether_rpc_make_error(&m, id, code, text);
    size_t len = 0;
    if (fd < 0 || tether_rpc_tiny_encode(&m, msg, sizeof msg, &len) != 0) {
        return;
    }
    if (kind == TETHER_TRANSPORT_UART) {
        size_t flen = 0;
        if (tether_uart_frame_encode(msg, len, frame, sizeof frame, &flen) == 0) {
            write_all_raw(fd, frame, flen);
        }
    } else {
        uint8_t hdr[TETHER_STREAM_HEADER_BYTES];
        if (tether_stream_frame_header(hdr, len) == 0) {
            memcpy(frame, hdr, sizeof hdr);
            memcpy(frame + sizeof hdr, msg, len);
            write_all_raw(fd, frame, sizeof hdr + len);
        }
    }
}

static tether_posix_call_stack *g_call_stack; /* its guard faults are not crashes */

static void fatal_handler(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    /* a call going deeper into the dedicated stack than any before: lift the guard, retry */
    if ((sig == SIGSEGV || sig == SIGBUS) && si && g_call_stack &&
        tether_posix_call_stack_fault(g_call_stack, si->si_addr)) {
        return;
    }
    if (g_in_call && g_fd_write >= 0) {
        /* the daemon may have condemned this call already (it answers then): stop here */
        if (!watch_leave_call(TETHERD_PHASE_REPORTING)) {
            for (;;) {
                pause();
            }
        }
        char text[512];
        tether_format(text, sizeof text,
                      "function '%s' crashed with signal %d (%s); the session was ended",
                      g_func_name, sig, sig_name(sig));
        tetherd_write_error(g_fd_write, g_kind, g_call_id, TETHER_ERR_CRASHED, text);
        char line[600];
        size_t n = tether_format(line, sizeof line, "tetherd[%d]: %s\n", (int)getpid(), text);
        if (n >= sizeof line) {
            n = sizeof line - 1;
        }
        write_all_raw(STDERR_FILENO, (const uint8_t *)line, n);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

void tetherd_watch_attach(tetherd_watch *w) {
    g_watch = w;
}

void tetherd_guard_remove(void) {
    g_call_stack = NULL;
}

void tetherd_guard_install(tether_posix_call_stack *stack) {
    g_call_stack = stack;
    static uint8_t altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fatal_handler;
    /* not SA_RESETHAND: a guard fault of the call stack returns and the handler stays */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Before running uploaded code: the fatal-signal handler's context and the watch, through
 * which the daemon bounds the call (it kills the session process at the call timeout and
 * answers the call itself: no timer here, so no system call on the way in or out). */
void tetherd_call_begin(session *s, uint32_t id, const char *name, uint32_t timeout_ms) {
    g_call_id = id;
    size_t n = strnlen(name, sizeof g_func_name - 1); /* no printf on the way to every call */
    memcpy(g_func_name, name, n);
    g_func_name[n] = 0;
    g_fd_write = s->t->fd_write;
    g_kind = s->t->kind;
    if (g_watch) {
        g_watch->call_id = id;
        g_watch->timeout_ms = timeout_ms;
        memcpy(g_watch->func, g_func_name, sizeof g_watch->func);
        tetherd_watch_set(TETHERD_PHASE_CALL,
                          timeout_ms ? tetherd_now_ns() + (uint64_t)timeout_ms * 1000000u : 0);
    }
    g_in_call = 1;
}

/* After the call returned. */
void tetherd_call_end(void) {
    g_in_call = 0;
    if (!watch_leave_call(TETHERD_PHASE_BUSY)) {
        for (;;) { /* the daemon answered this call and is killing the process */
            pause();
        }
    }
}
