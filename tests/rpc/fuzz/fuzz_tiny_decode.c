/*
 * tether rpc fuzz target: the tiny (freestanding) codec: decode, peek the header, re-encode into
 * buffers of every size up to the full length (must fail cleanly or produce the same bytes),
 * and run the bare msgpack reader's skip over the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static tether_rpc_msg m, again;
    static tether_rpc_seq_storage sm, sa; /* kernel sequences decode too */
    static uint8_t out[1 << 17];
    tether_mp_reader r;
    tether_mp_reader_init(&r, data, size);
    (void)tether_mp_skip(&r);
    uint32_t type, id;
    (void)tether_rpc_peek_header(data, size, &type, &id);
    (void)tether_rpc_tiny_decode(data, size, &m); /* no storage: sequences refused */
    if (tether_rpc_tiny_decode_seq(data, size, &m, &sm) != 0) {
        return 0;
    }
    size_t n;
    if (tether_rpc_tiny_encode(&m, out, sizeof out, &n) != 0) {
        abort();
    }
    if (tether_rpc_tiny_decode_seq(out, n, &again, &sa) != 0) {
        abort();
    }
    /* a short output buffer must fail, never overrun (ASan checks the bound) */
    if (n > 1) {
        uint8_t *small = malloc(n - 1);
        size_t k;
        if (tether_rpc_tiny_encode(&m, small, n - 1, &k) == 0) {
            abort();
        }
        free(small);
    }
    return 0;
}
