/*
 * Per-node profiling of a profiling build on a device (tether/profile.h): the node list from
 * metadata.json's "profile", the C backend's clock table read after each run, the OpenCL
 * backend's kernel events mapped to their nodes, medians and shares. The reports are
 * profile_write.c's.
 *
 * What must stay true: a non-profiling artifact is refused before anything runs, with a message
 * that says how to get a profiling build; a table that does not fit the node list (a clock that
 * went backwards, a slot past the table) is an error, never a wrong figure; the figures are the
 * device's own (its clock, its events), never host wall time.
 */
#include "tether/profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "artifact_internal.h"
#include "tether/crt.h"

bool tether_artifact_profiled(const tether_artifact *a) {
    return a && tether__artifact_profile_json(a) != NULL;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Median of v[0], v[stride], ... (n values); 0 for none. */
static double median_of(const double *v, int n, int stride) {
    if (n <= 0) {
        return 0;
    }
    double *t = malloc(sizeof(double) * (size_t)n);
    if (!t) {
        return v[0];
    }
    for (int i = 0; i < n; i++) {
        t[i] = v[(size_t)i * (size_t)stride];
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
}

static uint64_t num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

static void str(const cJSON *o, const char *k, char *out, size_t n) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    snprintf(out, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* "1x8x25x5"; "scalar" for rank 0 */
static size_t shape_text(const cJSON *sh, char *out, size_t n) {
    size_t k = 0;
    const cJSON *d;
    int first = 1;
    cJSON_ArrayForEach(d, sh) {
        k += (size_t)snprintf(out + (k < n ? k : n - 1), k < n ? n - k : 0, "%s%lld",
                              first ? "" : "x", (long long)d->valuedouble);
        first = 0;
    }
    if (first) {
        k += (size_t)snprintf(out + (k < n ? k : n - 1), k < n ? n - k : 0, "scalar");
    }
    return k;
}

static int read_nodes(const tether_artifact *a, tether_profile *p) {
    cJSON *pj = cJSON_Parse(tether__artifact_profile_json(a));
    const cJSON *nodes = cJSON_GetObjectItem(pj, "nodes");
    int n = cJSON_GetArraySize(nodes);
    p->stack = cJSON_IsTrue(cJSON_GetObjectItem(pj, "stack"));
    p->nodes = calloc((size_t)(n ? n : 1), sizeof *p->nodes);
    if (!pj || !p->nodes) {
        cJSON_Delete(pj);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, nodes) {
        tether_profile_node *nd = &p->nodes[i];
        const cJSON *slot = cJSON_GetObjectItem(x, "slot");
        if (!cJSON_IsObject(x) || !cJSON_IsNumber(slot) || slot->valuedouble != i ||
            !cJSON_IsString(cJSON_GetObjectItem(x, "name"))) {
            cJSON_Delete(pj);
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: metadata.json: profile node %d needs slot %d and a name",
                                    tether__artifact_dir(a), i, i);
        }
        str(x, "name", nd->name, sizeof nd->name);
        str(x, "op", nd->op, sizeof nd->op);
        str(x, "kernel", nd->kernel, sizeof nd->kernel);
        str(x, "schedule", nd->schedule, sizeof nd->schedule);
        size_t k = 0, cap = sizeof nd->shapes;
        const cJSON *in;
        int first = 1;
        cJSON_ArrayForEach(in, cJSON_GetObjectItem(x, "inputs")) {
            if (!first && k < cap) {
                k += (size_t)snprintf(nd->shapes + k, cap - k, ", ");
            }
            if (k < cap) {
                k += shape_text(in, nd->shapes + k, cap - k);
            }
            first = 0;
        }
        if (k < cap) {
            k += (size_t)snprintf(nd->shapes + k, cap - k, " -> ");
        }
        if (k < cap) {
            shape_text(cJSON_GetObjectItem(x, "output"), nd->shapes + k, cap - k);
        }
        nd->macs = num(x, "macs");
        nd->flops = num(x, "flops");
        nd->bytes_in = num(x, "bytes_in");
        nd->bytes_out = num(x, "bytes_out");
        nd->workspace_live = num(x, "workspace_live");
        i++;
    }
    p->nnodes = n;
    cJSON_Delete(pj);
    return 0;
}

/* One C run's table: begin, end, stack per node, in the device's clock. */
static int from_table(const tether_artifact *a, tether_profile *p, int r, const uint64_t *t) {
    double scale = 1e9 / p->clock_hz;
    uint64_t t0 = p->nnodes ? t[0] : 0;
    for (int i = 0; i < p->nnodes; i++) {
        uint64_t b = t[3 * i], e = t[3 * i + 1];
        if (e < b || b < t0 || (i > 0 && b < t[3 * (i - 1) + 1])) {
            return tether_set_error(TETHER_ERR_STATE,
                                    "%s: profile table of node '%s' is not in time order "
                                    "(begin %llu, end %llu): the module is not this "
                                    "artifact's, or the device clock went backwards",
                                    tether__artifact_dir(a), p->nodes[i].name,
                                    (unsigned long long)b, (unsigned long long)e);
        }
        p->node_ns[(size_t)r * (size_t)p->nnodes + (size_t)i] = (double)(e - b) * scale;
        p->start_ns[(size_t)r * (size_t)p->nnodes + (size_t)i] = (double)(b - t0) * scale;
        if (p->stack && t[3 * i + 2] > p->nodes[i].stack_bytes) {
            p->nodes[i].stack_bytes = t[3 * i + 2];
        }
    }
    return 0;
}

/* OpenCL: launch i's time to the node of its step; starts back to back on the one queue. */
static int from_events(tether_artifact *a, tether_profile *p, int r, const uint64_t *kns,
                       const int *step_of) {
    double at = 0;
    (void)a;
    for (int i = 0; i < p->nnodes; i++) {
        double d = (double)kns[step_of[i]];
        p->node_ns[(size_t)r * (size_t)p->nnodes + (size_t)i] = d;
        p->start_ns[(size_t)r * (size_t)p->nnodes + (size_t)i] = at;
        at += d;
    }
    return 0;
}

int tether_artifact_profile(tether_artifact *a, const void *const *inputs, void *const *outputs,
                            int runs, tether_profile *out) {
    memset(out, 0, sizeof *out);
    if (!tether_artifact_profiled(a)) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s is not a profiling build: it has no node timings to read "
                                "(compile it with `tether compile --profile`, or give `tether "
                                "profile` the model)",
                                tether__artifact_dir(a));
    }
    if (runs < 1 || runs > 10000) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "runs %d: 1..10000", runs);
    }
    tether_session *s = tether__artifact_session(a);
    if (!s) {
        return tether_set_error(TETHER_ERR_STATE, "%s: not prepared on a device",
                                tether__artifact_dir(a));
    }
    int rc = read_nodes(a, out);
    if (rc) {
        tether_profile_free(out);
        return rc;
    }
    out->opencl = tether_artifact_backend_of(a) == TETHER_ARTIFACT_OPENCL;
    snprintf(out->target, sizeof out->target, "%s", tether_artifact_target(a));
    const tether_device_info *d = tether_session_info(s);
    out->clock_hz = out->opencl ? 0 : d && d->clock_hz ? (double)d->clock_hz : 1e9;
    out->runs = runs;
    size_t cells = (size_t)runs * (size_t)(out->nnodes ? out->nnodes : 1);
    out->node_ns = calloc(cells, sizeof(double));
    out->start_ns = calloc(cells, sizeof(double));
    out->call_ns = calloc((size_t)runs, sizeof(double));
    int nk = tether_artifact_num_kernels(a);
    uint64_t *kns = calloc((size_t)(nk ? nk : 1), sizeof *kns);
    int *step_of = calloc((size_t)(out->nnodes ? out->nnodes : 1), sizeof *step_of);
    size_t tbytes = (size_t)(out->nnodes ? out->nnodes : 1) * 24u;
    uint64_t *table = calloc(tbytes / 8, sizeof *table);
    if (!out->node_ns || !out->start_ns || !out->call_ns || !kns || !step_of || !table) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; !rc && out->opencl && i < out->nnodes; i++) { /* each node's launch */
        step_of[i] = -1;
        for (int k = 0; k < nk && step_of[i] < 0; k++) {
            const char *kernel, *node;
            tether_artifact_kernel(a, k, &kernel, &node);
            if (node && strcmp(node, out->nodes[i].name) == 0) {
                step_of[i] = k;
            }
        }
        if (step_of[i] < 0) {
            rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                                  "%s: profile node '%s' has no kernel launch in the steps",
                                  tether__artifact_dir(a), out->nodes[i].name);
        }
    }
    for (int r = 0; !rc && r < runs; r++) {
        tether_call_result res;
        rc = tether_artifact_run(a, inputs, outputs, &res, out->opencl ? kns : NULL);
        if (!rc) {
            out->call_ns[r] = (double)res.elapsed_ns;
            if (res.stack_bytes > out->call_stack_bytes) {
                out->call_stack_bytes = res.stack_bytes;
            }
            rc = out->opencl ? from_events(a, out, r, kns, step_of)
                             : tether__artifact_profile_table(a, table, tbytes);
        }
        if (!rc && !out->opencl) {
            rc = from_table(a, out, r, table);
        }
    }
    free(kns);
    free(step_of);
    free(table);
    if (rc) {
        tether_profile_free(out);
        return rc;
    }
    double *sums = calloc((size_t)runs, sizeof(double));
    if (!sums) {
        tether_profile_free(out);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    double total = 0;
    for (int i = 0; i < out->nnodes; i++) {
        out->nodes[i].median_ns = median_of(out->node_ns + i, runs, out->nnodes);
        total += out->nodes[i].median_ns;
    }
    for (int r = 0; r < runs; r++) {
        for (int i = 0; i < out->nnodes; i++) {
            sums[r] += out->node_ns[(size_t)r * (size_t)out->nnodes + (size_t)i];
        }
    }
    for (int i = 0; i < out->nnodes; i++) {
        out->nodes[i].share = total > 0 ? out->nodes[i].median_ns / total : 0;
    }
    out->sum_median_ns = median_of(sums, runs, 1);
    out->call_median_ns = median_of(out->call_ns, runs, 1);
    free(sums);
    return 0;
}

void tether_profile_free(tether_profile *p) {
    if (!p) {
        return;
    }
    free(p->nodes);
    free(p->node_ns);
    free(p->start_ns);
    free(p->call_ns);
    memset(p, 0, sizeof *p);
}
