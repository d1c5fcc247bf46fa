/*
 * tether host: session implementation on top of rpc's blocking client.
 *
 * What must stay true: the host never assumes anything about the device that HELLO did not say
 * (chunk size = tether_rpc_chunk_max of the smaller max frame; at most `window` chunks in
 * flight, through the client's pipeline; on a serial line only COPY chunks, whose order does not
 * matter, and uploads one at a time); every request has a timeout;
 * every failure returns a negative status with a message that names the request. Request ids
 * start at a random value per session, so a device's reply cache can never answer a request of
 * this session with a reply from an earlier one. After a fault or a device restart the session
 * is lost: no request reaches the device until tether_session_reconnect made a new session.
 * A serial line is locked by the transport from open to close (reconnect keeps it open). On a
 * serial line the client resends only the exchange that was damaged, at once, and sizes chunks
 * to the error rate it measures (docs/rpc.md, "UART link"); a request is never executed twice
 * (the device's reply cache), so a resend can cost time but never a wrong result.
 * This file: URLs, opening (HELLO, AUTH), reconnecting and closing, and the request path;
 * uploads, modules and arrays are in session_transfer.c, calls, TIME, OpenCL launches and
 * sequences in session_call.c.
 */
#include "tether/host.h"
#include "tether/pool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "session_internal.h"
#include "tether/crt.h"
#include "tether/rpc.h"

static void copy_str(char *dst, size_t size, tether_rpc_str s) {
    size_t n = s.len < size - 1 ? s.len : size - 1;
    if (n) {
        memcpy(dst, s.ptr, n);
    }
    dst[n] = 0;
}

/* A device URL taken apart (syntax only; nothing is opened). */
typedef struct device_url {
    enum { URL_LOCAL, URL_TCP, URL_UART, URL_TCP_SERIAL } kind;
    char host[256]; /* tcp, tcp-serial */
    uint16_t port;
    char path[512]; /* uart */
    uint32_t baud;
    uint32_t frame; /* uart, tcp-serial: largest frame on this link (0 = the default) */
} device_url;

/* The query of a serial URL: baud=N and frame=N, '&'-separated, each at most once. */
static int parse_serial_query(const char *url, const char *q, device_url *u, bool baud_ok) {
    bool seen_baud = false, seen_frame = false;
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t n = amp ? (size_t)(amp - q) : strlen(q);
        char *end;
        errno = 0;
        if (baud_ok && n > 5 && strncmp(q, "baud=", 5) == 0 && !seen_baud) {
            unsigned long baud = strtoul(q + 5, &end, 10);
            if (errno || end != q + n || baud == 0 || baud > 20000000) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': bad baud rate", url);
            }
            u->baud = (uint32_t)baud;
            seen_baud = true;
        } else if (n > 6 && strncmp(q, "frame=", 6) == 0 && !seen_frame) {
            unsigned long f = strtoul(q + 6, &end, 10);
            if (errno || end != q + n || f < TETHER_RPC_MIN_FRAME || f > TETHER_UART_MAX_PAYLOAD) {
                return tether_set_error(
                    TETHER_ERR_INVALID_ARG, "bad URL '%s': frame must be %u..%u bytes", url,
                    (unsigned)TETHER_RPC_MIN_FRAME, (unsigned)TETHER_UART_MAX_PAYLOAD);
            }
            u->frame = (uint32_t)f;
            seen_frame = true;
        } else {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "bad URL '%s': the parameters are %sframe=N (each once, "
                                    "'&' between them)",
                                    url, baud_ok ? "baud=N and " : "");
        }
        q = amp ? amp + 1 : NULL;
    }
    return 0;
}

static int split_url(const char *url, device_url *u) {
    memset(u, 0, sizeof *u);
    if (!url || !*url || strcmp(url, "local:") == 0 || strcmp(url, "local://") == 0) {
        u->kind = URL_LOCAL;
        return 0;
    }
    int serial = strncmp(url, "tcp-serial://", 13) == 0;
    if (strncmp(url, "tcp://", 6) == 0 || serial) {
        /* tcp-serial://HOST:PORT[?frame=N]: a serial line exported over TCP (ser2net raw) */
        const char *hp = url + (serial ? 13 : 6);
        const char *query = serial ? strchr(hp, '?') : NULL;
        char hpbuf[300];
        if (query) {
            if ((size_t)(query - hp) >= sizeof hpbuf) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': host too long", url);
            }
            memcpy(hpbuf, hp, (size_t)(query - hp));
            hpbuf[query - hp] = 0;
            hp = hpbuf;
            int qrc = parse_serial_query(url, query + 1, u, false);
            if (qrc) {
                return qrc;
            }
        }
        const char *scheme = serial ? "tcp-serial" : "tcp";
        const char *colon;
        u->kind = serial ? URL_TCP_SERIAL : URL_TCP;
        if (hp[0] == '[') {
            const char *end = strchr(hp, ']');
            if (!end || end[1] != ':' || end == hp + 1 ||
                (size_t)(end - hp - 1) >= sizeof u->host) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': want %s://[v6]:PORT",
                                        url, scheme);
            }
            memcpy(u->host, hp + 1, (size_t)(end - hp - 1));
            colon = end + 1;
        } else {
            colon = strrchr(hp, ':');
            if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof u->host) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': want %s://HOST:PORT",
                                        url, scheme);
            }
            memcpy(u->host, hp, (size_t)(colon - hp));
        }
        char *end;
        errno = 0;
        long port = strtol(colon + 1, &end, 10);
        if (errno || *end || end == colon + 1 || port < 1 || port > 65535) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': port must be 1..65535",
                                    url);
        }
        u->port = (uint16_t)port;
        return 0;
    }
    if (strncmp(url, "uart://", 7) == 0) {
        const char *p = url + 7;
        const char *q = strchr(p, '?');
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        u->kind = URL_UART;
        if (plen == 0 || plen >= sizeof u->path) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "bad URL '%s': want uart:///dev/ttyX?baud=N&frame=N", url);
        }
        memcpy(u->path, p, plen);
        u->baud = 115200;
        return q ? parse_serial_query(url, q + 1, u, true) : 0;
    }
    return tether_set_error(
        TETHER_ERR_INVALID_ARG,
        "unknown device URL '%s' (use tcp://HOST:PORT, uart:///dev/ttyX?baud=N, "
        "tcp-serial://HOST:PORT, pool://HOST:PORT/KEY or local:)",
        url);
}

int tether_device_url_check(const char *url) {
    device_url u;
    if (url && strncmp(url, "pool://", 7) == 0) {
        char host[256], key[128];
        uint16_t port;
        return tether_pool_url_parse(url, host, sizeof host, &port, key, sizeof key);
    }
    if (!url || !*url) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "empty device URL (use tcp://HOST:PORT, uart:///dev/ttyX?baud=N, "
                                "tcp-serial://HOST:PORT, pool://HOST:PORT/KEY or local:)");
    }
    return split_url(url, &u);
}

static int parse_url(const char *url, tether_transport *t, int *retries,
                     const tether_session_options *opt, int timeout_ms) {
    *retries = 0;
    device_url u;
    int rc = split_url(url, &u);
    if (rc) {
        return rc;
    }
    if (u.kind == URL_LOCAL) {
        const char *prog = opt && opt->tetherd ? opt->tetherd : getenv("TETHER_TETHERD");
        if (!prog || !*prog) {
            prog = "tetherd";
        }
        const char *argv[32];
        int n = 0;
        argv[n++] = prog;
        argv[n++] = "--stdio";
        if (opt && opt->tetherd_args) {
            for (int i = 0; opt->tetherd_args[i] && n < 30; i++) {
                argv[n++] = opt->tetherd_args[i];
            }
        }
        argv[n] = NULL;
        rc = tether_transport_spawn(t, argv, 0);
        if (rc) {
            return tether_set_error(rc, "local: cannot start %s: %s", prog, tether_last_error());
        }
        return 0;
    }
    if (u.kind == URL_TCP) {
        return tether_transport_tcp_connect(t, u.host, u.port, 0, timeout_ms);
    }
    /* serial lines: the client is an ARQ (resends damaged exchanges at once, chunks sized to
     * the error rate it sees); link-2 frames once HELLO says the device takes them */
    if (u.kind == URL_TCP_SERIAL) { /* a board's UART over TCP */
        *retries = 2;
        rc = tether_transport_tcp_serial_connect(t, u.host, u.port, u.frame, timeout_ms);
    } else {
        *retries = 2;
        tether_uart_open_options uo = {0};
        if (opt) {
            uo.wait_ms = opt->wait_ms;
            uo.on_wait = opt->on_wait;
            uo.wait_ctx = opt->wait_ctx;
        }
        rc = tether_transport_uart_open_ex(t, u.path, u.baud, u.frame, &uo);
    }
    if (!rc) {
        t->report_damage = true;
    }
    return rc;
}

static bool is_uart(const tether_session *s) {
    return tether__session_is_uart(s);
}

/* Marks the session lost with the current error text as the reason. */
static void mark_lost(tether_session *s) {
    s->lost = true;
    s->lost_status = tether_last_status();
    snprintf(s->fault, sizeof s->fault, "%s", tether_last_error());
}

/* ---- the request path (session_internal.h) ---- */

int tether__session_usable(tether_session *s, const char *name) {
    /* On a serial line the device outlives the session: refuse here so nothing of the old
     * session reaches the new one. A stream's peer (tetherd's session process) is gone with
     * the session; requests on it fail with TETHER_ERR_IO by themselves. */
    if ((s->lost && is_uart(s)) || !s->connected) {
        return tether_set_error(TETHER_ERR_STATE,
                                "%s refused: the session ended (%s); reconnect for a new session",
                                name ? name : "request", s->lost ? s->fault : "not connected");
    }
    return 0;
}

int tether__session_request(tether_session *s, tether_rpc_msg *req, tether_rpc_msg *rep) {
    return tether__session_request_within(s, req, rep, s->timeout_ms);
}

/* A request with its own timeout: TIME waits for the measurement plus the usual timeout. */
int tether__session_request_within(tether_session *s, tether_rpc_msg *req, tether_rpc_msg *rep,
                                   int timeout_ms) {
    int rc = tether__session_usable(s, tether_rpc_type_name(req->type));
    if (rc) {
        s->c.resize_above = 0;
        return rc;
    }
    s->last_warn[0] = 0;
    /* on a lossy link a request that runs code is not resent for want of an answer before it
     * could have finished (a NAK or a damaged reply still resends it at once): at least 2 s or
     * the last call's time twice, a TIME's whole measurement; a byte arriving during a call
     * would also land on the stack an MCU measures */
    if (req->type == TETHER_RPC_CALL || req->type == TETHER_RPC_LAUNCH_SEQ) {
        uint64_t twice = 2 * s->last_call_ns / 1000000u;
        s->c.min_rto_ms = twice > 2000 ? (twice > INT_MAX ? INT_MAX : (int)twice) : 2000;
    } else if (req->type == TETHER_RPC_TIME || req->type == TETHER_RPC_TIME_SEQ) {
        int expect = timeout_ms > s->timeout_ms ? timeout_ms - s->timeout_ms : 0;
        s->c.min_rto_ms = expect > 2000 ? expect : 2000; /* nor during a measurement */
    }
    return tether__session_after_request(s, tether_rpc_client_request(&s->c, req, rep, timeout_ms));
}

/* What a failed request says about the session: lost after a crash, a device restart or a
 * connection that died. Returns rc. */
int tether__session_after_request(tether_session *s, int rc) {
    if (rc == TETHER_ERR_CRASHED) {
        /* tetherd: the session process died; MCU: fault report, then the board resets */
        mark_lost(s);
    } else if (rc == TETHER_ERR_STATE && strstr(tether_last_error(), "send HELLO first")) {
        /* an MCU that restarted refuses everything until a new HELLO (docs/mcu.md) */
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        tether_set_error(rc, "the device restarted during the session: %s", e);
        mark_lost(s);
    } else if (rc == TETHER_ERR_IO && (!is_uart(s) || s->serial_socket)) {
        mark_lost(s); /* the connection is gone */
    }
    return rc;
}

static void on_log(void *ctx, const tether_rpc_msg *m) {
    tether_session *s = ctx;
    char text[TETHER_RPC_MAX_TEXT];
    copy_str(text, sizeof text, m->u.log.text);
    if (m->u.log.level <= TETHER_LOG_WARN) {
        snprintf(s->last_warn, sizeof s->last_warn, "%s", text);
    }
    if (s->log) {
        s->log(s->log_ctx, (int)m->u.log.level, text);
    }
}

/* A random first request id (never 0): replies a device cached for an earlier session can
 * never match this session's ids. */
static uint32_t random_id(void) {
    uint32_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid() ^ (uint32_t)ts.tv_sec;
    }
    v &= 0x7FFFFFFFu; /* leave room before the wrap */
    return v ? v : 1;
}

static int connect_transport(tether_session *s) {
    int rc = parse_url(s->url, &s->t, &s->retries, &s->opt, s->timeout_ms);
    if (rc) {
        return rc;
    }
    rc = tether_rpc_client_init(&s->c, &s->t, 0, s->retries);
    if (rc) {
        tether_transport_close(&s->t);
        return rc;
    }
    s->c.next_id = random_id();
    s->c.on_log = on_log;
    s->c.log_ctx = s;
    s->connected = true;
    return 0;
}

static void disconnect(tether_session *s) {
    if (s->connected) {
        tether_rpc_client_close(&s->c);
        tether_transport_close(&s->t);
        s->connected = false;
    }
}

/* HELLO (+AUTH) and the device info. On a serial line the device may still be booting (after a
 * reset its receiver is not listening for a moment), so HELLO is resent after short waits. */
static int hello(tether_session *s) {
    const tether_session_options *opt = &s->opt;
    tether_rpc_msg req, rep;
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_HELLO;
    req.u.hello_req.version = TETHER_RPC_VERSION;
    req.u.hello_req.max_frame = s->t.max_frame;
    req.u.hello_req.client = tether_rpc_str_c("tether-host 0.1");
    req.u.hello_req.link = is_uart(s) ? TETHER_RPC_LINK_UART2 : 0;
    int rc;
    if (is_uart(s)) {
        int per = s->timeout_ms < 1500 ? s->timeout_ms : 1500;
        int tries = s->timeout_ms / per;
        s->c.retries = tries < 3 ? 2 : tries > 20 ? 19 : tries - 1;
        rc = tether_rpc_client_request(&s->c, &req, &rep, per);
        s->c.retries = s->retries;
    } else {
        rc = tether_rpc_client_request(&s->c, &req, &rep, s->timeout_ms);
    }
    if (rc) {
        return rc;
    }
    const tether_rpc_hello_rep *h = &rep.u.hello_rep;
    /* a device that takes link-2 frames uses them from its HELLO reply on: so do we */
    s->t.link2 = is_uart(s) && (h->link & TETHER_RPC_LINK_UART2);
    tether_device_info *d = &s->info;
    memset(d, 0, sizeof *d);
    d->version = h->version;
    copy_str(d->triple, sizeof d->triple, h->triple);
    copy_str(d->arch, sizeof d->arch, h->arch);
    d->little_endian = h->little_endian;
    d->pointer_bits = h->pointer_bits;
    d->max_frame = h->max_frame;
    d->window = h->window;
    d->clock_hz = h->clock_hz;
    d->scopes = h->scopes;
    d->num_pools = h->num_pools > 8 ? 8 : h->num_pools;
    for (uint32_t i = 0; i < d->num_pools; i++) {
        copy_str(d->pools[i], sizeof d->pools[i], h->pools[i]);
        d->pool_sizes[i] = h->pool_sizes[i];
    }
    d->opencl = h->opencl;
    d->image_max_width = h->image_max_width;
    d->image_max_height = h->image_max_height;
    d->load_addr = h->load_addr;
    d->load_size = h->load_size;
    d->auth_required = h->auth_required;
    copy_str(d->board, sizeof d->board, h->board);
    copy_str(d->cpu, sizeof d->cpu, h->cpu);
    copy_str(d->cpu_features, sizeof d->cpu_features, h->cpu_features);
    d->ram_size = h->ram_size;
    d->heap_size = h->heap_size;
    d->stack_size = h->stack_size;
    d->boot_count = h->boot_count;
    d->exports_id = h->exports_id;
    d->cl_max_work_group_size = h->cl_max_work_group_size;
    d->cl_wg_multiple = h->cl_wg_multiple;
    d->cl_local_mem_size = h->cl_local_mem_size;
    d->cl_compute_units = h->cl_compute_units;
    if (h->cl_features & TETHER_RPC_CL_REPORTED) {
        d->cl_fp64 = h->cl_features & TETHER_RPC_CL_FP64 ? 1 : -1;
        d->cl_fp16 = h->cl_features & TETHER_RPC_CL_FP16 ? 1 : -1;
    } else {
        d->cl_fp64 = d->cl_fp16 = 0;
    }
    uint32_t mf = h->max_frame < s->t.max_frame ? h->max_frame : s->t.max_frame;
    s->chunk = tether_rpc_chunk_max(mf);
    if (s->chunk == 0) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "device announced max frame %u, below %u",
                                (unsigned)h->max_frame, TETHER_RPC_MIN_FRAME);
    }
    if (h->window == 0) {
        return tether_set_error(TETHER_ERR_PROTOCOL, "device announced window 0");
    }
    if (h->auth_required) {
        if (!opt->token || opt->token_len == 0) {
            return tether_set_error(TETHER_ERR_AUTH,
                                    "the device requires a token (give --token-file FILE)");
        }
        if (h->nonce.len != TETHER_RPC_NONCE_BYTES) {
            return tether_set_error(TETHER_ERR_PROTOCOL, "HELLO reply: nonce of %u bytes",
                                    (unsigned)h->nonce.len);
        }
        uint8_t nonce[TETHER_RPC_NONCE_BYTES], mac[TETHER_RPC_MAC_BYTES];
        memcpy(nonce, h->nonce.ptr, sizeof nonce);
        rc = tether_rpc_auth_mac(opt->token, opt->token_len, nonce, mac);
        if (rc) {
            return rc;
        }
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_AUTH;
        req.u.auth_req.mac.ptr = mac;
        req.u.auth_req.mac.len = sizeof mac;
        rc = tether_rpc_client_request(&s->c, &req, &rep, s->timeout_ms);
        if (rc) {
            return rc;
        }
    }
    return 0;
}

static void session_free(tether_session *s) {
    disconnect(s);
    if (s->lost && s->lost_status == TETHER_ERR_IO) { /* the device's connection died: it is not
                                                      handed to the next client */
        tether_pool_release_dead(s->pool);
    } else {
        tether_pool_release(s->pool);
    }
    if (s->token) {
        memset(s->token, 0, s->opt.token_len);
        free(s->token);
    }
    for (int i = 0; i < 30; i++) {
        free(s->tetherd_args[i]);
    }
    free(s->url);
    free(s);
}

int tether_session_open(tether_session **out, const char *url, const tether_session_options *opt) {
    if (!out) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "tether_session_open: null out");
    }
    *out = NULL;
    tether_session *s = calloc(1, sizeof *s);
    if (!s) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (opt) {
        s->opt = *opt;
    }
    s->opt.tetherd_args = NULL;
    for (int i = 0; opt && opt->tetherd_args && opt->tetherd_args[i] && i < 29; i++) {
        s->tetherd_args[i] = strdup(opt->tetherd_args[i]);
    }
    s->opt.tetherd_args = (const char *const *)s->tetherd_args;
    s->timeout_ms = opt && opt->timeout_ms > 0 ? opt->timeout_ms : 30000;
    s->progress = s->opt.progress;
    s->progress_ctx = s->opt.progress_ctx;
    s->log = s->opt.log;
    s->log_ctx = s->opt.log_ctx;
    s->url = strdup(url ? url : "local:");
    if (opt && opt->tetherd) {
        snprintf(s->tetherd, sizeof s->tetherd, "%s", opt->tetherd);
        s->opt.tetherd = s->tetherd;
    }
    if (opt && opt->token && opt->token_len) {
        s->token = malloc(opt->token_len);
        if (s->token) {
            memcpy(s->token, opt->token, opt->token_len);
        }
        s->opt.token = s->token;
    }
    if (!s->url || (opt && opt->token && opt->token_len && !s->token)) {
        session_free(s);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int rc = 0;
    int pooled = url && strncmp(url, "pool://", 7) == 0;
    /* pool:// devices found dead by this open: never leased again by it */
    enum { MAX_DEAD = 32 };
    char dead[MAX_DEAD][128];
    const char *skip[MAX_DEAD];
    int ndead = 0, dead_status = 0;
    char dead_error[TETHER_ERROR_MSG_MAX] = "";
    for (;;) {
        if (pooled) { /* lease a device of the pool, then open it */
            char host[256], key[128];
            uint16_t port;
            tether_pool_acquire_options po = {0};
            po.timeout_ms = opt && opt->wait_ms > 0 ? opt->wait_ms : -1;
            const char *lease_env = getenv("TETHER_POOL_LEASE_MS"); /* tests: sooner deaths */
            po.lease_ms = lease_env ? atoi(lease_env) : 0;
            po.skip = skip;
            po.nskip = ndead;
            rc = tether_pool_url_parse(url, host, sizeof host, &port, key, sizeof key);
            if (!rc) {
                rc = tether_pool_acquire(host, port, key, &po, &s->pool);
            }
            if (rc == TETHER_ERR_NOT_FOUND && ndead) { /* only devices found dead are left */
                rc = tether_set_error(dead_status, "%s; no other live device is left under key %s",
                                      dead_error, key);
            }
            if (rc) {
                break;
            }
            free(s->url);
            s->url = strdup(tether_pool_lease_url(s->pool));
            if (!s->url) {
                rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
        }
        s->serial_socket = strncmp(s->url, "tcp-serial://", 13) == 0;
        rc = connect_transport(s);
        if (!rc) {
            rc = hello(s);
        }
        /* only a device that cannot be reached is dropped and another leased */
        if (!rc || !s->pool || (rc != TETHER_ERR_IO && rc != TETHER_ERR_TIMEOUT) ||
            ndead == MAX_DEAD) {
            break;
        }
        /* the pool's device does not answer: drop it from the pool, remember it, lease another */
        dead_status = rc;
        snprintf(dead_error, sizeof dead_error, "pool device %s (%s): %s",
                 tether_pool_lease_device(s->pool), s->url, tether_last_error());
        snprintf(dead[ndead], sizeof dead[ndead], "%s", tether_pool_lease_device(s->pool));
        skip[ndead] = dead[ndead];
        ndead++;
        disconnect(s);
        tether_pool_release_dead(s->pool);
        s->pool = NULL;
    }
    if (rc) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        char dev[300] = "";
        if (s->pool) {
            snprintf(dev, sizeof dev, "pool device %s (%s): ", tether_pool_lease_device(s->pool),
                     s->url);
        }
        session_free(s);
        return tether_set_error(rc, "%s%s", dev, e);
    }
    *out = s;
    return 0;
}

int tether_session_reconnect(tether_session *s) {
    if (!s) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "reconnect: null session");
    }
    int rc;
    if (s->connected && is_uart(s) && !s->serial_socket) {
        /* the serial line stays open, and so locked (no other client can take the device in
         * between); the device (rebooted or not) gets a new HELLO, which starts a new session
         * and frees whatever the old one held */
        s->c.next_id = random_id();
    } else {
        disconnect(s);
        rc = connect_transport(s);
        if (rc) {
            return rc;
        }
    }
    s->lost = false;
    s->fault[0] = 0;
    rc = hello(s);
    if (rc) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        tether_set_error(rc, "reconnect: %s", e);
        mark_lost(s);
        return rc;
    }
    return 0;
}

void tether_session_close(tether_session *s) {
    if (!s) {
        return;
    }
    int saved = tether_last_status();
    char e[TETHER_ERROR_MSG_MAX];
    snprintf(e, sizeof e, "%s", tether_last_error());
    if (s->connected && !s->lost) {
        tether_rpc_msg req, rep;
        memset(&req, 0, sizeof req);
        /* an MCU answers SHUTDOWN by resetting; RESET frees the session and keeps it running */
        req.type = is_uart(s) ? TETHER_RPC_RESET : TETHER_RPC_SHUTDOWN;
        s->c.retries = 0;
        tether_rpc_client_request(&s->c, &req, &rep, s->timeout_ms < 2000 ? s->timeout_ms : 2000);
    }
    if (saved) {
        tether_set_error(saved, "%s", e);
    } else {
        tether_clear_error();
    }
    session_free(s);
}

const tether_device_info *tether_session_info(const tether_session *s) {
    return s ? &s->info : NULL;
}

const char *tether_session_fault(const tether_session *s) {
    return s && s->lost ? s->fault : NULL;
}
