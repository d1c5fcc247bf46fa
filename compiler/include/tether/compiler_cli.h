/*
 * tether compiler: subcommand entry points for the `tether` CLI (host/cli links tether_compiler).
 *
 * Each takes the subcommand's own argv (argv[0] is the subcommand name, e.g. "compile"),
 * prints usage on --help, writes errors to stderr as one line "tether <cmd>: <reason>" and
 * returns a process exit code: 0 ok, 1 the work failed (model error, build error), 2 bad usage.
 */
#ifndef TETHER_COMPILER_CLI_H
#define TETHER_COMPILER_CLI_H

#ifdef __cplusplus
extern "C" {
#endif

/* tether compile MODEL -o DIR [--abi packed|unpacked] [--interface packed|c]
 *                [--target NAME] [--prefix NAME] [--opt-level 0|1|2|3|s] [--params linked|blob]
 *                [--planner ALGO] [--no-build] [--no-passes] [--dump-ir] [--quiet]
 *                [--input-shape NAME=D0xD1...]... */
int tether_cmd_compile(int argc, char **argv);

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
