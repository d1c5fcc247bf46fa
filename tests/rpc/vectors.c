/*
 * tether rpc tests: shared test vectors (see vectors.h). The hex strings were checked by hand
 * against the encoding rules of docs/rpc.md (array header, type, id, then fields in table order;
 * shortest integer forms; str8 from 32 bytes; bin8; float64 for doubles).
 */
#include "vectors.h"

#include <string.h>

static const uint8_t nonce32[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
static const uint8_t data5[5] = {0x7e, 0x7d, 0x00, 0xff, 0x42};

static void hello_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_HELLO;
    m->id = 1;
    m->u.hello_req.version = 1;
    m->u.hello_req.max_frame = 1048576;
    m->u.hello_req.client = tether_rpc_str_c("host");
    m->u.hello_req.link = TETHER_RPC_LINK_UART2;
}
static void hello_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_HELLO | TETHER_RPC_REPLY;
    m->id = 1;
    tether_rpc_hello_rep *h = &m->u.hello_rep;
    h->version = 1;
    h->triple = tether_rpc_str_c("thumbv7m-none-eabi");
    h->arch = tether_rpc_str_c("cortex-m3");
    h->little_endian = true;
    h->pointer_bits = 32;
    h->max_frame = 512;
    h->window = 1;
    h->clock_hz = 25000000;
    h->scopes = 1;
    h->num_pools = 2;
    h->pools[0] = tether_rpc_str_c("sram");
    h->pools[1] = tether_rpc_str_c("dram");
    h->opencl = false;
    h->image_max_width = 0;
    h->image_max_height = 0;
    h->load_addr = 0x20010000;
    h->load_size = 65536;
    h->auth_required = true;
    h->nonce.ptr = nonce32;
    h->nonce.len = 32;
    h->board = tether_rpc_str_c("mps2-an385");
    h->ram_size = 459776;
    h->heap_size = 262144;
    h->stack_size = 16352;
    h->boot_count = 3;
    h->exports_id = 0x1234abcdu;
    h->cpu = tether_rpc_str_c("x86-64-v3");
    h->cpu_features = tether_rpc_str_c("avx2 fma");
    h->pool_sizes[0] = 262144; /* sram; dram: 0 = no limit */
    h->link = TETHER_RPC_LINK_UART2;
    h->cl_max_work_group_size = 1024;
    h->cl_wg_multiple = 32;
    h->cl_local_mem_size = 65536;
    h->cl_compute_units = 132;
    h->cl_features = TETHER_RPC_CL_REPORTED | TETHER_RPC_CL_FP64;
}
static void auth_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_AUTH;
    m->id = 2;
    m->u.auth_req.mac.ptr = nonce32;
    m->u.auth_req.mac.len = 32;
}
static void auth_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_AUTH | TETHER_RPC_REPLY;
    m->id = 2;
}
static void upload_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UPLOAD;
    m->id = 3;
    m->u.upload_req.kind = TETHER_RPC_MODULE_SHARED_OBJECT;
    m->u.upload_req.name = tether_rpc_str_c("ops.so");
    m->u.upload_req.total_size = 300;
    m->u.upload_req.sha256.ptr = nonce32;
    m->u.upload_req.sha256.len = 32;
}
static void upload_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UPLOAD | TETHER_RPC_REPLY;
    m->id = 3;
    m->u.upload_rep.upload_id = 7;
    m->u.upload_rep.cached = true;
}
static void upload_chunk_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UPLOAD_CHUNK;
    m->id = 4;
    m->u.upload_chunk_req.upload_id = 7;
    m->u.upload_chunk_req.offset = 256;
    m->u.upload_chunk_req.data.ptr = data5;
    m->u.upload_chunk_req.data.len = 5;
}
static void upload_chunk_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY;
    m->id = 4;
    m->u.upload_chunk_rep.received = 261;
    m->u.upload_chunk_rep.complete = false;
}
static void load_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_LOAD_MODULE;
    m->id = 5;
    m->u.load_module_req.name = tether_rpc_str_c("ops.so");
}
static void load_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_LOAD_MODULE | TETHER_RPC_REPLY;
    m->id = 5;
    m->u.load_module_rep.module = 1;
    m->u.load_module_rep.num_functions = 3;
}
static void unload_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UNLOAD;
    m->id = 6;
    m->u.unload_req.module = 1;
}
static void unload_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_UNLOAD | TETHER_RPC_REPLY;
    m->id = 6;
}
static void getf_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_GET_FUNCTION;
    m->id = 7;
    m->u.get_function_req.module = 0;
    m->u.get_function_req.name = tether_rpc_str_c("add");
}
static void getf_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY;
    m->id = 7;
    m->u.get_function_rep.func = 0x100000001ull;
    m->u.get_function_rep.abi = TETHER_ABI_PACKED;
    m->u.get_function_rep.num_args = -1;
}
static void alloc_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_ALLOC;
    m->id = 8;
    tether_rpc_alloc_req *a = &m->u.alloc_req;
    a->ndim = 3;
    a->shape[0] = 1;
    a->shape[1] = 224;
    a->shape[2] = 70000;
    a->dtype_code = 2; /* kDLFloat */
    a->dtype_bits = 32;
    a->dtype_lanes = 1;
    a->scope = 0;
    a->pool = tether_rpc_str_c("sram");
}
static void alloc_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_ALLOC | TETHER_RPC_REPLY;
    m->id = 8;
    m->u.alloc_rep.array = 2;
    m->u.alloc_rep.nbytes = 62720000;
}
static void free_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_FREE;
    m->id = 9;
    m->u.free_req.handle = 2;
}
static void free_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_FREE | TETHER_RPC_REPLY;
    m->id = 9;
}
static void copy_to_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_COPY_TO;
    m->id = 10;
    m->u.copy_to_req.array = 2;
    m->u.copy_to_req.offset = 0;
    m->u.copy_to_req.data.ptr = data5;
    m->u.copy_to_req.data.len = 5;
}
static void copy_to_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_COPY_TO | TETHER_RPC_REPLY;
    m->id = 10;
    m->u.copy_to_rep.written = 5;
}
static void copy_from_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_COPY_FROM;
    m->id = 11;
    m->u.copy_from_req.array = 2;
    m->u.copy_from_req.offset = 4;
    m->u.copy_from_req.length = 5;
}
static void copy_from_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY;
    m->id = 11;
    m->u.copy_from_rep.data.ptr = data5;
    m->u.copy_from_rep.data.len = 5;
}
static void call_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL;
    m->id = 12;
    tether_rpc_invoke *v = &m->u.call_req;
    v->func = 0x100000001ull;
    v->abi = TETHER_ABI_PACKED;
    v->num_args = 6;
    v->args[0].type_code = TETHER_TYPE_DLTENSOR;
    v->args[0].v.v_handle = 2;
    v->args[1].type_code = TETHER_TYPE_INT;
    v->args[1].v.v_int = -200;
    v->args[2].type_code = TETHER_TYPE_UINT;
    v->args[2].v.v_uint = 300;
    v->args[3].type_code = TETHER_TYPE_FLOAT;
    v->args[3].v.v_float = 1.5;
    v->args[4].type_code = TETHER_TYPE_NULL;
    v->args[5].type_code = TETHER_TYPE_STR;
    v->args[5].v.v_str = tether_rpc_str_c("relu");
}
static void call_kernel_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL;
    m->id = 13;
    tether_rpc_invoke *v = &m->u.call_req;
    v->func = 5;
    v->abi = TETHER_ABI_PACKED;
    v->num_args = 2;
    v->args[0].type_code = TETHER_TYPE_DLTENSOR;
    v->args[0].v.v_handle = 2;
    v->args[1].type_code = TETHER_TYPE_DLTENSOR;
    v->args[1].v.v_handle = 3;
    v->work_dim = 2;
    v->global[0] = 1024;
    v->global[1] = 768;
    v->local[0] = 16;
    v->local[1] = 16;
}
static void call_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL | TETHER_RPC_REPLY;
    m->id = 12;
    m->u.call_rep.ret = 0;
    m->u.call_rep.elapsed_ns = 123456;
    m->u.call_rep.stack_bytes = 1200;
    m->u.call_rep.ret_value.type_code = TETHER_TYPE_INT;
    m->u.call_rep.ret_value.v.v_int = 7;
}
static void call_rep_float(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL | TETHER_RPC_REPLY;
    m->id = 12;
    m->u.call_rep.ret = -1;
    m->u.call_rep.elapsed_ns = 5;
    m->u.call_rep.stack_bytes = 0;
    m->u.call_rep.ret_value.type_code = TETHER_TYPE_FLOAT;
    m->u.call_rep.ret_value.v.v_float = 2.5;
}
static void call_rep_null(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL | TETHER_RPC_REPLY;
    m->id = 12;
    m->u.call_rep.ret = 0;
    m->u.call_rep.elapsed_ns = 0;
    m->u.call_rep.stack_bytes = 0;
    m->u.call_rep.ret_value.type_code = TETHER_TYPE_NULL;
}
static void time_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_TIME;
    m->id = 14;
    tether_rpc_time_req *t = &m->u.time_req;
    t->invoke.func = 5;
    t->invoke.abi = TETHER_ABI_UNPACKED;
    t->invoke.num_args = 1;
    t->invoke.args[0].type_code = TETHER_TYPE_DLTENSOR;
    t->invoke.args[0].v.v_handle = 2;
    t->invoke.work_dim = 1;
    t->invoke.global[0] = 64;
    t->number = 10;
    t->repeat = 3;
    t->min_repeat_ms = 100;
    t->cooldown_ms = 0;
}
static void time_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_TIME | TETHER_RPC_REPLY;
    m->id = 14;
    m->u.time_rep.number = 16;
    m->u.time_rep.zero_timer = false;
    m->u.time_rep.repeat = 2;
    m->u.time_rep.seconds[0] = 0.5;
    m->u.time_rep.seconds[1] = 0.25;
}
static void reset_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_RESET;
    m->id = 15;
}
static void reset_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_RESET | TETHER_RPC_REPLY;
    m->id = 15;
}
static void shutdown_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_SHUTDOWN;
    m->id = 16;
}
static void shutdown_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_SHUTDOWN | TETHER_RPC_REPLY;
    m->id = 16;
}
static void log_msg(tether_rpc_msg *m) {
    m->type = TETHER_RPC_LOG;
    m->id = 0;
    m->u.log.level = TETHER_LOG_INFO;
    m->u.log.text = tether_rpc_str_c("booted");
}
static void error_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_ERROR;
    m->id = 12;
    m->u.error.code = TETHER_ERR_NOT_FOUND;
    m->u.error.message = tether_rpc_str_c("no function 'mul'");
}
/* boundaries: str8 (32-byte name), big id, int64 extremes, array16 (16 args) */
static void boundary_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_CALL;
    m->id = 4000000000u;
    tether_rpc_invoke *v = &m->u.call_req;
    v->func = UINT64_MAX;
    v->abi = TETHER_ABI_PACKED;
    v->num_args = 16;
    for (int i = 0; i < 16; i++) {
        v->args[i].type_code = TETHER_TYPE_INT;
        v->args[i].v.v_int = i - 8;
    }
    v->args[0].v.v_int = INT64_MIN;
    v->args[15].v.v_int = INT64_MAX;
    v->args[1].v.v_int = -33;
    v->args[2].v.v_int = -129;
    v->args[3].v.v_int = -32769;
    v->args[4].v.v_int = 65536;
    v->args[14].type_code = TETHER_TYPE_STR;
    v->args[14].v.v_str = tether_rpc_str_c("abcdefghijklmnopqrstuvwxyz012345");
}

/* kernel sequences: two steps (one with a local size, one 2-D without), and their TIME */
static const tether_rpc_arg seq_args[] = {
    {TETHER_TYPE_DLTENSOR, {.v_handle = 2}}, {TETHER_TYPE_DLTENSOR, {.v_handle = 3}},
    {TETHER_TYPE_INT, {.v_int = 16}},        {TETHER_TYPE_DLTENSOR, {.v_handle = 3}},
    {TETHER_TYPE_UINT, {.v_uint = 1}},       {TETHER_TYPE_FLOAT, {.v_float = 0.5}},
};
static const tether_rpc_seq_step seq_steps[] = {
    {5, TETHER_ABI_PACKED, 3, seq_args, 1, {1024, 0, 0}, {64, 0, 0}},
    {6, TETHER_ABI_PACKED, 3, seq_args + 3, 2, {8, 4, 0}, {0, 0, 0}},
};
static void launch_seq_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_LAUNCH_SEQ;
    m->id = 20;
    m->u.seq_req.num_steps = 2;
    m->u.seq_req.steps = seq_steps;
    m->u.seq_req.flags = TETHER_RPC_SEQ_NO_PROFILE;
}
static void launch_seq_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY;
    m->id = 20;
    m->u.launch_seq_rep.elapsed_ns = 3000;
    m->u.launch_seq_rep.num_steps = 2;
    m->u.launch_seq_rep.step_ns[0] = 1000;
    m->u.launch_seq_rep.step_ns[1] = 2000;
    m->u.launch_seq_rep.wall_ns = 3500;
}
static void time_seq_req(tether_rpc_msg *m) {
    m->type = TETHER_RPC_TIME_SEQ;
    m->id = 21;
    m->u.seq_req.num_steps = 1;
    m->u.seq_req.steps = seq_steps + 1;
    m->u.seq_req.number = 10;
    m->u.seq_req.repeat = 3;
    m->u.seq_req.min_repeat_ms = 100;
    m->u.seq_req.cooldown_ms = 0;
}
static void time_seq_rep(tether_rpc_msg *m) {
    m->type = TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY;
    m->id = 21;
    m->u.time_seq_rep.number = 10;
    m->u.time_seq_rep.zero_timer = false;
    m->u.time_seq_rep.repeat = 2;
    m->u.time_seq_rep.seconds[0] = 0.5;
    m->u.time_seq_rep.seconds[1] = 0.25;
    m->u.time_seq_rep.num_steps = 2;
    m->u.time_seq_rep.step_seconds[0] = 0.125;
    m->u.time_seq_rep.step_seconds[1] = 0.375;
    m->u.time_seq_rep.wall_seconds = 0.0625;
}

const rpc_vector rpc_vectors[] = {
#include "vectors.inc"
};
const size_t rpc_vector_count = sizeof rpc_vectors / sizeof rpc_vectors[0];

static int str_equal(tether_rpc_str a, tether_rpc_str b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}
static int bytes_equal(tether_rpc_bytes a, tether_rpc_bytes b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static int args_equal(const tether_rpc_arg *xs, const tether_rpc_arg *ys, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        const tether_rpc_arg *x = &xs[i], *y = &ys[i];
        if (x->type_code != y->type_code) {
            return 0;
        }
        switch (x->type_code) {
        case TETHER_TYPE_INT:
            if (x->v.v_int != y->v.v_int) {
                return 0;
            }
            break;
        case TETHER_TYPE_UINT:
        case TETHER_TYPE_HANDLE:
        case TETHER_TYPE_DLTENSOR:
            if (x->v.v_uint != y->v.v_uint) {
                return 0;
            }
            break;
        case TETHER_TYPE_FLOAT:
            if (memcmp(&x->v.v_float, &y->v.v_float, sizeof(double)) != 0) {
                return 0;
            }
            break;
        case TETHER_TYPE_STR:
            if (!str_equal(x->v.v_str, y->v.v_str)) {
                return 0;
            }
            break;
        default:
            break;
        }
    }
    return 1;
}

static int invoke_equal(const tether_rpc_invoke *a, const tether_rpc_invoke *b) {
    if (a->func != b->func || a->abi != b->abi || a->num_args != b->num_args ||
        a->work_dim != b->work_dim || !args_equal(a->args, b->args, a->num_args)) {
        return 0;
    }
    for (uint32_t i = 0; i < a->work_dim; i++) {
        if (a->global[i] != b->global[i] || a->local[i] != b->local[i]) {
            return 0;
        }
    }
    return 1;
}

static int seq_equal(const tether_rpc_seq_req *a, const tether_rpc_seq_req *b) {
    if (a->num_steps != b->num_steps || a->number != b->number || a->repeat != b->repeat ||
        a->min_repeat_ms != b->min_repeat_ms || a->cooldown_ms != b->cooldown_ms ||
        a->flags != b->flags) {
        return 0;
    }
    for (uint32_t k = 0; k < a->num_steps; k++) {
        const tether_rpc_seq_step *x = &a->steps[k], *y = &b->steps[k];
        if (x->func != y->func || x->abi != y->abi || x->num_args != y->num_args ||
            x->work_dim != y->work_dim || !args_equal(x->args, y->args, x->num_args)) {
            return 0;
        }
        for (uint32_t i = 0; i < x->work_dim; i++) {
            if (x->global[i] != y->global[i] || x->local[i] != y->local[i]) {
                return 0;
            }
        }
    }
    return 1;
}

int rpc_msg_equal(const tether_rpc_msg *a, const tether_rpc_msg *b) {
    if (a->type != b->type || a->id != b->id) {
        return 0;
    }
    switch (a->type) {
    case TETHER_RPC_HELLO:
        return a->u.hello_req.version == b->u.hello_req.version &&
               a->u.hello_req.max_frame == b->u.hello_req.max_frame &&
               str_equal(a->u.hello_req.client, b->u.hello_req.client) &&
               a->u.hello_req.link == b->u.hello_req.link;
    case TETHER_RPC_HELLO | TETHER_RPC_REPLY: {
        const tether_rpc_hello_rep *x = &a->u.hello_rep, *y = &b->u.hello_rep;
        if (x->num_pools != y->num_pools) {
            return 0;
        }
        for (uint32_t i = 0; i < x->num_pools; i++) {
            if (!str_equal(x->pools[i], y->pools[i]) || x->pool_sizes[i] != y->pool_sizes[i]) {
                return 0;
            }
        }
        return x->version == y->version && str_equal(x->triple, y->triple) &&
               str_equal(x->arch, y->arch) && x->little_endian == y->little_endian &&
               x->pointer_bits == y->pointer_bits && x->max_frame == y->max_frame &&
               x->window == y->window && x->clock_hz == y->clock_hz && x->scopes == y->scopes &&
               x->opencl == y->opencl && x->image_max_width == y->image_max_width &&
               x->image_max_height == y->image_max_height && x->load_addr == y->load_addr &&
               x->load_size == y->load_size && x->auth_required == y->auth_required &&
               bytes_equal(x->nonce, y->nonce) && str_equal(x->board, y->board) &&
               x->ram_size == y->ram_size && x->heap_size == y->heap_size &&
               x->stack_size == y->stack_size && x->boot_count == y->boot_count &&
               x->exports_id == y->exports_id && str_equal(x->cpu, y->cpu) &&
               str_equal(x->cpu_features, y->cpu_features) && x->link == y->link &&
               x->cl_max_work_group_size == y->cl_max_work_group_size &&
               x->cl_wg_multiple == y->cl_wg_multiple &&
               x->cl_local_mem_size == y->cl_local_mem_size &&
               x->cl_compute_units == y->cl_compute_units && x->cl_features == y->cl_features;
    }
    case TETHER_RPC_AUTH:
        return bytes_equal(a->u.auth_req.mac, b->u.auth_req.mac);
    case TETHER_RPC_UPLOAD:
        return a->u.upload_req.kind == b->u.upload_req.kind &&
               str_equal(a->u.upload_req.name, b->u.upload_req.name) &&
               a->u.upload_req.total_size == b->u.upload_req.total_size &&
               bytes_equal(a->u.upload_req.sha256, b->u.upload_req.sha256);
    case TETHER_RPC_UPLOAD | TETHER_RPC_REPLY:
        return a->u.upload_rep.upload_id == b->u.upload_rep.upload_id &&
               a->u.upload_rep.cached == b->u.upload_rep.cached;
    case TETHER_RPC_UPLOAD_CHUNK:
        return a->u.upload_chunk_req.upload_id == b->u.upload_chunk_req.upload_id &&
               a->u.upload_chunk_req.offset == b->u.upload_chunk_req.offset &&
               bytes_equal(a->u.upload_chunk_req.data, b->u.upload_chunk_req.data);
    case TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY:
        return a->u.upload_chunk_rep.received == b->u.upload_chunk_rep.received &&
               a->u.upload_chunk_rep.complete == b->u.upload_chunk_rep.complete;
    case TETHER_RPC_LOAD_MODULE:
        return str_equal(a->u.load_module_req.name, b->u.load_module_req.name);
    case TETHER_RPC_LOAD_MODULE | TETHER_RPC_REPLY:
        return a->u.load_module_rep.module == b->u.load_module_rep.module &&
               a->u.load_module_rep.num_functions == b->u.load_module_rep.num_functions;
    case TETHER_RPC_UNLOAD:
        return a->u.unload_req.module == b->u.unload_req.module;
    case TETHER_RPC_GET_FUNCTION:
        return a->u.get_function_req.module == b->u.get_function_req.module &&
               str_equal(a->u.get_function_req.name, b->u.get_function_req.name);
    case TETHER_RPC_GET_FUNCTION | TETHER_RPC_REPLY:
        return a->u.get_function_rep.func == b->u.get_function_rep.func &&
               a->u.get_function_rep.abi == b->u.get_function_rep.abi &&
               a->u.get_function_rep.num_args == b->u.get_function_rep.num_args;
    case TETHER_RPC_ALLOC: {
        const tether_rpc_alloc_req *x = &a->u.alloc_req, *y = &b->u.alloc_req;
        if (x->ndim != y->ndim) {
            return 0;
        }
        for (uint32_t i = 0; i < x->ndim; i++) {
            if (x->shape[i] != y->shape[i]) {
                return 0;
            }
        }
        return x->dtype_code == y->dtype_code && x->dtype_bits == y->dtype_bits &&
               x->dtype_lanes == y->dtype_lanes && x->scope == y->scope &&
               str_equal(x->pool, y->pool);
    }
    case TETHER_RPC_ALLOC | TETHER_RPC_REPLY:
        return a->u.alloc_rep.array == b->u.alloc_rep.array &&
               a->u.alloc_rep.nbytes == b->u.alloc_rep.nbytes;
    case TETHER_RPC_FREE:
        return a->u.free_req.handle == b->u.free_req.handle;
    case TETHER_RPC_COPY_TO:
        return a->u.copy_to_req.array == b->u.copy_to_req.array &&
               a->u.copy_to_req.offset == b->u.copy_to_req.offset &&
               bytes_equal(a->u.copy_to_req.data, b->u.copy_to_req.data);
    case TETHER_RPC_COPY_TO | TETHER_RPC_REPLY:
        return a->u.copy_to_rep.written == b->u.copy_to_rep.written;
    case TETHER_RPC_COPY_FROM:
        return a->u.copy_from_req.array == b->u.copy_from_req.array &&
               a->u.copy_from_req.offset == b->u.copy_from_req.offset &&
               a->u.copy_from_req.length == b->u.copy_from_req.length;
    case TETHER_RPC_COPY_FROM | TETHER_RPC_REPLY:
        return bytes_equal(a->u.copy_from_rep.data, b->u.copy_from_rep.data);
    case TETHER_RPC_CALL:
        return invoke_equal(&a->u.call_req, &b->u.call_req);
    case TETHER_RPC_CALL | TETHER_RPC_REPLY: {
        const tether_rpc_arg *x = &a->u.call_rep.ret_value, *y = &b->u.call_rep.ret_value;
        int same_value = x->type_code == y->type_code &&
                         (x->type_code == TETHER_TYPE_NULL ||
                          memcmp(&x->v.v_uint, &y->v.v_uint, sizeof x->v.v_uint) == 0);
        return a->u.call_rep.ret == b->u.call_rep.ret &&
               a->u.call_rep.elapsed_ns == b->u.call_rep.elapsed_ns &&
               a->u.call_rep.stack_bytes == b->u.call_rep.stack_bytes && same_value;
    }
    case TETHER_RPC_TIME:
        return invoke_equal(&a->u.time_req.invoke, &b->u.time_req.invoke) &&
               a->u.time_req.number == b->u.time_req.number &&
               a->u.time_req.repeat == b->u.time_req.repeat &&
               a->u.time_req.min_repeat_ms == b->u.time_req.min_repeat_ms &&
               a->u.time_req.cooldown_ms == b->u.time_req.cooldown_ms;
    case TETHER_RPC_TIME | TETHER_RPC_REPLY:
        if (a->u.time_rep.repeat != b->u.time_rep.repeat) {
            return 0;
        }
        for (uint32_t i = 0; i < a->u.time_rep.repeat; i++) {
            if (a->u.time_rep.seconds[i] != b->u.time_rep.seconds[i]) {
                return 0;
            }
        }
        return a->u.time_rep.number == b->u.time_rep.number &&
               a->u.time_rep.zero_timer == b->u.time_rep.zero_timer;
    case TETHER_RPC_LAUNCH_SEQ:
    case TETHER_RPC_TIME_SEQ:
        return seq_equal(&a->u.seq_req, &b->u.seq_req);
    case TETHER_RPC_LAUNCH_SEQ | TETHER_RPC_REPLY: {
        const tether_rpc_launch_seq_rep *x = &a->u.launch_seq_rep, *y = &b->u.launch_seq_rep;
        if (x->elapsed_ns != y->elapsed_ns || x->num_steps != y->num_steps ||
            x->wall_ns != y->wall_ns) {
            return 0;
        }
        for (uint32_t i = 0; i < x->num_steps; i++) {
            if (x->step_ns[i] != y->step_ns[i]) {
                return 0;
            }
        }
        return 1;
    }
    case TETHER_RPC_TIME_SEQ | TETHER_RPC_REPLY: {
        const tether_rpc_time_seq_rep *x = &a->u.time_seq_rep, *y = &b->u.time_seq_rep;
        if (x->number != y->number || x->zero_timer != y->zero_timer || x->repeat != y->repeat ||
            x->num_steps != y->num_steps || x->wall_seconds != y->wall_seconds) {
            return 0;
        }
        for (uint32_t i = 0; i < x->repeat; i++) {
            if (x->seconds[i] != y->seconds[i]) {
                return 0;
            }
        }
        for (uint32_t i = 0; i < x->num_steps; i++) {
            if (x->step_seconds[i] != y->step_seconds[i]) {
                return 0;
            }
        }
        return 1;
    }
    case TETHER_RPC_LOG:
        return a->u.log.level == b->u.log.level && str_equal(a->u.log.text, b->u.log.text);
    case TETHER_RPC_ERROR:
        return a->u.error.code == b->u.error.code &&
               str_equal(a->u.error.message, b->u.error.message);
    default:
        return 1;
    }
}

long hex_decode(const char *hex, unsigned char *out, size_t cap) {
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap) {
        return -1;
    }
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = hex[2 * i + k];
            v <<= 4;
            if (c >= '0' && c <= '9') {
                v |= (unsigned)(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                v |= (unsigned)(c - 'a' + 10);
            } else {
                return -1;
            }
        }
        out[i] = (unsigned char)v;
    }
    return (long)(n / 2);
}

void hex_encode(const unsigned char *p, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = '\0';
}
