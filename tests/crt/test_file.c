/*
 * Tests of tether/file.h: bounded reads of regular files only, and output files that replace
 * only regular files (devices and symbolic links are written in place, never replaced), with no
 * temporary left behind on success or failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tether/crt/error.h"
#include "tether/file.h"

static char g_dir[256];

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tether-file-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    DIR *d = opendir(g_dir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
                unlink(p);
            }
        }
        closedir(d);
    }
    rmdir(g_dir);
    return 0;
}

static void path_of(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", g_dir, name);
}

/* Number of entries in the test directory (temporaries would show up here). */
static int entries(void) {
    DIR *d = opendir(g_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_read_regular(void **state) {
    (void)state;
    char p[600];
    path_of(p, sizeof p, "a.txt");
    put(p, "hello");
    char *t;
    size_t len;
    assert_int_equal(tether_file_read_text(p, 5, &t, &len), TETHER_OK);
    assert_int_equal(len, 5);
    assert_string_equal(t, "hello"); /* NUL-terminated */
    free(t);
    assert_int_equal(tether_file_read_text(p, 4, &t, &len), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "a.txt"));
    assert_null(t);
}

static void test_read_refuses_devices_and_dirs(void **state) {
    (void)state;
    uint8_t *d;
    size_t len;
    /* a symbolic link to /dev/zero (the file a user might pass as a model by mistake) */
    char link[600];
    path_of(link, sizeof link, "zero.json");
    assert_int_equal(symlink("/dev/zero", link), 0);
    assert_int_equal(tether_file_read(link, (size_t)1 << 30, &d, &len), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not a regular file"));
    assert_int_equal(tether_file_read(g_dir, 100, &d, &len), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "is a directory"));
    char missing[600];
    path_of(missing, sizeof missing, "missing");
    assert_int_equal(tether_file_read(missing, 100, &d, &len), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "missing"));
}

static void test_write_new_and_replace_regular(void **state) {
    (void)state;
    char p[600];
    path_of(p, sizeof p, "out.bin");
    assert_int_equal(tether_file_write(p, "abc", 3), TETHER_OK);
    assert_int_equal(entries(), 1);
    assert_int_equal(chmod(p, 0640), 0);
    struct stat before, after;
    assert_int_equal(stat(p, &before), 0);
    assert_int_equal(tether_file_write(p, "defg", 4), TETHER_OK);
    assert_int_equal(stat(p, &after), 0);
    assert_true(S_ISREG(after.st_mode));
    assert_int_not_equal(before.st_ino, after.st_ino); /* replaced atomically, not truncated */
    assert_int_equal(after.st_mode & 0777, 0640);      /* the mode is kept */
    assert_int_equal(after.st_size, 4);
    assert_int_equal(entries(), 1); /* no temporary left */
}

static void test_write_through_symlink(void **state) {
    (void)state;
    char target[600], link[600];
    path_of(target, sizeof target, "real.npy");
    path_of(link, sizeof link, "link.npy");
    put(target, "old");
    assert_int_equal(symlink("real.npy", link), 0);
    assert_int_equal(tether_file_write(link, "new data", 8), TETHER_OK);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode)); /* still the link */
    assert_int_equal(stat(target, &st), 0);
    assert_int_equal(st.st_size, 8); /* the data went to its target */
    assert_int_equal(entries(), 2);
}

static void test_write_device_in_place(void **state) {
    (void)state;
    struct stat before, after;
    assert_int_equal(stat("/dev/null", &before), 0);
    assert_int_equal(tether_file_write("/dev/null", "x", 1), TETHER_OK);
    assert_int_equal(lstat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode)); /* as root, a rename would have replaced it */
    assert_int_equal(before.st_ino, after.st_ino);
    assert_int_equal(before.st_rdev, after.st_rdev);
    assert_int_equal(tether_file_out_check("/dev/null"), TETHER_OK);
}

static void test_write_errors(void **state) {
    (void)state;
    assert_int_equal(tether_file_write(g_dir, "x", 1), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "directory"));
    assert_int_equal(tether_file_out_check(g_dir), TETHER_ERR_INVALID_ARG);
    char p[600];
    path_of(p, sizeof p, "no-such-dir/out.npy");
    assert_int_equal(tether_file_write(p, "x", 1), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "no-such-dir"));
    assert_int_equal(tether_file_out_check(p), TETHER_ERR_IO);
    /* a write that fails (disk full) leaves the old file and no temporary */
    path_of(p, sizeof p, "keep.txt");
    put(p, "old");
    tether_file_out o;
    assert_int_equal(tether_file_out_open(&o, p), TETHER_OK);
    fputs("partial", o.f);
    tether_file_out_abort(&o);
    char *t;
    assert_int_equal(tether_file_read_text(p, 100, &t, NULL), TETHER_OK);
    assert_string_equal(t, "old");
    free(t);
    assert_int_equal(entries(), 1);
    if (access("/dev/full", W_OK) == 0) { /* ENOSPC on every write: the error names the path */
        assert_int_equal(tether_file_write("/dev/full", "x", 1), TETHER_ERR_IO);
        assert_non_null(strstr(tether_last_error(), "/dev/full"));
    }
    /* out_check creates nothing */
    path_of(p, sizeof p, "later.json");
    assert_int_equal(tether_file_out_check(p), TETHER_OK);
    assert_int_equal(access(p, F_OK), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_refuses_devices_and_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_new_and_replace_regular, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_through_symlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_device_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
