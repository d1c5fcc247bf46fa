/*
 * The `tether` CLI's pictures (cli.h): `tether ab --svg` (code size, stack and latency with its
 * spread, one row per ABI or backend) and `tether bench --svg` (the latency distribution over
 * the repeats, and the repeats in order, where warm-up and drift show).
 *
 * What must stay true: each picture is one self-contained SVG 1.1 file (no scripts, no external
 * references), written through tether_file_write (all or nothing); every measured repeat is one
 * <circle class="rep"> in a distribution (bench also draws it as a <circle class="order"> in the
 * run-order panel) with a <title> giving its value; every bar is a <rect class="bar"> with a
 * <title>; names from models and devices are XML-escaped; a figure that is not available (an
 * unbounded stack, no HWM on OpenCL) is said in words, never drawn as 0; a latency axis that
 * does not start at zero carries a broken-axis mark and the label "axis starts at ..., not at
 * zero" (<g class="axis-break">).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tether/crt.h"
#include "tether/file.h"

/* ---- a growing text buffer ---- */

typedef struct svg {
    char *buf;
    size_t len, cap;
    int failed;
} svg;

static void put(svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(svg *s, const char *fmt, ...) {
    if (s->failed) {
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->buf ? s->buf + s->len : NULL, s->buf ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            s->failed = 1;
            return;
        }
        if (s->buf && s->len + (size_t)n < s->cap) {
            s->len += (size_t)n;
            return;
        }
        size_t nc = (s->cap ? s->cap * 2 : 8192) + (size_t)n;
        char *nb = realloc(s->buf, nc);
        if (!nb) {
            s->failed = 1;
            return;
        }
        s->buf = nb;
        s->cap = nc;
    }
}

static void put_escaped(svg *s, const char *text) {
    for (const char *c = text ? text : ""; *c; c++) {
        if ((unsigned char)*c >= 0x80) { /* a whole UTF-8 character, or '?' for a bad byte */
            size_t rest = 0;
            while (rest < 4 && c[rest]) {
                rest++;
            }
            size_t k = tether_utf8_seq(c, rest);
            if (k == 0) {
                put(s, "?");
            } else {
                put(s, "%.*s", (int)k, c);
                c += k - 1;
            }
            continue;
        }
        switch (*c) {
        case '<':
            put(s, "&lt;");
            break;
        case '>':
            put(s, "&gt;");
            break;
        case '&':
            put(s, "&amp;");
            break;
        case '"':
            put(s, "&quot;");
            break;
        default:
            if ((unsigned char)*c >= 0x20 || *c == '\t') {
                put(s, "%c", *c);
            }
        }
    }
}

static void begin(svg *s, int w, int h, const char *title, const char *subtitle) {
    put(s,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d "
        "%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
        "<text x=\"20\" y=\"26\" font-size=\"16\" font-weight=\"bold\">",
        w, h, w, h, w, h);
    put_escaped(s, title);
    put(s, "</text>\n<text x=\"20\" y=\"44\" fill=\"#555\">");
    put_escaped(s, subtitle);
    put(s, "</text>\n");
}

static int finish(svg *s, const char *path) {
    put(s, "</svg>\n");
    int rc = s->failed ? tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "%s: out of memory", path)
                       : tether_file_write(path, s->buf, s->len);
    free(s->buf);
    memset(s, 0, sizeof *s);
    if (rc) {
        return tether_cli_fail(1, "--svg: %s", tether_last_error());
    }
    tether_cli_wrote(path);
    return 0;
}

/* ---- axes ---- */

/* A step of 1, 2 or 5 x 10^k giving about `ticks` intervals over range. */
static double nice_step(double range, int ticks) {
    if (!(range > 0)) {
        return 1;
    }
    double raw = range / ticks, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * p;
}

typedef struct axis {
    double lo, hi; /* data range shown */
    double x0, w;  /* pixels */
} axis;

static double ax(const axis *a, double v) {
    return a->x0 + (v - a->lo) / (a->hi - a->lo) * a->w;
}

/* An axis over [lo, hi] rounded out to its ticks (lo 0 stays 0). A range narrower than
 * min_span (or than a millionth of its values: equal repeats) is widened around its middle. */
static axis make_axis(double lo, double hi, double x0, double w, double min_span) {
    if (!isfinite(lo) || !isfinite(hi) || hi < lo) {
        lo = hi = 0;
    }
    double span = fmax(min_span, fabs(hi) * 1e-3);
    if (hi - lo < span) {
        double mid = (lo + hi) / 2;
        lo = mid - span / 2 < 0 && lo >= 0 ? 0 : mid - span / 2;
        hi = lo + span;
    }
    double step = nice_step(hi - lo, 6);
    axis a = {floor(lo / step) * step, ceil(hi / step) * step, x0, w};
    if (a.lo < 0 && lo >= 0) {
        a.lo = 0;
    }
    return a;
}

/* Grid lines and labels of a horizontal axis from y_top to y_bottom, labels below. */
static void x_ticks(svg *s, const axis *a, double y_top, double y_bottom, double scale,
                    const char *unit) {
    double step = nice_step(a->hi - a->lo, 6);
    for (int k = 0; k <= 40; k++) { /* counted: a step below the values' resolution ends too */
        double v = a->lo + k * step;
        if (v > a->hi + step * 1e-6) {
            break;
        }
        double x = ax(a, v);
        put(s,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" fill=\"#444\">%g"
            "</text>\n",
            x, y_top, x, y_bottom, x, y_bottom + 13, v * scale);
    }
    put(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">", a->x0 + a->w / 2,
        y_bottom + 28);
    put_escaped(s, unit);
    put(s, "</text>\n");
}

/* A horizontal axis that does not start at zero (a latency axis fitted to the repeats) gets a
 * broken-axis mark where the bars would start (two slanted strokes on the axis line at y) and a
 * label saying so, so that a short distance between two rows is not read as a large ratio. */
static void axis_break(svg *s, const axis *a, double y, double scale, const char *unit) {
    if (!(a->lo > 0)) {
        return;
    }
    double x = a->x0;
    put(s,
        "<g class=\"axis-break\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#444\"/><path d=\"M%.1f %.1f l6 -10 M%.1f %.1f l6 -10\" stroke=\"#444\" "
        "stroke-width=\"1.5\" fill=\"none\"/>",
        x, y, x + 16, y, x - 1, y + 5, x + 4, y + 5);
    put(s,
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#a33\">axis starts at %g %s, not "
        "at zero</text></g>\n",
        x + 20, y - 3, a->lo * scale, unit);
}

/* The time unit that suits values up to hi seconds: its scale from seconds and names. */
typedef struct time_unit {
    double scale;
    const char *name, *axis;
} time_unit;

static time_unit unit_for(double hi) {
    if (hi < 1e-6) {
        return (time_unit){1e9, "ns", "nanoseconds per call"};
    }
    if (hi < 1e-3) {
        return (time_unit){1e6, "us", "microseconds per call"};
    }
    if (hi < 1) {
        return (time_unit){1e3, "ms", "milliseconds per call"};
    }
    return (time_unit){1, "s", "seconds per call"};
}

static const char *const k_colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                       "#e15759", "#76b7b2", "#edc948", "#9c755f"};

/* ---- spread of repeats ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Quantile q of sorted v (linear interpolation). */
static double quantile(const double *v, int n, double q) {
    if (n <= 0) {
        return 0;
    }
    double pos = q * (n - 1);
    int i = (int)pos;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (pos - i) : v[n - 1];
}

/* A box plot (quartiles, whiskers min..max, median) of n values at row centre y, with one
 * circle per value (spread vertically so equal values stay visible). */
static void box_row(svg *s, const axis *a, double y, double h, const double *values, int n,
                    double scale, const char *unit, const char *color) {
    double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!v) {
        s->failed = 1;
        return;
    }
    int nv = 0; /* a value that is not finite (a broken timer) is left out */
    for (int i = 0; i < n; i++) {
        if (isfinite(values[i])) {
            v[nv++] = values[i];
        }
    }
    if (nv == 0) {
        free(v);
        return;
    }
    qsort(v, (size_t)nv, sizeof *v, cmp_double);
    double q1 = quantile(v, nv, 0.25), med = quantile(v, nv, 0.5), q3 = quantile(v, nv, 0.75);
    put(s,
        "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#333\"/>\n",
        ax(a, v[0]), y, ax(a, v[nv - 1]), y);
    put(s,
        "<rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
        "fill-opacity=\"0.25\" stroke=\"%s\"><title>quartiles %.4g..%.4g %s</title></rect>\n",
        ax(a, q1), y - h / 2, fmax(ax(a, q3) - ax(a, q1), 1), h, color, color, q1 * scale,
        q3 * scale, unit);
    put(s,
        "<line class=\"median\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
        "stroke-width=\"2\"><title>median %.4g %s</title></line>\n",
        ax(a, med), y - h / 2 - 3, ax(a, med), y + h / 2 + 3, med * scale, unit);
    for (int i = 0; i < n; i++) {
        if (!isfinite(values[i])) {
            continue;
        }
        double jitter = ((i * 7919) % 11 - 5) / 5.0 * (h / 2 - 2);
        put(s,
            "<circle class=\"rep\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.6\" fill=\"%s\" "
            "fill-opacity=\"0.8\"><title>repeat %d: %.4g %s</title></circle>\n",
            ax(a, values[i]), y + jitter, color, i + 1, values[i] * scale, unit);
    }
    free(v);
}

/* ---- tether ab --svg ---- */

/* A panel's group, bold title at y and its x axis over the rows below (rows_h pixels). */
static void panel_head(svg *s, const char *id, const char *title, double y, const axis *a,
                       int rows_h, double scale, const char *unit) {
    put(s, "<g class=\"panel\" id=\"%s\">\n<text x=\"20\" y=\"%.0f\" font-weight=\"bold\">", id,
        y + 12);
    put_escaped(s, title);
    put(s, "</text>\n");
    x_ticks(s, a, y + 20, y + 20 + rows_h, scale, unit);
}

/* A row's name, right-aligned before the plot at its middle y. */
static void row_label(svg *s, int left, double y, const char *label) {
    put(s, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + 4);
    put_escaped(s, label);
    put(s, "</text>\n");
}

int tether_cli_svg_ab(const char *path, const char *title, const char *subtitle,
                      const tether_cli_ab_row *rows, int n) {
    const int left = 170, plot = 520, right = 230, row_h = 26;
    int width = left + plot + right;
    int panel_h = n * row_h + 50;
    int height = 70 + 3 * (panel_h + 30);
    svg s = {0};
    begin(&s, width, height, title, subtitle);
    double y = 70;
    /* panel 1: code size */
    double hi = 0;
    for (int i = 0; i < n; i++) {
        hi = fmax(hi, rows[i].text_bytes);
    }
    axis a = make_axis(0, hi, left, plot, 1);
    panel_head(&s, "size", "code size: text bytes (darker: instructions)", y, &a, n * row_h, 1,
               "bytes");
    for (int i = 0; i < n; i++) {
        const tether_cli_ab_row *r = &rows[i];
        double ry = y + 20 + i * row_h;
        row_label(&s, left, ry + row_h / 2, r->label);
        if (r->text_bytes < 0) {
            put(&s,
                "<text x=\"%d\" y=\"%.1f\" fill=\"#777\">not a CPU library (OpenCL "
                "kernels)</text>\n",
                left + 4, ry + row_h / 2 + 4);
            continue;
        }
        put(&s,
            "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
            "fill-opacity=\"0.45\"><title>text %.0f bytes</title></rect>\n",
            left, ry + 4, ax(&a, r->text_bytes) - left, row_h - 8, k_colors[i % 8], r->text_bytes);
        if (r->code_bytes >= 0) {
            put(&s,
                "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                "<title>instructions %.0f bytes</title></rect>\n",
                left, ry + 8, ax(&a, r->code_bytes) - left, row_h - 16, k_colors[i % 8],
                r->code_bytes);
        }
        put(&s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%.0f</text>\n",
            ax(&a, r->text_bytes) + 4, ry + row_h / 2 + 4, r->text_bytes);
    }
    put(&s, "</g>\n");
    y += panel_h + 30;
    /* panel 2: stack */
    hi = 0;
    for (int i = 0; i < n; i++) {
        hi = fmax(hi, fmax(rows[i].static_stack, rows[i].stack_hwm));
    }
    a = make_axis(0, hi, left, plot, 1);
    panel_head(&s, "stack", "stack: static bound (light) and measured high-water mark (dark)", y,
               &a, n * row_h, 1, "bytes");
    for (int i = 0; i < n; i++) {
        const tether_cli_ab_row *r = &rows[i];
        double ry = y + 20 + i * row_h;
        row_label(&s, left, ry + row_h / 2, r->label);
        char words[160] = "";
        if (r->static_stack >= 0) {
            put(&s,
                "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                "fill-opacity=\"0.35\"><title>static bound %.0f bytes</title></rect>\n",
                left, ry + 3, ax(&a, r->static_stack) - left, row_h / 2 - 3, k_colors[i % 8],
                r->static_stack);
        }
        if (r->stack_hwm >= 0) {
            put(&s,
                "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">"
                "<title>measured high-water mark %.0f bytes</title></rect>\n",
                left, ry + row_h / 2, ax(&a, r->stack_hwm) - left, row_h / 2 - 3, k_colors[i % 8],
                r->stack_hwm);
        }
        if (r->static_stack >= 0 && r->stack_hwm >= 0) {
            snprintf(words, sizeof words, "%.0f / %.0f", r->static_stack, r->stack_hwm);
        } else if (r->stack_hwm >= 0) {
            snprintf(words, sizeof words, "static unbounded; HWM %.0f", r->stack_hwm);
        } else {
            snprintf(words, sizeof words, "no call stack (OpenCL kernels)");
        }
        double tx = fmax(r->static_stack, r->stack_hwm);
        put(&s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">%s</text>\n",
            tx >= 0 ? ax(&a, tx) + 4 : left + 4, ry + row_h / 2 + 4,
            r->stack_hwm < 0 ? "#777" : "#000", words);
    }
    put(&s, "</g>\n");
    y += panel_h + 30;
    /* panel 3: latency */
    double lo = INFINITY;
    hi = 0;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < rows[i].nrepeats; k++) {
            if (isfinite(rows[i].seconds[k])) {
                lo = fmin(lo, rows[i].seconds[k]);
                hi = fmax(hi, rows[i].seconds[k]);
            }
        }
    }
    if (!(lo <= hi)) {
        lo = hi = 0;
    }
    a = make_axis(lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05, left, plot, 1e-9);
    time_unit tu = unit_for(a.hi);
    panel_head(&s, "latency",
               "latency per call over the repeats (box: quartiles, line: median, whiskers: "
               "min..max)",
               y, &a, n * row_h, tu.scale, tu.axis);
    axis_break(&s, &a, y + 20 + n * row_h, tu.scale, tu.name);
    for (int i = 0; i < n; i++) {
        const tether_cli_ab_row *r = &rows[i];
        double ry = y + 20 + i * row_h;
        row_label(&s, left, ry + row_h / 2, r->label);
        if (r->nrepeats > 0) {
            box_row(&s, &a, ry + row_h / 2, row_h - 10, r->seconds, r->nrepeats, tu.scale, tu.name,
                    k_colors[i % 8]);
        }
        put(&s, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">", left + plot + 10,
            ry + row_h / 2 + 4);
        put_escaped(&s, r->note);
        put(&s, "</text>\n");
    }
    put(&s, "</g>\n");
    return finish(&s, path);
}

/* ---- tether bench --svg ---- */

int tether_cli_svg_bench(const char *path, const char *title, const char *subtitle,
                         const tether_time_stats *ts, int nkernels, const char *const *kernels,
                         const double *kernel_median) {
    const int left = 90, plot = 640, right = 60;
    int nk = nkernels > 20 ? 20 : nkernels;
    int width = left + plot + right;
    int height = 70 + 150 + 220 + (nk > 0 ? 60 + nk * 20 : 0) + 20;
    int n = (int)ts->repeat < 32 ? (int)ts->repeat : 32;
    svg s = {0};
    begin(&s, width, height, title, subtitle);
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++) {
        if (isfinite(ts->seconds[i])) {
            lo = fmin(lo, ts->seconds[i]);
            hi = fmax(hi, ts->seconds[i]);
        }
    }
    if (!(lo <= hi)) {
        lo = hi = 0;
    }
    axis a = make_axis(lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05, left, plot, 1e-9);
    time_unit tu = unit_for(a.hi);
    const char *un = tu.name;
    double sc = tu.scale;
    double y = 70;
    /* the distribution: box plot of the repeats, mean dashed */
    put(&s,
        "<g class=\"panel\" id=\"distribution\">\n<text x=\"20\" y=\"%.0f\" "
        "font-weight=\"bold\">latency per call: %d repeats of %u calls (box: quartiles, line: "
        "median, dashed: mean)</text>\n",
        y + 12, n, ts->number);
    x_ticks(&s, &a, y + 24, y + 96, sc, tu.axis);
    axis_break(&s, &a, y + 96, sc, un);
    if (n > 0) {
        box_row(&s, &a, y + 60, 40, ts->seconds, n, sc, un, k_colors[0]);
    }
    if (isfinite(ts->mean)) {
        put(&s,
            "<line class=\"mean\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#e15759\" "
            "stroke-dasharray=\"5 3\" stroke-width=\"1.5\"><title>mean %.4g %s</title></line>\n",
            ax(&a, ts->mean), y + 28, ax(&a, ts->mean), y + 92, ts->mean * sc, un);
    }
    /* the figures of the finite repeats drawn (a broken timer's NaN is left out, as above) */
    double fin[32], mean = 0, var = 0;
    int nf = 0;
    for (int i = 0; i < n; i++) {
        if (isfinite(ts->seconds[i])) {
            mean += (fin[nf++] = ts->seconds[i]);
        }
    }
    if (nf > 0) {
        mean /= nf;
        qsort(fin, (size_t)nf, sizeof fin[0], cmp_double);
        for (int i = 0; i < nf; i++) {
            var += (fin[i] - mean) * (fin[i] - mean);
        }
        double cv = nf > 1 && mean > 0 ? sqrt(var / (nf - 1)) / mean * 100 : 0;
        put(&s,
            "<text x=\"%d\" y=\"%.0f\" font-size=\"11\">median %.4g %s, mean %.4g %s, min %.4g %s, "
            "max %.4g %s, spread (CV) %.1f%%%s%s</text>\n</g>\n",
            left, y + 140, quantile(fin, nf, 0.5) * sc, un, mean * sc, un, fin[0] * sc, un,
            fin[nf - 1] * sc, un, cv,
            ts->zero_timer ? "; zero timer: the device's clock did not advance" : "",
            nf < n ? "; repeats that are not numbers left out" : "");
    } else {
        put(&s,
            "<text x=\"%d\" y=\"%.0f\" font-size=\"11\">no repeat measured a time</text>\n</g>\n",
            left, y + 140);
    }
    y += 160;
    /* the repeats in order */
    double ptop = y + 24, ph = 150;
    axis ya = make_axis(lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05, 0, 1, 1e-9);
    put(&s,
        "<g class=\"panel\" id=\"order\">\n<text x=\"20\" y=\"%.0f\" font-weight=\"bold\">the "
        "repeats in the order they ran (warm-up and drift show here)</text>\n"
        "<rect x=\"%d\" y=\"%.0f\" width=\"%d\" height=\"%.0f\" fill=\"#fafafa\" "
        "stroke=\"#bbb\"/>\n",
        y + 12, left, ptop, plot, ph);
    double step = nice_step(ya.hi - ya.lo, 4);
    for (int k = 0; k <= 40 && ya.lo + k * step <= ya.hi + step * 1e-6; k++) {
        double v = ya.lo + k * step;
        double py = ptop + ph - (v - ya.lo) / (ya.hi - ya.lo) * ph;
        put(&s,
            "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">%g</text>\n",
            left, py, left + plot, py, left - 4, py + 3, v * sc);
    }
    put(&s,
        "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\" "
        "font-size=\"11\">%s per call</text>\n",
        ptop + ph / 2, ptop + ph / 2, un);
    put(&s, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"", k_colors[0]);
    for (int i = 0; i < n; i++) {
        if (isfinite(ts->seconds[i])) {
            put(&s, "%.1f,%.1f ", left + (i + 0.5) * plot / n,
                ptop + ph - (ts->seconds[i] - ya.lo) / (ya.hi - ya.lo) * ph);
        }
    }
    put(&s, "\"/>\n");
    for (int i = 0; i < n; i++) {
        if (isfinite(ts->seconds[i])) {
            put(&s,
                "<circle class=\"order\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>repeat "
                "%d: "
                "%.4g %s</title></circle>\n",
                left + (i + 0.5) * plot / n,
                ptop + ph - (ts->seconds[i] - ya.lo) / (ya.hi - ya.lo) * ph, k_colors[0], i + 1,
                ts->seconds[i] * sc, un);
        }
    }
    put(&s,
        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"11\">repeat (1 to %d)"
        "</text>\n</g>\n",
        left + plot / 2.0, ptop + ph + 16, n);
    y += 220;
    /* OpenCL: the kernels' medians, the slowest first */
    if (nk > 0) {
        int *order = malloc(sizeof(int) * (size_t)nkernels);
        if (!order) {
            s.failed = 1;
        } else {
            for (int i = 0; i < nkernels; i++) {
                order[i] = i;
            }
            for (int i = 1; i < nkernels; i++) { /* insertion sort, slowest first */
                for (int j = i; j > 0 && kernel_median[order[j]] > kernel_median[order[j - 1]];
                     j--) {
                    int t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
            }
            double kmax = isfinite(kernel_median[order[0]]) ? kernel_median[order[0]] : 0;
            axis ka = make_axis(0, kmax, left + 110, plot - 110, 1e-9);
            put(&s,
                "<g class=\"panel\" id=\"kernels\">\n<text x=\"20\" y=\"%.0f\" "
                "font-weight=\"bold\">kernels, the slowest %d of %d (median of the repeats)"
                "</text>\n",
                y + 12, nk, nkernels);
            x_ticks(&s, &ka, y + 22, y + 22 + nk * 20, 1e6, "microseconds");
            for (int i = 0; i < nk; i++) {
                int k = order[i];
                double ry = y + 22 + i * 20;
                put(&s, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">",
                    left + 104, ry + 14);
                put_escaped(&s, kernels[k]);
                put(&s,
                    "</text><rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"14\" fill=\"%s\"><title>",
                    ka.x0, ry + 3,
                    ax(&ka, isfinite(kernel_median[k]) ? kernel_median[k] : 0) - ka.x0,
                    k_colors[1]);
                put_escaped(&s, kernels[k]);
                if (isfinite(kernel_median[k])) {
                    put(&s, ": %.4g us</title></rect>\n", kernel_median[k] * 1e6);
                } else {
                    put(&s, ": not measured</title></rect>\n");
                }
            }
            put(&s, "</g>\n");
            free(order);
        }
    }
    return finish(&s, path);
}
