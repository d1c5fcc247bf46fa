/*
 * Test-side client for tether MCU firmware under QEMU (see mcu_client.h).
 * What must stay true: every QEMU started here is stopped by mcu_board_stop (SIGTERM to
 * scripts/qemu-board, which stops QEMU, then waitpid); no read blocks without a deadline.
 */
#include "mcu_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "free_port.h"
#include "tether/rpc/sha256.h"

const char *mcu_fw_dir;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A TCP connection to 127.0.0.1:port (Nagle off), or -1. */
static int connect_local(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

/* semihost: the byte channel over semihosting's console on a TCP port (qemu-board
 * --semihost-serial) instead of the UART's pty. */
static int board_start(mcu_board *b, bool icount, bool semihost) {
    memset(b, 0, sizeof *b);
    b->pid = -1;
    b->fd = -1;
    b->out_fd = -1;
    b->next_id = 1;
    /* the board's QEMU program: firmware.json's "qemu" (qemu-system-arm when it has none) */
    char qemu[64] = "qemu-system-arm", json[600], line[256];
    snprintf(json, sizeof json, "%s/firmware.json", mcu_fw_dir);
    FILE *jf = fopen(json, "r");
    while (jf && fgets(line, sizeof line, jf)) {
        char v[64];
        if (sscanf(line, " \"qemu\": \"%63[a-z0-9_-]\"", v) == 1) {
            snprintf(qemu, sizeof qemu, "%s", v);
        }
    }
    if (jf) {
        fclose(jf);
    }
    char probe[160];
    snprintf(probe, sizeof probe, "command -v %s >/dev/null 2>&1", qemu);
    if (system(probe) != 0) {
        fprintf(stderr, "SKIP: %s not installed (scripts/setup installs it)\n", qemu);
        exit(77);
    }
    char fw[512], script[512], port[16] = "";
    snprintf(fw, sizeof fw, "%s/tether-fw.elf", mcu_fw_dir);
    snprintf(script, sizeof script, "%s/scripts/qemu-board", TETHER_SOURCE_DIR);
    if (semihost) {
        int p = tether_test_free_port();
        if (p <= 0) {
            return -1;
        }
        snprintf(port, sizeof port, "%d", p);
    }
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        /* If this test dies (crash, ctest timeout), the script gets SIGTERM and stops QEMU. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(pipefd[1], 1);
        close(pipefd[0]);
        close(pipefd[1]);
        char *argv[8];
        int n = 0;
        argv[n++] = script;
        if (icount) {
            argv[n++] = (char *)"--icount";
        }
        if (semihost) {
            argv[n++] = (char *)"--semihost-serial";
            argv[n++] = port;
        }
        argv[n++] = fw;
        argv[n] = NULL;
        execv(script, argv);
        _exit(127);
    }
    close(pipefd[1]);
    b->pid = pid;
    b->out_fd = pipefd[0];
    /* Read the URL line. */
    size_t have = 0;
    int64_t deadline = now_ms() + 15000;
    while (have < sizeof b->url - 1) {
        struct pollfd p = {b->out_fd, POLLIN, 0};
        int left = (int)(deadline - now_ms());
        if (left <= 0 || poll(&p, 1, left) <= 0) {
            return -1;
        }
        ssize_t r = read(b->out_fd, b->url + have, 1);
        if (r <= 0) {
            return -1;
        }
        if (b->url[have] == '\n') {
            b->url[have] = 0;
            break;
        }
        have++;
    }
    if (semihost) {
        char want[64];
        snprintf(want, sizeof want, "tcp-serial://127.0.0.1:%s", port);
        if (strcmp(b->url, want) != 0 || (b->fd = connect_local(atoi(port))) < 0) {
            return -1;
        }
        tether_uart_unframer_init(&b->unframer, b->rx, sizeof b->rx, NULL, NULL);
        return 0;
    }
    if (strncmp(b->url, "uart://", 7) != 0) {
        return -1;
    }
    b->fd = open(b->url + 7, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (b->fd < 0) {
        return -1;
    }
    struct termios t;
    if (tcgetattr(b->fd, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(b->fd, TCSANOW, &t);
    }
    tether_uart_unframer_init(&b->unframer, b->rx, sizeof b->rx, NULL, NULL);
    return 0;
}

int mcu_board_start(mcu_board *b, bool icount) {
    return board_start(b, icount, false);
}

int mcu_board_start_semihost(mcu_board *b, bool icount) {
    return board_start(b, icount, true);
}

bool mcu_fw_has_semihost(void) {
    char json[600], line[256];
    snprintf(json, sizeof json, "%s/firmware.json", mcu_fw_dir);
    FILE *f = fopen(json, "r");
    bool has = false;
    while (f && !has && fgets(line, sizeof line, f)) {
        char v[32];
        has = sscanf(line, " \"channel_select\": \"%31[0-9a-fA-Fx]\"", v) == 1;
    }
    if (f) {
        fclose(f);
    }
    return has;
}

int mcu_board_start_fast(mcu_board *b, bool icount) {
    return board_start(b, icount, mcu_fw_has_semihost());
}

void mcu_board_stop(mcu_board *b) {
    if (b->fd >= 0) {
        close(b->fd);
        b->fd = -1;
    }
    if (b->pid > 0) {
        kill(b->pid, SIGTERM);
        int st;
        while (waitpid(b->pid, &st, 0) < 0 && errno == EINTR) {
        }
        b->pid = -1;
    }
    if (b->out_fd >= 0) {
        close(b->out_fd);
        b->out_fd = -1;
    }
}

int mcu_write_raw(mcu_board *b, const void *p, size_t n) {
    const uint8_t *q = p;
    while (n > 0) {
        ssize_t w = write(b->fd, q, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) {
                continue;
            }
            return -1;
        }
        q += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads until one frame is complete (copied into b->reply) or the deadline passes. */
static int read_frame(mcu_board *b, int64_t deadline, size_t *len) {
    for (;;) {
        uint8_t byte;
        struct pollfd p = {b->fd, POLLIN, 0};
        int left = (int)(deadline - now_ms());
        if (left <= 0) {
            return -1;
        }
        int pr = poll(&p, 1, left);
        if (pr < 0 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            return -1;
        }
        ssize_t r = read(b->fd, &byte, 1);
        if (r <= 0) {
            return -1;
        }
        size_t n;
        if (tether_uart_unframer_byte(&b->unframer, byte, &n) == 1) {
            memcpy(b->reply, b->rx, n);
            *len = n;
            return 0;
        }
    }
}

static void note_log(mcu_board *b, const tether_rpc_msg *m) {
    size_t n =
        m->u.log.text.len < sizeof b->last_log - 1 ? m->u.log.text.len : sizeof b->last_log - 1;
    memcpy(b->last_log, m->u.log.text.ptr, n);
    b->last_log[n] = 0;
    b->logs++;
    if (strncmp(b->last_log, "board ", 6) == 0) {
        b->boots++;
    }
}

int mcu_wait_log(mcu_board *b, const char *needle, int timeout_ms) {
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        size_t len;
        if (read_frame(b, deadline, &len) != 0) {
            return -1;
        }
        tether_rpc_msg m;
        if (tether_rpc_tiny_decode(b->reply, len, &m) == 0 && m.type == TETHER_RPC_LOG) {
            note_log(b, &m);
            if (strstr(b->last_log, needle) != NULL) {
                return 0;
            }
        }
    }
}

int mcu_request(mcu_board *b, tether_rpc_msg *req, tether_rpc_msg *rep, int timeout_ms) {
    req->id = b->next_id++;
    size_t len;
    if (tether_rpc_tiny_encode(req, b->tx, sizeof b->tx, &len) != 0) {
        fprintf(stderr, "encode failed: %s\n", tether_last_error());
        return -1;
    }
    return mcu_request_bytes(b, b->tx, len, req->id, req->type, rep, timeout_ms);
}

int mcu_request_bytes(mcu_board *b, const uint8_t *msg, size_t msg_len, uint32_t id, uint32_t type,
                      tether_rpc_msg *rep, int timeout_ms) {
    size_t len, flen;
    if (tether_uart_frame_encode(msg, msg_len, b->txf, sizeof b->txf, &flen) != 0) {
        return -1;
    }
    /* like the host library on a UART (docs/rpc.md): a request whose reply does not come is
     * sent again, twice at most, under the same id (a frame can be lost on a loaded host) */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt > 0) {
            fprintf(stderr, "no reply to request %u (type %u) in %d ms: sending it again\n",
                    (unsigned)id, (unsigned)type, timeout_ms);
        }
        if (mcu_write_raw(b, b->txf, flen) != 0) {
            return -1;
        }
        int64_t deadline = now_ms() + timeout_ms;
        for (;;) {
            if (read_frame(b, deadline, &len) != 0) {
                break;
            }
            if (tether_rpc_tiny_decode(b->reply, len, rep) != 0) {
                fprintf(stderr, "undecodable reply: %s\n", tether_last_error());
                return -1;
            }
            if (rep->type == TETHER_RPC_LOG) {
                note_log(b, rep);
                continue;
            }
            if (rep->id < id) {
                continue; /* a late reply to an earlier request: discarded (docs/rpc.md) */
            }
            if (rep->id != id) {
                fprintf(stderr, "reply id %u for request %u\n", (unsigned)rep->id, (unsigned)id);
                return -1;
            }
            b->reply_len = len;
            return 0;
        }
    }
    fprintf(stderr, "no reply to request %u (type %u)\n", (unsigned)id, (unsigned)type);
    return -1;
}

static void expect_reply(const tether_rpc_msg *req, const tether_rpc_msg *rep) {
    if (rep->type == TETHER_RPC_ERROR) {
        fprintf(stderr, "request type %u failed: %d %.*s\n", (unsigned)req->type,
                (int)rep->u.error.code, (int)rep->u.error.message.len, rep->u.error.message.ptr);
    }
    assert_int_equal(rep->type, req->type | TETHER_RPC_REPLY);
}

void mcu_hello(mcu_board *b, tether_rpc_msg *rep) {
    tether_rpc_msg req = {.type = TETHER_RPC_HELLO};
    req.u.hello_req.version = TETHER_RPC_VERSION;
    req.u.hello_req.max_frame = MCU_MAX_FRAME;
    req.u.hello_req.client = tether_rpc_str_c("tests/mcu");
    assert_int_equal(mcu_request(b, &req, rep, 10000), 0);
    expect_reply(&req, rep);
    b->device_max_frame = rep->u.hello_rep.max_frame;
}

uint64_t mcu_alloc(mcu_board *b, const int64_t *shape, int ndim, DLDataType dt, uint64_t *nbytes) {
    tether_rpc_msg req = {.type = TETHER_RPC_ALLOC}, rep;
    req.u.alloc_req.ndim = (uint32_t)ndim;
    memcpy(req.u.alloc_req.shape, shape, sizeof(int64_t) * (size_t)ndim);
    req.u.alloc_req.dtype_code = dt.code;
    req.u.alloc_req.dtype_bits = dt.bits;
    req.u.alloc_req.dtype_lanes = dt.lanes;
    req.u.alloc_req.scope = TETHER_SCOPE_GLOBAL;
    req.u.alloc_req.pool = tether_rpc_str_c("sram");
    assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
    expect_reply(&req, &rep);
    if (nbytes) {
        *nbytes = rep.u.alloc_rep.nbytes;
    }
    return rep.u.alloc_rep.array;
}

void mcu_free(mcu_board *b, uint64_t array) {
    tether_rpc_msg req = {.type = TETHER_RPC_FREE}, rep;
    req.u.free_req.handle = array;
    assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
    expect_reply(&req, &rep);
}

void mcu_copy_to(mcu_board *b, uint64_t array, const void *data, size_t n) {
    uint32_t chunk = tether_rpc_chunk_max(b->device_max_frame);
    assert_true(chunk > 0);
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        tether_rpc_msg req = {.type = TETHER_RPC_COPY_TO}, rep;
        req.u.copy_to_req.array = array;
        req.u.copy_to_req.offset = off;
        req.u.copy_to_req.data.ptr = (const uint8_t *)data + off;
        req.u.copy_to_req.data.len = (uint32_t)len;
        assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
        expect_reply(&req, &rep);
        assert_int_equal(rep.u.copy_to_rep.written, len);
    }
}

void mcu_copy_from(mcu_board *b, uint64_t array, void *data, size_t n) {
    uint32_t chunk = tether_rpc_chunk_max(b->device_max_frame);
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = n - off < chunk ? n - off : chunk;
        tether_rpc_msg req = {.type = TETHER_RPC_COPY_FROM}, rep;
        req.u.copy_from_req.array = array;
        req.u.copy_from_req.offset = off;
        req.u.copy_from_req.length = len;
        assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
        expect_reply(&req, &rep);
        assert_int_equal(rep.u.copy_from_rep.data.len, len);
        memcpy((uint8_t *)data + off, rep.u.copy_from_rep.data.ptr, len);
    }
}

uint64_t mcu_get_function(mcu_board *b, uint64_t module, const char *name, uint32_t *abi) {
    tether_rpc_msg req = {.type = TETHER_RPC_GET_FUNCTION}, rep;
    req.u.get_function_req.module = module;
    req.u.get_function_req.name = tether_rpc_str_c(name);
    assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
    expect_reply(&req, &rep);
    if (abi) {
        *abi = rep.u.get_function_rep.abi;
    }
    return rep.u.get_function_rep.func;
}

static void fill_call(tether_rpc_msg *req, uint64_t func, uint32_t abi, const tether_rpc_arg *args,
                      uint32_t n) {
    memset(req, 0, sizeof *req);
    req->type = TETHER_RPC_CALL;
    req->u.call_req.func = func;
    req->u.call_req.abi = abi;
    req->u.call_req.num_args = n;
    if (n > 0) {
        memcpy(req->u.call_req.args, args, sizeof *args * n);
    }
}

void mcu_call(mcu_board *b, uint64_t func, uint32_t abi, const tether_rpc_arg *args, uint32_t n,
              tether_rpc_call_rep *out) {
    static tether_rpc_msg req, rep;
    fill_call(&req, func, abi, args, n);
    assert_int_equal(mcu_request(b, &req, &rep, 30000), 0);
    expect_reply(&req, &rep);
    *out = rep.u.call_rep;
}

int32_t mcu_call_error(mcu_board *b, uint64_t func, uint32_t abi, const tether_rpc_arg *args,
                       uint32_t n, char *msg, size_t msg_size) {
    static tether_rpc_msg req, rep;
    fill_call(&req, func, abi, args, n);
    assert_int_equal(mcu_request(b, &req, &rep, 30000), 0);
    assert_int_equal(rep.type, TETHER_RPC_ERROR);
    snprintf(msg, msg_size, "%.*s", (int)rep.u.error.message.len, rep.u.error.message.ptr);
    return rep.u.error.code;
}

tether_rpc_arg mcu_arg_array(uint64_t handle) {
    tether_rpc_arg a = {.type_code = TETHER_TYPE_DLTENSOR};
    a.v.v_handle = handle;
    return a;
}

tether_rpc_arg mcu_arg_int(int64_t v) {
    tether_rpc_arg a = {.type_code = TETHER_TYPE_INT};
    a.v.v_int = v;
    return a;
}

/* ---- fixtures shared by the MCU tests ---- */

int mcu_workdir_create(char *dir, size_t n, const char *tag) {
    if (system("command -v arm-none-eabi-gcc >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: arm-none-eabi-gcc not installed\n");
        exit(77);
    }
    snprintf(dir, n, "%s/mcu-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag);
    return mkdtemp(dir) ? 0 : -1;
}

int mcu_workdir_remove(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

void mcu_kws_input(float *v, size_t n) {
    uint32_t x = 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        v[i] = (float)((int32_t)(x >> 8) % 2000) / 1000.0f;
    }
}

int mcu_test_main(int argc, char **argv, const struct CMUnitTest *tests, size_t n,
                  CMFixtureFunction setup, CMFixtureFunction teardown) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIRMWARE_DIR\n", argv[0]);
        return 2;
    }
    mcu_fw_dir = argv[1];
    return _cmocka_run_group_tests("tests", tests, n, setup, teardown);
}

uint8_t *mcu_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)n);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return p;
}

uint64_t mcu_upload_image(mcu_board *b, const char *name, const uint8_t *img, size_t size) {
    tether_rpc_msg req, rep;
    uint8_t hash[32];
    tether_sha256(img, size, hash);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_UPLOAD;
    req.u.upload_req.kind = TETHER_RPC_MODULE_MCU_IMAGE;
    req.u.upload_req.name = tether_rpc_str_c(name);
    req.u.upload_req.total_size = size;
    req.u.upload_req.sha256.ptr = hash;
    req.u.upload_req.sha256.len = 32;
    assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
    assert_int_equal(rep.type, TETHER_RPC_UPLOAD | TETHER_RPC_REPLY);
    uint32_t id = rep.u.upload_rep.upload_id;
    uint32_t chunk = tether_rpc_chunk_max(b->device_max_frame);
    for (size_t off = 0; off < size; off += chunk) {
        size_t len = size - off < chunk ? size - off : chunk;
        memset(&req, 0, sizeof req);
        req.type = TETHER_RPC_UPLOAD_CHUNK;
        req.u.upload_chunk_req.upload_id = id;
        req.u.upload_chunk_req.offset = off;
        req.u.upload_chunk_req.data.ptr = img + off;
        req.u.upload_chunk_req.data.len = (uint32_t)len;
        assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
        assert_int_equal(rep.type, TETHER_RPC_UPLOAD_CHUNK | TETHER_RPC_REPLY);
    }
    assert_true(rep.u.upload_chunk_rep.complete);
    memset(&req, 0, sizeof req);
    req.type = TETHER_RPC_LOAD_MODULE;
    req.u.load_module_req.name = tether_rpc_str_c(name);
    assert_int_equal(mcu_request(b, &req, &rep, 10000), 0);
    if (rep.type == TETHER_RPC_ERROR) {
        fail_msg("LOAD_MODULE %s: %.*s", name, (int)rep.u.error.message.len,
                 rep.u.error.message.ptr);
    }
    return rep.u.load_module_rep.module;
}

int mcu_cli_vrun(const char *tether_exe, const char *workdir, char *out_text, size_t out_n,
                 char *err_text, size_t err_n, const char *first, va_list ap) {
    const char *argv[64];
    int n = 0;
    argv[n++] = tether_exe;
    for (const char *a = first; a && n < 63; a = va_arg(ap, const char *)) {
        argv[n++] = a;
    }
    argv[n] = NULL;
    char out_path[300], err_path[300];
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", workdir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", workdir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(tether_exe, (char *const *)argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    FILE *f = fopen(out_path, "r");
    out_text[f ? fread(out_text, 1, out_n - 1, f) : 0] = 0;
    if (f) {
        fclose(f);
    }
    f = fopen(err_path, "r");
    err_text[f ? fread(err_text, 1, err_n - 1, f) : 0] = 0;
    if (f) {
        fclose(f);
    }
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    printf("$ tether");
    for (int i = 1; i < n; i++) {
        printf(" %s", argv[i]);
    }
    printf("  -> %d\n%s%s", rc, out_text, err_text);
    return rc;
}
