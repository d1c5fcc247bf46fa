/*
 * A program outside the tether tree, built against the installed package: compiles a model into
 * an artifact (tether::compiler), runs it on a local tetherd (tether::host) and prints the sum of
 * the softmax outputs. usage: consumer MODEL.json WORKDIR
 */
#include <stdio.h>

#include "tether/artifact.h"
#include "tether/compiler.h"
#include "tether/crt.h"
#include "tether/host.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: consumer MODEL.json WORKDIR\n");
        return 2;
    }
    tether_compile_options o;
    tether_compile_options_init(&o);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/artifact", argv[2]);
    if (tether_compile_model(argv[1], dir, &o, NULL) != 0) {
        fprintf(stderr, "compile: %s\n", tether_last_error());
        return 1;
    }
    tether_artifact *a;
    tether_session *s;
    if (tether_artifact_open(dir, &a) != 0 || tether_session_open(&s, "local:", NULL) != 0) {
        fprintf(stderr, "open: %s\n", tether_last_error());
        return 1;
    }
    static float x[490], y[12];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)(i % 10) / 10.0f;
    }
    const void *in[1] = {x};
    void *out[1] = {y};
    if (tether_artifact_prepare(a, s, NULL) != 0 || tether_artifact_run(a, in, out, NULL, NULL)) {
        fprintf(stderr, "run: %s\n", tether_last_error());
        return 1;
    }
    double sum = 0;
    for (int i = 0; i < 12; i++) {
        sum += y[i];
    }
    printf("outputs sum %.6f\n", sum);
    tether_artifact_free(a);
    tether_session_close(s);
    return sum > 0.999 && sum < 1.001 ? 0 : 1;
}
