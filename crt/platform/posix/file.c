/*
 * tether, POSIX hosts: bounded whole-file reads and output files that are replaced atomically
 * only when that is safe (tether/file.h says what the rules are).
 *
 * Must stay true: nothing but a regular file is ever read to its end; rename() is only ever
 * aimed at an absent path or a regular file (lstat, so a symbolic link is written through, not
 * replaced); a temporary exists only between open and commit/abort.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/file.h"

static int read_regular(const char *path, size_t max_bytes, uint8_t **data, size_t *len) {
    *data = NULL;
    if (len) {
        *len = 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return tether_set_error(TETHER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tether_set_error(TETHER_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode)
                   ? tether_set_error(TETHER_ERR_INVALID_ARG, "%s is a directory", path)
                   : tether_set_error(TETHER_ERR_INVALID_ARG,
                                      "%s is not a regular file (a device or a pipe)", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return tether_set_error(TETHER_ERR_LIMIT, "%s is %lld bytes, more than the %zu allowed",
                                path, (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory reading %s (%zu bytes)",
                                path, n);
    }
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            free(buf);
            close(fd);
            return tether_set_error(TETHER_ERR_IO, "cannot read %s: %s", path,
                                    e ? strerror(e) : "the file shrank while reading");
        }
        got += (size_t)r;
    }
    uint8_t extra;
    ssize_t more;
    do {
        more = read(fd, &extra, 1);
    } while (more < 0 && errno == EINTR);
    close(fd);
    if (more != 0) {
        free(buf);
        return tether_set_error(TETHER_ERR_IO, "cannot read %s: the file grew while reading", path);
    }
    buf[n] = 0;
    *data = buf;
    if (len) {
        *len = n;
    }
    return TETHER_OK;
}

int tether_file_read(const char *path, size_t max_bytes, uint8_t **data, size_t *len) {
    if (!path || !data) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "file read: no path");
    }
    return read_regular(path, max_bytes, data, len);
}

int tether_file_read_text(const char *path, size_t max_bytes, char **text, size_t *len) {
    if (!path || !text) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "file read: no path");
    }
    uint8_t *d;
    int rc = read_regular(path, max_bytes, &d, len);
    *text = (char *)d;
    return rc;
}

int tether_file_out_open(tether_file_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    if (!path || !*path) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "output file: empty path");
    }
    if (strlen(path) >= sizeof o->path) {
        return tether_set_error(TETHER_ERR_LIMIT, "output file: path too long: %.64s...", path);
    }
    snprintf(o->path, sizeof o->path, "%s", path);
    struct stat st;
    int exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT) {
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (exists && S_ISDIR(st.st_mode)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "cannot write %s: it is a directory", path);
    }
    if (exists && !S_ISREG(st.st_mode)) {
        /* a device, a FIFO, a socket or a symbolic link: written in place, never replaced */
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0) {
            return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        }
        struct stat target;
        if (fstat(fd, &target) == 0 && S_ISDIR(target.st_mode)) {
            close(fd);
            return tether_set_error(TETHER_ERR_INVALID_ARG, "cannot write %s: it is a directory",
                                    path);
        }
        o->f = fdopen(fd, "wb");
        if (!o->f) {
            int e = errno;
            close(fd);
            return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(e));
        }
        return TETHER_OK;
    }
    /* absent or a regular file: a temporary beside it, renamed into place on commit */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.tmp-XXXXXX", dirlen, path, base);
    int fd = mkostemp(o->tmp, O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        o->tmp[0] = 0;
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    mode_t mode;
    if (exists) {
        mode = st.st_mode & 07777;
    } else {
        mode_t mask = umask(022);
        umask(mask);
        mode = 0666 & ~mask;
    }
    (void)fchmod(fd, mode);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = 0;
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    o->replace = 1;
    return TETHER_OK;
}

int tether_file_out_check(const char *path) {
    if (!path || !*path) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "output file: empty path");
    }
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "cannot write %s: it is a directory",
                                    path);
        }
        if (access(path, W_OK) != 0) {
            return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        }
        return TETHER_OK;
    }
    if (errno != ENOENT) {
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) + 2 > sizeof dir) {
        return tether_set_error(TETHER_ERR_LIMIT, "output file: path too long: %.64s...", path);
    }
    if (slash) {
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: no directory %s", path, dir);
    }
    if (access(dir, W_OK) != 0) {
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    return TETHER_OK;
}

int tether_file_out_commit(tether_file_out *o) {
    if (!o->f) {
        return tether_set_error(TETHER_ERR_STATE, "output file %s is not open", o->path);
    }
    int bad = ferror(o->f) != 0;
    int e = 0;
    if (fflush(o->f) != 0) {
        bad = 1;
        e = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && o->replace && rename(o->tmp, o->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        if (o->replace) {
            unlink(o->tmp);
        }
        o->replace = 0;
        o->tmp[0] = 0;
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", o->path,
                                e ? strerror(e) : "write error");
    }
    o->replace = 0;
    o->tmp[0] = 0;
    return TETHER_OK;
}

void tether_file_out_abort(tether_file_out *o) {
    if (o->f) {
        fclose(o->f);
    }
    o->f = NULL;
    if (o->replace && o->tmp[0]) {
        unlink(o->tmp);
    }
    o->replace = 0;
    o->tmp[0] = 0;
}

int tether_file_write(const char *path, const void *data, size_t len) {
    tether_file_out o;
    int rc = tether_file_out_open(&o, path);
    if (rc) {
        return rc;
    }
    if (len && fwrite(data, 1, len, o.f) != len) {
        int e = errno;
        tether_file_out_abort(&o);
        return tether_set_error(TETHER_ERR_IO, "cannot write %s: %s", path,
                                e ? strerror(e) : "short write");
    }
    return tether_file_out_commit(&o);
}
