/*
 * tetherd: the TCP mode of the daemon (daemon.h). One libuv loop accepts connections and forks a
 * session process for each (children.c), scans the watches every 100 ms (watch.c), reaps on
 * SIGCHLD and stops on SIGINT/SIGTERM.
 *
 * What must stay true:
 *  - a non-loopback bind without a token is refused before any socket is created, unless
 *    --insecure was given (which prints a warning); the bind address is resolved once and
 *    judged by what it resolved to, never by its text, and exactly that address is bound;
 *  - a client refused for want of a session slot is told so ("busy: N of N sessions in use")
 *    before its connection is closed, and the connection lingers (its input read and dropped)
 *    so that a reset cannot overtake the ERROR; a full daemon first evicts a session that never
 *    got in (watch.c);
 *  - the daemon closes its listening copy of an accepted connection right after the fork (the
 *    slot keeps one copy); stopping ends every session process and reaps it before exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "daemon.h"
#include "tether/crt.h"

static uv_loop_t *g_loop;
static tether_tcp_listener *g_listener;

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

typedef struct tcp_ctx {
    int fd;
    const char *peer;
} tcp_ctx;

static void run_tcp_session(void *p, const char *dir) {
    tcp_ctx *c = p;
    tether_transport t;
    if (tether_transport_fd_open(&t, TETHER_TRANSPORT_TCP, c->fd, c->fd, 0, true)) {
        tetherd_log(&tether__cfg, -1, c->peer, "transport: %s", tether_last_error());
        _exit(1);
    }
    int rc = tetherd_session_run(&tether__cfg, &t, dir, c->peer);
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

static void on_accept(void *ctx, int fd, const char *peer) {
    (void)ctx;
    tether__reap_children(0);
    if (tether__live_children() >= tether__max_sessions && !tether__evict_one()) {
        char text[160];
        snprintf(text, sizeof text,
                 "busy: %u of %u sessions in use (tetherd --max-sessions); try again later",
                 tether__live_children(), tether__max_sessions);
        tetherd_log(&tether__cfg, 0, peer, "refused: %s", text);
        refuse(fd, text);
        return;
    }
    tetherd_log(&tether__cfg, 0, peer, "connect");
    tcp_ctx c = {fd, peer};
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (mine < 0) {
        tetherd_log(&tether__cfg, -1, peer, "cannot keep a copy of the connection: %s",
                    strerror(errno));
    }
    tether__spawn_session(peer, fd, mine, TETHER_TRANSPORT_TCP, true, run_tcp_session, &c);
    close(fd);
}

static void on_watch_timer(uv_timer_t *t) {
    (void)t;
    tether__watch_scan();
}

static void on_sigchld(uv_signal_t *h, int sig) {
    (void)h, (void)sig;
    tether__reap_children(0);
}

static void on_stop(uv_signal_t *h, int sig) {
    (void)h;
    tetherd_log(&tether__cfg, 0, NULL, "stopping on signal %d", sig);
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

int tether__serve_tcp(const char *spec, const char *port_file, int insecure) {
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
    if (tether__parse_u64(colon + 1, &port) || port > 65535) {
        fprintf(stderr, "tetherd: bad port in '%s'\n", spec);
        return 2;
    }
    char addr[INET6_ADDRSTRLEN + 8];
    int loopback = resolve_bind(host, addr, sizeof addr);
    if (loopback < 0) {
        return 2;
    }
    if (!loopback) {
        if (!tether__cfg.token && !insecure) {
            fprintf(stderr,
                    "tetherd: refusing to listen on non-loopback address %s%s%s%s without a "
                    "token: give --token-file FILE (or --insecure to accept anyone)\n",
                    host, strcmp(host, addr) ? " (" : "", strcmp(host, addr) ? addr : "",
                    strcmp(host, addr) ? ")" : "");
            return 2;
        }
        if (!tether__cfg.token) {
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
    tetherd_log(&tether__cfg, 0, NULL, "listening on %s port %u%s", addr, bound,
                tether__cfg.token ? " (auth required)" : "");
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
    tether__stop_children();
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
