/*
 * tether rpc: the blocking request/reply helper (tether_rpc_client) used by the host client and
 * by tests: numbers requests, resends on timeout, skips stale replies, forwards LOG messages and
 * turns ERROR replies into a status plus the last-error text.
 *
 * Must stay true: a request is matched only with a reply carrying its id, except an ERROR with
 * id 0 (the device speaking to the connection: busy, idle, a frame it could not read), which
 * fails the pending request with its message; a resend uses the same bytes (same id) so the
 * device's reply cache can recognise it.
 */
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

int tether_rpc_client_request(tether_rpc_client *c, tether_rpc_msg *req, tether_rpc_msg *rep,
                              int timeout_ms) {
    if (!c || !c->t || !req || !rep)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: null argument");
    if (req->type & TETHER_RPC_REPLY || req->type == TETHER_RPC_LOG)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "rpc client: %s is not a request",
                                tether_rpc_type_name(req->type) ? tether_rpc_type_name(req->type)
                                                                : "message");
    req->id = c->next_id++;
    if (c->next_id == 0)
        c->next_id = 1;
    size_t len;
    int rc = tether_rpc_msgpack_encode(req, c->tx, c->tx_cap, &len);
    if (rc)
        return rc;
    const char *name = tether_rpc_type_name(req->type);
    for (int attempt = 0; attempt <= c->retries; attempt++) {
        rc = tether_transport_send(c->t, c->tx, len, timeout_ms);
        if (rc)
            return rc;
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
            uint32_t type, id;
            if (tether_rpc_peek_header(msg, mlen, &type, &id) != 0) {
                c->stale_replies++;
                continue;
            }
            if (type == TETHER_RPC_LOG) {
                if (c->on_log && tether_rpc_msgpack_decode(msg, mlen, rep) == 0)
                    c->on_log(c->log_ctx, rep);
                continue;
            }
            if (type == TETHER_RPC_ERROR && id == 0 &&
                tether_rpc_msgpack_decode(msg, mlen, rep) == 0) {
                /* the device speaks to the connection, not to a request (busy, idle, a frame
                 * it could not read): it closes the connection after this */
                return tether_set_error(rep->u.error.code, "%s: device: %.*s", name,
                                        (int)rep->u.error.message.len, rep->u.error.message.ptr);
            }
            if (id != req->id) {
                c->stale_replies++;
                continue;
            }
            rc = tether_rpc_msgpack_decode(msg, mlen, rep);
            if (rc)
                return rc;
            if (rep->type == TETHER_RPC_ERROR) {
                int code = rep->u.error.code;
                return tether_set_error(code, "%s failed: %.*s", name,
                                        (int)rep->u.error.message.len, rep->u.error.message.ptr);
            }
            if (rep->type != (req->type | TETHER_RPC_REPLY))
                return tether_set_error(TETHER_ERR_PROTOCOL, "%s got a %s", name,
                                        tether_rpc_type_name(rep->type));
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_TIMEOUT, "%s (id %u): no reply within %d ms, %d attempt(s)",
                            name, (unsigned)req->id, timeout_ms, c->retries + 1);
}
