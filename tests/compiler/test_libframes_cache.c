/*
 * The on-disk cache of the run-time library disassemblies (compiler/src/build/libframes_cache.c):
 * each case runs tether_stack_library_function(x86_64-linux, "expf") in a child process (the
 * archives are read once per process) with TETHER_LIBFRAMES_CACHE set, and checks the figure and
 * the cache directory: "off" writes nothing; the first process fills the directory with complete
 * entries, the next one reads them (same figure, the files not rewritten) and really uses their
 * text (entries whose text holds no function make expf unknown, and the C library is read
 * then); a truncated entry or one whose header names another objdump is ignored and rewritten; a
 * cache path that is not a directory only means objdump runs.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/compiler.h"
#include "tether/crt.h"

static char dir[256];

typedef struct figure {
    int rc;
    int bounded;
    long long bytes;
} figure;

/* expf's stack figure from a fresh process whose TETHER_LIBFRAMES_CACHE is cache. */
static figure child_figure(const char *cache) {
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        setenv("TETHER_LIBFRAMES_CACHE", cache, 1);
        figure f = {0, 0, 0};
        const tether_target *t;
        tether_stack_report r;
        f.rc = tether_target_find("x86_64-linux", &t);
        if (f.rc == 0) {
            f.rc = tether_stack_library_function(t, "expf", &r);
        }
        if (f.rc == 0) {
            f.bounded = r.bounded;
            f.bytes = r.bytes;
        }
        _exit(write(fd[1], &f, sizeof f) == (ssize_t)sizeof f ? 0 : 1);
    }
    close(fd[1]);
    figure f;
    assert_int_equal(read(fd[0], &f, sizeof f), (ssize_t)sizeof f);
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return f;
}

typedef struct entry {
    char path[600];
    ino_t ino;
    off_t size;
} entry;

/* The files of the cache directory (at most max); their count. Every one is an entry. */
static int list_entries(entry *e, int max) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') {
            continue;
        }
        assert_true(n < max);
        snprintf(e[n].path, sizeof e[n].path, "%s/%s", dir, de->d_name);
        assert_non_null(strstr(de->d_name, ".objdump"));
        assert_null(strstr(de->d_name, ".tmp")); /* no left-over temporary file */
        struct stat st;
        assert_int_equal(stat(e[n].path, &st), 0);
        e[n].ino = st.st_ino;
        e[n].size = st.st_size;
        FILE *f = fopen(e[n].path, "rb");
        assert_non_null(f);
        char head[64] = {0};
        assert_non_null(fgets(head, sizeof head, f));
        fclose(f);
        assert_int_equal(strncmp(head, "tether-libframes 1 ", 19), 0);
        n++;
    }
    closedir(d);
    return n;
}

/* Rewrites the entry at path with its header line changed by edit and text as its body. */
static void rewrite(const char *path, const char *text, int damage_key) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char head[4096];
    assert_non_null(fgets(head, sizeof head, f));
    fclose(f);
    /* "tether-libframes 1 LEN KEY\n" -> the same key with text's length */
    char *key = strchr(head + 19, ' ');
    assert_non_null(key);
    key++;
    if (damage_key) {
        key[0] = key[0] == 'x' ? 'y' : 'x'; /* another objdump path */
    }
    f = fopen(path, "wb");
    assert_non_null(f);
    fprintf(f, "tether-libframes 1 %zu %s", strlen(text), key);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/tether-libframes-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_cache(void **state) {
    (void)state;
    const tether_target *t;
    assert_int_equal(tether_target_find("x86_64-linux", &t), 0);
    if (!tether_target_available(t)) {
        skip();
    }
    entry e[16], e2[16];
    figure ref = child_figure("off");
    assert_int_equal(ref.rc, 0);
    assert_true(ref.bounded);
    assert_true(ref.bytes >= 8);
    assert_int_equal(list_entries(e, 16), 0); /* off: nothing written */

    /* the first process fills the cache, the next reads it */
    figure a = child_figure(dir);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.bytes, ref.bytes);
    int n = list_entries(e, 16);
    assert_true(n >= 2); /* libgcc.a and libm's archive at least */
    figure b = child_figure(dir);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.bytes, ref.bytes);
    assert_int_equal(list_entries(e2, 16), n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(e2[i].path, e[i].path);
        assert_true(e2[i].ino == e[i].ino); /* read, not rewritten */
    }

    /* the cached text is what the analysis reads: entries without functions, no expf */
    for (int i = 0; i < n; i++) {
        rewrite(e[i].path, "\nSYMBOL TABLE:\n", 0);
    }
    figure c = child_figure(dir);
    assert_int_equal(c.rc, TETHER_ERR_NOT_FOUND);
    int m = list_entries(e2, 16); /* looking on, it read the C library too */
    assert_true(m > n);

    /* a truncated entry (its length says more) and one of another key: objdump again, rewritten */
    for (int i = 0; i < n; i++) {
        rewrite(e[i].path, "\nSYMBOL TABLE:\n", i % 2);
        if (i % 2 == 0) {
            struct stat st;
            assert_int_equal(stat(e[i].path, &st), 0);
            assert_int_equal(truncate(e[i].path, st.st_size - 5), 0);
        }
    }
    figure d = child_figure(dir);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.bytes, ref.bytes);
    assert_int_equal(list_entries(e2, 16), m);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k < m; k++) {
            if (strcmp(e2[k].path, e[i].path) == 0) {
                assert_true(e2[k].size == e[i].size); /* the complete disassembly again */
                found = 1;
            }
        }
        assert_true(found);
    }

    /* a cache path that cannot be a directory: no cache, the same figure */
    char file[400];
    snprintf(file, sizeof file, "%s/%s", dir, "not-a-dir");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    figure g = child_figure(file);
    assert_int_equal(g.rc, 0);
    assert_int_equal(g.bytes, ref.bytes);
    unlink(file);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cache)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
