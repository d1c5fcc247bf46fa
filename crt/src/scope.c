/*
 * Storage scope names and pool-name rules.
 * Invariant: scope names round-trip (parse(name(s)) == s) for every tether_scope value.
 */
#include <string.h>

#include "tether/crt/error.h"
#include "tether/crt/scope.h"

static const char *const scope_names[TETHER_SCOPE_COUNT] = {"global", "texture", "texture:weight"};

int tether_scope_parse(const char *name, tether_scope *out) {
    if (name == NULL || out == NULL) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "scope name is null");
    }
    for (int i = 0; i < TETHER_SCOPE_COUNT; i++) {
        if (strcmp(name, scope_names[i]) == 0) {
            *out = (tether_scope)i;
            return TETHER_OK;
        }
    }
    return tether_set_error(TETHER_ERR_NOT_FOUND,
                            "unknown storage scope '%.40s' (valid: global, texture, "
                            "texture:weight; pools such as 'sram' are given separately)",
                            name);
}

const char *tether_scope_name(tether_scope scope) {
    if ((unsigned)scope >= TETHER_SCOPE_COUNT) {
        return NULL;
    }
    return scope_names[scope];
}

bool tether_scope_is_texture(tether_scope scope) {
    return scope == TETHER_SCOPE_TEXTURE || scope == TETHER_SCOPE_TEXTURE_WEIGHT;
}

static bool is_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int tether_pool_name_check(const char *name) {
    if (name == NULL || name[0] == '\0') {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "pool name is empty");
    }
    if (!is_letter(name[0])) {
        return tether_set_error(TETHER_ERR_INVALID_ARG,
                                "pool name '%.40s' must start with a letter", name);
    }
    size_t n = 0;
    for (; name[n] != '\0'; n++) {
        char c = name[n];
        bool ok = is_letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) {
            return tether_set_error(TETHER_ERR_INVALID_ARG,
                                    "pool name '%.40s' has invalid character at position %zu "
                                    "(allowed: letters, digits, '_', '.', '-')",
                                    name, n);
        }
        if (n + 1 >= TETHER_POOL_NAME_MAX) {
            return tether_set_error(TETHER_ERR_LIMIT,
                                    "pool name '%.40s...' is longer than %d "
                                    "characters",
                                    name, TETHER_POOL_NAME_MAX - 1);
        }
    }
    return TETHER_OK;
}
