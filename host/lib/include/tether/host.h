/*
 * tether host: the client library that drives a device (tetherd or MCU firmware) over RPC.
 *
 * A tether_session is opened from a URL:
 *   tcp://HOST:PORT            a tetherd listening on TCP (HOST may be [v6])
 *   uart:///dev/ttyX?baud=N    a device on a serial line (UART framing)
 *   local:                     spawn `tetherd --stdio` as a child process (the default)
 * then HELLO (and AUTH when the device asks for it) happen inside open. Everything after is
 * strictly protocol-driven: capabilities come from the HELLO reply, chunk sizes from the peer's
 * max frame. Every request has a timeout (tether_session_options.timeout_ms); a lost peer is
 * TETHER_ERR_IO with a message.
 *
 * Ownership: the session owns its transport and buffers; tether_session_close releases them (and
 * reaps a spawned tetherd). Strings in tether_device_info live as long as the session. Remote
 * handles (modules, functions, arrays) are plain numbers valid for the session only. Errors are
 * negative tether_status values with the text in tether_last_error(). One thread per session.
 *
 * Faults: when a called function crashes (ERROR TETHER_ERR_CRASHED: tetherd's session process
 * died, an MCU reported its fault registers and reset) or the device shows that it restarted
 * (an MCU refusing requests until HELLO), the session is marked lost: tether_session_fault gives
 * the report. On a serial line every further request then fails with TETHER_ERR_STATE without
 * touching the device, so nothing of the old session can run in a new one (over TCP/local the
 * old connection is dead: requests fail with TETHER_ERR_IO). tether_session_reconnect starts a new
 * session on the same device (new HELLO; for TCP and local: a new connection); all handles of
 * the old one are gone.
 */
#ifndef TETHER_HOST_H
#define TETHER_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "tether/crt/abi.h"
#include "tether/crt/scope.h"
#include "tether/file.h" /* tether_file_read: uploads, .npy files, params blobs, metadata */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_session tether_session;

/* Progress of a transfer: done of total bytes, called with 0 when it starts and after every
 * chunk; what names it ("upload NAME", "copy to device", "copy from device"). */
typedef void (*tether_progress_fn)(void *ctx, const char *what, uint64_t done, uint64_t total);

/* A LOG line from the device (level 0 error, 1 warn, 2 info, 3 debug; text NUL-terminated,
 * valid during the call). Sent by devices at any time; delivered while the host waits. */
typedef void (*tether_device_log_fn)(void *ctx, int level, const char *text);

/* Opening a serial device that another process holds, with a wait (wait_ms != 0): called once
 * when the wait starts, and again only if yet another process takes the device first.
 * holder_pid 0 = not known. The library prints nothing itself. */
typedef void (*tether_device_wait_fn)(void *ctx, const char *device, int holder_pid);

typedef struct tether_session_options {
    int timeout_ms;    /* per request; 0 = 30000 */
    const void *token; /* shared auth token, NULL = none */
    size_t token_len;
    const char *tetherd; /* local: program to spawn; NULL = $TETHER_TETHERD or "tetherd" */
    const char *const *tetherd_args; /* extra arguments for the spawned tetherd, NULL-ended */
    tether_progress_fn progress;     /* may be NULL */
    void *progress_ctx;
    tether_device_log_fn log; /* device LOG lines; NULL = dropped */
    void *log_ctx;
    /* Serial lines are locked by the session that opens them (docs/rpc.md, "Serial port
     * locks"). When another process holds the device: 0 = fail at once with TETHER_ERR_BUSY
     * ("device busy: /dev/ttyX is held by pid N"), -1 = wait forever, >0 = wait at most that
     * many ms, then TETHER_ERR_BUSY. Ignored for tcp:// and local:. */
    int wait_ms;
    tether_device_wait_fn on_wait; /* may be NULL */
    void *wait_ctx;
} tether_session_options;

/* The device as described by its HELLO reply. */
typedef struct tether_device_info {
    uint32_t version;
    char triple[128];
    char arch[128];
    bool little_endian;
    uint32_t pointer_bits;
    uint32_t max_frame;
    uint32_t window;
    uint64_t clock_hz;
    uint32_t scopes; /* TETHER_RPC_SCOPE_BIT mask */
    uint32_t num_pools;
    char pools[8][128];
    uint64_t pool_sizes[8]; /* bytes of each pool (0 = not reported or no limit) */
    bool opencl;
    uint32_t image_max_width, image_max_height;
    uint64_t load_addr, load_size;
    bool auth_required;
    char board[128];                          /* "" when the device is not a board (tetherd) */
    uint64_t ram_size, heap_size, stack_size; /* 0 = not reported */
    uint32_t boot_count;
    uint32_t exports_id;    /* MCU: identity of the firmware's exported symbols (firmware.json) */
    char cpu[128];          /* the -march value for this CPU ("x86-64-v4"); "" = baseline */
    char cpu_features[256]; /* its ISA extensions, space separated; "" = not reported */
    /* The OpenCL device's work limits (0 = no OpenCL, or a device that does not report them):
     * what compiling for it with --backend opencl sizes the kernels by (tether_opencl_options). */
    uint32_t cl_max_work_group_size; /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint32_t cl_wg_multiple;         /* preferred work-group size multiple */
    uint64_t cl_local_mem_size;      /* CL_DEVICE_LOCAL_MEM_SIZE, bytes */
    uint32_t cl_compute_units;       /* CL_DEVICE_MAX_COMPUTE_UNITS */
    /* Its extensions: 1 it has it, -1 it lacks it, 0 not reported. A float64 model compiled
     * for a device lacking cl_khr_fp64 is refused at compile time, naming the tensor. */
    int cl_fp64; /* cl_khr_fp64 */
    int cl_fp16; /* cl_khr_fp16 */
} tether_device_info;

typedef struct tether_remote_func {
    uint64_t handle;
    tether_abi abi;
    int32_t num_args; /* -1 = any */
    char name[128];   /* for messages */
} tether_remote_func;

/* One argument of a remote call: an array handle (passed as DLTensor for packed functions, as a
 * pointer for unpacked ones) or a scalar. */
typedef struct tether_remote_arg {
    int32_t type_code; /* TETHER_TYPE_DLTENSOR / HANDLE / INT / UINT / FLOAT / NULL */
    union {
        uint64_t array;
        int64_t i;
        uint64_t u;
        double f;
    } v;
} tether_remote_arg;

typedef struct tether_call_result {
    int32_t ret;
    uint64_t elapsed_ns;
    uint64_t stack_bytes;
    tether_remote_arg ret_value; /* packed return value; type_code TETHER_TYPE_NULL when none */
} tether_call_result;

typedef struct tether_time_stats {
    uint32_t number, repeat;
    bool zero_timer;
    double seconds[32]; /* mean seconds per call, one per repeat */
    double mean, median, min, max;
    /* TIME_SEQ (OpenCL kernel sequences): the median wall-clock seconds of one call on the
     * device, the first kernel's profiled START to the last one's END (the device's profiling
     * clock, no host round trip), or with TETHER_SEQ_NO_PROFILE the device's host clock around
     * enqueue + clFinish; 0 when the device does not report it. tether_artifact_time fills it
     * from unprofiled runs (docs/cli.md) */
    double wall_seconds;
} tether_time_stats;

/* Checks a device URL's syntax without opening anything (TETHER_ERR_INVALID_ARG naming the
 * problem); an empty string is an error here, though tether_session_open takes NULL or "" as
 * local:. */
int tether_device_url_check(const char *url);

/* Opens a session (connect/spawn, HELLO, AUTH). *out is NULL on failure. */
int tether_session_open(tether_session **out, const char *url, const tether_session_options *opt);
/* Ends the session and releases everything. NULL is ignored. The device is told best-effort:
 * SHUTDOWN (tetherd ends the session process), but RESET on a serial line (an MCU frees the
 * session and keeps running instead of rebooting); nothing when the session is lost. */
void tether_session_close(tether_session *s);
const tether_device_info *tether_session_info(const tether_session *s);

/* The fault or restart that ended the session (e.g. "CALL failed: UsageFault in 'div' pc=...
 * cfsr=..."), NULL while the session is usable. */
const char *tether_session_fault(const tether_session *s);
/* Starts a new session on the same device after a fault (or at any time): waits for the device
 * to come back, HELLO (+AUTH). Handles of the old session are invalid afterwards; the info is
 * refreshed (an MCU's boot_count has grown after a reset). On a serial line the tty stays open
 * and locked throughout, so no other client can take the device in between. */
int tether_session_reconnect(tether_session *s);

/* Module kinds of an upload (the wire's tether_rpc_module_kind). */
enum {
    TETHER_MODULE_SHARED_OBJECT = 0, /* ELF .so for tetherd */
    TETHER_MODULE_OPENCL_SOURCE = 1, /* OpenCL C, built on the device */
    TETHER_MODULE_MCU_IMAGE = 2,     /* raw image linked at an MCU's load region */
};

/* Uploads bytes as module `name` (kind: TETHER_MODULE_*), chunked to the peer's max frame, with
 * its SHA-256. A device that already holds bytes of that SHA-256 (tetherd's upload cache,
 * docs/tetherd.md) says so in its UPLOAD reply and no chunk is sent:
 * tether_session_last_upload_cached is then true until the next upload. */
/* Largest module one upload may carry (the protocol's limit, docs/rpc.md). */
#define TETHER_UPLOAD_MAX_BYTES ((size_t)256 << 20)
int tether_session_upload(tether_session *s, uint32_t kind, const char *name, const void *data,
                          size_t size);
int tether_session_upload_file(tether_session *s, uint32_t kind, const char *name,
                               const char *path);
bool tether_session_last_upload_cached(const tether_session *s);

/* How the session's link has fared since it was opened (docs/rpc.md, "UART link"). On a
 * serial line (uart://, tcp-serial://) the client resends a damaged exchange at once and sizes
 * its chunks to the byte error rate it measures; elsewhere only the frame counts mean much. */
typedef struct tether_link_stats {
    bool serial;              /* UART framing (uart://, tcp-serial://) */
    bool link2;               /* link-2 frames (CRC-32) agreed with the device in HELLO */
    uint64_t frames_sent;     /* frames this end sent, resends included */
    uint64_t frames_resent;   /* requests sent again (after a NAK, a damaged reply, a timeout) */
    uint64_t frames_received; /* good frames received */
    uint64_t frames_dropped;  /* damaged frames received (CRC, truncated, escape, garbage) */
    uint64_t crc_errors;      /* of which for a wrong CRC */
    uint64_t naks_received;   /* damaged frames the device reported (its NAKs) */
    uint64_t naks_sent;
    uint64_t bytes_sent, bytes_received; /* on the wire */
    double error_rate;                   /* estimated byte error rate of the line (0 = none seen) */
    size_t chunk;     /* data bytes per chunk now (adapts to error_rate on serial) */
    size_t max_chunk; /* the most the two max frames allow */
    int rto_ms;       /* retransmission timeout (0 = not measured yet) */
    double rtt_ms;    /* smoothed round trip of link-only requests */
} tether_link_stats;
int tether_session_link_stats(const tether_session *s, tether_link_stats *out);
int tether_session_load_module(tether_session *s, const char *name, uint64_t *module,
                               uint32_t *num_functions);
/* module 0 = the device's system library. */
int tether_session_get_function(tether_session *s, uint64_t module, const char *name,
                                tether_remote_func *out);

int tether_session_alloc(tether_session *s, const int64_t *shape, int ndim, DLDataType dtype,
                         tether_scope scope, const char *pool, uint64_t *array, uint64_t *nbytes);
int tether_session_free(tether_session *s, uint64_t array);
int tether_session_copy_to(tether_session *s, uint64_t array, uint64_t offset, const void *data,
                           size_t len);
int tether_session_copy_from(tether_session *s, uint64_t array, uint64_t offset, void *data,
                             size_t len);

/* Calls a CPU function with the ABI it announced. A non-zero return code of the function is an
 * error, as tetherd reports it: the code itself when it is a tether_status, else
 * TETHER_ERR_STATE, with "function 'NAME' returned N: <the device's message>"; res is filled in
 * either case. */
int tether_session_call(tether_session *s, const tether_remote_func *f,
                        const tether_remote_arg *args, uint32_t num_args, tether_call_result *res);
/* TIME with TVM semantics; fills per-repeat seconds and mean/median/min/max of them. */
int tether_session_time(tether_session *s, const tether_remote_func *f,
                        const tether_remote_arg *args, uint32_t num_args, uint32_t number,
                        uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                        tether_time_stats *out);
/* OpenCL kernels (when HELLO says opencl): the same with an NDRange of work_dim 1..3 global
 * sizes and local sizes (local NULL or all 0 = let the runtime choose). Array arguments are
 * images (texture scopes) or buffers (global); elapsed_ns comes from event profiling. */
int tether_session_launch(tether_session *s, const tether_remote_func *f,
                          const tether_remote_arg *args, uint32_t num_args, uint32_t work_dim,
                          const uint64_t *global, const uint64_t *local, tether_call_result *res);
int tether_session_time_launch(tether_session *s, const tether_remote_func *f,
                               const tether_remote_arg *args, uint32_t num_args, uint32_t work_dim,
                               const uint64_t *global, const uint64_t *local, uint32_t number,
                               uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                               tether_time_stats *out);
/* Kernel sequences (LAUNCH_SEQ / TIME_SEQ, docs/rpc.md): up to TETHER_SEQ_MAX_STEPS kernel
 * launches, TETHER_SEQ_MAX_ARGS arguments in all, sent in one request and run back to back on
 * the device's queue. A step borrows its function and arguments from the caller for the
 * duration of the call only. A failing step stops the sequence; the error names its index and
 * kernel ("LAUNCH_SEQ step 2 ('k_relu'): ..."). A device without OpenCL answers
 * TETHER_ERR_UNSUPPORTED. */
#define TETHER_SEQ_MAX_STEPS 128
#define TETHER_SEQ_MAX_ARGS  1024
typedef struct tether_launch_step {
    const tether_remote_func *func; /* a kernel from tether_session_get_function */
    const tether_remote_arg *args;
    uint32_t num_args;
    uint32_t work_dim; /* 1..3 */
    uint64_t global[3];
    uint64_t local[3]; /* all 0 = let the runtime choose */
} tether_launch_step;
typedef struct tether_seq_result {
    uint64_t elapsed_ns; /* sum of the steps' profiled times */
    uint32_t num_steps;
    uint64_t step_ns[TETHER_SEQ_MAX_STEPS]; /* each step's profiled time */
    /* the wall-clock ns of the sequence on the device: the first step's profiled START to the
     * last step's END (no host round trip), with TETHER_SEQ_NO_PROFILE the device's host clock
     * around enqueue + clFinish; 0 when the device does not report it */
    uint64_t wall_ns;
} tether_seq_result;
int tether_session_launch_seq(tether_session *s, const tether_launch_step *steps,
                              uint32_t num_steps, tether_seq_result *res);
/* Sequence flags (the request's `flags`, docs/rpc.md). TETHER_SEQ_NO_PROFILE: the device makes
 * no profiling event per kernel; the reply has no per-step times (elapsed_ns 0, num_steps 0,
 * step_seconds 0) and wall_ns / wall_seconds is the device's host clock from before the first
 * enqueue to the return of its one clFinish (TIME_SEQ: seconds are those walls too). A device
 * from before the flag ignores it and profiles every step as without it. */
#define TETHER_SEQ_NO_PROFILE 1u
/* tether_session_launch_seq with flags (0: the same). */
int tether_session_launch_seq_ex(tether_session *s, const tether_launch_step *steps,
                                 uint32_t num_steps, uint32_t flags, tether_seq_result *res);
/* TIME of the whole sequence (TVM semantics; one call = all steps). out as for
 * tether_session_time; step_seconds (NULL or num_steps entries) receives each step's median over
 * the repeats of its mean seconds per sequence. */
int tether_session_time_launch_seq(tether_session *s, const tether_launch_step *steps,
                                   uint32_t num_steps, uint32_t number, uint32_t repeat,
                                   uint32_t min_repeat_ms, uint32_t cooldown_ms,
                                   tether_time_stats *out, double *step_seconds);
/* tether_session_time_launch_seq with flags (TETHER_SEQ_*; 0: the same). */
int tether_session_time_launch_seq_ex(tether_session *s, const tether_launch_step *steps,
                                      uint32_t num_steps, uint32_t flags, uint32_t number,
                                      uint32_t repeat, uint32_t min_repeat_ms, uint32_t cooldown_ms,
                                      tether_time_stats *out, double *step_seconds);
/* RESET: the device frees every handle of the session. */
int tether_session_reset(tether_session *s);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_HOST_H */
