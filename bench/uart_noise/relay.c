/*
 * tether_uart_noise: a noisy serial line between two pseudo-terminals, for the UART link's
 * benchmark (bench/uart_noise/run.sh) and tests. It opens two pty pairs, prints the two slave
 * paths ("DEVICE HOST") on stdout, and relays bytes between them in both directions: each byte
 * gets one random bit flipped with probability --flip and is dropped with probability --drop;
 * --baud paces each direction to that many bits per second (10 bits a byte, 0 = as fast as the
 * ptys go). It runs until SIGINT/SIGTERM, then prints what it did on stderr.
 *
 * What must stay true: noise is drawn from a seeded generator per direction (--seed), so a run
 * can be repeated; the relay holds both slaves open itself, so neither side sees a hang-up while
 * the other is not connected yet; nothing but the two ptys is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

typedef struct direction {
    const char *name;
    int from, to; /* pty masters */
    uint64_t rng;
    double flip, drop;
    uint32_t baud;
    atomic_ullong bytes, flipped, dropped;
} direction;

static atomic_int g_stop;

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&g_stop, 1);
}

static uint64_t next_random(uint64_t *s) { /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

static double uniform(uint64_t *s) {
    return (double)(next_random(s) >> 11) / 9007199254740992.0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t) {
    double left = t - now_s();
    if (left <= 0) {
        return;
    }
    struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR && !atomic_load(&g_stop)) {
    }
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN) {
                struct pollfd q = {.fd = fd, .events = POLLOUT};
                poll(&q, 1, 100);
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *relay(void *arg) {
    direction *d = arg;
    uint8_t in[256], out[256];
    double line_free = now_s(); /* when the paced line can take the next byte */
    while (!atomic_load(&g_stop)) {
        struct pollfd q = {.fd = d->from, .events = POLLIN};
        if (poll(&q, 1, 100) <= 0) {
            continue;
        }
        ssize_t n = read(d->from, in, d->baud ? 16 : sizeof in);
        if (n <= 0) {
            if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EIO)) {
                if (errno == EIO) { /* no slave open at the moment */
                    usleep(10000);
                }
                continue;
            }
            break;
        }
        size_t m = 0;
        for (ssize_t i = 0; i < n; i++) {
            uint8_t b = in[i];
            if (d->drop > 0 && uniform(&d->rng) < d->drop) {
                atomic_fetch_add(&d->dropped, 1);
                continue;
            }
            if (d->flip > 0 && uniform(&d->rng) < d->flip) {
                b ^= (uint8_t)(1u << (next_random(&d->rng) % 8));
                atomic_fetch_add(&d->flipped, 1);
            }
            out[m++] = b;
        }
        atomic_fetch_add(&d->bytes, (unsigned long long)n);
        if (d->baud) {
            /* back to back while bytes keep coming, as a UART's shift register goes on with
             * the next byte of its FIFO: the relay's own syscalls between two pieces (a small
             * fraction of a millisecond) do not idle the line */
            double t = now_s();
            double start = t > line_free + 0.002 ? t : line_free;
            line_free = start + (double)n * 10.0 / d->baud;
            sleep_until(line_free);
        }
        if (m && write_all(d->to, out, m)) {
            break;
        }
    }
    return NULL;
}

static void usage(FILE *f) {
    fprintf(f, "usage: tether_uart_noise [--flip P] [--drop P] [--seed N] [--baud B]\n"
               "  Relays bytes between two new pseudo-terminals, printing \"DEVICE HOST\" (their\n"
               "  paths) on stdout; each byte gets one bit flipped with probability P (--flip)\n"
               "  and is dropped with probability P (--drop); --baud paces each direction (10\n"
               "  bits a byte; 0 = unpaced). Runs until SIGINT/SIGTERM.\n");
}

static int open_pair(int *master, int *slave, char *name) {
    struct termios tio;
    memset(&tio, 0, sizeof tio);
    cfmakeraw(&tio);
    if (openpty(master, slave, name, &tio, NULL) != 0) {
        return -1;
    }
    int fl = fcntl(*master, F_GETFL);
    fcntl(*master, F_SETFL, fl | O_NONBLOCK);
    return 0;
}

int main(int argc, char **argv) {
    double flip = 0, drop = 0;
    unsigned long long seed = 1;
    unsigned long baud = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "tether_uart_noise: %s needs a value (try --help)\n", a);
            return 2;
        }
        i++;
        errno = 0;
        if (!strcmp(a, "--flip")) {
            flip = strtod(v, &end);
        } else if (!strcmp(a, "--drop")) {
            drop = strtod(v, &end);
        } else if (!strcmp(a, "--seed")) {
            seed = strtoull(v, &end, 10);
        } else if (!strcmp(a, "--baud")) {
            baud = strtoul(v, &end, 10);
        } else {
            fprintf(stderr, "tether_uart_noise: unknown option '%s' (try --help)\n", a);
            return 2;
        }
        if (errno || !end || *end || end == v || flip < 0 || flip > 1 || drop < 0 || drop > 1 ||
            baud > 100000000ul) {
            fprintf(stderr, "tether_uart_noise: %s '%s': not a valid value\n", a, v);
            return 2;
        }
    }
    int m_dev, s_dev, m_host, s_host;
    char dev[256], host[256];
    if (open_pair(&m_dev, &s_dev, dev) || open_pair(&m_host, &s_host, host)) {
        fprintf(stderr, "tether_uart_noise: cannot open a pseudo-terminal: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    printf("%s %s\n", dev, host);
    fflush(stdout);
    direction to_dev = {
        "host->device", m_host, m_dev, seed * 2 + 1, flip, drop, (uint32_t)baud, 0, 0, 0};
    direction to_host = {
        "device->host", m_dev, m_host, seed * 2 + 2, flip, drop, (uint32_t)baud, 0, 0, 0};
    for (int k = 0; k < 4; k++) { /* warm up the generators */
        next_random(&to_dev.rng);
        next_random(&to_host.rng);
    }
    pthread_t a, b;
    pthread_create(&a, NULL, relay, &to_dev);
    pthread_create(&b, NULL, relay, &to_host);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    direction *ds[2] = {&to_dev, &to_host};
    for (int k = 0; k < 2; k++) {
        fprintf(stderr, "tether_uart_noise: %s: %llu bytes, %llu flipped, %llu dropped\n",
                ds[k]->name, (unsigned long long)atomic_load(&ds[k]->bytes),
                (unsigned long long)atomic_load(&ds[k]->flipped),
                (unsigned long long)atomic_load(&ds[k]->dropped));
    }
    close(s_dev);
    close(s_host);
    close(m_dev);
    close(m_host);
    return 0;
}
