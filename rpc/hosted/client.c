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
#include "tether/rpc/transport.h"
#include "transport_internal.h"

int tether_rpc_client_init(tether_rpc_client *c, tether_transport *t, size_t tx_cap, int retries) {
    if (!c || !t)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: null argument");
    memset(c, 0, sizeof *c);
    if (tx_cap == 0)
        tx_cap = t->max_frame;
    c->tx = malloc(tx_cap);
    if (!c->tx)
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "rpc client: no memory");
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
        if (c->on_log && tether_rpc_msgpack_decode(msg, mlen, rep) == 0)
            c->on_log(c->log_ctx, rep);
        return 0;
    }
    if (type == TETHER_RPC_ERROR && id == 0 && tether_rpc_msgpack_decode(msg, mlen, rep) == 0) {
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
    *rc = tether_rpc_msgpack_decode(msg, mlen, rep);
    if (*rc)
        return 1;
    if (rep->type == TETHER_RPC_ERROR) {
        int code = rep->u.error.code;
        *rc = tether_set_error(code, "%s failed: %.*s", name, (int)rep->u.error.message.len,
                               rep->u.error.message.ptr);
        return 1;
    }
    if (rep->type != (req->type | TETHER_RPC_REPLY))
        *rc = tether_set_error(TETHER_ERR_PROTOCOL, "%s got a %s", name,
                               tether_rpc_type_name(rep->type));
    else
        *rc = TETHER_OK;
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
 * and only for link-only requests) and its last, successful attempt. */
static void learn(tether_rpc_client *c, uint32_t type, uint32_t attempts, int64_t rtt_ms,
                  size_t req_len, size_t rep_len) {
    c->last_attempts = attempts;
    if (attempts == 1 && link_only(type)) {
        double m = (double)rtt_ms;
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

double tether_rpc_client_error_rate(const tether_rpc_client *c) {
    if (!c || c->att_sum <= 0 || c->fail_sum <= 1e-9 || c->byte_sum <= 0)
        return 0;
    double f = c->fail_sum / c->att_sum; /* failed share of the attempts */
    if (f > 0.99)
        f = 0.99;
    return -log(1 - f) / (c->byte_sum / c->att_sum);
}

/* The chunk of data that moves the most per byte time at the estimated error rate (max when
 * none was seen). A frame of L bytes carries L - h data bytes, gets through with probability
 * (1 - p)^L and costs L + t byte times: (L - h)(1 - p)^L / (L + t) is largest where
 * (L - h)(L + t) = (h + t) / q, q = -ln(1 - p). */
static double best_chunk(const tether_rpc_client *c, size_t max) {
    double p = tether_rpc_client_error_rate(c);
    if (p <= 0)
        return (double)max;
    double h = CHUNK_HEADER, t = CHUNK_TURN, q = -log(1 - p);
    double L = ((h - t) + sqrt((t - h) * (t - h) + 4 * (h * t + (h + t) / q))) / 2;
    return L - h;
}

size_t tether_rpc_client_chunk(tether_rpc_client *c, size_t max) {
    if (!c || !c->t || !c->t->report_damage || max <= CHUNK_MIN)
        return max;
    size_t now = c->chunk_now ? c->chunk_now : (max < CHUNK_FIRST ? max : CHUNK_FIRST);
    /* down to the best size at once; up by half a step at a time while frames get through */
    double next = (double)now * 1.5, target = best_chunk(c, max);
    if (target < next)
        next = target;
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
    if (rto < c->min_rto_ms)
        rto = c->min_rto_ms;
    c->min_rto_ms = 0;

    uint32_t attempts = 0;
    int64_t sent_at = start;
    int rc;
    for (;;) {
        rc = tether_transport_send(c->t, c->tx, len, timeout_ms);
        if (rc) {
            char e[TETHER_ERROR_MSG_MAX];
            snprintf(e, sizeof e, "%s", tether_last_error());
            return tether_set_error(rc, "%s (id %u): cannot send%s: %s", name, (unsigned)req->id,
                                    attempts ? " again" : "", e);
        }
        if (attempts++)
            c->t->stats.frames_resent++;
        sent_at = tether__rpc_now_ms();
        int64_t resend_at = sent_at + rto;
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
                if (deadline >= 0 && now >= deadline)
                    return tether_set_error(TETHER_ERR_TIMEOUT,
                                            "%s (id %u): no reply within %lld ms, %u attempt(s) "
                                            "on a lossy link",
                                            name, (unsigned)req->id, (long long)(now - start),
                                            (unsigned)attempts);
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
                learn(c, req->type, attempts, tether__rpc_now_ms() - sent_at, len, mlen);
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
                    if (trace())
                        fprintf(stderr, "tether link: %s id %u: %u attempts; smaller chunks\n",
                                name, (unsigned)req->id, (unsigned)attempts);
                    return TETHER_RPC_SMALLER;
                }
            }
            if (resend && trace())
                fprintf(stderr, "tether link: %s id %u: resend #%u after %s (%lld ms)\n", name,
                        (unsigned)req->id, (unsigned)attempts,
                        rc == TETHER_ERR_TIMEOUT     ? "no answer"
                        : rc == TETHER_TRANSPORT_NAK ? "a NAK"
                                                     : "a damaged frame",
                        (long long)(tether__rpc_now_ms() - sent_at));
        }
    }
}

int tether_rpc_client_request(tether_rpc_client *c, tether_rpc_msg *req, tether_rpc_msg *rep,
                              int timeout_ms) {
    if (!c || !c->t || !req || !rep)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: null argument");
    if (req->type & TETHER_RPC_REPLY || req->type == TETHER_RPC_LOG)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: %s is not a request",
                                tether_rpc_type_name(req->type) ? tether_rpc_type_name(req->type)
                                                                : "message");
    size_t resize_above = c->resize_above; /* this request's alone */
    c->resize_above = 0;
    req->id = c->next_id++;
    if (c->next_id == 0)
        c->next_id = 1;
    size_t len;
    int rc = tether_rpc_msgpack_encode(req, c->tx, c->tx_cap, &len);
    if (rc)
        return rc;
    const char *name = tether_rpc_type_name(req->type);
    if (c->t->report_damage)
        return arq_request(c, req, rep, len, name, timeout_ms, resize_above);
    for (int attempt = 0; attempt <= c->retries; attempt++) {
        rc = tether_transport_send(c->t, c->tx, len, timeout_ms);
        if (rc)
            return rc;
        if (attempt)
            c->t->stats.frames_resent++;
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
            if (rc == TETHER_ERR_TIMEOUT)
                break;
            if (rc)
                return rc;
            if (take_message(c, req, name, msg, mlen, rep, &rc)) {
                c->last_attempts = (uint32_t)attempt + 1;
                return rc;
            }
        }
    }
    return tether_set_error(TETHER_ERR_TIMEOUT, "%s (id %u): no reply within %d ms, %d attempt(s)",
                            name, (unsigned)req->id, timeout_ms, c->retries + 1);
}
