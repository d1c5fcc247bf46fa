/*
 * tether rpc tests: both message codecs against the shared test vectors (exact bytes, both
 * directions, cross-decoding), plus every decode/encode error the spec names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vectors.h"

static unsigned char expect[8192];
static unsigned char out[8192];

typedef int (*enc_fn)(const tether_rpc_msg *, void *, size_t, size_t *);
typedef int (*dec_fn)(const void *, size_t, tether_rpc_msg *);

/* The decoders under test accept kernel sequences (their steps go to this storage). */
static tether_rpc_seq_storage seq_storage;
static int tiny_dec(const void *b, size_t n, tether_rpc_msg *m) {
    return tether_rpc_tiny_decode_seq(b, n, m, &seq_storage);
}
static int mpc_dec(const void *b, size_t n, tether_rpc_msg *m) {
    return tether_rpc_msgpack_decode_seq(b, n, m, &seq_storage);
}

static const enc_fn encoders[2] = {tether_rpc_tiny_encode, tether_rpc_msgpack_encode};
static const dec_fn decoders[2] = {tiny_dec, mpc_dec};
static const dec_fn plain_decoders[2] = {tether_rpc_tiny_decode, tether_rpc_msgpack_decode};
static const char *const codec_names[2] = {"tiny", "msgpack-c"};

/* Every vector: each encoder produces exactly the expected bytes. */
static void test_vectors_encode(void **state) {
    (void)state;
    for (size_t i = 0; i < rpc_vector_count; i++) {
        tether_rpc_msg m;
        memset(&m, 0, sizeof m);
        rpc_vectors[i].build(&m);
        long n = hex_decode(rpc_vectors[i].hex, expect, sizeof expect);
        assert_true(n > 0);
        for (int c = 0; c < 2; c++) {
            size_t len = 0;
            int rc = encoders[c](&m, out, sizeof out, &len);
            if (rc) {
                fail_msg("%s encode of %s: %s", codec_names[c], rpc_vectors[i].name,
                         tether_last_error());
            }
            if ((size_t)n != len || memcmp(out, expect, len) != 0) {
                char hex[16400];
                hex_encode(out, len, hex);
                fail_msg("%s encode of %s gave %s", codec_names[c], rpc_vectors[i].name, hex);
            }
        }
    }
}

/* Every vector: tether_rpc_encode_split's head followed by its tail is exactly the tiny
 * encoding, and only a message that ends in its bulk data (COPY_TO, UPLOAD_CHUNK, the COPY_FROM
 * reply) has a tail, which points into the message's own data (not copied). */
static void split_one(const tether_rpc_msg *m, int *with_tail) {
    size_t len = 0, head_len = 0, tail_len = 0;
    const uint8_t *tail = NULL;
    assert_int_equal(tether_rpc_tiny_encode(m, expect, sizeof expect, &len), 0);
    if (tether_rpc_encode_split(m, out, sizeof out, &head_len, &tail, &tail_len)) {
        fail_msg("split encode of type %u: %s", (unsigned)m->type, tether_last_error());
    }
    assert_int_equal(head_len + tail_len, len);
    assert_memory_equal(out, expect, head_len);
    if (tail_len) {
        (*with_tail)++;
        assert_memory_equal(tail, expect + head_len, tail_len);
        const void *data = m->type == TETHER_RPC_COPY_TO        ? m->u.copy_to_req.data.ptr
                           : m->type == TETHER_RPC_UPLOAD_CHUNK ? m->u.upload_chunk_req.data.ptr
                                                                : m->u.copy_from_rep.data.ptr;
        assert_ptr_equal(tail, data); /* sent from where it is */
    }
}

/* tether_rpc_encode_split's head followed by its tail is exactly the tiny encoding, for every
 * vector and for each message that ends in bulk data (COPY_TO, UPLOAD_CHUNK, the COPY_FROM
 * reply) with each size of bin header; only those have a tail, and it is their own data. */
static void test_vectors_encode_split(void **state) {
    (void)state;
    int with_tail = 0;
    for (size_t i = 0; i < rpc_vector_count; i++) {
        tether_rpc_msg m;
        memset(&m, 0, sizeof m);
        rpc_vectors[i].build(&m);
        split_one(&m, &with_tail);
    }
    static uint8_t data[5000];
    for (size_t i = 0; i < sizeof data; i++) {
        data[i] = (uint8_t)(i * 13 + 1);
    }
    const uint32_t sizes[] = {0, 15, 16, 200, 255, 256, 4000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        tether_rpc_msg m;
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_COPY_TO;
        m.id = 70000;
        m.u.copy_to_req.array = 3;
        m.u.copy_to_req.offset = 1u << 20;
        m.u.copy_to_req.data.ptr = data;
        m.u.copy_to_req.data.len = sizes[s];
        split_one(&m, &with_tail);
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_UPLOAD_CHUNK;
        m.id = 5;
        m.u.upload_chunk_req.upload_id = 2;
        m.u.upload_chunk_req.offset = 300;
        m.u.upload_chunk_req.data.ptr = data + 1;
        m.u.upload_chunk_req.data.len = sizes[s];
        split_one(&m, &with_tail);
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY;
        m.id = 6;
        m.u.copy_from_rep.data.ptr = data + 2;
        m.u.copy_from_rep.data.len = sizes[s];
        split_one(&m, &with_tail);
    }
    assert_int_equal(with_tail, 3 * 5); /* every size from 16 up is split */
    /* the head alone must fit: a buffer too small for it is an error, not a short write */
    tether_rpc_msg m;
    memset(&m, 0, sizeof m);
    m.type = TETHER_RPC_COPY_TO;
    m.id = 9;
    m.u.copy_to_req.array = 1;
    m.u.copy_to_req.data.ptr = data;
    m.u.copy_to_req.data.len = 4000;
    size_t head_len, tail_len;
    const uint8_t *tail;
    assert_int_equal(tether_rpc_encode_split(&m, out, 4, &head_len, &tail, &tail_len),
                     TETHER_ERR_LIMIT);
    assert_int_equal(tether_rpc_encode_split(&m, out, 64, &head_len, &tail, &tail_len), 0);
    assert_int_equal(tail_len, 4000);
    assert_ptr_equal(tail, data);
}

/* Every vector: each decoder accepts the expected bytes and yields the built message; the
 * decoded message re-encodes (with the other codec) to the same bytes. */
static void test_vectors_decode(void **state) {
    (void)state;
    for (size_t i = 0; i < rpc_vector_count; i++) {
        tether_rpc_msg want, got;
        memset(&want, 0, sizeof want);
        rpc_vectors[i].build(&want);
        long n = hex_decode(rpc_vectors[i].hex, expect, sizeof expect);
        for (int c = 0; c < 2; c++) {
            memset(&got, 0xa5, sizeof got);
            int rc = decoders[c](expect, (size_t)n, &got);
            if (rc) {
                fail_msg("%s decode of %s: %s", codec_names[c], rpc_vectors[i].name,
                         tether_last_error());
            }
            if (!rpc_msg_equal(&want, &got)) {
                fail_msg("%s decode of %s differs from the built message", codec_names[c],
                         rpc_vectors[i].name);
            }
            size_t len;
            assert_int_equal(encoders[1 - c](&got, out, sizeof out, &len), 0);
            assert_int_equal(len, (size_t)n);
            assert_memory_equal(out, expect, len);
            uint32_t type, id;
            assert_int_equal(tether_rpc_peek_header(expect, (size_t)n, &type, &id), 0);
            assert_int_equal(type, want.type);
            assert_int_equal(id, want.id);
        }
    }
}

/* Decoders accept non-canonical encodings: a HELLO with uint32 / uint64 forms and float32. */
static void test_decode_noncanonical(void **state) {
    (void)state;
    /* [1, 1, 1, 1048576, "host"] with type as uint8, id as uint64, version as uint16 */
    long n =
        hex_decode("95cc01cf0000000000000001cd0001ce00100000d904686f7374", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.type, TETHER_RPC_HELLO);
        assert_int_equal(m.id, 1);
        assert_int_equal(m.u.hello_req.version, 1);
        assert_true(tether_rpc_str_eq(m.u.hello_req.client, "host"));
    }
    /* TIME reply with float32 seconds: [0x4d, 14, 16, false, [0.5f]] */
    n = hex_decode("954d0e10c291ca3f000000", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.time_rep.repeat, 1);
        assert_true(m.u.time_rep.seconds[0] == 0.5);
    }
    /* optional trailing fields (docs/rpc.md) may be absent: a HELLO reply with the 17 original
     * fields and a CALL reply with 3 decode with board "" / sizes 0 / ret_value null */
    n = hex_decode("dc0013410101b27468756d6276376d2d6e6f6e652d65616269a9636f727465782d6d33c320cd02"
                   "0001ce017d78400192a47372616da46472616dc20000ce20010000ce00010000c2c400",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.hello_rep.load_addr, 0x20010000);
        assert_int_equal(m.u.hello_rep.board.len, 0);
        assert_non_null(m.u.hello_rep.board.ptr);
        assert_int_equal(m.u.hello_rep.ram_size, 0);
        assert_int_equal(m.u.hello_rep.boot_count, 0);
        assert_int_equal(m.u.hello_rep.exports_id, 0);
    }
    /* ... and a HELLO reply carrying only the first optional field (board) */
    n = hex_decode("dc0014410101b27468756d6276376d2d6e6f6e652d65616269a9636f727465782d6d33c320cd02"
                   "0001ce017d78400192a47372616da46472616dc20000ce20010000ce00010000c2c400a3616263",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_true(tether_rpc_str_eq(m.u.hello_rep.board, "abc"));
        assert_int_equal(m.u.hello_rep.heap_size, 0);
    }
    /* ... and one of a device from before pool_sizes (25 fields): every pool size reads 0 */
    n = hex_decode("dc001b410101b27468756d6276376d2d6e6f6e652d65616269a9636f727465782d6d33c320cd"
                   "020001ce017d78400192a47372616da46472616dc20000ce20010000ce00010000c3c4200102"
                   "030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20aa6d7073322d616e"
                   "333835ce00070400ce00040000cd3fe003ce1234abcda97838362d36342d7633a86176783220"
                   "666d61",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.hello_rep.num_pools, 2);
        assert_int_equal(m.u.hello_rep.pool_sizes[0], 0);
        assert_int_equal(m.u.hello_rep.pool_sizes[1], 0);
        assert_true(tether_rpc_str_eq(m.u.hello_rep.cpu_features, "avx2 fma"));
    }
    /* ... and one of a device from before the OpenCL work limits (29 fields): they read 0 */
    n = hex_decode("dc001d410101b27468756d6276376d2d6e6f6e652d65616269a9636f727465782d6d33c320cd"
                   "020001ce017d78400192a47372616da46472616dc20000ce20010000ce00010000c3c4200102"
                   "030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20aa6d7073322d616e"
                   "333835ce00070400ce00040000cd3fe003ce1234abcda97838362d36342d7633a86176783220"
                   "666d6192ce000400000001",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.hello_rep.link, 1);
        assert_int_equal(m.u.hello_rep.pool_sizes[0], 262144);
        assert_int_equal(m.u.hello_rep.cl_max_work_group_size, 0);
        assert_int_equal(m.u.hello_rep.cl_wg_multiple, 0);
        assert_int_equal(m.u.hello_rep.cl_local_mem_size, 0);
        assert_int_equal(m.u.hello_rep.cl_compute_units, 0);
        assert_int_equal(m.u.hello_rep.cl_features, 0);
    }
    /* sequence requests of a client from before the flags (no `flags`): every step profiled */
    n = hex_decode("931114929505009392070292070392001091cd04009140950600939207039201019202cb3fe0"
                   "00000000000092080490",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.seq_req.num_steps, 2);
        assert_int_equal(m.u.seq_req.flags, 0);
    }
    n = hex_decode("97121591950600939207039201019202cb3fe0000000000000920804900a036400", expect,
                   sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.seq_req.number, 10);
        assert_int_equal(m.u.seq_req.cooldown_ms, 0);
        assert_int_equal(m.u.seq_req.flags, 0);
    }
    /* a TIME_SEQ asking for no profiling, as a new client sends it */
    n = hex_decode("98121591950600939207039201019202cb3fe0000000000000920804900a03640001", expect,
                   sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.seq_req.flags, TETHER_RPC_SEQ_NO_PROFILE);
    }
    /* sequence replies of a device from before the wall clock: wall_ns / wall_seconds read 0 */
    n = hex_decode("945114cd0bb892cd03e8cd07d0", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.launch_seq_rep.step_ns[1], 2000);
        assert_int_equal(m.u.launch_seq_rep.wall_ns, 0);
    }
    n = hex_decode("9652150ac292cb3fe0000000000000cb3fd000000000000092cb3fc0000000000000cb3fd80000"
                   "00000000",
                   expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.time_seq_rep.num_steps, 2);
        assert_true(m.u.time_seq_rep.wall_seconds == 0.0);
    }
    n = hex_decode("954c0c00ce0001e240cd04b0", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.call_rep.stack_bytes, 1200);
        assert_int_equal(m.u.call_rep.ret_value.type_code, TETHER_TYPE_NULL);
    }
    /* an UPLOAD reply of a device without the upload cache (no `cached`): not cached */
    n = hex_decode("93430307", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.upload_rep.upload_id, 7);
        assert_false(m.u.upload_rep.cached);
    }
    /* extra trailing field in the message array is ignored: COPY_TO reply + "x" */
    n = hex_decode("944a0a05a178", expect, sizeof expect);
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, (size_t)n, &m), 0);
        assert_int_equal(m.u.copy_to_rep.written, 5);
    }
}

/* Malformed input: both decoders reject with the same status. */
static void test_decode_errors(void **state) {
    (void)state;
    static const struct {
        const char *hex;
        int status;
        const char *why;
    } bad[] = {
        {"", TETHER_ERR_PROTOCOL, "empty"},
        {"c0", TETHER_ERR_PROTOCOL, "not an array"},
        {"91", TETHER_ERR_PROTOCOL, "array shorter than its count"},
        {"9101", TETHER_ERR_PROTOCOL, "no id"},
        {"923001", TETHER_ERR_PROTOCOL, "unknown type 48"},
        {"925001", TETHER_ERR_PROTOCOL, "reply of LOG"},
        {"92ce0000000101", TETHER_ERR_PROTOCOL, "type above 32 bits"},
        {"9401cf000000010000000101ce00100000", TETHER_ERR_PROTOCOL, "id above 32 bits"},
        {"94010101ce00100000", TETHER_ERR_PROTOCOL, "HELLO missing the client field"},
        {"95010101ce00100000c0", TETHER_ERR_PROTOCOL, "client is nil"},
        {"95010101cd0010a4686f7374", TETHER_ERR_LIMIT, "max_frame 16 below minimum"},
        {"95010101ce00100000a4686f73", TETHER_ERR_PROTOCOL, "string runs past the end"},
        {"95010101ce00100000a4686f737400", TETHER_ERR_PROTOCOL, "trailing byte"},
        {"95010101ce00100000a4686f0074", TETHER_ERR_PROTOCOL, "NUL inside a string"},
        {"930000", TETHER_ERR_PROTOCOL, "request id 0"},
        {"92100a", TETHER_ERR_PROTOCOL, "LOG without fields"},
        {"94100a02a0", TETHER_ERR_PROTOCOL, "LOG with id"},
        {"94101002a0", TETHER_ERR_PROTOCOL, "LOG id 16"},
        {"947f0c05a0", TETHER_ERR_PROTOCOL, "ERROR with positive code"},
        {"944c0c0000", TETHER_ERR_PROTOCOL, "CALL reply missing stack_bytes"},
        {"964c0c000000920ba178", TETHER_ERR_PROTOCOL, "CALL reply returning a string"},
        {"964c0c000000920701", TETHER_ERR_PROTOCOL, "CALL reply returning a DLTensor"},
        {"964c0c0000009100", TETHER_ERR_PROTOCOL, "CALL reply ret_value of one element"},
        {"964c0c000000c0", TETHER_ERR_PROTOCOL, "CALL reply ret_value nil"},
        /* ALLOC with 9 dimensions */
        {"9608089901010101010101010193022001"
         "00a0",
         TETHER_ERR_LIMIT, "ndim 9"},
        /* ALLOC negative extent */
        {"96080891ff9302200100a0", TETHER_ERR_PROTOCOL, "negative extent"},
        /* ALLOC scope 3 */
        {"960808910193022001"
         "03a0",
         TETHER_ERR_PROTOCOL, "unknown scope"},
        /* ALLOC dtype with two elements */
        {"9608089101920220"
         "00a0",
         TETHER_ERR_PROTOCOL, "dtype short"},
        /* CALL arg with type code 9 */
        {"970c0c0500919209009090", TETHER_ERR_PROTOCOL, "unsupported arg type"},
        /* CALL abi 2 */
        {"970c0c0502909090", TETHER_ERR_PROTOCOL, "abi 2"},
        /* CALL 4 work dims */
        {"970c0c050090940101010190", TETHER_ERR_LIMIT, "4 work dims"},
        /* CALL local count differs from global */
        {"970c0c050090920101"
         "9101",
         TETHER_ERR_PROTOCOL, "local/global mismatch"},
        /* CALL global size 0 */
        {"970c0c0500909100"
         "90",
         TETHER_ERR_PROTOCOL, "global 0"},
        /* TIME repeat 33 */
        {"9b0d0e05019090900a2164"
         "00",
         TETHER_ERR_LIMIT, "repeat 33"},
        /* TIME number 0 */
        {"9b0d0e0501909090000364"
         "00",
         TETHER_ERR_PROTOCOL, "number 0"},
        /* AUTH mac of 3 bytes */
        {"930202c403010203", TETHER_ERR_PROTOCOL, "short mac"},
        /* UPLOAD kind 3 */
        {"96030303a178cd012cc420"
         "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
         TETHER_ERR_PROTOCOL, "upload kind"},
        /* UPLOAD size 0 */
        {"96030300a17800c420"
         "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
         TETHER_ERR_LIMIT, "upload size 0"},
        /* ext type inside */
        {"93090ad40100", TETHER_ERR_PROTOCOL, "ext value"},
        /* reserved byte c1 */
        {"93090ac1", TETHER_ERR_PROTOCOL, "reserved byte"},
        /* array32 count far larger than the input */
        {"dd7fffffff0909", TETHER_ERR_PROTOCOL, "huge array count"},
        /* LAUNCH_SEQ without steps */
        {"93111490", TETHER_ERR_PROTOCOL, "no steps"},
        /* LAUNCH_SEQ with a flag bit nobody defined (2) */
        {"941114919505009091109002", TETHER_ERR_PROTOCOL, "unknown seq flags"},
        /* the same with flags 1 (no profiling) is fine: checked in test_vectors */
        /* LAUNCH_SEQ whose step is not an array */
        {"93111491c0", TETHER_ERR_PROTOCOL, "step nil"},
        /* LAUNCH_SEQ step with 4 elements */
        {"931114919405009091"
         "10",
         TETHER_ERR_PROTOCOL, "step of 4 elements"},
        /* LAUNCH_SEQ step without work dimensions (a CPU call) */
        {"9311149195050090"
         "9090",
         TETHER_ERR_PROTOCOL, "step without global"},
        /* LAUNCH_SEQ second step with local 0 */
        {"93111492950500909110909505009091109100", TETHER_ERR_PROTOCOL, "local 0 in step 1"},
        /* LAUNCH_SEQ step with an unsupported arg type */
        {"93111491950500919209009110"
         "90",
         TETHER_ERR_PROTOCOL, "arg type 9 in a step"},
        /* LAUNCH_SEQ step with abi 2 */
        {"9311149195050291"
         "10"
         "9110"
         "90",
         TETHER_ERR_PROTOCOL, "abi 2 in a step"},
        /* LAUNCH_SEQ reply missing step_ns */
        {"935114cd0bb8", TETHER_ERR_PROTOCOL, "LAUNCH_SEQ reply short"},
        /* LAUNCH_SEQ reply with a negative step time */
        {"945114cd0bb891ff", TETHER_ERR_PROTOCOL, "negative step time"},
        /* TIME_SEQ repeat 33 */
        {"97121591950600909108900a2164"
         "00",
         TETHER_ERR_LIMIT, "TIME_SEQ repeat 33"},
        /* TIME_SEQ number 0 */
        {"971215919506009091089000036400", TETHER_ERR_PROTOCOL, "TIME_SEQ number 0"},
        /* TIME_SEQ missing cooldown */
        {"9612159195060090910890"
         "0a0364",
         TETHER_ERR_PROTOCOL, "TIME_SEQ short"},
        /* TIME_SEQ reply without step_seconds */
        {"9552150ac290", TETHER_ERR_PROTOCOL, "TIME_SEQ reply short"},
        /* uint where bool expected: UPLOAD_CHUNK reply complete = 1 */
        {"94440405"
         "01",
         TETHER_ERR_PROTOCOL, "bool expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long n = hex_decode(bad[i].hex, expect, sizeof expect);
        assert_true(n >= 0);
        /* what the structural pass (one value, nesting <= 16) says of it, if it fails */
        char pass[TETHER_ERROR_MSG_MAX] = "";
        tether_mp_reader r;
        tether_mp_reader_init(&r, expect, (size_t)n);
        tether_clear_error();
        if (tether_mp_skip(&r) != 0) {
            snprintf(pass, sizeof pass, "%s", tether_last_error());
        } else if (r.pos != (size_t)n) {
            snprintf(pass, sizeof pass, "%zu bytes after the end of the message",
                     (size_t)n - r.pos);
        }
        for (int c = 0; c < 2; c++) {
            tether_rpc_msg m;
            tether_clear_error();
            int rc = decoders[c](expect, (size_t)n, &m);
            if (rc != bad[i].status) {
                fail_msg("%s decode of '%s' (%s) returned %d, expected %d (%s)", codec_names[c],
                         bad[i].hex, bad[i].why, rc, bad[i].status, tether_last_error());
            }
            assert_true(strlen(tether_last_error()) > 0);
            /* the tiny codec runs the schema first and the pass only when needed, yet reports
             * the pass's error whenever the pass fails, as if it had run first */
            if (c == 0 && pass[0] && strcmp(pass, tether_last_error()) != 0) {
                fail_msg("'%s' (%s): the pass says '%s', the tiny decoder '%s'", bad[i].hex,
                         bad[i].why, pass, tether_last_error());
            }
        }
    }
}

/* Builds an encoded LAUNCH_SEQ (id 7) of `steps` steps with `args` int arguments each. */
static size_t seq_bytes(uint32_t steps, uint32_t args, unsigned char *buf) {
    size_t n = 0;
    buf[n++] = 0x93;
    buf[n++] = 0x11;
    buf[n++] = 0x07;
    buf[n++] = 0xdc; /* array16 */
    buf[n++] = (unsigned char)(steps >> 8);
    buf[n++] = (unsigned char)steps;
    for (uint32_t k = 0; k < steps; k++) {
        buf[n++] = 0x95;
        buf[n++] = 0x05;
        buf[n++] = 0x00;
        buf[n++] = 0xdc;
        buf[n++] = (unsigned char)(args >> 8);
        buf[n++] = (unsigned char)args;
        for (uint32_t i = 0; i < args; i++) {
            buf[n++] = 0x92;
            buf[n++] = 0x00;
            buf[n++] = 0x01;
        }
        buf[n++] = 0x91;
        buf[n++] = 0x10;
        buf[n++] = 0x90;
    }
    return n;
}

/* Sequence limits (128 steps, 1024 arguments in all): at the limit decodes, past it is
 * TETHER_ERR_LIMIT from both decoders and both encoders; errors name the step; the plain
 * decoders (no storage: a peer without OpenCL) refuse sequences as unsupported. */
static void test_seq_limits(void **state) {
    (void)state;
    static unsigned char buf[1 << 17];
    struct {
        uint32_t steps, args;
        int status;
    } cases[] = {
        {128, 8, 0},                /* 128 steps, 1024 args: both limits reached */
        {129, 0, TETHER_ERR_LIMIT}, /* one step too many */
        {17, 61, TETHER_ERR_LIMIT}, /* 1037 arguments */
        {1, 65, TETHER_ERR_LIMIT},  /* one step above the per-call 64 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = seq_bytes(cases[i].steps, cases[i].args, buf);
        for (int c = 0; c < 2; c++) {
            tether_rpc_msg m;
            int rc = decoders[c](buf, n, &m);
            if (rc != cases[i].status) {
                fail_msg("%s decode of %u steps x %u args: %d (%s)", codec_names[c],
                         (unsigned)cases[i].steps, (unsigned)cases[i].args, rc,
                         tether_last_error());
            }
            if (rc == 0) {
                assert_int_equal(m.u.seq_req.num_steps, cases[i].steps);
                assert_int_equal(m.u.seq_req.steps[127].args[7].v.v_int, 1);
                /* re-encoded canonically (the input used array16 everywhere), read back */
                size_t len;
                static unsigned char big[1 << 17];
                assert_int_equal(encoders[1 - c](&m, big, sizeof big, &len), 0);
                assert_int_equal(decoders[1 - c](big, len, &m), 0);
                assert_int_equal(m.u.seq_req.num_steps, 128);
                assert_int_equal(m.u.seq_req.steps[127].num_args, 8);
            }
        }
    }
    /* the error names the step */
    size_t n = seq_bytes(17, 61, buf);
    tether_rpc_msg m;
    assert_int_equal(decoders[0](buf, n, &m), TETHER_ERR_LIMIT);
    assert_non_null(strstr(tether_last_error(), "step 16"));
    long h = hex_decode("93111492950500909110909505009091109100", expect, sizeof expect);
    assert_int_equal(decoders[1](expect, (size_t)h, &m), TETHER_ERR_PROTOCOL);
    assert_non_null(strstr(tether_last_error(), "step 1"));
    assert_non_null(strstr(tether_last_error(), "LAUNCH_SEQ"));
    /* encoders: too many steps, too many args in all, a step without work dims */
    static tether_rpc_arg args[64];
    static tether_rpc_seq_step steps[TETHER_RPC_MAX_SEQ_STEPS + 1];
    for (uint32_t k = 0; k <= TETHER_RPC_MAX_SEQ_STEPS; k++) {
        steps[k].func = 1;
        steps[k].num_args = 64;
        steps[k].args = args;
        steps[k].work_dim = 1;
        steps[k].global[0] = 4;
    }
    size_t len;
    for (int c = 0; c < 2; c++) {
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_LAUNCH_SEQ;
        m.id = 1;
        m.u.seq_req.steps = steps;
        m.u.seq_req.num_steps = TETHER_RPC_MAX_SEQ_STEPS + 1;
        assert_int_equal(encoders[c](&m, buf, sizeof buf, &len), TETHER_ERR_LIMIT);
        m.u.seq_req.num_steps = 17;
        assert_int_equal(encoders[c](&m, buf, sizeof buf, &len), TETHER_ERR_LIMIT);
        assert_non_null(strstr(tether_last_error(), "1024"));
        m.u.seq_req.num_steps = 16;
        assert_int_equal(encoders[c](&m, buf, sizeof buf, &len), 0);
        steps[3].work_dim = 0;
        assert_int_equal(encoders[c](&m, buf, sizeof buf, &len), TETHER_ERR_PROTOCOL);
        assert_non_null(strstr(tether_last_error(), "step 3"));
        steps[3].work_dim = 1;
        m.u.seq_req.num_steps = 0;
        assert_int_equal(encoders[c](&m, buf, sizeof buf, &len), TETHER_ERR_PROTOCOL);
    }
    /* without storage: unsupported, for both requests; replies decode anyway */
    for (size_t i = 0; i < rpc_vector_count; i++) {
        const char *name = rpc_vectors[i].name;
        if (strstr(name, "seq") == NULL) {
            continue;
        }
        long k = hex_decode(rpc_vectors[i].hex, expect, sizeof expect);
        for (int c = 0; c < 2; c++) {
            int rc = plain_decoders[c](expect, (size_t)k, &m);
            if (strstr(name, "_req")) {
                assert_int_equal(rc, TETHER_ERR_UNSUPPORTED);
                assert_non_null(strstr(tether_last_error(), "not supported"));
            } else {
                assert_int_equal(rc, 0);
            }
        }
    }
}

/* A deeply nested trailing field is refused without recursion trouble. */
static void test_decode_deep_nesting(void **state) {
    (void)state;
    size_t n = 0;
    const unsigned char head[] = {0x93, 0x4a, 0x0a, 0x05};
    expect[0] = 0x94; /* 4 elements: type, id, written, nested */
    memcpy(expect + 1, head + 1, 3);
    n = 4;
    for (int i = 0; i < 100; i++) {
        expect[n++] = 0x91;
    }
    expect[n++] = 0xc0;
    for (int c = 0; c < 2; c++) {
        tether_rpc_msg m;
        assert_int_equal(decoders[c](expect, n, &m), TETHER_ERR_PROTOCOL);
    }
    /* the depth limit counts from the message array, in both codecs (found by the differential
     * fuzzer): a trailing field nested to depth 16 is fine, to depth 17 is not */
    for (int extra = 15; extra <= 16; extra++) {
        n = 0;
        expect[n++] = 0x93;
        expect[n++] = 0x4e; /* RESET reply */
        expect[n++] = 0x0a;
        for (int i = 0; i < extra; i++) {
            expect[n++] = 0x91;
        }
        expect[n++] = 0xc0;
        for (int c = 0; c < 2; c++) {
            tether_rpc_msg m;
            assert_int_equal(decoders[c](expect, n, &m), extra == 15 ? 0 : TETHER_ERR_PROTOCOL);
        }
    }
}

/* ALLOC of every element type tether stores travels through both codecs unchanged (code, bits,
 * lanes), and the two codecs write the same bytes for it. */
static void test_alloc_every_dtype(void **state) {
    (void)state;
    static const uint8_t types[][2] = {
        {kDLUInt, 1},   {kDLInt, 8},    {kDLInt, 16},   {kDLInt, 32},  {kDLInt, 64},
        {kDLUInt, 8},   {kDLUInt, 16},  {kDLUInt, 32},  {kDLUInt, 64}, {kDLFloat, 16},
        {kDLFloat, 32}, {kDLFloat, 64}, {kDLBfloat, 16}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint8_t bytes[2][256];
        size_t lens[2];
        for (int c = 0; c < 2; c++) {
            tether_rpc_msg m, d;
            memset(&m, 0, sizeof m);
            m.type = TETHER_RPC_ALLOC;
            m.id = 7;
            m.u.alloc_req.ndim = 2;
            m.u.alloc_req.shape[0] = 3;
            m.u.alloc_req.shape[1] = 5;
            m.u.alloc_req.dtype_code = types[t][0];
            m.u.alloc_req.dtype_bits = types[t][1];
            m.u.alloc_req.dtype_lanes = 1;
            m.u.alloc_req.pool = tether_rpc_str_c("");
            assert_int_equal(encoders[c](&m, bytes[c], sizeof bytes[c], &lens[c]), 0);
            assert_int_equal(decoders[c](bytes[c], lens[c], &d), 0);
            assert_int_equal(d.type, TETHER_RPC_ALLOC);
            assert_int_equal(d.u.alloc_req.dtype_code, types[t][0]);
            assert_int_equal(d.u.alloc_req.dtype_bits, types[t][1]);
            assert_int_equal(d.u.alloc_req.dtype_lanes, 1);
            assert_int_equal(d.u.alloc_req.shape[1], 5);
        }
        assert_int_equal(lens[0], lens[1]);
        assert_memory_equal(bytes[0], bytes[1], lens[0]);
    }
}

/* Encoders refuse messages that break a limit, and never overrun the buffer. */
static void test_encode_errors(void **state) {
    (void)state;
    tether_rpc_msg m;
    size_t len;
    for (int c = 0; c < 2; c++) {
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_ALLOC;
        m.id = 1;
        m.u.alloc_req.ndim = 9;
        m.u.alloc_req.dtype_lanes = 1;
        assert_int_equal(encoders[c](&m, out, sizeof out, &len), TETHER_ERR_LIMIT);
        assert_non_null(strstr(tether_last_error(), "ALLOC"));

        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_CALL;
        m.id = 1;
        m.u.call_req.num_args = 65;
        assert_int_equal(encoders[c](&m, out, sizeof out, &len), TETHER_ERR_LIMIT);

        memset(&m, 0, sizeof m);
        m.type = 99;
        m.id = 1;
        assert_int_equal(encoders[c](&m, out, sizeof out, &len), TETHER_ERR_PROTOCOL);

        char longname[200];
        memset(longname, 'a', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_GET_FUNCTION;
        m.id = 1;
        m.u.get_function_req.name = tether_rpc_str_c(longname);
        assert_int_equal(encoders[c](&m, out, sizeof out, &len), TETHER_ERR_LIMIT);
        assert_non_null(strstr(tether_last_error(), "name"));

        /* too small a buffer: every prefix size fails cleanly, never writes past it */
        memset(&m, 0, sizeof m);
        rpc_vectors[1].build(&m);
        size_t full;
        assert_int_equal(encoders[c](&m, out, sizeof out, &full), 0);
        for (size_t cap = 0; cap < full; cap++) {
            memset(out, 0xee, sizeof out);
            assert_int_equal(encoders[c](&m, out, cap, &len), TETHER_ERR_LIMIT);
            for (size_t k = cap; k < full + 8; k++) {
                assert_int_equal(out[k], 0xee);
            }
        }
    }
    /* the allocating encoder */
    memset(&m, 0, sizeof m);
    rpc_vectors[0].build(&m);
    uint8_t *p = NULL;
    assert_int_equal(tether_rpc_msgpack_encode_alloc(&m, &p, &len), 0);
    long n = hex_decode(rpc_vectors[0].hex, expect, sizeof expect);
    assert_int_equal(len, (size_t)n);
    assert_memory_equal(p, expect, len);
    free(p);
}

/* Helpers of proto.h. */
static void test_proto_helpers(void **state) {
    (void)state;
    assert_string_equal(tether_rpc_type_name(TETHER_RPC_CALL), "CALL");
    assert_string_equal(tether_rpc_type_name(TETHER_RPC_CALL | TETHER_RPC_REPLY), "CALL reply");
    assert_string_equal(tether_rpc_type_name(TETHER_RPC_ERROR), "ERROR");
    assert_null(tether_rpc_type_name(0));
    assert_null(tether_rpc_type_name(TETHER_RPC_LOG | TETHER_RPC_REPLY));
    assert_string_equal(tether_rpc_type_name(TETHER_RPC_LAUNCH_SEQ), "LAUNCH_SEQ");
    assert_string_equal(tether_rpc_type_name(TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY),
                        "TIME_SEQ reply");
    assert_false(tether_rpc_type_valid(19));
    char buf[8];
    tether_rpc_str s = {"abcdef", 6};
    assert_int_equal(tether_rpc_str_copy(s, buf, sizeof buf, "name"), 0);
    assert_string_equal(buf, "abcdef");
    assert_int_equal(tether_rpc_str_copy(s, buf, 6, "name"), TETHER_ERR_LIMIT);
    tether_rpc_str z = {"a\0b", 3};
    assert_int_equal(tether_rpc_str_copy(z, buf, sizeof buf, "name"), TETHER_ERR_INVALID_ARG);
    assert_true(tether_rpc_str_eq(s, "abcdef"));
    assert_false(tether_rpc_str_eq(s, "abcde"));
    assert_int_equal(tether_rpc_chunk_max(512), 512 - TETHER_RPC_CHUNK_OVERHEAD);
    assert_int_equal(tether_rpc_chunk_max(100), 0);
    tether_rpc_msg m;
    tether_rpc_make_error(&m, 9, TETHER_ERR_NOT_FOUND, "nope");
    assert_int_equal(m.type, TETHER_RPC_ERROR);
    assert_int_equal(tether_rpc_msg_check(&m), 0);
}

/* The chunk overhead constant really covers the worst-case headers. */
static void test_chunk_overhead(void **state) {
    (void)state;
    static uint8_t data[1 << 16];
    for (uint32_t frame = TETHER_RPC_MIN_FRAME; frame <= 70000; frame = frame * 3 / 2 + 7) {
        uint32_t chunk = tether_rpc_chunk_max(frame);
        tether_rpc_msg m;
        memset(&m, 0, sizeof m);
        m.type = TETHER_RPC_COPY_TO;
        m.id = UINT32_MAX;
        m.u.copy_to_req.array = UINT64_MAX;
        m.u.copy_to_req.offset = UINT64_MAX;
        m.u.copy_to_req.data.ptr = data;
        m.u.copy_to_req.data.len = chunk > sizeof data ? (uint32_t)sizeof data : chunk;
        static uint8_t big[1 << 17];
        size_t len;
        assert_int_equal(tether_rpc_tiny_encode(&m, big, frame, &len), 0);
        m.type = TETHER_RPC_UPLOAD_CHUNK;
        m.u.upload_chunk_req.upload_id = UINT32_MAX;
        m.u.upload_chunk_req.offset = UINT64_MAX;
        assert_int_equal(tether_rpc_tiny_encode(&m, big, frame, &len), 0);
        m.type = TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY;
        m.u.copy_from_rep.data.ptr = data;
        m.u.copy_from_rep.data.len = chunk > sizeof data ? (uint32_t)sizeof data : chunk;
        assert_int_equal(tether_rpc_tiny_encode(&m, big, frame, &len), 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_encode), cmocka_unit_test(test_vectors_encode_split),
        cmocka_unit_test(test_vectors_decode), cmocka_unit_test(test_decode_noncanonical),
        cmocka_unit_test(test_decode_errors),  cmocka_unit_test(test_decode_deep_nesting),
        cmocka_unit_test(test_encode_errors),  cmocka_unit_test(test_alloc_every_dtype),
        cmocka_unit_test(test_proto_helpers),  cmocka_unit_test(test_chunk_overhead),
        cmocka_unit_test(test_seq_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
