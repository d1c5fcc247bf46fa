/*
 * ABI names, the function registry and the generic call (packed or unpacked).
 * Invariant: tether_call never invokes a function whose argument count or kinds were not checked.
 */
#include <stdbool.h>
#include <string.h>

#include "tether/crt/error.h"
#include "tether/crt/registry.h"

int tether_abi_parse(const char *name, tether_abi *out) {
    if (name != NULL && out != NULL) {
        if (strcmp(name, "packed") == 0) {
            *out = TETHER_ABI_PACKED;
            return TETHER_OK;
        }
        if (strcmp(name, "unpacked") == 0) {
            *out = TETHER_ABI_UNPACKED;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND, "unknown ABI '%.40s' (valid: packed, unpacked)",
                            name ? name : "(null)");
}

const char *tether_abi_name(tether_abi abi) {
    switch (abi) {
    case TETHER_ABI_PACKED:
        return "packed";
    case TETHER_ABI_UNPACKED:
        return "unpacked";
    default:
        return NULL;
    }
}

const char *tether_type_code_name(int32_t code) {
    switch (code) {
    case TETHER_TYPE_INT:
        return "int";
    case TETHER_TYPE_UINT:
        return "uint";
    case TETHER_TYPE_FLOAT:
        return "float";
    case TETHER_TYPE_HANDLE:
        return "handle";
    case TETHER_TYPE_NULL:
        return "null";
    case TETHER_TYPE_DLTENSOR:
        return "dltensor";
    case TETHER_TYPE_STR:
        return "str";
    default:
        return NULL;
    }
}

int tether_registry_find(const tether_func_registry *reg, const char *name,
                         const tether_func_entry **out) {
    if (reg == NULL || name == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "registry lookup: null argument");
    }
    *out = NULL;
    for (size_t i = 0; i < reg->count; i++) {
        if (reg->entries[i].name != NULL && strcmp(reg->entries[i].name, name) == 0) {
            *out = &reg->entries[i];
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "function '%.64s' is not in the registry (%zu "
                            "functions)",
                            name, reg->count);
}

int tether_registry_check(const tether_func_registry *reg) {
    if (reg == NULL || (reg->entries == NULL && reg->count > 0)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "registry is null");
    }
    for (size_t i = 0; i < reg->count; i++) {
        const tether_func_entry *e = &reg->entries[i];
        if (e->name == NULL || e->name[0] == '\0') {
            return tether_set_error(TETHER_ERR_INVALID_ARG, "registry entry %zu has no name", i);
        }
        if (tether_abi_name(e->abi) == NULL) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "registry entry %zu '%.64s' has invalid ABI %d", i, e->name,
                                    (int)e->abi);
        }
        bool has_fn = e->abi == TETHER_ABI_PACKED ? e->fn.packed != NULL : e->fn.unpacked != NULL;
        if (!has_fn) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "registry entry %zu '%.64s' has no function pointer", i,
                                    e->name);
        }
        int32_t max = e->abi == TETHER_ABI_PACKED ? TETHER_MAX_ARGS : TETHER_MAX_UNPACKED_ARGS;
        int32_t min = e->abi == TETHER_ABI_PACKED ? -1 : 0;
        if (e->num_args < min || e->num_args > max) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "registry entry %zu '%.64s' takes %d arguments, the %s ABI "
                                    "allows %d to %d",
                                    i, e->name, (int)e->num_args, tether_abi_name(e->abi), (int)min,
                                    (int)max);
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(reg->entries[j].name, e->name) == 0) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "registry entries %zu and %zu are both named '%.64s'", j, i,
                                        e->name);
            }
        }
    }
    return TETHER_OK;
}

typedef void *P;
#define P1  P
#define P2  P1, P
#define P3  P2, P
#define P4  P3, P
#define P5  P4, P
#define P6  P5, P
#define P7  P6, P
#define P8  P7, P
#define P9  P8, P
#define P10 P9, P
#define P11 P10, P
#define P12 P11, P
#define P13 P12, P
#define P14 P13, P
#define P15 P14, P
#define P16 P15, P
#define P17 P16, P
#define P18 P17, P
#define P19 P18, P
#define P20 P19, P
#define P21 P20, P
#define P22 P21, P
#define P23 P22, P
#define P24 P23, P
#define A1  a[0]
#define A2  A1, a[1]
#define A3  A2, a[2]
#define A4  A3, a[3]
#define A5  A4, a[4]
#define A6  A5, a[5]
#define A7  A6, a[6]
#define A8  A7, a[7]
#define A9  A8, a[8]
#define A10 A9, a[9]
#define A11 A10, a[10]
#define A12 A11, a[11]
#define A13 A12, a[12]
#define A14 A13, a[13]
#define A15 A14, a[14]
#define A16 A15, a[15]
#define A17 A16, a[16]
#define A18 A17, a[17]
#define A19 A18, a[18]
#define A20 A19, a[19]
#define A21 A20, a[20]
#define A22 A21, a[21]
#define A23 A22, a[22]
#define A24 A23, a[23]
#define CALL_N(n)                                                                                  \
    case n:                                                                                        \
        *func_ret = ((int32_t(*)(P##n))fn)(A##n);                                                  \
        break

int tether_call_unpacked(tether_unpacked_func fn, void *const *ptrs, int32_t n, int32_t *func_ret) {
    if (fn == NULL || func_ret == NULL || (n > 0 && ptrs == NULL)) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "unpacked call: null argument");
    }
    if (n < 0 || n > TETHER_MAX_UNPACKED_ARGS) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "unpacked call with %d arguments; at most %d are supported", (int)n,
                                TETHER_MAX_UNPACKED_ARGS);
    }
    void *const *a = ptrs;
    switch (n) {
    case 0:
        *func_ret = ((int32_t(*)(void))fn)();
        break;
        CALL_N(1);
        CALL_N(2);
        CALL_N(3);
        CALL_N(4);
        CALL_N(5);
        CALL_N(6);
        CALL_N(7);
        CALL_N(8);
        CALL_N(9);
        CALL_N(10);
        CALL_N(11);
        CALL_N(12);
        CALL_N(13);
        CALL_N(14);
        CALL_N(15);
        CALL_N(16);
        CALL_N(17);
        CALL_N(18);
        CALL_N(19);
        CALL_N(20);
        CALL_N(21);
        CALL_N(22);
        CALL_N(23);
        CALL_N(24);
    default:
        break;
    }
    return TETHER_OK;
}

int tether_call(const tether_func_entry *entry, tether_value *args, int32_t *type_codes,
                int32_t num_args, int32_t *func_ret) {
    if (entry == NULL || func_ret == NULL ||
        (num_args > 0 && (args == NULL || type_codes == NULL))) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "call: null argument");
    }
    if (num_args < 0 || num_args > TETHER_MAX_ARGS) {
        return tether_set_error(TETHER_ERR_LIMIT, "call of '%.64s' with %d arguments (max %d)",
                                entry->name, (int)num_args, TETHER_MAX_ARGS);
    }
    if (entry->num_args >= 0 && entry->num_args != num_args) {
        return tether_set_error(TETHER_ERR_MISMATCH,
                                "function '%.64s' takes %d arguments, the call passes %d",
                                entry->name, (int)entry->num_args, (int)num_args);
    }
    if (entry->abi == TETHER_ABI_PACKED) {
        tether_value ret = {0};
        int32_t ret_code = TETHER_TYPE_NULL;
        *func_ret = entry->fn.packed(args, type_codes, num_args, &ret, &ret_code, NULL);
        return TETHER_OK;
    }
    if (entry->abi != TETHER_ABI_UNPACKED) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "function '%.64s' has invalid ABI %d",
                                entry->name, (int)entry->abi);
    }
    if (num_args > TETHER_MAX_UNPACKED_ARGS) {
        return tether_set_error(TETHER_ERR_LIMIT,
                                "unpacked function '%.64s' called with %d arguments (max %d)",
                                entry->name, (int)num_args, TETHER_MAX_UNPACKED_ARGS);
    }
    void *ptrs[TETHER_MAX_UNPACKED_ARGS];
    for (int32_t i = 0; i < num_args; i++) {
        switch (type_codes[i]) {
        case TETHER_TYPE_DLTENSOR: {
            DLTensor *t = (DLTensor *)args[i].v_handle;
            if (t == NULL) {
                return tether_set_error(TETHER_ERR_INVALID_ARG,
                                        "argument %d of '%.64s' is a null tensor", (int)i,
                                        entry->name);
            }
            ptrs[i] = (uint8_t *)t->data + t->byte_offset;
            break;
        }
        case TETHER_TYPE_HANDLE:
            ptrs[i] = args[i].v_handle;
            break;
        case TETHER_TYPE_NULL:
            ptrs[i] = NULL;
            break;
        default: {
            const char *kind = tether_type_code_name(type_codes[i]);
            return tether_set_error(TETHER_ERR_MISMATCH,
                                    "argument %d of unpacked function '%.64s' is a %s; unpacked "
                                    "functions take only arrays and pointers",
                                    (int)i, entry->name, kind ? kind : "value of unknown type");
        }
        }
    }
    return tether_call_unpacked(entry->fn.unpacked, ptrs, num_args, func_ret);
}
