/*
 * libFuzzer target: arbitrary bytes as an ONNX model. A load failure must leave an empty graph
 * and a message naming the source; whatever loads must survive the passes, memory planning and C
 * generation in both ABIs, and (when small) the interpreter. Seeds: the onnx-node models.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tether_ir_graph g;
    int rc = tether_onnx_load_buffer(data, size, "fuzz.onnx", NULL, &g);
    if (rc != 0) {
        if (g.ntensors != 0 || strstr(tether_last_error(), "fuzz.onnx") == NULL) {
            abort();
        }
        return 0;
    }
    size_t total = 0;
    for (int i = 0; i < g.ntensors; i++) {
        total += tether_ir_tensor_elements(&g.tensors[i]);
    }
    if (total < (1u << 20) && tether_passes_run(&g, NULL) == 0) {
        tether_memplan plan;
        if (tether_memplan_build(&g, "greedy-size", &plan) == 0) {
            for (int abi = 0; abi < 2; abi++) {
                tether_codegen_options o;
                tether_codegen_options_init(&o);
                o.abi = (tether_abi)abi;
                o.link_params = abi == 0;
                tether_codegen_output out;
                if (tether_codegen_c(&g, &plan, &o, &out) == 0) {
                    tether_codegen_output_close(&out);
                }
            }
            tether_memplan_close(&plan);
        }
        float **bufs = calloc((size_t)(g.ninputs + g.noutputs), sizeof(float *));
        int ok = bufs != NULL;
        for (int i = 0; ok && i < g.ninputs + g.noutputs; i++) {
            int t = i < g.ninputs ? g.inputs[i] : g.outputs[i - g.ninputs];
            bufs[i] = calloc(tether_ir_tensor_elements(&g.tensors[t]) + 1, sizeof(float));
            ok = bufs[i] != NULL;
        }
        if (ok) {
            tether_interp_run(&g, (const float *const *)bufs, bufs + g.ninputs);
        }
        for (int i = 0; bufs && i < g.ninputs + g.noutputs; i++) {
            free(bufs[i]);
        }
        free(bufs);
    }
    tether_ir_close(&g);
    return 0;
}
