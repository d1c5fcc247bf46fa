/*
 * tether rpc tests: a small request handler used as the "device" by the transport tests (in a
 * thread for TCP/UART, as a child process for stdio). It answers HELLO, COPY_TO/COPY_FROM (into a
 * 4 MiB buffer), CALL (special function handles trigger a LOG first, a corrupted frame on the
 * line, or a lost reply), SHUTDOWN, and ERROR for anything else; it dedups retransmissions with
 * a reply cache.
 */
#ifndef TETHER_RPC_TEST_SERVER_H
#define TETHER_RPC_TEST_SERVER_H

#include <stdint.h>

#include "tether/rpc.h"

#define TS_FUNC_LOG     1   /* sends a LOG notification, then replies ret 42 */
#define TS_FUNC_CORRUPT 666 /* (UART) writes garbage and a corrupted frame, then replies */
#define TS_FUNC_LOSE    777 /* first time: executes, caches the reply, does not send it */
#define TS_FUNC_COUNT   778 /* replies ret = executions of TS_FUNC_LOSE */
#define TS_MEM          (4u * 1024u * 1024u)

typedef struct ts_stats {
    uint32_t requests;
    uint32_t duplicates;
    uint64_t copied;
} ts_stats;

/* Serves until SHUTDOWN (returns 0) or the peer goes away (returns 0 too); negative on a
 * protocol failure. */
int ts_serve(tether_transport *t, ts_stats *st);

#endif
