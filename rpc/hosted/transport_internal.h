/*
 * tether rpc (internal, hosted): helpers shared by the transport implementations.
 */
#ifndef TETHER_RPC_TRANSPORT_INTERNAL_H
#define TETHER_RPC_TRANSPORT_INTERNAL_H

#include <stdint.h>

/* The fd transport's operations (transport.c); uart.c wraps close to release its lock. Declared
 * without transport.h, which uart_baud.c cannot include next to <asm/termbits.h>. */
struct tether_transport_ops;
extern const struct tether_transport_ops tether__rpc_fd_ops;

/* A stream frame being read into t->place's destination goes on into the frame buffer, with
 * the bytes placed so far (the destination may go away once its owner returns). */
struct tether_transport;
void tether__transport_unplace(struct tether_transport *t);
/* Monotonic milliseconds. */
int64_t tether__rpc_now_ms(void);
/* poll() one fd until the absolute deadline (-1 = none). */
int tether__rpc_wait_fd(int fd, short events, int64_t deadline);
/* Linux termios2 custom baud rates (uart_baud.c, kept apart from <termios.h>). */
int tether__uart_set_baud_termios2(int fd, uint32_t baud);
int tether__uart_get_baud_termios2(int fd, uint32_t *baud);

#endif
