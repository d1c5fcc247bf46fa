/*
 * Whole-file reads for the host library and the CLI (uploads, .npy inputs, params blobs,
 * metadata). Only regular files are read: a device node or a FIFO (/dev/zero, a pipe) could
 * grow without end, so it is refused with a message instead. The size is taken once from
 * fstat and exactly that many bytes are read; a file that changes size meanwhile is an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tether/crt.h"
#include "tether/host.h"

int tether_file_read(const char *path, size_t max_bytes, uint8_t **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tether_set_error(TETHER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return S_ISDIR(st.st_mode)
                   ? tether_set_error(TETHER_ERR_INVALID_ARG, "%s is a directory", path)
                   : tether_set_error(TETHER_ERR_INVALID_ARG, "%s is not a regular file%s%s", path,
                                      e ? ": " : "", e ? strerror(e) : "");
    }
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return tether_set_error(TETHER_ERR_LIMIT, "%s is %lld bytes, more than the %zu allowed",
                                path, (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory reading %s (%zu bytes)",
                                path, n);
    }
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
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
    ssize_t more = read(fd, &extra, 1);
    close(fd);
    if (more != 0) {
        free(buf);
        return tether_set_error(TETHER_ERR_IO, "cannot read %s: the file grew while reading", path);
    }
    *data = buf;
    *len = n;
    return TETHER_OK;
}
