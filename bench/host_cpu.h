/*
 * The benchmarks' view of this machine's CPU: its x86-64 level as tetherd reports it in HELLO
 * (`cpu`), for --mcpu, so a benchmark compiles what `tether run MODEL` would compile here.
 * Header-only; x86-64 hosts only (the benchmarks run on the workstation).
 */
#ifndef TETHER_BENCH_HOST_CPU_H
#define TETHER_BENCH_HOST_CPU_H

static inline const char *bench_host_cpu(void) {
    __builtin_cpu_init();
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
    return v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : "x86-64-v2";
}

#endif
