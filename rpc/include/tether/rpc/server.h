/*
 * tether rpc server: the request handler shared by tetherd and the MCU firmware (docs/rpc.md,
 * "Server core"), as one freestanding library: no allocation, no libc beyond string.h.
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
 *  - with a device interface (tether_server_device, below): every request after the gates
 *    (UPLOAD/UPLOAD_CHUNK/LOAD_MODULE/UNLOAD, GET_FUNCTION, ALLOC/FREE/COPY_TO/COPY_FROM, RESET,
 *    SHUTDOWN), the handle tables of arrays, modules, functions and uploads, and the array
 *    arguments of CALL/TIME: one set of checks, codes and messages for both servers
 *    (rpc/src/server_requests.c); the device only allocates, stores, loads and runs;
 *  - exactly one reply per request: every handler returns a status and fills the reply;
 *    the core encodes (tiny codec) and sends either that reply or one ERROR carrying the
 *    handler's tether_last_error() text.
 * The server plugs in its specifics through tether_server_ops (decoding, sending bytes, HELLO
 * contents, AUTH verification, running a call, kernel sequences) and tether_server_device.
 */
#ifndef TETHER_RPC_SERVER_H
#define TETHER_RPC_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/crt/abi.h"
#include "tether/crt/ndarray.h"
#include "tether/crt/registry.h"
#include "tether/rpc/flow.h"
#include "tether/rpc/proto.h"
#include "tether/rpc/sha256.h"

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
    const void *impl; /* the server's own (registry entry, kernel slot...); with a device
                         interface a tether_func_entry, or what kernel_at set */
    uint32_t index;   /* with a device interface: the entry's or kernel's index in its module */
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
    /* With a device interface: arrays[i] is the array of a DLTENSOR/HANDLE argument (values[i]
     * then points at its DLTensor or its bytes), NULL for other arguments. */
    struct tether_server_array *const *arrays;
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
    /* Resolves a function handle; false when there is none (the core words the error). Not used
     * with a device interface (the core keeps the handles). */
    bool (*find_func)(void *ctx, uint64_t handle, tether_server_func *out);
    /* Runs a validated CALL or TIME; fills rep (ret_value starts as NULL). */
    int (*invoke)(void *ctx, const tether_server_call *call, tether_rpc_msg *rep);
    /* Every other request after the gates (UPLOAD..COPY_FROM, GET_FUNCTION, RESET, SHUTDOWN,
     * LAUNCH_SEQ, TIME_SEQ). With a device interface only LAUNCH_SEQ/TIME_SEQ come here, and
     * only when the device says `sequences` (may be NULL otherwise). */
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

/* ---- the device interface: what a device does below the shared request handler ---- */

/* One array of the session (the core's table; storage given by the server). */
typedef struct tether_server_array {
    uint64_t handle; /* 0 = free slot */
    uint32_t gen;    /* bumped on every allocation of this slot: stale handles never match */
    uint32_t index;  /* the slot's position in the table (for the device's own side tables) */
    int32_t pool;    /* index into tether_server_device.pools, -1 = the device's default */
    uint64_t nbytes;
    tether_ndarray nd; /* filled by dev->alloc: a DLTENSOR argument points at nd.dl */
    uint8_t *data;     /* filled by dev->alloc: the bytes copies and HANDLE arguments use */
    void *obj;         /* the device's own */
} tether_server_array;

/* One loaded module. */
typedef struct tether_server_module {
    uint64_t handle; /* 0 = free slot */
    uint32_t gen;
    uint32_t index;
    const tether_func_registry *reg; /* CPU functions; NULL: kernels (kernel_find/kernel_at) */
    uint32_t num_functions;
    void *obj; /* the device's own (a dlopen handle, an OpenCL program...) */
} tether_server_module;

/* One upload (UPLOAD .. UPLOAD_CHUNK .. LOAD_MODULE). */
typedef struct tether_server_upload {
    uint32_t id; /* 0 = free slot */
    uint32_t index;
    uint32_t kind; /* TETHER_RPC_MODULE_* */
    bool complete; /* every byte in and the SHA-256 verified */
    uint64_t total, received;
    uint64_t order; /* creation order: the oldest is replaced when every slot is taken */
    uint8_t hash[TETHER_RPC_HASH_BYTES];
    tether_sha256_ctx sha; /* of bytes [0, received) */
    char name[TETHER_RPC_MAX_NAME];
} tether_server_upload;

/* The device's operations. Each returns 0 or a status with tether_set_error() text (the core
 * puts the request's name in front). ctx is tether_server_config.ctx. */
typedef struct tether_server_device_ops {
    /* memory: allocate nbytes (a->nbytes, a->pool set) for q's shape, dtype and scope; fill
     * a->nd and a->data. free releases it. */
    int (*alloc)(void *ctx, tether_server_array *a, const tether_rpc_alloc_req *q, DLDataType dt,
                 const char *pool_name);
    void (*free)(void *ctx, tether_server_array *a);
    /* Optional: a->data is about to be read or written by the host side (a copy, a CPU call):
     * bring it up to date (an OpenCL buffer a kernel wrote). */
    int (*host_view)(void *ctx, tether_server_array *a);
    /* Optional: COPY_TO wrote [offset, +len) of a->data / COPY_FROM is about to read it (texture
     * images kept beside the host bytes). */
    int (*written)(void *ctx, tether_server_array *a, uint64_t offset, uint64_t len);
    int (*read)(void *ctx, tether_server_array *a, uint64_t offset, uint64_t len);
    /* Optional: whether a COPY_TO's data may be read by the transport straight into a->data
     * (tether_server_place_copy_to); NULL = any array. */
    bool (*placeable)(void *ctx, const tether_server_array *a);

    /* code loading: begin stores a new upload (u filled, nothing received): 0, 1 when the
     * device already has these bytes (its upload cache; the upload is then complete), or a
     * status. write stores received bytes [offset, +len) (always the next ones); same says
     * whether [offset, +len) equals what was stored (1 / 0, or a status); done is told that
     * the upload is complete and verified; drop forgets it. */
    int (*upload_begin)(void *ctx, tether_server_upload *u);
    int (*upload_write)(void *ctx, tether_server_upload *u, uint64_t offset, const uint8_t *data,
                        size_t len);
    int (*upload_same)(void *ctx, tether_server_upload *u, uint64_t offset, const uint8_t *data,
                       size_t len);
    void (*upload_done)(void *ctx, tether_server_upload *u);
    void (*upload_drop)(void *ctx, tether_server_upload *u);
    /* load makes a module from a complete upload: sets m->reg (CPU functions) or leaves it
     * NULL and sets m->num_functions (kernels); unload releases it. */
    int (*load)(void *ctx, const tether_server_upload *u, tether_server_module *m);
    void (*unload)(void *ctx, tether_server_module *m);

    /* calling, for modules without a registry: the kernel named `name` (its index), and what
     * the kernel at `index` is (false: none). Optional when every module has a registry. */
    bool (*kernel_find)(void *ctx, const tether_server_module *m, const char *name,
                        uint32_t *index);
    bool (*kernel_at)(void *ctx, const tether_server_module *m, uint32_t index,
                      tether_server_func *out);

    /* Optional: after the core freed everything of a session (HELLO, RESET). */
    int (*reset)(void *ctx);
} tether_server_device_ops;

/* A device: its operations, limits and the storage of the core's tables. */
typedef struct tether_server_device {
    const tether_server_device_ops *ops;
    const tether_func_registry *system; /* module 0, the system library */
    tether_server_array *arrays;        /* max_arrays entries (1..65535) */
    uint32_t max_arrays;
    tether_server_module *modules; /* max_modules entries (1..255) */
    uint32_t max_modules;
    tether_server_upload *uploads; /* max_uploads entries (>= 1) */
    uint32_t max_uploads;
    /* pools ALLOC may name (HELLO lists them); capacity 0 = only the device's allocator
     * bounds it. "" in ALLOC is the device's default (pool -1). */
    uint32_t npools;
    const char *pool_names[TETHER_RPC_MAX_POOLS];
    uint64_t pool_capacity[TETHER_RPC_MAX_POOLS];
    uint64_t max_alloc;      /* bytes of arrays a session holds (0 = no limit of its own) */
    uint32_t upload_kinds;   /* bit (1u << kind) per TETHER_RPC_MODULE_* the device takes */
    uint64_t max_upload;     /* bytes of one upload */
    const char *upload_room; /* says what max_upload is, e.g. "the 131072-byte load region at
                                0x20050000" ("UPLOAD 'm' of N bytes does not fit <room>") */
    bool load_replaces;      /* loading a module first unloads every loaded one (one load
                                region; an UPLOAD overwriting it calls tether_server_drop_modules) */
    bool sequences;          /* LAUNCH_SEQ/TIME_SEQ go to ops->request; else refused */
} tether_server_device;

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
    /* The device interface (NULL: ops->request and ops->find_func handle everything). */
    const tether_server_device *dev;
} tether_server_config;

typedef struct tether_server {
    tether_server_config cfg;
    bool hello_done;    /* a HELLO succeeded in this session (since boot / connection) */
    bool auth_required; /* from the last HELLO reply */
    bool authed;
    volatile uint32_t inflight; /* id of the request being handled (0 = none), for fault reports */
    char str_arena[TETHER_SERVER_STR_BYTES];
    /* with a device interface */
    uint32_t scopes;         /* from the last HELLO reply */
    uint32_t peer_max_frame; /* the last HELLO's max_frame (replies stay within it) */
    uint32_t next_upload;    /* the last upload id given */
    uint64_t upload_order;
    uint64_t allocated;                       /* bytes of the session's arrays */
    uint64_t pool_used[TETHER_RPC_MAX_POOLS]; /* bytes per pool */
    tether_server_array *call_arrays[TETHER_RPC_MAX_ARGS];
    /* Set by the server before handle_frame when the transport read a COPY_TO's data straight
     * into an array (tether_server_place_copy_to): where the data would have been in the
     * frame, and where it is. NULL = nothing placed. */
    const uint8_t *placed_src, *placed_dst;
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

/* ---- with a device interface (rpc/src/server_requests.c) ---- */

/* Transport placement (tether_transport.place) of a large COPY_TO: from the frame's head
 * [COPY_TO, id, array, offset, bin header] decides whether its data may go straight into the
 * array (an authenticated session, a known array, in bounds, dev->placeable); then *dst is
 * where, *data_off the data's offset in the frame. Anything else goes through the frame. */
bool tether_server_place_copy_to(void *server, const uint8_t *head, size_t head_len,
                                 size_t frame_len, uint8_t **dst, size_t *data_off);

/* The array with this handle, or NULL. */
tether_server_array *tether_server_find_array(tether_server *s, uint64_t handle);

/* Frees every array, module and upload of the session (HELLO and RESET do this). */
void tether_server_drop_all(tether_server *s);
/* Unloads every loaded module (a device whose load region is overwritten). */
void tether_server_drop_modules(tether_server *s);

/* The request handler behind the gates (used by handle_frame; exposed for tests). */
int tether__server_request(tether_server *s, const tether_rpc_msg *req, tether_rpc_msg *rep);
bool tether__server_find_func(tether_server *s, uint64_t handle, tether_server_func *out);
int tether__server_call_arrays(tether_server *s, tether_server_call *call);
int tether__server_no_sequences(uint32_t type);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_SERVER_H */
