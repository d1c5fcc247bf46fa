/*
 * The OpenCL backend: whether a launch step fills the device, and why not (issue: every kernel
 * launches enough work-items to fill the device or says why not). The device's lanes are its
 * compute units times its preferred work-group size multiple (the defaults, 16 x 32, without a
 * device's limits: docs/codegen.md, "Device limits"); a step under them gets a reason that
 * names what bounds its work-items: the size of its output, its rows, the blocks of outputs one
 * work-item computes, the split of a reduction and its remaining serial loop. The reason goes
 * into the kernel's comment in the .cl, metadata.json's step ("underfill") and report.json
 * ("fill"), so `tether compile` lists it.
 *
 * What must stay true: a step gets a reason exactly when its work-items are under the lanes;
 * the reason states facts of the emitted kernel (the same sizes metadata.json gives), never a
 * guess; nothing here changes a launch.
 */
#include <string.h>

#include "emit_opencl_internal.h"

int64_t tether__ocl_step_work_items(const step *s) {
    if (s->work_dim > 0) {
        int64_t w = 1;
        for (int d = 0; d < s->work_dim; d++) {
            w *= s->gsize[d];
        }
        return w;
    }
    return s->global;
}

int64_t tether__ocl_lanes(const ocl *e) {
    return (int64_t)(e->o->compute_units > 0 ? e->o->compute_units : 16) *
           (e->o->wg_multiple > 0 ? e->o->wg_multiple : 32);
}

static const char *plural(int64_t n) {
    return n == 1 ? "" : "s";
}

void tether__ocl_fill_reason(const ocl *e, const step *s, const tether__ocl_gpu *gp, int gpu,
                             char *buf, size_t n) {
    int64_t W = tether__ocl_step_work_items(s), lanes = tether__ocl_lanes(e);
    buf[0] = '\0';
    if (W >= lanes) {
        return;
    }
    int64_t E = s->tensor >= 0 ? (int64_t)tether_ir_tensor_elements(T(e, s->tensor)) : 0;
    int64_t L = s->serial > 0 ? s->serial : 1;
    int off = snprintf(buf, n, "%lld work-item%s, under the device's %lld lanes: ", (long long)W,
                       plural(W), (long long)lanes);
    if (off < 0 || (size_t)off >= n) {
        return;
    }
    char *p = buf + off;
    size_t left = n - (size_t)off;
    if (s->work_dim > 0) {
        snprintf(p, left, "a custom kernel launches the global size its operator gives");
        return;
    }
    if (s->node < 0) {
        snprintf(p, left, "a copy of a %lld-element graph output, one work-item per element",
                 (long long)E);
        return;
    }
    if (tether__ocl_dynamic_owns(e->g, &e->g->nodes[s->node])) {
        snprintf(p, left,
                 "serial: a data-dependent output size (the count, then the entries in order) "
                 "computed by one work-item, a serial loop of %lld (emit_opencl_dynamic.c)",
                 (long long)L);
        return;
    }
    if (gpu && gp &&
        (gp->kind == TETHER__OCL_GPU_GEMV || gp->kind == TETHER__OCL_GPU_GEMV_SOFTMAX ||
         gp->kind == TETHER__OCL_GPU_CONV_SPLITK)) {
        int64_t units = gp->kind == TETHER__OCL_GPU_CONV_SPLITK ? (E + 3) / 4 : E;
        snprintf(p, left,
                 "the output has only %lld %s%s; %lld work-items already share each one's "
                 "reduction, %lld iteration%s each",
                 (long long)units,
                 gp->kind == TETHER__OCL_GPU_CONV_SPLITK ? "block of 4 channel" : "element",
                 plural(units), (long long)gp->split, (long long)L, plural(L));
        return;
    }
    if (gpu && gp && gp->kind == TETHER__OCL_GPU_ROWS) {
        snprintf(p, left,
                 "only %lld row%s, one work-group of %lld per row, %lld iteration%s per work-item",
                 (long long)gp->rows, plural(gp->rows), (long long)gp->local, (long long)L,
                 plural(L));
        return;
    }
    int64_t items = s->total > 0 ? s->total : W;
    int64_t per = items > 0 ? (E + items - 1) / items : E;
    if (per <= 1) {
        int o = snprintf(p, left, "the output has only %lld element%s, one work-item each",
                         (long long)E, plural(E));
        if (L > 1 && o > 0 && (size_t)o < left) {
            snprintf(p + o, left - (size_t)o, ", each with a serial loop of %lld (%s)",
                     (long long)L, gp && gp->why[0] && !gpu ? gp->why : "no kernel splits it");
        }
        return;
    }
    char how[160];
    if (gpu && gp && gp->kind == TETHER__OCL_GPU_DW) {
        snprintf(how, sizeof how, "up to 4 output columns each");
    } else if (gpu && gp && gp->kind == TETHER__OCL_GPU_CONV) {
        snprintf(how, sizeof how, "%lld x %lld GEMM tiles, 4 x 4 outputs each", (long long)gp->tm,
                 (long long)gp->tn);
    } else if (!gpu && gp && gp->why[0]) { /* e.g. a row per work-item: say why no GPU kernel */
        snprintf(how, sizeof how, "a block of outputs each; no GPU kernel: %.80s", gp->why);
    } else {
        snprintf(how, sizeof how, "a block of outputs each");
    }
    int o = snprintf(p, left, "%lld output element%s, %lld per work-item (%s)", (long long)E,
                     plural(E), (long long)per, how);
    if (L > 1 && o > 0 && (size_t)o < left) {
        snprintf(p + o, left - (size_t)o, ", serial loop %lld", (long long)L);
    }
}
