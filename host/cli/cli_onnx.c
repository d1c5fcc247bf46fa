/*
 * The CLI's glue to the compiler's ONNX front end (see cli_onnx.h): registration of .onnx models
 * and .pb arrays, the load options of `tether run MODEL`, and the check of a model's --in files
 * before anything is compiled or a device contacted.
 *
 * What must stay true: the host library never links the ONNX front end (the .pb reader is
 * plugged in here, from tether_onnx_arrays, through tether_npy_register_reader);
 * tether_cli_model_inputs_check reads and checks every file without a session or a compile.
 */
#include "cli_onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/npy.h"

#include "tether/crt.h"

#ifdef TETHER_HAVE_ONNX
#include "tether/onnx.h"

void tether_cli_onnx_init(void) {
    tether_onnx_register();
    tether_onnx_register_arrays(); /* .pb arrays (tether_onnx_arrays) */
}
#else
void tether_cli_onnx_init(void) {}
#endif

static long long loop_max; /* --loop-max: every model this process loads */

int tether_cli_loop_max_parse(const char *v) {
    char *end;
    long long n = v ? strtoll(v, &end, 10) : 0;
    if (!v || *end || end == v || n < 1 || n > (1LL << 24)) {
        return tether_cli_fail(2, "--loop-max '%s' is not 1..16777216", v ? v : "");
    }
    loop_max = n;
    return 0;
}

#ifdef TETHER_HAVE_COMPILER
/* tether_cli_model_load_prepare; expect[i] (NULL: none) is what --in i must hold, checked from
 * an .npz member's header before it is inflated. */
static int prepare(tether_cli_model_load *m, int nin, const tether_cli_array *inputs, int nshapes,
                   const char *const *shapes, const tether_npy_expect *expect) {
    memset(m, 0, sizeof *m);
    if (nin > TETHER_CLI_MAX_IO || nshapes > TETHER_CLI_MAX_IO) {
        return tether_cli_fail(2, "more than %d inputs or input shapes", TETHER_CLI_MAX_IO);
    }
    for (int i = 0; i < nshapes; i++) {
        if (tether_model_input_shape_parse(shapes[i], &m->shapes[i])) {
            return tether_cli_fail(2, "--input-shape: %s", tether_last_error());
        }
    }
    for (int i = 0; i < nin; i++) {
        snprintf(m->name_text[i], sizeof m->name_text[i], "%s", inputs[i].name);
        m->names[i] = m->name_text[i];
        if (tether_cli_array_read_expect(&inputs[i], expect ? &expect[i] : NULL, &m->arrays[i])) {
            int rc = tether_cli_fail(1, "%s", tether_last_error());
            tether_cli_model_load_free(m);
            return rc;
        }
        tether_model_value *v = &m->values[i];
        v->dtype = m->arrays[i].dtype;
        v->ndim = m->arrays[i].ndim;
        memcpy(v->shape, m->arrays[i].shape, sizeof v->shape);
        v->data = m->arrays[i].data;
        v->nbytes = m->arrays[i].nbytes;
    }
    m->lo.input_shapes = m->shapes;
    m->lo.ninput_shapes = nshapes;
    m->lo.input_values = m->values;
    m->lo.ninput_values = nin;
    m->lo.input_bound = m->bound;
    m->lo.loop_max = loop_max;
    m->lo.input_names = tether_cli_array_named(inputs, nin) ? m->names : NULL;
    return 0;
}

int tether_cli_model_load_prepare(tether_cli_model_load *m, int nin, const tether_cli_array *inputs,
                                  int nshapes, const char *const *shapes) {
    return prepare(m, nin, inputs, nshapes, shapes, NULL);
}

/* Input i's expectation from a graph loaded without values: the graph input of its name, else
 * the one at its position; anything (ndim -1) when the graph has none such. */
static void expect_of(const tether_ir_graph *g, const tether_cli_array *a, int i,
                      tether_npy_expect *e) {
    static char names[TETHER_CLI_MAX_IO][128]; /* copies: the graph is closed before the reads */
    memset(e, 0, sizeof *e);
    e->what = "model input";
    e->ndim = -1;
    int j = a->name[0] ? -1 : i;
    for (int k = 0; a->name[0] && k < g->ninputs; k++) {
        if (!strcmp(g->tensors[g->inputs[k]].name, a->name)) {
            j = k;
        }
    }
    if (j < 0 || j >= g->ninputs) {
        return;
    }
    const tether_ir_tensor *t = &g->tensors[g->inputs[j]];
    snprintf(names[i], sizeof names[i], "%s", t->name);
    e->name = names[i];
    e->dtype = t->dtype;
    e->ndim = t->ndim;
    memcpy(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

int tether_cli_model_inputs_check(const char *model, tether_cli_model_load *m, int nin,
                                  const tether_cli_array *inputs, int nshapes,
                                  const char *const *shapes, int may_omit, tether_ir_graph *out) {
    static tether_npy_expect expect[TETHER_CLI_MAX_IO];
    static tether_cli_model_load m0;
    tether_ir_graph g;
    int have_expect = 0, rc;
    if (nin > TETHER_CLI_MAX_IO) {
        return tether_cli_fail(2, "more than %d inputs", TETHER_CLI_MAX_IO);
    }
    /* the model alone first: its inputs' dtypes and shapes say what each file must hold, so an
     * .npz member is refused from its header (a model whose operators need some inputs' values
     * to load at all gives no expectations: then only the size limits apply while reading) */
    if ((rc = prepare(&m0, 0, NULL, nshapes, shapes, NULL))) {
        return rc;
    }
    if (nin && tether_model_load_with(model, &m0.lo, &g) == 0) {
        have_expect = g.ninputs <= TETHER_CLI_MAX_IO;
        /* every graph input takes an --in (bound as a constant or fed at run time): the count
         * and the names are usage errors, said before any file is read */
        static tether_cli_array copy[TETHER_CLI_MAX_IO];
        const char *names0[TETHER_CLI_MAX_IO];
        int k = nin;
        for (int j = 0; have_expect && j < g.ninputs; j++) {
            names0[j] = g.tensors[g.inputs[j]].name;
        }
        memcpy(copy, inputs, sizeof *copy * (size_t)nin);
        if (have_expect && tether_cli_array_named(copy, nin)) {
            rc = tether_cli_array_order(copy, &k, g.ninputs, names0, "input");
        } else if (have_expect && nin != g.ninputs) {
            rc = tether_cli_fail(2, "the model has %d inputs, %d --in given", g.ninputs, nin);
        }
        for (int i = 0; !rc && have_expect && i < nin; i++) {
            expect_of(&g, &inputs[i], i, &expect[i]);
        }
        tether_ir_close(&g);
        if (rc) {
            tether_cli_model_load_free(&m0);
            return rc;
        }
    }
    tether_cli_model_load_free(&m0);
    /* every file read (and parsed), then the model loaded with their values bound */
    if ((rc = prepare(m, nin, inputs, nshapes, shapes, have_expect ? expect : NULL))) {
        return rc;
    }
    if (tether_model_load_with(model, &m->lo, &g)) {
        tether_cli_model_load_free(m);
        return tether_cli_fail(1, "%s", tether_error_detail());
    }
    /* the run-time inputs (those not bound): as many as the model's, each as its input is */
    static tether_cli_array list[TETHER_CLI_MAX_IO];
    static int idx[TETHER_CLI_MAX_IO];
    int k = 0;
    for (int i = 0; i < nin; i++) {
        if (!m->bound[i]) {
            list[k] = inputs[i];
            idx[k++] = i;
        }
    }
    const char *names[TETHER_CLI_MAX_IO];
    for (int j = 0; j < g.ninputs && j < TETHER_CLI_MAX_IO; j++) {
        names[j] = g.tensors[g.inputs[j]].name;
    }
    int nbound = nin - k;
    rc = 0;
    if (g.ninputs > TETHER_CLI_MAX_IO) {
        rc = tether_cli_fail(1, "%s: more than %d inputs", model, TETHER_CLI_MAX_IO);
    } else if (nin == 0 && may_omit) {
        rc = 0; /* the caller makes the inputs */
    } else if (tether_cli_array_named(list, k)) {
        rc = tether_cli_array_order(list, &k, g.ninputs, names, "input");
    } else if (k != g.ninputs) {
        rc = nbound ? tether_cli_fail(2,
                                      "the model has %d run-time inputs; %d --in given, of which "
                                      "%d were bound as constants",
                                      g.ninputs, nin, nbound)
                    : tether_cli_fail(2, "the model has %d inputs, %d --in given", g.ninputs, nin);
    }
    for (int j = 0; !rc && k && j < g.ninputs; j++) {
        const tether_ir_tensor *t = &g.tensors[g.inputs[j]];
        int i = idx[j];
        if (list[j].name[0]) { /* ordered by name: the argument of that name */
            for (int q = 0; q < nin; q++) {
                if (!m->bound[q] && !strcmp(inputs[q].name, list[j].name)) {
                    i = q;
                }
            }
        }
        if (tether_npy_check(&m->arrays[i], inputs[i].label, "model input", t->name, t->dtype,
                             t->ndim, t->shape)) {
            rc = tether_cli_fail(1, "%s", tether_last_error());
        }
    }
    if (rc || !out) {
        tether_ir_close(&g);
    } else {
        *out = g;
    }
    if (rc) {
        tether_cli_model_load_free(m);
    }
    return rc;
}

void tether_cli_model_load_free(tether_cli_model_load *m) {
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++) {
        tether_npy_free(&m->arrays[i]);
    }
}
#endif
