/*
 * N-d -> 2D image flattening for the texture scopes, and the packed-image contract check.
 * Invariant: an extent is returned only if it fits the limits given; products never overflow
 * (every partial product is checked against the limit before it grows further).
 */
#include "tether/crt/error.h"
#include "tether/crt/ndarray.h"
#include "tether/crt/texture.h"

/* Product of shape[from..to), saturating at 2^62 so that it can be compared with any limit. */
static int64_t saturating_product(const int64_t *shape, int from, int to) {
    const int64_t cap = (int64_t)1 << 62;
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        p = shape[i] > cap / p ? cap : p * shape[i];
    }
    return p;
}

static int check_dims(const int64_t *shape, int ndim, int min_ndim, const char *what) {
    if (shape == NULL || ndim < min_ndim || ndim > TETHER_MAX_NDIM) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "%s needs %d to %d dimensions, got %d",
                                what, min_ndim, TETHER_MAX_NDIM, ndim);
    }
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "%s: dimension %d is %lld, must be at least 1", what, i,
                                    (long long)shape[i]);
        }
    }
    return TETHER_OK;
}

static int check_limit(const char *scope, const char *axis, int64_t value, int64_t limit,
                       const char *limit_name) {
    if (limit > 0 && value > limit) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "%s image %s %lld exceeds the device limit %s = %lld", scope, axis,
                                (long long)value, limit_name, (long long)limit);
    }
    return TETHER_OK;
}

int tether_texture_extent(tether_scope scope, const int64_t *shape, int ndim, int64_t max_width,
                          int64_t max_height, tether_image_extent *out) {
    if (!tether_scope_is_texture(scope) || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "texture extent asked for scope '%s', which is not a texture",
                                tether_scope_name(scope) ? tether_scope_name(scope) : "?");
    }
    const char *name = tether_scope_name(scope);
    int rc = check_dims(shape, ndim, 2, name);
    if (rc != TETHER_OK) {
        return rc;
    }
    int64_t c = shape[ndim - 1];
    if (scope == TETHER_SCOPE_TEXTURE && c == 3) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "texture arrays cannot have 3 channels (no RGB image format is "
                                "used, nothing is padded implicitly); pad the channels to 4 "
                                "explicitly or keep the tensor in the global scope");
    }
    if (scope == TETHER_SCOPE_TEXTURE ? (c != 1 && c != 2 && c != 4) : c != 4) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "%s arrays need an innermost dimension of %s, got %lld; pack "
                                "the channels into blocks of 4 first",
                                name,
                                scope == TETHER_SCOPE_TEXTURE ? "1, 2 or 4 (R, RG or RGBA texels)"
                                                              : "4 (one RGBA texel)",
                                (long long)c);
    }
    if (scope == TETHER_SCOPE_TEXTURE && ndim >= 4 && shape[0] != 1) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "texture arrays of rank %d need batch 1 (N = 1), got %lld; "
                                "run the batch as separate arrays or keep it in the global "
                                "scope",
                                ndim, (long long)shape[0]);
    }
    int64_t width, height;
    if (scope == TETHER_SCOPE_TEXTURE) {
        /* [d0 .. d(n-3), d(n-2), 4]: rows are everything but the last two dims */
        width = shape[ndim - 2];
        height = saturating_product(shape, 0, ndim - 2);
    } else {
        /* [d0, d1 .. d(n-2), 4]: one row per d0, the rest flattened into the row */
        height = shape[0];
        width = saturating_product(shape, 1, ndim - 1);
    }
    rc = check_limit(name, "width", width, max_width, "CL_DEVICE_IMAGE2D_MAX_WIDTH");
    if (rc == TETHER_OK) {
        rc = check_limit(name, "height", height, max_height, "CL_DEVICE_IMAGE2D_MAX_HEIGHT");
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    out->width = width;
    out->height = height;
    out->channels = (int32_t)c;
    return TETHER_OK;
}

int tether_image_validate(const int64_t *shape, int ndim, int64_t max_width, int64_t max_height,
                          tether_image_extent *out) {
    if (ndim != 3 && ndim != 4) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image-backed tensors must be [H, W, C] or [1, H, W, C], got "
                                "%d dimensions",
                                ndim);
    }
    int rc = check_dims(shape, ndim, 3, "image");
    if (rc != TETHER_OK) {
        return rc;
    }
    if (ndim == 4 && shape[0] != 1) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image-backed tensors of rank 4 need batch 1, got %lld",
                                (long long)shape[0]);
    }
    int64_t h = shape[ndim - 3], w = shape[ndim - 2], c = shape[ndim - 1];
    if (c == 3) {
        return tether_set_error(TETHER_ERR_UNSUPPORTED,
                                "image-backed tensors cannot have 3 channels (no RGB image "
                                "format is used); pad to 4 channels explicitly or pass the "
                                "tensor as a buffer");
    }
    if (c != 1 && c != 2 && c != 4) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "image-backed tensors need C in {1, 2, 4} (R, RG, RGBA), got "
                                "C = %lld",
                                (long long)c);
    }
    rc = check_limit("packed", "width", w, max_width, "CL_DEVICE_IMAGE2D_MAX_WIDTH");
    if (rc == TETHER_OK) {
        rc = check_limit("packed", "height", h, max_height, "CL_DEVICE_IMAGE2D_MAX_HEIGHT");
    }
    if (rc != TETHER_OK) {
        return rc;
    }
    if (out != NULL) {
        out->width = w;
        out->height = h;
        out->channels = (int32_t)c;
    }
    return TETHER_OK;
}
