/*
 * tether rpc: the wire between the workstation and every device (normative spec: docs/rpc.md).
 *
 * Include this one header. Freestanding parts (library tether_rpc_tiny, MCU firmware may compile
 * its sources directly):
 *   rpc/proto.h     protocol version, limits, message types and structs
 *   rpc/mp.h        zero-allocation msgpack subset reader/writer
 *   rpc/codec.h     message encode/decode: tiny codec (and the msgpack-c codec's declarations)
 *   rpc/frame.h     CRC-16/CCITT, stream framing, UART framing
 *   rpc/flow.h      chunked-transfer flow control, duplicate-request reply cache
 *   rpc/timeeval.h  the TIME evaluator loop (TVM semantics)
 *   rpc/sha256.h    SHA-256 for upload hashes
 *   rpc/server.h    the device-side request core shared by tetherd and the MCU firmware
 * Hosted parts (library tether_rpc: msgpack-c, libuv, termios, libsodium), only included when
 * the compiler is hosted:
 *   rpc/transport.h transports (TCP, UART, stdio/pipe), libuv listener, blocking client helper
 *   rpc/auth.h      HMAC challenge-response helpers
 */
#ifndef TETHER_RPC_H
#define TETHER_RPC_H

#include "tether/rpc/proto.h"
#include "tether/rpc/mp.h"
#include "tether/rpc/codec.h"
#include "tether/rpc/frame.h"
#include "tether/rpc/flow.h"
#include "tether/rpc/timeeval.h"
#include "tether/rpc/sha256.h"
#include "tether/rpc/server.h"

#if defined(__STDC_HOSTED__) && __STDC_HOSTED__
#include "tether/rpc/transport.h"
#include "tether/rpc/auth.h"
#endif

#endif /* TETHER_RPC_H */
