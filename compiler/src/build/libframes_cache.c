/*
 * The on-disk cache of the run-time library disassemblies (libframes.c): `objdump -drt` of a
 * toolchain archive (libgcc.a, libm.a, libc.a: 4 MB of text, most of a small model's build time)
 * is kept across processes, so each tether process that needs a library frame reads a file
 * instead of running objdump again. The directory is $TETHER_LIBFRAMES_CACHE ("off": no cache),
 * else $XDG_CACHE_HOME/tether/libframes, else ~/.cache/tether/libframes (docs/codegen.md).
 *
 * What must stay true: a cached text is used only for the very same objdump and archive (their
 * paths, sizes, modification times and inodes are the key, written in full in the file's header
 * and compared, not only hashed into its name) and only when complete (the header's length equals
 * the rest of the file); an entry appears by rename, so a reader never sees a partial one; any
 * cache failure (no directory, unwritable, damaged file) only means objdump runs: it never fails
 * or changes the analysis.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_internal.h"

#define CACHE_MAGIC "tether-libframes 1"

/* The cache directory in out (created); 0 when there is one to use. */
static int cache_dir(char *out, size_t n) {
    const char *env = getenv("TETHER_LIBFRAMES_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (env && *env) {
        if (strcmp(env, "off") == 0) {
            return -1;
        }
        len = snprintf(out, n, "%s", env);
    } else if (xdg && *xdg) {
        len = snprintf(out, n, "%s/tether/libframes", xdg);
    } else if (home && *home) {
        len = snprintf(out, n, "%s/.cache/tether/libframes", home);
    } else {
        return -1;
    }
    if (len <= 0 || (size_t)len >= n) {
        return -1;
    }
    /* make every missing level (mkdir -p) */
    for (char *p = out + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            int rc = mkdir(out, 0755);
            *p = c;
            if (rc != 0 && errno != EEXIST) {
                return -1;
            }
            if (c == 0) {
                break;
            }
        }
    }
    struct stat st;
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* The key of (objdump, archive): both paths with their size, mtime and inode; 0 when both exist. */
static int cache_key(const char *objdump, const char *archive, char *key, size_t n) {
    struct stat a, b;
    if (stat(objdump, &a) != 0 || stat(archive, &b) != 0) {
        return -1;
    }
    int len = snprintf(key, n, "%s %lld %lld.%09ld %llu | %s %lld %lld.%09ld %llu", objdump,
                       (long long)a.st_size, (long long)a.st_mtim.tv_sec, (long)a.st_mtim.tv_nsec,
                       (unsigned long long)a.st_ino, archive, (long long)b.st_size,
                       (long long)b.st_mtim.tv_sec, (long)b.st_mtim.tv_nsec,
                       (unsigned long long)b.st_ino);
    return len > 0 && (size_t)len < n && !strchr(key, '\n') ? 0 : -1;
}

/* DIR/<64-bit FNV-1a of the key>.objdump */
static void cache_path(const char *dir, const char *key, char *out, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (const char *s = key; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    snprintf(out, n, "%s/%016llx.objdump", dir, (unsigned long long)h);
}

char *tether__lib_cache_load(const char *objdump, const char *archive) {
    char dir[1024], key[2400], path[1200];
    if (cache_dir(dir, sizeof dir) != 0 || cache_key(objdump, archive, key, sizeof key) != 0) {
        return NULL;
    }
    cache_path(dir, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        return NULL;
    }
    char *text = NULL;
    char head[2600];
    unsigned long long len = 0;
    size_t hl = 0;
    if (fgets(head, sizeof head, f) && (hl = strlen(head)) > 0 && head[hl - 1] == '\n') {
        head[hl - 1] = 0;
        /* "tether-libframes 1 LEN KEY" */
        char *p = head + strlen(CACHE_MAGIC);
        char *end = NULL;
        if (strncmp(head, CACHE_MAGIC " ", strlen(CACHE_MAGIC) + 1) == 0 &&
            (len = strtoull(p + 1, &end, 10)) > 0 && end && *end == ' ' &&
            strcmp(end + 1, key) == 0 && len < ((unsigned long long)1 << 32)) {
            text = malloc((size_t)len + 1);
        }
    }
    if (text) {
        size_t got = fread(text, 1, (size_t)len, f);
        int extra = fgetc(f);
        if (got != (size_t)len || extra != EOF) { /* truncated or longer: not this entry */
            free(text);
            text = NULL;
        } else {
            text[len] = 0;
        }
    }
    fclose(f);
    return text;
}

void tether__lib_cache_store(const char *objdump, const char *archive, const char *text,
                             size_t len) {
    char dir[1024], key[2400], path[1200], tmp[1300];
    if (len == 0 || cache_dir(dir, sizeof dir) != 0 ||
        cache_key(objdump, archive, key, sizeof key) != 0) {
        return;
    }
    cache_path(dir, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        return;
    }
    int ok = fprintf(f, "%s %zu %s\n", CACHE_MAGIC, len, key) > 0 && fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
    }
}
