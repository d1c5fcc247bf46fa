/*
 * Writes the int8 DS-CNN keyword spotter (tests/onnx/ds_cnn_int8.h) and its float32 twin as ONNX
 * files, for scripts/bench boards (bench/boards/run.sh, models ds_cnn_int8 and ds_cnn_f32).
 *
 * usage: gen_ds_cnn_int8 INT8.onnx FLOAT.onnx
 * What must stay true: the same bytes on every run (fixed-seed weights).
 */
#include <stdio.h>

#include "ds_cnn_int8.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_ds_cnn_int8 INT8.onnx FLOAT.onnx\n");
        return 2;
    }
    ds_cnn_write(argv[1], 1);
    ds_cnn_write(argv[2], 0);
    return 0;
}
