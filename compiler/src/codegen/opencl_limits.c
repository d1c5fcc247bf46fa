/*
 * The device limits an OpenCL compile sizes its kernels by (tether_opencl_options'
 * max_work_group_size, wg_multiple, local_mem_size, compute_units; docs/codegen.md "GPU
 * kernels"): each as given (by a --device's HELLO, or by API), or its default when 0. The one
 * place that names the defaults for the compile report and the kernel source's header comment.
 *
 * What must stay true: the defaults here are the ones the kernels use (emit_opencl_gpu.c,
 * emit_opencl_splitk.c, emit_opencl_rows.c: 256, 32, 16 KiB, 16); the text says which limits
 * are defaults, so a report never passes a default off as the device's.
 */
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "tether/compiler.h"

void tether__ocl_limits_get(const tether_opencl_options *o, tether__ocl_limits *l) {
    memset(l, 0, sizeof *l);
    l->max_work_group_size = o->max_work_group_size > 0 ? o->max_work_group_size : 256;
    l->wg_multiple = o->wg_multiple > 0 ? o->wg_multiple : 32;
    l->local_mem_size = o->local_mem_size > 0 ? o->local_mem_size : 16384;
    l->compute_units = o->compute_units > 0 ? o->compute_units : 16;
    l->defaulted = (o->max_work_group_size > 0 ? 0u : 1u) | (o->wg_multiple > 0 ? 0u : 2u) |
                   (o->local_mem_size > 0 ? 0u : 4u) | (o->compute_units > 0 ? 0u : 8u);
}

const char *tether__ocl_limit_name(int i) {
    static const char *const names[4] = {"max_work_group_size", "wg_multiple", "local_mem_size",
                                         "compute_units"};
    return i >= 0 && i < 4 ? names[i] : "";
}

void tether__ocl_limits_text(const tether__ocl_limits *l, char *buf, size_t n) {
    static const char *const words[4] = {"max work-group size", "preferred multiple",
                                         "local memory", "compute units"};
    int len = snprintf(buf, n,
                       "max work-group size %lld, preferred multiple %lld, local memory %lld "
                       "bytes, %lld compute units",
                       (long long)l->max_work_group_size, (long long)l->wg_multiple,
                       (long long)l->local_mem_size, (long long)l->compute_units);
    if (len < 0 || (size_t)len >= n) {
        return;
    }
    if (l->defaulted == 15u) {
        snprintf(buf + len, n - (size_t)len, " (the defaults: no device's limits given)");
        return;
    }
    if (l->defaulted == 0) {
        snprintf(buf + len, n - (size_t)len, " (as given: a --device's HELLO or the options)");
        return;
    }
    len += snprintf(buf + len, n - (size_t)len, " (defaults for:");
    for (int i = 0; i < 4 && (size_t)len < n; i++) {
        if (l->defaulted & (1u << i)) {
            len += snprintf(buf + len, n - (size_t)len, " %s", words[i]);
        }
    }
    if ((size_t)len < n) {
        snprintf(buf + len, n - (size_t)len, ")");
    }
}
