/*
 * tetherd: the UART and stdio modes of the daemon (daemon.h): one session process at a time,
 * waited for in a loop that also scans its watch (watch.c). On a UART a new session process is
 * started when one ends; --stdio serves one session for the host that started tetherd (local:).
 *
 * What must stay true:
 *  - the daemon does not hold the serial line: a call it answered by killing its session is
 *    answered by the next session process, first thing (tether__uart_pending);
 *  - a UART that cannot be opened ends the daemon (status 1) instead of a loop of restarts;
 *  - under --stdio the session process owns stdin/stdout (the daemon keeps a copy of stdout only
 *    to answer a call it had to kill), and when the host goes away or a signal reaches the
 *    group, the session process is killed and reaped, so its directory is removed;
 *  - a stop request gives the session SIGTERM, then SIGKILL two seconds later.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "tether/crt.h"

static void run_stdio_session(void *p, const char *dir) {
    (void)p;
    tether_transport t;
    if (tether_transport_stdio_open(&t, 0)) {
        tetherd_log(&tether__cfg, -1, "stdio", "transport: %s", tether_last_error());
        _exit(1);
    }
    int rc = tetherd_session_run(&tether__cfg, &t, dir, "stdio");
    tether_transport_close(&t);
    _exit(rc ? 1 : 0);
}

typedef struct uart_ctx {
    const char *path;
    uint32_t baud;
} uart_ctx;

static void run_uart_session(void *p, const char *dir) {
    uart_ctx *u = p;
    tether_transport t;
    if (tether_transport_uart_open(&t, u->path, u->baud, 0)) {
        tetherd_log(&tether__cfg, -1, u->path, "cannot open: %s", tether_last_error());
        _exit(3);
    }
    if (tether__uart_pending.set) { /* the answer to the call the last session was killed in */
        tetherd_write_error(t.fd_write, TETHER_TRANSPORT_UART, tether__uart_pending.id,
                            tether__uart_pending.code, tether__uart_pending.text);
    }
    int rc = tetherd_session_run(&tether__cfg, &t, dir, u->path);
    tether_transport_close(&t);
    _exit(rc ? 1 : 0);
}

static volatile sig_atomic_t g_stop;
static void stop_handler(int sig) {
    (void)sig;
    g_stop = 1;
}

/* Waits for the one session process of the UART and stdio modes, enforcing its watch (a call
 * that defeats its own timer) meanwhile; on a stop request (g_stop) its group gets SIGTERM,
 * then SIGKILL two seconds later. Finishes the child's slot; returns its wait status. */
static int wait_session(pid_t pid) {
    int status = 0, stop_ticks = -1;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if (r < 0 && errno != EINTR) {
            break;
        }
        tether__watch_scan();
        if (g_stop && stop_ticks < 0) {
            kill(-pid, SIGTERM);
            kill(pid, SIGTERM);
            stop_ticks = 0;
        } else if (stop_ticks >= 0 && ++stop_ticks == 40) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        if (tether__children[i].pid == pid) {
            tether__finish_child(i, status);
        }
    }
    return status;
}

int tether__serve_uart(const char *path, uint32_t baud) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop_handler;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    uart_ctx u = {path, baud};
    tetherd_log(&tether__cfg, 0, path, "serving sessions at %u baud", (unsigned)baud);
    while (!g_stop) {
        pid_t pid =
            tether__spawn_session(path, -1, -1, TETHER_TRANSPORT_UART, false, run_uart_session, &u);
        if (pid < 0) {
            return 1;
        }
        tether__uart_pending.set = 0; /* the new session has it */
        int status = wait_session(pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
            return 1; /* the device cannot be opened: do not spin */
        }
    }
    return 0;
}

/* --stdio: tetherd is a child of the host. When the host goes away (or a Ctrl-C reaches the
 * whole process group), the session process is killed and reaped, so its directory is removed
 * instead of a call running on for nobody. */
static void stdio_stop_session(int sig) {
    (void)sig;
    if (tether__children[0].pid > 0) {
        kill(-tether__children[0].pid, SIGKILL);
        kill(tether__children[0].pid, SIGKILL);
    }
}

int tether__serve_stdio(void) {
    pid_t host = getppid();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stdio_stop_session;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != host) { /* the host died before the line above */
        return 1;
    }
    /* the daemon keeps a copy of stdout to answer a call whose session it had to kill */
    int mine = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    pid_t pid = tether__spawn_session("stdio", -1, mine, TETHER_TRANSPORT_PIPE, false,
                                      run_stdio_session, NULL);
    if (pid < 0) {
        return 1;
    }
    /* the session child owns stdin/stdout now */
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    int status = wait_session(pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
