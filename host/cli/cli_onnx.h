/*
 * The CLI's glue to the compiler's ONNX front end (cli_onnx.c), kept out of main.c:
 *  - tether_cli_onnx_init, called first in main(): .onnx model files for every model command
 *    (through tether_model_load) and .pb onnx.TensorProto files wherever the CLI reads arrays
 *    (through tether_npy_read). A no-op in builds without tether_onnx.
 *  - `tether run MODEL`: the --in files become values the front end may bind at compile time
 *    (inputs an operator needs as constants, such as a Reshape's shape), plus --input-shape.
 *    The caller drops the inputs marked in `bound` before running the artifact.
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
#endif

#endif
