/*
 * tether host: .npz archives (numpy.savez / savez_compressed), read and written with libzip.
 *
 * What must stay true: an archive is read whole through tether_file_read (regular files only, at
 * most TETHER_NPY_MAX_FILE bytes) and opened from memory, so a device node or a FIFO is never
 * read without end; every member must be a .npy file that tether_npy_parse accepts, and its
 * uncompressed size is bounded before anything is allocated for it. An archive is written in
 * memory and handed to tether_file_write, so a failed write leaves no partial file.
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
#define TETHER_NPY_HEADER_MAX 640

typedef struct npz_in {
    uint8_t *buf;
    zip_t *za;
} npz_in;

static void npz_close(npz_in *z) {
    if (z->za)
        zip_discard(z->za);
    free(z->buf);
    memset(z, 0, sizeof *z);
}

static int npz_open(const char *path, npz_in *z) {
    memset(z, 0, sizeof *z);
    size_t len;
    int rc = tether_file_read(path, TETHER_NPY_MAX_FILE, &z->buf, &len);
    if (rc)
        return rc;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(z->buf, len, 0, &ze);
    if (src) {
        z->za = zip_open_from_source(src, ZIP_RDONLY, &ze);
        if (!z->za)
            zip_source_free(src);
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
    if (!m)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: member %llu has no name", path,
                                (unsigned long long)i);
    size_t ml = strlen(m);
    if (ml <= 4 || strcmp(m + ml - 4, ".npy") != 0)
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: member '%s' is not a .npy array (an .npz holds only .npy "
                                "members, as numpy.savez writes them)",
                                path, m);
    if (ml - 4 >= TETHER_NPZ_NAME_MAX)
        return tether_set_error(TETHER_ERR_LIMIT, "%s: member name '%s' is longer than %d bytes",
                                path, m, TETHER_NPZ_NAME_MAX - 1);
    memcpy(name, m, ml - 4);
    name[ml - 4] = 0;
    return 0;
}

int tether_npz_list(const char *path, char (*names)[TETHER_NPZ_NAME_MAX], int max, int *n) {
    *n = 0;
    npz_in z;
    int rc = npz_open(path, &z);
    if (rc)
        return rc;
    zip_int64_t count = zip_get_num_entries(z.za, 0);
    if (count > max) {
        rc = tether_set_error(TETHER_ERR_LIMIT, "%s: %lld arrays, at most %d", path,
                              (long long)count, max);
        goto out;
    }
    for (zip_int64_t i = 0; i < count; i++) {
        if ((rc = member_name(path, z.za, (zip_uint64_t)i, names[i])))
            goto out;
        for (zip_int64_t j = 0; j < i; j++)
            if (!strcmp(names[j], names[i])) {
                rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: array '%s' appears twice", path,
                                      names[i]);
                goto out;
            }
    }
    if (count == 0)
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: the archive holds no arrays", path);
    else
        *n = (int)count;
out:
    npz_close(&z);
    return rc;
}

int tether_npz_read_member(const char *path, const char *name, tether_npy *out) {
    memset(out, 0, sizeof *out);
    npz_in z;
    int rc = npz_open(path, &z);
    if (rc)
        return rc;
    char what[1200];
    snprintf(what, sizeof what, "%s:%s", path, name);
    zip_int64_t count = zip_get_num_entries(z.za, 0), found = -1;
    char have[512] = "";
    size_t hl = 0;
    for (zip_int64_t i = 0; i < count && found < 0; i++) {
        char m[TETHER_NPZ_NAME_MAX];
        if ((rc = member_name(path, z.za, (zip_uint64_t)i, m)))
            goto out;
        if (!strcmp(m, name))
            found = i;
        else if (hl + strlen(m) + 3 < sizeof have)
            hl += (size_t)snprintf(have + hl, sizeof have - hl, "%s%s", hl ? ", " : "", m);
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
    if (st.size > TETHER_NPY_MAX_FILE) {
        rc = tether_set_error(TETHER_ERR_LIMIT, "%s: %llu bytes, at most %zu", what,
                              (unsigned long long)st.size, TETHER_NPY_MAX_FILE);
        goto out;
    }
    uint8_t *buf = malloc(st.size ? (size_t)st.size : 1);
    if (!buf) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
        goto out;
    }
    zip_file_t *f = zip_fopen_index(z.za, (zip_uint64_t)found, 0);
    zip_int64_t got = f ? zip_fread(f, buf, st.size) : -1;
    /* reading one byte more checks the member ends where its header says (and its CRC) */
    uint8_t extra;
    zip_int64_t more = got == (zip_int64_t)st.size ? zip_fread(f, &extra, 1) : -1;
    if (!f || got != (zip_int64_t)st.size || more != 0) {
        rc = tether_set_error(TETHER_ERR_INVALID_ARG, "%s: cannot read the member (%s)", what,
                              f ? zip_file_strerror(f) : zip_strerror(z.za));
        if (f)
            zip_fclose(f);
        free(buf);
        goto out;
    }
    zip_fclose(f);
    rc = tether_npy_parse(buf, (size_t)st.size, what, out);
    free(buf);
out:
    npz_close(&z);
    return rc;
}

int tether_npz_write(const char *path, int n, const char *const *names, const tether_npy *arrays) {
    if (n < 1 || n > TETHER_NPZ_MAX_ARRAYS)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: 1 to %d arrays, not %d", path,
                                TETHER_NPZ_MAX_ARRAYS, n);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strlen(names[i]) >= TETHER_NPZ_NAME_MAX)
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: array name '%s' must be 1 to %d bytes", path,
                                    names[i] ? names[i] : "", TETHER_NPZ_NAME_MAX - 1);
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: array '%s' given twice", path,
                                        names[i]);
    }
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *mem = zip_source_buffer_create(NULL, 0, 0, &ze);
    zip_t *za = mem ? zip_open_from_source(mem, ZIP_TRUNCATE, &ze) : NULL;
    int rc = 0;
    uint8_t *images[TETHER_NPZ_MAX_ARRAYS] = {0};
    if (!za) {
        rc = tether_set_error(TETHER_ERR_IO, "%s: %s", path, zip_error_strerror(&ze));
        if (mem)
            zip_source_free(mem);
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
        if ((rc = tether__npy_header(what, a->dtype, a->shape, a->ndim, hdr, &hlen, &nbytes)))
            break;
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
        if (nbytes)
            memcpy(images[i] + hlen, a->data, nbytes);
        zip_source_t *s = zip_source_buffer(za, images[i], hlen + nbytes, 0);
        zip_int64_t idx = s ? zip_file_add(za, member, s, ZIP_FL_ENC_UTF_8) : -1;
        if (idx < 0) {
            if (s)
                zip_source_free(s);
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
            if (bytes && zip_source_read(mem, bytes, st.size) == (zip_int64_t)st.size)
                rc = tether_file_write(path, bytes, (size_t)st.size);
            else
                rc = tether_set_error(TETHER_ERR_IO, "%s: cannot assemble the archive", path);
            zip_source_close(mem);
        } else {
            rc = tether_set_error(TETHER_ERR_IO, "%s: cannot assemble the archive", path);
        }
        free(bytes);
    }
    zip_source_free(mem);
    zip_error_fini(&ze);
    for (int i = 0; i < n; i++)
        free(images[i]);
    return rc;
}
