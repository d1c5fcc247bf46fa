/*
 * tetherd: the POSIX device server. Listens on TCP (libuv), a UART, or its own stdin/stdout, and
 * serves each host session in a forked child process (see session.h).
 *
 * What must stay true:
 *  - a non-loopback bind without a token is refused before any socket is created, unless
 *    --insecure was given (which prints a warning);
 *  - the daemon never runs uploaded code itself: every session is a child process (leader of its
 *    own process group), reaped with waitpid (no zombies); its private 0700 directory is
 *    removed after it has been reaped;
 *  - the daemon keeps one copy of each session's connection until it has reaped the session (no
 *    fd growth past the live sessions), so that it can answer a call for a session it had to
 *    kill; a child closes every inherited descriptor except its own connection and stdio;
 *  - every deadline (a call's timeout, whatever the call does with its signals; a peer that
 *    never sends HELLO/AUTH or goes idle) is enforced from the daemon through the session's
 *    watch (session.h) with SIGKILL to its process group; a call is answered exactly once, by
 *    the session's crash report or by the daemon (compare-and-swap on the watch's phase);
 *  - a client refused for want of a session slot is told so ("busy: N of N sessions in use")
 *    before its connection is closed;
 *  - session directories are named after the daemon (tetherd-<pid>-XXXXXX); at start the
 *    directories of daemons that are gone (killed with SIGKILL) are removed, never those of a
 *    live process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "session.h"
#ifdef TETHERD_HAVE_OPENCL
#include "opencl.h"
#endif
#include "tether/crt.h"
#include "tether/file.h"

#define MAX_CHILDREN   256
#define KILL_GRACE_MS  1000 /* after a call's timeout, before the daemon kills its session */
#define EVICT_AFTER_MS 1000 /* a full daemon drops a session not in after this long */

typedef struct child {
    pid_t pid;
    int fd; /* the daemon's copy of the connection, to answer for a killed session (-1 = none) */
    tether_transport_kind kind;
    char dir[512];
    char peer[96];
    char why[512]; /* why the daemon killed it ("" = it ended by itself) */
} child;

static tetherd_config g_cfg;
static child g_children[MAX_CHILDREN];
static tetherd_watch *g_watches; /* MAX_CHILDREN, shared with the session processes */
static int g_kill_grace_ms = KILL_GRACE_MS;
/* UART: a call the daemon answered by killing its session; the next session process sends the
 * ERROR first (the daemon does not hold the serial line). */
static struct {
    int set;
    uint32_t id;
    int code;
    char text[512];
} g_uart_pending;
static const char *g_work_base;
static unsigned g_max_sessions = 64;
static uv_loop_t *g_loop;
static tether_tcp_listener *g_listener;

static void usage(FILE *f) {
    fprintf(f, "usage: tetherd [--tcp HOST:PORT | --uart PATH [--baud N] | --stdio] [options]\n"
               "  --tcp HOST:PORT        listen on TCP (default 127.0.0.1:9090; port 0 = any)\n"
               "  --uart PATH            serve sessions on a serial device (UART framing)\n"
               "  --baud N               UART baud rate (default 115200)\n"
               "  --stdio                serve one session on stdin/stdout (used by local:)\n"
               "  --token-file FILE      shared token for HMAC challenge-response auth\n"
               "  --insecure             allow a non-loopback bind without a token (warns)\n"
               "  --port-file FILE       write the bound TCP port to FILE\n"
               "  --max-upload BYTES     per-upload limit (default 64 MiB)\n"
               "  --max-alloc BYTES      per-session allocation limit (default 1 GiB)\n"
               "  --pool NAME[:SIZE]     a named memory pool listed in HELLO (repeatable; SIZE\n"
               "                         bytes with K/M/G bounds what a session holds in it);\n"
               "                         ALLOC in other pools is refused (default: one pool\n"
               "                         \"dram\")\n"
               "  --max-sessions N       concurrent sessions (default 64)\n"
               "  --call-timeout-ms MS   CALL/TIME limit, 0 = none (default 60000); the\n"
               "                         daemon kills a call that outlives it\n"
               "  --hello-timeout-ms MS  a TCP client must send HELLO (and AUTH) within MS of\n"
               "                         connecting (default 10000, 0 = no limit)\n"
               "  --idle-timeout-ms MS   a TCP session that sends no request for MS ends\n"
               "                         (default 600000, 0 = no limit)\n"
               "  --stack-size BYTES     dedicated call stack (default 256 KiB)\n"
               "  --work-dir DIR         where session directories are made (default $TMPDIR)\n"
               "  --upload-cache DIR|off uploads kept by SHA-256 across sessions, so a repeated\n"
               "                         upload sends no bytes (default $TETHER_UPLOAD_CACHE,\n"
               "                         else $XDG_CACHE_HOME or ~/.cache, /tether/uploads)\n"
               "  --upload-cache-size BYTES  its limit, oldest-used out first (default 512M)\n"
               "  --no-opencl            do not offer the OpenCL layer (texture scopes, kernels)\n"
               "  --quiet | --verbose    less / more logging on stderr\n"
               "  --version              print the version and exit\n");
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        return -1;
    }
    *out = v;
    return 0;
}

/* Bytes with an optional K/M/G suffix (powers of 1024); 0 or -1. */
static int parse_size(const char *text, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    uint64_t mul = *end == 'K' ? 1024u : *end == 'M' ? 1024u * 1024u : *end == 'G' ? 1u << 30 : 1;
    if (mul != 1) {
        end++;
    }
    if (errno || end == text || *end || text[0] == '-' || v > UINT64_MAX / mul) {
        return -1;
    }
    *out = v * mul;
    return 0;
}

/* --pool NAME[:SIZE]: SIZE in bytes with an optional K/M/G suffix (powers of 1024). */
static int add_pool(const char *spec) {
    if (g_cfg.npools >= (int)TETHER_RPC_MAX_POOLS) {
        fprintf(stderr, "tetherd: at most %d --pool options\n", TETHER_RPC_MAX_POOLS);
        return -1;
    }
    char name[TETHER_POOL_NAME_MAX];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    if (n >= sizeof name) {
        fprintf(stderr, "tetherd: --pool '%s': name longer than %d\n", spec,
                TETHER_POOL_NAME_MAX - 1);
        return -1;
    }
    memcpy(name, spec, n);
    name[n] = 0;
    if (tether_pool_name_check(name)) {
        fprintf(stderr, "tetherd: --pool '%s': %s\n", spec, tether_last_error());
        return -1;
    }
    uint64_t cap = 0;
    if (colon && (parse_size(colon + 1, &cap) || cap == 0)) {
        fprintf(stderr, "tetherd: --pool '%s': SIZE is bytes > 0 with an optional K, M or G\n",
                spec);
        return -1;
    }
    for (int i = 0; i < g_cfg.npools; i++) {
        if (strcmp(g_cfg.pool_name[i], name) == 0) {
            fprintf(stderr, "tetherd: --pool '%s' is given twice\n", name);
            return -1;
        }
    }
    snprintf(g_cfg.pool_name[g_cfg.npools], sizeof g_cfg.pool_name[0], "%s", name);
    g_cfg.pool_capacity[g_cfg.npools++] = cap;
    return 0;
}

/* Resolves the bind address once and decides on what it resolved to (a name is never trusted
 * by its text: "127.x.example" may point anywhere); the listener then binds exactly that
 * numeric address. 1 = loopback, 0 = not, -1 = cannot resolve (message printed). */
static int resolve_bind(const char *host, char *numeric, size_t size) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int e = getaddrinfo(host[0] ? host : NULL, "0", &hints, &res);
    if (e != 0 || !res) {
        fprintf(stderr, "tetherd: --tcp: cannot resolve '%s': %s\n", host, gai_strerror(e));
        return -1;
    }
    int loop = 0;
    const struct sockaddr *sa = res->ai_addr;
    if (sa->sa_family == AF_INET) {
        const uint8_t *b = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
        loop = b[0] == 127;
    } else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        loop = IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    e = getnameinfo(sa, res->ai_addrlen, numeric, (socklen_t)size, NULL, 0, NI_NUMERICHOST);
    freeaddrinfo(res);
    if (e != 0) {
        fprintf(stderr, "tetherd: --tcp: cannot use the address of '%s': %s\n", host,
                gai_strerror(e));
        return -1;
    }
    return loop;
}

static int read_token(const char *path, char **tok, size_t *len) {
    uint8_t *data;
    size_t n;
    if (tether_file_read(path, 4096, &data, &n)) {
        fprintf(stderr, "tetherd: token file: %s\n", tether_last_error());
        return -1;
    }
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077)) {
        fprintf(stderr, "tetherd: warning: token file %s is readable by other users\n", path);
    }
    char *buf = (char *)data;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) {
        n--;
    }
    if (n == 0) {
        fprintf(stderr, "tetherd: token file %s is empty\n", path);
        free(data);
        return -1;
    }
    *tok = buf; /* the caller frees it */
    *len = n;
    return 0;
}

/* Removes a session directory and the files in it (it holds no subdirectories). */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Session directories are named tetherd-<daemon pid>-XXXXXX, so that a daemon starting later can
 * tell the directories of a daemon that is gone (killed with SIGKILL: it could not clean up). */
static int make_session_dir(char *out, size_t size) {
    snprintf(out, size, "%s/tetherd-%ld-XXXXXX", g_work_base, (long)getpid());
    if (!mkdtemp(out)) { /* mkdtemp creates it 0700 */
        fprintf(stderr, "tetherd: cannot create a session directory in %s: %s\n", g_work_base,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* At start: removes the session directories in the work directory whose daemon is gone
 * (tetherd-<pid>-XXXXXX with no process <pid>; its session processes died with it). A directory
 * of a live process (another tetherd's, whatever its user), one that is not a plain directory of
 * this user, or one without a daemon pid in its name is left alone. Returns how many went. */
static int sweep_stale_session_dirs(void) {
    DIR *d = opendir(g_work_base);
    if (!d) {
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        char rest[64];
        if (sscanf(e->d_name, "tetherd-%ld-%63s", &pid, rest) != 2 || pid <= 1 ||
            strlen(rest) != 6 || pid == (long)getpid()) {
            continue;
        }
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
            continue; /* alive (or not ours to ask about): never touched */
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid()) {
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", g_work_base, e->d_name);
        remove_dir(path);
        n += access(path, F_OK) != 0;
    }
    closedir(d);
    return n;
}

static void describe_status(int status, char *buf, size_t size) {
    if (WIFEXITED(status)) {
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(buf, size, "status %d", status);
    }
}

/* A session process has ended: say how, answer its call if it died inside one (an exit() or a
 * kill the session's own handlers could not report), free its slot and remove its directory. */
static void finish_child(int i, int status) {
    child *c = &g_children[i];
    tetherd_watch *w = &g_watches[i];
    char how[128];
    describe_status(status, how, sizeof how);
    uint32_t phase = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE);
    if (c->why[0]) {
        tetherd_log(&g_cfg, 0, c->peer, "session process %d killed: %s", (int)c->pid, c->why);
    } else if (phase == TETHERD_PHASE_CALL) {
        char text[512];
        snprintf(text, sizeof text,
                 "function '%s' ended the session process (%s) during the call; the session was "
                 "ended",
                 w->func, how);
        tetherd_log(&g_cfg, 0, c->peer, "session process %d: %s", (int)c->pid, text);
        if (c->fd >= 0) {
            tetherd_write_error(c->fd, c->kind, w->call_id, TETHER_ERR_CRASHED, text);
        } else if (c->kind == TETHER_TRANSPORT_UART) {
            g_uart_pending.set = 1;
            g_uart_pending.id = w->call_id;
            g_uart_pending.code = TETHER_ERR_CRASHED;
            snprintf(g_uart_pending.text, sizeof g_uart_pending.text, "%s", text);
        }
    } else {
        tetherd_log(&g_cfg, (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 1 : 0, c->peer,
                    "session process %d %s", (int)c->pid, how);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
    remove_dir(c->dir);
    c->pid = 0;
    c->why[0] = 0;
}

static void reap_children(int block) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
        if (pid <= 0) {
            return;
        }
        for (int i = 0; i < MAX_CHILDREN; i++) {
            if (g_children[i].pid == pid) {
                finish_child(i, status);
            }
        }
        if (block) {
            return;
        }
    }
}

static unsigned live_children(void) {
    unsigned n = 0;
    for (int i = 0; i < MAX_CHILDREN; i++) {
        n += g_children[i].pid != 0;
    }
    return n;
}

/* Kills slot i's session (its whole process group) for `why`; when `id` is non-zero, the call of
 * that id is answered with ERROR(code, text) first. The process is reaped by the caller's
 * usual path (SIGCHLD, or the waitpid loop of the UART and stdio modes). */
static void kill_session(int i, const char *why, uint32_t id, int code, const char *text) {
    child *c = &g_children[i];
    snprintf(c->why, sizeof c->why, "%s", why);
    kill(-c->pid, SIGKILL);
    kill(c->pid, SIGKILL);
    if (c->fd >= 0) {
        tetherd_write_error(c->fd, c->kind, id, code, text);
    } else if (c->kind == TETHER_TRANSPORT_UART && id != 0) {
        g_uart_pending.set = 1;
        g_uart_pending.id = id;
        g_uart_pending.code = code;
        snprintf(g_uart_pending.text, sizeof g_uart_pending.text, "%s", text);
    }
}

/* Takes slot i's watch from `from` to CONDEMNED; false when the session moved on first. */
static bool condemn(int i, uint32_t from) {
    uint32_t expect = from;
    return __atomic_compare_exchange_n(&g_watches[i].phase, &expect, TETHERD_PHASE_CONDEMNED, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* Enforces slot i's deadlines at time `now` (tetherd_now_ns). */
static void watch_check(int i, uint64_t now) {
    child *c = &g_children[i];
    tetherd_watch *w = &g_watches[i];
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
                     g_cfg.token ? " and AUTH" : "", (unsigned)g_cfg.hello_timeout_ms);
        } else {
            snprintf(text, sizeof text,
                     "session closed: no request for %u ms (tetherd --idle-timeout-ms)",
                     (unsigned)g_cfg.idle_timeout_ms);
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

static void watch_scan(void) {
    uint64_t now = tetherd_now_ns();
    for (int i = 0; i < MAX_CHILDREN; i++) {
        watch_check(i, now);
    }
}

/* In a forked session child: default signal dispositions, its own process group, die with the
 * daemon, and close every inherited descriptor except stdio and `keep` (-1 = none). */
static void child_setup(int keep) {
    signal(SIGCHLD, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (keep < 0) {
        close_range(3, ~0u, 0);
    } else {
        if (keep > 3) {
            close_range(3, (unsigned)keep - 1, 0);
        }
        close_range((unsigned)keep + 1, ~0u, 0);
    }
}

/* Forks a session process. run(ctx, dir) runs in the child. `fd` is the daemon's copy of the
 * connection (owned by the slot from now on, -1 = none) and `kind` its framing. Returns the
 * pid or -1 (fd closed). */
static pid_t spawn_session(const char *peer, int keep_fd, int fd, tether_transport_kind kind,
                           bool tcp, void (*run)(void *, const char *), void *ctx) {
    int slot = -1;
    for (int i = 0; i < MAX_CHILDREN && slot < 0; i++) {
        if (!g_children[i].pid) {
            slot = i;
        }
    }
    if (slot < 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    child *c = &g_children[slot];
    if (make_session_dir(c->dir, sizeof c->dir)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->fd = fd;
    c->kind = kind;
    c->why[0] = 0;
    tetherd_watch *w = &g_watches[slot];
    memset(w, 0, sizeof *w);
    w->started_ns = tetherd_now_ns();
    /* only TCP sessions compete for slots: HELLO and idle deadlines apply to them alone */
    if (tcp && g_cfg.hello_timeout_ms) {
        w->deadline_ns = w->started_ns + (uint64_t)g_cfg.hello_timeout_ms * 1000000u;
    }
    __atomic_store_n(&w->phase, TETHERD_PHASE_HELLO, __ATOMIC_RELEASE);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        tetherd_log(&g_cfg, -1, peer, "fork failed: %s", strerror(errno));
        remove_dir(c->dir);
        if (fd >= 0) {
            close(fd);
        }
        c->fd = -1;
        return -1;
    }
    if (pid == 0) {
        child_setup(keep_fd);
        g_cfg.watch = w;
        if (!tcp) {
            g_cfg.hello_timeout_ms = 0;
            g_cfg.idle_timeout_ms = 0;
        }
        run(ctx, c->dir);
        _exit(0);
    }
    setpgid(pid, pid); /* also here, so a kill right after the fork reaches the group */
    c->pid = pid;
    return pid;
}

/* ---- TCP ---- */

typedef struct tcp_ctx {
    int fd;
    const char *peer;
} tcp_ctx;

static void run_tcp_session(void *p, const char *dir) {
    tcp_ctx *c = p;
    tether_transport t;
    if (tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, c->fd, c->fd, 0, true)) {
        tetherd_log(&g_cfg, -1, c->peer, "transport: %s", tether_last_error());
        _exit(1);
    }
    int rc = tetherd_session_run(&g_cfg, &t, dir, c->peer);
    tether_transport_close(&t);
    _exit(rc ? 1 : 0);
}

/* A refused connection is told why, then kept open (reading and dropping what the client
 * sends) until the client closes it or a few seconds pass: closing a socket with unread input
 * sends a reset, which can reach the client before the ERROR does. */
#define MAX_REFUSALS      64
#define REFUSAL_LINGER_MS 3000
typedef struct refusal {
    uv_poll_t poll;
    uv_timer_t timer;
    int fd;
    int handles; /* open libuv handles; freed at 0 */
    unsigned slot;
} refusal;
static refusal *g_refusal[MAX_REFUSALS];

static void refusal_closed(uv_handle_t *h) {
    refusal *r = h->data;
    if (--r->handles == 0) {
        close(r->fd);
        g_refusal[r->slot] = NULL;
        free(r);
    }
}

static void refusal_end(refusal *r) {
    if (!uv_is_closing((uv_handle_t *)&r->poll)) {
        uv_close((uv_handle_t *)&r->poll, refusal_closed);
    }
    if (!uv_is_closing((uv_handle_t *)&r->timer)) {
        uv_close((uv_handle_t *)&r->timer, refusal_closed);
    }
}

static void refusal_readable(uv_poll_t *p, int status, int events) {
    (void)events;
    refusal *r = p->data;
    char scratch[4096];
    ssize_t n = status < 0 ? -1 : recv(r->fd, scratch, sizeof scratch, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        refusal_end(r);
    }
}

static void refusal_timeout(uv_timer_t *t) {
    refusal_end(t->data);
}

static void refuse(int fd, const char *text) {
    tetherd_write_error(fd, TETHER_TRANSPORT_TCP, 0, TETHER_ERR_BUSY, text);
    shutdown(fd, SHUT_WR);
    unsigned slot = 0;
    while (slot < MAX_REFUSALS && g_refusal[slot]) {
        slot++;
    }
    refusal *r = slot < MAX_REFUSALS ? calloc(1, sizeof *r) : NULL;
    if (!r || uv_poll_init(g_loop, &r->poll, fd) != 0) {
        free(r);
        close(fd);
        return;
    }
    g_refusal[slot] = r;
    r->slot = slot;
    r->fd = fd;
    r->handles = 2;
    r->poll.data = r;
    r->timer.data = r;
    uv_timer_init(g_loop, &r->timer);
    uv_poll_start(&r->poll, UV_READABLE | UV_DISCONNECT, refusal_readable);
    uv_timer_start(&r->timer, refusal_timeout, REFUSAL_LINGER_MS, 0);
}

/* A full daemon makes room by dropping the session that has waited longest without getting in
 * (no HELLO, or no AUTH with a token), once it has waited EVICT_AFTER_MS: sockets that send
 * nothing cannot keep a client that authenticates out. */
static bool evict_one(void) {
    uint64_t now = tetherd_now_ns(), oldest = UINT64_MAX;
    int victim = -1;
    for (int i = 0; i < MAX_CHILDREN; i++) {
        tetherd_watch *w = &g_watches[i];
        if (!g_children[i].pid || g_children[i].why[0] ||
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
             g_cfg.token ? "/AUTH" : "", (unsigned long long)((now - oldest) / 1000000u));
    pid_t pid = g_children[victim].pid;
    kill_session(victim, text + strlen("session closed: "), 0, TETHER_ERR_BUSY, text);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    finish_child(victim, status);
    return true;
}

static void on_accept(void *ctx, int fd, const char *peer) {
    (void)ctx;
    reap_children(0);
    if (live_children() >= g_max_sessions && !evict_one()) {
        char text[160];
        snprintf(text, sizeof text,
                 "busy: %u of %u sessions in use (tetherd --max-sessions); try again later",
                 live_children(), g_max_sessions);
        tetherd_log(&g_cfg, 0, peer, "refused: %s", text);
        refuse(fd, text);
        return;
    }
    tetherd_log(&g_cfg, 0, peer, "connect");
    tcp_ctx c = {fd, peer};
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (mine < 0) {
        tetherd_log(&g_cfg, -1, peer, "cannot keep a copy of the connection: %s", strerror(errno));
    }
    spawn_session(peer, fd, mine, TETHER_TRANSPORT_TCP, true, run_tcp_session, &c);
    close(fd);
}

static void on_watch_timer(uv_timer_t *t) {
    (void)t;
    watch_scan();
}

/* Stopping the daemon: SIGTERM to every session's group, SIGKILL to those still there after
 * two seconds (an uploaded function may block SIGTERM), and reap them all. */
static void stop_children(void) {
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (g_children[i].pid) {
            kill(-g_children[i].pid, SIGTERM);
            kill(g_children[i].pid, SIGTERM);
        }
    }
    for (int tick = 0; live_children() && tick < 200; tick++) {
        reap_children(0);
        if (live_children()) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (g_children[i].pid) {
            kill(-g_children[i].pid, SIGKILL);
            kill(g_children[i].pid, SIGKILL);
        }
    }
    while (live_children()) {
        reap_children(1);
    }
}

static void on_sigchld(uv_signal_t *h, int sig) {
    (void)h, (void)sig;
    reap_children(0);
}

static void on_stop(uv_signal_t *h, int sig) {
    (void)h;
    tetherd_log(&g_cfg, 0, NULL, "stopping on signal %d", sig);
    if (g_listener) {
        tether_tcp_listener_close(g_listener);
    }
    g_listener = NULL;
    uv_stop(g_loop);
}

static void close_walk(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static int serve_tcp(const char *spec, const char *port_file, int insecure) {
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host) {
        fprintf(stderr, "tetherd: --tcp wants HOST:PORT, got '%s'\n", spec);
        return 2;
    }
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    uint64_t port;
    if (parse_u64(colon + 1, &port) || port > 65535) {
        fprintf(stderr, "tetherd: bad port in '%s'\n", spec);
        return 2;
    }
    char addr[INET6_ADDRSTRLEN + 8];
    int loopback = resolve_bind(host, addr, sizeof addr);
    if (loopback < 0) {
        return 2;
    }
    if (!loopback) {
        if (!g_cfg.token && !insecure) {
            fprintf(stderr,
                    "tetherd: refusing to listen on non-loopback address %s%s%s%s without a "
                    "token: give --token-file FILE (or --insecure to accept anyone)\n",
                    host, strcmp(host, addr) ? " (" : "", strcmp(host, addr) ? addr : "",
                    strcmp(host, addr) ? ")" : "");
            return 2;
        }
        if (!g_cfg.token) {
            fprintf(stderr,
                    "tetherd: WARNING: --insecure: anyone who can reach %s:%u can run "
                    "code on this machine\n",
                    host, (unsigned)port);
        }
    }
    g_loop = uv_default_loop();
    if (tether_tcp_listen(g_loop, addr, (uint16_t)port, on_accept, NULL, &g_listener)) {
        fprintf(stderr, "tetherd: cannot listen on %s: %s\n", spec, tether_last_error());
        return 1;
    }
    unsigned bound = tether_tcp_listener_port(g_listener);
    tetherd_log(&g_cfg, 0, NULL, "listening on %s port %u%s", addr, bound,
                g_cfg.token ? " (auth required)" : "");
    if (port_file) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%u\n", bound) < 0 || fclose(f) || rename(tmp, port_file)) {
            fprintf(stderr, "tetherd: cannot write port file %s\n", port_file);
            return 1;
        }
    }
    uv_timer_t watch;
    uv_timer_init(g_loop, &watch);
    uv_timer_start(&watch, on_watch_timer, 100, 100);
    uv_signal_t sc, si, st;
    uv_signal_init(g_loop, &sc);
    uv_signal_start(&sc, on_sigchld, SIGCHLD);
    uv_signal_init(g_loop, &si);
    uv_signal_start(&si, on_stop, SIGINT);
    uv_signal_init(g_loop, &st);
    uv_signal_start(&st, on_stop, SIGTERM);
    uv_run(g_loop, UV_RUN_DEFAULT);
    stop_children();
    for (unsigned i = 0; i < MAX_REFUSALS; i++) {
        if (g_refusal[i]) {
            refusal_end(g_refusal[i]);
        }
    }
    uv_walk(g_loop, close_walk, NULL);
    uv_run(g_loop, UV_RUN_DEFAULT);
    uv_loop_close(g_loop);
    return 0;
}

/* ---- stdio and UART: one session at a time, each in a child ---- */

static void run_stdio_session(void *p, const char *dir) {
    (void)p;
    tether_transport t;
    if (tether_transport_stdio_open(&t, 0)) {
        tetherd_log(&g_cfg, -1, "stdio", "transport: %s", tether_last_error());
        _exit(1);
    }
    int rc = tetherd_session_run(&g_cfg, &t, dir, "stdio");
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
        tetherd_log(&g_cfg, -1, u->path, "cannot open: %s", tether_last_error());
        _exit(3);
    }
    if (g_uart_pending.set) { /* the answer to the call the last session was killed in */
        tetherd_write_error(t.fd_write, TETHER_TRANSPORT_UART, g_uart_pending.id,
                            g_uart_pending.code, g_uart_pending.text);
    }
    int rc = tetherd_session_run(&g_cfg, &t, dir, u->path);
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
        watch_scan();
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
    for (int i = 0; i < MAX_CHILDREN; i++) {
        if (g_children[i].pid == pid) {
            finish_child(i, status);
        }
    }
    return status;
}

static int serve_uart(const char *path, uint32_t baud) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop_handler;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    uart_ctx u = {path, baud};
    tetherd_log(&g_cfg, 0, path, "serving sessions at %u baud", (unsigned)baud);
    while (!g_stop) {
        pid_t pid = spawn_session(path, -1, -1, TETHER_TRANSPORT_UART, false, run_uart_session, &u);
        if (pid < 0) {
            return 1;
        }
        g_uart_pending.set = 0; /* the new session has it */
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
    if (g_children[0].pid > 0) {
        kill(-g_children[0].pid, SIGKILL);
        kill(g_children[0].pid, SIGKILL);
    }
}

static int serve_stdio(void) {
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
    pid_t pid =
        spawn_session("stdio", -1, mine, TETHER_TRANSPORT_PIPE, false, run_stdio_session, NULL);
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

/* The upload cache: --upload-cache, else $TETHER_UPLOAD_CACHE, else the user's cache directory
 * ("off" = none). An explicit directory that cannot be made is an error (2); the default one
 * only a warning (the cache is then off). */
static int open_upload_cache(const char *arg) {
    const char *env = getenv("TETHER_UPLOAD_CACHE");
    const char *dir = arg ? arg : (env && env[0] ? env : NULL);
    static char def[1024];
    if (!dir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && xdg[0] == '/') {
            snprintf(def, sizeof def, "%s/tether/uploads", xdg);
        } else if (home && home[0] == '/') {
            snprintf(def, sizeof def, "%s/.cache/tether/uploads", home);
        } else {
            return 0; /* nowhere to keep it */
        }
        dir = def;
    }
    if (!strcmp(dir, "off")) {
        return 0;
    }
    char why[1200];
    g_cfg.cache_dir = tetherd_cache_open(dir, why, sizeof why);
    if (g_cfg.cache_dir) {
        return 0;
    }
    if (dir != def) {
        fprintf(stderr, "tetherd: upload cache %s\n", why);
        return -1;
    }
    tetherd_log(&g_cfg, 0, NULL, "upload cache off: %s", why);
    return 0;
}

int main(int argc, char **argv) {
    const char *tcp = NULL, *uart = NULL, *token_file = NULL, *port_file = NULL;
    int stdio_mode = 0, insecure = 0, no_opencl = 0;
    const char *cache_arg = NULL; /* --upload-cache */
    g_cfg.cache_max = 512ull << 20;
    uint64_t baud = 115200;
    g_cfg.max_upload = 64ull << 20;
    g_cfg.max_alloc = 1ull << 30;
    g_cfg.call_timeout_ms = 60000;
    g_cfg.hello_timeout_ms = 10000;
    g_cfg.idle_timeout_ms = 600000;
    g_cfg.stack_size = 256u << 10;
    g_work_base = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(stderr, "tetherd: %s needs a value\n", a);                                     \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
#define NEED_NUMBER(dst, lo, hi)                                                                   \
    do {                                                                                           \
        NEED_VALUE();                                                                              \
        if (parse_u64(v, &n) || n + 1 < (uint64_t)(lo) + 1 || n > (hi)) {                          \
            fprintf(stderr, "tetherd: %s: '%s' is not a number in %llu..%llu\n", a, v,             \
                    (unsigned long long)(lo), (unsigned long long)(hi));                           \
            return 2;                                                                              \
        }                                                                                          \
        dst = n;                                                                                   \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tetherd %s (protocol %u, OpenCL layer %s)\n", TETHER_VERSION,
                   (unsigned)TETHER_RPC_VERSION,
#ifdef TETHERD_HAVE_OPENCL
                   "built"
#else
                   "not built"
#endif
            );
            return 0;
        } else if (!strcmp(a, "--tcp")) {
            NEED_VALUE();
            tcp = v;
        } else if (!strcmp(a, "--uart")) {
            NEED_VALUE();
            uart = v;
        } else if (!strcmp(a, "--baud")) {
            NEED_NUMBER(baud, 1, 20000000);
        } else if (!strcmp(a, "--stdio")) {
            stdio_mode = 1;
        } else if (!strcmp(a, "--token-file")) {
            NEED_VALUE();
            token_file = v;
        } else if (!strcmp(a, "--insecure")) {
            insecure = 1;
        } else if (!strcmp(a, "--port-file")) {
            NEED_VALUE();
            port_file = v;
        } else if (!strcmp(a, "--max-upload")) {
            NEED_NUMBER(g_cfg.max_upload, 1, TETHER_RPC_MAX_UPLOAD);
        } else if (!strcmp(a, "--pool")) {
            NEED_VALUE();
            if (add_pool(v)) {
                return 2;
            }
        } else if (!strcmp(a, "--max-alloc")) {
            NEED_NUMBER(g_cfg.max_alloc, 1, UINT64_MAX);
        } else if (!strcmp(a, "--max-sessions")) {
            NEED_NUMBER(g_max_sessions, 1, MAX_CHILDREN);
        } else if (!strcmp(a, "--call-timeout-ms")) {
            NEED_NUMBER(g_cfg.call_timeout_ms, 0, 86400000);
        } else if (!strcmp(a, "--hello-timeout-ms")) {
            NEED_NUMBER(g_cfg.hello_timeout_ms, 0, 86400000);
        } else if (!strcmp(a, "--idle-timeout-ms")) {
            NEED_NUMBER(g_cfg.idle_timeout_ms, 0, 86400000u * 7);
        } else if (!strcmp(a, "--stack-size")) {
            NEED_NUMBER(g_cfg.stack_size, 64 * 1024, 1ull << 30);
        } else if (!strcmp(a, "--work-dir")) {
            NEED_VALUE();
            g_work_base = v;
        } else if (!strcmp(a, "--upload-cache")) {
            NEED_VALUE();
            cache_arg = v;
        } else if (!strcmp(a, "--upload-cache-size")) {
            NEED_VALUE();
            if (parse_size(v, &g_cfg.cache_max) || g_cfg.cache_max == 0) {
                fprintf(stderr, "tetherd: --upload-cache-size '%s': want bytes, K/M/G allowed\n",
                        v);
                return 2;
            }
        } else if (!strcmp(a, "--no-opencl")) {
            no_opencl = 1;
        } else if (!strcmp(a, "--quiet")) {
            g_cfg.verbose = -1;
        } else if (!strcmp(a, "--verbose")) {
            g_cfg.verbose = 1;
        } else {
            fprintf(stderr, "tetherd: unknown option '%s' (try --help)\n", a);
            return 2;
        }
    }
    g_cfg.stack_size = (g_cfg.stack_size + 15) / 16 * 16;
    if ((tcp != NULL) + (uart != NULL) + stdio_mode > 1) {
        fprintf(stderr, "tetherd: give only one of --tcp, --uart, --stdio\n");
        return 2;
    }
    if (token_file) {
        char *tok;
        if (read_token(token_file, &tok, &g_cfg.token_len)) {
            return 2;
        }
        g_cfg.token = tok;
    }
    /* every session makes its directory here: a missing or read-only base would fail each
     * session after the connection, so it is refused at start-up */
    struct stat wst;
    const char *why = NULL;
    if (stat(g_work_base, &wst) != 0) {
        why = strerror(errno);
    } else if (!S_ISDIR(wst.st_mode)) {
        why = "not a directory";
    } else if (access(g_work_base, W_OK | X_OK) != 0) {
        why = "not writable";
    }
    if (why) {
        fprintf(stderr, "tetherd: --work-dir %s: %s\n", g_work_base, why);
        return 2;
    }
    int swept = sweep_stale_session_dirs();
    if (swept) {
        tetherd_log(&g_cfg, 0, NULL,
                    "removed %d session director%s left in %s by a tetherd that is gone", swept,
                    swept == 1 ? "y" : "ies", g_work_base);
    }
    if (open_upload_cache(cache_arg)) {
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    g_watches = mmap(NULL, sizeof(tetherd_watch) * MAX_CHILDREN, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_watches == MAP_FAILED) {
        fprintf(stderr, "tetherd: cannot map the session watches: %s\n", strerror(errno));
        return 1;
    }
    for (int i = 0; i < MAX_CHILDREN; i++) {
        g_children[i].fd = -1;
    }
    (void)no_opencl;
#ifdef TETHERD_HAVE_OPENCL
    if (!no_opencl && tetherd_cl_probe(&g_cfg.cl_max_width, &g_cfg.cl_max_height) == 0) {
        tetherd_log(&g_cfg, 1, NULL, "OpenCL images up to %u x %u", g_cfg.cl_max_width,
                    g_cfg.cl_max_height);
    }
#endif
    if (stdio_mode) {
        return serve_stdio();
    }
    if (uart) {
        return serve_uart(uart, (uint32_t)baud);
    }
    return serve_tcp(tcp ? tcp : "127.0.0.1:9090", port_file, insecure);
}
