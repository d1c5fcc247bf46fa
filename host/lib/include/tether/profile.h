/*
 * tether profile: per-node times of a profiling build (`tether compile --profile`,
 * docs/profile.md) run on a device, and their reports (the Chrome/Perfetto trace, the JSON
 * schema, the SVG). What `tether profile`, `run/bench --profile`, `ab --profile` and the Python
 * package's Artifact.profile use; the CLI only prints.
 *
 * A C artifact's entry reads the device clock before and after each node's kernel (ns on tetherd,
 * cycles on an MCU board, converted with the HELLO's clock_hz) and, on a board, each node's stack
 * bytes; after every call the host reads that table with the module's <prefix>_profile. An OpenCL
 * artifact's nodes are its kernels' profiling events. An artifact compiled without --profile is
 * refused (TETHER_ERR_UNSUPPORTED, the message says to compile with --profile).
 *
 * Ownership: a tether_profile owns its arrays (tether_profile_free). Errors: negative
 * tether_status with the message in tether_last_error().
 */
#ifndef TETHER_PROFILE_H
#define TETHER_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "tether/artifact.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One profiled node: what metadata.json says of it and its measured figures. */
typedef struct tether_profile_node {
    char name[128];
    char op[32];
    char kernel[128];
    char schedule[256];
    char shapes[256]; /* "1x1x58x13, 8x1x10x4, 8 -> 1x8x25x5" */
    uint64_t macs, flops, bytes_in, bytes_out;
    uint64_t workspace_live; /* bytes of planned tensors live at the node */
    double median_ns;        /* median over the runs */
    double share;            /* median_ns / the sum of every node's median */
    uint64_t stack_bytes;    /* most over the runs (a board's firmware); 0 = not measured */
} tether_profile_node;

typedef struct tether_profile {
    int nnodes;
    tether_profile_node *nodes;
    int runs;
    double *node_ns;       /* [runs * nnodes]: node i's time in run r at r * nnodes + i */
    double *start_ns;      /* [runs * nnodes]: its start after the first node's start in run r */
    double *call_ns;       /* [runs]: the profiled call's whole time as the device measured it */
    double sum_median_ns;  /* median over the runs of the sum of the node times */
    double call_median_ns; /* median of call_ns */
    uint64_t call_stack_bytes; /* the call's stack high-water mark (C artifacts; 0 = none) */
    double clock_hz;           /* the clock the node times were read with; 0 = OpenCL events */
    bool stack;                /* stack_bytes measured per node */
    bool opencl;
    char target[64];
    /* Set by the caller when it measured them: the same model's plain (non-profiling) artifact's
     * whole-call median on the same device, 0 = not measured. */
    double plain_ns;
    /* Set by the caller: the profiling build's whole call measured the same way as plain_ns;
     * timed_ns / plain_ns - 1 is the instrumentation overhead. 0 = not measured. */
    double timed_ns;
} tether_profile;

/* Whether the artifact is a profiling build (its metadata.json has "profile"). */
bool tether_artifact_profiled(const tether_artifact *a);

/* Runs the prepared artifact `runs` times (1..10000) on its inputs, reading the node times after
 * each run; outputs receive the last run's. The node medians and shares are filled in. */
int tether_artifact_profile(tether_artifact *a, const void *const *inputs, void *const *outputs,
                            int runs, tether_profile *out);

void tether_profile_free(tether_profile *p);

/* Writers (path as tether/file.h's output: replaced whole or left as it was):
 *   trace  Chrome/Perfetto trace-event JSON: one "X" (complete) event per node call, one track
 *          (tid) per device queue, times in microseconds from the first run's start;
 *   json   the schema of docs/profile.md ("format": "tether-profile", version 1);
 *   svg    a bar per node by median time, the workspace live at each node below it. */
int tether_profile_write_trace(const tether_profile *p, const char *path);
int tether_profile_write_json(const tether_profile *p, const char *path);
int tether_profile_write_svg(const tether_profile *p, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_PROFILE_H */
