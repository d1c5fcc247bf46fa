/*
 * The CLI's glue to the compiler's ONNX front end (see cli_onnx.h): registration of .onnx models
 * and .pb arrays, and the load options of `tether run MODEL`.
 *
 * What must stay true: the host library never links the ONNX front end (the reader is plugged
 * in here, through tether_npy_register_reader); a .pb array keeps its TensorProto dtype, so a
 * float32 model input still refuses an int64 file with the usual message.
 */
#include "cli_onnx.h"

#include <stdlib.h>
#include <string.h>

#include "tether/crt.h"

#ifdef TETHER_HAVE_ONNX
#include "tether/onnx.h"

/* onnx.TensorProto file -> tether_npy (the data buffer changes owner). */
static int read_pb(const char *path, tether_npy *out) {
    memset(out, 0, sizeof *out);
    tether_onnx_tensor t;
    int rc = tether_onnx_tensor_read(path, &t);
    if (rc)
        return rc;
    if (t.ndim > TETHER_MAX_NDIM) {
        tether_onnx_tensor_free(&t);
        return tether_set_error(TETHER_ERR_LIMIT, "%s: more than %d dimensions", path,
                                TETHER_MAX_NDIM);
    }
    out->dtype = t.dtype;
    out->ndim = t.ndim;
    memcpy(out->shape, t.shape, sizeof(int64_t) * (size_t)t.ndim);
    out->data = t.data;
    out->nbytes = t.nbytes;
    return TETHER_OK;
}

void tether_cli_onnx_init(void) {
    tether_onnx_register();
    tether_npy_register_reader(".pb", read_pb);
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
