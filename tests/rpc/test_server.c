/*
 * tether rpc tests: the test "device" (see test_server.h). Uses the msgpack-c codec to decode
 * and the tiny codec to encode, so every transport test also crosses the two codecs.
 */
#include "test_server.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tether/crt.h"

static uint8_t mem[TS_MEM];
static uint32_t lose_count;
static int lost_once;

static int send_msg(tether_transport *t, tether_rpc_reply_cache *cache, const tether_rpc_msg *m,
                    uint8_t *tx, size_t cap, int send_it) {
    size_t len;
    int rc = tether_rpc_tiny_encode(m, tx, cap, &len);
    if (rc) {
        return rc;
    }
    if (m->id && cache) {
        tether_rpc_reply_cache_store(cache, m->id, tx, len); /* too big: not cached */
    }
    return send_it ? tether_transport_send(t, tx, len, 5000) : 0;
}

int ts_serve(tether_transport *t, ts_stats *st) {
    size_t cap = t->max_frame;
    uint8_t *tx = malloc(cap);
    static uint8_t cache_mem[4 * 256];
    tether_rpc_reply_cache cache;
    tether_rpc_reply_cache_init(&cache, cache_mem, sizeof cache_mem, 4);
    int result = 0;
    lose_count = 0;
    uint32_t client_frame = TETHER_RPC_MIN_FRAME;
    lost_once = 0;
    for (;;) {
        const uint8_t *in;
        size_t n;
        int rc = tether_transport_recv(t, &in, &n, -1);
        if (rc == TETHER_ERR_IO) {
            break; /* peer closed */
        }
        if (rc) {
            result = rc;
            break;
        }
        st->requests++;
        uint32_t type, id;
        const uint8_t *cached;
        size_t clen;
        if (tether_rpc_peek_header(in, n, &type, &id) == 0 &&
            tether_rpc_reply_cache_lookup(&cache, id, &cached, &clen)) {
            st->duplicates++;
            tether_transport_send(t, cached, clen, 5000);
            continue;
        }
        tether_rpc_msg req, rep;
        memset(&rep, 0, sizeof rep);
        rc = tether_rpc_msgpack_decode(in, n, &req);
        if (rc) {
            tether_rpc_make_error(&rep, id, rc, tether_last_error());
            send_msg(t, NULL, &rep, tx, cap, 1);
            continue;
        }
        rep.id = req.id;
        rep.type = req.type | TETHER_RPC_REPLY;
        int send_it = 1, stop = 0;
        switch (req.type) {
        case TETHER_RPC_HELLO:
            rep.u.hello_rep.version = TETHER_RPC_VERSION;
            rep.u.hello_rep.triple = tether_rpc_str_c("x86_64-linux-gnu");
            rep.u.hello_rep.arch = tether_rpc_str_c("x86_64");
            rep.u.hello_rep.little_endian = true;
            rep.u.hello_rep.pointer_bits = 64;
            rep.u.hello_rep.max_frame = t->max_frame;
            rep.u.hello_rep.window = 1;
            rep.u.hello_rep.scopes = 1;
            /* replies to this client may be as large as its max_frame */
            if (req.u.hello_req.max_frame > cap) {
                uint8_t *nt = realloc(tx, req.u.hello_req.max_frame);
                if (nt) {
                    tx = nt;
                    cap = req.u.hello_req.max_frame;
                }
            }
            client_frame = req.u.hello_req.max_frame;
            break;
        case TETHER_RPC_COPY_TO: {
            const tether_rpc_copy_to_req *c = &req.u.copy_to_req;
            if (c->offset > TS_MEM || c->data.len > TS_MEM - c->offset) {
                tether_rpc_make_error(&rep, req.id, TETHER_ERR_LIMIT, "copy past the array");
                break;
            }
            if (c->data.len) {
                memcpy(mem + c->offset, c->data.ptr, c->data.len);
            }
            st->copied += c->data.len;
            rep.u.copy_to_rep.written = c->data.len;
            break;
        }
        case TETHER_RPC_COPY_FROM: {
            const tether_rpc_copy_from_req *c = &req.u.copy_from_req;
            if (c->offset > TS_MEM || c->length > TS_MEM - c->offset ||
                c->length > tether_rpc_chunk_max(client_frame)) {
                tether_rpc_make_error(&rep, req.id, TETHER_ERR_LIMIT, "copy past the array");
                break;
            }
            rep.u.copy_from_rep.data.ptr = mem + c->offset;
            rep.u.copy_from_rep.data.len = (uint32_t)c->length;
            break;
        }
        case TETHER_RPC_CALL:
            switch (req.u.call_req.func) {
            case TS_FUNC_LOG: {
                tether_rpc_msg log;
                memset(&log, 0, sizeof log);
                log.type = TETHER_RPC_LOG;
                log.u.log.level = TETHER_LOG_INFO;
                log.u.log.text = tether_rpc_str_c("calling function 1");
                send_msg(t, NULL, &log, tx, cap, 1);
                rep.u.call_rep.ret = 42;
                break;
            }
            case TS_FUNC_CORRUPT: {
                /* garbage, then a frame whose CRC is wrong, then the real reply */
                uint8_t bad[64];
                size_t bl;
                tether_uart_frame_encode("corrupted!", 10, bad, sizeof bad, &bl);
                bad[5] ^= 0x01;
                const uint8_t junk[] = {0x01, 0x02, 0x03};
                if (write(t->fd_write, junk, sizeof junk) < 0 || write(t->fd_write, bad, bl) < 0) {
                    result = TETHER_ERR_IO;
                }
                rep.u.call_rep.ret = 66;
                break;
            }
            case TS_FUNC_LOSE:
                lose_count++;
                if (!lost_once) {
                    lost_once = 1;
                    send_it = 0;
                }
                rep.u.call_rep.ret = 77;
                break;
            case TS_FUNC_COUNT:
                rep.u.call_rep.ret = (int32_t)lose_count;
                break;
            default:
                tether_rpc_make_error(&rep, req.id, TETHER_ERR_NOT_FOUND, "no such function");
                break;
            }
            break;
        case TETHER_RPC_SHUTDOWN:
            stop = 1;
            break;
        default:
            tether_rpc_make_error(&rep, req.id, TETHER_ERR_UNSUPPORTED,
                                  "not supported by the test server");
            break;
        }
        rc = send_msg(t, &cache, &rep, tx, cap, send_it);
        if (rc) {
            result = rc;
            break;
        }
        if (stop) {
            break;
        }
    }
    free(tx);
    return result;
}
