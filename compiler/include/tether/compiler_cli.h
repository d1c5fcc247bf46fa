/*
 * tether compiler: subcommand entry points for the `tether` CLI (host/cli links tether_compiler).
 *
 * Each takes the subcommand's own argv (argv[0] is the subcommand name, e.g. "compile"),
 * prints usage on --help, writes errors to stderr as one line "tether <cmd>: <reason>" and
 * returns a process exit code: 0 ok, 1 the work failed (model error, build error), 2 bad usage.
 */
#ifndef TETHER_COMPILER_CLI_H
#define TETHER_COMPILER_CLI_H

#include "tether/compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The memory options every command that compiles a C model takes (compile, run, bench):
 * --pool NAME:SCOPE:SIZE (repeatable, fastest first), --pin TENSOR=POOL (repeatable),
 * --plan-inputs, --plan-outputs, --params-pool NAME. opts points into the struct itself: do not
 * copy it. */
#define TETHER_CLI_MAX_POOLS 8
#define TETHER_CLI_MAX_PINS  64
typedef struct tether_memory_cli {
    tether_plan_pool pools[TETHER_CLI_MAX_POOLS];
    char names[TETHER_CLI_MAX_POOLS][TETHER_POOL_NAME_MAX];
    const char *pins[TETHER_CLI_MAX_PINS];
    bool from_device[TETHER_CLI_MAX_POOLS]; /* "--pool NAME": size from the device's HELLO */
    tether_memory_options opts;
} tether_memory_cli;

void tether_memory_cli_init(tether_memory_cli *m);
/* Takes argv[*i] when it is a memory option (a value moves *i past it). Returns 1 taken, 0 not
 * a memory option, 2 bad usage (printed as "tether CMD: reason"). */
int tether_memory_cli_parse(tether_memory_cli *m, const char *cmd, int argc, char **argv, int *i);
/* Whether any memory option was given. */
int tether_memory_cli_given(const tether_memory_cli *m);
/* "--pool NAME" without scope and size takes the size of the device's pool of that name:
 * resolves every such pool against the device's HELLO pools (names[i], sizes[i], 0 = no limit).
 * npools < 0: no device (then such a pool is an error). Returns 0, or 2 after printing why. */
int tether_memory_cli_resolve(tether_memory_cli *m, const char *cmd, int npools,
                              const char (*names)[128], const uint64_t *sizes);

/* tether compile MODEL -o DIR [--abi packed|unpacked] [--interface packed|c]
 *                [--target NAME] [--prefix NAME] [--opt-level 0|1|2|3|s] [--params linked|blob]
 *                [--planner ALGO] [--no-build] [--no-passes] [--dump-ir] [--quiet]
 *                [--input-shape NAME=D0xD1...]... [--pool NAME:SCOPE:SIZE]... [--pin T=POOL]...
 *                [--plan-inputs] [--plan-outputs] */
int tether_cmd_compile(int argc, char **argv);

/* tether compile with the parsed options handed to hook(ctx, o, mem) before anything is loaded
 * or compiled (the host CLI's `compile --device/--upload` completes them for the device through
 * the host library, tether/device_compile.h). mem's "--pool NAME" pools (from_device) must be
 * resolved by the hook; o->memory may be pointed elsewhere. A non-zero return is the command's
 * exit code (the hook printed why). */
typedef int (*tether_compile_hook)(void *ctx, tether_compile_options *o, tether_memory_cli *mem);
int tether_cmd_compile_with(int argc, char **argv, tether_compile_hook hook, void *ctx);

/* tether plan MODEL [--planner ALGO] [--pool SPEC] [--svg FILE] [--json FILE] ...: turns the
 * model's intermediate tensors into the planner's buffer list and prints the plan report. */
int tether_cmd_plan(int argc, char **argv);

/* tether import MODEL -o OUT.json [--weights FILE] [--input-shape NAME=D0xD1...]...: loads a model
 * of any registered format (the CLI registers .onnx) and writes it as a JSON model plus weights
 * (nothing is left behind on failure). */
int tether_cmd_import(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_COMPILER_CLI_H */
