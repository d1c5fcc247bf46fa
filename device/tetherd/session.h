/*
 * tetherd: one session (private to device/tetherd).
 *
 * A session serves requests from one transport until the peer goes away or sends SHUTDOWN. It
 * always runs in a process of its own (forked by the daemon), so a kernel that faults or hangs
 * ends only this process: a fatal-signal handler sends the host an ERROR naming the function and
 * the signal (or the timeout) before the process exits. The session owns its directory (created
 * 0700 by the daemon, removed by the daemon after the session process has been reaped), every
 * uploaded file, loaded module and allocated array.
 */
#ifndef TETHERD_SESSION_H
#define TETHERD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "tether/rpc.h"

/* The watch: one page shared (MAP_SHARED) between the daemon and one session process, through
 * which the daemon enforces the deadlines the session process cannot be trusted to enforce on
 * itself (an uploaded function may block or ignore any signal): the call timeout is enforced
 * here alone, and the session arms no timer of its own. The session process writes the
 * deadline and call fields first and then the phase (release); the daemon reads the phase
 * first (acquire). Leaving a call, the session moves CALL -> BUSY and the fatal-signal handler
 * CALL -> REPORTING, the daemon CALL -> CONDEMNED, each by compare-and-swap: exactly one of them
 * answers the call. A session that loses that race stops (pause) until the daemon's SIGKILL. */
enum {
    TETHERD_PHASE_HELLO = 0, /* before HELLO (and AUTH, with a token): deadline = hello timeout */
    TETHERD_PHASE_IDLE,      /* waiting for a request: deadline = idle timeout (0 = none) */
    TETHERD_PHASE_BUSY,      /* handling a request outside a call (transport timeouts bound it) */
    TETHERD_PHASE_CALL,      /* running uploaded code: deadline = call timeout (0 = none) */
    TETHERD_PHASE_REPORTING, /* the session's own fatal-signal handler is answering the call */
    TETHERD_PHASE_CONDEMNED, /* the daemon answered the call and kills the process */
};

typedef struct tetherd_watch {
    uint32_t phase;      /* TETHERD_PHASE_*, atomic */
    uint32_t call_id;    /* request id of the CALL/TIME/LAUNCH_SEQ/TIME_SEQ in progress */
    uint32_t timeout_ms; /* its call timeout */
    uint32_t pad;
    uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 = none */
    uint64_t started_ns;  /* when the session process started */
    char func[TETHER_RPC_MAX_NAME];
} tetherd_watch;

typedef struct tetherd_config {
    const char *token; /* NULL = no auth */
    size_t token_len;
    uint64_t max_upload;      /* bytes per upload */
    uint64_t max_alloc;       /* bytes allocated per session */
    uint32_t call_timeout_ms; /* per CALL / TIME (0 = none) */
    size_t stack_size;        /* dedicated call stack */
    int verbose;              /* -1 quiet, 0 normal, 1 verbose */
    uint32_t cl_max_width;    /* OpenCL image limits; 0 = no OpenCL layer */
    uint32_t cl_max_height;
    uint32_t cl_max_work_group_size; /* the OpenCL device's work limits, for HELLO (0 = none) */
    uint32_t cl_wg_multiple;
    uint64_t cl_local_mem_size;
    uint32_t cl_compute_units;
    uint32_t cl_features; /* TETHER_RPC_CL_* bits of the device's extensions, for HELLO */
    /* Named memory pools (--pool NAME[:SIZE]), listed in HELLO; ALLOC in a pool not listed is
     * refused. npools 0 = one pool "dram" without its own limit. A pool's capacity (0 = none)
     * bounds the bytes a session holds in it; every allocation also counts to max_alloc. */
    int npools;
    char pool_name[TETHER_RPC_MAX_POOLS][TETHER_POOL_NAME_MAX];
    uint64_t pool_capacity[TETHER_RPC_MAX_POOLS];
    const char *cache_dir;     /* the upload cache (--upload-cache), NULL = off */
    uint64_t cache_max;        /* its size limit in bytes */
    uint32_t hello_timeout_ms; /* HELLO (and AUTH) must be done this long after connect */
    uint32_t idle_timeout_ms;  /* longest wait for the next request (0 = none) */
    tetherd_watch *watch;      /* this session's watch (set in the session process; may be NULL) */
} tetherd_config;

/* Current CLOCK_MONOTONIC time in ns (the watch's clock). */
uint64_t tetherd_now_ns(void);

/* Writes ERROR(id, code, text) to fd in the transport's framing (stream or UART); blocking
 * for at most about a second. Async-signal-safe (no allocation); used by the session's
 * fatal-signal handler and by the daemon answering for a session it killed. */
void tetherd_write_error(int fd, tether_transport_kind kind, uint32_t id, int code,
                         const char *text);

/* upload_cache.c: uploads kept by SHA-256 across sessions (docs/tetherd.md). fetch writes the
 * entry of `hash` into fd when there is one of `size` bytes that still hashes to its name:
 * 1 = hit, 0 = miss (fd left empty), -1 = fd could not be reset. store copies a complete,
 * verified upload into the cache (best effort) and evicts the oldest-used entries over
 * cache_max. open creates the directory (0700, with parents) and refuses one that another user
 * owns or can write: dir, or NULL with why. */
int tetherd_cache_fetch(const tetherd_config *cfg, const uint8_t hash[32], uint64_t size, int fd);
void tetherd_cache_store(const tetherd_config *cfg, const uint8_t hash[32], const char *src,
                         uint64_t size);
const char *tetherd_cache_open(const char *dir, char *why, size_t why_size);

/* Serves one session on t (owned by the caller) with files in dir. Returns 0 on a clean end. */
/* cpu.c: the HELLO `cpu` (-march value, "" = baseline) and `cpu_features` of this CPU. */
void tetherd_cpu_describe(char *cpu, size_t cpu_size, char *features, size_t features_size);

int tetherd_session_run(const tetherd_config *cfg, tether_transport *t, const char *dir,
                        const char *peer);

/* One log line to stderr: "tetherd[pid] peer: text" (level 0 normal, 1 verbose, -1 error). */
void tetherd_log(const tetherd_config *cfg, int level, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
