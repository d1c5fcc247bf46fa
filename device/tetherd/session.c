/*
 * tetherd session: the request loop of one host session (see session.h and
 * session_internal.h). Every request is handled by the shared request handler of rpc/
 * (tether/rpc/server.h: HELLO/AUTH gating, decoding, the checks, codes and messages of UPLOAD,
 * LOAD_MODULE, GET_FUNCTION, ALLOC/FREE/COPY_TO/COPY_FROM, CALL/TIME validation, RESET,
 * SHUTDOWN, the reply cache and the one reply per request), the same handler the MCU firmware
 * runs; this file plugs in tetherd's side: decoding with sequence storage, sending on the
 * transport, HELLO's contents, AUTH against the token, running calls (call.c, cl_call.c) and
 * the device interface (memory.c).
 *
 * What must stay true:
 *  - every request gets exactly one reply (result or ERROR naming the problem), sent by the core;
 *  - until AUTH succeeds (when a token is configured) nothing but HELLO/AUTH is served, and a
 *    wrong mac ends the session having executed nothing;
 *  - the daemon's watch (guard.c) always shows what the session does: HELLO until the peer is
 *    in, IDLE while waiting for a request, BUSY while handling one, CALL while uploaded code
 *    runs; the daemon ends a session that overstays its phase;
 *  - a large COPY_TO's data is read by the transport straight into its array only where the
 *    core says so (tether_server_place_copy_to), and a large COPY_FROM reply is sent from the
 *    array (ops->send2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "session_internal.h"

/* ops->send of the server core: one encoded message (replies and LOG). */
static int send_bytes(void *ctx, const uint8_t *bytes, size_t len) {
    session *s = ctx;
    return tether_transport_send(s->t, bytes, len, 30000);
}

/* ops->hello (the core checked the version and gates on auth_required afterwards). */
static int on_hello(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    session *s = ctx;
    const tether_rpc_hello_req *h = &req->u.hello_req;
    /* the core freed whatever a previous HELLO's session left (memory.c) */
    /* a serial line to a host that takes link-2 frames: CRC-32 frames from this reply on, and
     * a NAK for every damaged frame so that the host resends at once (docs/rpc.md) */
    bool link2 = s->t->kind == TETHER_TRANSPORT_UART && (h->link & TETHER_RPC_LINK_UART2);
    s->t->link2 = link2;
    s->t->send_naks = link2;
    static char triple[96 + 16], arch[96], cpu[64], features[TETHER_RPC_MAX_FEATURES];
    tetherd_cpu_describe(cpu, sizeof cpu, features, sizeof features);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(arch, sizeof arch, "%.64s", u.machine);
        snprintf(triple, sizeof triple, "%.64s-linux-gnu", u.machine);
    }
    tether_rpc_hello_rep *r = &rep->u.hello_rep;
    r->version = TETHER_RPC_VERSION;
    r->triple = tether_rpc_str_c(triple);
    r->arch = tether_rpc_str_c(arch);
    r->cpu = tether_rpc_str_c(cpu);
    r->cpu_features = tether_rpc_str_c(features);
    uint16_t one = 1;
    r->little_endian = *(uint8_t *)&one == 1;
    r->pointer_bits = (uint32_t)(sizeof(void *) * 8);
    r->max_frame = s->t->max_frame;
    r->window = 4; /* chunks in flight: requests wait in the socket or tty, replies in the cache */
    r->clock_hz = 0;
    r->scopes = TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_GLOBAL);
    if (s->cfg->cl_max_width) {
        r->scopes |= TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_TEXTURE) |
                     TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_TEXTURE_WEIGHT);
        r->opencl = true;
        r->image_max_width = s->cfg->cl_max_width;
        r->image_max_height = s->cfg->cl_max_height;
        r->cl_max_work_group_size = s->cfg->cl_max_work_group_size;
        r->cl_wg_multiple = s->cfg->cl_wg_multiple;
        r->cl_local_mem_size = s->cfg->cl_local_mem_size;
        r->cl_compute_units = s->cfg->cl_compute_units;
        r->cl_features = s->cfg->cl_features;
    }
    if (s->cfg->npools == 0) {
        r->num_pools = 1;
        r->pools[0] = tether_rpc_str_c("dram");
    } else {
        r->num_pools = (uint32_t)s->cfg->npools;
        for (int i = 0; i < s->cfg->npools; i++) {
            r->pools[i] = tether_rpc_str_c(s->cfg->pool_name[i]);
            r->pool_sizes[i] = s->cfg->pool_capacity[i];
        }
    }
    r->heap_size = s->cfg->max_alloc;
    r->stack_size = s->cfg->stack_size;
    r->link = link2 ? TETHER_RPC_LINK_UART2 : 0;
    r->auth_required = s->cfg->token != NULL;
    if (r->auth_required) {
        tether_rpc_auth_nonce(s->nonce);
        r->nonce.ptr = s->nonce;
        r->nonce.len = TETHER_RPC_NONCE_BYTES;
    }
    tetherd_log(s->cfg, 1, s->peer, "hello from client '%.*s'", (int)h->client.len,
                h->client.ptr ? h->client.ptr : "");
    return 0;
}

/* ops->auth: the mac against the nonce of the last HELLO (the core answers and, on a wrong
 * mac, ends the session having executed nothing). */
static int on_auth(void *ctx, tether_rpc_bytes mac) {
    session *s = ctx;
    if (tether_rpc_auth_verify(s->cfg->token, s->cfg->token_len, s->nonce, mac)) {
        tetherd_log(s->cfg, 0, s->peer, "auth failed: wrong token, closing the session");
        return TETHER_ERR_AUTH;
    }
    tetherd_log(s->cfg, 0, s->peer, "authenticated");
    return 0;
}

/* ---- the ops of the shared server core ---- */

/* ops->decode: the tiny codec, as on the MCU firmware (the same words for a malformed request),
 * with room for the steps of a kernel sequence. */
static int op_decode(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out) {
    session *s = ctx;
    int rc = tether_rpc_tiny_decode_seq(buf, len, out, &s->seq);
    if (rc == 0 && s->cfg->verbose >= 1) {
        tetherd_log(s->cfg, 1, s->peer, "request %s id %u", tether_rpc_type_name(out->type),
                    (unsigned)out->id);
    }
    return rc;
}

static int op_invoke(void *ctx, const tether_server_call *call, tether_rpc_msg *rep) {
    session *s = ctx;
#ifdef TETHERD_HAVE_OPENCL
    if (call->fn.kernel) {
        return tetherd_cl_invoke(s, call, rep);
    }
#endif
    return tetherd_cpu_invoke(s, call, rep);
}

#ifdef TETHERD_HAVE_OPENCL
/* ops->request: only kernel sequences come here (the core handles every other request). */
static int op_request(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    return tetherd_cl_seq(ctx, req, rep);
}
#endif

static void op_note(void *ctx, int level, const char *text) {
    session *s = ctx;
    if (level == TETHER_LOG_WARN) {
        tetherd_log(s->cfg, -1, s->peer, "malformed message dropped: %s", text);
    } else {
        tetherd_log(s->cfg, 1, s->peer, "error: %s", text);
    }
}

/* ops->send2: a large COPY_FROM reply straight from the array's memory. */
static int send_bytes2(void *ctx, const uint8_t *head, size_t head_len, const uint8_t *tail,
                       size_t tail_len) {
    session *s = ctx;
    return tether_transport_send2(s->t, head, head_len, tail, tail_len, 30000);
}

static const tether_server_ops k_ops = {
    .decode = op_decode,
    .send = send_bytes,
    .send2 = send_bytes2,
    .hello = on_hello,
    .auth = on_auth,
    .invoke = op_invoke,
#ifdef TETHERD_HAVE_OPENCL
    .request = op_request,
#endif
    .note = op_note,
};

int tetherd_session_run(const tetherd_config *cfg, tether_transport *t, const char *dir,
                        const char *peer) {
    session *s = calloc(1, sizeof *s);
    if (!s) {
        return TETHER_ERR_OUT_OF_MEMORY;
    }
    s->cfg = cfg;
    s->t = t;
    s->dir = dir;
    s->peer = peer;
    s->tx_cap = t->max_frame;
    s->tx = malloc(s->tx_cap);
    /* the shared request handler over this device (memory.c); the reply cache matters on
     * --uart (a client resends a request whose reply was lost) */
    tetherd_device_init(s);
    tether_rpc_reply_cache_init(&s->cache, s->cache_mem, sizeof s->cache_mem, CACHE_SLOTS);
    const tether_server_config sc = {.ops = &k_ops,
                                     .ctx = s,
                                     .req = &s->req,
                                     .rep = &s->rep,
                                     .tx = s->tx,
                                     .tx_cap = s->tx_cap,
                                     .cache = &s->cache,
                                     .values = s->call_values,
                                     .codes = s->call_codes,
                                     .close_on_garbage = t->kind != TETHER_TRANSPORT_UART,
                                     .dev = &s->dev};
    tether_server_init(&s->srv, &sc);
    s->stack_size = cfg->stack_size;
    /* whole pages, so that the pages below a call's high-water mark can be guarded */
    long pg = sysconf(_SC_PAGESIZE);
    s->stack_size = (s->stack_size + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    s->stack =
        mmap(NULL, s->stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->stack == MAP_FAILED) {
        s->stack = NULL;
    }
    int rc = 0;
    if (!s->tx || !s->stack) {
        rc = TETHER_ERR_OUT_OF_MEMORY;
        goto out;
    }
    rc = tether_posix_call_stack_init(&s->call_stack, s->stack, s->stack_size);
    if (!rc) {
        rc = tether_posix_call_stack_guard(&s->call_stack, true);
    }
    if (rc) {
        goto out;
    }
    tetherd_guard_install(&s->call_stack);
    if (t->kind != TETHER_TRANSPORT_UART) { /* COPY_TO data straight into its array */
        t->place = tether_server_place_copy_to;
        t->place_ctx = &s->srv;
    }
    tetherd_watch_attach(cfg->watch);
    tetherd_log(cfg, 0, peer, "session started");
    bool authed = false; /* the watch is in HELLO (set by the daemon) until the peer is in */
    uint64_t hello_deadline = cfg->watch ? cfg->watch->deadline_ns : 0;
    while (!s->shutdown) {
        const uint8_t *buf;
        size_t len;
        /* the daemon ends a session whose peer does not get in (HELLO, AUTH) within the hello
         * timeout, or sends nothing for the idle timeout (a half frame included) */
        if (s->srv.hello_done && s->srv.authed) {
            uint64_t idle = (uint64_t)cfg->idle_timeout_ms * 1000000u;
            tetherd_watch_set(TETHERD_PHASE_IDLE, idle ? tetherd_now_ns() + idle : 0);
            authed = true;
        } else {
            if (authed) { /* a new HELLO: in again only after its AUTH */
                uint64_t hello = (uint64_t)cfg->hello_timeout_ms * 1000000u;
                hello_deadline = hello ? tetherd_now_ns() + hello : 0;
                authed = false;
            }
            tetherd_watch_set(TETHERD_PHASE_HELLO, hello_deadline);
        }
        rc = tether_transport_recv(t, &buf, &len, -1);
        tetherd_watch_busy();
        s->srv.placed_src = rc == 0 && t->placed ? buf + t->placed_off : NULL;
        s->srv.placed_dst = t->placed;
        if (rc == TETHER_ERR_IO) {
            rc = 0; /* the peer went away */
            break;
        }
        if (rc) {
            tetherd_log(cfg, -1, peer, "receive failed: %s", tether_last_error());
            break;
        }
        if (tether_server_handle_frame(&s->srv, buf, len) == TETHER_SERVER_CLOSE) {
            s->shutdown = 1;
        }
        rc = 0;
    }
out:
    tetherd_device_close(s);
    tetherd_log(cfg, 0, peer, "session ended");
    if (s->stack) {
        tetherd_guard_remove();
        tether_posix_call_stack_guard(&s->call_stack, false);
        munmap(s->stack, s->stack_size);
    }
    free(s->tx);
    free(s);
    return rc;
}
