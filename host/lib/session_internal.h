/*
 * What session.c (opening, the request path), session_transfer.c (uploads, modules, arrays) and
 * session_call.c (calls, TIME, OpenCL launches and sequences) share: the session's state and the
 * request path. Internal to the host library.
 *
 * What must stay true: only session.c opens, reconnects and closes a session and changes its
 * connection state; the other files reach the device through tether__session_request (or, for a
 * pipelined bulk transfer, tether__session_usable before and tether__session_after_request after
 * it), so every request is refused on an ended session and every failure is judged alike.
 */
#ifndef TETHER_HOST_SESSION_INTERNAL_H
#define TETHER_HOST_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/crt.h"
#include "tether/host.h"
#include "tether/pool.h"
#include "tether/rpc.h"

struct tether_session {
    tether_pool_lease *pool; /* pool:// URLs: the device's lease, given back at close */
    tether_transport t;
    tether_rpc_client c;
    bool connected; /* t and c are open */
    int timeout_ms;
    int retries; /* resends after a timeout (UART) */
    uint32_t chunk;
    tether_device_info info;
    tether_progress_fn progress;
    void *progress_ctx;
    bool last_upload_cached; /* the last UPLOAD's reply said `cached` */
    tether_device_log_fn log;
    void *log_ctx;
    /* for reconnecting */
    char *url;
    tether_session_options opt;
    void *token;
    char tetherd[4096];
    char *tetherd_args[30]; /* copies, NULL-ended */
    /* the last warning/error LOG line (a failing function's message on an MCU) */
    char last_warn[TETHER_RPC_MAX_TEXT];
    /* lost session: why (fault report), "" while usable */
    bool lost;
    int lost_status;    /* the status that lost it: TETHER_ERR_IO = the connection itself */
    bool serial_socket; /* tcp-serial://: UART framing, but a socket that can close */
    char fault[TETHER_ERROR_MSG_MAX];
    /* device time of the last CALL, for the expected duration of a following TIME */
    uint64_t last_call_ns;
};

/* One request with the session's timeout, or its own (TIME: the measurement plus the timeout);
 * a lost session is refused, a fault or a device restart marks it lost. */
int tether__session_request(tether_session *s, tether_rpc_msg *req, tether_rpc_msg *rep);
int tether__session_request_within(tether_session *s, tether_rpc_msg *req, tether_rpc_msg *rep,
                                   int timeout_ms);

/* 0 when requests may go to the device, else TETHER_ERR_STATE naming the request `name` (NULL =
 * "request"): the session ended (lost on a serial line, or not connected). */
int tether__session_usable(tether_session *s, const char *name);

/* What a failed request (status rc, message set) says about the session: a crash, a device
 * restart or a connection that died marks it lost. Returns rc. */
int tether__session_after_request(tether_session *s, int rc);

static inline bool tether__session_is_uart(const tether_session *s) {
    return s->t.kind == TETHER_TRANSPORT_UART;
}

#endif
