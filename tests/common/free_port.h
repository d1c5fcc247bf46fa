/*
 * Tests that start a server needing a fixed port (redis-server, QEMU's TCP serial): a port on
 * 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed). Header-only, for
 * tests in any folder (tether_add_test puts tests/common on the include path).
 */
#ifndef TETHER_TEST_FREE_PORT_H
#define TETHER_TEST_FREE_PORT_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* The port, or -1. */
static inline int tether_test_free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int p = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &n) == 0) {
        p = ntohs(a.sin_port);
    }
    if (s >= 0) {
        close(s);
    }
    return p;
}

#endif /* TETHER_TEST_FREE_PORT_H */
