/*
 * tether rpc fuzz target: the UART unframer (and the stream unframer) on arbitrary bytes.
 * Every delivered UART frame must re-encode, in the classic and the link-2 form, to a frame
 * that the unframer delivers identically (so no corrupted frame is ever delivered as something
 * else); frame and NAK counters must add up.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tether/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) {
        return 0;
    }
    /* first byte picks the receive buffer size (1..256) */
    size_t cap = (size_t)data[0] + 1;
    uint8_t *buf = malloc(cap);
    tether_uart_unframer u;
    tether_uart_unframer_init(&u, buf, cap, NULL, NULL);
    uint32_t frames = 0, naks = 0;
    size_t pos = 1;
    while (pos < size) {
        size_t used, flen;
        const uint8_t *f;
        int got = tether_uart_unframer_push(&u, data + pos, size - pos, &used, &f, &flen);
        if (got == TETHER_UART_NAK) {
            naks++;
        } else if (got == TETHER_UART_FRAME) {
            frames++;
            if (flen == 0 || flen > cap) {
                abort();
            }
            /* re-frame (in the other form every second time) and decode again: the same
             * payload */
            bool link2 = frames % 2 == 0;
            uint8_t *wire = malloc(TETHER_UART_ENCODED_MAX(flen));
            uint8_t *copy = malloc(flen);
            memcpy(copy, f, flen);
            size_t wn;
            if (tether_uart_frame_encode_ex(copy, flen, link2, wire, TETHER_UART_ENCODED_MAX(flen),
                                            &wn)) {
                abort();
            }
            uint8_t *b2 = malloc(cap);
            tether_uart_unframer u2;
            tether_uart_unframer_init(&u2, b2, cap, NULL, NULL);
            size_t used2, fl2;
            const uint8_t *f2;
            if (tether_uart_unframer_push(&u2, wire, wn, &used2, &f2, &fl2) != TETHER_UART_FRAME ||
                fl2 != flen || memcmp(f2, copy, flen) != 0 || u2.link2_frames != (uint32_t)link2) {
                abort();
            }
            free(b2);
            free(wire);
            free(copy);
        }
        pos += used;
    }
    if (u.frames != frames || u.naks != naks) {
        abort();
    }
    free(buf);

    /* stream unframer: never delivers more than its capacity, errors are sticky */
    uint8_t sbuf[64];
    tether_stream_unframer s;
    tether_stream_unframer_init(&s, sbuf, sizeof sbuf);
    pos = 1;
    while (pos < size) {
        size_t used, flen;
        const uint8_t *f;
        int rc = tether_stream_unframer_push(&s, data + pos, size - pos, &used, &f, &flen);
        if (rc < 0) {
            break;
        }
        if (rc == 1 && (flen == 0 || flen > sizeof sbuf)) {
            abort();
        }
        if (used == 0 && rc == 0) {
            abort(); /* no progress */
        }
        pos += used;
    }
    return 0;
}
