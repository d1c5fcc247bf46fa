/*
 * Writes the example keyword-spotting model (examples/kws/kws.json + kws.bin): 49x10 MFCC
 * features -> conv2d 8x(10x4), stride 2, asymmetric pads -> relu -> flatten -> dense 12 ->
 * softmax. Weights come from a fixed-seed generator, so the files are reproducible byte for byte
 * (the ctest compiler_example_regen checks the committed copies against a fresh run).
 * usage: gen_kws_model OUT.json OUT.bin
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tether/compiler.h"
#include "tether/crt/dtype.h"
#include "tether/crt/error.h"

static uint32_t seed = 12345u;

/* Uniform in [-scale, scale) from a 32-bit LCG (numerical recipes constants). */
static float rnd(float scale) {
    seed = seed * 1664525u + 1013904223u;
    return ((float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
}

static void fill(float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) {
        v[i] = rnd(scale);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_kws_model OUT.json OUT.bin\n");
        return 2;
    }
    tether_ir_graph g;
    tether_ir_init(&g, "kws");
    static float w1[8 * 1 * 10 * 4], b1[8], w2[12 * 1000], b2[12];
    fill(w1, 320, 0.3f);
    fill(b1, 8, 0.1f);
    fill(w2, 12000, 0.05f);
    fill(b2, 12, 0.1f);
    int64_t sx[] = {1, 1, 49, 10}, sw1[] = {8, 1, 10, 4}, sb1[] = {8}, sw2[] = {12, 1000},
            sb2[] = {12}, s_unk[1] = {0};
    int x, cw, cb, dw, db, c1, r1, f1, d1, y;
    int rc = tether_ir_add_tensor(&g, "mfcc", TETHER_FLOAT32, 4, sx, &x);
    rc |= tether_ir_add_constant(&g, "conv1.weight", TETHER_FLOAT32, 4, sw1, w1, sizeof w1, &cw);
    rc |= tether_ir_add_constant(&g, "conv1.bias", TETHER_FLOAT32, 1, sb1, b1, sizeof b1, &cb);
    rc |= tether_ir_add_constant(&g, "fc.weight", TETHER_FLOAT32, 2, sw2, w2, sizeof w2, &dw);
    rc |= tether_ir_add_constant(&g, "fc.bias", TETHER_FLOAT32, 1, sb2, b2, sizeof b2, &db);
    rc |= tether_ir_add_tensor(&g, "conv1.out", TETHER_FLOAT32, -1, s_unk, &c1);
    rc |= tether_ir_add_tensor(&g, "relu1.out", TETHER_FLOAT32, -1, s_unk, &r1);
    rc |= tether_ir_add_tensor(&g, "flat", TETHER_FLOAT32, -1, s_unk, &f1);
    rc |= tether_ir_add_tensor(&g, "fc.out", TETHER_FLOAT32, -1, s_unk, &d1);
    rc |= tether_ir_add_tensor(&g, "probs", TETHER_FLOAT32, -1, s_unk, &y);
    tether_ir_attrs a;
    tether_ir_attrs_init(TETHER_OP_CONV2D, &a);
    a.strides[0] = a.strides[1] = 2;
    a.pads[0] = 4;
    a.pads[1] = 1;
    a.pads[2] = 5;
    a.pads[3] = 2;
    int in_conv[] = {x, cw, cb}, in_relu[] = {c1}, in_flat[] = {r1}, in_fc[] = {f1, dw, db},
        in_sm[] = {d1};
    rc |= tether_ir_add_node(&g, "conv1", TETHER_OP_CONV2D, in_conv, 3, &c1, 1, &a, NULL);
    rc |= tether_ir_add_node(&g, "relu1", TETHER_OP_RELU, in_relu, 1, &r1, 1, NULL, NULL);
    tether_ir_attrs_init(TETHER_OP_FLATTEN, &a);
    rc |= tether_ir_add_node(&g, "flatten", TETHER_OP_FLATTEN, in_flat, 1, &f1, 1, &a, NULL);
    tether_ir_attrs_init(TETHER_OP_DENSE, &a);
    a.trans_b = true;
    rc |= tether_ir_add_node(&g, "fc", TETHER_OP_DENSE, in_fc, 3, &d1, 1, &a, NULL);
    tether_ir_attrs_init(TETHER_OP_SOFTMAX, &a);
    rc |= tether_ir_add_node(&g, "softmax", TETHER_OP_SOFTMAX, in_sm, 1, &y, 1, &a, NULL);
    rc |= tether_ir_add_input(&g, x);
    rc |= tether_ir_add_output(&g, y);
    if (rc || tether_ir_infer(&g) || tether_model_save_json(&g, argv[1], argv[2])) {
        fprintf(stderr, "gen_kws_model: %s\n", tether_last_error());
        tether_ir_close(&g);
        return 1;
    }
    tether_ir_close(&g);
    return 0;
}
