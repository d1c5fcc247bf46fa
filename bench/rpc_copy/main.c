/*
 * bench/rpc_copy: how fast arrays move through tetherd on loopback, against a raw socket
 * measured in the same run.
 *
 *   raw        a TCP loopback stream (TCP_NODELAY) of the same bytes in 1 MiB writes, read by a
 *              thread into a 1 MiB buffer: the most the kernel moves (the baseline of every ratio)
 *   raw array  the same read into a buffer as large as the transfer (what a copy into an array
 *              must do: its memory is not all in the cache)
 *   copy to    tether_session_copy_to of a 64 MiB uint8 array on a tetherd started here
 *   copy from  tether_session_copy_from of it back
 *
 * Prints GB/s (median of the rounds) and the ratio to raw, and the CPU time both ends spent per
 * GB (bench/cpu_time.h: on a shared machine the wall time also holds the waits for a core)
 * with raw's divided by it, then the goal (docs/rpc.md: both directions at least 0.8x raw's wall
 * rate) met or not. Usage: bench_rpc_copy [MiB] [rounds] (TETHERD overrides the tetherd path).
 *
 * bench_rpc_copy --device URL [KiB] [rounds] [--baud B]: a device already running (a UART
 * board, tetherd behind a paced pty relay): copies KiB (default 64) to it and back with the
 * session's requests in flight (its window) and, interleaved in the same run, one request at a
 * time (TETHER_RPC_WINDOW=1, how bulk copies went before pipelining); prints KiB/s of payload,
 * the ratio between the two and, with --baud, the payload as a share of the line's rate (10
 * bits a byte); then the goal met or not (with --baud: payload >= 0.9 of the line; without:
 * >= 160 KiB/s, 4x the 40 KiB/s an unpaced QEMU board moved one request at a time).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cpu_time.h"
#include "tether/crt.h"
#include "tether/host.h"

extern char **environ;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct sink_args {
    int fd;
    size_t total;
    uint8_t *into; /* NULL: a 1 MiB buffer read into again and again */
} sink_args;

static void *sink(void *p) {
    sink_args *a = p;
    size_t cap = 1 << 20, got = 0;
    char *b = a->into ? NULL : malloc(cap);
    while (got < a->total) {
        ssize_t r = a->into ? read(a->fd, a->into + got, a->total - got) : read(a->fd, b, cap);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    char ack = 1;
    if (write(a->fd, &ack, 1) != 1) {
        got = 0;
    }
    free(b);
    a->total = got;
    return NULL;
}

/* Seconds to stream `bytes` through a loopback socket (until the reader has them all, in a
 * 1 MiB buffer or, with into, in an array of their size); *cpu = CPU seconds of both ends. */
static double raw_stream(const uint8_t *data, size_t bytes, uint8_t *into, double *cpu) {
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        return -1;
    }
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (struct sockaddr *)&a, sizeof a)) {
        return -1;
    }
    int s = accept(ls, NULL, NULL);
    close(ls);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sink_args sa = {s, bytes, into};
    pthread_t th;
    uint64_t c0 = bench_self_cpu_ns();
    double t0 = now();
    pthread_create(&th, NULL, sink, &sa);
    size_t off = 0;
    while (off < bytes) {
        size_t n = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
        ssize_t w = write(c, data + off, n);
        if (w <= 0) {
            return -1;
        }
        off += (size_t)w;
    }
    char ack;
    if (read(c, &ack, 1) != 1) {
        return -1;
    }
    double t = now() - t0;
    pthread_join(th, NULL);
    *cpu = (double)(bench_self_cpu_ns() - c0) * 1e-9;
    close(c);
    close(s);
    return sa.total == bytes ? t : -1;
}

#define GOAL_RATIO      0.80  /* loopback COPY_TO and COPY_FROM against the raw stream */
#define GOAL_LINE_SHARE 0.90  /* --device --baud: payload share of a paced line */
#define GOAL_QEMU_KIBS  160.0 /* --device without --baud: an unpaced QEMU board, KiB/s */

/* A ratio as printed (two decimals), so that the verdict agrees with the figure beside it. */
static double ratio2(double r) {
    return (double)(long long)(r * 100.0 + 0.5) / 100.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int device_mode(int argc, char **argv) {
    const char *url = NULL;
    size_t kib = 64;
    int rounds = 3, npos = 0;
    double baud = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            url = argv[++i];
        } else if (!strcmp(argv[i], "--baud") && i + 1 < argc) {
            baud = atof(argv[++i]);
        } else if (npos++ == 0) {
            kib = (size_t)atoi(argv[i]);
        } else {
            rounds = atoi(argv[i]);
        }
    }
    if (!url || kib < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_rpc_copy --device URL [KiB] [rounds] [--baud B]\n");
        return 2;
    }
    size_t bytes = kib << 10;
    uint8_t *data = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) {
        data[i] = (uint8_t)(i * 131 + 7);
    }
    tether_session *s = NULL;
    int64_t shape = (int64_t)bytes;
    uint64_t h = 0, nb = 0;
    if (tether_session_open(&s, url, NULL) ||
        tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nb)) {
        fprintf(stderr, "bench_rpc_copy: %s\n", tether_last_error());
        return 1;
    }
    const tether_device_info *info = tether_session_info(s);
    printf("device %s (window %u, max frame %u), %zu KiB each way, %d rounds\n", url,
           (unsigned)info->window, (unsigned)info->max_frame, kib, rounds);
    double t[2][2][16]; /* [window 1 / pipelined][to / from][round] */
    if (rounds > 16) {
        rounds = 16;
    }
    int status = 0;
    for (int r = 0; r < rounds && !status; r++) {
        for (int piped = 0; piped < 2 && !status; piped++) {
            if (piped) {
                unsetenv("TETHER_RPC_WINDOW");
            } else {
                setenv("TETHER_RPC_WINDOW", "1", 1);
            }
            double t0 = now();
            status = tether_session_copy_to(s, h, 0, data, bytes);
            double t1 = now();
            memset(back, 0, bytes);
            status = status ? status : tether_session_copy_from(s, h, 0, back, bytes);
            double t2 = now();
            if (!status && memcmp(back, data, bytes) != 0) {
                fprintf(stderr, "bench_rpc_copy: the copy came back different\n");
                status = 1;
            }
            t[piped][0][r] = t1 - t0;
            t[piped][1][r] = t2 - t1;
        }
    }
    unsetenv("TETHER_RPC_WINDOW");
    if (status) {
        fprintf(stderr, "bench_rpc_copy: %s\n", tether_last_error());
    } else {
        const char *dir[2] = {"copy to  ", "copy from"};
        double best[2];
        for (int d = 0; d < 2; d++) {
            qsort(t[0][d], (size_t)rounds, sizeof(double), cmp_double);
            qsort(t[1][d], (size_t)rounds, sizeof(double), cmp_double);
            double one = (double)bytes / 1024.0 / t[0][d][rounds / 2];
            double piped = (double)bytes / 1024.0 / t[1][d][rounds / 2];
            printf("%s  pipelined %8.1f KiB/s   one at a time %8.1f KiB/s   %5.2fx", dir[d], piped,
                   one, piped / one);
            best[d] = baud > 0 ? ratio2(piped * 1024.0 / (baud / 10.0)) : piped;
            if (baud > 0) {
                printf("   payload %.2f of the line (%.0f baud)", best[d], baud);
            }
            printf("\n");
        }
        /* the goals of docs/rpc.md ("Flow control"): a paced line carries payload at >= 0.9 of
         * its rate; an unpaced QEMU board moves >= 160 KiB/s (4x the 40 KiB/s of one request at
         * a time before pipelining) */
        double goal = baud > 0 ? GOAL_LINE_SHARE : GOAL_QEMU_KIBS;
        for (int d = 0; d < 2; d++) {
            printf("goal %s >= %.*f%s: %.*f, %s\n", dir[d], baud > 0 ? 2 : 0, goal,
                   baud > 0 ? " of the line" : " KiB/s (unpaced board)", baud > 0 ? 2 : 1, best[d],
                   best[d] >= goal ? "met" : "not met");
        }
    }
    tether_session_free(s, h);
    tether_session_close(s);
    free(data);
    free(back);
    return status ? 1 : 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device")) {
            return device_mode(argc, argv);
        }
    }
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (mib < 1) {
        mib = 1;
    }
    if (rounds < 1) {
        rounds = 1;
    }
    size_t bytes = mib << 20;
    uint8_t *data = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) {
        data[i] = (uint8_t)(i * 131 + 7);
    }

    const char *tetherd = getenv("TETHERD") ? getenv("TETHERD") : TETHERD_PATH;
    char dir[] = "/tmp/bcopyXXXXXX";
    if (!mkdtemp(dir)) {
        return 1;
    }
    char pf[64];
    snprintf(pf, sizeof pf, "%s/port", dir);
    const char *av[] = {tetherd, "--tcp", "127.0.0.1:0", "--port-file", pf, "--quiet", NULL};
    pid_t pid;
    if (posix_spawn(&pid, tetherd, NULL, NULL, (char *const *)av, environ)) {
        return 1;
    }
    int port = 0;
    for (int i = 0; i < 500 && !port; i++) {
        FILE *f = fopen(pf, "r");
        if (!f || fscanf(f, "%d", &port) != 1) {
            usleep(10000);
        }
        if (f) {
            fclose(f);
        }
    }
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    tether_session *s = NULL;
    int64_t shape = (int64_t)bytes;
    uint64_t h = 0, nb = 0;
    int status = 1;
    if (!port || tether_session_open(&s, url, NULL) ||
        tether_session_alloc(s, &shape, 1, TETHER_UINT8, TETHER_SCOPE_GLOBAL, "", &h, &nb)) {
        fprintf(stderr, "bench_rpc_copy: %s\n", tether_last_error());
        goto out;
    }
    enum { RAW, RAWA, TO, FROM, KINDS };
    static const char *label[KINDS] = {"raw socket stream", "raw stream into an array",
                                       "tetherd COPY_TO", "tetherd COPY_FROM"};
    double *wall[KINDS], *cpu[KINDS];
    for (int k = 0; k < KINDS; k++) {
        wall[k] = calloc((size_t)rounds, sizeof(double));
        cpu[k] = calloc((size_t)rounds, sizeof(double));
    }
    uint8_t *sinkbuf = malloc(bytes);
    double c;
    /* warm-up: one of each */
    if (!sinkbuf || raw_stream(data, bytes, NULL, &c) < 0 ||
        raw_stream(data, bytes, sinkbuf, &c) < 0 || tether_session_copy_to(s, h, 0, data, bytes) ||
        tether_session_copy_from(s, h, 0, back, bytes)) {
        fprintf(stderr, "bench_rpc_copy: %s\n", tether_last_error());
        goto out;
    }
    for (int r = 0; r < rounds; r++) { /* interleaved, so drift hits all four alike */
        wall[RAW][r] = raw_stream(data, bytes, NULL, &cpu[RAW][r]);
        wall[RAWA][r] = raw_stream(data, bytes, sinkbuf, &cpu[RAWA][r]);
        uint64_t c0 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        double t0 = now();
        int rc = tether_session_copy_to(s, h, 0, data, bytes);
        wall[TO][r] = now() - t0;
        uint64_t c1 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        cpu[TO][r] = (double)(c1 - c0) * 1e-9;
        memset(back, 0, bytes);
        c0 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        t0 = now();
        rc = rc ? rc : tether_session_copy_from(s, h, 0, back, bytes);
        wall[FROM][r] = now() - t0;
        c1 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        cpu[FROM][r] = (double)(c1 - c0) * 1e-9;
        if (rc || wall[RAW][r] < 0 || wall[RAWA][r] < 0 || memcmp(back, data, bytes) != 0) {
            fprintf(stderr, "bench_rpc_copy: round %d: %s\n", r,
                    rc ? tether_last_error() : "the bytes came back different");
            goto out;
        }
    }
    double mw[KINDS], mc[KINDS];
    for (int k = 0; k < KINDS; k++) {
        qsort(wall[k], (size_t)rounds, sizeof(double), cmp_double);
        qsort(cpu[k], (size_t)rounds, sizeof(double), cmp_double);
        mw[k] = wall[k][rounds / 2];
        mc[k] = cpu[k][rounds / 2];
    }
    printf("%zu MiB per transfer, median of %d rounds, TCP loopback\n", mib, rounds);
    printf("%-26s %9s %6s %14s %6s\n", "", "wall", "ratio", "CPU (both)", "ratio");
    for (int k = 0; k < KINDS; k++) {
        double gb = (double)bytes / 1e9;
        printf("%-26s %4.2f GB/s %5.2fx %9.3f s/GB %5.2fx\n", label[k], gb / mw[k], mw[RAW] / mw[k],
               mc[k] / gb, mc[k] > 0 ? mc[RAW] / mc[k] : 0.0);
    }
    for (int k = TO; k <= FROM; k++) {
        double r = ratio2(mw[RAW] / mw[k]);
        printf("goal %s >= %.2fx the raw stream: %.2fx, %s\n", label[k], GOAL_RATIO, r,
               r >= GOAL_RATIO ? "met" : "not met");
    }
    status = 0;
out:
    tether_session_close(s);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    unlink(pf);
    rmdir(dir);
    free(data);
    free(back);
    return status;
}
