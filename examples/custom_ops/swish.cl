/* Example custom operator (docs/custom-ops.md): swish y = x * sigmoid(x) on a packed NHWC
 * image, one work-item per pixel (work_size [W, H]); C = 4 channels per texel. */
__constant sampler_t swish_sampler =
    CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;

__kernel void swish_image(__read_only image2d_t x, __write_only image2d_t y) {
    const int2 p = (int2)((int)get_global_id(0), (int)get_global_id(1));
    const float4 v = read_imagef(x, swish_sampler, p);
    write_imagef(y, p, v / (1.0f + exp(-v)));
}
