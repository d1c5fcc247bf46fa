/*
 * tether crt: how N-d tensors map onto 2D RGBA images.
 *
 * Two conventions (after TVM's texture-memory design); the innermost dimension is the texel's
 * channels: 1, 2 or 4 for `texture` (R, RG, RGBA; 3 is refused, nothing is padded implicitly),
 * exactly 4 (RGBA) for `texture:weight`:
 *   texture         [d0, ..., d(n-3), d(n-2), C] -> height = d0*...*d(n-3), width = d(n-2)
 *                   e.g. activations NCHW4c [1, 8, 32, 32, 4] -> 32 wide, 256 high
 *   texture:weight  [d0, d1, ..., d(n-2), 4]     -> height = d0, width = d1*...*d(n-2)
 *                   e.g. weights OIHW4o [16, 4, 3, 3, 4] -> 36 wide, 16 high
 * The resulting extent is checked against the device's image limits passed in by the caller
 * (CL_DEVICE_IMAGE2D_MAX_WIDTH/HEIGHT: 8192 on PoCL, 16384 on Adreno). Going over is an error
 * naming the limit; nothing is ever truncated.
 *
 * Separately, tether_image_validate checks the packed-image resource contract used by image
 * arguments of custom kernels: shape [H, W, C] or [1, H, W, C] with C in {1, 2, 4} (R, RG,
 * RGBA). C = 3 is rejected: pad to 4 explicitly or pass the tensor as a buffer.
 */
#ifndef TETHER_CRT_TEXTURE_H
#define TETHER_CRT_TEXTURE_H

#include <stdint.h>

#include "tether/crt/scope.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_image_extent {
    int64_t width;    /* texels per row */
    int64_t height;   /* rows */
    int32_t channels; /* components per texel: 1, 2 or 4 (R, RG, RGBA; texture:weight 4) */
} tether_image_extent;

/* Computes the 2D extent of a tensor stored in a texture scope and checks it against
 * max_width x max_height (0 = no limit). The image contract: the innermost dimension is the
 * texel's channels, 1, 2 or 4 for `texture` (R, RG, RGBA; 3 is refused with what to do, nothing
 * is padded implicitly) and 4 for `texture:weight`; a `texture` array of rank 4 or more has batch
 * 1 (dimension 0). Errors: TETHER_ERR_INVALID_ARG for a non-texture scope or a bad shape,
 * TETHER_ERR_UNSUPPORTED for 3 channels, TETHER_ERR_MISMATCH for other channel counts or a batch
 * above 1, TETHER_ERR_LIMIT when the extent is over a limit (the message names the limit and the
 * value). */
int tether_texture_extent(tether_scope scope, const int64_t *shape, int ndim, int64_t max_width,
                          int64_t max_height, tether_image_extent *out);

/* Validates the packed-image contract: [H, W, C] or [1, H, W, C], C in {1, 2, 4}, H, W >= 1 and
 * within max_width x max_height (0 = no limit). Fills out on success. */
int tether_image_validate(const int64_t *shape, int ndim, int64_t max_width, int64_t max_height,
                          tether_image_extent *out);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_TEXTURE_H */
