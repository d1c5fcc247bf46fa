/*
 * tetherd: what the files of one session share (private to device/tetherd).
 *
 * A session is the shared request handler of rpc/ (tether/rpc/server.h: gating, decoding,
 * every request's checks, codes and messages, the handle tables) over this device's side:
 *   session.c  the request loop, HELLO/AUTH, the server ops and the transport hooks;
 *   guard.c    the log line, the daemon's watch, fatal signals during a call and their ERROR;
 *   memory.c   the device interface: arrays (host memory, OpenCL images and buffers), uploads
 *              (files in the session directory, the upload cache), loading (dlopen, OpenCL
 *              programs) and kernel lookup;
 *   call.c     CPU CALL/TIME on the dedicated, measured stack;
 *   cl_call.c  OpenCL CALL/TIME and kernel sequences (LAUNCH_SEQ/TIME_SEQ).
 *
 * What must stay true: nothing here checks a request the core checks (so tetherd and the MCU
 * firmware answer alike); every table slot's side state (files, OpenCL objects) is indexed by
 * the core's slot index and released by the device hook that releases the slot.
 */
#ifndef TETHERD_SESSION_INTERNAL_H
#define TETHERD_SESSION_INTERNAL_H

#include <stdbool.h>

#include "session.h"
#include "tether/crt.h"
#include "tether/crt_posix.h"
#include "tether/rpc/server.h"

#ifdef TETHERD_HAVE_OPENCL
#include "opencl.h"
#endif

#define MAX_UPLOADS 32
#define MAX_MODULES 16
#define MAX_ARRAYS  1024
#define CACHE_SLOTS 8   /* replies kept for retransmitted requests */
#define CACHE_SLOT  512 /* bytes per cached reply (larger ones are idempotent COPY_FROM data) */

typedef struct session {
    const tetherd_config *cfg;
    tether_transport *t;
    const char *dir;
    const char *peer;
    uint8_t *tx;
    size_t tx_cap;
    tether_server srv;            /* the shared request handler */
    tether_server_device dev;     /* this device under it (memory.c) */
    tether_rpc_reply_cache cache; /* its reply cache */
    uint8_t cache_mem[CACHE_SLOTS * CACHE_SLOT];
    tether_rpc_msg req, rep;                       /* its request and reply */
    tether_value call_values[TETHER_RPC_MAX_ARGS]; /* arguments converted by the core */
    int32_t call_codes[TETHER_RPC_MAX_ARGS];
    tether_server_array arrays[MAX_ARRAYS]; /* the core's tables, this session's storage */
    tether_server_module modules[MAX_MODULES];
    tether_server_upload uploads[MAX_UPLOADS];
    struct {
        int fd; /* open while chunks arrive, else -1 */
        char path[512];
    } files[MAX_UPLOADS]; /* per upload slot: "u<id>.bin" in the session directory */
    uint8_t nonce[TETHER_RPC_NONCE_BYTES];
    void *stack;
    size_t stack_size;
    tether_posix_call_stack call_stack; /* on stack: kept painted, only what a call used is
                                           repainted before the next one */
    size_t call_overhead[2];            /* per ABI: the call path's own stack bytes (0 = not
                                           measured yet), see call.c */
    int shutdown;
    tether_rpc_seq_storage seq; /* steps of a decoded LAUNCH_SEQ / TIME_SEQ request */
#ifdef TETHERD_HAVE_OPENCL
    struct {
        tetherd_cl_mem *clm; /* image (texture scopes) or buffer over the bytes (global, made on
                                use by a kernel) */
        int dirty;           /* a kernel had the buffer: the bytes are stale until synchronised */
    } acl[MAX_ARRAYS];
    tetherd_cl *cl;
#endif
} session;

/* guard.c: the watch and the fatal-signal handler around uploaded code. */
void tetherd_watch_attach(tetherd_watch *w);
void tetherd_watch_set(uint32_t phase, uint64_t deadline_ns);
void tetherd_watch_busy(void);
void tetherd_guard_install(tether_posix_call_stack *stack);
void tetherd_guard_remove(void);
void tetherd_call_begin(session *s, uint32_t id, const char *name, uint32_t timeout_ms);
void tetherd_call_end(void);

/* memory.c: the device interface of the shared handler. */
void tetherd_device_init(session *s);
void tetherd_device_close(session *s);
#ifdef TETHERD_HAVE_OPENCL
int tetherd_ensure_cl(session *s);
#endif

/* call.c: CPU functions (call->fn.impl is their tether_func_entry). */
int tetherd_cpu_invoke(session *s, const tether_server_call *call, tether_rpc_msg *rep);
void tetherd_sleep_ms(uint32_t ms);

/* cl_call.c: OpenCL kernels and kernel sequences. */
#ifdef TETHERD_HAVE_OPENCL
int tetherd_cl_invoke(session *s, const tether_server_call *call, tether_rpc_msg *rep);
int tetherd_cl_seq(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep);
#endif

#endif
