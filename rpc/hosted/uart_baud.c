/*
 * tether rpc: arbitrary serial baud rates through Linux's termios2 (BOTHER). Kept in its own
 * file because <asm/termbits.h> cannot be included together with <termios.h>.
 *
 * Must stay true: only the speed fields are changed; the rest of the termios state (raw mode)
 * is preserved.
 */
#include <asm/ioctls.h>
#include <asm/termbits.h>
#include <errno.h>
#include <string.h>

#include "tether/crt/error.h"
#include "transport_internal.h"

int ioctl(int fd, unsigned long request, ...);

int tether__uart_set_baud_termios2(int fd, uint32_t baud) {
    struct termios2 tio;
    if (ioctl(fd, TCGETS2, &tio) != 0) {
        return tether_set_error(TETHER_ERR_IO, "uart: TCGETS2 on fd %d failed: %s", fd,
                                strerror(errno));
    }
    tio.c_cflag &= ~(tcflag_t)(CBAUD | (CBAUD << IBSHIFT));
    tio.c_cflag |= BOTHER | (BOTHER << IBSHIFT);
    tio.c_ispeed = baud;
    tio.c_ospeed = baud;
    if (ioctl(fd, TCSETS2, &tio) != 0) {
        return tether_set_error(TETHER_ERR_IO, "uart: cannot set %u baud: %s", (unsigned)baud,
                                strerror(errno));
    }
    return TETHER_OK;
}

int tether__uart_get_baud_termios2(int fd, uint32_t *baud) {
    struct termios2 tio;
    if (ioctl(fd, TCGETS2, &tio) != 0) {
        return tether_set_error(TETHER_ERR_IO, "uart: TCGETS2 on fd %d failed: %s", fd,
                                strerror(errno));
    }
    *baud = tio.c_ospeed;
    return TETHER_OK;
}
