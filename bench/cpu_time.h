/*
 * The RPC benchmarks' CPU accounting (bench/rpc_latency, bench/rpc_copy): on a shared machine
 * the wall time of a round trip includes the time both ends wait for a core, so the benchmarks
 * also print the CPU time both ends spent (this process's, plus a process tree's from
 * /proc/PID/schedstat: nanoseconds on a CPU, and nanoseconds waiting for one). Header-only,
 * Linux only; a figure that cannot be read is 0 (the benchmark then prints no CPU column).
 */
#ifndef TETHER_BENCH_CPU_TIME_H
#define TETHER_BENCH_CPU_TIME_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* CPU nanoseconds of every thread of this process. */
static inline uint64_t bench_self_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds a (single-threaded) process ran and waited for a core; 0 when unreadable. */
static inline uint64_t bench_pid_ns(pid_t pid, uint64_t *waited) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long long run = 0, wait = 0;
    if (f) {
        if (fscanf(f, "%llu %llu", &run, &wait) != 2) {
            run = wait = 0;
        }
        fclose(f);
    }
    if (waited) {
        *waited += wait;
    }
    return run;
}

/* CPU nanoseconds of a process and its children (tetherd and its session processes). */
static inline uint64_t bench_tree_cpu_ns(pid_t pid, uint64_t *waited) {
    uint64_t ns = bench_pid_ns(pid, waited);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    if (f) {
        int child;
        while (fscanf(f, "%d", &child) == 1) {
            ns += bench_pid_ns((pid_t)child, waited);
        }
        fclose(f);
    }
    return ns;
}

#endif
