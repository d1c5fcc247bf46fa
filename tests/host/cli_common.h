/*
 * What the files of test_host_cli share (the `tether` CLI driven as a process): test_cli.c (main,
 * info/help/usage, a module's functions, --json, a hand-made artifact), test_cli_model.c (models
 * compiled and run, --reference, output files, named and .npz inputs, inputs checked before a
 * device, .npz bombs), test_cli_measure.c (ab, OpenCL, tune, interrupts, pools on tetherd,
 * progress, pictures); the helpers are in cli_common.c.
 *
 * Every test runs with setup/teardown: g_dir is a fresh directory, removed afterwards; a tetherd
 * a test starts is recorded in g_tetherd so that the teardown stops it when an assertion ends the
 * test early; g_limit (shell words before the command) is reset.
 */
#ifndef TETHER_TEST_CLI_COMMON_H
#define TETHER_TEST_CLI_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tether/crt.h"
#include "tether/npy.h"

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_TEST_ASAN 1
#endif
#endif

extern char g_dir[64];      /* the test's directory (the current directory of `tether`) */
extern const char *g_limit; /* shell words in front of the command (a memory limit) */
extern pid_t g_tetherd;     /* a tetherd a test started, 0 = none */

/* Runs `tether ARGS` in g_dir; returns the exit code, output (stdout+stderr) in a static buffer. */
int tether(const char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* g_dir/name: float32 [n] of base + i. */
void write_f32(const char *name, int64_t n, float base);
/* g_dir/name is float32 [16] of i + (100 + i) (add_packed of write_f32's a and b). */
void check_sum(const char *name);
/* Parses g_dir/name (written by a --json option); fails the test when it is not JSON. */
cJSON *read_json(const char *name);
/* A number / string member of o; fails the test when it is not one. */
double num(const cJSON *o, const char *key);
const char *str(const cJSON *o, const char *key);
/* g_dir/name exists. */
int exists(const char *name);
/* g_dir/name read; fails the test when it cannot be. */
tether_npy read_npy(const char *name);
int setup(void **state);
int teardown(void **state);
#ifdef TETHER_HAVE_COMPILER
/* g_dir/mfcc.npy: a fixed input of the KWS example (1x1x49x10). */
void write_mfcc(void);
/* g_dir/two.json: a model with two named inputs (a, b) and outputs (s = a + b, p = a * b). */
void write_two_io_model(void);
#endif

/* The tests, in the order main runs them. */
void test_usage_errors(void **state);
void test_info_consistent(void **state);
void test_help_version(void **state);
void test_json_outputs(void **state);
void test_run_module(void **state);
void test_run_artifact(void **state);
#ifdef TETHER_HAVE_COMPILER
void test_run_model(void **state);
void test_run_reference(void **state);
void test_typed_io(void **state);
void test_named_and_npz(void **state);
void test_inputs_before_device(void **state);
void test_npz_bomb(void **state);
void test_progress(void **state);
void test_pictures(void **state);
void test_output_files(void **state);
void test_ab(void **state);
void test_ab_opencl_refused(void **state);
void test_opencl_json(void **state);
void test_interrupt_cleans_up(void **state);
void test_tune(void **state);
void test_tune_exhausted(void **state);
void test_pools_on_tetherd(void **state);
#endif

#endif
