/*
 * tether rpc: the blocking request/reply helper (tether_rpc_client) used by the host client and
 * by tests: numbers requests, resends on timeout, skips stale replies, forwards LOG messages and
 * turns ERROR replies into a status plus the last-error text. On a lossy serial link (the
 * transport's report_damage) it is an ARQ: a request is resent at once when the device NAKs it
 * or a damaged frame arrives, after a retransmission timeout measured from round trips when
 * nothing arrives, and it recommends the chunk size that gets through best at the error rate
 * it sees (docs/rpc.md, "UART link").
 *
 * Must stay true: a request is matched only with a reply carrying its id, except an ERROR with
 * id 0 (the device speaking to the connection: busy, idle, a frame it could not read), which
 * fails the pending request with its message; a resend uses the same bytes (same id) so the
 * device's reply cache can recognise it (a request is never executed twice, however often it
 * is resent).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/crt/error.h"
#include "tether/rpc/codec.h"
#include "tether/rpc/mp.h"
#include "tether/rpc/transport.h"
#include "transport_internal.h"

int tether_rpc_client_init(tether_rpc_client *c, tether_transport *t, size_t tx_cap, int retries) {
    if (!c || !t) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: null argument");
    }
    memset(c, 0, sizeof *c);
    if (tx_cap == 0) {
        tx_cap = t->max_frame;
    }
    c->tx = malloc(tx_cap);
    if (!c->tx) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "rpc client: no memory");
    }
    c->t = t;
    c->tx_cap = tx_cap;
    c->next_id = 1;
    c->retries = retries < 0 ? 0 : retries;
    return TETHER_OK;
}

void tether_rpc_client_close(tether_rpc_client *c) {
    if (c) {
        free(c->tx);
        c->tx = NULL;
        c->t = NULL;
    }
}

#define RTO_FIRST_MS 500 /* before any round trip was measured */
#define RTO_MIN_MS   100
#define RTO_MAX_MS   8000
#define CHUNK_FIRST  1024 /* bytes of data per chunk before the link's error rate is known */
#define CHUNK_MIN    64
#define CHUNK_HEADER 24 /* bytes of a chunk's frame that are not data (header, framing) */
#define CHUNK_TURN   24 /* an exchange's other costs in byte times (the reply, the turnaround) */

/* Requests whose round trip is the link's alone (no execution time worth counting). */
static bool link_only(uint32_t type) {
    switch (type) {
    case TETHER_RPC_HELLO:
    case TETHER_RPC_AUTH:
    case TETHER_RPC_UPLOAD_CHUNK:
    case TETHER_RPC_GET_FUNCTION:
    case TETHER_RPC_ALLOC:
    case TETHER_RPC_FREE:
    case TETHER_RPC_COPY_TO:
    case TETHER_RPC_COPY_FROM:
        return true;
    default:
        return false;
    }
}

/* Handles one received message while waiting for req's reply: 1 = it was the reply (rc holds the
 * result), 0 = keep waiting. */
static int take_message(tether_rpc_client *c, const tether_rpc_msg *req, const char *name,
                        const uint8_t *msg, size_t mlen, tether_rpc_msg *rep, int *rc) {
    uint32_t type, id;
    if (tether_rpc_peek_header(msg, mlen, &type, &id) != 0) {
        c->stale_replies++;
        return 0;
    }
    if (type == TETHER_RPC_LOG) {
        if (c->on_log && tether_rpc_tiny_decode(msg, mlen, rep) == 0) {
            c->on_log(c->log_ctx, rep);
        }
        return 0;
    }
    if (type == TETHER_RPC_ERROR && id == 0 && tether_rpc_tiny_decode(msg, mlen, rep) == 0) {
        /* the device speaks to the connection, not to a request (busy, idle, a frame it could
         * not read): it closes the connection after this */
        *rc = tether_set_error(rep->u.error.code, "%s: device: %.*s", name,
                               (int)rep->u.error.message.len, rep->u.error.message.ptr);
        return 1;
    }
    if (id != req->id) {
        c->stale_replies++;
        return 0;
    }
    *rc = tether_rpc_tiny_decode(msg, mlen, rep);
    if (*rc) {
        return 1;
    }
    if (rep->type == TETHER_RPC_ERROR) {
        int code = rep->u.error.code;
        *rc = tether_set_error(code, "%s failed: %.*s", name, (int)rep->u.error.message.len,
                               rep->u.error.message.ptr);
        return 1;
    }
    if (rep->type != (req->type | TETHER_RPC_REPLY)) {
        *rc = tether_set_error(TETHER_ERR_PROTOCOL, "%s got a %s", name,
                               tether_rpc_type_name(rep->type));
    } else {
        *rc = TETHER_OK;
    }
    return 1;
}

#define DECAY 0.95 /* weight of the attempt before the last, for the error estimate */

/* One attempt of an exchange: got through (ok) or not, with about `wire` bytes on the line. */
static void observe(tether_rpc_client *c, bool ok, double wire) {
    c->att_sum = c->att_sum * DECAY + 1;
    c->fail_sum = c->fail_sum * DECAY + (ok ? 0 : 1);
    c->byte_sum = c->byte_sum * DECAY + wire;
}

/* What one answered request says about the link: its round trip (Karn: only without a resend,
 * and only for link-only requests) split into the time per byte on the line (line_bytes: the
 * request's, those queued ahead of it and its reply's) and the latency left over, and its
 * last, successful attempt. */
static void learn(tether_rpc_client *c, uint32_t type, uint32_t attempts, int64_t rtt_ms,
                  size_t req_len, size_t rep_len, double line_bytes) {
    c->last_attempts = attempts;
    if (attempts == 1 && link_only(type)) {
        double m = (double)rtt_ms, b = line_bytes > 1 ? line_bytes : 1;
        /* per byte: an upper bound (it includes the latency), followed up fast and down slowly
         * so that one quick exchange does not make the next big frame time out */
        double per = m / b;
        if (c->byte_ms <= 0) {
            c->byte_ms = per;
        } else {
            c->byte_ms += (per - c->byte_ms) * (per > c->byte_ms ? 0.5 : 0.125);
        }
        m -= c->byte_ms * b;
        if (m < 0) {
            m = 0;
        }
        if (c->srtt_ms <= 0) {
            c->srtt_ms = m > 0 ? m : 0.5;
            c->rttvar_ms = m / 2;
        } else {
            double err = m - c->srtt_ms;
            c->srtt_ms += err / 8;
            c->rttvar_ms += ((err < 0 ? -err : err) - c->rttvar_ms) / 4;
        }
        double rto = c->srtt_ms + 4 * c->rttvar_ms;
        c->rto_ms = rto < RTO_MIN_MS ? RTO_MIN_MS : rto > RTO_MAX_MS ? RTO_MAX_MS : (int)rto;
    }
    observe(c, true, (double)(req_len + rep_len + 16));
}

/* The retransmission timeout of a request with `bytes` on the line ahead of its reply (its own,
 * those queued before it, its reply's): the latency part plus twice their line time. */
static int64_t rto_for(const tether_rpc_client *c, int rto, double bytes) {
    double r = (double)rto + 2.0 * c->byte_ms * bytes;
    return r > 1e9 ? (int64_t)1e9 : (int64_t)r;
}

/* The bytes of the reply a request expects (COPY_FROM: its data). */
static double reply_bytes(uint32_t type, uint64_t len) {
    return type == TETHER_RPC_COPY_FROM ? (double)len + 24 : 24;
}

double tether_rpc_client_error_rate(const tether_rpc_client *c) {
    if (!c || c->att_sum <= 0 || c->fail_sum <= 1e-9 || c->byte_sum <= 0) {
        return 0;
    }
    double f = c->fail_sum / c->att_sum; /* failed share of the attempts */
    if (f > 0.99) {
        f = 0.99;
    }
    return -log(1 - f) / (c->byte_sum / c->att_sum);
}

/* The chunk of data that moves the most per byte time at the estimated error rate (max when
 * none was seen). A frame of L bytes carries L - h data bytes, gets through with probability
 * (1 - p)^L and costs L + t byte times: (L - h)(1 - p)^L / (L + t) is largest where
 * (L - h)(L + t) = (h + t) / q, q = -ln(1 - p). */
static double best_chunk(const tether_rpc_client *c, size_t max) {
    double p = tether_rpc_client_error_rate(c);
    if (p <= 0) {
        return (double)max;
    }
    double h = CHUNK_HEADER, t = CHUNK_TURN, q = -log(1 - p);
    double L = ((h - t) + sqrt((t - h) * (t - h) + 4 * (h * t + (h + t) / q))) / 2;
    return L - h;
}

size_t tether_rpc_client_chunk(tether_rpc_client *c, size_t max) {
    if (!c || !c->t || !c->t->report_damage || max <= CHUNK_MIN) {
        return max;
    }
    size_t now = c->chunk_now ? c->chunk_now : (max < CHUNK_FIRST ? max : CHUNK_FIRST);
    /* down to the best size at once; up by half a step at a time while frames get through */
    double next = (double)now * 1.5, target = best_chunk(c, max);
    if (target < next) {
        next = target;
    }
    size_t n = next > (double)max ? max : next < CHUNK_MIN ? CHUNK_MIN : (size_t)next;
    c->chunk_now = n;
    return n;
}

/* TETHER_LINK_TRACE=1: one line on stderr per resend (why, after how long). */
static bool trace(void) {
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("TETHER_LINK_TRACE");
        on = e && e[0] && strcmp(e, "0") != 0;
    }
    return on;
}

/* A request on a lossy link: resent at once on a NAK or a damaged frame, after the
 * retransmission timeout (doubling) when nothing arrives at all, until the deadline. */
static int arq_request(tether_rpc_client *c, tether_rpc_msg *req, tether_rpc_msg *rep, size_t len,
                       const char *name, int timeout_ms, size_t resize_above) {
    int64_t start = tether__rpc_now_ms();
    int64_t deadline = timeout_ms < 0 ? -1 : start + (int64_t)timeout_ms * (c->retries + 1);
    int rto = c->rto_ms > 0 ? c->rto_ms : RTO_FIRST_MS;
    if (rto < c->min_rto_ms) {
        rto = c->min_rto_ms;
    }
    c->min_rto_ms = 0;

    uint32_t attempts = 0;
    int64_t sent_at = start;
    int rc;
    for (;;) {
        rc = tether_transport_send2(c->t, c->tx, len - c->tail_len, c->tail, c->tail_len,
                                    timeout_ms);
        if (rc) {
            char e[TETHER_ERROR_MSG_MAX];
            snprintf(e, sizeof e, "%s", tether_last_error());
            return tether_set_error(rc, "%s (id %u): cannot send%s: %s", name, (unsigned)req->id,
                                    attempts ? " again" : "", e);
        }
        if (attempts++) {
            c->t->stats.frames_resent++;
        }
        sent_at = tether__rpc_now_ms();
        double line = (double)len + reply_bytes(req->type, req->type == TETHER_RPC_COPY_FROM
                                                               ? req->u.copy_from_req.length
                                                               : 0);
        int64_t resend_at = sent_at + rto_for(c, rto, line);
        uint64_t rx_mark = c->t->stats.bytes_received;
        bool resend = false;
        while (!resend) {
            int64_t now = tether__rpc_now_ms();
            int64_t until = deadline >= 0 && deadline < resend_at ? deadline : resend_at;
            int left = until > now ? (int)(until - now) : 0;
            const uint8_t *msg;
            size_t mlen;
            rc = tether_transport_recv(c->t, &msg, &mlen, left);
            if (rc == TETHER_ERR_TIMEOUT) {
                now = tether__rpc_now_ms();
                if (deadline >= 0 && now >= deadline) {
                    return tether_set_error(TETHER_ERR_TIMEOUT,
                                            "%s (id %u): no reply within %lld ms, %u attempt(s) "
                                            "on a lossy link",
                                            name, (unsigned)req->id, (long long)(now - start),
                                            (unsigned)attempts);
                }
                if (c->t->stats.bytes_received != rx_mark) { /* a long frame on its way */
                    rx_mark = c->t->stats.bytes_received;
                    resend_at = now + rto;
                    continue;
                }
                rto = rto * 2 > RTO_MAX_MS ? RTO_MAX_MS : rto * 2;
                resend = true;
            } else if (rc == TETHER_TRANSPORT_DAMAGED || rc == TETHER_TRANSPORT_NAK) {
                resend = true; /* only the damaged exchange is repeated, at once */
            } else if (rc < 0) {
                return rc;
            } else if (take_message(c, req, name, msg, mlen, rep, &rc)) {
                learn(c, req->type, attempts, tether__rpc_now_ms() - sent_at, len, mlen,
                      (double)(len + mlen));
                return rc;
            }
            if (resend) {
                observe(c, false, (double)(len + 40)); /* the attempt failed */
                /* a chunk far larger than what this line now carries is not forced through:
                 * the caller sends its data again in smaller pieces (writes at an offset are
                 * idempotent, so the abandoned request does no harm should it arrive late) */
                if (resize_above && attempts >= 3 &&
                    best_chunk(c, resize_above) * 2 < (double)resize_above) {
                    c->chunk_now = 0;
                    if (trace()) {
                        fprintf(stderr, "tether link: %s id %u: %u attempts; smaller chunks\n",
                                name, (unsigned)req->id, (unsigned)attempts);
                    }
                    return TETHER_RPC_SMALLER;
                }
            }
            if (resend && trace()) {
                fprintf(stderr, "tether link: %s id %u: resend #%u after %s (%lld ms)\n", name,
                        (unsigned)req->id, (unsigned)attempts,
                        rc == TETHER_ERR_TIMEOUT     ? "no answer"
                        : rc == TETHER_TRANSPORT_NAK ? "a NAK"
                                                     : "a damaged frame",
                        (long long)(tether__rpc_now_ms() - sent_at));
            }
        }
    }
}

int tether_rpc_client_request(tether_rpc_client *c, tether_rpc_msg *req, tether_rpc_msg *rep,
                              int timeout_ms) {
    if (!c || !c->t || !req || !rep) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: null argument");
    }
    if (req->type & TETHER_RPC_REPLY || req->type == TETHER_RPC_LOG) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: %s is not a request",
                                tether_rpc_type_name(req->type) ? tether_rpc_type_name(req->type)
                                                                : "message");
    }
    size_t resize_above = c->resize_above; /* this request's alone */
    c->resize_above = 0;
    req->id = c->next_id++;
    if (c->next_id == 0) {
        c->next_id = 1;
    }
    size_t len;
    /* bulk data (COPY_TO, UPLOAD_CHUNK) is not copied: the frame is sent as head + data */
    const uint8_t *tail;
    size_t head_len, tail_len;
    int rc = tether_rpc_encode_split(req, c->tx, c->tx_cap, &head_len, &tail, &tail_len);
    if (rc) {
        return rc;
    }
    len = head_len + tail_len;
    c->tail = tail;
    c->tail_len = tail_len;
    const char *name = tether_rpc_type_name(req->type);
    if (c->t->report_damage) {
        return arq_request(c, req, rep, len, name, timeout_ms, resize_above);
    }
    for (int attempt = 0; attempt <= c->retries; attempt++) {
        rc = tether_transport_send2(c->t, c->tx, head_len, tail, tail_len, timeout_ms);
        if (rc) {
            return rc;
        }
        if (attempt) {
            c->t->stats.frames_resent++;
        }
        int64_t deadline = timeout_ms < 0 ? -1 : tether__rpc_now_ms() + timeout_ms;
        for (;;) {
            int left = -1;
            if (deadline >= 0) {
                int64_t l = deadline - tether__rpc_now_ms();
                left = l > 0 ? (int)l : 0;
            }
            const uint8_t *msg;
            size_t mlen;
            rc = tether_transport_recv(c->t, &msg, &mlen, left);
            if (rc == TETHER_ERR_TIMEOUT) {
                break;
            }
            if (rc) {
                return rc;
            }
            if (take_message(c, req, name, msg, mlen, rep, &rc)) {
                c->last_attempts = (uint32_t)attempt + 1;
                return rc;
            }
        }
    }
    return tether_set_error(TETHER_ERR_TIMEOUT, "%s (id %u): no reply within %d ms, %d attempt(s)",
                            name, (unsigned)req->id, timeout_ms, c->retries + 1);
}

/* ---- bulk transfers with several requests in flight ---- */

#define PIPE_MAX  8   /* requests in flight at most */
#define PIPE_HEAD 128 /* bytes of one request's head (its bulk data stays with the caller) */

typedef struct pipe_slot {
    uint32_t id, type;
    uint64_t offset;
    size_t len;
    uint8_t head[PIPE_HEAD];
    size_t head_len;
    const uint8_t *tail;
    size_t tail_len;
    uint32_t attempts;
    int64_t sent_at;
    double ahead; /* bytes on the line ahead of its reply when sent (all in flight, its reply) */
} pipe_slot;

/* Sends p, the last of `count` requests in flight (slots from `first`): its line bytes are
 * theirs and its own, and its reply. */
static int pipe_send(tether_rpc_client *c, pipe_slot *slots, uint32_t first, uint32_t count,
                     pipe_slot *p, int timeout_ms, const char *name) {
    p->ahead = reply_bytes(p->type, p->len);
    for (uint32_t k = 0; k < count; k++) {
        const pipe_slot *q = &slots[(first + k) % PIPE_MAX];
        p->ahead += (double)(q->head_len + q->tail_len) + 8;
    }
    int rc = tether_transport_send2(c->t, p->head, p->head_len, p->tail, p->tail_len, timeout_ms);
    if (rc) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        return tether_set_error(rc, "%s (id %u): cannot send: %s", name, (unsigned)p->id, e);
    }
    if (p->attempts++) {
        c->t->stats.frames_resent++;
    }
    p->sent_at = tether__rpc_now_ms();
    return TETHER_OK;
}

/* The requests in flight, oldest first, and where COPY_FROM replies' data goes (NULL = the
 * frame buffer). */
typedef struct pipe_ring {
    pipe_slot slots[PIPE_MAX];
    uint32_t first, count;
    uint8_t *into;
} pipe_ring;

/* t->place during a pipeline with copy_from_into: a large COPY_FROM reply ([type, id, bin]) to
 * a request in flight, of the length asked, has its data read straight into the caller's
 * memory at that request's offset. */
static bool pipe_place(void *ctx, const uint8_t *head, size_t head_len, size_t frame_len,
                       uint8_t **dst, size_t *data_off) {
    const pipe_ring *r = ctx;
    tether_mp_reader rd;
    tether_mp_reader_init(&rd, head, head_len);
    uint32_t n;
    uint64_t type, id;
    if (tether_mp_read_array(&rd, &n) != TETHER_OK || n != 3 ||
        tether_mp_read_uint(&rd, &type) != TETHER_OK ||
        type != (TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY) ||
        tether_mp_read_uint(&rd, &id) != TETHER_OK || rd.pos >= head_len) {
        return false;
    }
    size_t p = rd.pos, hn;
    uint64_t len;
    if (head[p] == 0xc5 && p + 3 <= head_len) {
        len = (uint64_t)head[p + 1] << 8 | head[p + 2];
        hn = 3;
    } else if (head[p] == 0xc6 && p + 5 <= head_len) {
        len = (uint64_t)head[p + 1] << 24 | (uint64_t)head[p + 2] << 16 |
              (uint64_t)head[p + 3] << 8 | head[p + 4];
        hn = 5;
    } else {
        return false; /* 0xc4 holds at most 255 bytes: never a placed frame */
    }
    if (p + hn + len != frame_len) {
        return false;
    }
    for (uint32_t k = 0; k < r->count; k++) {
        const pipe_slot *q = &r->slots[(r->first + k) % PIPE_MAX];
        if (q->id == id && q->type == TETHER_RPC_COPY_FROM && q->len == len) {
            *dst = r->into + q->offset;
            *data_off = p + hn;
            return true;
        }
    }
    return false;
}

static int pipeline_run(tether_rpc_client *c, pipe_ring *ring, uint64_t total, size_t max_chunk,
                        uint32_t window, int timeout_ms, tether_rpc_make_fn make,
                        tether_rpc_take_fn take, void *ctx);

int tether_rpc_client_pipeline(tether_rpc_client *c, uint64_t total, size_t max_chunk,
                               uint32_t window, int timeout_ms, tether_rpc_make_fn make,
                               tether_rpc_take_fn take, void *ctx) {
    pipe_ring ring;
    ring.first = ring.count = 0;
    ring.into = c ? c->copy_from_into : NULL;
    if (c) {
        c->copy_from_into = NULL;
    }
    if (!c || !c->t || !make || !take || max_chunk == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc pipeline: bad argument");
    }
    tether_transport *t = c->t;
    bool (*place)(void *, const uint8_t *, size_t, size_t, uint8_t **, size_t *) = t->place;
    void *place_ctx = t->place_ctx;
    if (ring.into && t->kind != TETHER_TRANSPORT_UART) {
        t->place = pipe_place;
        t->place_ctx = &ring;
    }
    int rc = pipeline_run(c, &ring, total, max_chunk, window, timeout_ms, make, take, ctx);
    /* a reply cut off by an error or a timeout finishes in the frame buffer, never in the
     * caller's memory after this returns */
    tether__transport_unplace(t);
    t->place = place;
    t->place_ctx = place_ctx;
    return rc;
}

static int pipeline_run(tether_rpc_client *c, pipe_ring *ring, uint64_t total, size_t max_chunk,
                        uint32_t window, int timeout_ms, tether_rpc_make_fn make,
                        tether_rpc_take_fn take, void *ctx) {
    if (window < 1) {
        window = 1;
    }
    if (window > PIPE_MAX) {
        window = PIPE_MAX;
    }
    bool arq = c->t->report_damage;
    pipe_slot *slots = ring->slots;
    ring->first = ring->count = 0; /* the requests in flight, oldest first */
    uint64_t next = 0;             /* the next byte a request is made for */
    bool made_empty = false;       /* total 0: its one request was made */
    const char *name = "request";
    int rto = c->rto_ms > 0 ? c->rto_ms : RTO_FIRST_MS;
    int64_t wait_from = tether__rpc_now_ms(); /* the deadline counts from the last progress */
    int64_t rx_at = wait_from;                /* when the line last brought bytes */
    uint64_t rx_mark = c->t->stats.bytes_received;
    int64_t limit = timeout_ms < 0 ? -1 : (int64_t)timeout_ms * (c->retries + 1);
    tether_rpc_msg req, rep;
    int rc;
    for (;;) {
        /* fill the window; on a lossy link it opens one request per window that got through
         * whole and closes to one at the first loss, as TCP's does, so that damage costs a
         * resend of one frame rather than of all in flight */
        uint32_t cap = window;
        if (arq) {
            if (c->win_now < 1 || c->win_now > window) {
                c->win_now = c->win_now < 1 ? 1 : window;
            }
            cap = (uint32_t)c->win_now;
        }
        while (ring->count < cap && (next < total || (total == 0 && !made_empty))) {
            size_t n = tether_rpc_client_chunk(c, max_chunk);
            if (n > total - next) {
                n = (size_t)(total - next);
            }
            memset(&req, 0, sizeof req);
            rc = make(ctx, next, n, &req);
            if (rc) {
                return rc;
            }
            req.id = c->next_id++;
            if (c->next_id == 0) {
                c->next_id = 1;
            }
            name = tether_rpc_type_name(req.type) ? tether_rpc_type_name(req.type) : name;
            pipe_slot *p = &slots[(ring->first + ring->count) % PIPE_MAX];
            memset(p, 0, sizeof *p);
            p->id = req.id;
            p->type = req.type;
            p->offset = next;
            p->len = n;
            rc = tether_rpc_encode_split(&req, p->head, sizeof p->head, &p->head_len, &p->tail,
                                         &p->tail_len);
            if (rc) {
                return rc;
            }
            rc = pipe_send(c, slots, ring->first, ring->count + 1, p, timeout_ms, name);
            if (rc) {
                return rc;
            }
            ring->count++;
            next += n;
            made_empty = total == 0;
        }
        if (ring->count == 0) {
            return TETHER_OK;
        }
        pipe_slot *old = &slots[ring->first];
        int64_t now = tether__rpc_now_ms();
        int64_t deadline = limit < 0 ? -1 : wait_from + limit;
        int64_t until = deadline;
        if (arq) {
            /* its line time after it was sent, or a latency's worth after the line last
             * brought bytes (a long reply on its way) */
            int64_t resend_at = old->sent_at + rto_for(c, rto, old->ahead);
            if (rx_at + rto > resend_at) {
                resend_at = rx_at + rto;
            }
            if (until < 0 || resend_at < until) {
                until = resend_at;
            }
        }
        int left = until < 0 ? -1 : until > now ? (int)(until - now) : 0;
        const uint8_t *msg;
        size_t mlen;
        rc = tether_transport_recv(c->t, &msg, &mlen, left);
        bool resend = false;
        if (rc == TETHER_ERR_TIMEOUT) {
            now = tether__rpc_now_ms();
            if (deadline >= 0 && now >= deadline) {
                return tether_set_error(
                    TETHER_ERR_TIMEOUT, "%s (id %u, bytes %llu..%llu): no reply within %lld ms",
                    name, (unsigned)old->id, (unsigned long long)old->offset,
                    (unsigned long long)(old->offset + old->len), (long long)(now - wait_from));
            }
            if (!arq) {
                continue;
            }
            if (c->t->stats.bytes_received != rx_mark) { /* a long frame on its way */
                rx_mark = c->t->stats.bytes_received;
                rx_at = now;
                continue;
            }
            rto = rto * 2 > RTO_MAX_MS ? RTO_MAX_MS : rto * 2;
            resend = true;
        } else if (rc == TETHER_TRANSPORT_DAMAGED || rc == TETHER_TRANSPORT_NAK) {
            resend = true;
        } else if (rc < 0) {
            return rc;
        } else {
            uint32_t type, id;
            rx_at = tether__rpc_now_ms();
            rx_mark = c->t->stats.bytes_received;
            if (tether_rpc_peek_header(msg, mlen, &type, &id) != 0) {
                c->stale_replies++;
                continue;
            }
            if (type == TETHER_RPC_LOG) {
                if (c->on_log && tether_rpc_tiny_decode(msg, mlen, &rep) == 0) {
                    c->on_log(c->log_ctx, &rep);
                }
                continue;
            }
            if (id != old->id) {
                /* a later request answered first: the oldest's reply was lost (go back) */
                bool later = false;
                for (uint32_t k = 1; k < ring->count; k++) {
                    later |= slots[(ring->first + k) % PIPE_MAX].id == id;
                }
                if (id == 0 && type == TETHER_RPC_ERROR &&
                    tether_rpc_tiny_decode(msg, mlen, &rep) == 0) {
                    return tether_set_error(rep.u.error.code, "%s: device: %.*s", name,
                                            (int)rep.u.error.message.len, rep.u.error.message.ptr);
                }
                c->stale_replies++;
                if (!later || !arq) {
                    continue;
                }
                resend = true;
            } else {
                rc = tether_rpc_tiny_decode(msg, mlen, &rep);
                if (rc) {
                    return rc;
                }
                if (rep.type == TETHER_RPC_ERROR) {
                    return tether_set_error(rep.u.error.code, "%s failed: %.*s", name,
                                            (int)rep.u.error.message.len, rep.u.error.message.ptr);
                }
                if (rep.type != (old->type | TETHER_RPC_REPLY)) {
                    return tether_set_error(TETHER_ERR_PROTOCOL, "%s got a %s", name,
                                            tether_rpc_type_name(rep.type));
                }
                if (c->t->placed && rep.type == (TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY) &&
                    rep.u.copy_from_rep.data.ptr == msg + c->t->placed_off) {
                    /* its data was read straight into the caller's memory (pipe_place) */
                    rep.u.copy_from_rep.data.ptr = c->t->placed;
                }
                if (arq) {
                    learn(c, TETHER_RPC_COPY_TO, old->attempts, now - old->sent_at,
                          old->head_len + old->tail_len, mlen, old->ahead);
                    if (old->attempts == 1) {
                        c->win_now += 1.0 / (c->win_now < 1 ? 1 : c->win_now);
                    }
                }
                rc = take(ctx, old->offset, old->len, &rep);
                if (rc) {
                    return rc;
                }
                ring->first = (ring->first + 1) % PIPE_MAX;
                ring->count--;
                wait_from = tether__rpc_now_ms();
                continue;
            }
        }
        if (!resend) {
            continue;
        }
        observe(c, false, (double)(old->head_len + old->tail_len + 40));
        c->win_now = 1;
        /* the oldest far too big for what the line now carries: abandon what is in flight
         * (late arrivals are idempotent writes or stale replies) and go on in smaller pieces */
        if (old->attempts >= 3 && old->len > 2 * CHUNK_MIN &&
            best_chunk(c, old->len) * 2 < (double)old->len) {
            if (trace()) {
                fprintf(stderr, "tether link: %s id %u: %u attempts; smaller chunks\n", name,
                        (unsigned)old->id, (unsigned)old->attempts);
            }
            next = old->offset;
            ring->count = 0;
            c->chunk_now = 0;
            continue;
        }
        /* go back: the oldest and everything after it, in order (the device's reply cache
         * answers what it already ran without running it again) */
        if (trace()) {
            fprintf(stderr, "tether link: %s id %u: resend #%u of %u in flight after %s\n", name,
                    (unsigned)old->id, (unsigned)old->attempts, (unsigned)ring->count,
                    rc == TETHER_ERR_TIMEOUT     ? "no answer"
                    : rc == TETHER_TRANSPORT_NAK ? "a NAK"
                                                 : "a damaged or lost frame");
        }
        for (uint32_t k = 0; k < ring->count; k++) {
            rc = pipe_send(c, slots, ring->first, k + 1, &slots[(ring->first + k) % PIPE_MAX],
                           timeout_ms, name);
            if (rc) {
                return rc;
            }
        }
    }
}
