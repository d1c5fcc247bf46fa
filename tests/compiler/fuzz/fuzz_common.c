/*
 * The part of the fuzz targets after loading (see fuzz_common.h): memory plan, C generation in
 * both ABIs, interpreter. What must stay true: every buffer is allocated with one spare element,
 * so an empty tensor still gets a valid pointer.
 */
#include "fuzz_common.h"

#include <stdlib.h>

#include "tether/crt/dtype.h"

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
    /* Buffers sized by each tensor's element type: a graph of int64 or double inputs runs
     * through the typed interpreter, and the float API must refuse it (never overrun). */
    void **bufs = calloc((size_t)(g->ninputs + g->noutputs), sizeof(void *));
    int ok = bufs != NULL;
    bool all_f32 = true;
    for (int i = 0; ok && i < g->ninputs + g->noutputs; i++) {
        int t = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        size_t es = tether_dtype_bytes(g->tensors[t].dtype);
        bufs[i] = calloc(tether_ir_tensor_elements(&g->tensors[t]) + 1, es ? es : 1);
        ok = bufs[i] != NULL;
        all_f32 = all_f32 && tether_dtype_equal(g->tensors[t].dtype, TETHER_FLOAT32);
    }
    if (ok && tether_ir_graph_flops(g) < TT_FUZZ_MAX_FLOPS) {
        if (!all_f32 && tether_interp_run(g, (const float *const *)bufs,
                                          (float *const *)(bufs + g->ninputs)) == 0) {
            abort(); /* the float API ran a graph whose buffers are not float32 */
        }
        tether_interp_run_typed(g, (const void *const *)bufs, bufs + g->ninputs);
    }
    for (int i = 0; bufs && i < g->ninputs + g->noutputs; i++) {
        free(bufs[i]);
    }
    free(bufs);
}
