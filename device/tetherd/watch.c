/*
 * tetherd: the daemon's side of each session's watch (session.h): the deadlines a session
 * process cannot be trusted to keep itself (an uploaded function may block or ignore any
 * signal). Scanned every 100 ms by the TCP loop and by the UART/stdio wait loop.
 *
 * What must stay true:
 *  - every deadline (a call's timeout, whatever the call does with its signals; a peer that
 *    never sends HELLO/AUTH or goes idle) is enforced from here with SIGKILL to the session's
 *    process group; a call is answered exactly once, by the session's crash report or by the
 *    daemon (compare-and-swap on the watch's phase: only the side that moved the phase answers);
 *  - a session whose own fatal-signal handler is answering (REPORTING) gets KILL_GRACE_MS more
 *    before it is killed, without a second answer;
 *  - only a session that has not got in (no HELLO, or no AUTH with a token) is ever evicted to
 *    make room, the one that waited longest and at least EVICT_AFTER_MS.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "daemon.h"
#include "tether/crt.h"

#define KILL_GRACE_MS  1000 /* after a call's timeout, before the daemon kills its session */
#define EVICT_AFTER_MS 1000 /* a full daemon drops a session not in after this long */

static int g_kill_grace_ms = KILL_GRACE_MS;

/* Kills slot i's session (its whole process group) for `why`; when `id` is non-zero, the call of
 * that id is answered with ERROR(code, text) first. The process is reaped by the caller's
 * usual path (SIGCHLD, or the waitpid loop of the UART and stdio modes). */
static void kill_session(int i, const char *why, uint32_t id, int code, const char *text) {
    tether__child *c = &tether__children[i];
    snprintf(c->why, sizeof c->why, "%s", why);
    kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL);
    if (c->fd >= 0) {
        tetherd_write_error(c->fd, c->kind, id, code, text);
    } else if (c->kind == TETHER_TRANSPORT_UART && id != 0) {
        tether__uart_pending.set = 1;
        tether__uart_pending.id = id;
        tether__uart_pending.code = code;
        snprintf(tether__uart_pending.text, sizeof tether__uart_pending.text, "%s", text);
    }
}

/* Takes slot i's watch from `from` to CONDEMNED; false when the session moved on first. */
static bool condemn(int i, uint32_t from) {
    uint32_t expect = from;
    return __atomic_compare_exchange_n(&tether__watches[i].phase, &expect, TETHERD_PHASE_CONDEMNED,
                                       false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Enforces slot i's deadlines at time `now` (tetherd_now_ns). */
static void watch_check(int i, uint64_t now) {
    tether__child *c = &tether__children[i];
    tetherd_watch *w = &tether__watches[i];
    if (!c->pid || c->why[0]) {
        return;
    }
    uint32_t phase = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE);
    uint64_t deadline = __atomic_load_n(&w->deadline_ns, __ATOMIC_ACQUIRE);
    uint64_t grace = (uint64_t)g_kill_grace_ms * 1000000u;
    char why[512], text[512];
    if (!deadline) {
        return;
    }
    switch (phase) {
    case TETHERD_PHASE_HELLO:
    case TETHERD_PHASE_IDLE:
        if (now < deadline || !condemn(i, phase)) {
            return;
        }
        if (phase == TETHERD_PHASE_HELLO) {
            snprintf(text, sizeof text,
                     "session closed: no HELLO%s within %u ms of connecting (tetherd "
                     "--hello-timeout-ms)",
                     tether__cfg.token ? " and AUTH" : "", (unsigned)tether__cfg.hello_timeout_ms);
        } else {
            snprintf(text, sizeof text,
                     "session closed: no request for %u ms (tetherd --idle-timeout-ms)",
                     (unsigned)tether__cfg.idle_timeout_ms);
        }
        kill_session(i, text + strlen("session closed: "), 0, TETHER_ERR_TIMEOUT, text);
        return;
    case TETHERD_PHASE_CALL:
        if (now < deadline || !condemn(i, phase)) {
            return;
        }
        snprintf(text, sizeof text,
                 "function '%s' did not return within the call timeout (%u ms); the session was "
                 "ended",
                 w->func, (unsigned)w->timeout_ms);
        snprintf(why, sizeof why, "function '%s' did not return within the call timeout (%u ms)",
                 w->func, (unsigned)w->timeout_ms);
        kill_session(i, why, w->call_id, TETHER_ERR_TIMEOUT, text);
        return;
    case TETHERD_PHASE_REPORTING: /* its own handler is answering; give it a little longer */
        if (now >= deadline + grace) {
            kill_session(i, "its fatal-signal handler did not finish", 0, 0, NULL);
        }
        return;
    default:
        return;
    }
}

void tether__watch_scan(void) {
    uint64_t now = tetherd_now_ns();
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        watch_check(i, now);
    }
}

/* A full daemon makes room by dropping the session that has waited longest without getting in
 * (no HELLO, or no AUTH with a token), once it has waited EVICT_AFTER_MS: sockets that send
 * nothing cannot keep a client that authenticates out. */
bool tether__evict_one(void) {
    uint64_t now = tetherd_now_ns(), oldest = UINT64_MAX;
    int victim = -1;
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        tetherd_watch *w = &tether__watches[i];
        if (!tether__children[i].pid || tether__children[i].why[0] ||
            __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE) != TETHERD_PHASE_HELLO) {
            continue;
        }
        if (now - w->started_ns >= (uint64_t)EVICT_AFTER_MS * 1000000u && w->started_ns < oldest) {
            oldest = w->started_ns;
            victim = i;
        }
    }
    if (victim < 0 || !condemn(victim, TETHERD_PHASE_HELLO)) {
        return false;
    }
    char text[200];
    snprintf(text, sizeof text,
             "session closed: not in (no HELLO%s) after %llu ms while every session slot was "
             "taken",
             tether__cfg.token ? "/AUTH" : "", (unsigned long long)((now - oldest) / 1000000u));
    pid_t pid = tether__children[victim].pid;
    kill_session(victim, text + strlen("session closed: "), 0, TETHER_ERR_BUSY, text);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    tether__finish_child(victim, status);
    return true;
}
