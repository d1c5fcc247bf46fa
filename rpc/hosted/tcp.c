/*
 * tether rpc: TCP on libuv: a blocking client connect (private loop, then the socket becomes a
 * plain fd transport) and the daemon's listener (each accepted socket handed over as a blocking
 * fd, ready to be used by a forked session child).
 *
 * Must stay true: every fd handed out is a dup with close-on-exec, owned by the receiver; the
 * libuv handles are always closed through uv_close and freed in their close callbacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/rpc/transport.h"

/* Resolves host:port synchronously (numeric addresses never touch a resolver). */
static int resolve(uv_loop_t *loop, const char *host, uint16_t port, uv_getaddrinfo_t *req) {
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int e = uv_getaddrinfo(loop, req, NULL, host, service, &hints);
    if (e != 0) {
        return tether_set_error(TETHER_ERR_NOT_FOUND, "tcp: cannot resolve '%s': %s", host,
                                uv_strerror(e));
    }
    return TETHER_OK;
}

static int dup_fd(uv_os_fd_t fd, bool blocking) {
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (d >= 0) {
        int fl = fcntl(d, F_GETFL);
        if (fl >= 0) {
            fcntl(d, F_SETFL, blocking ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK));
        }
    }
    return d;
}

/* ---- client ---- */

typedef struct connect_state {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t req;
    int status; /* 1 = pending */
} connect_state;

static void on_connect(uv_connect_t *req, int status) {
    connect_state *s = req->data;
    if (s->status == 1) { /* not already timed out (a timeout cancels the request) */
        s->status = status;
    }
    uv_timer_stop(&s->timer);
}

static void on_timeout(uv_timer_t *t) {
    connect_state *s = t->data;
    if (s->status == 1) {
        s->status = UV_ETIMEDOUT;
    }
    uv_close((uv_handle_t *)&s->tcp, NULL); /* cancels the connect request */
}

/* Connects to host:port within timeout_ms; *out = a blocking socket with TCP_NODELAY. */
static int connect_fd(const char *host, uint16_t port, int timeout_ms, int *out) {
    *out = -1;
    uv_loop_t loop;
    if (uv_loop_init(&loop) != 0) {
        return tether_set_error(TETHER_ERR_IO, "tcp connect: cannot create an event loop");
    }
    uv_getaddrinfo_t gai;
    int rc = resolve(&loop, host, port, &gai);
    if (rc) {
        uv_loop_close(&loop);
        return rc;
    }
    int last = UV_ECONNREFUSED;
    int fd = -1;
    for (struct addrinfo *ai = gai.addrinfo; ai && fd < 0; ai = ai->ai_next) {
        connect_state s;
        memset(&s, 0, sizeof s);
        s.status = 1;
        uv_tcp_init(&loop, &s.tcp);
        uv_timer_init(&loop, &s.timer);
        s.req.data = &s;
        s.timer.data = &s;
        int e = uv_tcp_connect(&s.req, &s.tcp, ai->ai_addr, on_connect);
        if (e == 0) {
            uv_timer_start(&s.timer, on_timeout, timeout_ms < 0 ? 0 : (uint64_t)timeout_ms, 0);
            if (timeout_ms < 0) {
                uv_timer_stop(&s.timer);
            }
            while (s.status == 1 && uv_run(&loop, UV_RUN_ONCE)) {
                ;
            }
            e = s.status == 1 ? UV_ETIMEDOUT : s.status;
        }
        if (e == 0) {
            uv_os_fd_t raw;
            if (uv_fileno((uv_handle_t *)&s.tcp, &raw) == 0) {
                fd = dup_fd(raw, false);
                if (fd >= 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                }
            }
        }
        last = e;
        if (!uv_is_closing((uv_handle_t *)&s.tcp)) {
            uv_close((uv_handle_t *)&s.tcp, NULL);
        }
        uv_close((uv_handle_t *)&s.timer, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    uv_freeaddrinfo(gai.addrinfo);
    uv_loop_close(&loop);
    if (fd < 0) {
        return tether_set_error(last == UV_ETIMEDOUT ? TETHER_ERR_TIMEOUT : TETHER_ERR_IO,
                                "tcp: cannot connect to %s port %u: %s", host, (unsigned)port,
                                uv_strerror(last));
    }
    *out = fd;
    return TETHER_OK;
}

static int connect_kind(tether_transport *t, tether_transport_kind kind, const char *host,
                        uint16_t port, uint32_t max_frame, int timeout_ms) {
    if (!t || !host) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tcp connect: no host");
    }
    memset(t, 0, sizeof *t);
    t->fd_read = t->fd_write = -1;
    int fd;
    int rc = connect_fd(host, port, timeout_ms, &fd);
    if (rc) {
        return rc;
    }
    rc = tether_transport_fd_open(t, kind, fd, fd, max_frame, true);
    if (rc) {
        close(fd);
    }
    return rc;
}

int tether_transport_tcp_connect(tether_transport *t, const char *host, uint16_t port,
                                 uint32_t max_frame, int timeout_ms) {
    return connect_kind(t, TETHER_TRANSPORT_TCP, host, port, max_frame, timeout_ms);
}

int tether_transport_tcp_serial_connect(tether_transport *t, const char *host, uint16_t port,
                                        uint32_t max_frame, int timeout_ms) {
    return connect_kind(t, TETHER_TRANSPORT_UART, host, port, max_frame, timeout_ms);
}

/* ---- listener ---- */

struct tether_tcp_listener {
    uv_tcp_t tcp;
    tether_tcp_accept_fn cb;
    void *ctx;
    uint16_t port;
};

static void free_on_close(uv_handle_t *h) {
    free(h);
}

static void peer_name(uv_tcp_t *c, char *out, size_t size) {
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[64] = "?";
    unsigned port = 0;
    if (uv_tcp_getpeername(c, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
            snprintf(out, size, "[%s]:%u", ip, port);
            return;
        }
        uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    snprintf(out, size, "%s:%u", ip, port);
}

static void on_connection(uv_stream_t *server, int status) {
    tether_tcp_listener *l = server->data;
    if (status < 0) {
        return;
    }
    uv_tcp_t *c = malloc(sizeof *c);
    if (!c) {
        return;
    }
    uv_tcp_init(server->loop, c);
    if (uv_accept(server, (uv_stream_t *)c) != 0) {
        uv_close((uv_handle_t *)c, free_on_close);
        return;
    }
    char peer[96];
    peer_name(c, peer, sizeof peer);
    uv_os_fd_t raw;
    int fd = -1;
    if (uv_fileno((uv_handle_t *)c, &raw) == 0) {
        uv_tcp_nodelay(c, 1);
        fd = dup_fd(raw, true);
    }
    uv_close((uv_handle_t *)c, free_on_close);
    if (fd >= 0) {
        l->cb(l->ctx, fd, peer);
    }
}

int tether_tcp_listen(uv_loop_t *loop, const char *host, uint16_t port, tether_tcp_accept_fn cb,
                      void *ctx, tether_tcp_listener **out) {
    if (!loop || !host || !cb || !out) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tcp listen: missing argument");
    }
    *out = NULL;
    uv_getaddrinfo_t gai;
    int rc = resolve(loop, host, port, &gai);
    if (rc) {
        return rc;
    }
    tether_tcp_listener *l = calloc(1, sizeof *l);
    if (!l) {
        uv_freeaddrinfo(gai.addrinfo);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tcp listen: out of memory");
    }
    l->cb = cb;
    l->ctx = ctx;
    uv_tcp_init(loop, &l->tcp);
    l->tcp.data = l;
    int e = uv_tcp_bind(&l->tcp, gai.addrinfo->ai_addr, 0);
    if (e == 0) {
        e = uv_listen((uv_stream_t *)&l->tcp, 64, on_connection);
    }
    uv_freeaddrinfo(gai.addrinfo);
    if (e != 0) {
        uv_close((uv_handle_t *)&l->tcp, free_on_close);
        return tether_set_error(TETHER_ERR_IO, "tcp: cannot listen on %s port %u: %s", host,
                                (unsigned)port, uv_strerror(e));
    }
    struct sockaddr_storage ss;
    int len = sizeof ss;
    uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len);
    l->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *out = l;
    return TETHER_OK;
}

uint16_t tether_tcp_listener_port(const tether_tcp_listener *l) {
    return l ? l->port : 0;
}

void tether_tcp_listener_close(tether_tcp_listener *l) {
    if (l && !uv_is_closing((uv_handle_t *)&l->tcp)) {
        uv_close((uv_handle_t *)&l->tcp, free_on_close);
    }
}
