/*
 * `--custom-ops FILE` for every tether command that loads a model (compile, plan, run, bench,
 * ab, tune, profile): the registry of the user's custom operators (docs/custom-ops.md).
 *
 * What must stay true: the option is taken out of argv before the command parses it, so each
 * command sees its own options only; the registry is loaded and checked once, before anything
 * else, and stays loaded until exit (graphs point at it).
 */
#ifndef TETHER_CLI_CUSTOM_OPS_H
#define TETHER_CLI_CUSTOM_OPS_H

/* Removes every `--custom-ops FILE` (or `--custom-ops=FILE`) from argv (argv[0] is the tether
 * program, argv[1] the command), loads the registry and makes it the default of model loads.
 * Returns 0, or the exit code after printing why (2: usage, 1: the registry is bad). */
int tether_cli_custom_ops_take(const char *cmd, int *argc, char **argv);

#endif
