/*
 * `--custom-ops FILE` for every command (see custom_ops_cli.h): taken out of argv, loaded with
 * tether_custom_registry_load and made the default registry of model loads, so run, bench, ab,
 * compile, plan, tune and profile need no option of their own.
 *
 * What must stay true: given twice is a usage error; a registry that does not load stops the
 * command before it does anything (exit 1, the registry's message); the registry lives until
 * exit.
 */
#include "custom_ops_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether/crt.h"
#include "tether/custom_ops.h"

static tether_custom_registry *loaded;

static void release(void) {
    tether_custom_ops_set_default(NULL);
    tether_custom_registry_free(loaded);
    loaded = NULL;
}

int tether_cli_custom_ops_take(const char *cmd, int *argc, char **argv) {
    const char *path = NULL;
    int k = 0;
    for (int i = 0; i < *argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        if (i >= 2 && !strcmp(a, "--custom-ops")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "tether %s: --custom-ops needs a registry file (ops.json)\n", cmd);
                return 2;
            }
            v = argv[++i];
        } else if (i >= 2 && !strncmp(a, "--custom-ops=", 13)) {
            v = a + 13;
        } else {
            argv[k++] = argv[i];
            continue;
        }
        if (path) {
            fprintf(stderr, "tether %s: --custom-ops given twice\n", cmd);
            return 2;
        }
        path = v;
    }
    *argc = k;
    argv[k] = NULL;
    if (!path) {
        return 0;
    }
    if (tether_custom_registry_load(path, &loaded)) {
        fprintf(stderr, "tether %s: %s\n", cmd, tether_last_error());
        return 1;
    }
    tether_custom_ops_set_default(loaded);
    atexit(release);
    return 0;
}
