/*
 * tether crt: the two calling conventions of compiled operators (normative text: docs/abi.md).
 *
 * Packed ABI: one generic signature for every function. Arguments travel as an array of
 * tether_value plus a parallel array of type codes (TVM-compatible numbering), so one caller can
 * invoke any function and the callee checks ndim/dtype/shape itself.
 *
 *   int32_t f(tether_value *args, int32_t *type_codes, int32_t num_args,
 *             tether_value *ret, int32_t *ret_type_code, void *resource_handle);
 *
 * Unpacked ABI: plain typed pointers, shapes baked into the code, no DLTensor:
 *
 *   int32_t f(const float *restrict a, const float *restrict b, float *restrict out);
 *
 * A caller that only knows the argument count (an RPC server) goes through tether_call(), which
 * turns NDArray arguments into data pointers and dispatches on the count (up to
 * TETHER_MAX_UNPACKED_ARGS). Every function returns 0 on success, non-zero on error.
 */
#ifndef TETHER_CRT_ABI_H
#define TETHER_CRT_ABI_H

#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One argument or return value of a packed function. */
typedef union tether_value {
    int64_t v_int64;
    double v_float64;
    void *v_handle;
    const char *v_str;
} tether_value;

/* Type codes of packed arguments (numbering shared with TVM's packed functions). */
typedef enum tether_type_code {
    TETHER_TYPE_INT = 0,      /* v_int64 */
    TETHER_TYPE_UINT = 1,     /* v_int64, reinterpreted as unsigned */
    TETHER_TYPE_FLOAT = 2,    /* v_float64 */
    TETHER_TYPE_HANDLE = 3,   /* v_handle, opaque pointer */
    TETHER_TYPE_NULL = 4,     /* no value */
    TETHER_TYPE_DLTENSOR = 7, /* v_handle is a DLTensor* */
    TETHER_TYPE_STR = 11,     /* v_str, NUL-terminated */
} tether_type_code;

typedef enum tether_abi {
    TETHER_ABI_PACKED = 0,
    TETHER_ABI_UNPACKED = 1,
} tether_abi;

/* Most arguments of one call, both ABIs (also the wire limit, see docs/rpc.md). */
#define TETHER_MAX_ARGS 64
/* Most pointer arguments tether_call can pass to an unpacked function. */
#define TETHER_MAX_UNPACKED_ARGS 24

typedef int32_t (*tether_packed_func)(tether_value *args, int32_t *type_codes, int32_t num_args,
                                      tether_value *ret, int32_t *ret_type_code,
                                      void *resource_handle);

/* An unpacked function of unknown arity, stored type-erased (void (*)(void) is C's generic
 * function pointer); tether_call casts it back to `int32_t (*)(void *, ...)` with the right
 * number of pointer parameters. Store with `(tether_unpacked_func)my_operator`. */
typedef void (*tether_unpacked_func)(void);

/* Parses "packed" / "unpacked"; the name of an ABI (NULL when out of range). */
int tether_abi_parse(const char *name, tether_abi *out);
const char *tether_abi_name(tether_abi abi);

/* Name of a type code ("int", "float", "handle", "null", "dltensor", "str"; NULL otherwise). */
const char *tether_type_code_name(int32_t code);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_ABI_H */
