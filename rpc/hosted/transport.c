/*
 * tether rpc: the fd-based transport (stream framing for TCP/pipes/stdio, UART framing for
 * ttys), the stdio and child-process constructors, and the transport dispatch functions.
 *
 * Must stay true: every wait is bounded by the caller's timeout (poll, or on a socket a blocking
 * recv bounded by SO_RCVTIMEO: one system call per receive); a partially received
 * frame survives a timeout and is completed by the next recv; writes never raise SIGPIPE; a
 * stream framing error is sticky (the stream cannot be trusted afterwards); a bad UART frame is
 * dropped and counted, never returned (send_naks answers it with a NAK, report_damage makes
 * recv say so instead of waiting on).
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/rpc/frame.h"
#include "tether/rpc/transport.h"
#include "transport_internal.h"

extern char **environ;

#define READ_AHEAD 65536
#define DIRECT_MIN 16384 /* a frame's remaining payload read straight into the frame buffer */
#define PLACE_HEAD 64    /* bytes of a large frame in before t->place is asked */
/* After a large frame, the next read asks for this much only: in a bulk copy the next frame is
 * large too, and of a full READ_AHEAD read all but its head would be copied out of the
 * read-ahead buffer (1/16 of a 1 MiB frame's bytes copied twice) instead of received where
 * they belong; a small frame still comes in one read. */
#define HEAD_READ 512

typedef struct fd_impl {
    bool owns;
    bool nonblocking;
    bool uart;
    bool sock_read;     /* fd_read is a blocking socket: one recv waits (SO_RCVTIMEO bounds it) */
    int rcvtimeo_ms;    /* SO_RCVTIMEO now set on it (-1 = none: wait forever) */
    int8_t socket;      /* fd_write is a socket: 1 yes, 0 no, -1 not known yet */
    uint8_t *frame_buf; /* unframer payload buffer, max_frame bytes */
    uint8_t *tx;        /* UART encode buffer */
    size_t tx_cap;
    uint8_t rd[READ_AHEAD];
    size_t rd_len, rd_pos;
    tether_stream_unframer stream;
    tether_uart_unframer uart_u;
    bool place_asked;   /* t->place was asked about the stream frame being read */
    uint8_t *place_dst; /* its bulk data goes there (NULL = into the frame buffer) */
    size_t place_off;   /* from this byte of the frame on */
    bool after_large;   /* the last stream frame was large: the next read is HEAD_READ bytes */
    bool quickack;      /* a serial line over TCP: acknowledge at once after every recv */
} fd_impl;

int64_t tether__rpc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for `events` on fd until the deadline (-1 = none). 0 ready, TETHER_ERR_TIMEOUT, or
 * TETHER_ERR_IO. POLLHUP counts as ready so the following read sees the end of file. */
int tether__rpc_wait_fd(int fd, short events, int64_t deadline) {
    for (;;) {
        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - tether__rpc_now_ms();
            wait_ms = left > 0 ? (left > INT_MAX ? INT_MAX : (int)left) : 0;
        }
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, wait_ms);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return tether_set_error(TETHER_ERR_IO, "poll failed: %s", strerror(errno));
        }
        if (n == 0) {
            return tether_set_error(TETHER_ERR_TIMEOUT, "timed out after waiting for the peer");
        }
        if (p.revents & POLLNVAL) {
            return tether_set_error(TETHER_ERR_IO, "file descriptor %d is not open", fd);
        }
        return 0;
    }
}

static int64_t deadline_of(int timeout_ms) {
    return timeout_ms < 0 ? -1 : tether__rpc_now_ms() + timeout_ms;
}

static int write_failed(void) {
    return tether_set_error(TETHER_ERR_IO, "write failed: %s%s", strerror(errno),
                            errno == EPIPE ? " (peer closed the connection)" : "");
}

/* Sockets: the pieces go out in one system call that never blocks and never raises SIGPIPE
 * (MSG_DONTWAIT | MSG_NOSIGNAL); only when the socket buffer is full does it poll, bounded by
 * the deadline. A frame of at most SMALL_SEND bytes (every request and reply but bulk data) is
 * gathered here and leaves in one send(), which the kernel takes for less than a sendmsg (no
 * message header or iovec array to copy in and check); larger ones in one sendmsg of the
 * pieces as they are (no copy of the data). */
#define SMALL_SEND 512
static int send_all_socket(int fd, struct iovec *iov, int niov, int64_t deadline) {
    uint8_t small[SMALL_SEND];
    struct iovec one;
    size_t total = 0;
    for (int i = 0; i < niov; i++) {
        total += iov[i].iov_len;
    }
    if (niov > 1 && total <= sizeof small) {
        size_t at = 0;
        for (int i = 0; i < niov; i++) {
            memcpy(small + at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        one.iov_base = small;
        one.iov_len = total;
        iov = &one;
        niov = 1;
    }
    while (niov > 0) {
        ssize_t w;
        if (niov == 1) {
            w = send(fd, iov->iov_base, iov->iov_len, MSG_DONTWAIT | MSG_NOSIGNAL);
        } else {
            struct msghdr m;
            memset(&m, 0, sizeof m);
            m.msg_iov = iov;
            m.msg_iovlen = (size_t)niov;
            w = sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int rc = tether__rpc_wait_fd(fd, POLLOUT, deadline);
                if (rc) {
                    return rc;
                }
                continue;
            }
            return write_failed();
        }
        size_t done = (size_t)w;
        while (niov > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            niov--;
        }
        if (niov > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return 0;
}

/* Writes all of p to a pipe or tty, without SIGPIPE (EPIPE is an error instead). */
static int write_all(int fd, bool nonblocking, const uint8_t *p, size_t n, int64_t deadline) {
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int rc = 0;
    while (n > 0) {
        rc = tether__rpc_wait_fd(fd, POLLOUT, deadline);
        if (rc) {
            break;
        }
        size_t chunk = nonblocking ? n : (n < PIPE_BUF ? n : PIPE_BUF);
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                continue;
            }
            rc = write_failed();
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    /* discard a SIGPIPE raised by write() on a pipe while it was blocked */
    struct timespec zero = {0, 0};
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Writes bytes to fd_write: one non-blocking send on a socket, write() on a pipe or tty. */
static int put_bytes(tether_transport *t, fd_impl *im, const uint8_t *p, size_t n,
                     int64_t deadline) {
    if (im->socket < 0) {
        struct stat st;
        im->socket = fstat(t->fd_write, &st) == 0 && S_ISSOCK(st.st_mode);
    }
    if (im->socket) {
        struct iovec iov[1] = {{(void *)p, n}};
        return send_all_socket(t->fd_write, iov, 1, deadline);
    }
    return write_all(t->fd_write, im->nonblocking, p, n, deadline);
}

static int fd_send(tether_transport *t, const uint8_t *msg, size_t len, int timeout_ms) {
    fd_impl *im = t->impl;
    int64_t deadline = deadline_of(timeout_ms);
    int rc;
    if (im->uart) {
        size_t n;
        if (len > TETHER_UART_MAX_PAYLOAD) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "message of %zu bytes exceeds the UART frame limit %u", len,
                                    (unsigned)TETHER_UART_MAX_PAYLOAD);
        }
        if (TETHER_UART_ENCODED_MAX(len) > im->tx_cap) {
            size_t cap = TETHER_UART_ENCODED_MAX(len);
            uint8_t *nb = realloc(im->tx, cap);
            if (!nb) {
                return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "UART send buffer");
            }
            im->tx = nb;
            im->tx_cap = cap;
        }
        rc = tether_uart_frame_encode_ex(msg, len, t->link2, im->tx, im->tx_cap, &n);
        if (!rc) {
            rc = put_bytes(t, im, im->tx, n, deadline);
        }
        if (!rc) {
            t->stats.bytes_sent += n;
        }
    } else {
        uint8_t hdr[TETHER_STREAM_HEADER_BYTES];
        rc = tether_stream_frame_header(hdr, len);
        if (!rc && im->socket < 0) {
            struct stat st;
            im->socket = fstat(t->fd_write, &st) == 0 && S_ISSOCK(st.st_mode);
        }
        if (!rc && im->socket) {
            struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)msg, len}};
            rc = send_all_socket(t->fd_write, iov, 2, deadline);
        } else {
            if (!rc) {
                rc = write_all(t->fd_write, im->nonblocking, hdr, sizeof hdr, deadline);
            }
            if (!rc) {
                rc = write_all(t->fd_write, im->nonblocking, msg, len, deadline);
            }
        }
        if (!rc) {
            t->stats.bytes_sent += sizeof hdr + len;
        }
    }
    if (!rc) {
        t->stats.frames_sent++;
    }
    return rc;
}

/* A message in two pieces: on a stream socket one send (small) or sendmsg of header, head and tail;
 * on pipes three writes; on a UART (escaping and CRC touch every byte anyway) joined, then framed.
 */
static int fd_send2(tether_transport *t, const uint8_t *head, size_t head_len, const uint8_t *tail,
                    size_t tail_len, int timeout_ms) {
    fd_impl *im = t->impl;
    size_t len = head_len + tail_len;
    if (im->uart || len > TETHER_RPC_MAX_FRAME_LIMIT) {
        uint8_t *joined = malloc(len ? len : 1);
        if (!joined) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "send: no memory for %zu bytes", len);
        }
        memcpy(joined, head, head_len);
        memcpy(joined + head_len, tail, tail_len);
        int rc = fd_send(t, joined, len, timeout_ms);
        free(joined);
        return rc;
    }
    int64_t deadline = deadline_of(timeout_ms);
    uint8_t hdr[TETHER_STREAM_HEADER_BYTES];
    int rc = tether_stream_frame_header(hdr, len);
    if (!rc && im->socket < 0) {
        struct stat st;
        im->socket = fstat(t->fd_write, &st) == 0 && S_ISSOCK(st.st_mode);
    }
    if (!rc && im->socket) {
        struct iovec iov[3] = {
            {hdr, sizeof hdr}, {(void *)head, head_len}, {(void *)tail, tail_len}};
        rc = send_all_socket(t->fd_write, iov, 3, deadline);
    } else {
        if (!rc) {
            rc = write_all(t->fd_write, im->nonblocking, hdr, sizeof hdr, deadline);
        }
        if (!rc) {
            rc = write_all(t->fd_write, im->nonblocking, head, head_len, deadline);
        }
        if (!rc) {
            rc = write_all(t->fd_write, im->nonblocking, tail, tail_len, deadline);
        }
    }
    if (!rc) {
        t->stats.frames_sent++;
        t->stats.bytes_sent += sizeof hdr + len;
    }
    return rc;
}

static void sync_uart_stats(tether_transport *t, fd_impl *im) {
    t->stats.frames_dropped = tether_uart_unframer_dropped(&im->uart_u);
    t->stats.garbage_bytes = im->uart_u.garbage;
    t->stats.crc_errors = im->uart_u.dropped[TETHER_UART_DROP_CRC];
    t->stats.naks_received = im->uart_u.naks;
}

/* A NAK for a damaged frame, written at once (a bounded wait: the peer reads its line). */
static void send_nak(tether_transport *t, fd_impl *im) {
    uint8_t nak[TETHER_UART_NAK_MAX];
    size_t n = 0;
    if (tether_uart_nak_encode(nak, sizeof nak, &n) == 0 &&
        put_bytes(t, im, nak, n, deadline_of(1000)) == 0) {
        t->stats.naks_sent++;
        t->stats.bytes_sent += n;
    }
}

/* One recv on a blocking socket, waiting until the deadline (-1 = forever) with SO_RCVTIMEO:
 * one system call where poll + read take two. The socket's timeout is changed only when the
 * wait asked for is shorter, or much longer, than the one set (a request's timeout is the same
 * from request to request). Returns bytes (0 = end of file), -1 with errno, or -2 on timeout. */
static ssize_t sock_recv(tether_transport *t, fd_impl *im, uint8_t *dst, size_t cap,
                         int64_t deadline) {
    int want = -1;
    if (deadline >= 0) {
        int64_t left = deadline - tether__rpc_now_ms();
        if (left <= 0) {
            ssize_t n = recv(t->fd_read, dst, cap, MSG_DONTWAIT);
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : n;
        }
        want = left > INT_MAX ? INT_MAX : (int)left;
    }
    /* a timeout up to 20 ms or 2% longer than asked is kept; a shorter one never */
    bool keep = want < 0 ? im->rcvtimeo_ms < 0
                         : im->rcvtimeo_ms >= want &&
                               im->rcvtimeo_ms <= want + (want / 50 > 20 ? want / 50 : 20);
    if (!keep) {
        struct timeval tv = {0, 0};
        if (want > 0) {
            tv.tv_sec = want / 1000;
            tv.tv_usec = (suseconds_t)(want % 1000) * 1000;
        }
        if (setsockopt(t->fd_read, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
            return -1;
        }
        im->rcvtimeo_ms = want;
    }
    for (;;) {
        ssize_t n = recv(t->fd_read, dst, cap, 0);
        if (n > 0 && im->quickack) {
            /* A serial line exported over TCP (tcp-serial://: ser2net, QEMU's socket chardev)
             * sends each byte as the UART gives it; with Nagle on that side, the tail of a reply
             * waits until this end acknowledges, which a delayed ACK holds back by up to 40 ms
             * per frame. Quick ACKs are not sticky in Linux: renewed after every read. */
            int one = 1;
            setsockopt(t->fd_read, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        }
        if (n >= 0 || errno != EINTR) {
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : n;
        }
        if (deadline >= 0 && tether__rpc_now_ms() >= deadline) {
            return -2;
        }
    }
}

/* A stream frame read to its end outside the unframer: delivered, its placement said. */
static int deliver_stream(tether_transport *t, fd_impl *im, const uint8_t **msg, size_t *len) {
    tether_stream_unframer *su = &im->stream;
    *msg = su->buf;
    *len = su->need;
    t->placed = im->place_dst;
    t->placed_off = im->place_off;
    im->place_dst = NULL;
    im->place_asked = false;
    im->after_large = su->need >= DIRECT_MIN;
    su->hdr_have = su->have = su->need = 0;
    t->stats.frames_received++;
    return TETHER_OK;
}

static int fd_recv(tether_transport *t, const uint8_t **msg, size_t *len, int timeout_ms) {
    fd_impl *im = t->impl;
    int64_t deadline = deadline_of(timeout_ms);
    for (;;) {
        if (im->rd_pos < im->rd_len) {
            size_t used = 0;
            int got;
            if (im->uart) {
                uint64_t dropped = t->stats.frames_dropped;
                got = tether_uart_unframer_push(&im->uart_u, im->rd + im->rd_pos,
                                                im->rd_len - im->rd_pos, &used, msg, len);
                sync_uart_stats(t, im);
                im->rd_pos += used;
                bool damaged = t->stats.frames_dropped != dropped;
                if (damaged && t->send_naks) {
                    send_nak(t, im);
                }
                if (got == TETHER_UART_FRAME) {
                    t->stats.frames_received++;
                    return TETHER_OK;
                }
                if (t->report_damage && got == TETHER_UART_NAK) {
                    return TETHER_TRANSPORT_NAK;
                }
                if (t->report_damage && damaged) {
                    return TETHER_TRANSPORT_DAMAGED;
                }
                continue;
            }
            tether_stream_unframer *su = &im->stream;
            if (im->place_dst) { /* a placed frame's bytes from the read-ahead buffer */
                size_t take = su->need - su->have;
                if (take > im->rd_len - im->rd_pos) {
                    take = im->rd_len - im->rd_pos;
                }
                memcpy(im->place_dst + (su->have - im->place_off), im->rd + im->rd_pos, take);
                t->stats.bytes_staged += take;
                im->rd_pos += take;
                su->have += take;
                if (su->have == su->need) {
                    return deliver_stream(t, im, msg, len);
                }
                continue;
            }
            size_t avail = im->rd_len - im->rd_pos;
            if (t->place && !im->place_asked) {
                /* a frame's header alone, then of a large frame only its head: t->place is asked
                 * about it before the rest leaves the read-ahead buffer, so that placed data is
                 * copied once (to where it belongs), not through the frame buffer */
                size_t cap = su->hdr_have < TETHER_STREAM_HEADER_BYTES
                                 ? TETHER_STREAM_HEADER_BYTES - su->hdr_have
                             : su->need < DIRECT_MIN ? avail
                             : su->have < PLACE_HEAD ? PLACE_HEAD - su->have
                                                     : 0;
                if (avail > cap) {
                    avail = cap;
                }
            }
            size_t hdr_before = su->hdr_have;
            got = tether_stream_unframer_push(su, im->rd + im->rd_pos, avail, &used, msg, len);
            im->rd_pos += used;
            if (got < 0) {
                return got;
            }
            size_t hdr_used = hdr_before >= TETHER_STREAM_HEADER_BYTES ? 0
                              : used < TETHER_STREAM_HEADER_BYTES - hdr_before
                                  ? used
                                  : TETHER_STREAM_HEADER_BYTES - hdr_before;
            size_t frame_len = got == 1                                     ? *len
                               : su->hdr_have == TETHER_STREAM_HEADER_BYTES ? su->need
                                                                            : 0;
            if (frame_len >= DIRECT_MIN) {
                t->stats.bytes_staged += used - hdr_used;
            }
            if (got == 1) {
                im->after_large = frame_len >= DIRECT_MIN;
                t->stats.frames_received++;
                t->placed = NULL;
                im->place_asked = false;
                return TETHER_OK;
            }
        }
        tether_stream_unframer *su = &im->stream;
        if (!im->uart && t->place && !im->place_asked &&
            su->hdr_have == TETHER_STREAM_HEADER_BYTES && su->need >= DIRECT_MIN &&
            su->have >= PLACE_HEAD) {
            /* where does this frame's bulk data belong? (once per frame) */
            im->place_asked = true;
            uint8_t *dst = NULL;
            size_t off = 0;
            if (t->place(t->place_ctx, su->buf, su->have, su->need, &dst, &off) && dst &&
                off <= su->have && off < su->need) {
                memcpy(dst, su->buf + off, su->have - off);
                im->place_dst = dst;
                im->place_off = off;
            }
        }
        if (im->rd_pos < im->rd_len) {
            continue; /* the rest of the read-ahead buffer first */
        }
        /* the rest of a large stream frame goes straight into where it belongs (the frame
         * buffer, or the placed destination): no copy through the read-ahead buffer; anything
         * else through the read-ahead buffer */
        bool direct = !im->uart && su->hdr_have == TETHER_STREAM_HEADER_BYTES &&
                      su->need - su->have >= DIRECT_MIN && (!t->place || im->place_asked);
        uint8_t *dst = !direct         ? im->rd
                       : im->place_dst ? im->place_dst + (su->have - im->place_off)
                                       : su->buf + su->have;
        size_t cap = direct ? su->need - su->have : im->after_large ? HEAD_READ : sizeof im->rd;
        ssize_t n;
        if (im->sock_read) {
            n = sock_recv(t, im, dst, cap, deadline);
            if (n == -2) {
                return tether_set_error(TETHER_ERR_TIMEOUT, "timed out after waiting for the peer");
            }
        } else {
            int rc = tether__rpc_wait_fd(t->fd_read, POLLIN, deadline);
            if (rc) {
                return rc;
            }
            n = read(t->fd_read, dst, cap);
        }
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
                continue;
            }
            return tether_set_error(TETHER_ERR_IO, "read failed: %s", strerror(errno));
        }
        if (n == 0) {
            return tether_set_error(TETHER_ERR_IO, "connection closed by the peer");
        }
        t->stats.bytes_received += (uint64_t)n;
        if (direct) {
            su->have += (size_t)n;
            if (su->have == su->need) {
                return deliver_stream(t, im, msg, len);
            }
            continue;
        }
        im->rd_len = (size_t)n;
        im->rd_pos = 0;
        im->after_large = false;
    }
}

void tether__transport_unplace(tether_transport *t) {
    if (!t || !t->ops || t->ops->recv != fd_recv || !t->impl) {
        return;
    }
    fd_impl *im = t->impl;
    t->placed = NULL;
    if (im->place_dst) { /* what was placed so far joins the frame buffer; the rest follows */
        tether_stream_unframer *su = &im->stream;
        memcpy(su->buf + im->place_off, im->place_dst, su->have - im->place_off);
        im->place_dst = NULL;
    }
}

/* The children tether_transport_spawn started and no close has reaped yet, for
 * tether_transport_kill_spawned (a signal handler: only atomic loads and kill()). */
#define SPAWNED_MAX 64
static _Atomic int g_spawned[SPAWNED_MAX];

static void spawned_add(int pid) {
    for (int i = 0; i < SPAWNED_MAX; i++) {
        int none = 0;
        if (atomic_compare_exchange_strong(&g_spawned[i], &none, pid)) {
            return;
        }
    }
}

static void spawned_remove(int pid) {
    for (int i = 0; i < SPAWNED_MAX; i++) {
        int want = pid;
        if (atomic_compare_exchange_strong(&g_spawned[i], &want, 0)) {
            return;
        }
    }
}

void tether_transport_kill_spawned(void) {
    int any = 0;
    for (int i = 0; i < SPAWNED_MAX; i++) {
        any |= atomic_load(&g_spawned[i]) > 0;
    }
    if (!any || fork() != 0) {
        return; /* the caller goes on dying: its pipes close, an idle child sees EOF and ends */
    }
    /* a reaper (fork, nanosleep, kill and _exit are async-signal-safe): gives the children 2 s
     * to end on that EOF (and clean up after themselves), then kills those still there (busy in a
     * call that does not end); it holds none of the caller's descriptors, which would keep the
     * children's pipes open */
    for (int fd = 0; fd < 1024; fd++) {
        close(fd);
    }
    for (int round = 0; round < 200; round++) {
        int alive = 0;
        for (int i = 0; i < SPAWNED_MAX; i++) {
            int pid = atomic_load(&g_spawned[i]);
            alive |= pid > 0 && kill((pid_t)pid, 0) == 0;
        }
        if (!alive) {
            _exit(0);
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < SPAWNED_MAX; i++) {
        int pid = atomic_load(&g_spawned[i]);
        if (pid > 0) {
            kill((pid_t)pid, SIGKILL);
        }
    }
    _exit(0);
}

static void fd_close(tether_transport *t) {
    fd_impl *im = t->impl;
    if (im) {
        if (im->owns) {
            if (t->fd_read >= 0) {
                close(t->fd_read);
            }
            if (t->fd_write >= 0 && t->fd_write != t->fd_read) {
                close(t->fd_write);
            }
        }
        free(im->frame_buf);
        free(im->tx);
        free(im);
    }
    if (t->child_pid > 0) {
        int status;
        pid_t pid = (pid_t)t->child_pid;
        /* give the child 2 s to exit on EOF, then ask, then insist */
        for (int i = 0; i < 200; i++) {
            if (waitpid(pid, &status, WNOHANG) != 0) {
                goto reaped;
            }
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGTERM);
        for (int i = 0; i < 100; i++) {
            if (waitpid(pid, &status, WNOHANG) != 0) {
                goto reaped;
            }
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
reaped:
    if (t->child_pid > 0) {
        spawned_remove(t->child_pid);
    }
    t->impl = NULL;
    t->fd_read = t->fd_write = -1;
    t->child_pid = 0;
    t->ops = NULL;
}

const tether_transport_ops tether__rpc_fd_ops = {fd_send, fd_recv, fd_close, fd_send2};

int tether_transport_fd_open(tether_transport *t, tether_transport_kind kind, int fd_read,
                             int fd_write, uint32_t max_frame, bool owns_fds) {
    if (!t) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "transport: null");
    }
    memset(t, 0, sizeof *t);
    t->fd_read = t->fd_write = -1;
    if (fd_read < 0 || fd_write < 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "transport: bad file descriptors %d/%d",
                                fd_read, fd_write);
    }
    if (kind != TETHER_TRANSPORT_TCP && kind != TETHER_TRANSPORT_PIPE &&
        kind != TETHER_TRANSPORT_UART) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "transport: kind %d is not fd-based",
                                (int)kind);
    }
    if (max_frame == 0) {
        max_frame = TETHER_RPC_DEFAULT_MAX_FRAME;
    }
    if (kind == TETHER_TRANSPORT_UART && max_frame > TETHER_UART_MAX_PAYLOAD) {
        max_frame = TETHER_UART_MAX_PAYLOAD;
    }
    if (max_frame < TETHER_RPC_MIN_FRAME || max_frame > TETHER_RPC_MAX_FRAME_LIMIT) {
        return tether_set_error(TETHER_ERR_LIMIT, "transport: max_frame %u outside [%u, %u]",
                                (unsigned)max_frame, (unsigned)TETHER_RPC_MIN_FRAME,
                                (unsigned)TETHER_RPC_MAX_FRAME_LIMIT);
    }
    fd_impl *im = calloc(1, sizeof *im);
    uint8_t *fb = malloc(max_frame);
    if (!im || !fb) {
        free(im);
        free(fb);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "transport: no memory for buffers");
    }
    im->owns = owns_fds;
    im->uart = kind == TETHER_TRANSPORT_UART;
    im->socket = -1;
    im->frame_buf = fb;
    if (im->uart) {
        tether_uart_unframer_init(&im->uart_u, fb, max_frame, NULL, NULL);
    } else {
        tether_stream_unframer_init(&im->stream, fb, max_frame);
    }
    im->rcvtimeo_ms = -1;
    if (owns_fds) {
        /* a socket stays blocking: a receive is one recv bounded by SO_RCVTIMEO, and every send
         * is MSG_DONTWAIT; pipes and ttys are non-blocking and waited on with poll */
        struct stat st;
        im->sock_read = fstat(fd_read, &st) == 0 && S_ISSOCK(st.st_mode);
        int fds[2] = {fd_read, fd_write};
        for (int i = 0; i < 2; i++) {
            int fl = fcntl(fds[i], F_GETFL);
            if (fl < 0) {
                continue;
            }
            if (im->sock_read) {
                fcntl(fds[i], F_SETFL, fl & ~O_NONBLOCK);
            } else {
                fcntl(fds[i], F_SETFL, fl | O_NONBLOCK);
            }
        }
        im->nonblocking = !im->sock_read;
        if (im->sock_read) {
            struct timeval tv = {0, 0}; /* no timeout left over from whoever had the socket */
            setsockopt(fd_read, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            int one = 1; /* UART framing on a TCP socket (not a socket pair): quick ACKs */
            im->quickack =
                im->uart && setsockopt(fd_read, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) == 0;
        }
    }
    t->ops = &tether__rpc_fd_ops;
    t->kind = kind;
    t->fd_read = fd_read;
    t->fd_write = fd_write;
    t->max_frame = max_frame;
    t->impl = im;
    return TETHER_OK;
}

int tether_transport_stdio_open(tether_transport *t, uint32_t max_frame) {
    return tether_transport_fd_open(t, TETHER_TRANSPORT_PIPE, STDIN_FILENO, STDOUT_FILENO,
                                    max_frame, false);
}

int tether_transport_spawn(tether_transport *t, const char *const argv[], uint32_t max_frame) {
    if (!t || !argv || !argv[0]) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "spawn: no program given");
    }
    memset(t, 0, sizeof *t);
    t->fd_read = t->fd_write = -1;
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0) {
        return tether_set_error(TETHER_ERR_IO, "spawn: pipe failed: %s", strerror(errno));
    }
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        int e = errno;
        close(to_child[0]);
        close(to_child[1]);
        return tether_set_error(TETHER_ERR_IO, "spawn: pipe failed: %s", strerror(e));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, from_child[1], STDOUT_FILENO);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to_child[0]);
    close(from_child[1]);
    if (e != 0) {
        close(to_child[1]);
        close(from_child[0]);
        return tether_set_error(TETHER_ERR_IO, "spawn: cannot start '%s': %s", argv[0],
                                strerror(e));
    }
    int rc = tether_transport_fd_open(t, TETHER_TRANSPORT_PIPE, from_child[0], to_child[1],
                                      max_frame, true);
    if (rc) {
        close(to_child[1]);
        close(from_child[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return rc;
    }
    t->child_pid = (int)pid;
    spawned_add((int)pid);
    return TETHER_OK;
}

/* ---- dispatch ---- */

int tether_transport_send(tether_transport *t, const void *msg, size_t len, int timeout_ms) {
    if (!t || !t->ops) {
        return tether_set_error(TETHER_ERR_STATE, "transport is not open");
    }
    if (!msg || len == 0 || len > TETHER_RPC_MAX_FRAME_LIMIT) {
        return tether_set_error(TETHER_ERR_LIMIT, "message of %zu bytes (must be 1..%u)", len,
                                (unsigned)TETHER_RPC_MAX_FRAME_LIMIT);
    }
    return t->ops->send(t, msg, len, timeout_ms);
}

int tether_transport_send2(tether_transport *t, const void *head, size_t head_len, const void *tail,
                           size_t tail_len, int timeout_ms) {
    if (!t || !t->ops) {
        return tether_set_error(TETHER_ERR_STATE, "transport is not open");
    }
    size_t len = head_len + tail_len;
    if (!head || head_len == 0 || (tail_len && !tail) || len > TETHER_RPC_MAX_FRAME_LIMIT) {
        return tether_set_error(TETHER_ERR_LIMIT, "message of %zu bytes (must be 1..%u)", len,
                                (unsigned)TETHER_RPC_MAX_FRAME_LIMIT);
    }
    if (tail_len == 0) {
        return t->ops->send(t, head, head_len, timeout_ms);
    }
    if (t->ops->send2) {
        return t->ops->send2(t, head, head_len, tail, tail_len, timeout_ms);
    }
    uint8_t *joined = malloc(len);
    if (!joined) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "send: no memory for %zu bytes", len);
    }
    memcpy(joined, head, head_len);
    memcpy(joined + head_len, tail, tail_len);
    int rc = t->ops->send(t, joined, len, timeout_ms);
    free(joined);
    return rc;
}

int tether_transport_recv(tether_transport *t, const uint8_t **msg, size_t *len, int timeout_ms) {
    if (!t || !t->ops) {
        return tether_set_error(TETHER_ERR_STATE, "transport is not open");
    }
    if (!msg || !len) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "transport recv: null output");
    }
    return t->ops->recv(t, msg, len, timeout_ms);
}

void tether_transport_close(tether_transport *t) {
    if (t && t->ops && t->ops->close) {
        t->ops->close(t);
    }
}
