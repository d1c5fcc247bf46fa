/*
 * bench/rpc_copy: how fast arrays move through tetherd on loopback, against a raw socket
 * measured in the same run.
 *
 *   raw        a TCP loopback stream (TCP_NODELAY) of the same bytes in 1 MiB writes, read by a
 *              thread into a 1 MiB buffer: the most the kernel moves
 *   copy to    tether_session_copy_to of a 64 MiB uint8 array on a tetherd started here
 *   copy from  tether_session_copy_from of it back
 *
 * Prints GB/s (median of the rounds) and the ratio to raw. Usage: bench_rpc_copy [MiB] [rounds]
 * (TETHERD overrides the tetherd path).
 *
 * bench_rpc_copy --device URL [KiB] [rounds] [--baud B]: a device already running (a UART
 * board, tetherd behind a paced pty relay): copies KiB (default 64) to it and back with the
 * session's requests in flight (its window) and, interleaved in the same run, one request at a
 * time (TETHER_RPC_WINDOW=1, how bulk copies went before pipelining); prints KiB/s of payload,
 * the ratio between the two and, with --baud, the payload as a share of the line's rate (10
 * bits a byte).
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
} sink_args;

static void *sink(void *p) {
    sink_args *a = p;
    size_t cap = 1 << 20, got = 0;
    char *b = malloc(cap);
    while (got < a->total) {
        ssize_t r = read(a->fd, b, cap);
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

/* Seconds to stream `bytes` through a loopback socket (until the reader has them all). */
static double raw_stream(const uint8_t *data, size_t bytes) {
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
    sink_args sa = {s, bytes};
    pthread_t th;
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
    close(c);
    close(s);
    return sa.total == bytes ? t : -1;
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
        for (int d = 0; d < 2; d++) {
            qsort(t[0][d], (size_t)rounds, sizeof(double), cmp_double);
            qsort(t[1][d], (size_t)rounds, sizeof(double), cmp_double);
            double one = (double)bytes / 1024.0 / t[0][d][rounds / 2];
            double piped = (double)bytes / 1024.0 / t[1][d][rounds / 2];
            printf("%s  pipelined %8.1f KiB/s   one at a time %8.1f KiB/s   %5.2fx", dir[d], piped,
                   one, piped / one);
            if (baud > 0) {
                printf("   payload %.2f of the line (%.0f baud)", piped * 1024.0 / (baud / 10.0),
                       baud);
            }
            printf("\n");
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
    double *raw = calloc((size_t)rounds, sizeof(double));
    double *to = calloc((size_t)rounds, sizeof(double));
    double *from = calloc((size_t)rounds, sizeof(double));
    /* warm-up: one of each */
    if (raw_stream(data, bytes) < 0 || tether_session_copy_to(s, h, 0, data, bytes) ||
        tether_session_copy_from(s, h, 0, back, bytes)) {
        fprintf(stderr, "bench_rpc_copy: %s\n", tether_last_error());
        goto out;
    }
    for (int r = 0; r < rounds; r++) { /* interleaved, so drift hits all three alike */
        raw[r] = raw_stream(data, bytes);
        double t0 = now();
        int rc = tether_session_copy_to(s, h, 0, data, bytes);
        to[r] = now() - t0;
        memset(back, 0, bytes);
        t0 = now();
        rc = rc ? rc : tether_session_copy_from(s, h, 0, back, bytes);
        from[r] = now() - t0;
        if (rc || raw[r] < 0 || memcmp(back, data, bytes) != 0) {
            fprintf(stderr, "bench_rpc_copy: round %d: %s\n", r,
                    rc ? tether_last_error() : "the bytes came back different");
            goto out;
        }
    }
    qsort(raw, (size_t)rounds, sizeof(double), cmp_double);
    qsort(to, (size_t)rounds, sizeof(double), cmp_double);
    qsort(from, (size_t)rounds, sizeof(double), cmp_double);
    double m_raw = raw[rounds / 2], m_to = to[rounds / 2], m_from = from[rounds / 2];
    printf("%zu MiB per transfer, median of %d rounds, TCP loopback\n", mib, rounds);
    printf("raw socket stream          %7.2f GB/s   1.00x\n", (double)bytes / m_raw / 1e9);
    printf("tetherd COPY_TO            %7.2f GB/s  %5.2fx\n", (double)bytes / m_to / 1e9,
           m_raw / m_to);
    printf("tetherd COPY_FROM          %7.2f GB/s  %5.2fx\n", (double)bytes / m_from / 1e9,
           m_raw / m_from);
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
