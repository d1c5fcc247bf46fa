/*
 * A stand-in for the `tether` CLI used by the compiler tests and benchmarks until host/cli links
 * tether_compiler: `compiler_driver compile ...` / `compiler_driver plan ...` call the same
 * entry points the CLI calls.
 */
#include <stdio.h>
#include <string.h>

#include "tether/compiler_cli.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: compiler_driver compile|plan ARGS...\n");
        return 2;
    }
    if (strcmp(argv[1], "compile") == 0) {
        return tether_cmd_compile(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "plan") == 0) {
        return tether_cmd_plan(argc - 1, argv + 1);
    }
    fprintf(stderr, "compiler_driver: unknown command '%s'\n", argv[1]);
    return 2;
}
