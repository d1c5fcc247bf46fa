/*
 * The CLI's glue to the compiler's ONNX front end (cli_onnx.c), kept out of main.c:
 *  - tether_cli_onnx_init, called first in main(): .onnx model files for every model command
 *    (through tether_model_load) and .pb onnx.TensorProto files wherever the CLI reads arrays
 *    (through tether_npy_read). A no-op in builds without tether_onnx.
 *  - `tether run MODEL`: the --in files become values the front end may bind at compile time
 *    (inputs an operator needs as constants, such as a Reshape's shape), plus --input-shape.
 *    The caller drops the inputs marked in `bound` before running the artifact. Every model
 *    command checks its --in files against the model first (tether_cli_model_inputs_check),
 *    before it compiles or contacts a device.
 * Errors are printed as "tether <command>: <reason>" (tether_cli_fail); returns are exit codes.
 */
#ifndef TETHER_CLI_ONNX_H
#define TETHER_CLI_ONNX_H

#include "cli.h"

void tether_cli_onnx_init(void);

#ifdef TETHER_HAVE_COMPILER
#include "tether/compiler.h"

typedef struct tether_cli_model_load {
    tether_model_load_options lo; /* for tether_compile_options.load */
    tether_model_input_shape shapes[TETHER_CLI_MAX_IO];
    tether_model_value values[TETHER_CLI_MAX_IO];
    tether_npy arrays[TETHER_CLI_MAX_IO];
    unsigned char bound[TETHER_CLI_MAX_IO]; /* set by the loader: input i became a constant */
    const char *names[TETHER_CLI_MAX_IO];   /* the inputs' names when they were given by name */
    char name_text[TETHER_CLI_MAX_IO][128]; /* (copies: the caller may reorder its arguments) */
} tether_cli_model_load;

/* Reads the nin --in arguments (any format tether_npy_read knows, or .npz members; named ones
 * bind the model input of that name) and parses the --input-shape specs. 0, or 1 (a file cannot
 * be read) / 2 (a bad spec) after printing the error. */
int tether_cli_model_load_prepare(tether_cli_model_load *m, int nin, const tether_cli_array *inputs,
                                  int nshapes, const char *const *shapes);
void tether_cli_model_load_free(tether_cli_model_load *m);
/* --loop-max N of run/bench/ab (tether_model_load_options.loop_max for every model this process
 * loads): parses v (1..16777216); 0, or 2 after printing the error. */
int tether_cli_loop_max_parse(const char *v);
/* run/bench/ab/run --reference MODEL: what can be known about the --in files before anything is
 * compiled or the device contacted. The model is loaded alone first, so each file's expected
 * dtype and shape (the model input of its name or position) are known while it is read: an .npz
 * member is refused from its .npy header, before it is inflated. Then every file is read as by
 * tether_cli_model_load_prepare (m filled), the model is loaded with their values (the inputs
 * its operators need as constants bound), and the run-time inputs (not bound) are checked: as
 * many as the model has (may_omit: none at all is fine, `ab` generates them), names the model
 * has, each file's dtype and shape equal to its input's. *g (when not NULL) gets the loaded
 * graph on success; the caller closes it and frees m. Returns 0, or the exit code after
 * printing the error: 1 (a file, the model, a dtype/shape), 2 (counts, names, bad specs); m is
 * freed then. */
int tether_cli_model_inputs_check(const char *model, tether_cli_model_load *m, int nin,
                                  const tether_cli_array *inputs, int nshapes,
                                  const char *const *shapes, int may_omit, tether_ir_graph *g);
#endif

#ifdef TETHER_HAVE_ONNX
#include "tether/onnx_quantize.h"
/* quantize_cli.c: reads the ncal calibration archives (.npz, one array per model input, named
 * after it) and quantizes model with o's options into r (tether_onnx_quantize; o->samples is
 * set for the call and cleared again). 0, or 1 after printing the error (r freed then); the
 * caller frees r with tether_onnx_quantize_free. Nothing is written. */
int tether_cli_quantize(const char *model, int ncal, const char *const *cal_paths,
                        tether_onnx_quantize_options *o, tether_onnx_quantize_result *r);
#endif

#endif
