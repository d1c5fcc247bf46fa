/*
 * tether rpc tests: the test device as a child process speaking on stdin/stdout (for the
 * stdio/pipe transport test). Exit code 0 after SHUTDOWN or EOF, 1 on a protocol failure.
 */
#include <stdio.h>

#include "test_server.h"
#include "tether/crt.h"

int main(void) {
    tether_transport t;
    if (tether_transport_stdio_open(&t, 0) != 0) {
        fprintf(stderr, "rpc_test_server: %s\n", tether_last_error());
        return 1;
    }
    ts_stats st = {0, 0, 0};
    int rc = ts_serve(&t, &st);
    tether_transport_close(&t);
    if (rc) {
        fprintf(stderr, "rpc_test_server: %s\n", tether_last_error());
    }
    return rc ? 1 : 0;
}
