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
} tetherd_config;

/* Serves one session on t (owned by the caller) with files in dir. Returns 0 on a clean end. */
/* cpu.c: the HELLO `cpu` (-march value, "" = baseline) and `cpu_features` of this CPU. */
void tetherd_cpu_describe(char *cpu, size_t cpu_size, char *features, size_t features_size);

int tetherd_session_run(const tetherd_config *cfg, tether_transport *t, const char *dir,
                        const char *peer);

/* One log line to stderr: "tetherd[pid] peer: text" (level 0 normal, 1 verbose, -1 error). */
void tetherd_log(const tetherd_config *cfg, int level, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
