/*
 * The reports of a per-node profile (tether/profile.h, docs/profile.md): the Chrome/Perfetto
 * trace-event JSON, the tether-profile JSON schema and the SVG bar chart with the memory
 * timeline under it (written here, no drawing library).
 *
 * What must stay true: the trace has exactly one "X" event per node call (runs × nodes) on one
 * track per device queue, with non-negative ts/dur in microseconds; the JSON follows the schema
 * of docs/profile.md field for field; names in the SVG are XML-escaped; every file goes through
 * tether/file.h (replaced whole or left as it was).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tether/crt.h"
#include "tether/file.h"
#include "tether/profile.h"

static int put_json(cJSON *root, const char *path) {
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int rc = tether_file_write(path, text, strlen(text));
    free(text);
    return rc;
}

/* Whether the node clock counts core cycles (an MCU board), not nanoseconds. */
static int cycle_clock(const tether_profile *p) {
    return !p->opencl && strncmp(p->target, "cortex-", 7) == 0;
}

int tether_profile_write_trace(const tether_profile *p, const char *path) {
    cJSON *root = cJSON_CreateObject();
    cJSON *ev = cJSON_AddArrayToObject(root, "traceEvents");
    const char *queue = p->opencl ? "OpenCL queue" : cycle_clock(p) ? "MCU core" : "CPU";
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", "process_name");
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", 1);
    cJSON *args = cJSON_AddObjectToObject(m, "args");
    char buf[160];
    snprintf(buf, sizeof buf, "tether %s", p->target);
    cJSON_AddStringToObject(args, "name", buf);
    cJSON_AddItemToArray(ev, m);
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", "thread_name");
    cJSON_AddStringToObject(m, "ph", "M");
    cJSON_AddNumberToObject(m, "pid", 1);
    cJSON_AddNumberToObject(m, "tid", 1);
    args = cJSON_AddObjectToObject(m, "args");
    cJSON_AddStringToObject(args, "name", queue);
    cJSON_AddItemToArray(ev, m);
    double at = 0; /* µs: the runs one after another, 10 µs apart */
    for (int r = 0; r < p->runs; r++) {
        double end = 0;
        for (int i = 0; i < p->nnodes; i++) {
            size_t c = (size_t)r * (size_t)p->nnodes + (size_t)i;
            const tether_profile_node *nd = &p->nodes[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", nd->name);
            cJSON_AddStringToObject(e, "cat", nd->op);
            cJSON_AddStringToObject(e, "ph", "X");
            cJSON_AddNumberToObject(e, "ts", at + p->start_ns[c] / 1e3);
            cJSON_AddNumberToObject(e, "dur", p->node_ns[c] / 1e3);
            cJSON_AddNumberToObject(e, "pid", 1);
            cJSON_AddNumberToObject(e, "tid", 1);
            cJSON *a = cJSON_AddObjectToObject(e, "args");
            cJSON_AddNumberToObject(a, "run", r);
            cJSON_AddStringToObject(a, "kernel", nd->kernel);
            cJSON_AddStringToObject(a, "shapes", nd->shapes);
            cJSON_AddItemToArray(ev, e);
            double x = (p->start_ns[c] + p->node_ns[c]) / 1e3;
            end = x > end ? x : end;
        }
        double call = p->call_ns[r] / 1e3;
        at += (call > end ? call : end) + 10;
    }
    cJSON_AddStringToObject(root, "displayTimeUnit", "ns");
    return put_json(root, path);
}

int tether_profile_write_json(const tether_profile *p, const char *path) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "tether-profile");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "target", p->target);
    cJSON_AddStringToObject(root, "backend", p->opencl ? "opencl" : "c");
    cJSON_AddStringToObject(root, "clock",
                            p->opencl        ? "opencl-events"
                            : cycle_clock(p) ? "cycles"
                                             : "ns");
    cJSON_AddNumberToObject(root, "clock_hz", p->clock_hz);
    cJSON_AddNumberToObject(root, "runs", p->runs);
    cJSON_AddNumberToObject(root, "call_ns", p->call_median_ns);
    cJSON_AddNumberToObject(root, "sum_ns", p->sum_median_ns);
    if (p->plain_ns > 0) {
        cJSON_AddNumberToObject(root, "plain_ns", p->plain_ns);
    } else {
        cJSON_AddNullToObject(root, "plain_ns");
    }
    if (p->timed_ns > 0) {
        cJSON_AddNumberToObject(root, "profiled_ns", p->timed_ns);
    } else {
        cJSON_AddNullToObject(root, "profiled_ns");
    }
    if (p->plain_ns > 0 && p->timed_ns > 0) {
        cJSON_AddNumberToObject(root, "overhead", p->timed_ns / p->plain_ns - 1);
    } else {
        cJSON_AddNullToObject(root, "overhead");
    }
    cJSON_AddNumberToObject(root, "call_stack_bytes", (double)p->call_stack_bytes);
    cJSON_AddBoolToObject(root, "stack_per_node", p->stack);
    cJSON *nodes = cJSON_AddArrayToObject(root, "nodes");
    for (int i = 0; i < p->nnodes; i++) {
        const tether_profile_node *nd = &p->nodes[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", nd->name);
        cJSON_AddStringToObject(x, "op", nd->op);
        cJSON_AddStringToObject(x, "kernel", nd->kernel);
        cJSON_AddStringToObject(x, "shapes", nd->shapes);
        cJSON_AddStringToObject(x, "schedule", nd->schedule);
        cJSON_AddNumberToObject(x, "median_ns", nd->median_ns);
        cJSON_AddNumberToObject(x, "share", nd->share);
        cJSON_AddNumberToObject(x, "macs", (double)nd->macs);
        cJSON_AddNumberToObject(x, "flops", (double)nd->flops);
        cJSON_AddNumberToObject(x, "gflops", nd->median_ns > 0 ? nd->flops / nd->median_ns : 0);
        if (cycle_clock(p)) {
            double cyc = nd->median_ns * p->clock_hz / 1e9;
            cJSON_AddNumberToObject(x, "cycles", cyc);
            cJSON_AddNumberToObject(x, "macs_per_cycle", cyc > 0 ? nd->macs / cyc : 0);
        }
        cJSON_AddNumberToObject(x, "bytes_in", (double)nd->bytes_in);
        cJSON_AddNumberToObject(x, "bytes_out", (double)nd->bytes_out);
        cJSON_AddNumberToObject(x, "workspace_live", (double)nd->workspace_live);
        if (p->stack) {
            cJSON_AddNumberToObject(x, "stack_bytes", (double)nd->stack_bytes);
        } else {
            cJSON_AddNullToObject(x, "stack_bytes");
        }
        cJSON *ns = cJSON_AddArrayToObject(x, "ns");
        for (int r = 0; r < p->runs; r++) {
            cJSON_AddItemToArray(
                ns, cJSON_CreateNumber(p->node_ns[(size_t)r * (size_t)p->nnodes + (size_t)i]));
        }
        cJSON_AddItemToArray(nodes, x);
    }
    return put_json(root, path);
}

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20) {
                fputc(*s, f);
            }
        }
    }
}

int tether_profile_write_svg(const tether_profile *p, const char *path) {
    tether_file_out o;
    int rc = tether_file_out_open(&o, path);
    if (rc) {
        return rc;
    }
    FILE *f = o.f;
    const int left = 220, bar_w = 460, row = 18, top = 40;
    double tmax = 0;
    uint64_t mmax = 0;
    for (int i = 0; i < p->nnodes; i++) {
        tmax = p->nodes[i].median_ns > tmax ? p->nodes[i].median_ns : tmax;
        mmax = p->nodes[i].workspace_live > mmax ? p->nodes[i].workspace_live : mmax;
    }
    int mem_top = top + p->nnodes * row + 40, mem_h = 120;
    int width = left + bar_w + 140, height = mem_top + mem_h + 40;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height);
    fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">");
    xml_text(f, p->target);
    fprintf(f, ": time per node (median of %d runs; sum %.1f µs, call %.1f µs", p->runs,
            p->sum_median_ns / 1e3, p->call_median_ns / 1e3);
    if (p->plain_ns > 0) {
        fprintf(f, ", plain %.1f µs", p->plain_ns / 1e3);
    }
    fprintf(f, ")</text>\n");
    for (int i = 0; i < p->nnodes; i++) {
        const tether_profile_node *nd = &p->nodes[i];
        int y = top + i * row;
        double w = tmax > 0 ? bar_w * nd->median_ns / tmax : 0;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 6, y + 12);
        xml_text(f, nd->name);
        fprintf(f, " (");
        xml_text(f, nd->op);
        fprintf(f,
                ")</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                "fill=\"#4a7fb5\"><title>",
                left, y + 2, w < 1 ? 1 : w, row - 4);
        xml_text(f, nd->shapes);
        fprintf(f, "</title></rect>\n<text x=\"%.1f\" y=\"%d\">%.2f µs (%.1f%%)</text>\n",
                left + (w < 1 ? 1 : w) + 4, y + 12, nd->median_ns / 1e3, 100 * nd->share);
    }
    fprintf(f,
            "<text x=\"10\" y=\"%d\" font-size=\"13\">workspace live at each node (peak %llu "
            "bytes)</text>\n",
            mem_top - 10, (unsigned long long)mmax);
    double cw = p->nnodes ? (double)bar_w / p->nnodes : 0;
    for (int i = 0; i < p->nnodes; i++) {
        double h = mmax ? (double)mem_h * (double)p->nodes[i].workspace_live / (double)mmax : 0;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#b5804a\">"
                "<title>",
                left + i * cw, mem_top + mem_h - h, cw > 2 ? cw - 1 : cw, h);
        xml_text(f, p->nodes[i].name);
        fprintf(f, ": %llu bytes</title></rect>\n", (unsigned long long)p->nodes[i].workspace_live);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left,
            mem_top + mem_h, left + bar_w, mem_top + mem_h);
    fprintf(f, "<text x=\"%d\" y=\"%d\">nodes in execution order →</text>\n</svg>\n", left,
            mem_top + mem_h + 16);
    return tether_file_out_commit(&o);
}
