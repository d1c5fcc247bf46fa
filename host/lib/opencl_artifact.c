/*
 * OpenCL artifacts on a device (see opencl_artifact.h; format in docs/codegen.md): reading and
 * checking metadata.json, prepare (arrays, params, images, the kernel sequences built once) and
 * free; running and timing the steps is opencl_run.c's.
 *
 * What must stay true: metadata.json is checked completely before anything is sent (kinds,
 * scopes, float32, shapes against bytes, params ranges inside params.bin, the inputs/outputs
 * signature, every step argument in range), its buffer variant too (no image, the same inputs,
 * outputs and steps); image extents are checked against the device's HELLO limits before any
 * allocation: an image the device cannot hold makes the artifact run its buffer variant when it
 * has one (the same result, every tensor in buffers), else an error naming the image (the weight,
 * or the activations a texture image holds), its node and the limit; every remote array
 * allocated here is freed on every path (tether__ocl_artifact_free); times are sums of the
 * kernels' profiled times as tetherd reports them.
 */
#include "opencl_artifact.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "tether/crt.h"
#include "tether/file.h"

#include "opencl_artifact_internal.h"

/* ---- reading ------------------------------------------------------------------------------- */

static int read_file(const char *path, char **out, size_t *len) {
    return tether_file_read_text(path, (size_t)1 << 31, out, len);
}

static int bad(const tether__ocl_artifact *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int bad(const tether__ocl_artifact *a, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tether_set_error(TETHER_ERR_INVALID_ARG, "%s/metadata.json: %s", a->dir, msg);
}

/* shape array -> ndim/shape with non-negative integer extents; elements in *elems. */
static int get_shape(const cJSON *js, int *ndim, int64_t *shape, int64_t *elems) {
    if (!cJSON_IsArray(js) || cJSON_GetArraySize(js) > TETHER_MAX_NDIM) {
        return -1;
    }
    *ndim = cJSON_GetArraySize(js);
    int64_t e = 1;
    for (int i = 0; i < *ndim; i++) {
        const cJSON *v = cJSON_GetArrayItem(js, i);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 4e9 ||
            v->valuedouble != (double)(int64_t)v->valuedouble) {
            return -1;
        }
        shape[i] = (int64_t)v->valuedouble;
        e *= shape[i];
        if (e > ((int64_t)1 << 40)) {
            return -1;
        }
    }
    *elems = e;
    return 0;
}

static int get_int(const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < (double)lo || v->valuedouble > (double)hi ||
        v->valuedouble != (double)(int64_t)v->valuedouble) {
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int parse_io(tether__ocl_artifact *a, const cJSON *arr, ocl_io **iop, int *n,
                    const char *what) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > OCL_MAX_IO) {
        return bad(a, "'%ss' must be a list of at most %d tensors", what, OCL_MAX_IO);
    }
    *n = cJSON_GetArraySize(arr);
    ocl_io *io = *iop = calloc((size_t)(*n ? *n : 1), sizeof *io);
    if (!io) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < *n; i++) {
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
        DLDataType d;
        if (!cJSON_IsString(nm) || strlen(nm->valuestring) >= sizeof io[i].name ||
            !cJSON_IsString(dt) || tether_dtype_parse(dt->valuestring, &d) ||
            !tether_dtype_bytes(d) ||
            get_shape(cJSON_GetObjectItemCaseSensitive(o, "shape"), &io[i].ndim, io[i].shape,
                      &io[i].elems)) {
            return bad(a, "%s %d needs a name, an element type (dtype) and a shape", what, i);
        }
        io[i].eb = (int)tether_dtype_bytes(d);
        io[i].dt = d;
        snprintf(io[i].name, sizeof io[i].name, "%s", nm->valuestring);
        io[i].mem = -1;
        const char *keys[3] = {"dynamic_dim", "extent_output", "extent_of"};
        int *vals[3] = {&io[i].dyn_dim, &io[i].extent_output, &io[i].extent_of};
        for (int k = 0; k < 3; k++) {
            int64_t v = -1;
            if (cJSON_GetObjectItemCaseSensitive(o, keys[k]) &&
                (strcmp(what, "output") != 0 || get_int(o, keys[k], 0, OCL_MAX_IO, &v))) {
                return bad(a, "%s %d ('%s') has a bad %s", what, i, io[i].name, keys[k]);
            }
            *vals[k] = (int)v;
        }
    }
    /* outputs of data-dependent size: the check artifact.c makes of a C artifact's */
    if (strcmp(what, "output") == 0) {
        tether__io_dyn *d = calloc(*n > 0 ? (size_t)*n : 1, sizeof *d);
        if (!d) {
            return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        for (int i = 0; i < *n; i++) {
            d[i] =
                (tether__io_dyn){io[i].name,     io[i].ndim,    io[i].ndim > 0 ? io[i].shape[0] : 1,
                                 io[i].dt,       io[i].dyn_dim, io[i].extent_output,
                                 io[i].extent_of};
        }
        char why[400];
        int rc = tether__artifact_check_dynamic(d, *n, why, sizeof why);
        free(d);
        if (rc) {
            return bad(a, "%s", why);
        }
    }
    return TETHER_OK;
}

static int parse_mems(tether__ocl_artifact *a, const cJSON *arr) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > 100000) {
        return bad(a, "'memory' must be a non-empty list");
    }
    a->nmems = cJSON_GetArraySize(arr);
    a->mems = calloc((size_t)a->nmems, sizeof *a->mems);
    if (!a->mems) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        ocl_mem *m = &a->mems[i];
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *kd = cJSON_GetObjectItemCaseSensitive(o, "kind");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(o, "scope");
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
        if (!cJSON_IsString(nm) || strlen(nm->valuestring) >= sizeof m->name) {
            return bad(a, "memory %d has no name", i);
        }
        snprintf(m->name, sizeof m->name, "%s", nm->valuestring);
        m->kind = -1;
        for (int k = 0; cJSON_IsString(kd) && k < K_NKINDS; k++) {
            if (strcmp(kd->valuestring, kind_names[k]) == 0) {
                m->kind = k;
            }
        }
        if (m->kind < 0) {
            return bad(a,
                       "memory %d ('%s'): kind must be input, output, workspace, params, "
                       "weight_image, texture or status",
                       i, m->name);
        }
        tether_scope want = m->kind == K_IMAGE     ? TETHER_SCOPE_TEXTURE_WEIGHT
                            : m->kind == K_TEXTURE ? TETHER_SCOPE_TEXTURE
                                                   : TETHER_SCOPE_GLOBAL;
        if (!cJSON_IsString(sc) || tether_scope_parse(sc->valuestring, &m->scope) ||
            m->scope != want) {
            return bad(a,
                       "memory %d ('%s'): scope must be texture:weight for a weight_image, "
                       "texture for a texture, global otherwise",
                       i, m->name);
        }
        if (m->kind == K_STATUS && a->status_mem >= 0) {
            return bad(a, "memory %d ('%s'): a second status object (memory %d is the one)", i,
                       m->name, a->status_mem);
        }
        /* float16 (--precision fp16) everywhere but the graph's inputs and outputs; the status
         * object is one int32 */
        DLDataType iot;
        m->eb = m->kind == K_STATUS
                    ? (cJSON_IsString(dt) && !strcmp(dt->valuestring, "int32") ? 4 : 0)
                : (m->kind == K_INPUT || m->kind == K_OUTPUT) && cJSON_IsString(dt) &&
                        !tether_dtype_parse(dt->valuestring, &iot)
                    ? (int)tether_dtype_bytes((m->dt = iot)) /* graph I/O: its own type */
                : cJSON_IsString(dt) && strcmp(dt->valuestring, "float32") == 0 ? 4
                : cJSON_IsString(dt) && strcmp(dt->valuestring, "float16") == 0 &&
                        m->kind != K_INPUT && m->kind != K_OUTPUT
                    ? 2
                    : 0;
        if (!m->eb) {
            return bad(a,
                       "memory %d ('%s'): dtype must be float32 (or float16 for a workspace, "
                       "params, weight_image or texture; int32 for the one status object)",
                       i, m->name);
        }
        int64_t elems, bytes;
        if (get_shape(cJSON_GetObjectItemCaseSensitive(o, "shape"), &m->ndim, m->shape, &elems) ||
            get_int(o, "bytes", 0, (int64_t)1 << 42, &bytes) || bytes != elems * m->eb) {
            return bad(a, "memory %d ('%s'): shape and bytes (%d per element) do not agree", i,
                       m->name, m->eb);
        }
        const cJSON *lay = cJSON_GetObjectItemCaseSensitive(o, "layout");
        m->nhwc = m->kind == K_TEXTURE && cJSON_IsString(lay) && !strcmp(lay->valuestring, "NHWC");
        if (m->nhwc && tether_image_validate(m->shape, m->ndim, 0, 0, NULL)) {
            /* a custom operator's image: the contract (docs/custom-ops.md), checked again */
            char why[TETHER_ERROR_MSG_MAX];
            snprintf(why, sizeof why, "%s", tether_last_error());
            return bad(a, "memory %d ('%s'): %s", i, m->name, why);
        }
        if ((m->kind == K_IMAGE || m->kind == K_TEXTURE) && !m->nhwc &&
            (m->ndim < 2 || m->shape[m->ndim - 1] != 4)) {
            return bad(a, "memory %d ('%s'): an image's last dimension must be 4", i, m->name);
        }
        if (m->kind == K_STATUS) {
            if (bytes != 4) {
                return bad(a, "memory %d ('%s'): the status object is one int32 (4 bytes)", i,
                           m->name);
            }
            a->status_mem = i;
        }
        m->bytes = (uint64_t)bytes;
        m->params_off = -1;
        if (m->kind == K_PARAMS || m->kind == K_IMAGE) {
            int64_t off;
            if (get_int(o, "params_offset", 0, (int64_t)a->params_bytes, &off) ||
                (uint64_t)off + m->bytes > a->params_bytes) {
                return bad(a,
                           "memory %d ('%s'): params_offset + bytes is outside params.bin "
                           "(%zu bytes)",
                           i, m->name, a->params_bytes);
            }
            m->params_off = off;
        }
        if (m->kind == K_INPUT || m->kind == K_OUTPUT) {
            int64_t idx;
            int n = m->kind == K_INPUT ? a->nin : a->nout;
            ocl_io *io = m->kind == K_INPUT ? a->in : a->out;
            if (get_int(o, "index", 0, n - 1, &idx) || io[idx].mem >= 0 ||
                io[idx].elems * io[idx].eb != (int64_t)m->bytes) {
                return bad(a, "memory %d ('%s'): index does not name a graph %s of its size", i,
                           m->name, kind_names[m->kind]);
            }
            io[idx].mem = i;
            m->index = (int)idx;
        }
        i++;
    }
    for (int k = 0; k < a->nin; k++) {
        if (a->in[k].mem < 0) {
            return bad(a, "input '%s' has no memory object", a->in[k].name);
        }
    }
    for (int k = 0; k < a->nout; k++) {
        if (a->out[k].mem < 0) {
            return bad(a, "output '%s' has no memory object", a->out[k].name);
        }
    }
    return TETHER_OK;
}

/* a non-empty string that fits a buffer of cap bytes */
static int bounded_name(const cJSON *js, size_t cap) {
    return cJSON_IsString(js) && js->valuestring[0] && strlen(js->valuestring) < cap;
}

/* "errors": the status object's values 1..n, each naming its node, operator, code and check;
 * present exactly when there is a status object. */
static int parse_errors(tether__ocl_artifact *a, const cJSON *arr) {
    if (a->status_mem < 0) {
        return arr && !cJSON_IsNull(arr) ? bad(a, "'errors' without a status memory object") : 0;
    }
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1 || cJSON_GetArraySize(arr) > 100000) {
        return bad(a, "the status memory object needs a non-empty 'errors' list");
    }
    a->nerrs = cJSON_GetArraySize(arr);
    a->errs = calloc((size_t)a->nerrs, sizeof *a->errs);
    if (!a->errs) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        ocl_err *x = &a->errs[i];
        const cJSON *nd = cJSON_GetObjectItemCaseSensitive(o, "node");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
        const cJSON *wh = cJSON_GetObjectItemCaseSensitive(o, "what");
        int64_t v, code;
        if (get_int(o, "value", i + 1, i + 1, &v) || get_int(o, "code", -100, -1, &code) ||
            !bounded_name(nd, sizeof x->node) || !bounded_name(op, sizeof x->op) ||
            !bounded_name(wh, sizeof x->what)) {
            return bad(a,
                       "errors[%d] must be {\"value\": %d, \"node\", \"op\", \"code\" "
                       "(-100..-1), \"what\"} (names non-empty strings)",
                       i, i + 1);
        }
        snprintf(x->node, sizeof x->node, "%s", nd->valuestring);
        snprintf(x->op, sizeof x->op, "%s", op->valuestring);
        snprintf(x->what, sizeof x->what, "%s", wh->valuestring);
        x->code = (int)code;
        i++;
    }
    return TETHER_OK;
}

static int parse_sizes(const cJSON *js, uint64_t *out, uint32_t *n) {
    if (!cJSON_IsArray(js) || cJSON_GetArraySize(js) < 1 || cJSON_GetArraySize(js) > 3) {
        return -1;
    }
    *n = (uint32_t)cJSON_GetArraySize(js);
    for (uint32_t d = 0; d < *n; d++) {
        const cJSON *v = cJSON_GetArrayItem(js, (int)d);
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 4e9) {
            return -1;
        }
        out[d] = (uint64_t)v->valuedouble;
    }
    return 0;
}

static int parse_steps(tether__ocl_artifact *a, const cJSON *arr) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > 100000) {
        return bad(a, "'steps' must be a list");
    }
    a->nsteps = cJSON_GetArraySize(arr);
    a->steps = calloc((size_t)(a->nsteps ? a->nsteps : 1), sizeof *a->steps);
    if (!a->steps) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int i = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr) {
        ocl_step *s = &a->steps[i];
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kernel");
        const cJSON *nd = cJSON_GetObjectItemCaseSensitive(o, "node");
        if (!cJSON_IsString(k) || !k->valuestring[0] ||
            strlen(k->valuestring) >= sizeof s->kernel) {
            return bad(a, "step %d has no kernel name", i);
        }
        snprintf(s->kernel, sizeof s->kernel, "%s", k->valuestring);
        snprintf(s->node, sizeof s->node, "%s", cJSON_IsString(nd) ? nd->valuestring : "");
        uint32_t nl = 0;
        const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, "local");
        if (parse_sizes(cJSON_GetObjectItemCaseSensitive(o, "global"), s->global, &s->work_dim) ||
            (lo && !cJSON_IsNull(lo) && (parse_sizes(lo, s->local, &nl) || nl != s->work_dim))) {
            return bad(a,
                       "step %d ('%s'): global must be 1 to 3 positive sizes, local null or as "
                       "many",
                       i, s->kernel);
        }
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "args");
        if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) > OCL_MAX_ARGS) {
            return bad(a, "step %d ('%s'): args must be a list of at most %d", i, s->kernel,
                       OCL_MAX_ARGS);
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, args) {
            ocl_arg *g = &s->args[s->nargs];
            int64_t v;
            if (cJSON_GetObjectItemCaseSensitive(x, "memory")) {
                if (get_int(x, "memory", 0, a->nmems - 1, &v)) {
                    return bad(a, "step %d ('%s'): argument %u names no memory object", i,
                               s->kernel, s->nargs);
                }
                g->mem = (int)v;
            } else if (!get_int(x, "int", -((int64_t)1 << 31), ((int64_t)1 << 31) - 1, &v)) {
                g->mem = -1;
                g->ival = v;
            } else {
                return bad(a,
                           "step %d ('%s'): argument %u is neither {\"memory\": i} nor "
                           "{\"int\": n}",
                           i, s->kernel, s->nargs);
            }
            s->nargs++;
        }
        /* The artifact is data the kernels trust: a work size that does not fit what the
         * buffers hold would make them write outside their arrays on the device. Every kernel
         * stops at its int argument (the count of work-items that do work), which cannot
         * exceed the elements of the largest array it takes (a buffer's bytes: the integer
         * tensors of quantized models are 1-byte elements); local sizes divide global ones. */
        uint64_t items = 1, most = 0;
        for (uint32_t d = 0; d < s->work_dim; d++) {
            items *= s->global[d];
            if (s->local[d] && s->global[d] % s->local[d] != 0) {
                return bad(a, "step %d ('%s'): global size %llu is not a multiple of local %llu", i,
                           s->kernel, (unsigned long long)s->global[d],
                           (unsigned long long)s->local[d]);
            }
        }
        for (uint32_t k = 0; k < s->nargs; k++) {
            if (s->args[k].mem >= 0) {
                const ocl_mem *m = &a->mems[s->args[k].mem];
                uint64_t n = m->kind == K_IMAGE || m->kind == K_TEXTURE
                                 ? m->bytes / (uint64_t)m->eb /* elements (4 per texel) */
                                 : m->bytes;
                most = n > most ? n : most;
            }
        }
        for (uint32_t k = 0; k < s->nargs; k++) {
            if (s->args[k].mem < 0 && (s->args[k].ival < 0 || (uint64_t)s->args[k].ival > items ||
                                       (uint64_t)s->args[k].ival > most)) {
                return bad(a,
                           "step %d ('%s'): work count %lld exceeds its work size (%llu) or "
                           "the elements of its arrays (%llu)",
                           i, s->kernel, (long long)s->args[k].ival, (unsigned long long)items,
                           (unsigned long long)most);
            }
        }
        i++;
    }
    return TETHER_OK;
}

/* metadata.json's "buffer_variant": a whole OpenCL metadata object of the same model with
 * every tensor in buffers, checked like the artifact and against it: no image, no variant of
 * its own, the same inputs and outputs, the same steps (one per node, in the same order). */
static int load_variant(tether__ocl_artifact *a, const cJSON *bv) {
    if (!cJSON_IsObject(bv) || cJSON_GetObjectItemCaseSensitive(bv, "buffer_variant")) {
        return bad(a, "buffer_variant must be an artifact's metadata object (without a variant)");
    }
    int rc = tether__ocl_artifact_load(a->dir, bv, &a->variant);
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(rc, "buffer_variant: %s", msg);
    }
    const tether__ocl_artifact *v = a->variant;
    for (int i = 0; i < v->nmems; i++) {
        if (v->mems[i].kind == K_IMAGE || v->mems[i].kind == K_TEXTURE) {
            return bad(a, "buffer_variant: memory %d ('%s') is an image", i, v->mems[i].name);
        }
    }
    int same = v->nin == a->nin && v->nout == a->nout && v->nsteps == a->nsteps;
    for (int k = 0; same && k < a->nin + a->nout; k++) {
        const ocl_io *x = k < a->nin ? &a->in[k] : &a->out[k - a->nin];
        const ocl_io *y = k < a->nin ? &v->in[k] : &v->out[k - a->nin];
        same = strcmp(x->name, y->name) == 0 && x->ndim == y->ndim &&
               memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) == 0;
    }
    for (int i = 0; same && i < a->nsteps; i++) {
        same = strcmp(a->steps[i].node, v->steps[i].node) == 0;
    }
    if (!same) {
        return bad(a, "buffer_variant has other inputs, outputs or steps than the artifact");
    }
    return TETHER_OK;
}

int tether__ocl_artifact_load(const char *dir, const cJSON *m, tether__ocl_artifact **out) {
    *out = NULL;
    tether__ocl_artifact *a = calloc(1, sizeof *a);
    if (!a) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(a->dir, sizeof a->dir, "%s", dir);
    char path[1400];
    int rc = m ? 0 : bad(a, "not valid JSON");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(m, "format");
    const cJSON *be = cJSON_GetObjectItemCaseSensitive(m, "backend");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(m, "prefix");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(m, "source");
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(m, "params_file");
    if (!rc && (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "tether-artifact") != 0 ||
                !cJSON_IsString(be) || strcmp(be->valuestring, "opencl") != 0)) {
        rc = bad(a, "not an OpenCL tether artifact (format, backend)");
    }
    if (!rc && (!cJSON_IsString(src) || !tether__artifact_file_name_ok(src->valuestring) ||
                (pf && !cJSON_IsNull(pf) &&
                 (!cJSON_IsString(pf) || !tether__artifact_file_name_ok(pf->valuestring))))) {
        rc = bad(a, "source and params_file must be file names in the directory");
    }
    if (!rc) {
        snprintf(a->prefix, sizeof a->prefix, "%s",
                 cJSON_IsString(pre) ? pre->valuestring : "model");
        snprintf(a->source_name, sizeof a->source_name, "%s", src->valuestring);
        snprintf(path, sizeof path, "%s/%s", dir, src->valuestring);
        rc = read_file(path, &a->source, &a->source_len);
    }
    if (!rc && cJSON_IsString(pf)) {
        char *p;
        snprintf(path, sizeof path, "%s/%s", dir, pf->valuestring);
        rc = read_file(path, &p, &a->params_bytes);
        a->params = (uint8_t *)p;
        int64_t want;
        if (!rc && (get_int(m, "params_bytes", 0, (int64_t)1 << 42, &want) ||
                    (size_t)want != a->params_bytes)) {
            rc = bad(a, "params_bytes differs from the size of %s (%zu bytes)", pf->valuestring,
                     a->params_bytes);
        }
    }
    if (!rc) {
        rc = parse_io(a, cJSON_GetObjectItemCaseSensitive(m, "inputs"), &a->in, &a->nin, "input");
    }
    if (!rc) {
        rc = parse_io(a, cJSON_GetObjectItemCaseSensitive(m, "outputs"), &a->out, &a->nout,
                      "output");
    }
    a->status_mem = -1;
    if (!rc) {
        rc = parse_mems(a, cJSON_GetObjectItemCaseSensitive(m, "memory"));
    }
    if (!rc) {
        rc = parse_errors(a, cJSON_GetObjectItemCaseSensitive(m, "errors"));
    }
    if (!rc) {
        rc = parse_steps(a, cJSON_GetObjectItemCaseSensitive(m, "steps"));
    }
    const cJSON *nk = cJSON_GetObjectItemCaseSensitive(m, "kernels");
    if (!rc && (!cJSON_IsNumber(nk) || nk->valuedouble != (double)a->nsteps)) {
        rc = bad(a, "'kernels' (%g) differs from the %d steps",
                 cJSON_IsNumber(nk) ? nk->valuedouble : -1.0, a->nsteps);
    }
    const cJSON *bv = cJSON_GetObjectItemCaseSensitive(m, "buffer_variant");
    if (!rc && bv && !cJSON_IsNull(bv)) {
        rc = load_variant(a, bv);
    }
    if (rc) {
        tether__ocl_artifact_free(a);
        return rc;
    }
    *out = a;
    return TETHER_OK;
}

int tether__ocl_artifact_num_inputs(const tether__ocl_artifact *a) {
    return a->nin;
}

int tether__ocl_artifact_num_outputs(const tether__ocl_artifact *a) {
    return a->nout;
}

int64_t tether__ocl_artifact_io(const tether__ocl_artifact *a, int output, int i, const char **name,
                                int *ndim, const int64_t **shape) {
    const ocl_io *io = output ? &a->out[i] : &a->in[i];
    if (name) {
        *name = io->name;
    }
    if (ndim) {
        *ndim = io->ndim;
    }
    if (shape) {
        *shape = io->shape;
    }
    return io->elems;
}

void tether__ocl_artifact_io_kind(const tether__ocl_artifact *a, int output, int i, DLDataType *dt,
                                  int *dyn_dim, int *extent_output, int *extent_of) {
    const ocl_io *io = output ? &a->out[i] : &a->in[i];
    *dt = io->dt;
    *dyn_dim = io->dyn_dim;
    *extent_output = io->extent_output;
    *extent_of = io->extent_of;
}

int tether__ocl_artifact_num_steps(const tether__ocl_artifact *a) {
    return a->nsteps;
}

void tether__ocl_artifact_step(const tether__ocl_artifact *a, int i, const char **kernel,
                               const char **node) {
    *kernel = a->steps[i].kernel;
    *node = a->steps[i].node;
}

const char *tether__ocl_artifact_prefix(const tether__ocl_artifact *a) {
    return a->prefix;
}

/* ---- on the device ------------------------------------------------------------------------ */

/* The node of the first step that takes memory object m ("" when none). */
static const char *node_of(const tether__ocl_artifact *a, int m) {
    for (int i = 0; i < a->nsteps; i++) {
        for (uint32_t k = 0; k < a->steps[i].nargs; k++) {
            if (a->steps[i].args[k].mem == m) {
                return a->steps[i].node;
            }
        }
    }
    return "";
}

/* TETHER_OK when the device holds every image of a (scope offered, extent within its HELLO
 * limits), else the error naming the first image that does not fit, its node and the limit. */
static int images_fit(const tether__ocl_artifact *a, const tether_device_info *d) {
    for (int i = 0; i < a->nmems; i++) {
        const ocl_mem *m = &a->mems[i];
        if (m->kind != K_IMAGE && m->kind != K_TEXTURE) {
            continue;
        }
        const char *flag = m->kind == K_IMAGE ? "--texture-weights" : "--texture-activations";
        if (!(d->scopes & (1u << (unsigned)m->scope))) {
            return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                    "%s (node '%s'): the device offers no %s scope (compile "
                                    "without %s)",
                                    m->name, node_of(a, i), tether_scope_name(m->scope), flag);
        }
        tether_image_extent ext;
        /* a custom operator's image: the packed-image contract before any launch */
        if (m->nhwc ? tether_image_validate(m->shape, m->ndim, d->image_max_width,
                                            d->image_max_height, &ext)
                    : tether_texture_extent(m->scope, m->shape, m->ndim, d->image_max_width,
                                            d->image_max_height, &ext)) {
            char msg[TETHER_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", tether_last_error());
            /* an artifact without a buffer variant was compiled for given image limits */
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "%s (node '%s'): %s (recompile with --device URL or "
                                    "--image-max WxH at the device's limits, or without %s)",
                                    m->name, node_of(a, i), msg, flag);
        }
    }
    return TETHER_OK;
}

const char *tether__ocl_artifact_fallback(const tether__ocl_artifact *a) {
    return a->fallback[0] ? a->fallback : NULL;
}

int tether__ocl_artifact_prepare(tether__ocl_artifact *a, tether_session *s) {
    if (a->s) {
        return tether_set_error(TETHER_ERR_STATE, "%s: the artifact is already on a device",
                                a->dir);
    }
    const tether_device_info *d = tether_session_info(s);
    if (!d->opencl) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "%s is an OpenCL artifact, but the device has no OpenCL layer "
                                "(HELLO: opencl no); run it on a tetherd with an OpenCL device",
                                a->dir);
    }
    /* every image must fit the device before anything is allocated; one that does not makes the
     * buffer variant run (compile-time --device/--image-max keep such a tensor a buffer too) */
    int rc = images_fit(a, d);
    if (rc && a->variant) {
        char why[TETHER_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", tether_last_error());
        tether__ocl_artifact *v = a->variant;
        int per_kernel = a->per_kernel;
        tether__ocl_artifact t = *a;
        *a = *v; /* a is now the buffer variant; v keeps the artifact as compiled, to be freed */
        *v = t;
        v->variant = NULL;
        a->variant = v;
        a->per_kernel = per_kernel;
        snprintf(a->fallback, sizeof a->fallback, "%s", why);
        rc = TETHER_OK;
    }
    if (rc) {
        return rc;
    }
    a->s = s;
    const char *name = a->source_name;
    uint64_t module = 0;
    if (a->nsteps > 0) { /* a model whose outputs are all empty has no kernel to build */
        rc = tether_session_upload(s, TETHER_MODULE_OPENCL_SOURCE, name, a->source, a->source_len);
        if (!rc) {
            rc = tether_session_load_module(s, name, &module, NULL);
        }
    }
    if (rc) {
        char msg[TETHER_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        return tether_set_error(rc, "%s/%s: %s", a->dir, a->source_name, msg);
    }
    for (int i = 0; i < a->nsteps; i++) {
        ocl_step *st = &a->steps[i];
        int found = 0;
        for (int k = 0; k < i && !found; k++) {
            if (strcmp(a->steps[k].kernel, st->kernel) == 0) {
                st->fn = a->steps[k].fn;
                found = 1;
            }
        }
        if (!found && (rc = tether_session_get_function(s, module, st->kernel, &st->fn))) {
            return rc;
        }
        if (st->fn.num_args >= 0 && (uint32_t)st->fn.num_args != st->nargs) {
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "kernel '%s' takes %d arguments, metadata.json gives %u",
                                    st->kernel, (int)st->fn.num_args, st->nargs);
        }
    }
    for (int i = 0; i < a->nmems; i++) {
        ocl_mem *m = &a->mems[i];
        int64_t one = 1;
        /* an empty tensor still needs an object to bind (kernels never touch it) */
        const int64_t *shape = m->bytes ? m->shape : &one;
        int nd = m->bytes ? m->ndim : 1;
        DLDataType dt = m->kind == K_INPUT || m->kind == K_OUTPUT ? m->dt
                        : m->kind == K_STATUS                     ? TETHER_DTYPE(kDLInt, 32)
                        : m->eb == 2                              ? TETHER_DTYPE(kDLFloat, 16)
                                                                  : TETHER_FLOAT32;
        if ((rc = tether_session_alloc(s, shape, nd, dt, m->scope, "", &m->handle, NULL))) {
            char msg[TETHER_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg, "%s", tether_last_error());
            return tether_set_error(rc, "memory '%s' (%s, %llu bytes): %s", m->name,
                                    kind_names[m->kind], (unsigned long long)m->bytes, msg);
        }
        m->allocated = 1;
        if (m->params_off >= 0 && m->bytes &&
            (rc = tether_session_copy_to(s, m->handle, 0, a->params + m->params_off,
                                         (size_t)m->bytes))) {
            return rc;
        }
    }
    a->prepared = 1;
    a->status_dirty = 1; /* a new object holds whatever the device left there */
    if ((rc = tether__ocl_artifact_reset_status(a))) {
        return rc;
    }
    return tether__ocl_artifact_build_sequences(a);
}

void tether__ocl_artifact_free(tether__ocl_artifact *a) {
    if (!a) {
        return;
    }
    if (a->s && !tether_session_fault(a->s)) {
        for (int i = 0; i < a->nmems; i++) {
            if (a->mems[i].allocated) {
                tether_session_free(a->s, a->mems[i].handle);
            }
        }
    }
    free(a->lsteps);
    free(a->largs);
    free(a->chunk_start);
    free(a->mems);
    free(a->errs);
    free(a->steps);
    free(a->in);
    free(a->out);
    free(a->source);
    free(a->params);
    tether__ocl_artifact_free(a->variant);
    free(a);
}
