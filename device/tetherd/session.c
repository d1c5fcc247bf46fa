/*
 * tetherd session: the request loop of one host session (HELLO, AUTH, UPLOAD, LOAD_MODULE,
 * GET_FUNCTION, ALLOC/FREE, COPY_TO/COPY_FROM, CALL, TIME, RESET, SHUTDOWN).
 *
 * What must stay true:
 *  - every request gets exactly one reply (result or ERROR naming the problem);
 *  - until AUTH succeeds (when a token is configured) nothing but HELLO/AUTH is served, and a
 *    wrong mac ends the session having executed nothing;
 *  - no name from the wire is ever used as a path: uploads are stored as "u<N>.bin" in the
 *    session directory, and their SHA-256 is checked again right before dlopen;
 *  - handles are never pointers: a bad handle is an ERROR, never a dereference;
 *  - every CPU call runs on the dedicated painted stack (mmap'ed whole pages, guarded below
 *    the last high-water mark: a guard fault lifts the guard and is not a crash); a fatal
 *    signal during a call sends ERROR naming the function, then the process dies; the call
 *    timeout is the daemon's (the watch), so a call costs no system call here
 */
#include "session.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "tether/crt.h"
#include "tether/crt_posix.h"

#ifdef TETHERD_HAVE_OPENCL
#include "opencl.h"
#endif

#define MAX_UPLOADS 32
#define MAX_MODULES 16
#define MAX_FUNCS   256
#define MAX_ARRAYS  1024
#define CACHE_SLOTS 8   /* replies kept for retransmitted requests */
#define CACHE_SLOT  512 /* bytes per cached reply (larger ones are idempotent COPY_FROM data) */

typedef struct upload {
    int used;
    uint32_t id;
    char name[TETHER_RPC_MAX_NAME];
    char path[512];
    uint32_t kind;
    int fd;
    uint64_t total, received;
    uint8_t hash[TETHER_RPC_HASH_BYTES];
    tether_sha256_ctx sha;
    int complete;
} upload;

typedef struct module {
    int used;
    uint64_t handle;
    void *dl;
    const tether_func_registry *reg;
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_program *prog; /* an OpenCL program instead of a shared object */
#endif
} module;

typedef struct func {
    int used;
    uint64_t module;
    const tether_func_entry *entry; /* CPU function, or NULL for a kernel */
    int kernel;                     /* kernel index in the module's program */
    int kernel_args;
} func;

typedef struct array {
    uint64_t handle; /* 0 = free slot */
    tether_ndarray nd;
    void *mem; /* host memory; the shadow of an image */
    uint64_t nbytes;
    int pool; /* index into the configured pools, -1 = none named */
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_mem *clm; /* image (texture scopes) or buffer over mem (global, made on use) */
    int cl_dirty;        /* a kernel had the buffer: mem is stale until synchronised */
#endif
} array;

typedef struct session {
    const tetherd_config *cfg;
    tether_transport *t;
    const char *dir;
    const char *peer;
    uint8_t *tx;
    size_t tx_cap;
    uint32_t peer_max_frame;
    int hello_done;               /* a HELLO was answered: the next one frees everything first */
    tether_server srv;            /* the shared request core (gating, validation, replies) */
    tether_rpc_reply_cache cache; /* its reply cache */
    uint8_t cache_mem[CACHE_SLOTS * CACHE_SLOT];
    tether_rpc_msg req, rep;                       /* its request and reply */
    tether_value call_values[TETHER_RPC_MAX_ARGS]; /* arguments converted by the core */
    int32_t call_codes[TETHER_RPC_MAX_ARGS];
    uint8_t nonce[TETHER_RPC_NONCE_BYTES];
    uint32_t next_upload;
    uint64_t next_handle;
    upload uploads[MAX_UPLOADS];
    module modules[MAX_MODULES];
    func funcs[MAX_FUNCS];
    array arrays[MAX_ARRAYS];
    uint64_t allocated;
    uint64_t pool_used[TETHER_RPC_MAX_POOLS]; /* bytes per configured pool */
    void *stack;
    size_t stack_size;
    tether_posix_call_stack call_stack; /* on stack: kept painted, only what a call used is
                                           repainted before the next one */
    size_t call_overhead[2];            /* per ABI: the call path's own stack bytes (0 = not
                                           measured yet), see run_on_stack */
    int shutdown;
    tether_rpc_seq_storage seq; /* steps of a decoded LAUNCH_SEQ / TIME_SEQ request */
    const uint8_t *placed_src;  /* the frame being handled had its data placed by the transport: */
    const uint8_t *placed_dst;  /* where the data would be in the frame, where it is instead */
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl *cl;
#endif
} session;

/* ---- logging ---- */

void tetherd_log(const tetherd_config *cfg, int level, const char *peer, const char *fmt, ...) {
    if (cfg && level > cfg->verbose)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tetherd[%d] %s: %s\n", (int)getpid(), peer ? peer : "-", buf);
}

/* ---- fatal signals during a call, and the watch ---- */

static volatile sig_atomic_t g_in_call;
static int g_fd_write = -1;
static tether_transport_kind g_kind;
static uint32_t g_call_id;
static char g_func_name[TETHER_RPC_MAX_NAME];
static tetherd_watch *g_watch; /* NULL = the daemon does not watch this session */

uint64_t tetherd_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sets the watch's phase and deadline (deadline first, so the daemon never pairs a new phase
 * with an old deadline). */
static void watch_set(uint32_t phase, uint64_t deadline_ns) {
    if (!g_watch)
        return;
    __atomic_store_n(&g_watch->deadline_ns, deadline_ns, __ATOMIC_RELEASE);
    __atomic_store_n(&g_watch->phase, phase, __ATOMIC_RELEASE);
}

/* A request arrived: HELLO/IDLE -> BUSY, unless the daemon has just ended this session for
 * being idle (then nothing more is done here; its SIGKILL follows). */
static void watch_busy(void) {
    if (!g_watch)
        return;
    uint32_t expect = __atomic_load_n(&g_watch->phase, __ATOMIC_ACQUIRE);
    if (expect == TETHERD_PHASE_CONDEMNED ||
        !__atomic_compare_exchange_n(&g_watch->phase, &expect, TETHERD_PHASE_BUSY, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        for (;;)
            pause();
    __atomic_store_n(&g_watch->deadline_ns, 0, __ATOMIC_RELEASE);
}

/* Moves the watch from CALL to `to`; false when the daemon condemned the call first. */
static bool watch_leave_call(uint32_t to) {
    if (!g_watch)
        return true;
    uint32_t expect = TETHERD_PHASE_CALL;
    return __atomic_compare_exchange_n(&g_watch->phase, &expect, to, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE);
}

static const char *sig_name(int sig) {
    switch (sig) {
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    case SIGABRT:
        return "SIGABRT";
    default:
        return "signal";
    }
}

/* Writes all of buf to fd with poll (the fd may be non-blocking); async-signal-safe. */
static void write_all_raw(int fd, const uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, 1000) <= 0)
                return;
        } else {
            return;
        }
    }
}

void tetherd_write_error(int fd, tether_transport_kind kind, uint32_t id, int code,
                         const char *text) {
    uint8_t msg[2048];
    uint8_t frame[TETHER_UART_ENCODED_MAX(2048)];
    tether_rpc_msg m;
    tether_rpc_make_error(&m, id, code, text);
    size_t len = 0;
    if (fd < 0 || tether_rpc_tiny_encode(&m, msg, sizeof msg, &len) != 0)
        return;
    if (kind == TETHER_TRANSPORT_UART) {
        size_t flen = 0;
        if (tether_uart_frame_encode(msg, len, frame, sizeof frame, &flen) == 0)
            write_all_raw(fd, frame, flen);
    } else {
        uint8_t hdr[TETHER_STREAM_HEADER_BYTES];
        if (tether_stream_frame_header(hdr, len) == 0) {
            memcpy(frame, hdr, sizeof hdr);
            memcpy(frame + sizeof hdr, msg, len);
            write_all_raw(fd, frame, sizeof hdr + len);
        }
    }
}

static tether_posix_call_stack *g_call_stack; /* its guard faults are not crashes */

static void fatal_handler(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    /* a call going deeper into the dedicated stack than any before: lift the guard, retry */
    if ((sig == SIGSEGV || sig == SIGBUS) && si && g_call_stack &&
        tether_posix_call_stack_fault(g_call_stack, si->si_addr))
        return;
    if (g_in_call && g_fd_write >= 0) {
        /* the daemon may have condemned this call already (it answers then): stop here */
        if (!watch_leave_call(TETHERD_PHASE_REPORTING))
            for (;;)
                pause();
        char text[512];
        tether_format(text, sizeof text,
                      "function '%s' crashed with signal %d (%s); the session was ended",
                      g_func_name, sig, sig_name(sig));
        tetherd_write_error(g_fd_write, g_kind, g_call_id, TETHER_ERR_CRASHED, text);
        char line[600];
        size_t n = tether_format(line, sizeof line, "tetherd[%d]: %s\n", (int)getpid(), text);
        if (n >= sizeof line)
            n = sizeof line - 1;
        write_all_raw(STDERR_FILENO, (const uint8_t *)line, n);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    _exit(128 + sig);
}

static void install_fatal_handlers(void) {
    static uint8_t altstack[64 * 1024];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fatal_handler;
    /* not SA_RESETHAND: a guard fault of the call stack returns and the handler stays */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* Before running uploaded code: the fatal-signal handler's context and the watch, through
 * which the daemon bounds the call (it kills the session process at the call timeout and
 * answers the call itself: no timer here, so no system call on the way in or out). */
static void call_guard_begin(session *s, uint32_t id, const char *name, uint32_t timeout_ms) {
    g_call_id = id;
    snprintf(g_func_name, sizeof g_func_name, "%s", name);
    g_fd_write = s->t->fd_write;
    g_kind = s->t->kind;
    if (g_watch) {
        g_watch->call_id = id;
        g_watch->timeout_ms = timeout_ms;
        memcpy(g_watch->func, g_func_name, sizeof g_watch->func);
        watch_set(TETHERD_PHASE_CALL,
                  timeout_ms ? tetherd_now_ns() + (uint64_t)timeout_ms * 1000000u : 0);
    }
    g_in_call = 1;
}

/* After the call returned. */
static void call_guard_end(void) {
    g_in_call = 0;
    if (!watch_leave_call(TETHERD_PHASE_BUSY))
        for (;;) /* the daemon answered this call and is killing the process */
            pause();
}

/* ---- output ---- */

/* ops->send of the server core: one encoded message (replies and LOG). */
static int send_bytes(void *ctx, const uint8_t *bytes, size_t len) {
    session *s = ctx;
    return tether_transport_send(s->t, bytes, len, 30000);
}

/* ---- session state ---- */

static void session_free_all(session *s) {
    for (int i = 0; i < MAX_ARRAYS; i++)
        if (s->arrays[i].handle) {
#ifdef TETHERD_HAVE_OPENCL
            tetherd_cl_mem_free(s->arrays[i].clm);
#endif
            free(s->arrays[i].mem);
            memset(&s->arrays[i], 0, sizeof s->arrays[i]);
        }
    s->allocated = 0;
    memset(s->pool_used, 0, sizeof s->pool_used);
    memset(s->funcs, 0, sizeof s->funcs);
    for (int i = 0; i < MAX_MODULES; i++)
        if (s->modules[i].used) {
#ifdef TETHERD_HAVE_OPENCL
            tetherd_cl_program_free(s->modules[i].prog);
#endif
            if (s->modules[i].dl)
                dlclose(s->modules[i].dl);
            memset(&s->modules[i], 0, sizeof s->modules[i]);
        }
    for (int i = 0; i < MAX_UPLOADS; i++)
        if (s->uploads[i].used) {
            if (s->uploads[i].fd >= 0)
                close(s->uploads[i].fd);
            unlink(s->uploads[i].path);
            memset(&s->uploads[i], 0, sizeof s->uploads[i]);
        }
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_close(s->cl);
    s->cl = NULL;
#endif
}

#ifdef TETHERD_HAVE_OPENCL
static int ensure_cl(session *s) {
    if (s->cl)
        return 0;
    if (!s->cfg->cl_max_width)
        return tether_set_error(TETHER_ERR_UNSUPPORTED, "this device has no OpenCL layer");
    return tetherd_cl_open(&s->cl);
}
#endif

/* A global array that OpenCL kernels used is synchronised back to host memory only when the host
 * side needs it (a copy, a CPU call), not after every launch: a chain of kernels over the same
 * buffers (a compiled model, the params blob) costs no map/unmap between its launches. */
static int host_view(session *s, array *a) {
#ifdef TETHERD_HAVE_OPENCL
    if (a->cl_dirty) {
        if (tetherd_cl_buffer_sync(s->cl, a->clm, 1))
            return -1;
        a->cl_dirty = 0;
    }
#else
    (void)s;
    (void)a;
#endif
    return 0;
}

static array *find_array(session *s, uint64_t h) {
    if (h == 0)
        return NULL;
    for (int i = 0; i < MAX_ARRAYS; i++)
        if (s->arrays[i].handle == h)
            return &s->arrays[i];
    return NULL;
}

static module *find_module(session *s, uint64_t h) {
    for (int i = 0; i < MAX_MODULES; i++)
        if (s->modules[i].used && s->modules[i].handle == h)
            return &s->modules[i];
    return NULL;
}

/* ---- the built-in system library (module 0) ---- */

static int32_t sys_null(tether_value *args, int32_t *codes, int32_t n, tether_value *ret,
                        int32_t *ret_code, void *rh) {
    (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)rh;
    return 0;
}

static int32_t sys_nop1(void *p) {
    (void)p;
    return 0;
}

/* tether.null and tether.nop1 are in every device's system library (the MCU firmware's too). */
static const tether_func_entry sys_entries[] = {
    {"tether.null", TETHER_ABI_PACKED, -1, {.packed = sys_null}},
    {"tether.nop1", TETHER_ABI_UNPACKED, 1, {.unpacked = (tether_unpacked_func)sys_nop1}},
};
static const tether_func_registry sys_registry = {sys_entries, 2};

/* ---- handlers ---- */

/* ops->hello (the core checked the version and gates on auth_required afterwards). */
static int on_hello(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    session *s = ctx;
    const tether_rpc_hello_req *h = &req->u.hello_req;
    if (s->hello_done)
        session_free_all(s); /* a second HELLO starts a fresh session */
    s->peer_max_frame = h->max_frame < s->t->max_frame ? h->max_frame : s->t->max_frame;
    s->hello_done = 1;
    /* a serial line to a host that takes link-2 frames: CRC-32 frames from this reply on, and
     * a NAK for every damaged frame so that the host resends at once (docs/rpc.md) */
    bool link2 = s->t->kind == TETHER_TRANSPORT_UART && (h->link & TETHER_RPC_LINK_UART2);
    s->t->link2 = link2;
    s->t->send_naks = link2;
    static char triple[96 + 16], arch[96], cpu[64], features[TETHER_RPC_MAX_FEATURES];
    tetherd_cpu_describe(cpu, sizeof cpu, features, sizeof features);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(arch, sizeof arch, "%.64s", u.machine);
        snprintf(triple, sizeof triple, "%.64s-linux-gnu", u.machine);
    }
    tether_rpc_hello_rep *r = &rep->u.hello_rep;
    r->version = TETHER_RPC_VERSION;
    r->triple = tether_rpc_str_c(triple);
    r->arch = tether_rpc_str_c(arch);
    r->cpu = tether_rpc_str_c(cpu);
    r->cpu_features = tether_rpc_str_c(features);
    uint16_t one = 1;
    r->little_endian = *(uint8_t *)&one == 1;
    r->pointer_bits = (uint32_t)(sizeof(void *) * 8);
    r->max_frame = s->t->max_frame;
    r->window = 4; /* chunks in flight: requests wait in the socket or tty, replies in the cache */
    r->clock_hz = 0;
    r->scopes = TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_GLOBAL);
    if (s->cfg->cl_max_width) {
        r->scopes |= TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_TEXTURE) |
                     TETHER_RPC_SCOPE_BIT(TETHER_SCOPE_TEXTURE_WEIGHT);
        r->opencl = true;
        r->image_max_width = s->cfg->cl_max_width;
        r->image_max_height = s->cfg->cl_max_height;
    }
    if (s->cfg->npools == 0) {
        r->num_pools = 1;
        r->pools[0] = tether_rpc_str_c("dram");
    } else {
        r->num_pools = (uint32_t)s->cfg->npools;
        for (int i = 0; i < s->cfg->npools; i++) {
            r->pools[i] = tether_rpc_str_c(s->cfg->pool_name[i]);
            r->pool_sizes[i] = s->cfg->pool_capacity[i];
        }
    }
    r->heap_size = s->cfg->max_alloc;
    r->stack_size = s->cfg->stack_size;
    r->link = link2 ? TETHER_RPC_LINK_UART2 : 0;
    r->auth_required = s->cfg->token != NULL;
    if (r->auth_required) {
        tether_rpc_auth_nonce(s->nonce);
        r->nonce.ptr = s->nonce;
        r->nonce.len = TETHER_RPC_NONCE_BYTES;
    }
    tetherd_log(s->cfg, 1, s->peer, "hello from client '%.*s'", (int)h->client.len,
                h->client.ptr ? h->client.ptr : "");
    return 0;
}

/* ops->auth: the mac against the nonce of the last HELLO (the core answers and, on a wrong
 * mac, ends the session having executed nothing). */
static int on_auth(void *ctx, tether_rpc_bytes mac) {
    session *s = ctx;
    if (tether_rpc_auth_verify(s->cfg->token, s->cfg->token_len, s->nonce, mac)) {
        tetherd_log(s->cfg, 0, s->peer, "auth failed: wrong token, closing the session");
        return TETHER_ERR_AUTH;
    }
    tetherd_log(s->cfg, 0, s->peer, "authenticated");
    return 0;
}

static upload *find_upload_id(session *s, uint32_t id) {
    for (int i = 0; i < MAX_UPLOADS; i++)
        if (s->uploads[i].used && s->uploads[i].id == id)
            return &s->uploads[i];
    return NULL;
}

static void drop_upload(upload *u) {
    if (u->fd >= 0)
        close(u->fd);
    unlink(u->path);
    memset(u, 0, sizeof *u);
    u->fd = -1;
}

static int on_upload(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_upload_req *q = &req->u.upload_req;
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(q->name, name, sizeof name, "upload name") || name[0] == 0)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "UPLOAD: bad module name");
    if (q->kind != TETHER_RPC_MODULE_SHARED_OBJECT &&
        !(q->kind == TETHER_RPC_MODULE_OPENCL_SOURCE && s->cfg->cl_max_width))
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "UPLOAD '%s': module kind %u is not supported by this tetherd "
                                "(shared objects, and OpenCL sources when HELLO says opencl)",
                                name, (unsigned)q->kind);
    if (q->total_size == 0 || q->total_size > s->cfg->max_upload)
        return tether_set_error(
            TETHER_ERR_LIMIT,
            "UPLOAD '%s': %llu bytes is over the session upload limit of %llu bytes", name,
            (unsigned long long)q->total_size, (unsigned long long)s->cfg->max_upload);
    if (q->sha256.len != TETHER_RPC_HASH_BYTES)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "UPLOAD '%s': sha256 must be 32 bytes",
                                name);
    upload *u = NULL;
    for (int i = 0; i < MAX_UPLOADS; i++) /* same name replaces the old upload */
        if (s->uploads[i].used && strcmp(s->uploads[i].name, name) == 0)
            drop_upload(&s->uploads[i]);
    for (int i = 0; i < MAX_UPLOADS && !u; i++)
        if (!s->uploads[i].used)
            u = &s->uploads[i];
    if (!u)
        return tether_set_error(TETHER_ERR_LIMIT, "UPLOAD '%s': more than %d uploads", name,
                                MAX_UPLOADS);
    memset(u, 0, sizeof *u);
    u->id = ++s->next_upload;
    snprintf(u->path, sizeof u->path, "%s/u%u.bin", s->dir, (unsigned)u->id);
    u->fd = open(u->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (u->fd < 0) {
        int e = errno;
        memset(u, 0, sizeof *u);
        return tether_set_error(TETHER_ERR_IO, "UPLOAD '%s': cannot create file: %s", name,
                                strerror(e));
    }
    u->used = 1;
    snprintf(u->name, sizeof u->name, "%s", name);
    u->kind = q->kind;
    u->total = q->total_size;
    memcpy(u->hash, q->sha256.ptr, TETHER_RPC_HASH_BYTES);
    tether_sha256_init(&u->sha);
    rep->u.upload_rep.upload_id = u->id;
    int hit = tetherd_cache_fetch(s->cfg, u->hash, u->total, u->fd);
    if (hit < 0) { /* the file could not be emptied after a failed fetch: start it again */
        close(u->fd);
        u->fd = open(u->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (u->fd < 0) {
            int e = errno;
            drop_upload(u);
            return tether_set_error(TETHER_ERR_IO, "UPLOAD '%s': cannot reset the upload file: %s",
                                    name, strerror(e));
        }
        hit = 0;
    }
    if (hit) { /* the same bytes came before: complete without a chunk */
        close(u->fd);
        u->fd = -1;
        u->received = u->total;
        u->complete = 1;
        rep->u.upload_rep.cached = true;
        tetherd_log(s->cfg, 0, s->peer,
                    "upload '%s' from the upload cache (%llu bytes, hash verified)", name,
                    (unsigned long long)u->total);
        return 0;
    }
    tetherd_log(s->cfg, 0, s->peer, "upload '%s' started (%llu bytes)", name,
                (unsigned long long)u->total);
    return 0;
}

static int on_upload_chunk(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_upload_chunk_req *q = &req->u.upload_chunk_req;
    upload *u = find_upload_id(s, q->upload_id);
    if (!u)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "UPLOAD_CHUNK: no upload with id %u",
                                (unsigned)q->upload_id);
    if (u->complete || q->offset != u->received) {
        /* a retransmission of an acknowledged chunk: report progress, write nothing */
        if (q->offset + q->data.len <= u->received) {
            rep->u.upload_chunk_rep.received = u->received;
            rep->u.upload_chunk_rep.complete = u->complete;
            return 0;
        }
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "UPLOAD_CHUNK '%s': offset %llu, expected %llu", u->name,
                                (unsigned long long)q->offset, (unsigned long long)u->received);
    }
    if (q->data.len > u->total - u->received) {
        char name[TETHER_RPC_MAX_NAME];
        snprintf(name, sizeof name, "%s", u->name);
        drop_upload(u);
        return tether_set_error(TETHER_ERR_LIMIT,
                                "UPLOAD_CHUNK '%s': data past the announced size; upload discarded",
                                name);
    }
    size_t off = 0;
    while (off < q->data.len) {
        ssize_t n = write(u->fd, q->data.ptr + off, q->data.len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            drop_upload(u);
            return tether_set_error(TETHER_ERR_IO, "UPLOAD_CHUNK: write failed: %s", strerror(e));
        }
        off += (size_t)n;
    }
    tether_sha256_update(&u->sha, q->data.ptr, q->data.len);
    u->received += q->data.len;
    if (u->received == u->total) {
        uint8_t h[32];
        tether_sha256_final(&u->sha, h);
        close(u->fd);
        u->fd = -1;
        if (memcmp(h, u->hash, 32) != 0) {
            char name[TETHER_RPC_MAX_NAME];
            snprintf(name, sizeof name, "%s", u->name);
            drop_upload(u);
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "UPLOAD '%s': content hash does not match; upload discarded",
                                    name);
        }
        u->complete = 1;
        tetherd_log(s->cfg, 0, s->peer, "upload '%s' complete (%llu bytes, hash verified)", u->name,
                    (unsigned long long)u->total);
        tetherd_cache_store(s->cfg, u->hash, u->path, u->total);
    }
    rep->u.upload_chunk_rep.received = u->received;
    rep->u.upload_chunk_rep.complete = u->complete;
    return 0;
}

/* SHA-256 of a file; 0 on success. */
static int hash_file(const char *path, uint8_t out[32]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    tether_sha256_ctx c;
    tether_sha256_init(&c);
    uint8_t buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        tether_sha256_update(&c, buf, (size_t)n);
    }
    close(fd);
    tether_sha256_final(&c, out);
    return 0;
}

static int on_load_module(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(req->u.load_module_req.name, name, sizeof name, "module name"))
        return tether_set_error(TETHER_ERR_INVALID_ARG, "LOAD_MODULE: bad module name");
    upload *u = NULL;
    for (int i = 0; i < MAX_UPLOADS; i++)
        if (s->uploads[i].used && strcmp(s->uploads[i].name, name) == 0)
            u = &s->uploads[i];
    if (!u || !u->complete)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "LOAD_MODULE: no complete upload named '%s'",
                                name);
    module *mod = NULL;
    for (int i = 0; i < MAX_MODULES && !mod; i++)
        if (!s->modules[i].used)
            mod = &s->modules[i];
    if (!mod)
        return tether_set_error(TETHER_ERR_LIMIT, "LOAD_MODULE '%s': more than %d modules", name,
                                MAX_MODULES);
    uint8_t h[32];
    if (hash_file(u->path, h) || memcmp(h, u->hash, 32) != 0)
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "LOAD_MODULE '%s': file content no longer matches its hash", name);
#ifdef TETHERD_HAVE_OPENCL
    if (u->kind == TETHER_RPC_MODULE_OPENCL_SOURCE) {
        char *src = malloc(u->total + 1);
        FILE *f = src ? fopen(u->path, "rb") : NULL;
        int ok = f && fread(src, 1, u->total, f) == u->total;
        if (f)
            fclose(f);
        tetherd_cl_program *prog = NULL;
        int rc = ok ? ensure_cl(s) : TETHER_ERR_IO;
        if (ok && rc == 0)
            rc = tetherd_cl_build(s->cl, src, u->total, &prog);
        free(src);
        if (rc)
            return tether_set_error(rc, "LOAD_MODULE '%s': %s", name,
                                    ok ? tether_last_error() : "cannot read the upload");
        mod->used = 1;
        mod->handle = ++s->next_handle;
        mod->prog = prog;
        tetherd_log(s->cfg, 0, s->peer, "OpenCL program '%s' built (%d kernels)", name,
                    tetherd_cl_program_count(prog));
        rep->u.load_module_rep.module = mod->handle;
        rep->u.load_module_rep.num_functions = (uint32_t)tetherd_cl_program_count(prog);
        return 0;
    }
#endif
    void *dl = dlopen(u->path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        return tether_set_error(TETHER_ERR_INVALID_ARG, "LOAD_MODULE '%s': dlopen failed: %s", name,
                                e ? e : "unknown error");
    }
    const tether_func_registry *reg = dlsym(dl, "tether_module_registry");
    if (!reg) {
        dlclose(dl);
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "LOAD_MODULE '%s': the module exports no tether_module_registry",
                                name);
    }
    if (tether_registry_check(reg)) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        dlclose(dl);
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "LOAD_MODULE '%s': bad tether_module_registry: %s", name, e);
    }
    mod->used = 1;
    mod->handle = ++s->next_handle;
    mod->dl = dl;
    mod->reg = reg;
    tetherd_log(s->cfg, 0, s->peer, "module '%s' loaded (%zu functions)", name, reg->count);
    rep->u.load_module_rep.module = mod->handle;
    rep->u.load_module_rep.num_functions = (uint32_t)reg->count;
    return 0;
}

static int on_unload(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    (void)rep; /* no reply fields */
    module *mod = find_module(s, req->u.unload_req.module);
    if (!mod)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "UNLOAD: no module with handle %llu",
                                (unsigned long long)req->u.unload_req.module);
    for (int i = 0; i < MAX_FUNCS; i++)
        if (s->funcs[i].used && s->funcs[i].module == mod->handle)
            memset(&s->funcs[i], 0, sizeof s->funcs[i]);
    if (mod->dl)
        dlclose(mod->dl);
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_program_free(mod->prog);
#endif
    memset(mod, 0, sizeof *mod);
    return 0;
}

static int on_get_function(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_get_function_req *q = &req->u.get_function_req;
    char name[TETHER_RPC_MAX_NAME];
    if (tether_rpc_str_copy(q->name, name, sizeof name, "function name"))
        return tether_set_error(TETHER_ERR_INVALID_ARG, "GET_FUNCTION: bad function name");
    const tether_func_registry *reg = &sys_registry;
    if (q->module != 0) {
        module *mod = find_module(s, q->module);
        if (!mod)
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "GET_FUNCTION '%s': no module with handle %llu", name,
                                    (unsigned long long)q->module);
        reg = mod->reg;
#ifdef TETHERD_HAVE_OPENCL
        if (mod->prog) {
            int nargs = 0;
            int k = tetherd_cl_kernel_find(mod->prog, name, &nargs);
            if (k < 0)
                return tether_set_error(TETHER_ERR_NOT_FOUND,
                                        "GET_FUNCTION: kernel '%s' is not in the OpenCL program",
                                        name);
            int slot = -1;
            for (int i = 0; i < MAX_FUNCS && slot < 0; i++)
                if (!s->funcs[i].used)
                    slot = i;
            if (slot < 0)
                return tether_set_error(TETHER_ERR_LIMIT, "GET_FUNCTION: more than %d functions",
                                        MAX_FUNCS);
            s->funcs[slot].used = 1;
            s->funcs[slot].module = q->module;
            s->funcs[slot].entry = NULL;
            s->funcs[slot].kernel = k;
            s->funcs[slot].kernel_args = nargs;
            rep->u.get_function_rep.func = (uint64_t)slot + 1;
            rep->u.get_function_rep.abi = TETHER_ABI_PACKED;
            rep->u.get_function_rep.num_args = nargs;
            return 0;
        }
#endif
    }
    const tether_func_entry *e;
    if (tether_registry_find(reg, name, &e))
        return tether_set_error(TETHER_ERR_NOT_FOUND,
                                "GET_FUNCTION: function '%s' is not in the module's registry",
                                name);
    int slot = -1;
    for (int i = 0; i < MAX_FUNCS; i++) {
        if (s->funcs[i].used && s->funcs[i].entry == e) {
            slot = i;
            break;
        }
        if (!s->funcs[i].used && slot < 0)
            slot = i;
    }
    if (slot < 0)
        return tether_set_error(TETHER_ERR_LIMIT, "GET_FUNCTION: more than %d functions",
                                MAX_FUNCS);
    s->funcs[slot].used = 1;
    s->funcs[slot].module = q->module;
    s->funcs[slot].entry = e;
    rep->u.get_function_rep.func = (uint64_t)slot + 1;
    rep->u.get_function_rep.abi = e->abi;
    rep->u.get_function_rep.num_args = e->num_args;
    return 0;
}

static int on_alloc(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_alloc_req *q = &req->u.alloc_req;
    DLDataType dt = {q->dtype_code, q->dtype_bits, q->dtype_lanes};
    if (!tether_dtype_valid(dt))
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "ALLOC: invalid dtype (code %u, bits %u, lanes %u)", q->dtype_code,
                                q->dtype_bits, q->dtype_lanes);
    int texture = q->scope == TETHER_SCOPE_TEXTURE || q->scope == TETHER_SCOPE_TEXTURE_WEIGHT;
    if (texture && !tether_dtype_equal(dt, TETHER_FLOAT32))
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "ALLOC: texture scopes hold float32 (CL_RGBA/CL_FLOAT images)");
    if (q->scope != TETHER_SCOPE_GLOBAL && !(texture && s->cfg->cl_max_width))
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "ALLOC: scope '%s' is not available on this device (no OpenCL "
                                "layer); HELLO lists the supported scopes",
                                tether_scope_name((tether_scope)q->scope)
                                    ? tether_scope_name((tether_scope)q->scope)
                                    : "unknown");
    char pool[TETHER_POOL_NAME_MAX] = "";
    int pool_index = -1;
    if (q->pool.len) {
        if (tether_rpc_str_copy(q->pool, pool, sizeof pool, "pool") || tether_pool_name_check(pool))
            return tether_set_error(TETHER_ERR_INVALID_ARG, "ALLOC: bad pool name");
        char have[TETHER_RPC_MAX_POOLS * (TETHER_POOL_NAME_MAX + 2)] = "";
        for (int i = 0; i < s->cfg->npools; i++) {
            if (strcmp(s->cfg->pool_name[i], pool) == 0)
                pool_index = i;
            size_t n = strlen(have);
            snprintf(have + n, sizeof have - n, "%s%s", i ? ", " : "", s->cfg->pool_name[i]);
        }
        if (pool_index < 0 && !(s->cfg->npools == 0 && strcmp(pool, "dram") == 0))
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "ALLOC: no pool '%s' on this device (its pools: %s; tetherd "
                                    "--pool NAME:SIZE adds one)",
                                    pool, s->cfg->npools ? have : "dram");
    }
    size_t nbytes;
    if (tether_shape_bytes(q->shape, (int)q->ndim, dt, &nbytes))
        return tether_set_error(TETHER_ERR_INVALID_ARG, "ALLOC: %s", tether_last_error());
    if (pool_index >= 0 && s->cfg->pool_capacity[pool_index] &&
        nbytes > s->cfg->pool_capacity[pool_index] - s->pool_used[pool_index])
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "ALLOC: %zu bytes do not fit pool '%s' (%llu of %llu bytes in "
                                "use)",
                                nbytes, pool, (unsigned long long)s->pool_used[pool_index],
                                (unsigned long long)s->cfg->pool_capacity[pool_index]);
    if (nbytes > s->cfg->max_alloc || s->allocated + nbytes > s->cfg->max_alloc)
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY,
                                "ALLOC: %zu bytes would exceed the session limit of %llu bytes "
                                "(%llu in use)",
                                nbytes, (unsigned long long)s->cfg->max_alloc,
                                (unsigned long long)s->allocated);
    array *a = NULL;
    for (int i = 0; i < MAX_ARRAYS && !a; i++)
        if (!s->arrays[i].handle)
            a = &s->arrays[i];
    if (!a)
        return tether_set_error(TETHER_ERR_LIMIT, "ALLOC: more than %d arrays", MAX_ARRAYS);
    size_t cap = (nbytes + 63) / 64 * 64;
    void *mem = aligned_alloc(64, cap ? cap : 64);
    if (!mem)
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "ALLOC: out of host memory (%zu bytes)",
                                nbytes);
    memset(mem, 0, cap ? cap : 64);
#ifdef TETHERD_HAVE_OPENCL
    if (texture) {
        int rc = ensure_cl(s);
        if (!rc)
            rc = tetherd_cl_image(s->cl, (tether_scope)q->scope, q->shape, (int)q->ndim, &a->clm);
        if (rc) {
            free(mem);
            return tether_set_error(rc, "ALLOC %s: %s", tether_scope_name((tether_scope)q->scope),
                                    tether_last_error());
        }
    }
#endif
    DLDevice dev = {kDLCPU, 0};
    if (tether_ndarray_wrap(&a->nd, mem, q->shape, (int)q->ndim, dt, dev, (tether_scope)q->scope)) {
#ifdef TETHERD_HAVE_OPENCL
        tetherd_cl_mem_free(a->clm);
        a->clm = NULL;
#endif
        free(mem);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "ALLOC: %s", tether_last_error());
    }
    snprintf(a->nd.pool, sizeof a->nd.pool, "%s", pool);
    a->mem = mem;
    a->nbytes = nbytes;
    a->pool = pool_index;
    if (pool_index >= 0)
        s->pool_used[pool_index] += nbytes;
    a->handle = ++s->next_handle;
    s->allocated += nbytes;
    rep->u.alloc_rep.array = a->handle;
    rep->u.alloc_rep.nbytes = nbytes;
    return 0;
}

static int on_free(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    (void)rep; /* no reply fields */
    array *a = find_array(s, req->u.free_req.handle);
    if (!a)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "FREE: no array with handle %llu",
                                (unsigned long long)req->u.free_req.handle);
    s->allocated -= a->nbytes;
    if (a->pool >= 0)
        s->pool_used[a->pool] -= a->nbytes;
#ifdef TETHERD_HAVE_OPENCL
    tetherd_cl_mem_free(a->clm);
#endif
    free(a->mem);
    memset(a, 0, sizeof *a);
    return 0;
}

/* t->place: a large COPY_TO's data is read from the socket straight into its array (a host
 * array of an authenticated session, in bounds, with no OpenCL buffer over it); anything else,
 * or anything this does not understand, goes the usual way through the frame buffer and is
 * checked there. The head is [COPY_TO, id, array, offset, bin header]. */
static bool place_copy_to(void *ctx, const uint8_t *head, size_t head_len, size_t frame_len,
                          uint8_t **dst, size_t *data_off) {
    session *s = ctx;
    if (!s->srv.hello_done || !s->srv.authed)
        return false;
    tether_mp_reader r;
    tether_mp_reader_init(&r, head, head_len);
    uint32_t n;
    uint64_t type, id, handle, offset;
    if (tether_mp_read_array(&r, &n) || n != 5 || tether_mp_read_uint(&r, &type) ||
        type != TETHER_RPC_COPY_TO || tether_mp_read_uint(&r, &id) ||
        tether_mp_read_uint(&r, &handle) || tether_mp_read_uint(&r, &offset) || r.pos >= head_len)
        return false;
    size_t p = r.pos, hn;
    uint64_t len;
    if (head[p] == 0xc4 && p + 2 <= head_len)
        len = head[p + 1], hn = 2;
    else if (head[p] == 0xc5 && p + 3 <= head_len)
        len = (uint64_t)head[p + 1] << 8 | head[p + 2], hn = 3;
    else if (head[p] == 0xc6 && p + 5 <= head_len)
        len = (uint64_t)head[p + 1] << 24 | (uint64_t)head[p + 2] << 16 |
              (uint64_t)head[p + 3] << 8 | head[p + 4],
        hn = 5;
    else
        return false;
    if (p + hn + len != frame_len)
        return false;
    array *a = find_array(s, handle);
    if (!a || offset > a->nbytes || len > a->nbytes - offset)
        return false;
#ifdef TETHERD_HAVE_OPENCL
    if (a->clm)
        return false;
#endif
    *dst = (uint8_t *)a->mem + offset;
    *data_off = p + hn;
    return true;
}

static int on_copy_to(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_copy_to_req *q = &req->u.copy_to_req;
    array *a = find_array(s, q->array);
    if (!a)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "COPY_TO: no array with handle %llu",
                                (unsigned long long)q->array);
    if (q->offset > a->nbytes || q->data.len > a->nbytes - q->offset)
        return tether_set_error(
            TETHER_ERR_LIMIT, "COPY_TO: bytes [%llu, %llu) are outside the array's %llu bytes",
            (unsigned long long)q->offset, (unsigned long long)(q->offset + q->data.len),
            (unsigned long long)a->nbytes);
    if (host_view(s, a))
        return tether_set_error(TETHER_ERR_IO, "COPY_TO: %s", tether_last_error());
    /* placed: the transport read the data straight into the array already */
    bool placed = s->placed_src && q->data.ptr == s->placed_src &&
                  (uint8_t *)a->mem + q->offset == s->placed_dst;
    if (q->data.len && !placed)
        memcpy((uint8_t *)a->mem + q->offset, q->data.ptr, q->data.len);
#ifdef TETHERD_HAVE_OPENCL
    if (a->nd.scope != TETHER_SCOPE_GLOBAL &&
        tetherd_cl_image_write(s->cl, a->clm, a->mem, q->offset, q->data.len))
        return tether_set_error(TETHER_ERR_IO, "COPY_TO: %s", tether_last_error());
#endif
    rep->u.copy_to_rep.written = q->data.len;
    return 0;
}

static int on_copy_from(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_copy_from_req *q = &req->u.copy_from_req;
    array *a = find_array(s, q->array);
    if (!a)
        return tether_set_error(TETHER_ERR_NOT_FOUND, "COPY_FROM: no array with handle %llu",
                                (unsigned long long)q->array);
    uint32_t maxc = tether_rpc_chunk_max(s->peer_max_frame);
    if (q->length > maxc)
        return tether_set_error(TETHER_ERR_LIMIT,
                                "COPY_FROM: length %llu is over the chunk limit %u",
                                (unsigned long long)q->length, (unsigned)maxc);
    if (q->offset > a->nbytes || q->length > a->nbytes - q->offset)
        return tether_set_error(
            TETHER_ERR_LIMIT, "COPY_FROM: bytes [%llu, %llu) are outside the array's %llu bytes",
            (unsigned long long)q->offset, (unsigned long long)(q->offset + q->length),
            (unsigned long long)a->nbytes);
    if (host_view(s, a))
        return tether_set_error(TETHER_ERR_IO, "COPY_FROM: %s", tether_last_error());
#ifdef TETHERD_HAVE_OPENCL
    if (a->nd.scope != TETHER_SCOPE_GLOBAL &&
        tetherd_cl_image_read(s->cl, a->clm, a->mem, q->offset, q->length))
        return tether_set_error(TETHER_ERR_IO, "COPY_FROM: %s", tether_last_error());
#endif
    rep->u.copy_from_rep.data.ptr = (const uint8_t *)a->mem + q->offset;
    rep->u.copy_from_rep.data.len = (uint32_t)q->length;
    return 0;
}

/* ---- calls ---- */

typedef struct call_ctx {
    const tether_func_entry *entry;
    tether_value args[TETHER_RPC_MAX_ARGS];
    int32_t codes[TETHER_RPC_MAX_ARGS];
    int32_t n;
    int32_t func_ret;
    int status;
    uint64_t elapsed_ns;
    char err[TETHER_ERROR_MSG_MAX];
    session *s;
    size_t max_stack;
} call_ctx;

static uint64_t now_ns(void) {
    return tetherd_now_ns();
}

static void call_tramp(void *p) {
    call_ctx *c = p;
    tether_clear_error();
    uint64_t t0 = now_ns();
    c->status = tether_call(c->entry, c->args, c->codes, c->n, &c->func_ret);
    c->elapsed_ns = now_ns() - t0;
    if (c->status || c->func_ret)
        snprintf(c->err, sizeof c->err, "%s", tether_last_error());
}

/* Resolves the array arguments of a CALL/TIME the core has validated (function, ABI, counts,
 * argument kinds; scalars and strings are already converted in call->values). */
static int prepare_call(session *s, const tether_server_call *call, call_ctx *c) {
    const tether_rpc_invoke *inv = call->inv;
    memset(c, 0, sizeof *c);
    c->s = s;
    c->entry = call->fn.impl;
    const char *what = tether_rpc_type_name(call->type);
    const char *fname = c->entry->name;
    c->n = (int32_t)inv->num_args;
    memcpy(c->args, call->values, sizeof c->args[0] * inv->num_args);
    memcpy(c->codes, call->codes, sizeof c->codes[0] * inv->num_args);
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *a = &inv->args[i];
        if (a->type_code != TETHER_TYPE_DLTENSOR && a->type_code != TETHER_TYPE_HANDLE)
            continue;
        array *arr = find_array(s, a->v.v_handle);
        if (!arr)
            return tether_set_error(TETHER_ERR_NOT_FOUND,
                                    "%s '%s': argument %u: no array with handle %llu", what, fname,
                                    (unsigned)i, (unsigned long long)a->v.v_handle);
        if (host_view(s, arr))
            return tether_set_error(TETHER_ERR_IO, "%s '%s': argument %u: %s", what, fname,
                                    (unsigned)i, tether_last_error());
        if (a->type_code == TETHER_TYPE_DLTENSOR)
            c->args[i].v_handle = &arr->nd.dl;
        else
            c->args[i].v_handle = arr->mem;
    }
    return 0;
}

/* Empty functions of both ABIs that record where their frame is: the stack pointer just before
 * the call instruction is the frame address + 16 on x86-64 (return address, saved frame
 * pointer) and on AArch64 (the frame record). */
static volatile uintptr_t g_empty_frame;

__attribute__((noinline)) static int32_t empty_packed(tether_value *args, int32_t *codes, int32_t n,
                                                      tether_value *ret, int32_t *ret_code,
                                                      void *ctx) {
    (void)args, (void)codes, (void)n, (void)ret, (void)ret_code, (void)ctx;
    g_empty_frame = (uintptr_t)__builtin_frame_address(0);
    return 0;
}

__attribute__((noinline)) static int32_t empty_unpacked(void *a) {
    (void)a;
    g_empty_frame = (uintptr_t)__builtin_frame_address(0);
    return 0;
}

/* The stack bytes of the call path up to the called function (the switch to the call stack,
 * call_tramp, tether_call and its argument array) for the ABI of c's entry, found once per
 * session from where an empty function's frame lies. CALL reports the bytes touched below that
 * point, so stack_bytes is the function's own high-water mark (with the return address on x86,
 * as gcc's -fstack-usage counts it), as the MCU firmware measures it, and the packed and
 * unpacked figures of one model compare the ABIs rather than tetherd's machinery. What the
 * trampoline touches beside the call (reading the clock) can only raise the figure, never
 * lower it below the function's own use. */
static size_t call_overhead(session *s, tether_abi abi) {
    int k = abi == TETHER_ABI_PACKED;
    if (!s->call_overhead[k]) {
        tether_func_entry e = {"(empty)", abi, 1, {0}};
        if (k)
            e.fn.packed = empty_packed;
        else
            e.fn.unpacked = (tether_unpacked_func)empty_unpacked;
        call_ctx c;
        memset(&c, 0, sizeof c);
        c.entry = &e;
        c.s = s;
        c.n = 1;
        c.codes[0] = TETHER_TYPE_NULL;
        g_empty_frame = 0;
        size_t used = 0;
        uintptr_t top = (uintptr_t)s->call_stack.base + s->call_stack.size;
        uintptr_t sp = 0;
        if (!tether_posix_call_on(&s->call_stack, call_tramp, &c, &used) && !c.status)
            sp = g_empty_frame + 16;
        /* not found (another architecture, an odd frame): nothing is subtracted */
        s->call_overhead[k] = sp > (uintptr_t)s->call_stack.base && sp < top ? top - sp : 1;
    }
    return s->call_overhead[k];
}

static int run_on_stack(call_ctx *c) {
    size_t base = call_overhead(c->s, c->entry->abi);
    size_t used = 0;
    int rc = tether_posix_call_on(&c->s->call_stack, call_tramp, c, &used);
    used = used > base ? used - base : 1; /* touched nothing below the call: its return address */
    if (used > c->max_stack)
        c->max_stack = used;
    return rc;
}

static int call_failed_reply(const call_ctx *c, uint32_t type) {
    if (c->status)
        return tether_set_error(c->status, "%s '%s': %s", tether_rpc_type_name(type),
                                c->entry->name, c->err);
    int code =
        c->func_ret < 0 && c->func_ret >= TETHER_ERR_INTERNAL ? c->func_ret : TETHER_ERR_STATE;
    return tether_set_error(code, "function '%s' returned %d%s%s", c->entry->name, (int)c->func_ret,
                            c->err[0] ? ": " : "", c->err);
}

#ifdef TETHERD_HAVE_OPENCL
typedef struct cl_job {
    session *s;
    module *mod;
    func *fn;
    tetherd_cl_arg args[TETHER_RPC_MAX_ARGS];
    array *arrs[TETHER_RPC_MAX_ARGS];
    const tether_rpc_invoke *inv;
    uint64_t gpu_ns; /* sum of profiled kernel times (the TIME clock) */
    int rc;
    char err[TETHER_ERROR_MSG_MAX];
} cl_job;

static int32_t cl_run(void *p) {
    cl_job *j = p;
    uint64_t ns = 0;
    j->rc = tetherd_cl_launch(j->s->cl, j->mod->prog, j->fn->kernel, j->args, (int)j->inv->num_args,
                              j->inv->work_dim, j->inv->global, j->inv->local, &ns);
    if (j->rc)
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    j->gpu_ns += ns;
    return j->rc;
}

static uint64_t cl_now(void *p) {
    return ((cl_job *)p)->gpu_ns;
}

static void time_sleep(void *p, uint32_t ms);

/* CALL or TIME of an OpenCL kernel: arrays become images (texture scopes) or buffers over the
 * array memory (global), scalars are converted to the kernel's parameter types; times come from
 * event profiling. */
static int on_cl_invoke(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    const tether_rpc_invoke *inv = call->inv;
    const tether_rpc_time_req *tq = call->time;
    func *fn = &s->funcs[inv->func - 1];
    cl_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.fn = fn;
    j.inv = inv;
    j.mod = find_module(s, fn->module);
    const char *what = tether_rpc_type_name(call->type);
    const char *kname = call->fn.name; /* find_func checked the module */
    for (uint32_t i = 0; i < inv->num_args; i++) {
        const tether_rpc_arg *a = &inv->args[i];
        if (a->type_code == TETHER_TYPE_DLTENSOR || a->type_code == TETHER_TYPE_HANDLE) {
            array *arr = find_array(s, a->v.v_handle);
            if (!arr)
                return tether_set_error(TETHER_ERR_NOT_FOUND,
                                        "%s '%s': argument %u: no array with handle %llu", what,
                                        kname, (unsigned)i, (unsigned long long)a->v.v_handle);
            if (!arr->clm && tetherd_cl_buffer(s->cl, arr->mem, arr->nbytes, &arr->clm))
                return tether_set_error(TETHER_ERR_IO, "%s '%s': %s", what, kname,
                                        tether_last_error());
            j.args[i].mem = arr->clm;
            j.arrs[i] = arr;
        } else if (a->type_code == TETHER_TYPE_INT || a->type_code == TETHER_TYPE_UINT) {
            j.args[i].type_code = a->type_code;
            j.args[i].i = a->v.v_int;
        } else if (a->type_code == TETHER_TYPE_FLOAT) {
            j.args[i].type_code = a->type_code;
            j.args[i].f = a->v.v_float;
        } else {
            return tether_set_error(TETHER_ERR_UNSUPPORTED, "%s '%s': argument %u has type code %d",
                                    what, kname, (unsigned)i, (int)a->type_code);
        }
    }
    int rc;
    call_guard_begin(s, call->id, kname, s->cfg->call_timeout_ms);
    if (tq) {
        tether_time_hooks h = {cl_run, cl_now, time_sleep, &j, NULL};
        tether_time_result res;
        rc = tether_time_evaluate(&h, tq->number, tq->repeat, tq->min_repeat_ms, tq->cooldown_ms,
                                  rep->u.time_rep.seconds, TETHER_RPC_MAX_REPEAT, &res);
        rep->u.time_rep.number = res.number;
        rep->u.time_rep.repeat = res.repeat;
        rep->u.time_rep.zero_timer = res.zero_timer;
    } else {
        rc = cl_run(&j);
        rep->u.call_rep.elapsed_ns = j.gpu_ns;
    }
    call_guard_end();
    if (rc)
        return tether_set_error(rc < 0 ? rc : TETHER_ERR_STATE, "%s '%s': %s", what, kname,
                                j.err[0] ? j.err : tether_last_error());
    for (uint32_t i = 0; i < inv->num_args; i++)
        if (j.arrs[i] && j.arrs[i]->nd.scope == TETHER_SCOPE_GLOBAL)
            j.arrs[i]->cl_dirty = 1; /* synchronised when the host side needs it */
    return 0;
}

static int is_kernel(session *s, uint64_t h) {
    return h >= 1 && h <= MAX_FUNCS && s->funcs[h - 1].used && !s->funcs[h - 1].entry;
}

/* A kernel sequence, resolved: per step its program, kernel and converted arguments. */
typedef struct seq_job {
    session *s;
    uint32_t n;
    struct {
        tetherd_cl_program *prog;
        int kernel;
        const char *name;
        uint32_t first_arg, nargs;
    } st[TETHER_RPC_MAX_SEQ_STEPS];
    tetherd_cl_arg args[TETHER_RPC_MAX_SEQ_ARGS];
    array *arrs[TETHER_RPC_MAX_SEQ_ARGS];
    const tether_rpc_seq_step *steps;
    void *ev[TETHER_RPC_MAX_SEQ_STEPS];
    uint64_t ns[TETHER_RPC_MAX_SEQ_STEPS];      /* the last run's step times */
    uint64_t cum[TETHER_RPC_MAX_SEQ_STEPS];     /* step times summed over all runs */
    uint64_t mark[2][TETHER_RPC_MAX_SEQ_STEPS]; /* cum at the last two clock reads */
    double *per;                                /* TIME_SEQ: [step][repeat] mean seconds */
    uint32_t repeat;
    uint64_t gpu_ns; /* sum of all runs' step times (the TIME_SEQ clock) */
    int failed_step; /* -1 = none */
    char err[TETHER_ERROR_MSG_MAX];
} seq_job;

/* One run of the sequence: every step enqueued back to back, one wait for all. */
static int32_t seq_run(void *p) {
    seq_job *j = p;
    int rc = 0;
    uint32_t k = 0;
    for (; k < j->n && !rc; k++) {
        const tether_rpc_seq_step *q = &j->steps[k];
        rc = tetherd_cl_enqueue(j->s->cl, j->st[k].prog, j->st[k].kernel,
                                j->args + j->st[k].first_arg, (int)j->st[k].nargs, q->work_dim,
                                q->global, q->local, &j->ev[k]);
        if (rc) {
            j->failed_step = (int)k;
            snprintf(j->err, sizeof j->err, "%s", tether_last_error());
        }
    }
    int failed = -1;
    /* wait for what was enqueued even after a failure: nothing may still run afterwards */
    int wrc = tetherd_cl_wait(j->s->cl, j->ev, (int)(rc ? k - 1 : k), j->ns, &failed);
    if (!rc && wrc) {
        rc = wrc;
        j->failed_step = failed;
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
    }
    if (rc)
        return rc;
    for (k = 0; k < j->n; k++) {
        j->cum[k] += j->ns[k];
        j->gpu_ns += j->ns[k];
    }
    return 0;
}

static uint64_t seq_now(void *p) {
    seq_job *j = p;
    memcpy(j->mark[0], j->mark[1], sizeof(uint64_t) * j->n);
    memcpy(j->mark[1], j->cum, sizeof(uint64_t) * j->n);
    return j->gpu_ns;
}

static void seq_repeat_done(void *p, uint32_t r, uint32_t number) {
    seq_job *j = p;
    for (uint32_t k = 0; k < j->n; k++)
        j->per[(size_t)k * j->repeat + r] =
            (double)(j->mark[1][k] - j->mark[0][k]) / 1e9 / (double)number;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* LAUNCH_SEQ / TIME_SEQ: every step checked and resolved first (nothing runs when one is
 * wrong), then the steps run back to back on the queue with one wait; errors name the step. */
static int on_seq(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    const tether_rpc_seq_req *q = &req->u.seq_req;
    const char *what = tether_rpc_type_name(req->type);
    int timed = req->type == TETHER_RPC_TIME_SEQ;
    if (timed && (q->number < 1 || q->repeat < 1 || q->repeat > TETHER_RPC_MAX_REPEAT))
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "%s: number must be >= 1 and repeat in 1..%u", what,
                                TETHER_RPC_MAX_REPEAT);
    seq_job *j = calloc(1, sizeof *j);
    if (!j)
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    j->s = s;
    j->n = q->num_steps;
    j->steps = q->steps;
    j->failed_step = -1;
    uint32_t used = 0;
    int rc = 0;
    for (uint32_t k = 0; k < q->num_steps && !rc; k++) {
        const tether_rpc_seq_step *st = &q->steps[k];
        if (!is_kernel(s, st->func)) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "%s step %u: handle %llu is not an OpenCL kernel of this session",
                                  what, (unsigned)k, (unsigned long long)st->func);
            break;
        }
        func *fn = &s->funcs[st->func - 1];
        module *mod = find_module(s, fn->module);
        if (!mod || !mod->prog) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND, "%s step %u: the kernel's module is gone",
                                  what, (unsigned)k);
            break;
        }
        const char *kname = tetherd_cl_kernel_name(mod->prog, fn->kernel);
        j->st[k].prog = mod->prog;
        j->st[k].kernel = fn->kernel;
        j->st[k].name = kname;
        j->st[k].first_arg = used;
        j->st[k].nargs = st->num_args;
        if ((int)st->num_args != fn->kernel_args) {
            rc = tether_set_error(TETHER_ERR_MISMATCH,
                                  "%s step %u ('%s'): takes %d arguments, %u given", what,
                                  (unsigned)k, kname, fn->kernel_args, (unsigned)st->num_args);
            break;
        }
        for (uint32_t i = 0; i < st->num_args && !rc; i++) {
            const tether_rpc_arg *a = &st->args[i];
            tetherd_cl_arg *o = &j->args[used + i];
            if (a->type_code == TETHER_TYPE_DLTENSOR || a->type_code == TETHER_TYPE_HANDLE) {
                array *arr = find_array(s, a->v.v_handle);
                if (!arr)
                    rc = tether_set_error(
                        TETHER_ERR_NOT_FOUND,
                        "%s step %u ('%s'): argument %u: no array with handle %llu", what,
                        (unsigned)k, kname, (unsigned)i, (unsigned long long)a->v.v_handle);
                else if (!arr->clm && tetherd_cl_buffer(s->cl, arr->mem, arr->nbytes, &arr->clm))
                    rc = tether_set_error(TETHER_ERR_IO, "%s step %u ('%s'): %s", what, (unsigned)k,
                                          kname, tether_last_error());
                else {
                    o->mem = arr->clm;
                    j->arrs[used + i] = arr;
                }
            } else if (a->type_code == TETHER_TYPE_INT || a->type_code == TETHER_TYPE_UINT) {
                o->type_code = a->type_code;
                o->i = a->v.v_int;
            } else if (a->type_code == TETHER_TYPE_FLOAT) {
                o->type_code = a->type_code;
                o->f = a->v.v_float;
            } else {
                rc = tether_set_error(TETHER_ERR_UNSUPPORTED,
                                      "%s step %u ('%s'): argument %u has type code %d", what,
                                      (unsigned)k, kname, (unsigned)i, (int)a->type_code);
            }
        }
        used += st->num_args;
    }
    if (rc) {
        free(j);
        return rc;
    }
    uint32_t to = s->cfg->call_timeout_ms;
    if (to && timed)
        to += q->repeat * (q->min_repeat_ms + q->cooldown_ms);
    call_guard_begin(s, req->id, "kernel sequence", to);
    if (timed) {
        j->repeat = q->repeat;
        j->per = calloc((size_t)j->n * q->repeat, sizeof(double));
        tether_time_hooks h = {seq_run, seq_now, time_sleep, j, seq_repeat_done};
        tether_time_result res;
        rc = j->per
                 ? tether_time_evaluate(&h, q->number, q->repeat, q->min_repeat_ms, q->cooldown_ms,
                                        rep->u.time_seq_rep.seconds, TETHER_RPC_MAX_REPEAT, &res)
                 : tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        if (!rc) {
            rep->u.time_seq_rep.number = res.number;
            rep->u.time_seq_rep.repeat = res.repeat;
            rep->u.time_seq_rep.zero_timer = res.zero_timer;
            rep->u.time_seq_rep.num_steps = j->n;
            for (uint32_t k = 0; k < j->n; k++) {
                double *v = &j->per[(size_t)k * q->repeat];
                qsort(v, q->repeat, sizeof(double), cmp_dbl);
                uint32_t r = q->repeat;
                rep->u.time_seq_rep.step_seconds[k] =
                    r % 2 ? v[r / 2] : 0.5 * (v[r / 2 - 1] + v[r / 2]);
            }
        }
    } else {
        rc = seq_run(j);
        rep->u.launch_seq_rep.elapsed_ns = j->gpu_ns;
        rep->u.launch_seq_rep.num_steps = j->n;
        memcpy(rep->u.launch_seq_rep.step_ns, j->ns, sizeof(uint64_t) * j->n);
    }
    call_guard_end();
    /* kernels that ran may have written their buffers: synchronised when the host needs them */
    for (uint32_t i = 0; i < used; i++)
        if (j->arrs[i] && j->arrs[i]->nd.scope == TETHER_SCOPE_GLOBAL)
            j->arrs[i]->cl_dirty = 1;
    if (rc) {
        int code = rc < 0 ? rc : TETHER_ERR_STATE;
        if (j->failed_step >= 0)
            tether_set_error(code, "%s step %d ('%s'): %s", what, j->failed_step,
                             j->st[j->failed_step].name, j->err);
        else
            tether_set_error(code, "%s: %s", what, tether_last_error());
        free(j->per);
        free(j);
        return code;
    }
    free(j->per);
    free(j);
    return 0;
}
#endif

static int on_seq_request(session *s, const tether_rpc_msg *req, tether_rpc_msg *rep) {
#ifdef TETHERD_HAVE_OPENCL
    if (s->cfg->cl_max_width) {
        int rc = ensure_cl(s);
        if (rc)
            return tether_set_error(rc, "%s: %s", tether_rpc_type_name(req->type),
                                    tether_last_error());
        return on_seq(s, req, rep);
    }
#else
    (void)s, (void)rep;
#endif
    return tether_set_error(TETHER_ERR_UNSUPPORTED,
                            "%s: this device has no OpenCL layer (HELLO: opencl no)",
                            tether_rpc_type_name(req->type));
}

static int on_call(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    call_ctx c;
    int prc = prepare_call(s, call, &c);
    if (prc)
        return prc;
    call_guard_begin(s, call->id, c.entry->name, s->cfg->call_timeout_ms);
    int rc = run_on_stack(&c);
    call_guard_end();
    if (rc)
        return tether_set_error(rc, "CALL '%s': %s", c.entry->name, tether_last_error());
    if (c.status || c.func_ret)
        return call_failed_reply(&c, call->type);
    rep->u.call_rep.ret = c.func_ret;
    rep->u.call_rep.elapsed_ns = c.elapsed_ns;
    rep->u.call_rep.stack_bytes = c.max_stack;
    return 0;
}

/* TIME runs the whole evaluator on the dedicated stack (one paint, one measurement), so the
 * timed calls are not slowed by painting; the high-water mark covers the evaluator as well. */
static int32_t time_run(void *p) {
    call_ctx *c = p;
    c->status = tether_call(c->entry, c->args, c->codes, c->n, &c->func_ret);
    if (c->status || c->func_ret) {
        snprintf(c->err, sizeof c->err, "%s", tether_last_error());
        return c->status ? c->status : c->func_ret;
    }
    return 0;
}

typedef struct time_job {
    call_ctx *c;
    const tether_time_hooks *h;
    const tether_rpc_time_req *q;
    double *seconds;
    tether_time_result res;
    int rc;
    char err[TETHER_ERROR_MSG_MAX];
} time_job;

static void time_tramp(void *p) {
    time_job *j = p;
    j->rc = tether_time_evaluate(j->h, j->q->number, j->q->repeat, j->q->min_repeat_ms,
                                 j->q->cooldown_ms, j->seconds, TETHER_RPC_MAX_REPEAT, &j->res);
    if (j->rc)
        snprintf(j->err, sizeof j->err, "%s", tether_last_error());
}

static uint64_t time_now(void *p) {
    (void)p;
    return now_ns();
}

static void time_sleep(void *p, uint32_t ms) {
    (void)p;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static int on_time(session *s, const tether_server_call *call, tether_rpc_msg *rep) {
    const tether_rpc_time_req *q = call->time;
    call_ctx c;
    int prc = prepare_call(s, call, &c);
    if (prc)
        return prc;
    tether_time_hooks h = {time_run, time_now, time_sleep, &c, NULL};
    tether_time_result res;
    /* the timeout covers the whole evaluation, which may legitimately last repeat * min_repeat */
    uint32_t to = s->cfg->call_timeout_ms;
    if (to)
        to += q->repeat * (q->min_repeat_ms + q->cooldown_ms);
    time_job j = {&c, &h, q, rep->u.time_rep.seconds, {0}, 0, ""};
    size_t used = 0;
    call_guard_begin(s, call->id, c.entry->name, to);
    int rc = tether_posix_call_on(&s->call_stack, time_tramp, &j, &used);
    call_guard_end();
    if (rc)
        return tether_set_error(rc, "TIME '%s': %s", c.entry->name, tether_last_error());
    if (j.rc) {
        if (c.status || c.func_ret)
            return call_failed_reply(&c, call->type);
        return tether_set_error(j.rc, "TIME '%s': %s", c.entry->name, j.err);
    }
    res = j.res;
    rep->u.time_rep.number = res.number;
    rep->u.time_rep.repeat = res.repeat;
    rep->u.time_rep.zero_timer = res.zero_timer;
    return 0;
}

/* ---- the ops of the shared server core ---- */

static int op_decode(void *ctx, const uint8_t *buf, size_t len, tether_rpc_msg *out) {
    session *s = ctx;
    int rc = tether_rpc_msgpack_decode_seq(buf, len, out, &s->seq);
    if (rc == 0)
        tetherd_log(s->cfg, 1, s->peer, "request %s id %u", tether_rpc_type_name(out->type),
                    (unsigned)out->id);
    return rc;
}

static bool op_find_func(void *ctx, uint64_t h, tether_server_func *out) {
    session *s = ctx;
    if (h == 0 || h > MAX_FUNCS || !s->funcs[h - 1].used)
        return false;
    const func *fn = &s->funcs[h - 1];
    if (fn->entry) {
        out->name = fn->entry->name;
        out->abi = fn->entry->abi;
        out->num_args = fn->entry->num_args;
        out->kernel = false;
        out->impl = fn->entry;
        return true;
    }
#ifdef TETHERD_HAVE_OPENCL
    module *mod = find_module(s, fn->module);
    if (!mod || !mod->prog)
        return false;
    out->name = tetherd_cl_kernel_name(mod->prog, fn->kernel);
    out->abi = TETHER_ABI_PACKED;
    out->num_args = fn->kernel_args;
    out->kernel = true;
    out->impl = fn;
    return true;
#else
    return false;
#endif
}

static int op_invoke(void *ctx, const tether_server_call *call, tether_rpc_msg *rep) {
    session *s = ctx;
#ifdef TETHERD_HAVE_OPENCL
    if (call->fn.kernel)
        return on_cl_invoke(s, call, rep);
#endif
    return call->type == TETHER_RPC_TIME ? on_time(s, call, rep) : on_call(s, call, rep);
}

static int op_request(void *ctx, const tether_rpc_msg *req, tether_rpc_msg *rep) {
    session *s = ctx;
    switch (req->type) {
    case TETHER_RPC_UPLOAD:
        return on_upload(s, req, rep);
    case TETHER_RPC_UPLOAD_CHUNK:
        return on_upload_chunk(s, req, rep);
    case TETHER_RPC_LOAD_MODULE:
        return on_load_module(s, req, rep);
    case TETHER_RPC_UNLOAD:
        return on_unload(s, req, rep);
    case TETHER_RPC_GET_FUNCTION:
        return on_get_function(s, req, rep);
    case TETHER_RPC_ALLOC:
        return on_alloc(s, req, rep);
    case TETHER_RPC_FREE:
        return on_free(s, req, rep);
    case TETHER_RPC_COPY_TO:
        return on_copy_to(s, req, rep);
    case TETHER_RPC_COPY_FROM:
        return on_copy_from(s, req, rep);
    case TETHER_RPC_LAUNCH_SEQ:
    case TETHER_RPC_TIME_SEQ:
        return on_seq_request(s, req, rep);
    case TETHER_RPC_RESET:
        session_free_all(s);
        return 0;
    case TETHER_RPC_SHUTDOWN:
        return 0; /* the core reports CLOSE once the reply is sent */
    default:
        return tether_set_error(TETHER_ERR_PROTOCOL, "unknown request type %u",
                                (unsigned)req->type);
    }
}

static void op_note(void *ctx, int level, const char *text) {
    session *s = ctx;
    if (level == TETHER_LOG_WARN)
        tetherd_log(s->cfg, -1, s->peer, "malformed message dropped: %s", text);
    else
        tetherd_log(s->cfg, 1, s->peer, "error: %s", text);
}

/* ops->send2: a large COPY_FROM reply straight from the array's memory. */
static int send_bytes2(void *ctx, const uint8_t *head, size_t head_len, const uint8_t *tail,
                       size_t tail_len) {
    session *s = ctx;
    return tether_transport_send2(s->t, head, head_len, tail, tail_len, 30000);
}

static const tether_server_ops k_ops = {
    .decode = op_decode,
    .send = send_bytes,
    .send2 = send_bytes2,
    .hello = on_hello,
    .auth = on_auth,
    .find_func = op_find_func,
    .invoke = op_invoke,
    .request = op_request,
    .note = op_note,
};

int tetherd_session_run(const tetherd_config *cfg, tether_transport *t, const char *dir,
                        const char *peer) {
    session *s = calloc(1, sizeof *s);
    if (!s)
        return TETHER_ERR_OUT_OF_MEMORY;
    s->cfg = cfg;
    s->t = t;
    s->dir = dir;
    s->peer = peer;
    s->tx_cap = t->max_frame;
    s->tx = malloc(s->tx_cap);
    s->peer_max_frame = t->max_frame;
    s->stack_size = cfg->stack_size;
    /* whole pages, so that the pages below a call's high-water mark can be guarded */
    long pg = sysconf(_SC_PAGESIZE);
    s->stack_size = (s->stack_size + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    s->stack =
        mmap(NULL, s->stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->stack == MAP_FAILED)
        s->stack = NULL;
    for (int i = 0; i < MAX_UPLOADS; i++)
        s->uploads[i].fd = -1;
    int rc = 0;
    if (!s->tx || !s->stack) {
        rc = TETHER_ERR_OUT_OF_MEMORY;
        goto out;
    }
    rc = tether_posix_call_stack_init(&s->call_stack, s->stack, s->stack_size);
    if (!rc)
        rc = tether_posix_call_stack_guard(&s->call_stack, true);
    if (rc)
        goto out;
    g_call_stack = &s->call_stack;
    install_fatal_handlers();
    if (t->kind != TETHER_TRANSPORT_UART) { /* COPY_TO data straight into its array */
        t->place = place_copy_to;
        t->place_ctx = s;
    }
    /* the reply cache matters on --uart (a client resends a request whose reply was lost) */
    tether_rpc_reply_cache_init(&s->cache, s->cache_mem, sizeof s->cache_mem, CACHE_SLOTS);
    const tether_server_config sc = {
        &k_ops,    s,         &s->req,        &s->rep,       s->tx,
        s->tx_cap, &s->cache, s->call_values, s->call_codes, t->kind != TETHER_TRANSPORT_UART};
    tether_server_init(&s->srv, &sc);
    g_watch = cfg->watch;
    tetherd_log(cfg, 0, peer, "session started");
    bool authed = false; /* the watch is in HELLO (set by the daemon) until the peer is in */
    uint64_t hello_deadline = g_watch ? g_watch->deadline_ns : 0;
    while (!s->shutdown) {
        const uint8_t *buf;
        size_t len;
        /* the daemon ends a session whose peer does not get in (HELLO, AUTH) within the hello
         * timeout, or sends nothing for the idle timeout (a half frame included) */
        if (s->srv.hello_done && s->srv.authed) {
            uint64_t idle = (uint64_t)cfg->idle_timeout_ms * 1000000u;
            watch_set(TETHERD_PHASE_IDLE, idle ? tetherd_now_ns() + idle : 0);
            authed = true;
        } else {
            if (authed) { /* a new HELLO: in again only after its AUTH */
                uint64_t hello = (uint64_t)cfg->hello_timeout_ms * 1000000u;
                hello_deadline = hello ? tetherd_now_ns() + hello : 0;
                authed = false;
            }
            watch_set(TETHERD_PHASE_HELLO, hello_deadline);
        }
        rc = tether_transport_recv(t, &buf, &len, -1);
        watch_busy();
        s->placed_src = rc == 0 && t->placed ? buf + t->placed_off : NULL;
        s->placed_dst = t->placed;
        if (rc == TETHER_ERR_IO) {
            rc = 0; /* the peer went away */
            break;
        }
        if (rc) {
            tetherd_log(cfg, -1, peer, "receive failed: %s", tether_last_error());
            break;
        }
        if (tether_server_handle_frame(&s->srv, buf, len) == TETHER_SERVER_CLOSE)
            s->shutdown = 1;
        rc = 0;
    }
out:
    session_free_all(s);
    tetherd_log(cfg, 0, peer, "session ended");
    if (s->stack) {
        g_call_stack = NULL;
        tether_posix_call_stack_guard(&s->call_stack, false);
        munmap(s->stack, s->stack_size);
    }
    free(s->tx);
    free(s);
    return rc;
}
