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
    /* Named memory pools (--pool NAME[:SIZE]), listed in HELLO; ALLOC in a pool not listed is
     * refused. npools 0 = one pool "dram" without its own limit. A pool's capacity (0 = none)
     * bounds the bytes a session holds in it; every allocation also counts to max_alloc. */
    int npools;
    char pool_name[TETHER_RPC_MAX_POOLS][TETHER_POOL_NAME_MAX];
    uint64_t pool_capacity[TETHER_RPC_MAX_POOLS];
    const char *cache_dir; /* the upload cache (--upload-cache), NULL = off */
    uint64_t cache_max;    /* its size limit in bytes */
} tetherd_config;

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
