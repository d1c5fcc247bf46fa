/*
 * test_host_dynamic: outputs of data-dependent size (docs/onnx.md "Data-dependent output sizes",
 * docs/cli.md) through the CLI on local:: a JSON model whose output is a NonZero with its bound
 * capped at 4. run, bench, run --reference and a compiled artifact write the output at its actual
 * shape and no file for its extent output; metadata.json marks the output and its extent; ab
 * compares it exactly; a count above the bound is an error naming the output and the bound; an
 * artifact whose metadata disagrees about the extent is refused before the device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_common.h"

static void write_model(void) {
    char p[256];
    snprintf(p, sizeof p, "%s/nz.json", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"format\":\"tether-model\",\"version\":1,\"name\":\"nz\",\"tensors\":["
          "{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[6]}],"
          "\"inputs\":[\"x\"],\"outputs\":[\"y\"],\"nodes\":["
          "{\"name\":\"nz\",\"op\":\"nonzero\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
          "\"attrs\":{\"ints\":[4]}}]}\n",
          f);
    fclose(f);
}

static void write_x(const char *name, const float *v) {
    char p[256];
    int64_t n = 6;
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, &n, 1, v), 0);
}

/* name holds int64 [1, 2] = {1, 4} (the nonzero positions of two.npy). */
static void check_y(const char *name) {
    tether_npy n = read_npy(name);
    assert_true(tether_dtype_equal(n.dtype, TETHER_INT64));
    assert_int_equal(n.ndim, 2);
    assert_int_equal(n.shape[0], 1);
    assert_int_equal(n.shape[1], 2);
    assert_int_equal(((int64_t *)n.data)[0], 1);
    assert_int_equal(((int64_t *)n.data)[1], 4);
    tether_npy_free(&n);
}

static const float two[6] = {0, 3, 0, 0, -1, 0}, five[6] = {1, 2, 0, 4, 5, 6};

static void test_run_trims(void **state) {
    (void)state;
    write_model();
    write_x("two.npy", two);
    write_x("five.npy", five);
    const char *o;
    if (tether(&o, "run nz.json --in two.npy --out y.npy")) {
        fail_msg("%s", o);
    }
    check_y("y.npy");
    if (tether(&o, "run nz.json --in two.npy")) { /* default names: out0.npy only */
        fail_msg("%s", o);
    }
    check_y("out0.npy");
    assert_false(exists("out1.npy"));
    if (tether(&o, "bench nz.json --in two.npy --repeat 2 --out b.npy")) {
        fail_msg("%s", o);
    }
    check_y("b.npy");
    if (tether(&o, "run nz.json --reference --in two.npy --out r.npy")) {
        fail_msg("%s", o);
    }
    check_y("r.npy");
    /* the extent output is not among the outputs to name */
    assert_int_equal(tether(&o, "run nz.json --in two.npy --out a.npy --out b.npy"), 2);
    assert_non_null(strstr(o, "1 outputs, 2 --out given"));
    /* over the bound: an error naming the output and the bound, no file */
    assert_int_equal(tether(&o, "run nz.json --in five.npy --out over.npy"), 1);
    assert_non_null(strstr(o, "output 'y' (at most 4 along dimension 1)"));
    assert_false(exists("over.npy"));
    assert_int_equal(tether(&o, "run nz.json --reference --in five.npy --out over.npy"), 1);
    assert_non_null(strstr(o, "more than its bound 4"));
    assert_false(exists("over.npy"));
    /* ab: the actual shapes compared, exactly */
    if (tether(&o, "ab nz.json --in two.npy --repeat 2 --min-repeat-ms 1")) {
        fail_msg("%s", o);
    }
    assert_non_null(strstr(o, "'y' (int64)"));
    assert_non_null(strstr(o, "equal (exact)"));
    assert_null(strstr(o, "NO"));
}

static void test_artifact_metadata(void **state) {
    (void)state;
    write_model();
    write_x("two.npy", two);
    const char *o;
    if (tether(&o, "compile nz.json -o art --quiet")) {
        fail_msg("%s", o);
    }
    cJSON *m = read_json("art/metadata.json");
    const cJSON *outs = cJSON_GetObjectItem(m, "outputs");
    assert_int_equal(cJSON_GetArraySize(outs), 2);
    const cJSON *y = cJSON_GetArrayItem(outs, 0), *e = cJSON_GetArrayItem(outs, 1);
    assert_string_equal(str(y, "name"), "y");
    assert_int_equal((int)num(y, "dynamic_dim"), 1);
    assert_int_equal((int)num(y, "extent_output"), 1);
    assert_int_equal((int)cJSON_GetArrayItem(cJSON_GetObjectItem(y, "shape"), 1)->valuedouble, 4);
    assert_string_equal(str(e, "name"), "y_extent");
    assert_int_equal((int)num(e, "extent_of"), 0);
    assert_null(cJSON_GetObjectItem(e, "dynamic_dim"));
    if (tether(&o, "run art --in two.npy --out y.npy --json run.json")) {
        fail_msg("%s", o);
    }
    check_y("y.npy");
    cJSON *j = read_json("run.json");
    const cJSON *jo = cJSON_GetObjectItem(j, "outputs");
    assert_int_equal(cJSON_GetArraySize(jo), 1);
    cJSON_Delete(j);
    /* metadata that disagrees about the extent: refused before the device */
    cJSON_ReplaceItemInObject((cJSON *)e, "extent_of", cJSON_CreateNumber(1));
    char *txt = cJSON_Print(m);
    char p[256];
    snprintf(p, sizeof p, "%s/art/metadata.json", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(txt, f);
    fclose(f);
    free(txt);
    cJSON_Delete(m);
    assert_int_equal(tether(&o, "run art --in two.npy --out bad.npy --device tcp://127.0.0.1:1"),
                     1);
    assert_non_null(strstr(o, "dynamic_dim, extent_output and extent_of do not agree"));
    assert_false(exists("bad.npy"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_run_trims, setup, teardown),
        cmocka_unit_test_setup_teardown(test_artifact_metadata, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
