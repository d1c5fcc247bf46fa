/*
 * The part of the fuzz targets after loading (see fuzz_common.h): memory plan, C generation in
 * both ABIs, interpreter. What must stay true: every buffer is allocated with one spare element,
 * so an empty tensor still gets a valid pointer.
 */
#include "fuzz_common.h"

#include <stdlib.h>

void tt_fuzz_plan_generate_run(const tether_ir_graph *g, bool typed_c) {
    tether_memplan plan;
    if (tether_memplan_build(g, "greedy-size", &plan) == 0) {
        for (int abi = 0; abi < 2; abi++) {
            tether_codegen_options o;
            tether_codegen_options_init(&o);
            o.abi = (tether_abi)abi;
            if (typed_c) {
                o.interface = (tether_interface)abi;
            }
            o.link_params = abi == 0;
            tether_codegen_output out;
            if (tether_codegen_c(g, &plan, &o, &out) == 0) {
                tether_codegen_output_close(&out);
            }
        }
        tether_memplan_close(&plan);
    }
    float **bufs = calloc((size_t)(g->ninputs + g->noutputs), sizeof(float *));
    int ok = bufs != NULL;
    for (int i = 0; ok && i < g->ninputs + g->noutputs; i++) {
        int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        bufs[i] = calloc(tether_ir_tensor_elements(&g->tensors[t]) + 1, sizeof(float));
        ok = bufs[i] != NULL;
    }
    if (ok && tether_ir_graph_flops(g) < TT_FUZZ_MAX_FLOPS) {
        tether_interp_run(g, (const float *const *)bufs, bufs + g->ninputs);
    }
    for (int i = 0; bufs && i < g->ninputs + g->noutputs; i++) {
        free(bufs[i]);
    }
    free(bufs);
}
