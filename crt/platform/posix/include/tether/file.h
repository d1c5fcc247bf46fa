/*
 * tether, POSIX hosts: the one place that reads whole files and writes output files, shared by
 * the compiler, the planner, the ONNX importer, the host library, the CLI and tetherd.
 *
 * Reads: only regular files are read (a device node or a FIFO such as /dev/zero could grow
 * without end), at most max_bytes; the size is taken once from fstat and a file that changes
 * size meanwhile is an error. The buffer is malloc'ed with one NUL byte after the end (text can
 * be parsed in place; *len does not count it); the caller frees it.
 *
 * Writes: an output path that is absent or a regular file is replaced atomically (a temporary in
 * the same directory, renamed into place on commit, so a reader never sees half a file and a
 * failed write leaves the old file as it was). Anything else that is not a directory (a device
 * such as /dev/null, a FIFO, a symbolic link) is opened and written in place, never replaced: the
 * node or link stays what it was. A replaced file keeps its permission bits; a new one gets
 * 0666 less the umask. tether_file_out_abort (or a failed commit) removes the temporary.
 */
#ifndef TETHER_FILE_H
#define TETHER_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the whole regular file at path into *data (see above). Errors: TETHER_ERR_IO (cannot
 * open or read), TETHER_ERR_INVALID_ARG (a directory, a device, a FIFO), TETHER_ERR_LIMIT (more
 * than max_bytes), TETHER_ERR_OUT_OF_MEMORY; the message names the path. */
int tether_file_read(const char *path, size_t max_bytes, uint8_t **data, size_t *len);

/* The same for text: *text is NUL-terminated. */
int tether_file_read_text(const char *path, size_t max_bytes, char **text, size_t *len);

/* An output file being written. f is the stream to write to between open and commit/abort. */
typedef struct tether_file_out {
    FILE *f;
    int replace; /* 1: f is a temporary that commit renames over path */
    char path[4096];
    char tmp[4096 + 32];
} tether_file_out;

/* Opens path for writing as described above. A directory, a missing parent directory or a path
 * too long is an error naming the path; nothing is created then. */
int tether_file_out_open(tether_file_out *o, const char *path);
/* Flushes and closes; renames the temporary into place. On any write error (disk full, ...) the
 * temporary is removed, the old file is left as it was and the error names the path. */
int tether_file_out_commit(tether_file_out *o);
/* Closes and removes the temporary; the old file is left as it was. Safe after a failed open or
 * after commit (does nothing then). */
void tether_file_out_abort(tether_file_out *o);

/* Checks, creating and changing nothing, that tether_file_out_open(path) would succeed: the path
 * is not a directory; an existing non-directory is writable; an absent one's directory exists
 * and is writable. For commands that find out about a bad output path before long work. */
int tether_file_out_check(const char *path);

/* open + fwrite + commit in one. */
int tether_file_write(const char *path, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_FILE_H */
