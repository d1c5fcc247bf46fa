/*
 * The ONNX Resize / Upsample converter. Resizing is separable: along each axis whose size or
 * coordinates change, every mode (nearest with each nearest_mode, linear, cubic with
 * cubic_coeff_a and exclude_outside) and every coordinate_transformation_mode is a linear map
 * y = M x with M [out, in] computed here, in double, from the operator's definition; the IR
 * applies it as a matmul on the tensor seen as [P, in, Q] (reshapes, no copies), one axis after
 * the other (last first). tf_crop_and_resize's positions outside the input take
 * extrapolation_value: those rows of M are zero and a constant adds the value. Nearest
 * resizing of H and W by integer factors that replicates pixels stays the IR's resize_nearest
 * (a copy, no arithmetic).
 *
 * What must stay true: attribute defaults are those of the ONNX version in use (Resize-10 and
 * Upsample: asymmetric coordinates, floor); an attribute the IR cannot express (antialias when
 * downsampling, keep_aspect_ratio_policy other than stretch) is an error naming it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tether/crt/error.h"

typedef struct rs {
    char mode[16], ctm[40], nm[40];
    float a, extrap;
    int64_t exclude;
} rs;

/* The input coordinate of output index o along an axis (ONNX Resize's formulas). */
static double coord(const rs *p, double o, double scale, double O, double L, double start,
                    double end) {
    const char *m = p->ctm;
    if (!strcmp(m, "half_pixel")) {
        return (o + 0.5) / scale - 0.5;
    }
    if (!strcmp(m, "pytorch_half_pixel")) {
        return O > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    }
    if (!strcmp(m, "align_corners")) {
        return O == 1 ? 0.0 : o * (L - 1) / (O - 1);
    }
    if (!strcmp(m, "tf_half_pixel_for_nn")) {
        return (o + 0.5) / scale;
    }
    if (!strcmp(m, "tf_crop_and_resize")) {
        return O > 1 ? start * (L - 1) + o * (end - start) * (L - 1) / (O - 1)
                     : 0.5 * (start + end) * (L - 1);
    }
    return o / scale; /* asymmetric */
}

static int64_t clampi(int64_t v, int64_t L) {
    return v < 0 ? 0 : v >= L ? L - 1 : v;
}

/* M [O, L] for one axis; outside[o] = 1 where tf_crop_and_resize extrapolates. */
static void axis_matrix(const rs *p, int64_t L, int64_t O, double scale, double start, double end,
                        double *M, unsigned char *outside) {
    memset(M, 0, sizeof(double) * (size_t)(O * L));
    for (int64_t o = 0; o < O; o++) {
        /* the resized length as the formulas see it: in x scale, not rounded (scales given) */
        double len = !strcmp(p->ctm, "tf_crop_and_resize") ? (double)O : (double)L * scale;
        double x = coord(p, (double)o, scale, len, (double)L, start, end);
        double *row = M + o * L;
        outside[o] = 0;
        if (!strcmp(p->ctm, "tf_crop_and_resize") && (x < 0 || x > (double)(L - 1))) {
            outside[o] = 1;
            continue;
        }
        double fl = floor(x), t = x - fl;
        int64_t i0 = (int64_t)fl;
        if (!strcmp(p->mode, "nearest")) {
            int64_t i = i0;
            if (t > 0) {
                const char *nm = p->nm;
                bool up = !strcmp(nm, "ceil")                ? true
                          : !strcmp(nm, "floor")             ? false
                          : !strcmp(nm, "round_prefer_ceil") ? t >= 0.5
                                                             : t > 0.5;
                i = up ? i0 + 1 : i0;
            }
            row[clampi(i, L)] = 1.0;
        } else if (!strcmp(p->mode, "linear")) {
            row[clampi(i0, L)] += 1.0 - t;
            row[clampi(i0 + 1, L)] += t;
        } else { /* cubic */
            double A = p->a, c[4];
            c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
            c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
            c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
            c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
            double sum = 0;
            for (int k = 0; k < 4; k++) {
                int64_t j = i0 - 1 + k;
                if (p->exclude && (j < 0 || j >= L)) {
                    c[k] = 0;
                }
                sum += c[k];
            }
            for (int k = 0; k < 4; k++) {
                row[clampi(i0 - 1 + k, L)] += p->exclude ? c[k] / sum : c[k];
            }
        }
    }
}

static int reshape_to(timport *c, const char *suffix, int x, int nd, const int64_t *s, int out,
                      int *res) {
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_RESHAPE, &a);
    a.nints = nd;
    memcpy(a.ints, s, sizeof(int64_t) * (size_t)nd);
    int rc = out >= 0 ? TETHER_OK : tonnx_temp_tensor(c, suffix, &out);
    *res = out;
    return rc ? rc : tonnx_emit(c, suffix, TETHER_OP_RESHAPE, &x, 1, out, &a);
}

/* Resizes x along every axis (out sizes, scales, roi) into y with matmuls. */
static int resize_general(timport *c, const rs *p, int x, int r, const int64_t *out,
                          const double *scale, const double *roi, int y) {
    int64_t sh[TETHER_IR_MAX_NDIM];
    memcpy(sh, c->g->tensors[x].shape, sizeof(int64_t) * (size_t)r);
    bool crop = !strcmp(p->ctm, "tf_crop_and_resize");
    unsigned char *outside_all[TETHER_IR_MAX_NDIM] = {0};
    int cur = x, rc = TETHER_OK, last = -1;
    for (int a = r - 1; a >= 0; a--) {
        if (out[a] == sh[a] && scale[a] == 1.0 && !crop) {
            continue;
        }
        last = a;
    }
    for (int a = r - 1; a >= 0 && !rc; a--) {
        if (out[a] == sh[a] && scale[a] == 1.0 && !crop) {
            continue;
        }
        int64_t L = sh[a], O = out[a], P = 1, Q = 1;
        for (int i = 0; i < a; i++) {
            P *= sh[i];
        }
        for (int i = a + 1; i < r; i++) {
            Q *= sh[i];
        }
        size_t ml = (size_t)(O * L) + 1;
        double *M = malloc(sizeof(double) * ml);
        float *Mf = malloc(sizeof(float) * ml);
        outside_all[a] = calloc((size_t)(O ? O : 1), 1);
        if (!M || !Mf || !outside_all[a]) {
            free(M);
            free(Mf);
            rc = tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        axis_matrix(p, L, O, scale[a], roi[a], roi[r + a], M, outside_all[a]);
        char sfx[32];
        int mt = -1, view = -1, prod = -1;
        if (Q == 1) { /* [P, L] @ M^T [L, O] */
            for (int64_t i = 0; i < L; i++) {
                for (int64_t o = 0; o < O; o++) {
                    Mf[i * O + o] = (float)M[o * L + i];
                }
            }
            int64_t ms[2] = {L, O}, vs[2] = {P, L};
            snprintf(sfx, sizeof sfx, "weights_%d", a);
            rc = tonnx_const_tensor(c, sfx, 2, ms, Mf, &mt);
            snprintf(sfx, sizeof sfx, "view_%d", a);
            if (!rc) {
                rc = reshape_to(c, sfx, cur, 2, vs, -1, &view);
            }
            int in2[2] = {view, mt};
            snprintf(sfx, sizeof sfx, "axis_%d", a);
            if (!rc && !(rc = tonnx_temp_tensor(c, sfx, &prod))) {
                rc = tonnx_emit(c, sfx, TETHER_OP_MATMUL, in2, 2, prod, NULL);
            }
        } else { /* M [O, L] @ [P, L, Q] */
            for (int64_t i = 0; i < O * L; i++) {
                Mf[i] = (float)M[i];
            }
            int64_t ms[2] = {O, L}, vs[3] = {P, L, Q};
            snprintf(sfx, sizeof sfx, "weights_%d", a);
            rc = tonnx_const_tensor(c, sfx, 2, ms, Mf, &mt);
            snprintf(sfx, sizeof sfx, "view_%d", a);
            if (!rc) {
                rc = reshape_to(c, sfx, cur, 3, vs, -1, &view);
            }
            int in2[2] = {mt, view};
            snprintf(sfx, sizeof sfx, "axis_%d", a);
            if (!rc && !(rc = tonnx_temp_tensor(c, sfx, &prod))) {
                rc = tonnx_emit(c, sfx, TETHER_OP_MATMUL, in2, 2, prod, NULL);
            }
        }
        free(M);
        free(Mf);
        sh[a] = O;
        snprintf(sfx, sizeof sfx, "resized_%d", a);
        bool final = a == last && !(crop && p->extrap != 0.0f);
        if (!rc) {
            rc = reshape_to(c, final ? NULL : sfx, prod, r, sh, final ? y : -1, &cur);
        }
    }
    if (!rc && last < 0) { /* nothing changes: a copy */
        rc = reshape_to(c, NULL, cur, r, sh, y, &cur);
    } else if (!rc && crop && p->extrap != 0.0f) {
        size_t n = 1;
        for (int i = 0; i < r; i++) {
            n *= (size_t)sh[i];
        }
        float *E = malloc(sizeof(float) * (n ? n : 1));
        if (!E) {
            rc = tonnx_fail(c, TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            for (size_t f = 0; f < n; f++) {
                size_t rem = f;
                bool out_any = false;
                for (int i = r - 1; i >= 0; i--) {
                    size_t k = rem % (size_t)sh[i];
                    rem /= (size_t)sh[i];
                    out_any |= outside_all[i] && outside_all[i][k];
                }
                E[f] = out_any ? p->extrap : 0.0f;
            }
            int et, in2[2];
            rc = tonnx_const_tensor(c, "extrapolation", r, sh, E, &et);
            free(E);
            in2[0] = cur;
            in2[1] = et;
            if (!rc) {
                rc = tonnx_emit(c, NULL, TETHER_OP_ADD, in2, 2, y, NULL);
            }
        }
    }
    for (int i = 0; i < r; i++) {
        free(outside_all[i]);
    }
    return rc;
}

int tonnx_cv_resize(timport *c, const Onnx__NodeProto *n) {
    bool upsample = strcmp(S(n->op_type), "Upsample") == 0;
    bool v11 = !upsample && c->opset >= 11;
    rs p;
    int64_t antialias = 0;
    int x, y, rc;
    if ((rc = tonnx_attr_string(c, "mode", "nearest", p.mode, sizeof p.mode)) ||
        (rc = tonnx_attr_string(c, "coordinate_transformation_mode",
                                v11 ? "half_pixel" : "asymmetric", p.ctm, sizeof p.ctm)) ||
        (rc = tonnx_attr_string(c, "nearest_mode", v11 ? "round_prefer_floor" : "floor", p.nm,
                                sizeof p.nm)) ||
        (rc = tonnx_attr_float(c, "cubic_coeff_a", -0.75f, &p.a)) ||
        (rc = tonnx_attr_int(c, "exclude_outside", 0, &p.exclude)) ||
        (rc = tonnx_attr_float(c, "extrapolation_value", 0.0f, &p.extrap)) ||
        (rc = tonnx_attr_int(c, "antialias", 0, &antialias)) ||
        (rc = tonnx_in_tensor(c, 0, true, &x))) {
        return rc;
    }
    if (!v11) {
        snprintf(p.ctm, sizeof p.ctm, "asymmetric");
        snprintf(p.nm, sizeof p.nm, "floor");
    }
    if (!strcmp(p.mode, "bilinear")) { /* Upsample-7's spelling */
        snprintf(p.mode, sizeof p.mode, "linear");
    }
    if (strcmp(p.mode, "nearest") && strcmp(p.mode, "linear") && strcmp(p.mode, "cubic")) {
        return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "mode '%s'", p.mode);
    }
    const tether_ir_tensor *xt = &c->g->tensors[x];
    int r = xt->ndim;
    int64_t in[TETHER_IR_MAX_NDIM], out[TETHER_IR_MAX_NDIM];
    double scale[TETHER_IR_MAX_NDIM], roi[2 * TETHER_IR_MAX_NDIM];
    memcpy(in, xt->shape, sizeof(int64_t) * (size_t)r);
    for (int i = 0; i < r; i++) {
        scale[i] = 1.0;
        out[i] = in[i];
        roi[i] = 0.0;
        roi[r + i] = 1.0;
    }
    int64_t axes[TETHER_IR_MAX_NDIM];
    int naxes = -1;
    if (!upsample && c->opset >= 18 &&
        (rc = tonnx_attr_ints(c, "axes", axes, TETHER_IR_MAX_NDIM, &naxes))) {
        return rc;
    }
    if (naxes < 0) {
        naxes = r;
        for (int i = 0; i < r; i++) {
            axes[i] = i;
        }
    }
    for (int i = 0; i < naxes; i++) {
        axes[i] = axes[i] < 0 ? axes[i] + r : axes[i];
        if (axes[i] < 0 || axes[i] >= r) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "axis %lld out of range",
                              (long long)axes[i]);
        }
    }
    hconst *k = NULL;
    if (v11) { /* roi: starts then ends of the listed axes */
        if ((rc = tonnx_in_const(c, 1, false, &k))) {
            return rc;
        }
        if (k && k->count > 0 && !strcmp(p.ctm, "tf_crop_and_resize")) {
            if (k->is_int || k->count != (size_t)(2 * naxes)) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "roi must be %d floats", 2 * naxes);
            }
            for (int i = 0; i < naxes; i++) {
                roi[axes[i]] = ((const float *)k->data)[i];
                roi[r + axes[i]] = ((const float *)k->data)[naxes + i];
            }
        }
    }
    bool have = false;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *sa = tonnx_attr(n, "scales");
        if (!sa || sa->n_floats != (size_t)r) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "attribute 'scales' needs %d entries", r);
        }
        for (int i = 0; i < r; i++) {
            scale[i] = sa->floats[i];
        }
        have = true;
    } else {
        if ((rc = tonnx_in_const(c, upsample || c->opset < 11 ? 1 : 2, false, &k))) {
            return rc;
        }
        if (k && k->count > 0) {
            if (k->is_int || k->count != (size_t)naxes) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "scales must be %d floats", naxes);
            }
            for (int i = 0; i < naxes; i++) {
                scale[axes[i]] = ((const float *)k->data)[i];
            }
            have = true;
        }
    }
    for (int i = 0; have && i < r; i++) {
        double span = !strcmp(p.ctm, "tf_crop_and_resize") ? roi[r + i] - roi[i] : 1.0;
        if (!(scale[i] > 0) || !(in[i] * span * scale[i] < 1e9)) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "scale %g of axis %d", scale[i], i);
        }
        out[i] = (int64_t)floor((double)in[i] * span * scale[i]);
    }
    if (!have) {
        hconst *sz;
        int64_t s[TETHER_IR_MAX_NDIM];
        int cnt;
        if (!v11 || in_count(n) < 4) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "neither scales nor sizes are given");
        }
        if ((rc = tonnx_in_const(c, 3, true, &sz)) ||
            (rc = tonnx_const_ints(c, sz, "sizes", s, TETHER_IR_MAX_NDIM, &cnt))) {
            return rc;
        }
        if (cnt != naxes) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "sizes must have %d entries", naxes);
        }
        for (int i = 0; i < naxes; i++) {
            if (s[i] < 1 || s[i] > INT32_MAX) {
                return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "size %lld", (long long)s[i]);
            }
            out[axes[i]] = s[i];
            scale[axes[i]] = (double)s[i] / (double)in[axes[i]];
        }
    }
    for (int i = 0; i < r; i++) {
        if (antialias && scale[i] < 1.0) {
            return tonnx_fail(c, TETHER_ERR_UNSUPPORTED, "antialias 1 when downsampling");
        }
        if (out[i] < 1) {
            return tonnx_fail(c, TETHER_ERR_INVALID_ARG, "output extent %lld on axis %d",
                              (long long)out[i], i);
        }
    }
    if ((rc = tonnx_out_tensor(c, 0, &y))) {
        return rc;
    }
    /* nearest, integer factors >= 1 on H and W of NCHW, coordinates that replicate pixels */
    bool centred = !strcmp(p.ctm, "half_pixel") || !strcmp(p.ctm, "pytorch_half_pixel");
    bool rounds = !strcmp(p.nm, "round_prefer_floor") || !strcmp(p.nm, "round_prefer_ceil");
    bool repl = (centred && rounds) ||
                ((!strcmp(p.ctm, "asymmetric") || !strcmp(p.ctm, "tf_half_pixel_for_nn")) &&
                 !strcmp(p.nm, "floor"));
    if (!strcmp(p.mode, "nearest") && repl && r == 4 && out[0] == in[0] && out[1] == in[1]) {
        bool ok = true;
        for (int i = 2; i < 4; i++) {
            ok = ok && out[i] % in[i] == 0 && out[i] >= in[i] &&
                 scale[i] == (double)(out[i] / in[i]);
        }
        if (ok) {
            tether_ir_attrs a;
            tether_ir_attrs_init(TETHER_OP_RESIZE_NEAREST, &a);
            a.scales[0] = out[2] / in[2];
            a.scales[1] = out[3] / in[3];
            return tonnx_emit(c, NULL, TETHER_OP_RESIZE_NEAREST, &x, 1, y, &a);
        }
    }
    return resize_general(c, &p, x, r, out, scale, roi, y);
}
