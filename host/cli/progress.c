/*
 * The `tether` CLI's progress reports (cli.h): long work (uploads and copies, ab's measurement
 * rounds, tune's trials) says how far it is, how fast it goes and how long it has left.
 *
 *   on a terminal: one line on stderr, redrawn in place at most 10 times a second
 *     upload  [#########.........]  48%  2.2 MiB of 4.6 MiB  1.1 MiB/s  2 s left
 *   otherwise (logs, CI): a plain line at most every 5 s, and one when it is done
 *     tether run: upload: 48% (2.2 MiB of 4.6 MiB, 1.1 MiB/s, 2 s left)
 *     tether run: upload: done, 4.6 MiB in 4.1 s (1.1 MiB/s)
 *
 * What must stay true: nothing is printed for work that ends within the first second (so quick
 * commands and their tests see no progress); nothing goes to stdout; TETHER_PROGRESS=tty|lines|
 * off overrides the choice, TETHER_PROGRESS_AFTER_MS and TETHER_PROGRESS_EVERY_MS the first
 * second and the 5 s (for tests and for logs that want more or fewer lines).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 0 off, 1 terminal line, 2 plain lines */
static int mode(void) {
    const char *m = getenv("TETHER_PROGRESS");
    if (m && !strcmp(m, "off")) {
        return 0;
    }
    if (m && !strcmp(m, "tty")) {
        return 1;
    }
    if (m && !strcmp(m, "lines")) {
        return 2;
    }
    return isatty(STDERR_FILENO) ? 1 : 2;
}

static double env_ms(const char *name, double def) {
    const char *v = getenv(name);
    if (!v || !*v) {
        return def;
    }
    char *end;
    double x = strtod(v, &end);
    return *end || x < 0 ? def : x / 1000.0;
}

static void amount(char *buf, size_t n, double v, int bytes) {
    if (!bytes) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    const char *units[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void duration(char *buf, size_t n, double s) {
    if (s < 60) {
        snprintf(buf, n, "%.0f s", s < 1 ? 1 : s);
    } else if (s < 3600) {
        snprintf(buf, n, "%d min %d s", (int)s / 60, (int)s % 60);
    } else {
        snprintf(buf, n, "%d h %d min", (int)s / 3600, (int)s % 3600 / 60);
    }
}

void tether_cli_progress_start(tether_cli_progress *p, const char *what, uint64_t total,
                               const char *unit) {
    memset(p, 0, sizeof p[0]);
    snprintf(p->what, sizeof p->what, "%s", what);
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
    p->total = total;
    p->start = now_s();
    p->mode = mode();
    p->active = 1;
}

/* "2.2 MiB of 4.6 MiB", "3 of 12 rounds" */
static void done_of_total(const tether_cli_progress *p, char *buf, size_t n) {
    int bytes = !p->unit[0];
    char d[32], t[32];
    amount(d, sizeof d, (double)p->done, bytes);
    amount(t, sizeof t, (double)p->total, bytes);
    snprintf(buf, n, "%s of %s%s%s", d, t, bytes ? "" : " ", p->unit);
}

static void rate_text(const tether_cli_progress *p, double elapsed, char *buf, size_t n) {
    double r = elapsed > 0 ? (double)p->done / elapsed : 0;
    if (!p->unit[0]) {
        char a[32];
        amount(a, sizeof a, r, 1);
        snprintf(buf, n, "%s/s", a);
    } else {
        snprintf(buf, n, r >= 10 ? "%.0f %s/s" : "%.2f %s/s", r, p->unit);
    }
}

void tether_cli_progress_update(tether_cli_progress *p, uint64_t done) {
    if (!p->active || !p->mode) {
        return;
    }
    p->done = done > p->total ? p->total : done;
    double t = now_s(), elapsed = t - p->start;
    int finished = p->done >= p->total;
    if (!p->shown && elapsed < env_ms("TETHER_PROGRESS_AFTER_MS", 1.0)) {
        return;
    }
    char dt[128], rate[48], left[40] = "";
    done_of_total(p, dt, sizeof dt);
    rate_text(p, elapsed, rate, sizeof rate);
    if (p->done > 0 && !finished) {
        double remaining = elapsed / (double)p->done * (double)(p->total - p->done);
        char d[32];
        duration(d, sizeof d, remaining);
        snprintf(left, sizeof left, "%s left", d);
    }
    int pct = p->total ? (int)(100.0 * (double)p->done / (double)p->total) : 100;
    if (p->mode == 1) {
        if (!finished && p->shown && t - p->last < 0.1) {
            return;
        }
        int width = 20, fill = p->total ? (int)((double)width * p->done / p->total) : width;
        fprintf(stderr, "\r\033[K%s  [%.*s%.*s]  %3d%%  %s  %s  %s", p->what, fill,
                "####################", width - fill, "....................", pct, dt, rate, left);
        if (finished) {
            fputc('\n', stderr);
        }
    } else {
        if (finished) {
            char d[32];
            duration(d, sizeof d, elapsed);
            if (elapsed < 10) {
                snprintf(d, sizeof d, "%.1f s", elapsed);
            }
            fprintf(stderr, "tether %s: %s: done, %s in %s (%s)\n", tether_cli_command(), p->what,
                    dt, d, rate);
        } else if (!p->shown || t - p->last >= env_ms("TETHER_PROGRESS_EVERY_MS", 5.0)) {
            fprintf(stderr, "tether %s: %s: %d%% (%s, %s%s%s)\n", tether_cli_command(), p->what,
                    pct, dt, rate, left[0] ? ", " : "", left);
        } else {
            return;
        }
    }
    fflush(stderr);
    p->shown = 1;
    p->last = t;
    if (finished) {
        p->active = 0;
    }
}

void tether_cli_progress_end(tether_cli_progress *p) {
    if (p->active && p->shown && p->mode == 1) {
        fputc('\n', stderr); /* stopped early (an error): leave the line as it was */
    }
    p->active = 0;
}
