/*
 * Tuning logs (docs/tune.md): JSON Lines of measured schedules per workload, appended one line
 * per measurement by `tether tune` and read by `--tuning-log` (the best record per workload for
 * an exact target and CPU becomes a node schedule of the C emitter).
 *
 * What must stay true: a line is written whole (one write of the line and its newline), so an
 * interrupted tune leaves a log that loads; a malformed line is an error naming its number, never
 * skipped; records with another target or CPU are never used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

/* The knobs a record stores: name and field (the same names as report.json's "schedule"). */
#define KNOBS(X)                                                                                   \
    X(vector_width)                                                                                \
    X(conv_oc_block)                                                                               \
    X(conv_col_vectors)                                                                            \
    X(dw_col_vectors)                                                                              \
    X(gemv_rows)                                                                                   \
    X(gemm_rows)                                                                                   \
    X(gemm_col_vectors)                                                                            \
    X(channel_block)                                                                               \
    X(nchwc_oc_vectors)                                                                            \
    X(nchwc_pixels)                                                                                \
    X(nchwc_dw_pixels)                                                                             \
    X(local_size)                                                                                  \
    X(ocl_split_k)                                                                                 \
    X(ocl_tile_m)                                                                                  \
    X(ocl_tile_n)

void tether_tuning_log_close(tether_tuning_log *log) {
    if (log) {
        free(log->records);
        memset(log, 0, sizeof *log);
    }
}

static int push(tether_tuning_log *log, const tether_tune_record *r) {
    if (log->n == log->cap) {
        int cap = log->cap ? 2 * log->cap : 64;
        tether_tune_record *n = realloc(log->records, sizeof *n * (size_t)cap);
        if (!n) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tuning log: out of memory");
        }
        log->records = n;
        log->cap = cap;
    }
    log->records[log->n++] = *r;
    return TETHER_OK;
}

static int str_field(const cJSON *o, const char *k, char *dst, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= n) {
        return -1;
    }
    snprintf(dst, n, "%s", v->valuestring);
    return 0;
}

static int parse_line(const char *line, tether_tune_record *r) {
    memset(r, 0, sizeof *r);
    cJSON *o = cJSON_Parse(line);
    if (!o) {
        return -1;
    }
    int bad = str_field(o, "workload", r->workload, sizeof r->workload) ||
              str_field(o, "target", r->target, sizeof r->target) ||
              str_field(o, "cpu", r->cpu, sizeof r->cpu);
    const cJSON *us = cJSON_GetObjectItemCaseSensitive(o, "us");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "schedule");
    bad |= !cJSON_IsNumber(us) || !cJSON_IsObject(sc);
    if (!bad) {
        r->us = us->valuedouble;
        tether_schedule_init(&r->schedule);
#define GET(k)                                                                                     \
    {                                                                                              \
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sc, #k);                                 \
        if (v) {                                                                                   \
            bad |= !cJSON_IsNumber(v) || v->valuedouble != (double)v->valueint;                    \
            r->schedule.k = cJSON_IsNumber(v) ? v->valueint : r->schedule.k;                       \
        }                                                                                          \
    }
        KNOBS(GET)
#undef GET
        str_field(o, "node", r->node, sizeof r->node); /* optional */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "trial");
        r->trial = cJSON_IsNumber(t) ? t->valueint : 0;
    }
    cJSON_Delete(o);
    if (!bad) { /* knobs in the ranges the emitters take (tether_codegen_c checks the same) */
        const tether_schedule *k = &r->schedule;
        bad =
            k->conv_oc_block < 0 || k->conv_oc_block > 8 || k->conv_col_vectors < 1 ||
            k->conv_col_vectors > 4 || k->dw_col_vectors < 1 || k->dw_col_vectors > 8 ||
            k->gemv_rows < 1 || k->gemv_rows > 8 || k->gemm_rows < 0 || k->gemm_rows > 8 ||
            k->gemm_col_vectors < 1 || k->gemm_col_vectors > 4 || k->nchwc_oc_vectors < 0 ||
            k->nchwc_oc_vectors > 8 || k->nchwc_pixels < 0 || k->nchwc_pixels > 16 ||
            k->nchwc_dw_pixels < 1 || k->nchwc_dw_pixels > 16 || k->local_size < 0 ||
            k->local_size > 1024 || k->ocl_split_k < 0 || k->ocl_split_k > 1024 ||
            (k->ocl_tile_m && k->ocl_tile_m != 16 && k->ocl_tile_m != 32 && k->ocl_tile_m != 64) ||
            (k->ocl_tile_n && k->ocl_tile_n != 16 && k->ocl_tile_n != 32 && k->ocl_tile_n != 64) ||
            r->us != r->us ||
            (k->vector_width != -1 && k->vector_width != 0 && k->vector_width != 4 &&
             k->vector_width != 8 && k->vector_width != 16) ||
            (k->channel_block != -1 && k->channel_block != 0 && k->channel_block != 4 &&
             k->channel_block != 8 && k->channel_block != 16);
    }
    return bad ? -1 : 0;
}

int tether_tuning_log_load(const char *path, bool missing_ok, tether_tuning_log *log) {
    memset(log, 0, sizeof *log);
    struct stat st;
    if (missing_ok && stat(path, &st) != 0) {
        return TETHER_OK; /* a new log */
    }
    char *text = NULL;
    size_t len = 0;
    int rc = tether_file_read_text(path, (size_t)1 << 30, &text, &len);
    if (rc) {
        return rc;
    }
    int lineno = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) {
            *nl = 0;
        }
        lineno++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') {
            q++;
        }
        if (*q) {
            tether_tune_record r;
            if (parse_line(q, &r)) {
                free(text);
                tether_tuning_log_close(log);
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "%s:%d: not a tuning record (JSON with workload, target, "
                                        "cpu, schedule of integer knobs in range, and us)",
                                        path, lineno);
            }
            if ((rc = push(log, &r))) {
                free(text);
                tether_tuning_log_close(log);
                return rc;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return TETHER_OK;
}

int tether_tuning_log_add(tether_tuning_log *log, const char *path, const tether_tune_record *r) {
    int rc = push(log, r);
    if (rc || !path) {
        return rc;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *sc = cJSON_CreateObject();
    if (!o || !sc) {
        cJSON_Delete(o);
        cJSON_Delete(sc);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tuning log: out of memory");
    }
    cJSON_AddStringToObject(o, "workload", r->workload);
    cJSON_AddStringToObject(o, "target", r->target);
    cJSON_AddStringToObject(o, "cpu", r->cpu);
#define PUT(k) cJSON_AddNumberToObject(sc, #k, r->schedule.k);
    KNOBS(PUT)
#undef PUT
    cJSON_AddItemToObject(o, "schedule", sc);
    cJSON_AddNumberToObject(o, "us", r->us);
    cJSON_AddStringToObject(o, "node", r->node);
    cJSON_AddNumberToObject(o, "trial", r->trial);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!line) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tuning log: out of memory");
    }
    size_t n = strlen(line);
    line[n] = '\n'; /* one write: the terminator is replaced by the newline */
    FILE *f = fopen(path, "ab");
    int ok = f && fwrite(line, 1, n + 1, f) == n + 1;
    ok = f && fclose(f) == 0 && ok;
    free(line);
    if (!ok) {
        return tether_set_error(TETHER_ERR_IO, "cannot append to the tuning log %s", path);
    }
    return TETHER_OK;
}

int tether_tuning_log_best(const tether_tuning_log *log, const char *target, const char *cpu,
                           tether_node_schedule **out, int *n) {
    *out = NULL;
    *n = 0;
    if (!log->n) {
        return TETHER_OK;
    }
    tether_node_schedule *v = calloc((size_t)log->n, sizeof *v);
    double *best = calloc((size_t)log->n, sizeof *best);
    if (!v || !best) {
        free(v);
        free(best);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "tuning log: out of memory");
    }
    int k = 0;
    for (int i = 0; i < log->n; i++) {
        const tether_tune_record *r = &log->records[i];
        if (r->us < 0 || strcmp(r->target, target ? target : "") != 0 ||
            strcmp(r->cpu, cpu ? cpu : "") != 0) {
            continue;
        }
        int j = 0;
        while (j < k && strcmp(v[j].workload, r->workload) != 0) {
            j++;
        }
        if (j == k) {
            v[k].workload = r->workload;
            v[k].schedule = r->schedule;
            best[k++] = r->us;
        }
        if (r->us < best[j]) {
            best[j] = r->us;
            v[j].schedule = r->schedule;
        }
    }
    free(best);
    *out = v;
    *n = k;
    return TETHER_OK;
}

static const char *target_of(const tether_compile_options *o) {
    if (o->backend == TETHER_BACKEND_OPENCL) {
        return "opencl"; /* OpenCL records: work-group sizes, one set per log */
    }
    return o->build.target ? o->build.target : "x86_64-linux";
}

int tether_tuning_log_apply(const char *path, tether_compile_options *o, tether_tuning_log *log,
                            tether_node_schedule **ns) {
    *ns = NULL;
    int n = 0, rc = tether_tuning_log_load(path, false, log);
    if (!rc) {
        const char *cpu = o->backend == TETHER_BACKEND_OPENCL ? ""
                          : o->build.cpu                      ? o->build.cpu
                                                              : "";
        rc = tether_tuning_log_best(log, target_of(o), cpu, ns, &n);
    }
    if (rc) {
        tether_tuning_log_close(log);
        return rc;
    }
    o->codegen.node_schedules = *ns;
    o->codegen.nnode_schedules = n;
    o->opencl.node_schedules = *ns;
    o->opencl.nnode_schedules = n;
    return TETHER_OK;
}

void tether_tuning_note(FILE *out, const tether_compile_result *res, const tether_tuning_log *log,
                        const tether_compile_options *o) {
    const char *target = target_of(o);
    const char *cpu = o->backend == TETHER_BACKEND_OPENCL ? "" : o->build.cpu ? o->build.cpu : "";
    fprintf(out, "tuning log: %d of %d kernels with knobs use a tuned schedule (%s, cpu %s)\n",
            res->ntuned, res->ntunable, target, cpu[0] ? cpu : "baseline");
    if (res->ntuned >= res->ntunable) {
        return;
    }
    fprintf(out, "note: %d kernel%s no record for %s/%s in the log; they keep the defaults",
            res->ntunable - res->ntuned, res->ntunable - res->ntuned == 1 ? " has" : "s have",
            target, cpu[0] ? cpu : "baseline");
    for (int i = 0; i < log->n; i++) {
        const tether_tune_record *r = &log->records[i];
        if (strcmp(r->target, target) != 0 || strcmp(r->cpu, cpu) != 0) {
            fprintf(out,
                    " (the log has records for %s/%s: compile for that target and cpu to use "
                    "them)",
                    r->target, r->cpu[0] ? r->cpu : "baseline");
            break;
        }
    }
    fprintf(out, "; `tether tune MODEL --log FILE` on the device measures them\n");
}
