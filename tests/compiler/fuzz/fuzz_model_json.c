/*
 * libFuzzer target: arbitrary bytes as a JSON model. Whatever loads must also survive the
 * passes, memory planning and C generation in both ABIs, and (when small) the interpreter; a
 * load failure must leave an empty graph and a message naming the source.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tether/compiler.h"
#include "tether/crt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = 0;
    tether_ir_graph g;
    int rc = tether_model_parse_json(text, "fuzz.json", TETHER_FUZZ_WEIGHTS_DIR, &g);
    free(text);
    if (rc != 0) {
        if (g.ntensors != 0 || strstr(tether_last_error(), "fuzz.json") == NULL) {
            abort();
        }
        return 0;
    }
    size_t total = 0;
    for (int i = 0; i < g.ntensors; i++) {
        total += tether_ir_tensor_elements(&g.tensors[i]);
    }
    if (tether_passes_run(&g, NULL) == 0 && total < (1u << 20)) {
        tt_fuzz_plan_generate_run(&g, true);
    }
    tether_ir_close(&g);
    return 0;
}
