/*
 * tether rpc: the POSIX serial-line transport: open a tty, raw 8N1 mode through termios, any
 * baud rate (standard ones through cfsetspeed, others through termios2 in uart_baud.c), UART
 * framing from the fd transport.
 *
 * Must stay true: the tty is left in raw mode with no flow control, no echo and no line
 * discipline processing, so every byte of a frame reaches the unframer unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/rpc/transport.h"
#include "transport_internal.h"

int tether_uart_make_raw(int fd) {
    struct termios tio;
    if (tcgetattr(fd, &tio) != 0)
        return tether_set_error(TETHER_ERR_IO, "uart: fd %d is not a terminal: %s", fd,
                                strerror(errno));
    cfmakeraw(&tio);
    tio.c_cflag |= CLOCAL | CREAD;
    tio.c_cflag &= ~(tcflag_t)(CSTOPB | PARENB | CRTSCTS);
    tio.c_cflag = (tio.c_cflag & ~(tcflag_t)CSIZE) | CS8;
    tio.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
    tio.c_cc[VMIN] = 1;
    tio.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSANOW, &tio) != 0)
        return tether_set_error(TETHER_ERR_IO, "uart: cannot set raw mode: %s", strerror(errno));
    return TETHER_OK;
}

static const struct {
    uint32_t baud;
    speed_t code;
} standard[] = {
    {1200, B1200},       {2400, B2400},       {4800, B4800},       {9600, B9600},
    {19200, B19200},     {38400, B38400},     {57600, B57600},     {115200, B115200},
    {230400, B230400},   {460800, B460800},   {500000, B500000},   {576000, B576000},
    {921600, B921600},   {1000000, B1000000}, {1152000, B1152000}, {1500000, B1500000},
    {2000000, B2000000}, {3000000, B3000000}, {4000000, B4000000},
};

int tether_uart_set_baud(int fd, uint32_t baud) {
    if (baud == 0)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: baud rate 0");
    for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
        if (standard[i].baud != baud)
            continue;
        struct termios tio;
        if (tcgetattr(fd, &tio) != 0)
            return tether_set_error(TETHER_ERR_IO, "uart: fd %d is not a terminal: %s", fd,
                                    strerror(errno));
        cfsetispeed(&tio, standard[i].code);
        cfsetospeed(&tio, standard[i].code);
        if (tcsetattr(fd, TCSANOW, &tio) != 0)
            return tether_set_error(TETHER_ERR_IO, "uart: cannot set %u baud: %s", (unsigned)baud,
                                    strerror(errno));
        return TETHER_OK;
    }
    return tether_uart_set_baud_termios2(fd, baud);
}

int tether_uart_get_baud(int fd, uint32_t *baud) {
    return tether_uart_get_baud_termios2(fd, baud);
}

int tether_transport_uart_open(tether_transport *t, const char *path, uint32_t baud,
                               uint32_t max_frame) {
    if (!t || !path)
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: no device path");
    memset(t, 0, sizeof *t);
    t->fd_read = t->fd_write = -1;
    int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return tether_set_error(TETHER_ERR_IO, "uart: cannot open %s: %s", path, strerror(errno));
    if (!isatty(fd)) {
        close(fd);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: %s is not a terminal device", path);
    }
    int rc = tether_uart_make_raw(fd);
    if (!rc)
        rc = tether_uart_set_baud(fd, baud);
    if (!rc) {
        tcflush(fd, TCIOFLUSH);
        rc = tether_transport_fd_open(t, TETHER_TRANSPORT_UART, fd, fd, max_frame, true);
    }
    if (rc)
        close(fd);
    return rc;
}
