/*
 * tether host: .npz archives (numpy.savez / savez_compressed), read and written with libzip.
 *
 * What must stay true: an archive is read whole through tether_file_read (regular files only, at
 * most TETHER_NPY_MAX_FILE bytes) and opened from memory, so a device node or a FIFO is never
 * read without end; every member must be a .npy file whose header parses as tether_npy_parse
 * wants it. A member is inflated in two steps: its .npy header alone (at most
 * TETHER_NPZ_MAX_HEADER bytes), then, only once the array's size is known from that header and
 * accepted (at most TETHER_NPZ_MAX_MEMBER, equal to the archive's declared size, and what the
 * caller expects), the data into memory of exactly that size: the archive's declared sizes
 * never size an allocation, and a decompression bomb is refused having inflated a few hundred
 * bytes. An archive is written in memory and handed to tether_file_write, so a failed write
 * leaves no partial file.
 */
#include "tether/npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "tether/crt.h"
#include "tether/host.h"

int tether__npy_header(const char *what, DLDataType dtype, const int64_t *shape, int ndim,
                       uint8_t *hdr, size_t *hlen, size_t *nbytes);
int tether__npy_parse_header(const void *buf, size_t len, const char *what, tether_npy *out,
                             size_t *hdr, size_t *nbytes);
int tether__npy_check_bool(const char *what, DLDataType dtype, const void *data, size_t nbytes);
#define TETHER_NPY_HEADER_MAX 640

typedef struct npz_in {
    uint8_t *buf;
    zip_t *za;
} npz_in;

static void npz_close(npz_in *z) {
    if (z->za) {
        zip_discard(z->za);
    }
    free(z->buf);
    memset(z, 0, sizeof *z);
}

static int npz_open(const char *path, npz_in *z) {
    memset(z, 0, sizeof *z);
    size_t len;
    int rc = tether_file_read(path, TETHER_NPY_MAX_FILE, &z->buf, &len);
    if (rc) {
        return rc;
    }
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(z->buf, len, 0, &ze);
    if (src) {
        z->za = zip_open_from_source(src, ZIP_RDONLY, &ze);
        if (!z->za) {
            zip_source_free(src);
        }
    }
    if (!z->za) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: not an .npz archive (%s)", path,
                              zip_error_strerror(&ze));
        zip_error_fini(&ze);
        npz_close(z);
        return rc;
    }
    zip_error_fini(&ze);
    return 0;
}

/* The array name of member i ("x" of "x.npy") into name; an error naming the member when it is
 * not a .npy file or the name is too long. */
static int member_name(const char *path, zip_t *za, zip_uint64_t i, char *name) {
    const char *m = zip_get_name(za, i, ZIP_FL_ENC_GUESS);
    if (!m) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: member %llu has no name", path,
                                (unsigned long long)i);
    }
    size_t ml = strlen(m);
    if (ml <= 4 || strcmp(m + ml - 4, ".npy") != 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: member '%s' is not a .npy array (an .npz holds only .npy "
                                "members, as numpy.savez writes them)",
                                path, m);
    }
    if (ml - 4 >= TETHER_NPZ_NAME_MAX) {
        return tether_set_error(TETHER_ERR_LIMIT, "%s: member name '%s' is longer than %d bytes",
                                path, m, TETHER_NPZ_NAME_MAX - 1);
    }
    memcpy(name, m, ml - 4);
    name[ml - 4] = 0;
    return 0;
}

int tether_npz_list(const char *path, char (*names)[TETHER_NPZ_NAME_MAX], int max, int *n) {
    *n = 0;
    npz_in z;
    int rc = npz_open(path, &z);
    if (rc) {
        return rc;
    }
    zip_int64_t count = zip_get_num_entries(z.za, 0);
    if (count > max) {
        rc = tether_set_error(TETHER_ERR_LIMIT, "%s: %lld arrays, at most %d", path,
                              (long long)count, max);
        goto out;
    }
    for (zip_int64_t i = 0; i < count; i++) {
        if ((rc = member_name(path, z.za, (zip_uint64_t)i, names[i]))) {
            goto out;
        }
        for (zip_int64_t j = 0; j < i; j++) {
            if (!strcmp(names[j], names[i])) {
                rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: array '%s' appears twice", path,
                                      names[i]);
                goto out;
            }
        }
    }
    if (count == 0) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: the archive holds no arrays", path);
    } else {
        *n = (int)count;
    }
out:
    npz_close(&z);
    return rc;
}

/* Reads up to n bytes of member f into buf (zip_fread may return less than asked for before
 * the end); the count read, or -1 (error in the file's state). */
static zip_int64_t read_full(zip_file_t *f, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        zip_int64_t r = zip_fread(f, buf + got, n - got);
        if (r < 0) {
            return -1;
        }
        if (r == 0) {
            break;
        }
        got += (size_t)r;
    }
    return (zip_int64_t)got;
}

/* "float32 [2, 3]" */
static void describe(const tether_npy *h, char *buf, size_t n) {
    char dt[TETHER_DTYPE_NAME_MAX];
    tether_dtype_name(h->dtype, dt, sizeof dt);
    size_t o = (size_t)snprintf(buf, n, "%s [", dt);
    for (int i = 0; i < h->ndim && o + 24 < n; i++) {
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)h->shape[i]);
    }
    snprintf(buf + o, n - o, "]");
}

int tether_npz_read_member(const char *path, const char *name, tether_npy *out) {
    return tether_npz_read_member_expect(path, name, NULL, out);
}

int tether_npz_read_member_expect(const char *path, const char *name,
                                  const tether_npy_expect *expect, tether_npy *out) {
    memset(out, 0, sizeof *out);
    npz_in z;
    int rc = npz_open(path, &z);
    if (rc) {
        return rc;
    }
    char what[1200];
    snprintf(what, sizeof what, "%s:%s", path, name);
    zip_int64_t count = zip_get_num_entries(z.za, 0), found = -1;
    char have[512] = "";
    size_t hl = 0;
    zip_file_t *f = NULL;
    uint8_t *hbuf = NULL, *data = NULL;
    for (zip_int64_t i = 0; i < count && found < 0; i++) {
        char m[TETHER_NPZ_NAME_MAX];
        if ((rc = member_name(path, z.za, (zip_uint64_t)i, m))) {
            goto out;
        }
        if (!strcmp(m, name)) {
            found = i;
        } else if (hl + strlen(m) + 3 < sizeof have) {
            hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s%s", hl ? ", " : "", m);
        }
    }
    if (found < 0) {
        rc = tether_set_error(TETHER_ERR_NOT_FOUND, "%s: no array '%s' (it has: %s)", path, name,
                              hl ? have : "nothing");
        goto out;
    }
    zip_stat_t st;
    if (zip_stat_index(z.za, (zip_uint64_t)found, 0, &st) || !(st.valid & ZIP_STAT_SIZE)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %s", what, zip_strerror(z.za));
        goto out;
    }
    f = zip_fopen_index(z.za, (zip_uint64_t)found, 0);
    if (!f) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: cannot read the member (%s)", what,
                              zip_strerror(z.za));
        goto out;
    }
    /* the .npy header first: magic, version, header length (12 bytes at most), then the header;
     * nothing past it is inflated until the array's size is known and accepted */
    hbuf = malloc(12 + TETHER_NPZ_MAX_HEADER);
    if (!hbuf) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        goto out;
    }
    zip_int64_t got = read_full(f, hbuf, 10);
    size_t hlen = 0, hoff = 10;
    if (got == 10 && (hbuf[6] == 2 || hbuf[6] == 3)) {
        got = read_full(f, hbuf + 10, 2) == 2 ? 12 : -1;
        hoff = 12;
    }
    if (got < 0) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: cannot read the member (%s)", what,
                              zip_file_strerror(f));
        goto out;
    }
    if ((size_t)got == hoff) {
        hlen = (size_t)hbuf[8] | ((size_t)hbuf[9] << 8);
        if (hoff == 12) {
            hlen |= ((size_t)hbuf[10] << 16) | ((size_t)hbuf[11] << 24);
        }
        if (!memcmp(hbuf, "\x93NUMPY", 6) && hlen > TETHER_NPZ_MAX_HEADER) {
            rc = tether_set_error(TETHER_ERR_LIMIT, "%s: .npy header of %zu bytes (at most %zu)",
                                  what, hlen, TETHER_NPZ_MAX_HEADER);
            goto out;
        }
        zip_int64_t more = memcmp(hbuf, "\x93NUMPY", 6) ? 0 : read_full(f, hbuf + hoff, hlen);
        if (more < 0) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: cannot read the member (%s)", what,
                                  zip_file_strerror(f));
            goto out;
        }
        got += more;
    }
    tether_npy h;
    size_t hdr, nbytes;
    if ((rc = tether__npy_parse_header(hbuf, (size_t)got, what, &h, &hdr, &nbytes))) {
        goto out;
    }
    if (expect && (rc = tether_npy_check(&h, what, expect->what, expect->name,
                                         expect->dtype.lanes ? expect->dtype : h.dtype,
                                         expect->ndim < 0 ? h.ndim : expect->ndim,
                                         expect->ndim < 0 ? h.shape : expect->shape))) {
        goto out;
    }
    char desc[200];
    describe(&h, desc, sizeof desc);
    if (nbytes > TETHER_NPZ_MAX_MEMBER) {
        rc = tether_set_error(TETHER_ERR_LIMIT,
                              "%s: the array (%s) is %zu bytes; an .npz member may hold at most "
                              "%zu (1 GiB), refused before inflating it",
                              what, desc, nbytes, TETHER_NPZ_MAX_MEMBER);
        goto out;
    }
    if (st.size != (zip_uint64_t)(hdr + nbytes)) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "%s: the archive says the member inflates to %llu bytes, but its "
                              ".npy header (%s) makes it %zu: a damaged or forged archive",
                              what, (unsigned long long)st.size, desc, hdr + nbytes);
        goto out;
    }
    /* the array's bytes, sized by the accepted header; reading one byte more checks the member
     * ends there (and its CRC, which libzip checks at the end) */
    data = malloc(nbytes ? nbytes : 1);
    if (!data) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        goto out;
    }
    got = read_full(f, data, nbytes);
    uint8_t extra;
    zip_int64_t tail = got == (zip_int64_t)nbytes ? zip_fread(f, &extra, 1) : -1;
    if (got != (zip_int64_t)nbytes || tail != 0) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: cannot read the member (%s)", what,
                              got < 0 || tail < 0 ? zip_file_strerror(f)
                              : tail > 0          ? "data past the end its header gives"
                                                  : "it ends before its header's data size");
        goto out;
    }
    if ((rc = tether__npy_check_bool(what, h.dtype, data, nbytes))) {
        goto out;
    }
    *out = h;
    out->data = data;
    out->nbytes = nbytes;
    data = NULL;
out:
    if (f) {
        zip_fclose(f);
    }
    free(hbuf);
    free(data);
    npz_close(&z);
    return rc;
}

int tether_npz_write(const char *path, int n, const char *const *names, const tether_npy *arrays) {
    if (n < 1 || n > TETHER_NPZ_MAX_ARRAYS) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: 1 to %d arrays, not %d", path,
                                TETHER_NPZ_MAX_ARRAYS, n);
    }
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strlen(names[i]) >= TETHER_NPZ_NAME_MAX) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: array name '%s' must be 1 to %d bytes", path,
                                    names[i] ? names[i] : "", TETHER_NPZ_NAME_MAX - 1);
        }
        for (int j = 0; j < i; j++) {
            if (!strcmp(names[i], names[j])) {
                return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: array '%s' given twice", path,
                                        names[i]);
            }
        }
    }
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *mem = zip_source_buffer_create(NULL, 0, 0, &ze);
    zip_t *za = mem ? zip_open_from_source(mem, ZIP_TRUNCATE, &ze) : NULL;
    int rc = 0;
    uint8_t *images[TETHER_NPZ_MAX_ARRAYS] = {0};
    if (!za) {
        rc = tether_set_error(TETHER_ERR_IO, "%s: %s", path, zip_error_strerror(&ze));
        if (mem) {
            zip_source_free(mem);
        }
        zip_error_fini(&ze);
        return rc;
    }
    zip_source_keep(mem); /* the archive's bytes stay readable after zip_close */
    for (int i = 0; i < n && !rc; i++) {
        char what[1200], member[TETHER_NPZ_NAME_MAX + 4];
        snprintf(what, sizeof what, "%s:%s", path, names[i]);
        snprintf(member, sizeof member, "%s.npy", names[i]);
        uint8_t hdr[TETHER_NPY_HEADER_MAX];
        size_t hlen, nbytes;
        const tether_npy *a = &arrays[i];
        if ((rc = tether__npy_header(what, a->dtype, a->shape, a->ndim, hdr, &hlen, &nbytes))) {
            break;
        }
        if (nbytes != a->nbytes) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: %zu bytes for a shape of %zu", what,
                                  a->nbytes, nbytes);
            break;
        }
        images[i] = malloc(hlen + nbytes);
        if (!images[i]) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
            break;
        }
        memcpy(images[i], hdr, hlen);
        if (nbytes) {
            memcpy(images[i] + hlen, a->data, nbytes);
        }
        zip_source_t *s = zip_source_buffer(za, images[i], hlen + nbytes, 0);
        zip_int64_t idx = s ? zip_file_add(za, member, s, ZIP_FL_ENC_UTF_8) : -1;
        if (idx < 0) {
            if (s) {
                zip_source_free(s);
            }
            rc = tether_set_error(TETHER_ERR_IO, "%s: %s", what, zip_strerror(za));
            break;
        }
        zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0);
    }
    if (rc) {
        zip_discard(za);
    } else if (zip_close(za) < 0) {
        rc = tether_set_error(TETHER_ERR_IO, "%s: %s", path, zip_strerror(za));
        zip_discard(za);
    } else { /* the archive is now the contents of mem */
        zip_stat_t st;
        uint8_t *bytes = NULL;
        if (zip_source_stat(mem, &st) == 0 && zip_source_open(mem) == 0) {
            bytes = malloc(st.size ? (size_t)st.size : 1);
            if (bytes && zip_source_read(mem, bytes, st.size) == (zip_int64_t)st.size) {
                rc = tether_file_write(path, bytes, (size_t)st.size);
            } else {
                rc = tether_set_error(TETHER_ERR_IO, "%s: cannot assemble the archive", path);
            }
            zip_source_close(mem);
        } else {
            rc = tether_set_error(TETHER_ERR_IO, "%s: cannot assemble the archive", path);
        }
        free(bytes);
    }
    zip_source_free(mem);
    zip_error_fini(&ze);
    for (int i = 0; i < n; i++) {
        free(images[i]);
    }
    return rc;
}
