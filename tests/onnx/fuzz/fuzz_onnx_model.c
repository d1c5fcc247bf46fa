/*
 * libFuzzer target: arbitrary bytes as an ONNX model. A load failure must leave an empty graph
 * and a message naming the source; whatever loads must survive the passes, memory planning and C
 * generation in both ABIs, and (when small) the interpreter. Seeds: the onnx-node models.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
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
        tt_fuzz_plan_generate_run(&g, false);
    }
    tether_ir_close(&g);
    return 0;
}
