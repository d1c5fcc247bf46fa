/* Built with `pkg-config --cflags --libs tether-host` (no --static): opens a session with the
 * installed tetherd (local:, $TETHER_TETHERD) and prints the device's triple, so that the whole
 * host library (sessions, RPC, msgpack, libuv, ...) links from the .pc alone.
 * usage: session_info [URL] */
#include <stdio.h>

#include "tether/crt.h"
#include "tether/host.h"

int main(int argc, char **argv) {
    tether_session *s = NULL;
    if (tether_session_open(&s, argc > 1 ? argv[1] : "local:", NULL) != 0) {
        fprintf(stderr, "session: %s\n", tether_last_error());
        return 1;
    }
    printf("session ok: %s\n", tether_session_info(s)->triple);
    tether_session_close(s);
    return 0;
}
