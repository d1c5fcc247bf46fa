/*
 * tether crt: storage scopes and memory pools.
 *
 * A storage scope says how an array is laid out and accessed:
 *   "global"          plain linear memory (host RAM, an OpenCL buffer, MCU SRAM)
 *   "texture"         a 2D RGBA image holding activations (see texture.h for the flattening)
 *   "texture:weight"  a 2D RGBA image holding weights (different flattening)
 * A pool says where memory comes from ("sram", "dram", "global.workspace", ...). Scope and pool
 * are separate: a global-scope array can live in the "sram" or the "dram" pool. Pool names are
 * free-form identifiers; scope names are the closed set above.
 */
#ifndef TETHER_CRT_SCOPE_H
#define TETHER_CRT_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tether_scope {
    TETHER_SCOPE_GLOBAL = 0,
    TETHER_SCOPE_TEXTURE = 1,
    TETHER_SCOPE_TEXTURE_WEIGHT = 2,
} tether_scope;

#define TETHER_SCOPE_COUNT 3

/* Longest pool name, including the NUL. */
#define TETHER_POOL_NAME_MAX 32

/* Parses "global", "texture" or "texture:weight" (exact, case-sensitive). An unknown name gives
 * TETHER_ERR_NOT_FOUND with a message listing the valid scopes. */
int tether_scope_parse(const char *name, tether_scope *out);

/* The canonical name of a scope, or NULL for a value outside the enum. */
const char *tether_scope_name(tether_scope scope);

/* True for the image-backed scopes (texture, texture:weight). */
bool tether_scope_is_texture(tether_scope scope);

/* Checks a pool name: 1..TETHER_POOL_NAME_MAX-1 characters of [A-Za-z0-9_.-], starting with a
 * letter. TETHER_ERR_INVALID_ARG with a message naming the offending character otherwise. */
int tether_pool_name_check(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_CRT_SCOPE_H */
