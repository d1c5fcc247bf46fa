/*
 * onnx.TensorProto -> host tensors: initializers, Constant values, and .pb test-data files.
 *
 * What must stay true: the element count implied by dims always equals the count of values
 * found (typed field, raw_data or external data), so a malformed tensor is an error naming it,
 * never a short read; that is checked BEFORE the tensor's memory is allocated, so every
 * allocation is bounded by the values actually present (dims of a few bytes cannot ask for
 * gigabytes); protobuf-c decodes with a budget (tonnx_alloc); data comes out in host byte order
 * (this code assumes a little-endian host, like the raw_data encoding).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "internal.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"
#include "tether/file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tether_onnx reads raw_data as little-endian: port the byte swaps first"
#endif

/* Files larger than this are not read (an ONNX model above 2 GiB needs external data anyway). */
#define MAX_FILE_BYTES ((size_t)2 << 30)

int tonnx_read_file(const char *path, uint8_t **out, size_t *len) {
    return tether_file_read(path, MAX_FILE_BYTES, out, len);
}

/* ---- the decoding allocator (internal.h) ---- */

/* Each block carries its size in front, so free can give the budget back. */
typedef union block_head {
    size_t size;
    max_align_t align;
} block_head;

static void *budget_alloc(void *data, size_t size) {
    tonnx_alloc *a = data;
    if (size > a->limit - a->used || size > SIZE_MAX - sizeof(block_head)) {
        a->over = true;
        return NULL;
    }
    block_head *h = malloc(sizeof *h + size);
    if (!h) {
        return NULL;
    }
    h->size = size;
    a->used += size;
    return h + 1;
}

static void budget_free(void *data, void *p) {
    tonnx_alloc *a = data;
    if (p) {
        block_head *h = (block_head *)p - 1;
        a->used -= h->size;
        free(h);
    }
}

void tonnx_alloc_init(tonnx_alloc *a, size_t len) {
    memset(a, 0, sizeof *a);
    a->pb.alloc = budget_alloc;
    a->pb.free = budget_free;
    a->pb.allocator_data = a;
    a->limit = len > (SIZE_MAX - ((size_t)4 << 20)) / 64 ? SIZE_MAX : TONNX_DECODE_BUDGET(len);
}

const char *tonnx_dtype_name(int32_t t, char *buf, size_t n) {
    static const char *const names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                        "int16",      "int32",   "int64",  "string", "bool",
                                        "float16",    "double",  "uint32", "uint64", "complex64",
                                        "complex128", "bfloat16"};
    if (t >= 0 && (size_t)t < sizeof names / sizeof *names) {
        return names[t];
    }
    snprintf(buf, n, "%d", (int)t);
    return buf;
}

/* Element dtype and size in host memory for an ONNX data type; 0 when unsupported. */
static int host_type(int32_t t, DLDataType *dt) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        *dt = (DLDataType){kDLFloat, 32, 1};
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        *dt = (DLDataType){kDLFloat, 64, 1};
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        *dt = (DLDataType){kDLInt, 8, 1};
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        *dt = (DLDataType){kDLUInt, 8, 1};
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
        *dt = (DLDataType){kDLInt, 16, 1};
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
        *dt = (DLDataType){kDLUInt, 16, 1};
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        *dt = (DLDataType){kDLInt, 32, 1};
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        *dt = (DLDataType){kDLUInt, 32, 1};
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        *dt = (DLDataType){kDLInt, 64, 1};
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        *dt = (DLDataType){kDLUInt, 64, 1};
        return 8;
    default:
        return 0;
    }
}

/* Bytes per element in raw_data (differs from the host size for float16/bfloat16). */
static size_t raw_size(int32_t t, size_t host) {
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
                   t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16
               ? 2
               : host;
}

float tonnx_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp - 15 + 127) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

float tonnx_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Stores element i (given as a 64-bit integer or a double) into host data of dtype dt. */
static void store_int(void *data, DLDataType dt, size_t i, int64_t v) {
    switch (dt.bits) {
    case 1: /* bool, one byte (values checked by the caller) */
    case 8:
        ((uint8_t *)data)[i] = (uint8_t)v;
        break;
    case 16:
        ((uint16_t *)data)[i] = (uint16_t)v;
        break;
    case 32:
        ((uint32_t *)data)[i] = (uint32_t)v;
        break;
    default:
        ((uint64_t *)data)[i] = (uint64_t)v;
        break;
    }
}

/* Reads a tensor's external data (location relative to base_dir). The bytes are read only when
 * there are exactly `need` of them (the tensor's elements): otherwise *out is NULL and *len
 * says how many there are, for the caller's message, and nothing is allocated. */
static int read_external(const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                         size_t need, uint8_t **out, size_t *len) {
    const char *loc = NULL;
    long long off = 0, length = -1;
    *out = NULL;
    *len = 0;
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";
        char *end;
        if (strcmp(k, "location") == 0) {
            loc = v;
        } else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
            errno = 0;
            long long x = strtoll(v, &end, 10);
            if (errno || *end || end == v || x < 0) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "tensor '%s': external data %s '%s' is not a number", what,
                                        k, v);
            }
            if (k[0] == 'o') {
                off = x;
            } else {
                length = x;
            }
        }
    }
    if (!base_dir) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "tensor '%s': external data is only read for model files", what);
    }
    if (!loc || !loc[0] || loc[0] == '/' || strstr(loc, "..")) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tensor '%s': external data location '%s' must be a relative "
                                "path without '..'",
                                what, loc ? loc : "");
    }
    char path[2048], real_base[PATH_MAX], real_path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", base_dir, loc);
    /* the data must be a regular file inside the model's directory: symbolic links that lead
     * elsewhere, FIFOs and devices (which could block or never end) are refused */
    if (!realpath(base_dir, real_base) || !realpath(path, real_path)) {
        return tether_set_error(TETHER_ERR_IO, "tensor '%s': cannot open external data %s: %s",
                                what, path, strerror(errno));
    }
    size_t bl = strlen(real_base);
    if (strncmp(real_path, real_base, bl) != 0 || (real_path[bl] != '/' && bl > 1)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tensor '%s': external data %s resolves to %s, outside the "
                                "model's directory",
                                what, path, real_path);
    }
    int fd = open(real_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        return tether_set_error(TETHER_ERR_IO, "tensor '%s': cannot open external data %s: %s",
                                what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tensor '%s': external data %s is not a regular file", what, path);
    }
    long long size = (long long)st.st_size;
    if (off > size || (length >= 0 && length > size - off)) {
        close(fd);
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tensor '%s': external data [%lld, +%lld) lies outside %s (%lld "
                                "bytes)",
                                what, off, length, path, size);
    }
    size_t n = (size_t)(length >= 0 ? length : size - off);
    *len = n;
    if (n != need) { /* the caller says what is wrong; nothing is read for a wrong size */
        close(fd);
        return TETHER_OK;
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tensor '%s': out of memory", what);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + (long long)got));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            free(buf);
            close(fd);
            return tether_set_error(TETHER_ERR_IO, "tensor '%s': cannot read external data %s",
                                    what, path);
        }
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    return TETHER_OK;
}

/* Values in the typed field of data type t (int32_data for the small integer types). */
static size_t typed_count(const Onnx__TensorProto *tp, int32_t t) {
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return tp->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return tp->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return tp->n_int64_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
        return tp->n_uint64_data;
    default: /* int8/16/32, uint8/16, bool, float16, bfloat16 */
        return tp->n_int32_data;
    }
}

/* Copies count values of the typed field into host data of dtype dt (float16/bfloat16 as their
 * 16-bit patterns when dt has 16 bits, else widened to float32). */
static void copy_typed(const Onnx__TensorProto *tp, int32_t t, DLDataType dt, size_t count,
                       void *data) {
    for (size_t i = 0; i < count; i++) {
        switch (t) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
            ((float *)data)[i] = tp->float_data[i];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
            ((double *)data)[i] = tp->double_data[i];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
            ((int64_t *)data)[i] = tp->int64_data[i];
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
            store_int(data, dt, i, (int64_t)tp->uint64_data[i]);
            break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: {
            uint16_t h = (uint16_t)tp->int32_data[i];
            if (dt.bits == 16) {
                ((uint16_t *)data)[i] = h;
            } else {
                ((float *)data)[i] = t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
                                         ? tonnx_half_to_float(h)
                                         : tonnx_bf16_to_float(h);
            }
            break;
        }
        default:
            store_int(data, dt, i, tp->int32_data[i]);
            break;
        }
    }
}

/* The values of the typed field of a float16/bfloat16/bool tensor that its storage type cannot
 * hold (int32_data is a 16-bit pattern, or 0/1): an error naming the first, for the exact
 * reader, which would otherwise keep only some of the bits. */
static int check_typed_range(const Onnx__TensorProto *tp, int32_t t, const char *what) {
    int32_t hi = t == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? 1 : 0xffff;
    if (t != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL && t != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
        t != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16) {
        return TETHER_OK;
    }
    for (size_t i = 0; i < tp->n_int32_data; i++) {
        if (tp->int32_data[i] < 0 || tp->int32_data[i] > hi) {
            char tn[32];
            return tether_set_error(
                TETHER_ERR_INVALID_ARG, "tensor '%s': int32_data[%zu] is %ld, not a %s value (%s)",
                what, i, (long)tp->int32_data[i], tonnx_dtype_name(t, tn, sizeof tn),
                hi == 1 ? "0 or 1" : "a 16-bit pattern 0..65535");
        }
    }
    return TETHER_OK;
}

int tonnx_tensor_from_proto(const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                            tether_onnx_tensor *out) {
    return tonnx_tensor_from_proto_as(tp, what, base_dir, false, out);
}

int tonnx_tensor_from_proto_as(const Onnx__TensorProto *tp, const char *what, const char *base_dir,
                               bool exact, tether_onnx_tensor *out) {
    memset(out, 0, sizeof *out);
    char tn[32];
    snprintf(out->name, sizeof out->name, "%s", tp->name ? tp->name : "");
    if (tp->segment) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "tensor '%s': segmented tensors", what);
    }
    int32_t t = tp->has_data_type ? tp->data_type : 0;
    size_t esize = (size_t)host_type(t, &out->dtype);
    if (!esize) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "tensor '%s': element type %s is not supported%s", what,
                                tonnx_dtype_name(t, tn, sizeof tn),
                                t == ONNX__TENSOR_PROTO__DATA_TYPE__STRING
                                    ? " (tether has no string tensors: strings are refused)"
                                    : "");
    }
    if (exact && (t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
                  t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16 ||
                  t == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)) {
        /* storage as the model has it: the half/bfloat16 bit patterns, bool one byte 0/1 */
        tonnx_onnx_dtype(t, &out->dtype);
        esize = t == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? 1 : 2;
        int rc = check_typed_range(tp, t, what);
        if (rc) {
            return rc;
        }
    }
    if (tp->n_dims > TETHER_IR_MAX_NDIM) {
        return tether_set_error(TETHER_ERR_LIMIT, "tensor '%s': %zu dimensions (at most %d)", what,
                                tp->n_dims, TETHER_IR_MAX_NDIM);
    }
    size_t count = 1;
    out->ndim = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0 || d > INT32_MAX || (d && count > (size_t)INT32_MAX / (size_t)d)) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "tensor '%s': dimension %zu is %lld (negative or the tensor "
                                    "exceeds 2^31-1 elements)",
                                    what, i, (long long)d);
        }
        out->shape[i] = d;
        count *= (size_t)d;
    }
    /* the values present (raw_data, external data or the typed field) must be exactly the
     * elements the dims ask for, checked BEFORE anything is allocated for them: dims alone are a
     * few bytes of the file and may ask for gigabytes */
    size_t rs = raw_size(t, esize);
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    uint8_t *ext = NULL;
    int is_ext =
        tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    bool bytes = is_ext || tp->has_raw_data;
    if (is_ext) {
        int rc = read_external(tp, what, base_dir, count * rs, &ext, &raw_len);
        if (rc) {
            return rc;
        }
        raw = ext;
    } else if (tp->has_raw_data) {
        raw = tp->raw_data.data;
        raw_len = tp->raw_data.len;
    }
    size_t have = bytes ? (raw_len % rs ? (size_t)-1 : raw_len / rs) : typed_count(tp, t);
    if (have != count) {
        free(ext);
        char shape[160] = "";
        for (int i = 0; i < out->ndim && strlen(shape) < 120; i++) {
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", i ? "," : "",
                     (long long)out->shape[i]);
        }
        if (have == (size_t)-1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "tensor '%s': %s data of %zu bytes is not a whole number of "
                                    "%s elements",
                                    what, is_ext ? "external" : "raw", raw_len,
                                    tonnx_dtype_name(t, tn, sizeof tn));
        }
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "tensor '%s': %zu values for shape [%s] (%zu elements)", what, have,
                                shape, count);
    }
    out->nbytes = count * esize;
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        free(ext);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tensor '%s': out of memory", what);
    }
    if (!bytes) {
        copy_typed(tp, t, out->dtype, count, out->data);
    } else if (rs == esize) {
        if (count) {
            memcpy(out->data, raw, out->nbytes);
        }
    } else {
        for (size_t i = 0; i < count; i++) {
            uint16_t h = (uint16_t)(raw[2 * i] | (raw[2 * i + 1] << 8));
            /* float16/bfloat16 widened to float32 (the importer's constants) */
            ((float *)out->data)[i] = t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16
                                          ? tonnx_half_to_float(h)
                                          : tonnx_bf16_to_float(h);
        }
    }
    free(ext);
    if (exact && t == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
        const uint8_t *b = out->data;
        for (size_t i = 0; i < count; i++) {
            if (b[i] > 1) {
                unsigned v = b[i];
                tether_onnx_tensor_free(out);
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "tensor '%s': bool element %zu is %u (bool data is 0 or 1)",
                                        what, i, v);
            }
        }
    }
    return TETHER_OK;
}

int tether_onnx_tensor_parse(const void *buf, size_t len, const char *what,
                             tether_onnx_tensor *out) {
    memset(out, 0, sizeof *out);
    int rc = tonnx_wire_check(buf, len, what, TONNX_TENSOR);
    if (rc) {
        return rc;
    }
    tonnx_alloc al;
    tonnx_alloc_init(&al, len);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&al.pb, len, buf);
    if (!tp) {
        if (al.over) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "%s: not a valid ONNX TensorProto: decoding its %zu bytes "
                                    "would take more than %zu bytes of memory",
                                    what, len, al.limit);
        }
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: not a valid ONNX TensorProto (protobuf decoding failed)",
                                what);
    }
    rc = tonnx_tensor_from_proto_as(tp, tp->name && tp->name[0] ? tp->name : "(unnamed)", NULL,
                                    true, out);
    onnx__tensor_proto__free_unpacked(tp, &al.pb);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(rc, "%s: %s", what, msg);
    }
    return TETHER_OK;
}

int tether_onnx_tensor_read(const char *path, tether_onnx_tensor *out) {
    memset(out, 0, sizeof *out);
    uint8_t *buf;
    size_t len;
    int rc = tonnx_read_file(path, &buf, &len);
    if (rc) {
        return rc;
    }
    rc = tether_onnx_tensor_parse(buf, len, path, out);
    free(buf);
    return rc;
}

void tether_onnx_tensor_free(tether_onnx_tensor *t) {
    if (t) {
        free(t->data);
        t->data = NULL;
        t->nbytes = 0;
    }
}

tether_model_value tether_onnx_tensor_value(const tether_onnx_tensor *t) {
    tether_model_value v;
    memset(&v, 0, sizeof v);
    v.dtype = t->dtype;
    v.ndim = t->ndim;
    memcpy(v.shape, t->shape, sizeof v.shape);
    v.data = t->data;
    v.nbytes = t->nbytes;
    return v;
}
