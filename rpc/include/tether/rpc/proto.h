/*
 * tether rpc: protocol constants, limits and the in-memory form of every message.
 *
 * The normative wire description is docs/rpc.md. Every message is one msgpack array
 *   [type, id, field...]
 * carried in one frame (stream framing on TCP/pipes, UART framing on serial lines). A request has
 * a non-zero id chosen by the client; its one reply (type | TETHER_RPC_REPLY, or TETHER_RPC_ERROR)
 * carries the same id. LOG is the only unsolicited message (device -> host, id 0, never replied).
 *
 * Ownership: a decoded tether_rpc_msg borrows its strings and byte blobs from the buffer it was
 * decoded from (tether_rpc_str / tether_rpc_bytes are pointer + length, NOT NUL-terminated); the
 * buffer must outlive the message. Nothing here allocates. Freestanding: usable on MCUs.
 */
#ifndef TETHER_RPC_PROTO_H
#define TETHER_RPC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tether/crt/abi.h"
#include "tether/crt/ndarray.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Protocol version carried in HELLO. Bumped on any incompatible change. */
#define TETHER_RPC_VERSION 1

/* ---- limits (docs/rpc.md "Limits": what happens past each) ---- */
#define TETHER_RPC_MIN_FRAME         128u            /* smallest max_frame a peer may announce */
#define TETHER_RPC_DEFAULT_MAX_FRAME (1024u * 1024u) /* TCP / pipe default */
#define TETHER_RPC_MAX_FRAME_LIMIT   (16u * 1024u * 1024u)  /* no frame is ever larger */
#define TETHER_RPC_MAX_NDIM          TETHER_MAX_NDIM        /* 8 */
#define TETHER_RPC_MAX_ARGS          TETHER_MAX_ARGS        /* 64 */
#define TETHER_RPC_MAX_UPLOAD        (256u * 1024u * 1024u) /* bytes in one uploaded module */
#define TETHER_RPC_MAX_REPEAT        32u                    /* TIME repeats (one result each) */
#define TETHER_RPC_MAX_NAME          128u  /* names: < this many bytes (fit char[128]) */
#define TETHER_RPC_MAX_FEATURES      256u  /* HELLO cpu_features: < this many bytes */
#define TETHER_RPC_MAX_TEXT          1024u /* ERROR message / LOG line: < this many bytes */
#define TETHER_RPC_MAX_POOLS         8u    /* pool names in HELLO */
#define TETHER_RPC_MAX_WORK_DIM      3u    /* OpenCL NDRange dimensions */
#define TETHER_RPC_MAX_SEQ_STEPS     128u  /* steps of one LAUNCH_SEQ / TIME_SEQ */
#define TETHER_RPC_MAX_SEQ_ARGS      1024u /* arguments of all steps of one sequence together */
#define TETHER_RPC_HASH_BYTES        32u   /* SHA-256 of an upload */
#define TETHER_RPC_NONCE_BYTES       32u   /* AUTH challenge */
#define TETHER_RPC_MAC_BYTES         32u   /* HMAC-SHA256 */
/* Bytes a COPY_TO / UPLOAD_CHUNK / COPY_FROM-reply message needs beyond its data (msgpack
 * headers, worst case). Chunk payload = peer max_frame - this (see tether_rpc_chunk_max). */
#define TETHER_RPC_CHUNK_OVERHEAD 48u

/* ---- message types ---- */
typedef enum tether_rpc_type {
    TETHER_RPC_HELLO = 1,
    TETHER_RPC_AUTH = 2,
    TETHER_RPC_UPLOAD = 3,       /* begin an upload: kind, name, size, hash */
    TETHER_RPC_UPLOAD_CHUNK = 4, /* one piece of an upload */
    TETHER_RPC_LOAD_MODULE = 5,
    TETHER_RPC_UNLOAD = 6,
    TETHER_RPC_GET_FUNCTION = 7,
    TETHER_RPC_ALLOC = 8,
    TETHER_RPC_FREE = 9,
    TETHER_RPC_COPY_TO = 10,
    TETHER_RPC_COPY_FROM = 11,
    TETHER_RPC_CALL = 12,
    TETHER_RPC_TIME = 13,
    TETHER_RPC_RESET = 14,
    TETHER_RPC_SHUTDOWN = 15,
    TETHER_RPC_LOG = 16,        /* notification, device -> host, id 0 */
    TETHER_RPC_LAUNCH_SEQ = 17, /* OpenCL kernels launched in order, one reply for all */
    TETHER_RPC_TIME_SEQ = 18,   /* TIME of a whole LAUNCH_SEQ sequence */
    TETHER_RPC_ERROR = 127,     /* reply to any request: code + message */
} tether_rpc_type;

/* A reply's type is the request type with this bit set (HELLO reply = 0x41). */
#define TETHER_RPC_REPLY            0x40u
#define TETHER_RPC_REQUEST_TYPE_MAX 18 /* highest request/notification type */

/* Upload kinds. */
typedef enum tether_rpc_module_kind {
    TETHER_RPC_MODULE_SHARED_OBJECT = 0, /* ELF .so for tetherd (dlopen) */
    TETHER_RPC_MODULE_OPENCL_SOURCE = 1, /* OpenCL C source, built on the device */
    TETHER_RPC_MODULE_MCU_IMAGE = 2,     /* raw binary placed at the HELLO load region */
} tether_rpc_module_kind;
#define TETHER_RPC_MODULE_KIND_COUNT 3

/* Scope bits of HELLO's `scopes` (bit n = tether_scope n supported). */
#define TETHER_RPC_SCOPE_BIT(scope) (1u << (unsigned)(scope))

/* Borrowed string / bytes: NOT NUL-terminated; point into the decoded buffer (or, when encoding,
 * into caller memory). ptr may be NULL only when len is 0. */
typedef struct tether_rpc_str {
    const char *ptr;
    uint32_t len;
} tether_rpc_str;

typedef struct tether_rpc_bytes {
    const uint8_t *ptr;
    uint32_t len;
} tether_rpc_bytes;

/* One CALL/TIME argument: a tether_type_code and its value. TETHER_TYPE_DLTENSOR and
 * TETHER_TYPE_HANDLE carry an NDArray handle from ALLOC (v_handle). */
typedef struct tether_rpc_arg {
    int32_t type_code; /* TETHER_TYPE_INT/UINT/FLOAT/HANDLE/NULL/DLTENSOR/STR */
    union {
        int64_t v_int;
        uint64_t v_uint;
        double v_float;
        uint64_t v_handle;
        tether_rpc_str v_str;
    } v;
} tether_rpc_arg;

/* ---- request / reply bodies (field order = wire order) ---- */

/* HELLO `link` bits: what a peer takes on a serial line (docs/rpc.md, "UART link"). */
#define TETHER_RPC_LINK_UART2 1u /* link-2 UART frames (CRC-32, closing FLAG) and NAKs */

typedef struct tether_rpc_hello_req {
    uint32_t version;      /* TETHER_RPC_VERSION of the client */
    uint32_t max_frame;    /* largest frame the client accepts */
    tether_rpc_str client; /* free text, e.g. "tether-host 0.1" */
    uint32_t link;         /* optional: TETHER_RPC_LINK_* the client takes (0 = none) */
} tether_rpc_hello_req;

typedef struct tether_rpc_hello_rep {
    uint32_t version;
    tether_rpc_str triple; /* "x86_64-linux-gnu", "thumbv7m-none-eabi" */
    tether_rpc_str arch;   /* "x86_64", "cortex-m3" */
    bool little_endian;
    uint32_t pointer_bits; /* 32 or 64 */
    uint32_t max_frame;    /* largest frame the device accepts */
    uint32_t window;       /* chunk requests the device can have in flight (>= 1) */
    uint64_t clock_hz;     /* timer rate used for timings (0 = nanosecond clock) */
    uint32_t scopes;       /* TETHER_RPC_SCOPE_BIT mask */
    uint32_t num_pools;
    tether_rpc_str pools[TETHER_RPC_MAX_POOLS];
    bool opencl;
    uint32_t image_max_width;  /* CL_DEVICE_IMAGE2D_MAX_WIDTH, 0 without OpenCL */
    uint32_t image_max_height; /* CL_DEVICE_IMAGE2D_MAX_HEIGHT */
    uint64_t load_addr;        /* MCU RAM load region; 0/0 when none */
    uint64_t load_size;
    bool auth_required;
    tether_rpc_bytes nonce; /* AUTH challenge (TETHER_RPC_NONCE_BYTES) when auth_required */
    /* Optional trailing fields (docs/rpc.md): a reply without them decodes as "" / 0. */
    tether_rpc_str board;        /* board name ("mps2-an385"); "" when the device is not a board */
    uint64_t ram_size;           /* bytes of RAM the device has (0 = not reported) */
    uint64_t heap_size;          /* bytes available to arrays (0 = not reported) */
    uint64_t stack_size;         /* bytes of the call stack functions run on (0 = not reported) */
    uint32_t boot_count;         /* resets since power-up (MCU); a change means a new boot */
    uint32_t exports_id;         /* identity of the symbols MCU images link against (0 = none) */
    tether_rpc_str cpu;          /* what to compile for this CPU: a -march value ("x86-64-v3",
                                    "armv8.2-a+fp16+dotprod"); "" = the architecture's baseline */
    tether_rpc_str cpu_features; /* the CPU's ISA extensions, space separated ("avx2 fma ...");
                                    < TETHER_RPC_MAX_FEATURES bytes */
    uint64_t pool_sizes[TETHER_RPC_MAX_POOLS]; /* bytes of pools[i] (0 = not reported / no
                                                  limit); encoded with as many entries as pools */
    uint32_t link; /* TETHER_RPC_LINK_* the device takes and uses from now on (0 = none) */
    /* The OpenCL device's work limits (0 = no OpenCL / not reported): what `tether compile
     * --backend opencl` sizes its kernels by (docs/rpc.md, docs/codegen.md "GPU kernels"). */
    uint32_t cl_max_work_group_size; /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint32_t cl_wg_multiple;         /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
    uint64_t cl_local_mem_size;      /* CL_DEVICE_LOCAL_MEM_SIZE, bytes */
    uint32_t cl_compute_units;       /* CL_DEVICE_MAX_COMPUTE_UNITS */
    /* The OpenCL device's extensions the compiler must know of: TETHER_RPC_CL_* bits (0 = no
     * OpenCL / not reported; TETHER_RPC_CL_REPORTED set when the others are meaningful). */
    uint32_t cl_features;
} tether_rpc_hello_rep;

#define TETHER_RPC_CL_REPORTED 1u /* cl_features holds the device's extensions */
#define TETHER_RPC_CL_FP64     2u /* cl_khr_fp64 (float64 kernels) */
#define TETHER_RPC_CL_FP16     4u /* cl_khr_fp16 (half arithmetic) */

typedef struct tether_rpc_auth_req {
    tether_rpc_bytes mac; /* HMAC-SHA256(key = token, nonce || "tether-auth-v1") */
} tether_rpc_auth_req;

typedef struct tether_rpc_upload_req {
    uint32_t kind; /* tether_rpc_module_kind */
    tether_rpc_str name;
    uint64_t total_size;
    tether_rpc_bytes sha256; /* TETHER_RPC_HASH_BYTES */
} tether_rpc_upload_req;

typedef struct tether_rpc_upload_rep {
    uint32_t upload_id;
    bool cached; /* optional: the device already holds content of this SHA-256 (tetherd's upload
                    cache); the upload is complete, no chunks are needed. Absent = false. */
} tether_rpc_upload_rep;

typedef struct tether_rpc_upload_chunk_req {
    uint32_t upload_id;
    uint64_t offset;
    tether_rpc_bytes data;
} tether_rpc_upload_chunk_req;

typedef struct tether_rpc_upload_chunk_rep {
    uint64_t received; /* bytes received so far (contiguous from 0) */
    bool complete;     /* all bytes in and the hash verified */
} tether_rpc_upload_chunk_rep;

typedef struct tether_rpc_load_module_req {
    tether_rpc_str name; /* name of a complete upload */
} tether_rpc_load_module_req;

typedef struct tether_rpc_load_module_rep {
    uint64_t module; /* handle; 0 is the built-in system library */
    uint32_t num_functions;
} tether_rpc_load_module_rep;

typedef struct tether_rpc_unload_req {
    uint64_t module;
} tether_rpc_unload_req;

typedef struct tether_rpc_get_function_req {
    uint64_t module; /* 0 = system library */
    tether_rpc_str name;
} tether_rpc_get_function_req;

typedef struct tether_rpc_get_function_rep {
    uint64_t func;
    uint32_t abi;     /* tether_abi */
    int32_t num_args; /* -1 = any (packed) */
} tether_rpc_get_function_rep;

typedef struct tether_rpc_alloc_req {
    uint32_t ndim;
    int64_t shape[TETHER_RPC_MAX_NDIM];
    uint8_t dtype_code; /* DLDataType, wire: [code, bits, lanes] */
    uint8_t dtype_bits;
    uint16_t dtype_lanes;
    uint32_t scope;      /* tether_scope */
    tether_rpc_str pool; /* "" = device default */
} tether_rpc_alloc_req;

typedef struct tether_rpc_alloc_rep {
    uint64_t array; /* NDArray handle (never 0) */
    uint64_t nbytes;
} tether_rpc_alloc_rep;

typedef struct tether_rpc_handle_req {
    uint64_t handle; /* FREE: array handle */
} tether_rpc_handle_req;

typedef struct tether_rpc_copy_to_req {
    uint64_t array;
    uint64_t offset; /* byte offset into the array */
    tether_rpc_bytes data;
} tether_rpc_copy_to_req;

typedef struct tether_rpc_copy_to_rep {
    uint64_t written;
} tether_rpc_copy_to_rep;

typedef struct tether_rpc_copy_from_req {
    uint64_t array;
    uint64_t offset;
    uint64_t length; /* <= tether_rpc_chunk_max(client max_frame) */
} tether_rpc_copy_from_req;

typedef struct tether_rpc_copy_from_rep {
    tether_rpc_bytes data;
} tether_rpc_copy_from_rep;

/* A function invocation, shared by CALL and TIME. work_dim 0 = a plain CPU call; 1..3 = an
 * OpenCL kernel launch with global[work_dim] and local[work_dim] (all local 0 = let the runtime
 * choose; on the wire an empty array). */
typedef struct tether_rpc_invoke {
    uint64_t func;
    uint32_t abi; /* tether_abi the caller expects */
    uint32_t num_args;
    tether_rpc_arg args[TETHER_RPC_MAX_ARGS];
    uint32_t work_dim;
    uint64_t global[TETHER_RPC_MAX_WORK_DIM];
    uint64_t local[TETHER_RPC_MAX_WORK_DIM];
} tether_rpc_invoke;

typedef struct tether_rpc_call_rep {
    int32_t ret;          /* the function's own return code */
    uint64_t elapsed_ns;  /* wall time of the call */
    uint64_t stack_bytes; /* stack high-water mark (0 when not measured, e.g. OpenCL) */
    /* Optional trailing field: the packed function's return value (TETHER_TYPE_INT, UINT,
     * FLOAT, HANDLE or NULL; NULL when there is none or the reply lacks the field). Senders set
     * type_code explicitly: a zeroed struct means int 0. */
    tether_rpc_arg ret_value;
} tether_rpc_call_rep;

typedef struct tether_rpc_time_req {
    tether_rpc_invoke invoke;
    uint32_t number;        /* calls per repeat (grows, see docs/rpc.md TIME) */
    uint32_t repeat;        /* 1..TETHER_RPC_MAX_REPEAT */
    uint32_t min_repeat_ms; /* 0 = no minimum */
    uint32_t cooldown_ms;   /* pause between repeats */
} tether_rpc_time_req;

typedef struct tether_rpc_time_rep {
    uint32_t number; /* calls per repeat actually used at the end */
    bool zero_timer; /* the clock returned 0 elapsed repeatedly (see TIME) */
    uint32_t repeat;
    double seconds[TETHER_RPC_MAX_REPEAT]; /* mean seconds per call, one per repeat */
} tether_rpc_time_rep;

/* One step of a kernel sequence: the fields of a CALL, with the arguments borrowed (a decoded
 * step points into the decoder's tether_rpc_seq_storage, an encoded one into caller memory). */
typedef struct tether_rpc_seq_step {
    uint64_t func;
    uint32_t abi;
    uint32_t num_args; /* <= TETHER_RPC_MAX_ARGS */
    const tether_rpc_arg *args;
    uint32_t work_dim; /* 1..3: every step is an NDRange launch */
    uint64_t global[TETHER_RPC_MAX_WORK_DIM];
    uint64_t local[TETHER_RPC_MAX_WORK_DIM];
} tether_rpc_seq_step;

/* seq_req.flags bits. NO_PROFILE: no profiling event per kernel; the reply carries no per-step
 * times (elapsed_ns 0, no step_ns / step_seconds), only the sequence's wall clock, read on the
 * device's host clock from before the first enqueue to the return of the one clFinish. */
#define TETHER_RPC_SEQ_NO_PROFILE 1u
#define TETHER_RPC_SEQ_FLAGS      1u /* every defined bit */

/* LAUNCH_SEQ (number..cooldown_ms unused) and TIME_SEQ requests. steps is borrowed. */
typedef struct tether_rpc_seq_req {
    uint32_t num_steps; /* 1..TETHER_RPC_MAX_SEQ_STEPS */
    const tether_rpc_seq_step *steps;
    uint32_t number; /* TIME_SEQ only: as in TIME, one call = the whole sequence */
    uint32_t repeat;
    uint32_t min_repeat_ms;
    uint32_t cooldown_ms;
    /* optional trailing field (0 when absent: every step profiled): TETHER_RPC_SEQ_* bits */
    uint32_t flags;
} tether_rpc_seq_req;

/* Where a decoder puts the steps and arguments of a LAUNCH_SEQ / TIME_SEQ request (too large for
 * tether_rpc_msg itself: an MCU keeps several messages in RAM). Owned by the caller of
 * tether_rpc_*_decode_seq; the decoded u.seq_req points into it. */
typedef struct tether_rpc_seq_storage {
    tether_rpc_seq_step steps[TETHER_RPC_MAX_SEQ_STEPS];
    tether_rpc_arg args[TETHER_RPC_MAX_SEQ_ARGS];
} tether_rpc_seq_storage;

typedef struct tether_rpc_launch_seq_rep {
    uint64_t elapsed_ns; /* sum of the steps' times */
    uint32_t num_steps;
    uint64_t step_ns[TETHER_RPC_MAX_SEQ_STEPS]; /* each step's profiled time */
    /* optional trailing field (0 when absent): the wall-clock ns of the sequence on the device,
     * the first step's profiled START to the last step's END (no host round trip) */
    uint64_t wall_ns;
} tether_rpc_launch_seq_rep;

typedef struct tether_rpc_time_seq_rep {
    uint32_t number; /* whole-sequence calls per repeat at the end */
    bool zero_timer;
    uint32_t repeat;
    double seconds[TETHER_RPC_MAX_REPEAT]; /* mean seconds per sequence, one per repeat */
    uint32_t num_steps;
    /* per step: the median over the repeats of its mean seconds per sequence call */
    double step_seconds[TETHER_RPC_MAX_SEQ_STEPS];
    /* optional trailing field (0 when absent): the median over the repeats of the mean
     * wall-clock seconds of one sequence call on the device, the first step's profiled START
     * to the last step's END (the device's profiling clock; no host round trip) */
    double wall_seconds;
} tether_rpc_time_seq_rep;

typedef struct tether_rpc_log_msg {
    uint32_t level; /* tether_log_level */
    tether_rpc_str text;
} tether_rpc_log_msg;

typedef struct tether_rpc_error_rep {
    int32_t code; /* negative tether_status */
    tether_rpc_str message;
} tether_rpc_error_rep;

/* One message. `type` is a tether_rpc_type, OR-ed with TETHER_RPC_REPLY for replies. Only the
 * union member matching the type is meaningful. Messages without a body (AUTH reply, UNLOAD,
 * FREE reply, RESET, SHUTDOWN and their replies) use none. */
typedef struct tether_rpc_msg {
    uint32_t type;
    uint32_t id;
    union {
        tether_rpc_hello_req hello_req;
        tether_rpc_hello_rep hello_rep;
        tether_rpc_auth_req auth_req;
        tether_rpc_upload_req upload_req;
        tether_rpc_upload_rep upload_rep;
        tether_rpc_upload_chunk_req upload_chunk_req;
        tether_rpc_upload_chunk_rep upload_chunk_rep;
        tether_rpc_load_module_req load_module_req;
        tether_rpc_load_module_rep load_module_rep;
        tether_rpc_unload_req unload_req;
        tether_rpc_get_function_req get_function_req;
        tether_rpc_get_function_rep get_function_rep;
        tether_rpc_alloc_req alloc_req;
        tether_rpc_alloc_rep alloc_rep;
        tether_rpc_handle_req free_req;
        tether_rpc_copy_to_req copy_to_req;
        tether_rpc_copy_to_rep copy_to_rep;
        tether_rpc_copy_from_req copy_from_req;
        tether_rpc_copy_from_rep copy_from_rep;
        tether_rpc_invoke call_req;
        tether_rpc_call_rep call_rep;
        tether_rpc_time_req time_req;
        tether_rpc_time_rep time_rep;
        tether_rpc_seq_req seq_req; /* LAUNCH_SEQ and TIME_SEQ */
        tether_rpc_launch_seq_rep launch_seq_rep;
        tether_rpc_time_seq_rep time_seq_rep;
        tether_rpc_log_msg log;
        tether_rpc_error_rep error;
    } u;
} tether_rpc_msg;

/* Name of a message type ("HELLO", "CALL reply", "ERROR"); NULL when unknown. */
const char *tether_rpc_type_name(uint32_t type);

/* True for a type this version defines (request, reply of a request, LOG, ERROR). */
bool tether_rpc_type_valid(uint32_t type);

/* Wraps a NUL-terminated string (NULL gives the empty string). */
tether_rpc_str tether_rpc_str_c(const char *s);
/* True when a borrowed string equals a NUL-terminated one. */
bool tether_rpc_str_eq(tether_rpc_str s, const char *c);
/* Copies into buf as a NUL-terminated string. TETHER_ERR_LIMIT (message names `what`) when it
 * does not fit; TETHER_ERR_INVALID_ARG when the string contains a NUL byte. */
int tether_rpc_str_copy(tether_rpc_str s, char *buf, size_t size, const char *what);

/* Largest data payload of one COPY_TO / UPLOAD_CHUNK request or COPY_FROM reply for a peer that
 * accepts frames of max_frame bytes: max_frame - TETHER_RPC_CHUNK_OVERHEAD (0 when max_frame is
 * below TETHER_RPC_MIN_FRAME). */
uint32_t tether_rpc_chunk_max(uint32_t max_frame);

/* Fills an ERROR reply for request `id` from a status and message (message borrowed). */
void tether_rpc_make_error(tether_rpc_msg *m, uint32_t id, int code, const char *message);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_PROTO_H */
