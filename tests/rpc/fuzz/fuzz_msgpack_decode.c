/*
 * tether rpc fuzz target: the msgpack-c message decoder. Differential: whatever one codec
 * accepts, the other must accept too, and both must re-encode it to identical bytes that
 * decode to the same message again.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static tether_rpc_msg a, b;
    static tether_rpc_seq_storage sa, sb; /* kernel sequences decode too */
    static uint8_t e1[1 << 17], e2[1 << 17];
    /* without storage both refuse sequences the same way */
    if ((tether_rpc_msgpack_decode(data, size, &a) == 0) !=
        (tether_rpc_tiny_decode(data, size, &b) == 0)) {
        abort();
    }
    int ra = tether_rpc_msgpack_decode_seq(data, size, &a, &sa);
    int rb = tether_rpc_tiny_decode_seq(data, size, &b, &sb);
    if ((ra == 0) != (rb == 0)) {
        abort(); /* the codecs disagree on validity */
    }
    if (ra != 0) {
        return 0;
    }
    size_t n1, n2;
    if (tether_rpc_msgpack_encode(&a, e1, sizeof e1, &n1) != 0 ||
        tether_rpc_tiny_encode(&b, e2, sizeof e2, &n2) != 0) {
        abort(); /* a decoded message must be encodable */
    }
    if (n1 != n2 || memcmp(e1, e2, n1) != 0) {
        abort();
    }
    if (tether_rpc_msgpack_decode_seq(e1, n1, &a, &sa) != 0) {
        abort();
    }
    return 0;
}
