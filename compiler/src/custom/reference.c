/*
 * The reference computation of custom operators: the reference interpreter cannot run a user's
 * OpenCL kernel, so it runs the operator's C implementation, compiled with the workstation's C
 * compiler (`cc`, or $CC) into a shared object in a fresh temporary directory, loaded with
 * dlopen and called on the host. One build per registry entry per process.
 *
 * What must stay true: the source is compiled after the same prelude as in generated modules
 * (tether__custom_c_prelude), with a #line directive so a compile error names the user's file and
 * line; the temporary directory is removed whatever happens (the loaded object stays mapped);
 * a failed build or a non-zero return is an error naming the operator, never a silent zero.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../internal.h"
#include "custom_internal.h"
#include "tether/crt/error.h"

typedef int32_t (*custom_fn)(const void *in, int32_t nin, const void *out, int32_t nout);

typedef struct built {
    char *key; /* entry name, NUL, then the source the object was built from */
    custom_fn fn;
} built;

static built cache[64];
static int ncache;

typedef struct ctensor { /* tether_custom_tensor, as the prelude declares it */
    void *data;
    int32_t ndim;
    int64_t shape[8];
} ctensor;

static int first_lines(const char *log, char *out, size_t n) {
    char *text = NULL;
    out[0] = '\0';
    if (tether__read_file(log, &text, NULL)) {
        return 0;
    }
    /* the first error line, else the first lines */
    const char *err = strstr(text, ": error:");
    const char *from = text;
    if (err) {
        while (err > text && err[-1] != '\n') {
            err--;
        }
        from = err;
    }
    size_t o = 0;
    int lines = 0;
    for (const char *p = from; *p && lines < 3 && o + 4 < n; p++) {
        if (*p == '\n') {
            lines++;
            if (lines < 3 && p[1]) {
                out[o++] = ' ';
                out[o++] = '|';
                out[o++] = ' ';
            }
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
    free(text);
    return 1;
}

static int build(const tether_custom_op *op, const tether_custom_impl *im, custom_fn *out) {
    const char *tmp = getenv("TMPDIR");
    char dir[1024], src[1100], lib[1100], log[1100];
    snprintf(dir, sizeof dir, "%s/tether-custom-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        return tether_set_error(TETHER_ERR_IO,
                                "custom operator %s::%s: cannot make a temporary directory for "
                                "its reference build",
                                op->domain, op->name);
    }
    snprintf(src, sizeof src, "%s/ref.c", dir);
    snprintf(lib, sizeof lib, "%s/ref.so", dir);
    snprintf(log, sizeof log, "%s/build.log", dir);
    int rc = TETHER_OK;
    FILE *f = fopen(src, "w");
    if (!f ||
        fprintf(f, "%s#line 1 \"%s\"\n%s\n", tether__custom_c_prelude, im->file, im->text) < 0) {
        rc = tether_set_error(TETHER_ERR_IO, "custom operator %s::%s: cannot write %s", op->domain,
                              op->name, src);
    }
    if (f && fclose(f) && !rc) {
        rc = tether_set_error(TETHER_ERR_IO, "custom operator %s::%s: cannot write %s", op->domain,
                              op->name, src);
    }
    const char *cc = getenv("CC");
    char ccbuf[256];
    snprintf(ccbuf, sizeof ccbuf, "%s", cc && cc[0] && !strchr(cc, ' ') ? cc : "cc");
    char *argv[] = {ccbuf, "-std=c99", "-O1", "-shared", "-fPIC", "-o", lib, src, "-lm", NULL};
    if (!rc && tether__run_logged(argv, log) != 0) {
        char why[600];
        first_lines(log, why, sizeof why);
        rc = tether_set_error(TETHER_ERR_INVALID_ARG,
                              "custom operator %s::%s: its C implementation (%s) does not build "
                              "for the host reference: %s",
                              op->domain, op->name, im->source, why[0] ? why : "(no output)");
    }
    void *h = NULL;
    if (!rc && !(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        rc = tether_set_error(TETHER_ERR_IO, "custom operator %s::%s: dlopen of its reference: %s",
                              op->domain, op->name, why ? why : "?");
    }
    if (!rc) {
        void *sym = dlsym(h, im->entry);
        if (!sym) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "custom operator %s::%s: %s defines no function '%s'", op->domain,
                                  op->name, im->source, im->entry);
            dlclose(h);
        } else {
            memcpy(out, &sym, sizeof *out);
        }
    }
    unlink(src);
    unlink(lib);
    unlink(log);
    rmdir(dir);
    return rc;
}

int tether__custom_reference_run(const tether_ir_graph *g, const tether_ir_node *n,
                                 const float *const *in, float *out) {
    const tether_custom_op *op = tether_custom_op_of(g, n);
    if (!op) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "node '%s': custom operator without a registry entry", n->name);
    }
    const tether_custom_impl *im;
    int rc = tether__custom_c_impl(op, 0, &im);
    if (rc) {
        return tether_set_error(rc,
                                "the reference interpreter runs custom operators through their C "
                                "implementation: %s::%s has none (add \"c\" to its "
                                "implementations)",
                                op->domain, op->name);
    }
    custom_fn fn = NULL;
    size_t el = strlen(im->entry), tl = strlen(im->text);
    for (int i = 0; i < ncache && !fn; i++) {
        const char *k = cache[i].key;
        if (!strcmp(k, im->entry) && !strcmp(k + el + 1, im->text)) {
            fn = cache[i].fn;
        }
    }
    if (!fn) {
        if ((rc = build(op, im, &fn))) {
            return rc;
        }
        char *key = malloc(el + tl + 2);
        if (key && ncache < (int)(sizeof cache / sizeof *cache)) {
            memcpy(key, im->entry, el + 1);
            memcpy(key + el + 1, im->text, tl + 1);
            cache[ncache++] = (built){key, fn};
        } else {
            free(key);
        }
    }
    ctensor ti[TETHER_IR_MAX_INPUTS], to[1];
    memset(ti, 0, sizeof ti);
    memset(to, 0, sizeof to);
    for (int j = 0; j < n->ninputs; j++) {
        const tether_ir_tensor *t = &g->tensors[n->inputs[j]];
        ti[j].data = (void *)in[j];
        ti[j].ndim = t->ndim;
        memcpy(ti[j].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    }
    const tether_ir_tensor *y = &g->tensors[n->outputs[0]];
    to[0].data = out;
    to[0].ndim = y->ndim;
    memcpy(to[0].shape, y->shape, sizeof(int64_t) * (size_t)y->ndim);
    int32_t r = fn(ti, n->ninputs, to, 1);
    if (r != 0) {
        return tether_set_error(TETHER_ERR_INTERNAL,
                                "node '%s': custom operator %s::%s (%s, reference build) returned "
                                "%d",
                                n->name, op->domain, op->name, im->entry, (int)r);
    }
    return TETHER_OK;
}
