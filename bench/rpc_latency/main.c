/*
 * bench/rpc_latency: how much the RPC stack adds to a loopback round trip.
 *
 *   raw      a 64-byte ping-pong over a TCP loopback socket (TCP_NODELAY, echo thread): the
 *            baseline of every ratio
 *   raw proc the same with the echo in another process (as tetherd's session is: each round
 *            trip switches address spaces twice)
 *   null     CALL of the system library's packed `tether.null` on a tetherd started here on
 *            127.0.0.1 (full path: msgpack encode, framing, session child, dedicated painted
 *            stack, reply), once with the default 256 KiB call stack and once with 64 KiB
 *
 * Prints microseconds per round trip (the median of rounds that interleave the four) and the
 * ratio to raw, and the CPU time both ends spent per round trip (bench/cpu_time.h; on a shared
 * machine the wall time also holds the waits for a core) with its ratio to raw's, then the
 * goal (docs/tetherd.md, "Latency": a null CALL's wall time at most 1.2x raw's) met or not.
 * Usage: bench_rpc_latency [N [ROUNDS]] (TETHERD overrides the tetherd path).
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

static int read_full(int fd, char *b, size_t n) {
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r <= 0) {
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static void *echo(void *p) {
    int fd = *(int *)p;
    char b[64];
    while (read_full(fd, b, sizeof b) == 0) {
        if (write(fd, b, sizeof b) != (ssize_t)sizeof b) {
            break;
        }
    }
    close(fd);
    return NULL;
}

/* The echo side in another process: the loop of echo() in a forked child. */
static pid_t echo_process(int s, int c) {
    pid_t pid = fork();
    if (pid == 0) {
        close(c);
        echo(&s);
        _exit(0);
    }
    return pid;
}

/* Seconds per round trip; *cpu = CPU seconds both ends spent per round trip. */
static double raw_pingpong(int n, int other_process, double *cpu) {
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
    pthread_t th;
    pid_t child = -1;
    if (other_process) {
        child = echo_process(s, c);
        close(s);
        if (child < 0) {
            return -1;
        }
    } else {
        pthread_create(&th, NULL, echo, &s);
    }
    char b[64] = {1};
    for (int i = 0; i < n / 10; i++) { /* warm-up */
        if (write(c, b, sizeof b) != (ssize_t)sizeof b || read_full(c, b, sizeof b)) {
            return -1;
        }
    }
    uint64_t c0 = bench_self_cpu_ns() + (child > 0 ? bench_pid_ns(child, NULL) : 0);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        if (write(c, b, sizeof b) != (ssize_t)sizeof b || read_full(c, b, sizeof b)) {
            return -1;
        }
    }
    double t = (now() - t0) / n;
    uint64_t c1 = bench_self_cpu_ns() + (child > 0 ? bench_pid_ns(child, NULL) : 0);
    *cpu = (double)(c1 - c0) * 1e-9 / n;
    close(c);
    if (other_process) {
        waitpid(child, NULL, 0);
    } else {
        pthread_join(th, NULL);
    }
    return t;
}

static double null_call(int n, const char *stack, double *cpu) {
    const char *tetherd = getenv("TETHERD") ? getenv("TETHERD") : TETHERD_PATH;
    char dir[] = "/tmp/blatXXXXXX";
    if (!mkdtemp(dir)) {
        return -1;
    }
    char pf[64];
    snprintf(pf, sizeof pf, "%s/port", dir);
    const char *argv[] = {tetherd,   "--tcp",        "127.0.0.1:0", "--port-file", pf,
                          "--quiet", "--stack-size", stack,         NULL};
    pid_t pid;
    if (posix_spawn(&pid, tetherd, NULL, NULL, (char *const *)argv, environ)) {
        return -1;
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
    double t = -1;
    tether_session *s = NULL;
    tether_remote_func f;
    if (port && tether_session_open(&s, url, NULL) == 0 &&
        tether_session_get_function(s, 0, "tether.null", &f) == 0) {
        for (int i = 0; i < n / 10; i++) {
            tether_session_call(s, &f, NULL, 0, NULL);
        }
        uint64_t c0 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        double t0 = now();
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            ok = tether_session_call(s, &f, NULL, 0, NULL) == 0;
        }
        t = ok ? (now() - t0) / n : -1;
        uint64_t c1 = bench_self_cpu_ns() + bench_tree_cpu_ns(pid, NULL);
        *cpu = (double)(c1 - c0) * 1e-9 / n;
    } else {
        fprintf(stderr, "bench: %s\n", tether_last_error());
    }
    tether_session_close(s);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    unlink(pf);
    rmdir(dir);
    return t;
}

#define GOAL_RATIO 1.20 /* null CALL against the raw ping-pong (docs/tetherd.md, "Latency") */

/* A ratio as printed (two decimals), so that the verdict agrees with the figure beside it. */
static double ratio2(double r) {
    return (double)(long long)(r * 100.0 + 0.5) / 100.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 100) {
        n = 100;
    }
    if (rounds < 1 || rounds > 99) {
        rounds = 5;
    }
    /* rounds interleaved, medians compared: drift of a shared machine hits all four alike */
    enum { RAW, RAWP, N256, N64, KINDS };
    static const char *label[KINDS] = {
        "raw socket ping-pong (64 B)", "raw, echo in another process",
        "tetherd null CALL (256 KiB stack)", "tetherd null CALL (64 KiB stack)"};
    double wall[KINDS][99], cpu[KINDS][99];
    for (int r = 0; r < rounds; r++) {
        wall[RAW][r] = raw_pingpong(n, 0, &cpu[RAW][r]);
        wall[RAWP][r] = raw_pingpong(n, 1, &cpu[RAWP][r]);
        wall[N256][r] = null_call(n, "262144", &cpu[N256][r]);
        wall[N64][r] = null_call(n, "65536", &cpu[N64][r]);
        for (int k = 0; k < KINDS; k++) {
            if (wall[k][r] <= 0) {
                fprintf(stderr, "bench_rpc_latency: a measurement failed\n");
                return 1;
            }
        }
    }
    double mw[KINDS], mc[KINDS];
    for (int k = 0; k < KINDS; k++) {
        mw[k] = median(wall[k], rounds);
        mc[k] = median(cpu[k], rounds);
    }
    printf("round trips: %d each, TCP loopback, median of %d interleaved rounds\n", n, rounds);
    printf("%-36s %9s %7s %12s %7s\n", "", "wall", "ratio", "CPU (both)", "ratio");
    for (int k = 0; k < KINDS; k++) {
        printf("%-36s %6.2f us %6.2fx %9.2f us %6.2fx\n", label[k], mw[k] * 1e6, mw[k] / mw[RAW],
               mc[k] * 1e6, mc[RAW] > 0 ? mc[k] / mc[RAW] : 0.0);
    }
    /* the goal (docs/tetherd.md, "Latency"), for both stack sizes */
    for (int k = N256; k <= N64; k++) {
        double r = ratio2(mw[k] / mw[RAW]);
        printf("goal %s <= %.2fx raw: %.2fx, %s\n", label[k], GOAL_RATIO, r,
               r <= GOAL_RATIO ? "met" : "not met");
    }
    return 0;
}
