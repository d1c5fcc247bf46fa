/* Example custom operator (docs/custom-ops.md): swish y = x * sigmoid(x), the C implementation
 * for tetherd and MCU targets, on the dense NHWC tensor the contract describes. */
#include <math.h>

int32_t swish_nhwc(const tether_custom_tensor *inputs, int32_t ninputs,
                   const tether_custom_tensor *outputs, int32_t noutputs) {
    if (ninputs != 1 || noutputs != 1) {
        return -1;
    }
    int64_t n = 1;
    for (int32_t d = 0; d < inputs[0].ndim; d++) {
        n *= inputs[0].shape[d];
    }
    const float *x = (const float *)inputs[0].data;
    float *y = (float *)outputs[0].data;
    for (int64_t i = 0; i < n; i++) {
        y[i] = x[i] / (1.0f + expf(-x[i]));
    }
    return 0;
}
