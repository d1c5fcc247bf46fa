/*
 * tetherd end to end: the same functional check (upload, alloc, copy, packed/unpacked/17-arg
 * calls, TIME, stack high-water mark) over TCP loopback, over local: (tetherd --stdio as a child)
 * and over a pty pair made by socat (UART framing); the upload cache across sessions, and its
 * repair of whatever lies under an entry's name; NDArrays of every element type (ALLOC sizes,
 * bytes back as sent) and an invalid dtype refused; HELLO's cpu and cpu_features against what
 * the test reads from cpuid itself (levels, avx512vnni, avxvnni) and the CPU value the host
 * compiles for from them.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "daemon.h"
#include "tether/crt.h"
#include "tether/device_compile.h"
#include "tether/rpc/sha256.h"

#if defined(__x86_64__)
/* cpuid and XGETBV read here, apart from tetherd's cpu.c: the int8 dot products and whether the
 * OS saves the AVX (XCR0 bits 1-2) and AVX-512 (bits 5-7) registers. */
static void read_cpuid(int *avx512vnni, int *avxvnni) {
    unsigned a, b, c, d, lo = 0, hi = 0;
    __cpuid(1, a, b, c, d);
    if (c & (1u << 27)) {
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    }
    (void)hi;
    int ymm = (lo & 6u) == 6u, zmm = ymm && (lo & 0xe0u) == 0xe0u;
    *avx512vnni = *avxvnni = 0;
    __cpuid(0, a, b, c, d);
    if (a >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        *avx512vnni = zmm && ((c >> 11) & 1u);
        if (a >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            *avxvnni = ymm && ((a >> 4) & 1u);
        }
    }
}
#endif

/* HELLO's cpu and cpu_features say what this CPU has (the test runs on the device's CPU), and
 * the CPU value the host compiles for adds the int8 dot-product extensions they name. */
static void check_cpu(const tether_device_info *info) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                 __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    int sse42 = __builtin_cpu_supports("sse4.2");
    const char *want = avx2 && avx512 ? "x86-64-v4" : avx2 ? "x86-64-v3" : sse42 ? "x86-64-v2" : "";
    assert_string_equal(info->cpu, want);
    char padded[300];
    snprintf(padded, sizeof padded, " %s ", info->cpu_features);
    assert_int_equal(strstr(padded, " avx2 ") != NULL, __builtin_cpu_supports("avx2") != 0);
    assert_int_equal(strstr(padded, " avx512f ") != NULL, __builtin_cpu_supports("avx512f") != 0);
    assert_int_equal(strstr(padded, " sse4.2 ") != NULL, sse42 != 0);
    int avx512vnni, avxvnni;
    read_cpuid(&avx512vnni, &avxvnni);
    assert_int_equal(strstr(padded, " avx512vnni ") != NULL, avx512vnni);
    assert_int_equal(strstr(padded, " avxvnni ") != NULL, avxvnni);
    char target[64], cpu[128], expect[128];
    assert_int_equal(tether_device_target(info, target, sizeof target, cpu, sizeof cpu), 0);
    snprintf(expect, sizeof expect, "%s%s%s", want, avx512vnni && avx512 ? "+avx512vnni" : "",
             avxvnni && avx2 ? "+avxvnni" : "");
    assert_string_equal(cpu, expect);
#else
    (void)info;
#endif
}

static void test_tcp(void **state) {
    (void)state;
    test_daemon d;
    assert_int_equal(daemon_start(&d, NULL), 0);
    tether_session *s;
    if (tether_session_open(&s, d.url, NULL)) {
        fail_msg("open: %s", tether_last_error());
    }
    const tether_device_info *info = tether_session_info(s);
    assert_int_equal(info->version, 1);
    assert_int_equal(info->pointer_bits, sizeof(void *) * 8);
    assert_false(info->auth_required);
    check_cpu(info);
    check_session_functions(s);
    tether_session_close(s);
    daemon_stop(&d);
}

static void test_local(void **state) {
    (void)state;
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    const char *args[] = {"--quiet", NULL};
    o.tetherd_args = args;
    tether_session *s;
    if (tether_session_open(&s, "local:", &o)) {
        fail_msg("open: %s", tether_last_error());
    }
    check_session_functions(s);
    tether_session_close(s);
}

/* Every element type's NDArray travels: ALLOC gives its size (bool one byte per element), the
 * bytes copied to it come back the same (every byte value, bool 0/1), with offsets; an invalid
 * dtype (float8, vector bool) is refused by the server naming it. */
static void test_every_dtype(void **state) {
    (void)state;
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    const char *args[] = {"--quiet", NULL};
    o.tetherd_args = args;
    tether_session *s;
    if (tether_session_open(&s, "local:", &o)) {
        fail_msg("open: %s", tether_last_error());
    }
    static const DLDataType types[] = {{kDLUInt, 1, 1},   {kDLInt, 8, 1},    {kDLInt, 16, 1},
                                       {kDLInt, 32, 1},   {kDLInt, 64, 1},   {kDLUInt, 8, 1},
                                       {kDLUInt, 16, 1},  {kDLUInt, 32, 1},  {kDLUInt, 64, 1},
                                       {kDLFloat, 16, 1}, {kDLFloat, 32, 1}, {kDLFloat, 64, 1},
                                       {kDLBfloat, 16, 1}};
    int64_t shape[2] = {3, 37};
    uint8_t in[3 * 37 * 8], back[3 * 37 * 8];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        size_t es = types[t].bits == 1 ? 1 : types[t].bits / 8, n = 3 * 37 * es;
        for (size_t i = 0; i < n; i++) {
            in[i] = types[t].bits == 1 ? (uint8_t)(i % 2) : (uint8_t)(i * 151u + t);
        }
        uint64_t h, nbytes;
        if (tether_session_alloc(s, shape, 2, types[t], TETHER_SCOPE_GLOBAL, "", &h, &nbytes)) {
            fail_msg("alloc of type %zu: %s", t, tether_last_error());
        }
        assert_int_equal(nbytes, n);
        assert_int_equal(tether_session_copy_to(s, h, 0, in, n), 0);
        memset(back, 0xee, sizeof back);
        assert_int_equal(tether_session_copy_from(s, h, 0, back, n), 0);
        assert_memory_equal(back, in, n);
        assert_int_equal(tether_session_copy_from(s, h, es, back, es), 0); /* element 1 */
        assert_memory_equal(back, in + es, es);
        assert_int_equal(tether_session_free(s, h), 0);
    }
    uint64_t h;
    DLDataType f8 = {kDLFloat, 8, 1}, bool4 = {kDLUInt, 1, 4};
    assert_int_equal(tether_session_alloc(s, shape, 2, f8, TETHER_SCOPE_GLOBAL, "", &h, NULL),
                     TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "invalid dtype (code 2, bits 8, lanes 1)"));
    assert_int_equal(tether_session_alloc(s, shape, 2, bool4, TETHER_SCOPE_GLOBAL, "", &h, NULL),
                     0); /* a vector of 4 bools: 4 bytes per element */
    tether_session_close(s);
}

/* A local: session of a tetherd with the upload cache in dir ("off" = none). */
static tether_session *open_cached(const char *dir) {
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    const char *args[] = {"--quiet", "--upload-cache", dir, NULL};
    o.tetherd_args = args;
    tether_session *s;
    if (tether_session_open(&s, "local:", &o)) {
        fail_msg("open: %s", tether_last_error());
    }
    return s;
}

/* Uploads the test module as "m", loads it and calls add_packed: the module really works. */
static int upload_load_call(tether_session *s) {
    if (tether_session_upload_file(s, 0, "m", k_testmod)) {
        fail_msg("upload: %s", tether_last_error());
    }
    int cached = tether_session_last_upload_cached(s);
    uint64_t m;
    if (tether_session_load_module(s, "m", &m, NULL)) {
        fail_msg("load: %s", tether_last_error());
    }
    tether_remote_func f;
    if (tether_session_get_function(s, m, "add_packed", &f)) {
        fail_msg("get_function: %s", tether_last_error());
    }
    return cached;
}

/* The upload cache: a second session uploading the same bytes sends none and loads them; a
 * damaged entry is noticed and the bytes go over the wire again; other bytes miss; a tetherd
 * without the cache never answers `cached`. */
static void test_upload_cache(void **state) {
    (void)state;
    char dir[64] = "/tmp/tcacheXXXXXX";
    assert_non_null(mkdtemp(dir));
    char cache[128];
    snprintf(cache, sizeof cache, "%s/c/uploads", dir); /* made with its parents */
    tether_session *s = open_cached(cache);
    assert_false(upload_load_call(s));
    tether_session_close(s);
    s = open_cached(cache);
    assert_true(upload_load_call(s));
    /* different bytes of the same name: a miss, then a hit of their own */
    uint8_t other[4096];
    for (size_t i = 0; i < sizeof other; i++) {
        other[i] = (uint8_t)(i * 13);
    }
    assert_int_equal(tether_session_upload(s, 0, "o", other, sizeof other), 0);
    assert_false(tether_session_last_upload_cached(s));
    assert_int_equal(tether_session_upload(s, 0, "o2", other, sizeof other), 0);
    assert_true(tether_session_last_upload_cached(s));
    tether_session_close(s);
    /* damage every entry: each is checked against its hash before use */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "for f in '%s'/*; do printf X | dd of=\"$f\" bs=1 seek=64 conv=notrunc "
             "2>/dev/null; done",
             cache);
    assert_int_equal(system(cmd), 0);
    s = open_cached(cache);
    assert_false(upload_load_call(s)); /* sent again, and it loads */
    tether_session_close(s);
    s = open_cached(cache);
    assert_true(upload_load_call(s)); /* stored again by the upload before */
    tether_session_close(s);
    s = open_cached("off");
    assert_false(upload_load_call(s));
    tether_session_close(s);
    /* a limit of 6000 bytes holds one 4096-byte entry: the older one is evicted */
    tether_session_options o = {0};
    o.tetherd = k_tetherd;
    snprintf(cache, sizeof cache, "%s/small", dir);
    const char *args[] = {"--quiet", "--upload-cache", cache, "--upload-cache-size", "6000", NULL};
    o.tetherd_args = args;
    assert_int_equal(tether_session_open(&s, "local:", &o), 0);
    uint8_t second[4096];
    memcpy(second, other, sizeof second);
    second[0] ^= 1;
    assert_int_equal(tether_session_upload(s, 0, "a", other, sizeof other), 0);
    assert_int_equal(tether_session_upload(s, 0, "b", second, sizeof second), 0);
    assert_int_equal(tether_session_upload(s, 0, "b2", second, sizeof second), 0);
    assert_true(tether_session_last_upload_cached(s));
    assert_int_equal(tether_session_upload(s, 0, "a2", other, sizeof other), 0);
    assert_false(tether_session_last_upload_cached(s)); /* evicted */
    tether_session_close(s);
    /* a FIFO planted under an entry's name is a miss, not a hung session */
    uint8_t third[4096];
    memcpy(third, other, sizeof third);
    third[1] ^= 1;
    uint8_t h[32];
    tether_sha256(third, sizeof third, h);
    char fifo[256];
    int o2 = snprintf(fifo, sizeof fifo, "%s/", cache);
    for (int i = 0; i < 32; i++) {
        o2 += snprintf(fifo + o2, sizeof fifo - (size_t)o2, "%02x", h[i]);
    }
    assert_int_equal(mkfifo(fifo, 0600), 0);
    o.timeout_ms = 5000;
    assert_int_equal(tether_session_open(&s, "local:", &o), 0);
    assert_int_equal(tether_session_upload(s, 0, "f", third, sizeof third), 0);
    assert_false(tether_session_last_upload_cached(s));
    tether_session_close(s);
    /* a cache directory others can write is refused (they could plant entries) */
    snprintf(cmd, sizeof cmd, "chmod 777 '%s'", cache);
    assert_int_equal(system(cmd), 0);
    assert_int_not_equal(tether_session_open(&s, "local:", &o), 0);
    /* ... and so is an empty name */
    const char *empty[] = {"--quiet", "--upload-cache", "", NULL};
    o.tetherd_args = empty;
    assert_int_not_equal(tether_session_open(&s, "local:", &o), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* "<cache>/<SHA-256 of data in hex>": the entry's name of those bytes. */
static void entry_path(const char *cache, const uint8_t *data, size_t n, char *out, size_t size) {
    uint8_t h[32];
    tether_sha256(data, n, h);
    int o = snprintf(out, size, "%s/", cache);
    for (int i = 0; i < 32; i++) {
        o += snprintf(out + o, size - (size_t)o, "%02x", h[i]);
    }
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The whole file (at most cap bytes) into buf; its length. */
static size_t read_file(const char *path, void *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Something other than a good entry under an entry's name (a truncated file, a link to a file
 * outside the cache, a FIFO, an empty and a non-empty directory) costs one miss, not every
 * later upload: the verified upload replaces it with the bytes (never writing through the
 * link: its target stays as it was; the non-empty directory is kept aside, its content
 * intact), the log says what was replaced, the next upload is a hit, no temporary is left. */
static void test_upload_cache_repair(void **state) {
    (void)state;
    char dir[64] = "/tmp/tcrepairXXXXXX";
    assert_non_null(mkdtemp(dir));
    char cache[128], outside[128], path[256];
    snprintf(cache, sizeof cache, "%s/uploads", dir);
    snprintf(outside, sizeof outside, "%s/outside.bin", dir);
    static const char keep[] = "a file outside the cache the link must not change";
    write_file(outside, keep, sizeof keep);
    const char *extra[] = {"--upload-cache", cache, NULL};
    test_daemon d;
    assert_int_equal(daemon_start(&d, extra), 0);
    tether_session_options o = {0};
    o.timeout_ms = 5000; /* a FIFO opened for blocking I/O would hang the session */
    enum { TRUNCATED, SYMLINK, FIFO, EMPTY_DIR, FULL_DIR, KINDS };
    for (int k = 0; k < KINDS; k++) {
        uint8_t data[4096], back[8192];
        for (size_t i = 0; i < sizeof data; i++) {
            data[i] = (uint8_t)(i * 7 + (size_t)k * 31 + 1);
        }
        entry_path(cache, data, sizeof data, path, sizeof path);
        switch (k) {
        case TRUNCATED:
            write_file(path, data, 1000);
            break;
        case SYMLINK:
            assert_int_equal(symlink(outside, path), 0);
            break;
        case FIFO:
            assert_int_equal(mkfifo(path, 0600), 0);
            break;
        case EMPTY_DIR:
            assert_int_equal(mkdir(path, 0700), 0);
            break;
        default: {
            assert_int_equal(mkdir(path, 0700), 0);
            char note[300];
            snprintf(note, sizeof note, "%s/note", path);
            write_file(note, "mine", 4);
        }
        }
        tether_session *s;
        if (tether_session_open(&s, d.url, &o)) {
            fail_msg("open: %s", tether_last_error());
        }
        assert_int_equal(tether_session_upload(s, 0, "x", data, sizeof data), 0);
        assert_false(tether_session_last_upload_cached(s));
        tether_session_close(s);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(read_file(path, back, sizeof back), sizeof data);
        assert_memory_equal(back, data, sizeof data);
        if (tether_session_open(&s, d.url, &o)) {
            fail_msg("open: %s", tether_last_error());
        }
        assert_int_equal(tether_session_upload(s, 0, "y", data, sizeof data), 0);
        if (!tether_session_last_upload_cached(s)) {
            fail_msg("kind %d: the repaired entry is not a hit", k);
        }
        tether_session_close(s);
    }
    /* the link's target is untouched */
    char back[256];
    struct stat st;
    assert_int_equal(lstat(outside, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(read_file(outside, back, sizeof back), sizeof keep);
    assert_memory_equal(back, keep, sizeof keep);
    /* the cache holds the five entries and the non-empty directory kept aside: no temporary */
    int entries = 0, aside = 0, other = 0;
    char moved[512] = "";
    DIR *dd = opendir(cache);
    assert_non_null(dd);
    struct dirent *de;
    while ((de = readdir(dd))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
            continue;
        }
        if (strlen(de->d_name) == 64) {
            entries++;
        } else if (!strncmp(de->d_name, ".replaced-", 10)) {
            aside++;
            snprintf(moved, sizeof moved, "%s/%s/note", cache, de->d_name);
        } else {
            print_error("unexpected in the cache: %s\n", de->d_name);
            other++;
        }
    }
    closedir(dd);
    assert_int_equal(entries, KINDS);
    assert_int_equal(aside, 1);
    assert_int_equal(other, 0);
    assert_int_equal(read_file(moved, back, sizeof back), 4);
    assert_memory_equal(back, "mine", 4);
    /* the log says what each was */
    char *log = daemon_log(&d);
    assert_non_null(log);
    static const char *const said[] = {"was a file of the wrong size; replaced",
                                       "was a symbolic link; replaced", "was a FIFO; replaced",
                                       "was an empty directory (removed); replaced",
                                       "was a directory (moved aside to .replaced-"};
    for (size_t i = 0; i < sizeof said / sizeof *said; i++) {
        if (!strstr(log, said[i])) {
            fail_msg("the log does not say '%s':\n%s", said[i], log);
        }
    }
    free(log);
    daemon_stop(&d);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_uart_pty(void **state) {
    (void)state;
    if (access("/usr/bin/socat", X_OK) != 0) {
        skip();
    }
    char dir[] = "/tmp/tuartXXXXXX";
    assert_non_null(mkdtemp(dir));
    char a[128], b[128], pa[160], pb[160];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(pa, sizeof pa, "pty,raw,echo=0,link=%s", a);
    snprintf(pb, sizeof pb, "pty,raw,echo=0,link=%s", b);
    pid_t soc = fork();
    if (soc == 0) {
        execl("/usr/bin/socat", "socat", pa, pb, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300 && (access(a, F_OK) || access(b, F_OK)); i++) {
        usleep(10000);
    }
    pid_t dm = fork();
    if (dm == 0) {
        execl(k_tetherd, "tetherd", "--uart", a, "--baud", "115200", "--quiet", (char *)NULL);
        _exit(127);
    }
    usleep(100000);
    char url[200];
    snprintf(url, sizeof url, "uart://%s?baud=115200", b);
    tether_session *s;
    tether_session_options o = {0};
    o.timeout_ms = 5000;
    if (tether_session_open(&s, url, &o)) {
        fail_msg("open: %s", tether_last_error());
    }
    check_session_functions(s);
    tether_session_close(s);
    kill(dm, SIGTERM);
    waitpid(dm, NULL, 0);
    kill(soc, SIGTERM);
    waitpid(soc, NULL, 0);
    unlink(a);
    unlink(b);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp),
        cmocka_unit_test(test_local),
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_upload_cache),
        cmocka_unit_test(test_upload_cache_repair), /* what lies under an entry's name */
        cmocka_unit_test(test_uart_pty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
