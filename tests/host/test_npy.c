/*
 * .npy reader/writer: round trips of every supported dtype (including 0-d and empty arrays), and
 * clear errors for Fortran order, unsupported and big-endian dtypes, bad magic, truncated headers
 * and data, extra data and too many dimensions. Registered readers of other formats (.pb) take
 * over by extension. .npz archives: round trips in archive order, stored and deflated members,
 * and refusals (not a ZIP, a non-.npy member, a bad CRC, truncation, bad names) that leave no file;
 * decompression bombs (a member over the size limit, of another shape than expected, or whose
 * size the archive misstates) refused from the member's header within a bounded address space.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <zip.h>

#include "npz_bomb.h"

#include "tether/crt.h"
#include "tether/host.h"
#include "tether/npy.h"

static char g_dir[64];

static void roundtrip(DLDataType dt, const int64_t *shape, int ndim) {
    size_t nbytes;
    assert_int_equal(tether_shape_bytes(shape, ndim, dt, &nbytes), 0);
    uint8_t *data = malloc(nbytes + 1);
    for (size_t i = 0; i < nbytes; i++) { /* bool holds 0/1 only */
        data[i] = dt.bits == 1 ? (uint8_t)(i % 3 == 1) : (uint8_t)(i * 7 + 3);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/rt.npy", g_dir);
    assert_int_equal(tether_npy_write(path, dt, shape, ndim, data), 0);
    tether_npy n;
    if (tether_npy_read(path, &n)) {
        fail_msg("%s", tether_last_error());
    }
    assert_true(tether_dtype_equal(n.dtype, dt));
    assert_int_equal(n.ndim, ndim);
    for (int i = 0; i < ndim; i++) {
        assert_int_equal(n.shape[i], shape[i]);
    }
    assert_int_equal(n.nbytes, nbytes);
    assert_memory_equal(n.data, data, nbytes);
    tether_npy_free(&n);
    free(data);
}

static void test_roundtrip(void **state) {
    (void)state;
    DLDataType dts[] = {TETHER_FLOAT32,
                        TETHER_DTYPE(kDLFloat, 64),
                        TETHER_DTYPE(kDLFloat, 16),
                        TETHER_DTYPE(kDLBfloat, 16),
                        TETHER_BOOL,
                        TETHER_INT8,
                        TETHER_DTYPE(kDLInt, 16),
                        TETHER_INT32,
                        TETHER_INT64,
                        TETHER_UINT8,
                        TETHER_DTYPE(kDLUInt, 16),
                        TETHER_DTYPE(kDLUInt, 32),
                        TETHER_DTYPE(kDLUInt, 64)};
    int64_t s1[] = {5}, s3[] = {2, 3, 4}, s0[] = {0, 3};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        roundtrip(dts[i], s1, 1);
        roundtrip(dts[i], s3, 3);
        roundtrip(dts[i], s0, 2);
        roundtrip(dts[i], NULL, 0);
    }
    /* the descr each type is written with (what numpy reads): exact header bytes */
    static const struct {
        DLDataType dt;
        const char *descr;
    } descr[] = {{TETHER_DTYPE(kDLFloat, 16), "'<f2'"},      {TETHER_BOOL, "'|b1'"},
                 {TETHER_DTYPE(kDLInt, 16), "'<i2'"},        {TETHER_DTYPE(kDLUInt, 16), "'<u2'"},
                 {TETHER_DTYPE(kDLUInt, 32), "'<u4'"},       {TETHER_DTYPE(kDLUInt, 64), "'<u8'"},
                 {TETHER_DTYPE(kDLBfloat, 16), "'bfloat16'"}};
    char path[128];
    snprintf(path, sizeof path, "%s/d.npy", g_dir);
    for (size_t i = 0; i < sizeof descr / sizeof descr[0]; i++) {
        uint8_t zero[64] = {0}; /* 5 elements of up to 8 bytes */
        assert_int_equal(tether_npy_write(path, descr[i].dt, s1, 1, zero), 0);
        uint8_t *buf;
        size_t len;
        assert_int_equal(tether_file_read(path, 1 << 20, &buf, &len), 0);
        char want[96];
        snprintf(want, sizeof want, "{'descr': %s, 'fortran_order': False, 'shape': (5,), }",
                 descr[i].descr);
        assert_int_equal((len - 5 * tether_dtype_bytes(descr[i].dt)) % 64, 0);
        assert_memory_equal(buf + 10, want, strlen(want));
        assert_int_equal(buf[len - 5 * tether_dtype_bytes(descr[i].dt) - 1], '\n');
        free(buf);
    }
    /* a vector dtype cannot be written */
    snprintf(path, sizeof path, "%s/no.npy", g_dir);
    float x[4] = {0};
    DLDataType vec = {kDLFloat, 32, 4};
    assert_int_equal(tether_npy_write(path, vec, s1, 1, x), TETHER_ERR_UNSUPPORTED);
    assert_int_not_equal(access(path, F_OK), 0);
}

/* Builds a version-1 .npy image with header text h and `data` bytes of payload. */
static size_t build(uint8_t *buf, const char *h, size_t data) {
    size_t hl = strlen(h);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(hl & 0xff);
    buf[9] = (uint8_t)(hl >> 8);
    memcpy(buf + 10, h, hl);
    memset(buf + 10 + hl, 0, data);
    return 10 + hl + data;
}

static void expect_err(const char *h, size_t data, int code, const char *words) {
    uint8_t buf[4096];
    size_t n = build(buf, h, data);
    tether_npy out;
    int rc = tether_npy_parse(buf, n, "t.npy", &out);
    if (rc != code || !strstr(tether_last_error(), words)) {
        fail_msg("header %s: rc %d '%s'", h, rc, tether_last_error());
    }
    assert_null(out.data);
}

/* Builds a .npy image with header h and the given payload bytes. */
static size_t build_with(uint8_t *buf, const char *h, const void *data, size_t n) {
    size_t len = build(buf, h, n);
    memcpy(buf + len - n, data, n);
    return len;
}

static void test_typed_data(void **state) {
    (void)state;
    uint8_t buf[512];
    tether_npy out;
    /* bool: bytes 0/1 pass; any other byte is refused naming the element */
    uint8_t b[4] = {0, 1, 1, 0};
    size_t n = build_with(buf, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }\n", b, 4);
    assert_int_equal(tether_npy_parse(buf, n, "b.npy", &out), 0);
    assert_true(tether_dtype_equal(out.dtype, TETHER_BOOL));
    assert_memory_equal(out.data, b, 4);
    tether_npy_free(&out);
    b[2] = 7;
    n = build_with(buf, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }\n", b, 4);
    assert_int_equal(tether_npy_parse(buf, n, "b.npy", &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "b.npy: bool element 2 is byte 7"));
    assert_null(out.data);
    /* '<V2' (np.save of an ml_dtypes.bfloat16 array) reads as bfloat16, bytes unchanged */
    uint16_t h[3] = {0x3f80, 0xc000, 0x7fc0};
    n = build_with(buf, "{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }\n", h, 6);
    assert_int_equal(tether_npy_parse(buf, n, "v.npy", &out), 0);
    assert_true(tether_dtype_equal(out.dtype, TETHER_DTYPE(kDLBfloat, 16)));
    assert_memory_equal(out.data, h, 6);
    tether_npy_free(&out);
    /* float16 and uint64: exact bytes */
    uint64_t u[2] = {UINT64_MAX, 1ULL << 63};
    n = build_with(buf, "{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }\n", u, 16);
    assert_int_equal(tether_npy_parse(buf, n, "u.npy", &out), 0);
    assert_true(tether_dtype_equal(out.dtype, TETHER_DTYPE(kDLUInt, 64)));
    assert_memory_equal(out.data, u, 16);
    tether_npy_free(&out);
    n = build_with(buf, "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }\n", h, 6);
    assert_int_equal(tether_npy_parse(buf, n, "f.npy", &out), 0);
    assert_true(tether_dtype_equal(out.dtype, TETHER_DTYPE(kDLFloat, 16)));
    assert_memory_equal(out.data, h, 6);
    tether_npy_free(&out);
}

static void test_malformed(void **state) {
    (void)state;
    expect_err("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16,
               TETHER_ERR_UNSUPPORTED, "Fortran");
    expect_err("{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }\n", 32,
               TETHER_ERR_UNSUPPORTED, "'<f16' is not supported");
    expect_err("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }\n", 24,
               TETHER_ERR_UNSUPPORTED, "'<U3' is not supported");
    expect_err("{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }\n", 4,
               TETHER_ERR_UNSUPPORTED, "little-endian");
    expect_err("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8,
               TETHER_ERR_UNSUPPORTED, "not supported");
    expect_err("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", 16,
               TETHER_ERR_UNSUPPORTED, "not supported");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 8,
               TETHER_ERR_MISMATCH, "need 12");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 8,
               TETHER_ERR_MISMATCH, "data is 8 bytes");
    expect_err("{'descr': '<f4', 'fortran_order': False, }\n", 0, TETHER_ERR_INVALID_ARG, "shape");
    expect_err("{'fortran_order': False, 'shape': (1,), }\n", 4, TETHER_ERR_INVALID_ARG, "descr");
    expect_err("{'descr': '<f4', 'shape': (1,), }\n", 4, TETHER_ERR_INVALID_ARG, "fortran_order");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }\n", 4,
               TETHER_ERR_LIMIT, "dimensions");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }\n", 4,
               TETHER_ERR_INVALID_ARG, "shape");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }\n", 4,
               TETHER_ERR_LIMIT, "");
    expect_err("[1, 2]\n", 0, TETHER_ERR_INVALID_ARG, "not a dict");
    /* the dict is parsed, not searched: extra or repeated keys, no closing brace, trailing text,
     * a key hidden inside another value */
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n", 4,
               TETHER_ERR_INVALID_ARG, "unknown key 'extra'");
    expect_err("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n", 4,
               TETHER_ERR_INVALID_ARG, "'descr' twice");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)\n", 4,
               TETHER_ERR_INVALID_ARG, "malformed");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", 4,
               TETHER_ERR_INVALID_ARG, "text after the dict");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'x': \"'shape': (1,)\"}\n", 4,
               TETHER_ERR_INVALID_ARG, "unknown key 'x'");
    expect_err("{'descr': '<f4', 'fortran_order': False, 'shape': (1 2,)}\n", 4,
               TETHER_ERR_INVALID_ARG, "bad shape");
    /* bad magic, truncated header, unknown version */
    tether_npy out;
    assert_int_equal(tether_npy_parse("hello world!", 12, "t.npy", &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "magic"));
    uint8_t buf[256];
    size_t n = build(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 4);
    assert_int_equal(tether_npy_parse(buf, 20, "t.npy", &out), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "truncated"));
    buf[6] = 9;
    assert_int_equal(tether_npy_parse(buf, n, "t.npy", &out), TETHER_ERR_UNSUPPORTED);
    /* every truncation of a valid file fails cleanly */
    buf[6] = 1;
    for (size_t k = 0; k < n; k++) {
        assert_int_not_equal(tether_npy_parse(buf, k, "t.npy", &out), 0);
    }
    assert_int_equal(tether_npy_parse(buf, n, "t.npy", &out), 0);
    tether_npy_free(&out);
    assert_int_equal(tether_npy_read("/nonexistent/x.npy", &out), TETHER_ERR_IO);
}

/* Only regular files are read: a device node that never ends, a FIFO or a directory is an
 * error naming the path (tether_file_read, shared by .npy reads, uploads and params). */
static void test_not_regular(void **state) {
    (void)state;
    tether_npy n;
    assert_int_equal(tether_npy_read("/dev/zero", &n), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "/dev/zero is not a regular file"));
    assert_int_equal(tether_npy_read("/tmp", &n), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "is a directory"));
    assert_int_equal(tether_npy_read("/nonexistent/x.npy", &n), TETHER_ERR_IO);
    assert_non_null(strstr(tether_last_error(), "/nonexistent/x.npy"));
    uint8_t *d;
    size_t len;
    char path[] = "/tmp/tnpyXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "0123456789", 10), 10);
    close(fd);
    assert_int_equal(tether_file_read(path, 9, &d, &len), TETHER_ERR_LIMIT);
    assert_int_equal(tether_file_read(path, 10, &d, &len), TETHER_OK);
    assert_int_equal(len, 10);
    assert_memory_equal(d, "0123456789", 10);
    free(d);
    unlink(path);
}

static int fake_reads;

static int fake_reader(const char *path, tether_npy *out) {
    fake_reads++;
    if (strstr(path, "bad")) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s: not a fake array", path);
    }
    out->dtype = TETHER_FLOAT32;
    out->ndim = 1;
    out->shape[0] = 2;
    out->nbytes = 8;
    out->data = calloc(1, 8);
    return 0;
}

static void test_registered_reader(void **state) {
    (void)state;
    assert_int_equal(tether_npy_register_reader(".npy", fake_reader), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_npy_register_reader("pb", fake_reader), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_npy_register_reader(".fake", NULL), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_npy_register_reader(".fake", fake_reader), 0);
    tether_npy n;
    assert_int_equal(tether_npy_read("x.fake", &n), 0); /* never opened: the reader decides */
    assert_int_equal(n.shape[0], 2);
    tether_npy_free(&n);
    assert_int_equal(tether_npy_read("bad.fake", &n), TETHER_ERR_INVALID_ARG);
    assert_string_equal(tether_last_error(), "bad.fake: not a fake array");
    assert_int_equal(fake_reads, 2);
    /* .npy files still go to the .npy parser */
    char path[128];
    int64_t shape[1] = {3};
    float v[3] = {1, 2, 3};
    snprintf(path, sizeof path, "%s/plain.npy", g_dir);
    assert_int_equal(tether_npy_write(path, TETHER_FLOAT32, shape, 1, v), 0);
    assert_int_equal(tether_npy_read(path, &n), 0);
    assert_int_equal(fake_reads, 2);
    tether_npy_free(&n);
    unlink(path);
}

/* ---- .npz ---- */

static void npz_path(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", g_dir, name);
}

/* An archive written by libzip directly: members (name, .npy image or text), deflated or not. */
static void make_zip(const char *path, int n, const char *const *members, const void *const *data,
                     const size_t *len, int deflate) {
    int err = 0;
    zip_t *za = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    assert_non_null(za);
    for (int i = 0; i < n; i++) {
        zip_source_t *src = zip_source_buffer(za, data[i], len[i], 0);
        zip_int64_t idx = zip_file_add(za, members[i], src, 0);
        assert_true(idx >= 0);
        zip_set_file_compression(za, (zip_uint64_t)idx, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    }
    assert_int_equal(zip_close(za), 0);
}

/* A .npy image of `count` floats 0, 1, ... of shape [count] (malloc'd). */
static uint8_t *npy_image(int count, size_t *len) {
    char path[128];
    npz_path(path, sizeof path, "img.npy");
    float *v = malloc(sizeof(float) * (size_t)count);
    for (int i = 0; i < count; i++) {
        v[i] = (float)i;
    }
    int64_t shape[1] = {count};
    assert_int_equal(tether_npy_write(path, TETHER_FLOAT32, shape, 1, v), 0);
    free(v);
    uint8_t *buf;
    assert_int_equal(tether_file_read(path, 1 << 20, &buf, len), 0);
    unlink(path);
    return buf;
}

static void test_npz_roundtrip(void **state) {
    (void)state;
    char path[128];
    npz_path(path, sizeof path, "rt.npz");
    float f[6] = {1.5f, -2, 3, 4, 5, 6};
    int64_t i64[3] = {-1, 1LL << 40, 7};
    uint8_t u8[1] = {200};
    tether_npy arrays[3] = {
        {TETHER_FLOAT32, 2, {2, 3}, f, sizeof f},
        {TETHER_INT64, 1, {3}, i64, sizeof i64},
        {TETHER_UINT8, 0, {0}, u8, 1},
    };
    const char *names[3] = {"onnx::Gemm_0", "conv/out:0", "flag"}; /* as ONNX and TF name them */
    assert_int_equal(tether_npz_write(path, 3, names, arrays), 0);
    char got[8][TETHER_NPZ_NAME_MAX];
    int n = 0;
    if (tether_npz_list(path, got, 8, &n)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(got[i], names[i]); /* archive order = write order */
    }
    for (int i = 2; i >= 0; i--) {
        tether_npy r;
        if (tether_npz_read_member(path, names[i], &r)) {
            fail_msg("%s", tether_last_error());
        }
        assert_true(tether_dtype_equal(r.dtype, arrays[i].dtype));
        assert_int_equal(r.ndim, arrays[i].ndim);
        assert_int_equal(r.nbytes, arrays[i].nbytes);
        assert_memory_equal(r.data, arrays[i].data, r.nbytes);
        tether_npy_free(&r);
    }
    /* a name it lacks: the error lists what it has */
    tether_npy r;
    assert_int_equal(tether_npz_read_member(path, "probs", &r), TETHER_ERR_NOT_FOUND);
    assert_non_null(
        strstr(tether_last_error(), "no array 'probs' (it has: onnx::Gemm_0, conv/out:0, flag)"));
    assert_null(r.data);
    /* too small a list */
    assert_int_equal(tether_npz_list(path, got, 2, &n), TETHER_ERR_LIMIT);
    assert_int_equal(n, 0);
    unlink(path);
}

static void test_npz_write_refusals(void **state) {
    (void)state;
    char path[128];
    npz_path(path, sizeof path, "bad.npz");
    float f[2] = {1, 2};
    tether_npy a[2] = {{TETHER_FLOAT32, 1, {2}, f, sizeof f},
                       {TETHER_FLOAT32, 1, {2}, f, sizeof f}};
    const char *twice[2] = {"x", "x"}, *empty[1] = {""};
    assert_int_equal(tether_npz_write(path, 2, twice, a), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "'x' given twice"));
    assert_int_equal(tether_npz_write(path, 1, empty, a), TETHER_ERR_INVALID_ARG);
    assert_int_equal(tether_npz_write(path, 0, empty, a), TETHER_ERR_INVALID_ARG);
    /* data size disagreeing with the shape; a dtype .npy cannot hold */
    tether_npy wrong = {TETHER_FLOAT32, 1, {3}, f, sizeof f};
    const char *one[1] = {"x"};
    assert_int_equal(tether_npz_write(path, 1, one, &wrong), TETHER_ERR_INVALID_ARG);
    tether_npy vec = {{kDLFloat, 32, 2}, 1, {1}, f, 8};
    assert_int_equal(tether_npz_write(path, 1, one, &vec), TETHER_ERR_UNSUPPORTED);
    assert_int_not_equal(access(path, F_OK), 0); /* nothing was left behind */
}

static void test_npz_read_refusals(void **state) {
    (void)state;
    char path[128], names[4][TETHER_NPZ_NAME_MAX];
    int n = 0;
    tether_npy r;
    /* not a ZIP at all */
    npz_path(path, sizeof path, "text.npz");
    assert_int_equal(tether_file_write(path, "hello", 5), 0);
    assert_int_equal(tether_npz_list(path, names, 4, &n), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "not an .npz archive"));
    unlink(path);
    /* a device node is not read */
    assert_int_equal(tether_npz_list("/dev/zero", names, 4, &n), TETHER_ERR_INVALID_ARG);
    /* a member that is not .npy */
    npz_path(path, sizeof path, "mixed.npz");
    size_t ilen;
    uint8_t *img = npy_image(4, &ilen);
    const char *m1[2] = {"x.npy", "notes.txt"};
    const void *d1[2] = {img, "hi"};
    size_t l1[2] = {ilen, 2};
    make_zip(path, 2, m1, d1, l1, 0);
    assert_int_equal(tether_npz_list(path, names, 4, &n), TETHER_ERR_INVALID_ARG);
    assert_non_null(strstr(tether_last_error(), "member 'notes.txt' is not a .npy array"));
    /* a member whose .npy does not parse */
    const char *m2[1] = {"x.npy"};
    const void *d2[1] = {"\x93NUMPY junk"};
    size_t l2[1] = {11};
    make_zip(path, 1, m2, d2, l2, 0);
    assert_int_not_equal(tether_npz_read_member(path, "x", &r), 0);
    assert_non_null(strstr(tether_last_error(), "mixed.npz:x"));
    /* deflated (numpy.savez_compressed) reads the same */
    const void *d3[1] = {img};
    size_t l3[1] = {ilen};
    make_zip(path, 1, m2, d3, l3, 1);
    assert_int_equal(tether_npz_read_member(path, "x", &r), 0);
    assert_int_equal(r.nbytes, 16);
    assert_true(((float *)r.data)[3] == 3.0f);
    tether_npy_free(&r);
    /* a stored member with a flipped data byte fails its CRC */
    make_zip(path, 1, m2, d3, l3, 0);
    uint8_t *zbuf;
    size_t zlen;
    assert_int_equal(tether_file_read(path, 1 << 20, &zbuf, &zlen), 0);
    uint8_t *hit = memmem(zbuf, zlen, img + ilen - 16, 16); /* the floats 0..3 */
    assert_non_null(hit);
    hit[5] ^= 0x40;
    assert_int_equal(tether_file_write(path, zbuf, zlen), 0);
    free(zbuf);
    assert_int_not_equal(tether_npz_read_member(path, "x", &r), 0);
    assert_non_null(strstr(tether_last_error(), "cannot read the member"));
    assert_null(r.data);
    /* truncated: half the archive */
    make_zip(path, 1, m2, d3, l3, 0);
    assert_int_equal(tether_file_read(path, 1 << 20, &zbuf, &zlen), 0);
    assert_int_equal(tether_file_write(path, zbuf, zlen / 2), 0);
    free(zbuf);
    assert_int_not_equal(tether_npz_list(path, names, 4, &n), 0);
    free(img);
    unlink(path);
}

/* .npz decompression bombs (npz_bomb.c: a member inflating to a gigabyte from a megabyte): the
 * reads of bomb_reads, in a child whose address space may grow by 128 MiB at most, must each be
 * refused from the member's .npy header, before it is inflated (the old reader allocated the
 * archive's declared size and inflated it all before parsing). 0 when all were. */
static int bomb_reads(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) {
        return 1;
    }
    fclose(f);
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)128 << 20);
    if (setrlimit(RLIMIT_AS, &rl) != 0) {
        return 1;
    }
    static const struct {
        const char *file;
        int expect, status;
        const char *msg;
    } cases[] = {
        /* 1.25 GiB of float32: over TETHER_NPZ_MAX_MEMBER, nothing expected */
        {"over.npz", 0, TETHER_ERR_LIMIT,
         "over.npz:x: the array (float32 [335544320]) is 1342177280 bytes; an .npz member may "
         "hold at most 1073741824"},
        /* 512 MiB of float32 where a [2, 3] float32 input is expected */
        {"shape.npz", 1, TETHER_ERR_MISMATCH,
         "shape.npz:x: shape [134217728], but model input 'x' is [2,3]"},
        /* a header of 4 floats in front of 1 GiB of zeros, the archive telling the truth */
        {"forged.npz", 0, TETHER_ERR_INVALID_ARG,
         "forged.npz:x: the archive says the member inflates to 1073741952 bytes, but its .npy "
         "header (float32 [4]) makes it 144"},
        /* 256 MiB by the header, the archive declaring 100 bytes */
        {"small.npz", 0, TETHER_ERR_INVALID_ARG,
         "small.npz:x: the archive says the member inflates to 100 bytes, but its .npy header "
         "(float32 [67108864]) makes it 268435584"},
    };
    tether_npy_expect e = {"model input", "x", TETHER_FLOAT32, 2, {2, 3}};
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[128];
        npz_path(path, sizeof path, cases[i].file);
        tether_npy r;
        int rc = tether_npz_read_member_expect(path, "x", cases[i].expect ? &e : NULL, &r);
        if (rc != cases[i].status || !strstr(tether_last_error(), cases[i].msg) || r.data) {
            fprintf(stderr, "%s: status %d, %s\n", cases[i].file, rc, tether_last_error());
            bad = 1;
        }
        tether_npy_free(&r);
    }
    return bad;
}

static void test_npz_bombs(void **state) {
    (void)state;
    char path[128];
    /* the writer's archives are valid: a small one reads back, checked against what is expected */
    npz_path(path, sizeof path, "zeros.npz");
    assert_true(tt_write_npz_bomb(path, "x.npy", "<f4", 6, 24, UINT64_MAX) > 0);
    tether_npy r;
    tether_npy_expect e = {"model input", "x", TETHER_FLOAT32, 1, {6}};
    if (tether_npz_read_member_expect(path, "x", &e, &r)) {
        fail_msg("%s", tether_last_error());
    }
    assert_int_equal(r.nbytes, 24);
    assert_true(((float *)r.data)[5] == 0.0f);
    tether_npy_free(&r);
    e.shape[0] = 7;
    assert_int_equal(tether_npz_read_member_expect(path, "x", &e, &r), TETHER_ERR_MISMATCH);
    assert_non_null(
        strstr(tether_last_error(), "zeros.npz:x: shape [6], but model input 'x' is [7]"));
    e.dtype = TETHER_INT64;
    e.shape[0] = 6;
    assert_int_equal(tether_npz_read_member_expect(path, "x", &e, &r), TETHER_ERR_MISMATCH);
    assert_non_null(strstr(tether_last_error(), "dtype float32, but model input 'x' is int64"));
    unlink(path);
    /* the bombs: about a megabyte each */
    npz_path(path, sizeof path, "over.npz");
    assert_true(tt_write_npz_bomb(path, "x.npy", "<f4", 335544320, 1342177280, UINT64_MAX) <
                (2u << 20));
    npz_path(path, sizeof path, "shape.npz");
    assert_true(tt_write_npz_bomb(path, "x.npy", "<f4", 134217728, 536870912, UINT64_MAX) > 0);
    npz_path(path, sizeof path, "forged.npz");
    assert_true(tt_write_npz_bomb(path, "x.npy", "<f4", 4, (uint64_t)1 << 30, UINT64_MAX) > 0);
    npz_path(path, sizeof path, "small.npz");
    assert_true(tt_write_npz_bomb(path, "x.npy", "<f4", 67108864, 268435456, 100) > 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(bomb_reads());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    const char *files[4] = {"over.npz", "shape.npz", "forged.npz", "small.npz"};
    for (int i = 0; i < 4; i++) {
        npz_path(path, sizeof path, files[i]);
        unlink(path);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail_msg("the bombs were not all refused from their headers (%s %d): see above",
                 WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/tnpyXXXXXX");
    if (!mkdtemp(g_dir)) {
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),          cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_typed_data),         cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_registered_reader),  cmocka_unit_test(test_npz_roundtrip),
        cmocka_unit_test(test_npz_write_refusals), cmocka_unit_test(test_npz_read_refusals),
        cmocka_unit_test(test_npz_bombs)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char p[128];
    snprintf(p, sizeof p, "%s/rt.npy", g_dir);
    unlink(p);
    rmdir(g_dir);
    return rc;
}
