/*
 * The SVG timeline of a plan: x = operator index, y = byte offset (1D pools) or image row
 * (texture pools), one lane per pool that holds buffers, a legend and axis labels; the graph
 * inputs/outputs the caller provides in a strip above the lanes, named at their rows; the
 * operators' names as the last lane's x axis, each under its column. And the picture of a problem
 * that does not fit: the bytes live at each operator (stacked, tensors named on their segments
 * where they fit) against the pools' capacities, with a legend and the tensors live at the peak
 * by name. The canvas is as tall as its content (no blank band under the labels).
 * What must stay true: exactly one <rect class="buf"> per placed buffer, each with a <title>
 * whose text starts with the (XML-escaped) buffer name; other shapes use other classes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tether/crt/utf8.h"

#define SVG_LEFT     110
#define SVG_RIGHT    230
#define SVG_TOP      56
#define SVG_LANE_H   260
#define SVG_LANE_GAP 70

static const char *kind_color(const tether_plan_buffer *b, const tether_plan_assignment *as,
                              unsigned *hue) {
    /* intermediates vary in hue inside blue/violet so neighbours stay distinguishable */
    unsigned h = 2166136261u;
    for (const char *c = b->name; *c; c++) {
        h = (h ^ (unsigned char)*c) * 16777619u;
    }
    *hue = 190 + h % 80;
    if (as->fallback) {
        return "#e4572e";
    }
    if (b->kind == TETHER_PLAN_GRAPH_INPUT) {
        return "#4caf50";
    }
    if (b->kind == TETHER_PLAN_GRAPH_OUTPUT) {
        return "#f0a202";
    }
    return NULL;
}

/* The fill colour of a buffer's box: its kind's, else a hue of its name. */
static void fill_of(const tether_plan_buffer *b, const tether_plan_assignment *as, char *fill,
                    size_t n) {
    unsigned hue;
    const char *fixed = kind_color(b, as, &hue);
    if (fixed != NULL) {
        snprintf(fill, n, "%s", fixed);
    } else {
        snprintf(fill, n, "hsl(%u,60%%,62%%)", hue);
    }
}

static int64_t nice_step(int64_t range, int ticks) {
    int64_t raw = range / (ticks > 0 ? ticks : 1);
    int64_t step = 1;
    while (step * 10 <= raw) {
        step *= 10;
    }
    if (step * 5 <= raw) {
        step *= 5;
    } else if (step * 2 <= raw) {
        step *= 2;
    }
    return step > 0 ? step : 1;
}

/* Byte offsets up the left side of a plot h pixels high from y0 (0 at the bottom, ymax at the
 * top), with grid lines across plot_w in colour stroke. */
static void byte_ticks(tp_text *t, int y0, int h, int64_t ymax, int plot_w, const char *stroke) {
    int64_t step = nice_step(ymax, 5);
    for (int64_t v = 0; v <= ymax; v += step) {
        double y = y0 + h - (double)v / (double)ymax * h;
        tether__plan_text_printf(t,
                                 "<line class=\"tick\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                                 "stroke=\"%s\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
                                 "font-size=\"10\">%lld</text>\n",
                                 SVG_LEFT, y, SVG_LEFT + plot_w, y, stroke, SVG_LEFT - 4, y + 3,
                                 (long long)v);
    }
}

/* Operator indices along the bottom (baseline y), about ten of them. */
static void op_ticks(tp_text *t, int64_t nops, double xs, int y) {
    int64_t step = nice_step(nops, 10);
    for (int64_t v = 0; v < nops; v += step) {
        tether__plan_text_printf(
            t,
            "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">"
            "%lld</text>\n",
            SVG_LEFT + ((double)v + 0.5) * xs, y, (long long)v);
    }
}

/* Operators shown on the x axis: every buffer's and caller input/output's interval and every
 * named operator. */
static int64_t op_count(const tether_plan_problem *p) {
    int64_t nops = p->noperators > 0 ? p->noperators : 1;
    for (int b = 0; b < p->nbuffers; b++) {
        if ((int64_t)p->buffers[b].last + 1 > nops) {
            nops = (int64_t)p->buffers[b].last + 1;
        }
    }
    for (int i = 0; i < p->nios; i++) {
        if ((int64_t)p->ios[i].last + 1 > nops) {
            nops = (int64_t)p->ios[i].last + 1;
        }
    }
    return nops;
}

#define SVG_IO_ROW 16

static int io_lane_height(const tether_plan_problem *p) {
    return p->nios > 0 ? 22 + p->nios * SVG_IO_ROW + 8 + 20 : 0;
}

/* The graph inputs and outputs the caller provides, one row each over their live operators,
 * named at the left of their rows: a strip above the plots, on the same operator axis. */
static void io_lane(tp_text *t, const tether_plan_problem *p, int plot_w, double xs, int y0) {
    if (p->nios == 0) {
        return;
    }
    tether__plan_text_printf(
        &*t,
        "<g class=\"io\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\">graph inputs "
        "and outputs the caller provides (not in any pool)</text>\n"
        "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
        "fill=\"#fbfbfb\" stroke=\"#bbb\"/>\n",
        SVG_LEFT, y0 + 14, SVG_LEFT, y0 + 22, plot_w, p->nios * SVG_IO_ROW + 8);
    for (int i = 0; i < p->nios; i++) {
        const tether_plan_io *io = &p->ios[i];
        double x = SVG_LEFT + io->first * xs, w = (io->last - io->first + 1) * xs;
        int y = y0 + 26 + i * SVG_IO_ROW;
        const char *fill = io->kind == TETHER_PLAN_GRAPH_INPUT ? "#4caf50" : "#f0a202";
        tether__plan_text_printf(
            t,
            "<rect class=\"iobuf\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
            "fill=\"%s\" fill-opacity=\"0.55\" stroke=\"#333\" stroke-width=\"0.5\" "
            "stroke-dasharray=\"3 2\"><title>",
            x, y, w, SVG_IO_ROW - 4, fill);
        tether__plan_text_escape_xml(t, io->name);
        tether__plan_text_printf(
            t, ": graph %s, %lld bytes, ops %d..%d, provided by the caller</title></rect>\n",
            io->kind == TETHER_PLAN_GRAPH_INPUT ? "input" : "output", (long long)io->size,
            (int)io->first, (int)io->last);
        tether__plan_text_printf(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">",
                                 SVG_LEFT - 4, y + SVG_IO_ROW - 6);
        tether__plan_text_escape_xml(t, io->name);
        tether__plan_text_printf(t, " (%s)</text>\n",
                                 io->kind == TETHER_PLAN_GRAPH_INPUT ? "in" : "out");
    }
    tether__plan_text_printf(t, "</g>\n");
}

/* The label of operator v on the axis ("7 conv1", the name cut to 24 bytes on a character
 * boundary) into buf. */
static void op_label(const tether_plan_problem *p, int64_t v, char *buf, size_t n) {
    const char *name = p->operators[v];
    if (strlen(name) > 24) {
        size_t keep = tether_utf8_cut(name, 21);
        snprintf(buf, n, "%lld %.*s...", (long long)v, (int)keep, name);
    } else {
        snprintf(buf, n, "%lld %s", (long long)v, name);
    }
}

/* Operators labelled on the axis: every one up to 64, else every k-th. */
static int64_t op_step(int64_t nops) {
    return nops <= 64 ? 1 : (nops + 63) / 64;
}

/* The height the rotated operator labels take under a plot (0 without operator names): as long
 * as the longest label, so no blank band is left below them. */
static int op_names_height(const tether_plan_problem *p, int64_t nops) {
    if (p->noperators == 0) {
        return 0;
    }
    size_t longest = 0;
    for (int64_t v = 0; v < nops && v < p->noperators; v += op_step(nops)) {
        char label[48];
        op_label(p, v, label, sizeof(label));
        size_t n = tether_utf8_cut(label, strlen(label)); /* bytes; close to characters */
        longest = n > longest ? n : longest;
    }
    return 22 + (int)((double)longest * 5.2); /* 6.3 px a character at -55 degrees */
}

/* The operators' names as the x axis of the plot whose frame ends at y0: each rotated under its
 * column ("index name"), with a guide tick, and the axis title below them. */
static void op_names(tp_text *t, const tether_plan_problem *p, int64_t nops, double xs, int y0,
                     int plot_w, const char *note) {
    if (p->noperators == 0) {
        return;
    }
    tether__plan_text_printf(t, "<g class=\"operators\">\n");
    for (int64_t v = 0; v < nops && v < p->noperators; v += op_step(nops)) {
        double x = SVG_LEFT + ((double)v + 0.5) * xs;
        char label[48];
        op_label(p, v, label, sizeof(label));
        tether__plan_text_printf(
            t,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>"
            "<text class=\"op\" x=\"%.1f\" y=\"%d\" font-size=\"10\" "
            "text-anchor=\"end\" transform=\"rotate(-55 %.1f %d)\">",
            x, y0, x, y0 + 4, x, y0 + 12, x, y0 + 12);
        tether__plan_text_escape_xml(t, label);
        tether__plan_text_printf(t, "<title>operator %lld: ", (long long)v);
        tether__plan_text_escape_xml(t, p->operators[v]);
        tether__plan_text_printf(t, "</title></text>\n");
    }
    tether__plan_text_printf(t,
                             "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">operator index "
                             "and name%s</text>\n</g>\n",
                             SVG_LEFT + plot_w / 2, y0 + op_names_height(p, nops) + 8, note);
}

int tether_plan_to_svg(const tether_plan_problem *p, const tether_plan *plan, char **out) {
    if (p == NULL || plan == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem, plan or output is null");
    }
    *out = NULL;
    if (plan->nbuffers != p->nbuffers || plan->npools != p->npools) {
        return tether_set_error(TETHER_ERR_MISMATCH, "the plan was made for another problem");
    }
    int64_t nops = op_count(p);
    int nlanes = 0;
    for (int k = 0; k < p->npools; k++) {
        nlanes += plan->pools[k].nbuffers > 0;
    }
    int plot_w = nops > 1600 / 24 ? 1600 : (int)nops * 24;
    plot_w = plot_w < 640 ? 640 : plot_w;
    double xs = (double)plot_w / (double)nops;
    /* the graph inputs/outputs strip on top, then one lane per pool; the last lane's x axis
     * names the operators */
    int top = SVG_TOP + io_lane_height(p);
    int nl = nlanes > 0 ? nlanes : 1;
    int last_bottom = top + (nl - 1) * (SVG_LANE_H + SVG_LANE_GAP) + 20 + SVG_LANE_H;
    int names_h = op_names_height(p, nops);
    int height = last_bottom + (names_h > 0 ? names_h + 24 : 40);
    if (height < SVG_TOP + 260) { /* the legend's */
        height = SVG_TOP + 260;
    }
    int width = SVG_LEFT + plot_w + SVG_RIGHT;
    tp_text t = {0};
    tether__plan_text_printf(&t,
                             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                             "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
                             width, height, width, height);
    tether__plan_text_printf(&t,
                             "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
                             "fill=\"white\"/>\n",
                             width, height);
    tether__plan_text_printf(
        &t,
        "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">Memory plan "
        "(%s): %lld bytes in %d pool%s",
        SVG_LEFT, tether_plan_algorithm_name(plan->algorithm), (long long)plan->total_bytes, nlanes,
        nlanes == 1 ? "" : "s");
    if (plan->nfallbacks > 0) {
        tether__plan_text_printf(&t, ", %d texture fallback%s", plan->nfallbacks,
                                 plan->nfallbacks == 1 ? "" : "s");
    }
    tether__plan_text_printf(&t, "</text>\n");
    io_lane(&t, p, plot_w, xs, SVG_TOP - 20); /* above the lanes */
    int lane = 0;
    for (int k = 0; k < p->npools; k++) {
        const tether_plan_pool *pool = &p->pools[k];
        const tether_plan_pool_usage *u = &plan->pools[k];
        if (u->nbuffers == 0) {
            continue;
        }
        int y0 = top + lane * (SVG_LANE_H + SVG_LANE_GAP) + 20;
        bool tex = tether_scope_is_texture(pool->scope);
        tether__plan_text_printf(
            &t, "<g class=\"lane\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", SVG_LEFT,
            y0 - 6);
        tether__plan_text_escape_xml(&t, pool->name);
        if (tex) {
            tether__plan_text_printf(
                &t, " (%s): %d image%s, %lld bytes, %lld texels, waste %lld texels",
                tether_scope_name(pool->scope), u->nimages, u->nimages == 1 ? "" : "s",
                (long long)u->size, (long long)u->texel_area, (long long)u->texel_waste);
        } else {
            tether__plan_text_printf(&t, " (global): %lld bytes, lower bound %lld",
                                     (long long)u->size, (long long)u->lower_bound);
        }
        tether__plan_text_printf(&t, "</text>\n");
        tether__plan_text_printf(
            &t,
            "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
            "fill=\"#f7f7f7\" stroke=\"#888\"/>\n",
            SVG_LEFT, y0, plot_w, SVG_LANE_H);
        /* y axis */
        int64_t ymax = u->size > 0 ? u->size : 1;
        int nrows = u->nimages > 0 ? u->nimages : 1;
        if (!tex) {
            byte_ticks(&t, y0, SVG_LANE_H, ymax, plot_w, "#ccc");
            if (u->lower_bound > 0 && u->lower_bound <= ymax) {
                double y = y0 + SVG_LANE_H - (double)u->lower_bound / (double)ymax * SVG_LANE_H;
                tether__plan_text_printf(&t,
                                         "<line class=\"lb\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" "
                                         "y2=\"%.1f\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/>"
                                         "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" fill=\"#c00\" "
                                         "text-anchor=\"end\">lower bound</text>\n",
                                         SVG_LEFT, y, SVG_LEFT + plot_w, y, SVG_LEFT + plot_w - 4,
                                         y + (y < y0 + 14 ? 12 : -3));
            }
            tether__plan_text_printf(&t,
                                     "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" "
                                     "text-anchor=\"middle\">offset (bytes)</text>\n",
                                     y0 + SVG_LANE_H / 2, y0 + SVG_LANE_H / 2);
        } else {
            int row = 0;
            for (int m = 0; m < plan->nimages; m++) {
                if (plan->images[m].pool != k) {
                    continue;
                }
                double y = y0 + (row + 0.5) * SVG_LANE_H / nrows;
                tether__plan_text_printf(
                    &t,
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\">"
                    "image %d %lldx%lld</text>\n",
                    SVG_LEFT - 4, y + 3, m, (long long)plan->images[m].width,
                    (long long)plan->images[m].height);
                row++;
            }
        }
        /* buffers */
        for (int b = 0; b < p->nbuffers; b++) {
            const tether_plan_assignment *as = &plan->assign[b];
            const tether_plan_buffer *buf = &p->buffers[b];
            if (as->pool != k) {
                continue;
            }
            double x = SVG_LEFT + buf->first * xs;
            double w = (buf->last - buf->first + 1) * xs;
            double y, h;
            if (as->image >= 0) {
                int row = 0;
                for (int m = 0; m < as->image; m++) {
                    row += plan->images[m].pool == k;
                }
                const tether_plan_image *img = &plan->images[as->image];
                double band = (double)SVG_LANE_H / nrows;
                double frac =
                    (double)(buf->width * buf->height) / (double)(img->width * img->height);
                h = band * 0.9 * frac;
                y = y0 + row * band + band * 0.05 + (band * 0.9 - h);
            } else {
                h = (double)buf->size / (double)ymax * SVG_LANE_H;
                y = y0 + SVG_LANE_H - (double)(as->offset + buf->size) / (double)ymax * SVG_LANE_H;
            }
            if (h < 1.0) {
                h = 1.0;
            }
            char fill[32];
            fill_of(buf, as, fill, sizeof(fill));
            tether__plan_text_printf(
                &t,
                "<rect class=\"buf\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.85\" stroke=\"#333\" "
                "stroke-width=\"0.5\"><title>",
                x, y, w, h, fill);
            tether__plan_text_escape_xml(&t, buf->name);
            if (as->image >= 0) {
                tether__plan_text_printf(&t, ": %lldx%lld texels in image %d, ops %d..%d",
                                         (long long)buf->width, (long long)buf->height, as->image,
                                         (int)buf->first, (int)buf->last);
            } else {
                tether__plan_text_printf(&t, ": %lld bytes at offset %lld, ops %d..%d%s",
                                         (long long)buf->size, (long long)as->offset,
                                         (int)buf->first, (int)buf->last,
                                         as->fallback ? " (texture fallback)" : "");
            }
            tether__plan_text_printf(&t, "</title></rect>\n");
            /* a label inside rectangles big enough to hold it */
            size_t nlen = strlen(buf->name);
            if (h >= 12 && w >= 7.0 * (double)(nlen < 24 ? nlen : 24)) {
                tether__plan_text_printf(
                    &t,
                    "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
                    "pointer-events=\"none\">",
                    x + 3, y + h / 2 + 3);
                tether__plan_text_escape_xml(&t, buf->name);
                tether__plan_text_printf(&t, "</text>\n");
            }
        }
        /* x axis: the operators' names under the last lane, their indices under the others */
        if (lane == nlanes - 1 && p->noperators > 0) {
            op_names(&t, p, nops, xs, y0 + SVG_LANE_H, plot_w, "");
        } else {
            op_ticks(&t, nops, xs, y0 + SVG_LANE_H + 14);
            tether__plan_text_printf(
                &t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">operator index</text>\n",
                SVG_LEFT + plot_w / 2, y0 + SVG_LANE_H + 30);
        }
        tether__plan_text_printf(&t, "</g>\n");
        lane++;
    }
    /* legend */
    int lx = SVG_LEFT + plot_w + 20, ly = SVG_TOP + 20;
    static const char *const names[] = {"intermediate", "graph input", "graph output",
                                        "texture fallback (global)"};
    static const char *const colors[] = {"hsl(220,60%,62%)", "#4caf50", "#f0a202", "#e4572e"};
    tether__plan_text_printf(&t,
                             "<g class=\"legend\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\">"
                             "legend</text>\n",
                             lx, ly);
    for (int i = 0; i < 4; i++) {
        tether__plan_text_printf(&t,
                                 "<rect class=\"key\" x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" "
                                 "fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"/>"
                                 "<text x=\"%d\" y=\"%d\">%s</text>\n",
                                 lx, ly + 12 + i * 22, colors[i], lx + 20, ly + 24 + i * 22,
                                 names[i]);
    }
    tether__plan_text_printf(&t,
                             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
                             "stroke-dasharray=\"6 4\"/><text x=\"%d\" y=\"%d\">lower bound of a "
                             "pool</text>\n",
                             lx, ly + 19 + 4 * 22, lx + 14, ly + 19 + 4 * 22, lx + 20,
                             ly + 24 + 4 * 22);
    ly += 22;
    tether__plan_text_printf(
        &t,
        "<text x=\"%d\" y=\"%d\" font-size=\"10\">hover a box for its name,</text>\n"
        "<text x=\"%d\" y=\"%d\" font-size=\"10\">size, offset and lifetime</text>\n",
        lx, ly + 24 + 4 * 22, lx, ly + 38 + 4 * 22);
    int unplanned = 0;
    for (int b = 0; b < p->nbuffers; b++) {
        unplanned += plan->assign[b].pool < 0;
    }
    if (unplanned > 0) {
        tether__plan_text_printf(&t,
                                 "<text x=\"%d\" y=\"%d\" font-size=\"10\">%d buffer%s left to the "
                                 "caller</text>\n",
                                 lx, ly + 56 + 4 * 22, unplanned, unplanned == 1 ? "" : "s");
    }
    tether__plan_text_printf(&t, "</g>\n</svg>\n");
    if (t.failed) {
        free(t.buf);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the SVG");
    }
    *out = t.buf;
    return TETHER_OK;
}

/* Bytes a buffer needs (texture buffers: their texels). */
static int64_t need_bytes(const tether_plan_buffer *b) {
    return b->size > 0 ? b->size : tether__plan_texture_bytes(b->width, b->height, b->dtype);
}

#define SVG_MAX_COLUMNS 800

typedef struct demand_event {
    int64_t op, bytes; /* at op, bytes start (> 0) or end (< 0) being live */
} demand_event;

static int by_op(const void *a, const void *b) {
    const demand_event *x = a, *y = b;
    return x->op < y->op ? -1 : x->op > y->op;
}

/* demand[c] = the most bytes live at one operator of column c (operators c*per ..), by a sweep
 * over the buffers' starts and ends: no array as long as the operators. */
static int demand_columns(const tether_plan_problem *p, int64_t nops, int64_t per, int64_t ncols,
                          int64_t *demand) {
    demand_event *ev = malloc(sizeof(*ev) * (size_t)(2 * p->nbuffers + 1));
    if (ev == NULL) {
        return TETHER_ERR_OUT_OF_MEMORY;
    }
    int n = 0;
    for (int b = 0; b < p->nbuffers; b++) {
        ev[n++] = (demand_event){p->buffers[b].first, need_bytes(&p->buffers[b])};
        ev[n++] = (demand_event){(int64_t)p->buffers[b].last + 1, -need_bytes(&p->buffers[b])};
    }
    qsort(ev, (size_t)n, sizeof(*ev), by_op);
    int64_t live = 0;
    for (int i = 0; i < n;) {
        int64_t at = ev[i].op;
        while (i < n && ev[i].op == at) {
            live += ev[i++].bytes;
        }
        int64_t until = i < n ? ev[i].op : nops; /* live holds over [at, until) */
        if (live <= 0 || at >= nops) {
            continue;
        }
        for (int64_t c = at / per; c < ncols && c * per < until; c++) {
            demand[c] = live > demand[c] ? live : demand[c];
        }
    }
    free(ev);
    return TETHER_OK;
}

/* "operator 7" or "operators 700..709" of column c. */
static void ops_text(char *buf, size_t n, int64_t c, int64_t per, int64_t nops) {
    int64_t a = c * per, b = a + per - 1 < nops - 1 ? a + per - 1 : nops - 1;
    if (a == b) {
        snprintf(buf, n, "operator %lld", (long long)a);
    } else {
        snprintf(buf, n, "operators %lld..%lld", (long long)a, (long long)b);
    }
}

/* The operator where the most bytes are live (-1 when none or too many operators to look at),
 * and how many buffers are live there. */
static int64_t peak_op(const tether_plan_problem *p, int64_t nops, int *nlive) {
    int64_t best = -1, best_bytes = -1;
    for (int64_t i = 0; i < nops && nops <= SVG_MAX_COLUMNS; i++) {
        int64_t live = 0;
        for (int b = 0; b < p->nbuffers; b++) {
            if (i >= p->buffers[b].first && i <= p->buffers[b].last) {
                live += need_bytes(&p->buffers[b]);
            }
        }
        if (live > best_bytes) {
            best_bytes = live;
            best = i;
        }
    }
    *nlive = 0;
    for (int b = 0; best >= 0 && b < p->nbuffers; b++) {
        *nlive += best >= p->buffers[b].first && best <= p->buffers[b].last;
    }
    return best;
}

/* How tall nofit_legend draws. */
static int nofit_legend_height(const tether_plan_problem *p, int64_t nops) {
    int nlive;
    int64_t best = peak_op(p, nops, &nlive);
    int h = 14 + 5 * 20 + 34;
    if (best >= 0) {
        h += (best < p->noperators ? 16 : 0) + 8 + 18 * (nlive < 12 ? nlive : 12) +
             (nlive > 12 ? 14 : 0);
    }
    return h;
}

/* The legend of the demand picture at (lx, ly): what each colour, line and shade means, then the
 * tensors live at the peak operator by name, each with its colour and bytes (largest first, at
 * most 12), so the names are on the picture, not only in hover text. */
static void nofit_legend(tp_text *t, const tether_plan_problem *p, int64_t nops, int lx, int ly) {
    static const char *const names[] = {"intermediate tensor (a hue each)", "graph input",
                                        "graph output"};
    static const char *const colors[] = {"hsl(220,60%,62%)", "#4caf50", "#f0a202"};
    tether__plan_text_printf(t,
                             "<g class=\"legend\">\n<text x=\"%d\" y=\"%d\" "
                             "font-weight=\"bold\">legend</text>\n",
                             lx, ly + 4);
    int y = ly + 14;
    for (int i = 0; i < 3; i++, y += 20) {
        tether__plan_text_printf(t,
                                 "<rect class=\"key\" x=\"%d\" y=\"%d\" width=\"14\" "
                                 "height=\"14\" fill=\"%s\" stroke=\"#333\" "
                                 "stroke-width=\"0.5\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
                                 lx, y, colors[i], lx + 20, y + 12, names[i]);
    }
    tether__plan_text_printf(t,
                             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#c00\" "
                             "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text x=\"%d\" "
                             "y=\"%d\">a pool's capacity</text>\n",
                             lx, y + 7, lx + 14, y + 7, lx + 20, y + 12);
    y += 20;
    tether__plan_text_printf(t,
                             "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#600\" "
                             "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text x=\"%d\" "
                             "y=\"%d\">all pools together</text>\n",
                             lx, y + 7, lx + 14, y + 7, lx + 20, y + 12);
    y += 20;
    tether__plan_text_printf(t,
                             "<rect class=\"key\" x=\"%d\" y=\"%d\" width=\"14\" "
                             "height=\"14\" fill=\"#e4572e\" fill-opacity=\"0.12\" "
                             "stroke=\"#e4572e\" stroke-width=\"0.5\"/><text x=\"%d\" "
                             "y=\"%d\">more live than the pools hold</text>\n",
                             lx, y, lx + 20, y + 12);
    y += 34;
    /* the operator where the most bytes are live, and its tensors */
    int nlive;
    int64_t best = peak_op(p, nops, &nlive);
    if (best < 0) {
        tether__plan_text_printf(t, "</g>\n");
        return;
    }
    tether__plan_text_printf(t,
                             "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">live at the peak, "
                             "operator %lld</text>\n",
                             lx, y, (long long)best);
    if (best < p->noperators) {
        char opname[40];
        snprintf(opname, sizeof(opname), "%.*s", (int)tether_utf8_cut(p->operators[best], 32),
                 p->operators[best]);
        tether__plan_text_printf(t, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">(", lx, y + 16);
        tether__plan_text_escape_xml(t, opname);
        tether__plan_text_printf(t, "):</text>\n");
        y += 16;
    }
    y += 8;
    bool shown[1024] = {false};
    int nshown = 0;
    while (nshown < 12) { /* the largest not yet shown */
        int pick = -1;
        for (int b = 0; b < p->nbuffers && b < 1024; b++) {
            const tether_plan_buffer *buf = &p->buffers[b];
            if (shown[b] || best < buf->first || best > buf->last) {
                continue;
            }
            if (pick < 0 || need_bytes(buf) > need_bytes(&p->buffers[pick])) {
                pick = b;
            }
        }
        if (pick < 0) {
            break;
        }
        shown[pick] = true;
        const tether_plan_buffer *buf = &p->buffers[pick];
        tether_plan_assignment none = {.pool = -1, .offset = -1, .image = -1};
        char fill[32];
        fill_of(buf, &none, fill, sizeof(fill));
        tether__plan_text_printf(t,
                                 "<rect class=\"key\" x=\"%d\" y=\"%d\" width=\"12\" "
                                 "height=\"12\" fill=\"%s\" stroke=\"#333\" "
                                 "stroke-width=\"0.5\"/><text class=\"tensor\" x=\"%d\" "
                                 "y=\"%d\" font-size=\"11\">",
                                 lx, y, fill, lx + 18, y + 10);
        char shortname[40];
        if (strlen(buf->name) > 28) {
            snprintf(shortname, sizeof(shortname), "%.*s...", (int)tether_utf8_cut(buf->name, 25),
                     buf->name);
        } else {
            snprintf(shortname, sizeof(shortname), "%s", buf->name);
        }
        tether__plan_text_escape_xml(t, shortname);
        tether__plan_text_printf(t, ": %lld bytes</text>\n", (long long)need_bytes(buf));
        y += 18;
        nshown++;
    }
    if (nlive > nshown) {
        tether__plan_text_printf(t,
                                 "<text x=\"%d\" y=\"%d\" font-size=\"10\">and %d more (hover "
                                 "the bars)</text>\n",
                                 lx, y + 10, nlive - nshown);
    }
    tether__plan_text_printf(t, "</g>\n");
}

int tether_plan_problem_to_svg(const tether_plan_problem *p, const char *why, char **out) {
    if (p == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "problem or output is null");
    }
    *out = NULL;
    int64_t nops = op_count(p);
    /* one column per operator, or per run of operators when there are more than fit */
    int64_t ncols = nops <= SVG_MAX_COLUMNS ? nops : SVG_MAX_COLUMNS;
    int64_t per = (nops + ncols - 1) / ncols;
    ncols = (nops + per - 1) / per;
    int64_t *demand = calloc((size_t)ncols, sizeof(int64_t));
    if (demand == NULL || demand_columns(p, nops, per, ncols, demand) != TETHER_OK) {
        free(demand);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the SVG");
    }
    int64_t peak = 0;
    for (int64_t c = 0; c < ncols; c++) {
        peak = demand[c] > peak ? demand[c] : peak;
    }
    /* the global pools' capacities and, when all are bounded, their sum */
    int64_t total = 0, top = peak;
    bool bounded = true;
    int nglobal = 0;
    for (int k = 0; k < p->npools; k++) {
        if (tether_scope_is_texture(p->pools[k].scope)) {
            continue;
        }
        nglobal++;
        if (p->pools[k].capacity == TETHER_PLAN_UNBOUNDED) {
            bounded = false;
        } else {
            total += p->pools[k].capacity;
            top = p->pools[k].capacity > top ? p->pools[k].capacity : top;
        }
    }
    if (bounded && total > top) {
        top = total;
    }
    int64_t ymax = top + top / 20 + 1;
    int plot_w = ncols > 1600 / 24 ? 1600 : (int)ncols * 24;
    plot_w = plot_w < 640 ? 640 : plot_w;
    double xs = (double)plot_w / (double)nops;  /* per operator */
    double cw = (double)plot_w / (double)ncols; /* per column */
    /* the planner's message, wrapped at about 150 characters a line (at most 3 lines) */
    char why_lines[3][160];
    int nwhy = 0;
    const char *msg = why ? why : "";
    size_t len = strlen(msg);
    while (nwhy < 3 && len > 0) {
        size_t n = len > 150 ? tether_utf8_cut(msg, 150) : len;
        if (n < len) {
            size_t sp = n;
            while (sp > 100 && msg[sp] != ' ') {
                sp--;
            }
            n = msg[sp] == ' ' ? sp : n;
        }
        snprintf(why_lines[nwhy++], sizeof(why_lines[0]), "%.*s", (int)n, msg);
        msg += n;
        len -= n;
        while (*msg == ' ') {
            msg++;
            len--;
        }
    }
    /* the message, the graph inputs/outputs strip, the plot with the operators' names as its x
     * axis; on the right the capacities' labels and the legend with the tensors live at the
     * peak */
    const int plot_h = 320;
    int io_y = 44 + 16 * nwhy - 8;
    int y0 = io_y + io_lane_height(p) + (p->nios > 0 ? 10 : 24);
    int names_h = op_names_height(p, nops);
    int plot_end = y0 + plot_h + (names_h > 0 ? names_h + 22 : 44);
    const int right = 370, lx = SVG_LEFT + plot_w + 140;
    int height = plot_end;
    if (height < y0 + nofit_legend_height(p, nops) + 10) { /* the legend's */
        height = y0 + nofit_legend_height(p, nops) + 10;
    }
    int width = SVG_LEFT + plot_w + right;
    tp_text t = {0};
    tether__plan_text_printf(
        &t,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
        "fill=\"white\"/>\n"
        "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#b00\">"
        "Memory plan does not fit: the bytes live at each operator against the pools"
        "</text>\n",
        width, height, width, height, width, height, SVG_LEFT);
    for (int line = 0; line < nwhy; line++) {
        tether__plan_text_printf(&t, "<text class=\"why\" x=\"%d\" y=\"%d\" fill=\"#333\">",
                                 SVG_LEFT, 44 + line * 16);
        tether__plan_text_escape_xml(&t, why_lines[line]);
        tether__plan_text_printf(&t, "</text>\n");
    }
    io_lane(&t, p, plot_w, xs, io_y);
    tether__plan_text_printf(&t,
                             "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                             "fill=\"#f7f7f7\" stroke=\"#888\"/>\n",
                             SVG_LEFT, y0, plot_w, plot_h);
    /* operators whose demand exceeds every byte the pools have */
    int nover = 0;
    for (int64_t c = 0; c < ncols; c++) {
        if (bounded && demand[c] > total) {
            nover++;
            char ops[64];
            ops_text(ops, sizeof(ops), c, per, nops);
            tether__plan_text_printf(
                &t,
                "<rect class=\"over\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                "fill=\"#e4572e\" fill-opacity=\"0.12\"><title>%s: %lld bytes live, "
                "%lld more than the pools hold</title></rect>\n",
                SVG_LEFT + c * cw, y0, cw, plot_h, ops, (long long)demand[c],
                (long long)(demand[c] - total));
        }
    }
    /* y axis */
    byte_ticks(&t, y0, plot_h, ymax, plot_w, "#ddd");
    tether__plan_text_printf(&t,
                             "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" "
                             "text-anchor=\"middle\">bytes live (stacked)</text>\n",
                             y0 + plot_h / 2, y0 + plot_h / 2);
    /* the live buffers, stacked per operator; with more operators than columns one bar per
     * column, as high as the most bytes live at one of its operators */
    for (int64_t c = 0; per > 1 && c < ncols; c++) {
        double h = (double)demand[c] / (double)ymax * plot_h;
        char ops[64];
        ops_text(ops, sizeof(ops), c, per, nops);
        tether__plan_text_printf(
            &t,
            "<rect class=\"need\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"%.1f\" fill=\"hsl(220,60%%,62%%)\" fill-opacity=\"0.85\"><title>"
            "%s: up to %lld bytes live</title></rect>\n",
            SVG_LEFT + c * cw, y0 + plot_h - h, cw, h, ops, (long long)demand[c]);
    }
    for (int64_t i = 0; per == 1 && i < nops; i++) {
        double ybase = y0 + plot_h;
        for (int b = 0; b < p->nbuffers; b++) {
            const tether_plan_buffer *buf = &p->buffers[b];
            if (i < buf->first || i > buf->last) {
                continue;
            }
            double h = (double)need_bytes(buf) / (double)ymax * plot_h;
            tether_plan_assignment none = {.pool = -1, .offset = -1, .image = -1};
            char fill[32];
            fill_of(buf, &none, fill, sizeof(fill));
            tether__plan_text_printf(
                &t,
                "<rect class=\"need\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.85\" stroke=\"#333\" "
                "stroke-width=\"0.3\"><title>",
                SVG_LEFT + i * xs + xs * 0.08, ybase - h, xs * 0.84, h > 0.5 ? h : 0.5, fill);
            tether__plan_text_escape_xml(&t, buf->name);
            tether__plan_text_printf(&t, ": %lld bytes, ops %d..%d</title></rect>\n",
                                     (long long)need_bytes(buf), (int)buf->first, (int)buf->last);
            /* its name on it where it fits, across or along the segment */
            size_t nlen = strlen(buf->name);
            double tw = 6.0 * (double)(nlen < 24 ? nlen : 24), segw = xs * 0.84;
            double sx = SVG_LEFT + i * xs + xs * 0.08;
            if (h >= 12 && segw >= tw + 4) {
                tether__plan_text_printf(&t,
                                         "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" "
                                         "font-size=\"10\" text-anchor=\"middle\" "
                                         "pointer-events=\"none\">",
                                         sx + segw / 2, ybase - h / 2 + 3);
                tether__plan_text_escape_xml(&t, buf->name);
                tether__plan_text_printf(&t, "</text>\n");
            } else if (segw >= 12 && h >= tw + 4) {
                double cx = sx + segw / 2 + 3, cy = ybase - h / 2;
                tether__plan_text_printf(&t,
                                         "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" "
                                         "font-size=\"10\" text-anchor=\"middle\" "
                                         "transform=\"rotate(-90 %.1f %.1f)\" "
                                         "pointer-events=\"none\">",
                                         cx, cy, cx, cy);
                tether__plan_text_escape_xml(&t, buf->name);
                tether__plan_text_printf(&t, "</text>\n");
            }
            ybase -= h;
        }
    }
    /* capacities */
    for (int k = 0; k <= p->npools; k++) {
        int64_t cap;
        char label[160];
        if (k < p->npools) {
            if (tether_scope_is_texture(p->pools[k].scope) ||
                p->pools[k].capacity == TETHER_PLAN_UNBOUNDED) {
                continue;
            }
            cap = p->pools[k].capacity;
            snprintf(label, sizeof(label), "pool %.60s: %lld", p->pools[k].name, (long long)cap);
        } else {
            if (!bounded || nglobal < 2) {
                continue;
            }
            cap = total;
            snprintf(label, sizeof(label), "all pools: %lld", (long long)cap);
        }
        double y = y0 + plot_h - (double)cap / (double)ymax * plot_h;
        tether__plan_text_printf(
            &t,
            "<line class=\"capacity\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
            "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"%s\">",
            SVG_LEFT, y, SVG_LEFT + plot_w, y, k < p->npools ? "#c00" : "#600",
            SVG_LEFT + plot_w + 6, y + 4, k < p->npools ? "#c00" : "#600");
        tether__plan_text_escape_xml(&t, label);
        tether__plan_text_printf(&t, "</text>\n");
    }
    char note[128];
    snprintf(note, sizeof(note), " (peak %lld bytes live%s)", (long long)peak,
             nover > 0 ? "; shaded: more than the pools hold" : "");
    if (p->noperators > 0) {
        op_names(&t, p, nops, xs, y0 + plot_h, plot_w, note);
    } else {
        op_ticks(&t, nops, xs, y0 + plot_h + 14);
        tether__plan_text_printf(
            &t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">operator index%s</text>\n",
            SVG_LEFT + plot_w / 2, y0 + plot_h + 30, note);
    }
    nofit_legend(&t, p, nops, lx, y0);
    tether__plan_text_printf(&t, "</svg>\n");
    free(demand);
    if (t.failed) {
        free(t.buf);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory writing the SVG");
    }
    *out = t.buf;
    return TETHER_OK;
}
