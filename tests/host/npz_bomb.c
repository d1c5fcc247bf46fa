/*
 * Test helper: hand-written .npz decompression bombs (npz_bomb.h).
 */
#include "npz_bomb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#define CHUNK ((size_t)1 << 20)

/* Deflates n bytes of in (flush: Z_FULL_FLUSH or Z_FINISH) into a malloc'd buffer. */
static uint8_t *deflate_part(z_stream *zs, const uint8_t *in, size_t n, int flush, size_t *len) {
    size_t cap = n / 2 + 4096, o = 0;
    uint8_t *out = malloc(cap);
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)n;
    for (;;) {
        if (!out) {
            return NULL;
        }
        zs->next_out = out + o;
        zs->avail_out = (uInt)(cap - o);
        int rc = deflate(zs, flush);
        o = cap - zs->avail_out;
        if (rc == Z_STREAM_END || (rc == Z_OK && zs->avail_out != 0 && zs->avail_in == 0)) {
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            free(out);
            return NULL;
        }
        cap *= 2;
        out = realloc(out, cap);
    }
    *len = o;
    return out;
}

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
    put16(p, v & 0xffff);
    put16(p + 2, v >> 16);
}

uint64_t tt_write_npz_bomb(const char *path, const char *member, const char *descr, uint64_t n,
                           uint64_t zeros, uint64_t declared) {
    /* the .npy header, padded so that data starts at a multiple of 64 */
    char dict[256];
    int dl =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%llu,), }",
                 descr, (unsigned long long)n);
    size_t pad = (64 - (10 + (size_t)dl + 1) % 64) % 64, hlen = (size_t)dl + pad + 1;
    uint8_t hdr[512];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    put16(hdr + 8, (uint32_t)hlen);
    memcpy(hdr + 10, dict, (size_t)dl);
    memset(hdr + 10 + dl, ' ', pad);
    hdr[10 + hlen - 1] = '\n';
    size_t hsize = 10 + hlen;
    uint64_t real = hsize + zeros;
    if (declared == UINT64_MAX) {
        declared = real;
    }
    if (real >= ((uint64_t)1 << 32) || declared >= ((uint64_t)1 << 32)) {
        fprintf(stderr, "npz bomb: %llu bytes need ZIP64\n", (unsigned long long)real);
        return 0;
    }
    uint8_t *zero = calloc(1, CHUNK);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (!zero || deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(zero);
        return 0;
    }
    /* header | chunk | chunk (must equal the first: the repeated part) | the rest, finished */
    size_t la = 0, lb = 0, lb2 = 0, lc = 0;
    uint64_t k = zeros / CHUNK;
    size_t rem = (size_t)(zeros % CHUNK);
    uint8_t *a = deflate_part(&zs, hdr, hsize, Z_FULL_FLUSH, &la);
    uint8_t *b = k ? deflate_part(&zs, zero, CHUNK, Z_FULL_FLUSH, &lb) : NULL;
    uint8_t *b2 = k > 1 ? deflate_part(&zs, zero, CHUNK, Z_FULL_FLUSH, &lb2) : NULL;
    uint8_t *c = deflate_part(&zs, zero, rem, Z_FINISH, &lc);
    deflateEnd(&zs);
    uint64_t result = 0;
    FILE *f = NULL;
    if (!a || (k && !b) || (k > 1 && (!b2 || lb2 != lb || memcmp(b, b2, lb))) || !c) {
        fprintf(stderr, "npz bomb: deflate did not repeat itself\n");
        goto out;
    }
    /* the CRC of header + zeros without touching them all */
    uLong crc = crc32(0, hdr, (uInt)hsize), czero = crc32(0, zero, (uInt)CHUNK);
    for (uint64_t i = 0; i < k; i++) {
        crc = crc32_combine(crc, czero, (z_off_t)CHUNK);
    }
    crc = crc32_combine(crc, crc32(0, zero, (uInt)rem), (z_off_t)rem);
    uint64_t comp = la + k * lb + lc;
    size_t nl = strlen(member);
    uint8_t lh[30], ch[46], eocd[22];
    memset(lh, 0, sizeof lh);
    put32(lh, 0x04034b50);
    put16(lh + 4, 20);
    put16(lh + 8, 8); /* deflated */
    put16(lh + 12, 0x21);
    put32(lh + 14, (uint32_t)crc);
    put32(lh + 18, (uint32_t)comp);
    put32(lh + 22, (uint32_t)declared);
    put16(lh + 26, (uint32_t)nl);
    memset(ch, 0, sizeof ch);
    put32(ch, 0x02014b50);
    put16(ch + 4, 20);
    put16(ch + 6, 20);
    put16(ch + 10, 8);
    put16(ch + 14, 0x21);
    put32(ch + 16, (uint32_t)crc);
    put32(ch + 20, (uint32_t)comp);
    put32(ch + 24, (uint32_t)declared);
    put16(ch + 28, (uint32_t)nl);
    uint64_t cd_at = sizeof lh + nl + comp, cd_len = sizeof ch + nl;
    memset(eocd, 0, sizeof eocd);
    put32(eocd, 0x06054b50);
    put16(eocd + 8, 1);
    put16(eocd + 10, 1);
    put32(eocd + 12, (uint32_t)cd_len);
    put32(eocd + 16, (uint32_t)cd_at);
    f = fopen(path, "wb");
    int ok = f && fwrite(lh, 1, sizeof lh, f) == sizeof lh && fwrite(member, 1, nl, f) == nl &&
             fwrite(a, 1, la, f) == la;
    for (uint64_t i = 0; ok && i < k; i++) {
        ok = fwrite(b, 1, lb, f) == lb;
    }
    ok = ok && fwrite(c, 1, lc, f) == lc && fwrite(ch, 1, sizeof ch, f) == sizeof ch &&
         fwrite(member, 1, nl, f) == nl && fwrite(eocd, 1, sizeof eocd, f) == sizeof eocd;
    if (f && fclose(f) == 0 && ok) {
        result = cd_at + cd_len + sizeof eocd;
    } else {
        fprintf(stderr, "npz bomb: cannot write %s\n", path);
    }
out:
    free(a);
    free(b);
    free(b2);
    free(c);
    free(zero);
    return result;
}
