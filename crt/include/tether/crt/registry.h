/*
 * tether crt: the function registry ("system library") and the generic call.
 *
 * A registry is a static, read-only table name -> function pointer + ABI + argument count,
 * usually emitted by the compiler next to the operators it generates, or written by hand in
 * firmware. Lookups are by exact name. Nothing is allocated; the table is owned by the caller
 * (normally `static const` data) and must outlive every lookup result.
 *
 * tether_call runs any entry with packed-style arguments: packed entries get them as they are;
 * unpacked entries get one pointer per argument (a DLTensor's data + byte_offset, a handle's
 * pointer). Scalars cannot be passed to unpacked functions (their types are not known here).
 */
#ifndef TETHER_CRT_REGISTRY_H
#define TETHER_CRT_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "tether/crt/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tether_func_entry {
    const char *name;
    tether_abi abi;
    int32_t num_args; /* arguments the function takes; -1 = any (packed functions only) */
    union {
        tether_packed_func packed;
        tether_unpacked_func unpacked;
    } fn;
} tether_func_entry;

typedef struct tether_func_registry {
    const tether_func_entry *entries;
    size_t count;
} tether_func_registry;

/* Finds `name`. TETHER_ERR_NOT_FOUND (message names the function) when absent. */
int tether_registry_find(const tether_func_registry *reg, const char *name,
                         const tether_func_entry **out);

/* Checks a table: names non-empty and unique, ABI valid, function pointer set, argument count
 * within the ABI's limit. Reports the first bad entry by index and name. */
int tether_registry_check(const tether_func_registry *reg);

/*
 * Calls an entry. Checks num_args against the entry (TETHER_ERR_MISMATCH), the argument kinds
 * for unpacked functions (only DLTENSOR, HANDLE and NULL) and the limits. *func_ret receives the
 * function's own return code; the status is TETHER_OK when the call happened, whatever the
 * function returned. ret/ret_type_code may be NULL for unpacked entries.
 */
int tether_call(const tether_func_entry *entry, tether_value *args, int32_t *type_codes,
                int32_t num_args, int32_t *func_ret);

/* Calls an unpacked function with n pointer arguments (n <= TETHER_MAX_UNPACKED_ARGS). */
int tether_call_unpacked(tether_unpacked_func fn, void *const *ptrs, int32_t n, int32_t *func_ret);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_REGISTRY_H */
