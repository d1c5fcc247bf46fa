/*
 * test_opencl_codegen (codegen_common.h): texture activations (the storage-scope pass) on a
 * chain, the zoo, the conv net and the MobileNet-style block, equal to the interpreter and
 * through the CLI; images over a device's limits: named after the activations they hold, the
 * buffer variant run where they do not fit (saying why), refused with the image, its node and
 * what to recompile with when there is no variant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen_common.h"
#include "ops_common.h"
#include "tether/artifact.h"
#include "tether/file.h"
#include "tether/npy.h"

/* ---- texture activations (the storage-scope pass) ------------------------------------------ */

/* x[1,8,10,12] -> conv 3x3 (buffer -> texture) -> depthwise 3x3 -> pointwise, + the first conv's
 * output (a residual) -> sigmoid -> mul with the sum (both operands textures) -> conv 3x3 to 10
 * channels (texture -> a buffer graph output, a channel count that is not a multiple of 4). */
static void build_tex_chain(tether_ir_graph *g) {
    uint32_t seed = 3;
    assert_int_equal(tether_ir_init(g, "tex_chain"), 0);
    int64_t xs[4] = {1, 8, 10, 12}, w8[4] = {8, 8, 3, 3}, wd[4] = {8, 1, 3, 3},
            wp[4] = {8, 8, 1, 1}, w10[4] = {10, 8, 3, 3}, b8[1] = {8}, b10[1] = {10};
    int x, t[7];
    assert_int_equal(tether_ir_add_tensor(g, "x", TETHER_FLOAT32, 4, xs, &x), 0);
    assert_int_equal(tether_ir_add_input(g, x), 0);
    for (int i = 0; i < 7; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "t%d", i);
        assert_int_equal(tether_ir_add_tensor(g, nm, TETHER_FLOAT32, -1, NULL, &t[i]), 0);
    }
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int c1[3] = {x, tt_add_const(g, "w1", 4, w8, &seed), tt_add_const(g, "b1", 1, b8, &seed)};
    assert_int_equal(tether_ir_add_node(g, "conv1", TETHER_OP_CONV2D, c1, 3, &t[0], 1, &a, NULL),
                     0);
    a.groups = 8;
    a.strides[0] = a.strides[1] = 1;
    int c2[3] = {t[0], tt_add_const(g, "wd", 4, wd, &seed), tt_add_const(g, "bd", 1, b8, &seed)};
    assert_int_equal(tether_ir_add_node(g, "dw", TETHER_OP_CONV2D, c2, 3, &t[1], 1, &a, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    int c3[2] = {t[1], tt_add_const(g, "wp", 4, wp, &seed)};
    assert_int_equal(tether_ir_add_node(g, "pw", TETHER_OP_CONV2D, c3, 2, &t[2], 1, &a, NULL), 0);
    int ad[2] = {t[2], t[0]};
    assert_int_equal(tether_ir_add_node(g, "add", TETHER_OP_ADD, ad, 2, &t[3], 1, NULL, NULL), 0);
    assert_int_equal(
        tether_ir_add_node(g, "sig", TETHER_OP_SIGMOID, &t[3], 1, &t[4], 1, NULL, NULL), 0);
    int mu[2] = {t[4], t[3]};
    assert_int_equal(tether_ir_add_node(g, "mul", TETHER_OP_MUL, mu, 2, &t[5], 1, NULL, NULL), 0);
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.pads[0] = a.pads[1] = a.pads[2] = a.pads[3] = 1;
    int c4[3] = {t[5], tt_add_const(g, "w4", 4, w10, &seed), tt_add_const(g, "b4", 1, b10, &seed)};
    assert_int_equal(tether_ir_add_node(g, "conv4", TETHER_OP_CONV2D, c4, 3, &t[6], 1, &a, NULL),
                     0);
    assert_int_equal(tether_ir_add_output(g, t[6]), 0);
    assert_int_equal(tether_ir_infer(g), 0);
}

/* What the compile put in textures: texture memory objects and tensors in them (metadata.json),
 * fallbacks (report.json). */
static void texture_counts(const char *dir, int *textures, int *tensors, int *fallbacks) {
    char p[200], *text;
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    *textures = *tensors = 0;
    for (char *s = text; (s = strstr(s, "\"kind\":\t\"texture\"")); s++) {
        (*textures)++;
    }
    for (char *s = text; (s = strstr(s, "\"storage_scope\":\t\"texture\"")); s++) {
        (*tensors)++;
    }
    free(text);
    snprintf(p, sizeof p, "%s/report.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    char *f = strstr(text, "\"fallbacks\":");
    assert_non_null(f);
    *fallbacks = atoi(f + strlen("\"fallbacks\":"));
    free(text);
}

/* Texture and buffer artifacts give the interpreter's outputs: the chain above with and without
 * the passes (residual fused into the pointwise conv, or add/sigmoid/mul as texture kernels), the
 * zoo, the conv net and the MobileNet-style block; with tiny image limits every texture falls
 * back to a buffer and the results stay the same. */
void test_texture_activations(void **state) {
    (void)state;
    tether_ir_graph gs[4];
    build_tex_chain(&gs[0]);
    tt_build_zoo(&gs[1]);
    assert_int_equal(tether_ir_infer(&gs[1]), 0);
    tt_build_convnet(&gs[2], true);
    tt_build_mobile(&gs[3], false);
    g_tex_act = true;
    for (int i = 0; i < 4; i++) {
        check_graph(&gs[i], NULL, false, true);
        check_graph(&gs[i], NULL, true, true);
    }
    check_graph(&gs[0], NULL, false, false);
    /* the chain really runs on textures: 4 of its 6 intermediates with the passes on */
    char dir[128];
    int textures, tensors, fallbacks;
    compile_ocl(&gs[0], false, false, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_true(textures >= 1);
    assert_int_equal(tensors, 6); /* t0..t5: every intermediate, the output stays a buffer */
    assert_int_equal(fallbacks, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd,
             "grep -q 'write_imagef' '%s/m.cl' && grep -q '__write_only' '%s/m.cl'", dir, dir);
    assert_int_equal(system(cmd), 0);
    rm_tree(dir);
    compile_ocl(&gs[3], false, true, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_true(tensors >= 2);
    assert_true(textures >= 1 && textures <= tensors); /* images are reused */
    /* the plan's SVG timeline and JSON show the texture pool beside the workspace */
    snprintf(cmd, sizeof cmd,
             "grep -q 'texture (texture): %d image' '%s/memory_plan.svg' && "
             "grep -q '\"images\"' '%s/memory_plan.json'",
             textures, dir, dir);
    assert_int_equal(system(cmd), 0);
    rm_tree(dir);
    /* over the limits: buffers, same results */
    g_img_max[0] = 4;
    g_img_max[1] = 4;
    compile_ocl(&gs[0], false, false, dir, sizeof dir);
    texture_counts(dir, &textures, &tensors, &fallbacks);
    assert_int_equal(textures, 0);
    assert_int_equal(tensors, 0);
    assert_int_equal(fallbacks, 6);
    rm_tree(dir);
    check_graph(&gs[0], NULL, false, false);
    check_graph(&gs[3], NULL, false, true);
    g_img_max[0] = g_img_max[1] = 0;
    g_tex_act = false;
    /* the CLI: run MODEL --backend opencl --texture-activations (limits from the device's
     * HELLO) equals --reference; compile reports the texture pool and the fallbacks */
    static char o[16384];
    char p[200], q[200];
    snprintf(p, sizeof p, "%s/chain.json", g_tmp);
    snprintf(q, sizeof q, "%s/chain.bin", g_tmp);
    assert_int_equal(tether_model_save_json(&gs[0], p, q), 0);
    float xv[960];
    uint32_t seed = 9;
    tt_fill(xv, 960, false, &seed);
    int64_t xs[4] = {1, 8, 10, 12};
    snprintf(p, sizeof p, "%s/xc.npy", g_tmp);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, xs, 4, xv), 0);
    assert_int_equal(run_cli(o, sizeof o, "run chain.json --reference --in xc.npy --out cr.npy"),
                     0);
    assert_int_equal(run_cli(o, sizeof o,
                             "run chain.json --backend opencl --texture-activations --in xc.npy "
                             "--out ct.npy"),
                     0);
    expect_equal_npy("cr.npy", "ct.npy", 1e-4);
    assert_int_equal(
        run_cli(o, sizeof o, "compile chain.json -o ctx --backend opencl --texture-activations"),
        0);
    assert_non_null(strstr(o, "texture pool ("));
    /* t0, t1, pw + residual, sigmoid, mul in 3 images (reused); no workspace left */
    assert_non_null(strstr(o, "texture pool (3 images)"));
    assert_non_null(strstr(o, "(5 activations, 0 over the image limits as buffers)"));
    assert_int_equal(run_cli(o, sizeof o,
                             "compile chain.json -o ctx --backend opencl --texture-activations "
                             "--image-max 8x8"),
                     0);
    assert_non_null(strstr(o, "(0 activations, 5 over the image limits as buffers)"));
    /* tether plan shows the same texture pool (the scope pass run on the planner's problem) */
    assert_int_equal(run_cli(o, sizeof o, "plan chain.json --texture-activations --svg cp.svg"), 0);
    assert_non_null(strstr(o, "pool texture, texture,"));
    snprintf(p, sizeof p, "grep -q 'texture (texture): 3 images' '%s/cp.svg'", g_tmp);
    assert_int_equal(system(p), 0);
    /* --device without --upload: compiled for the device's image limits (PoCL: 8192 or more) */
    assert_int_equal(run_cli(o, sizeof o,
                             "compile chain.json -o ctx --backend opencl --texture-activations "
                             "--device local:"),
                     0);
    assert_non_null(strstr(o, "(5 activations, 0 over the image limits as buffers)"));
    for (int i = 0; i < 4; i++) {
        tether_ir_close(&gs[i]);
    }
}

/* metadata.json of dir, parsed. */
static cJSON *read_metadata(const char *dir) {
    char p[200], *text;
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    assert_int_equal(tether_file_read_text(p, 1 << 24, &text, NULL), 0);
    cJSON *m = cJSON_Parse(text);
    free(text);
    assert_non_null(m);
    return m;
}

/* Images over a device's limits (issue 25), on a tetherd that reports 8x8 images (the test aid
 * TETHERD_TEST_IMAGE_MAX): every texture image of metadata.json is named after the activations
 * it holds (never "params"); an artifact compiled without image limits carries a buffer variant
 * and gives the interpreter's outputs there, saying why, and uses its images on the real limits;
 * compiled with --image-max larger than the device (no variant) it is refused with the image's
 * name, its node and what to recompile with; weights over --image-max stay buffers. */
void test_image_fallback(void **state) {
    (void)state;
    tether_ir_graph g;
    build_tex_chain(&g);
    tether_session *small;
    setenv("TETHERD_TEST_IMAGE_MAX", "8x8", 1);
    int rc = open_local(&small);
    unsetenv("TETHERD_TEST_IMAGE_MAX");
    assert_int_equal(rc, 0);
    assert_int_equal(tether_session_info(small)->image_max_width, 8);
    assert_int_equal(tether_session_info(small)->image_max_height, 8);
    g_tex_act = true;
    char dir[128];
    compile_ocl(&g, true, true, dir, sizeof dir);
    cJSON *m = read_metadata(dir);
    int textures = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "memory")) {
        const char *kind = cJSON_GetObjectItem(x, "kind")->valuestring;
        const char *name = cJSON_GetObjectItem(x, "name")->valuestring;
        if (strcmp(kind, "texture") == 0) {
            char want[64];
            snprintf(want, sizeof want, "texture image %d of ", textures++);
            assert_memory_equal(name, want, strlen(want));
            const cJSON *holds = cJSON_GetObjectItem(x, "holds");
            assert_true(cJSON_GetArraySize(holds) >= 1);
            /* every activation it holds is named */
            const cJSON *h;
            cJSON_ArrayForEach(h, holds) {
                assert_non_null(strstr(name + strlen(want), h->valuestring));
            }
        } else if (strcmp(kind, "weight_image") == 0) {
            assert_true(name[0] == 'w' || name[0] == 'b'); /* the weight tensor's name */
        }
        if (strcmp(kind, "params") != 0) {
            assert_string_not_equal(name, "params");
        }
    }
    assert_true(textures >= 1);
    const cJSON *bv = cJSON_GetObjectItem(m, "buffer_variant");
    assert_true(cJSON_IsObject(bv));
    assert_string_equal(cJSON_GetObjectItem(bv, "source")->valuestring, "m.buffers.cl");
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(bv, "memory")) {
        const char *kind = cJSON_GetObjectItem(x, "kind")->valuestring;
        assert_true(strcmp(kind, "texture") != 0 && strcmp(kind, "weight_image") != 0);
    }
    /* a variant that is not the same model, or not buffers only, is refused when opened */
    for (int k = 0; k < 3; k++) {
        cJSON *c = cJSON_Duplicate(m, 1);
        cJSON *cv = cJSON_GetObjectItem(c, "buffer_variant");
        const char *want = "buffer_variant has other inputs, outputs or steps than the artifact";
        if (k == 0) {
            cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(cv, "steps"), 1);
            cJSON_ReplaceItemInObject(st, "node", cJSON_CreateString("elsewhere"));
        } else if (k == 1) {
            cJSON_ReplaceItemInObject(cv, "memory",
                                      cJSON_Duplicate(cJSON_GetObjectItem(c, "memory"), 1));
            want = "buffer_variant: memory 0 ('texture image 0 of ";
        } else {
            cJSON_ReplaceItemInObject(cv, "source", cJSON_CreateString("missing.cl"));
            want = "buffer_variant: ";
        }
        char *text = cJSON_Print(c), p[200];
        cJSON_Delete(c);
        snprintf(p, sizeof p, "%s/metadata.json", dir);
        assert_int_equal(tether_file_write(p, text, strlen(text)), 0);
        free(text);
        tether_artifact *bad;
        assert_int_not_equal(tether_artifact_open(dir, &bad), 0);
        if (!strstr(tether_last_error(), want)) {
            fail_msg("variant edit %d: %s", k, tether_last_error());
        }
    }
    cJSON_Delete(m);
    rm_tree(dir);
    /* the small device runs the buffer variant, the real one the images: both as the reference */
    g_run = small;
    check_graph(&g, NULL, true, true);
    assert_non_null(strstr(g_fallback, "exceeds the device limit CL_DEVICE_IMAGE2D_MAX_"));
    assert_non_null(strstr(g_fallback, "= 8"));
    check_graph(&g, NULL, false, true); /* texture activations alone */
    assert_non_null(strstr(g_fallback, "texture image 0 of t0"));
    g_run = NULL;
    check_graph(&g, NULL, true, true);
    assert_string_equal(g_fallback, "");
    /* compiled for larger limits than the device's: no variant, refused naming the image */
    g_img_max[0] = g_img_max[1] = (int64_t)1 << 20;
    compile_ocl(&g, false, true, dir, sizeof dir);
    m = read_metadata(dir);
    assert_null(cJSON_GetObjectItem(m, "buffer_variant"));
    cJSON_Delete(m);
    tether_artifact *a;
    assert_int_equal(tether_artifact_open(dir, &a), 0);
    rc = tether_artifact_prepare(a, small, NULL);
    char msg[TETHER_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", tether_last_error());
    tether_artifact_free(a);
    assert_int_equal(rc, TETHER_ERR_LIMIT);
    if (!strstr(msg, "texture image 0 of t0") || !strstr(msg, "(node 'conv1'): texture image ") ||
        !strstr(msg, "exceeds the device limit CL_DEVICE_IMAGE2D_MAX_") ||
        !strstr(msg, "recompile with --device URL or --image-max WxH at the device's limits")) {
        fail_msg("%s", msg);
    }
    rm_tree(dir);
    /* weights over the compile-time limits stay packed in the params buffer: no image at all */
    g_tex_act = false;
    g_img_max[0] = g_img_max[1] = 4; /* the pointwise conv's 8 x 2 texels too */
    compile_ocl(&g, true, true, dir, sizeof dir);
    m = read_metadata(dir);
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(m, "memory")) {
        assert_string_not_equal(cJSON_GetObjectItem(x, "kind")->valuestring, "weight_image");
    }
    assert_null(cJSON_GetObjectItem(m, "buffer_variant"));
    cJSON_Delete(m);
    rm_tree(dir);
    g_run = small;
    check_graph(&g, NULL, true, true);
    assert_string_equal(g_fallback, "");
    g_run = NULL;
    g_img_max[0] = g_img_max[1] = 0;
    tether_session_close(small);
    tether_ir_close(&g);
}
