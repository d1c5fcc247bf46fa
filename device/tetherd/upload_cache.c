/*
 * tetherd: the upload cache. Uploaded modules are kept by their SHA-256 in a directory shared by
 * every session of every tetherd of the user (default $XDG_CACHE_HOME/tether/uploads), so a host
 * that uploads the same library again (a repeated `tether run`, an A/B rotation, a new local:
 * tetherd) gets UPLOAD's `cached` reply and sends no chunks (docs/rpc.md, docs/tetherd.md).
 *
 * What must stay true: an entry is only ever used after its content hashed to its name again,
 * so a damaged or tampered file is dropped and the upload goes over the wire as usual; entries
 * appear atomically (written under a fresh mkstemp temporary, renamed); the cache never holds
 * more than its limit after a store (oldest-used entries go first); every failure of the cache
 * only means a miss, never a failed upload. Whatever lies under an entry's name and is not a
 * good entry (missing, a file of the wrong size or bytes, a link, a FIFO, a special file, a
 * directory) is replaced by the next complete, verified upload of those bytes, so a bad entry
 * is a miss once, not forever: nothing under the name is ever followed, opened for blocking I/O
 * or written through (lstat, O_NOFOLLOW | O_NONBLOCK, rename() over the name replaces a link or
 * a FIFO itself); a directory there is only touched when it is this user's own, removed when
 * empty, else renamed aside to .replaced-XXXXXX (its content kept), and the log says what was
 * replaced; no temporary outlives a store.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "tether/rpc/sha256.h"

static void hex_name(const uint8_t hash[32], char out[65]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[hash[i] >> 4];
        out[2 * i + 1] = digits[hash[i] & 15];
    }
    out[64] = 0;
}

static int is_entry_name(const char *n) {
    if (strlen(n) != 64) {
        return 0;
    }
    for (int i = 0; i < 64; i++) {
        if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Copies in -> out (when out >= 0) while hashing: 0 when exactly `size` bytes hash to `hash`,
 * 1 when the bytes were all read but are others (a damaged entry), -1 on a read or write error
 * (nothing known about the entry). */
static int copy_verified(int in, int out, uint64_t size, const uint8_t hash[32]) {
    tether_sha256_ctx c;
    tether_sha256_init(&c);
    static uint8_t buf[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        total += (uint64_t)n;
        if (total > size) {
            return 1;
        }
        tether_sha256_update(&c, buf, (size_t)n);
        if (out >= 0 && write_all(out, buf, (size_t)n)) {
            return -1;
        }
    }
    uint8_t h[32];
    tether_sha256_final(&c, h);
    return total == size && memcmp(h, hash, 32) == 0 ? 0 : 1;
}

int tetherd_cache_fetch(const tetherd_config *cfg, const uint8_t hash[32], uint64_t size, int fd) {
    if (!cfg->cache_dir) {
        return 0;
    }
    char name[65], path[1200];
    hex_name(hash, name);
    snprintf(path, sizeof path, "%s/%s", cfg->cache_dir, name);
    /* O_NONBLOCK: a FIFO planted under the name must not block the open; O_NOFOLLOW: nor may a
     * link lead elsewhere */
    int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (in < 0) {
        return 0;
    }
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size ||
        fcntl(in, F_SETFL, 0) != 0) {
        close(in); /* not an entry for this upload (the host's size differs): a miss */
        return 0;
    }
    int rc = copy_verified(in, fd, size, hash);
    if (rc == 0) {
        futimens(in, NULL); /* used now: evicted last */
    }
    close(in);
    if (rc == 0) {
        return 1;
    }
    struct stat now;
    if (rc == 1 && stat(path, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
        /* still the file that was read, and its bytes are not its name's: drop it */
        tetherd_log(cfg, 0, NULL, "upload cache: %s does not match its hash; removed", name);
        unlink(path);
    }
    if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
        return -1;
    }
    return 0;
}

typedef struct entry {
    char name[65];
    uint64_t size;
    struct timespec used;
} entry;

static int older(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) {
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    }
    return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Removes the oldest-used entries until the cache holds at most cfg->cache_max bytes, never
 * `keep` (the entry just stored), and temporaries an interrupted store left over an hour ago. */
static void evict(const tetherd_config *cfg, const char *keep) {
    DIR *d = opendir(cfg->cache_dir);
    if (!d) {
        return;
    }
    entry *e = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *de;
    time_t now = time(NULL);
    while ((de = readdir(d))) {
        char path[1200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", cfg->cache_dir, de->d_name);
        if (!strncmp(de->d_name, ".tmp-", 5) && lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            now - st.st_mtime > 3600) {
            unlink(path);
            continue;
        }
        if (!is_entry_name(de->d_name) || !strcmp(de->d_name, keep)) {
            continue;
        }
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            entry *ne = realloc(e, nc * sizeof *e);
            if (!ne) {
                break;
            }
            e = ne;
            cap = nc;
        }
        memcpy(e[n].name, de->d_name, 65);
        e[n].size = (uint64_t)st.st_size;
        e[n].used = st.st_mtim;
        total += e[n].size;
        n++;
    }
    closedir(d);
    struct stat kst;
    char kpath[1200];
    snprintf(kpath, sizeof kpath, "%s/%s", cfg->cache_dir, keep);
    if (lstat(kpath, &kst) == 0) {
        total += (uint64_t)kst.st_size;
    }
    if (total > cfg->cache_max && n) {
        qsort(e, n, sizeof *e, older);
        for (size_t i = 0; i < n && total > cfg->cache_max; i++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", cfg->cache_dir, e[i].name);
            if (unlink(path) == 0) {
                total -= e[i].size;
                tetherd_log(cfg, 1, NULL, "upload cache: evicted %.12s... (%llu bytes)", e[i].name,
                            (unsigned long long)e[i].size);
            }
        }
    }
    free(e);
}

/* What lies under an entry's name (by lstat, never through a link, a FIFO never opened):
 * ENTRY_NONE (nothing, or lstat cannot tell), ENTRY_GOOD (a regular file of `size` bytes that
 * hashes to the name), or ENTRY_BAD with `what` saying what it is. */
enum { ENTRY_NONE, ENTRY_GOOD, ENTRY_BAD };

static int inspect_entry(const char *path, uint64_t size, const uint8_t hash[32], struct stat *st,
                         const char **what) {
    if (lstat(path, st) != 0) {
        return ENTRY_NONE;
    }
    *what = S_ISLNK(st->st_mode)            ? "a symbolic link"
            : S_ISFIFO(st->st_mode)         ? "a FIFO"
            : S_ISDIR(st->st_mode)          ? "a directory"
            : !S_ISREG(st->st_mode)         ? "a special file"
            : (uint64_t)st->st_size != size ? "a file of the wrong size"
                                            : NULL;
    if (*what) {
        return ENTRY_BAD;
    }
    int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat now;
    int rc = -1;
    if (in >= 0 && fstat(in, &now) == 0 && now.st_ino == st->st_ino && now.st_dev == st->st_dev &&
        S_ISREG(now.st_mode)) {
        rc = copy_verified(in, -1, size, hash);
    }
    if (in >= 0) {
        close(in);
    }
    if (rc == 0) {
        return ENTRY_GOOD;
    }
    *what = rc == 1 ? "a file whose bytes do not match its name" : "a file that cannot be read";
    return ENTRY_BAD;
}

/* Frees an entry's name held by the directory `st` describes, so that rename() can put the entry
 * there: only a real directory (lstat) of this user; removed when empty, else renamed aside to a
 * fresh .replaced-XXXXXX in the cache directory (its content is the user's: kept, not deleted).
 * `done` says which. 0 when the name is free. */
static int clear_directory(const tetherd_config *cfg, const char *path, const char *name,
                           const struct stat *st, char *done, size_t done_size) {
    if (st->st_uid != geteuid()) {
        tetherd_log(cfg, 0, NULL,
                    "upload cache: %s is a directory of another user; left there (a miss)", name);
        return -1;
    }
    /* AT_REMOVEDIR removes only an empty directory, and never follows a link put there since */
    if (unlinkat(AT_FDCWD, path, AT_REMOVEDIR) == 0) {
        snprintf(done, done_size, "an empty directory (removed)");
        return 0;
    }
    if (errno != ENOTEMPTY && errno != EEXIST) {
        return -1;
    }
    char aside[1200];
    snprintf(aside, sizeof aside, "%s/.replaced-XXXXXX", cfg->cache_dir);
    if (!mkdtemp(aside)) {
        return -1;
    }
    /* a directory renamed over our empty one; a link or file put under the name since fails */
    if (rename(path, aside) != 0) {
        rmdir(aside);
        return -1;
    }
    snprintf(done, done_size, "a directory (moved aside to %s)", strrchr(aside, '/') + 1);
    return 0;
}

void tetherd_cache_store(const tetherd_config *cfg, const uint8_t hash[32], const char *src,
                         uint64_t size) {
    if (!cfg->cache_dir || size > cfg->cache_max) {
        return;
    }
    char name[65], path[1200], tmp[1200];
    hex_name(hash, name);
    snprintf(path, sizeof path, "%s/%s", cfg->cache_dir, name);
    struct stat st;
    const char *what = NULL;
    int state = inspect_entry(path, size, hash, &st, &what);
    if (state == ENTRY_GOOD) {
        return;
    }
    /* a fresh temporary of our own (mkstemp: O_EXCL, never a planted file or link) */
    snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", cfg->cache_dir);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = in >= 0 ? mkstemp(tmp) : -1;
    int ok = out >= 0 && copy_verified(in, out, size, hash) == 0;
    if (out >= 0 && close(out) != 0) {
        ok = 0;
    }
    if (in >= 0) {
        close(in);
    }
    char replaced[200] = "";
    if (ok && state == ENTRY_BAD) {
        snprintf(replaced, sizeof replaced, "%s", what);
        if (S_ISDIR(st.st_mode) &&
            clear_directory(cfg, path, name, &st, replaced, sizeof replaced) != 0) {
            ok = 0;
        }
    }
    /* rename() replaces a link, a FIFO or a file under the name itself, never what it leads to */
    if (ok && rename(tmp, path) == 0) {
        if (replaced[0]) {
            tetherd_log(cfg, 0, NULL,
                        "upload cache: %.12s... was %s; replaced by the verified upload (%llu "
                        "bytes)",
                        name, replaced, (unsigned long long)size);
        } else {
            tetherd_log(cfg, 1, NULL, "upload cache: stored %.12s... (%llu bytes)", name,
                        (unsigned long long)size);
        }
        evict(cfg, name);
    } else if (out >= 0) {
        unlink(tmp);
    }
}

const char *tetherd_cache_open(const char *dir, char *why, size_t why_size) {
    char path[1024];
    if (!dir[0] || strlen(dir) >= sizeof path) {
        snprintf(why, why_size, "'%.64s': want a directory of 1 to %zu bytes", dir,
                 sizeof path - 1);
        return NULL;
    }
    snprintf(path, sizeof path, "%s", dir);
    /* mkdir -p, 0700: the entries are the user's uploaded code */
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }
        *p = 0;
        if (mkdir(path, 0700) != 0 && errno != EEXIST) {
            snprintf(why, why_size, "%s: %s", path, strerror(errno));
            return NULL;
        }
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(why, why_size, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || access(path, W_OK | X_OK) != 0) {
        snprintf(why, why_size, "%s: not a writable directory", path);
        return NULL;
    }
    /* another user who can write here could plant entries (or links) the sessions would use */
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(why, why_size,
                 "%s: owned by another user or writable by group/others (the cache must be "
                 "this user's alone: chmod 700)",
                 path);
        return NULL;
    }
    return dir;
}
