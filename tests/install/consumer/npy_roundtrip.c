/* Built with pkg-config (tether-host): writes and reads back a .npy; with a second FILE also
 * writes the KWS example's input there (1x1x49x10). usage: npy_roundtrip FILE [KWS_INPUT] */
#include <stdio.h>

#include "tether/crt.h"
#include "tether/npy.h"

int main(int argc, char **argv) {
    float v[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    tether_npy n;
    if (argc == 3) {
        static float mfcc[490];
        int64_t s4[4] = {1, 1, 49, 10};
        if (tether_npy_write(argv[2], TETHER_FLOAT32, s4, 4, mfcc) != 0) {
            fprintf(stderr, "npy: %s\n", tether_last_error());
            return 1;
        }
    }
    if (argc < 2 || tether_npy_write(argv[1], TETHER_FLOAT32, shape, 1, v) != 0 ||
        tether_npy_read(argv[1], &n) != 0) {
        fprintf(stderr, "npy: %s\n", tether_last_error());
        return 1;
    }
    int ok = n.nbytes == sizeof v && ((float *)n.data)[3] == 4.0f;
    tether_npy_free(&n);
    printf("npy round trip %s\n", ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
