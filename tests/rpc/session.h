/*
 * tether rpc tests: the client side of the transport tests: one scripted session against the
 * test server (HELLO, a chunked COPY_TO + COPY_FROM round trip, a call with a LOG notification,
 * ERROR replies, a lost reply answered from the device's reply cache, SHUTDOWN).
 */
#ifndef TETHER_RPC_TEST_SESSION_H
#define TETHER_RPC_TEST_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "tether/rpc.h"

/* Runs the session with cmocka assertions. copy_bytes: size of the COPY_TO/COPY_FROM round trip;
 * uart: also exercise corrupted frames on the line. */
void session_run(tether_transport *t, size_t copy_bytes, bool uart);

#endif
