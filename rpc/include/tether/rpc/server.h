/*
 * tether rpc server core: the request loop shared by tetherd and the MCU firmware (docs/rpc.md,
 * "Server core"). Freestanding: no allocation, no libc beyond string.h.
 *
 * The core owns what both servers must do identically:
 *  - the session state machine: HELLO first (anything else before it is
 *    ERROR(TETHER_ERR_STATE)), AUTH gating when the HELLO reply says auth_required (anything but
 *    HELLO/AUTH before a good AUTH is ERROR(TETHER_ERR_AUTH); a wrong mac ends the session);
 *  - decoding a request (through the server's decoder) and refusing malformed ones, id 0 and
 *    non-request types;
 *  - the reply cache (optional): a request id answered recently is answered again from it;
 *  - CALL/TIME validation: function handle, ABI, work dimensions, argument count, argument type
 *    codes (one rule for strings, see TETHER_SERVER_STR_BYTES), TIME's number/repeat; scalar and
 *    string arguments are converted to tether_value here;
 *  - exactly one reply per request: every handler (ops) returns a status and fills the reply;
 *    the core encodes (tiny codec) and sends either that reply or one ERROR carrying the
 *    handler's tether_last_error() text.
 * The server plugs in its specifics through tether_server_ops: decoding, sending bytes, HELLO
 * contents and session reset, AUTH verification, function handles, running a call, and every
 * other request (memory, uploads, modules, sequences...).
 */
#ifndef TETHER_RPC_SERVER_H
#define TETHER_RPC_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/crt/abi.h"
#include "tether/rpc/flow.h"
#include "tether/rpc/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* String arguments (type code 11) of one CALL/TIME: each is copied NUL-terminated into the
 * core's arena; all of them together (bytes + 1 each) may take at most this many bytes, past it
 * ERROR(TETHER_ERR_LIMIT). Strings go to packed CPU functions only (docs/rpc.md CALL). */
#define TETHER_SERVER_STR_BYTES 256u

/* What a server says about a function handle (ops->find_func). */
typedef struct tether_server_func {
    const char *name; /* for messages */
    tether_abi abi;   /* an OpenCL kernel reports TETHER_ABI_PACKED */
    int32_t num_args; /* -1 = any (packed CPU functions only) */
    bool kernel;      /* an OpenCL kernel: 1..3 work dims, arrays and numbers only */
    const void *impl; /* the server's own (registry entry, kernel slot...) */
} tether_server_func;

/* A validated CALL or TIME, handed to ops->invoke. */
typedef struct tether_server_call {
    uint32_t type; /* TETHER_RPC_CALL or TETHER_RPC_TIME */
    uint32_t id;
    const tether_rpc_invoke *inv;
    const tether_rpc_time_req *time; /* TIME: number, repeat...; NULL for CALL */
    tether_server_func fn;
    /* values[i]/codes[i] for every argument: INT, UINT (as v_int64), FLOAT, NULL (v_handle
     * NULL) and STR (v_str, a NUL-terminated copy valid during ops->invoke) are filled; for
     * DLTENSOR and HANDLE codes[i] is set and the server resolves the array handle itself. */
    tether_value *values;
    int32_t *codes;
} tether_server_call;

typedef struct tether_server_ops {
    /* Decodes one request frame (the server's codec and sequence storage). */
    int (*decode)(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out);
    /* Sends one encoded message (a whole frame payload); returns 0 or a status. */
    int (*send)(void *ctx, const uint8_t *bytes, size_t len);
    /* HELLO (version already checked): frees whatever the previous session left, fills the
     * reply body (auth_required and nonce included). The core then gates on auth_required. */
    int (*hello)(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep);
    /* Verifies an AUTH mac against the nonce of the last HELLO; 0 when right. NULL when the
     * device never requires authentication. */
    int (*auth)(void *ctx, tether_rpc_bytes mac);
    /* Resolves a function handle; false when there is none (the core words the error). */
    bool (*find_func)(void *ctx, uint64_t handle, tether_server_func *out);
    /* Runs a validated CALL or TIME; fills rep (ret_value starts as NULL). */
    int (*invoke)(void *ctx, const tether_server_call *call, tether_rpc_msg *rep);
    /* Every other request after the gates (UPLOAD..COPY_FROM, GET_FUNCTION, RESET, SHUTDOWN,
     * LAUNCH_SEQ, TIME_SEQ). */
    int (*request)(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep);
    /* Optional: told about a dropped frame (TETHER_LOG_WARN) and about every ERROR reply
     * (TETHER_LOG_DEBUG, the message text). */
    void (*note)(void *ctx, int level, const char *text);
    /* Optional: sends one message given as head + tail without joining them. With it a large
     * COPY_FROM reply goes out from the array's own memory (tether_rpc_encode_split), not
     * through the transmit buffer. */
    int (*send2)(void *ctx, const uint8_t *head, size_t head_len, const uint8_t *tail,
                 size_t tail_len);
} tether_server_ops;

typedef enum tether_server_result {
    TETHER_SERVER_CONTINUE = 0, /* wait for the next frame */
    TETHER_SERVER_CLOSE = 1,    /* SHUTDOWN was answered, or AUTH failed: end the session */
} tether_server_result;

/* Storage and plug-ins, all owned by the server and outliving the tether_server. */
typedef struct tether_server_config {
    const tether_server_ops *ops;
    void *ctx;
    tether_rpc_msg *req, *rep; /* the decoded request and the reply being built */
    uint8_t *tx;               /* encode buffer for replies (the server's max frame) */
    size_t tx_cap;
    tether_rpc_reply_cache *cache; /* optional (NULL: no retransmission handling) */
    tether_value *values;          /* TETHER_RPC_MAX_ARGS entries each */
    int32_t *codes;
    /* A stream transport (TCP, pipes) cannot resynchronise after a frame whose header cannot
     * be read: true = answer it with ERROR id 0 and end the session (TETHER_SERVER_CLOSE);
     * false (UART, whose CRC already dropped damaged frames) = drop it and note it. */
    bool close_on_garbage;
} tether_server_config;

typedef struct tether_server {
    tether_server_config cfg;
    bool hello_done;    /* a HELLO succeeded in this session (since boot / connection) */
    bool auth_required; /* from the last HELLO reply */
    bool authed;
    volatile uint32_t inflight; /* id of the request being handled (0 = none), for fault reports */
    char str_arena[TETHER_SERVER_STR_BYTES];
} tether_server;

void tether_server_init(tether_server *s, const tether_server_config *cfg);

/* Handles one received frame: at most one reply is sent. A frame of an unknown type whose id can
 * be read gets ERROR(TETHER_ERR_PROTOCOL) with that id; one whose header cannot be read is
 * dropped and noted, or (close_on_garbage) answered with ERROR id 0 and the session closed. */
tether_server_result tether_server_handle_frame(tether_server *s, const uint8_t *frame, size_t len);

/* Encodes (tiny codec) into buf and sends a message outside the request path, e.g. a LOG line. 0
 * or a status (nothing is sent when the message cannot be encoded). */
int tether_server_send(tether_server *s, const tether_rpc_msg *m, uint8_t *buf, size_t cap);

/* The checks of CALL/TIME on their own (used by handle_frame; exposed for tests): fills call. */
int tether_server_check_invoke(tether_server *s, uint32_t type, const tether_rpc_invoke *inv,
                               const tether_rpc_time_req *time, tether_server_call *call);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_SERVER_H */
