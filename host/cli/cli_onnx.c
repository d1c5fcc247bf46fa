/*
 * The CLI's glue to the compiler's ONNX front end (see cli_onnx.h): registration of .onnx models
 * and .pb arrays, and the load options of `tether run MODEL`.
 *
 * What must stay true: the host library never links the ONNX front end (the .pb reader is
 * plugged in here, from tether_onnx_arrays, through tether_npy_register_reader).
 */
#include "cli_onnx.h"

#include <stdlib.h>
#include <string.h>

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

#ifdef TETHER_HAVE_COMPILER
int tether_cli_model_load_prepare(tether_cli_model_load *m, int nin, const tether_cli_array *inputs,
                                  int nshapes, const char *const *shapes) {
    memset(m, 0, sizeof *m);
    if (nin > TETHER_CLI_MAX_IO || nshapes > TETHER_CLI_MAX_IO)
        return tether_cli_fail(2, "more than %d inputs or input shapes", TETHER_CLI_MAX_IO);
    for (int i = 0; i < nshapes; i++)
        if (tether_model_input_shape_parse(shapes[i], &m->shapes[i]))
            return tether_cli_fail(2, "--input-shape: %s", tether_last_error());
    for (int i = 0; i < nin; i++) {
        snprintf(m->name_text[i], sizeof m->name_text[i], "%s", inputs[i].name);
        m->names[i] = m->name_text[i];
        if (tether_cli_array_read(&inputs[i], &m->arrays[i])) {
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
    m->lo.input_names = tether_cli_array_named(inputs, nin) ? m->names : NULL;
    return 0;
}

void tether_cli_model_load_free(tether_cli_model_load *m) {
    for (int i = 0; i < TETHER_CLI_MAX_IO; i++)
        tether_npy_free(&m->arrays[i]);
}
#endif
