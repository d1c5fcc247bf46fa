/*
 * tether rpc: the POSIX serial-line transport: open a tty, lock it, raw 8N1 mode through termios,
 * any baud rate (standard ones through cfsetspeed, others through termios2 in uart_baud.c), UART
 * framing from the fd transport.
 *
 * Must stay true: the tty is left in raw mode with no flow control, no echo and no line
 * discipline processing, so every byte of a frame reaches the unframer unchanged.
 *
 * Serial port lock (docs/rpc.md, "Serial port locks"). Two clients on one line interleave their
 * frames and corrupt each other's uploads, so a transport holds its tty exclusively, and the
 * lock is taken before the line settings are touched (a refused opener must not change the baud
 * rate or flush the holder's bytes). The lock is three kernel mechanisms on the tty fd:
 *  - flock(LOCK_EX | LOCK_NB): the exclusion itself; it also keeps out other flock users
 *    (picocom, other tether processes) and, unlike TIOCEXCL, binds root too.
 *  - a POSIX write lock (fcntl F_SETLK over the whole file): it records the holder, because
 *    flock does not say who holds it; another process asks with F_GETLK, which reports l_pid
 *    (translated into the asker's pid namespace). When an opener cannot get an fd at all
 *    (TIOCEXCL) or the holder holds only a flock, the holder's pid is looked up in /proc/locks.
 *  - TIOCEXCL on real serial ports: other openers that use no lock get EBUSY (root bypasses
 *    it, hence the locks). Not on pseudo-terminals: there the flag lives as long as the master
 *    side is open (QEMU), so a holder killed with SIGKILL would leave the pty unopenable for
 *    non-root users until QEMU restarts.
 * Why kernel locks and not a UUCP lock file (LCK..ttyX with a pid in /run/lock): the kernel
 * drops every one of them when the fd is closed, on exec (O_CLOEXEC) and when the process dies,
 * so a killed holder never leaves the port locked, and there is no stale-file takeover to race
 * on, no reused pid to misjudge, no lock directory to need write access to. The cost is POSIX
 * lock semantics: a process loses its record locks on a file when it closes any fd of it, so
 * this process keeps a registry of the ttys it holds and refuses a second open of one of them
 * without opening it (the flock would still exclude, only the pid record would be lost).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "tether/crt/error.h"
#include "tether/rpc/transport.h"
#include "transport_internal.h"

int tether_uart_make_raw(int fd) {
    struct termios tio;
    if (tcgetattr(fd, &tio) != 0) {
        return tether_set_error(TETHER_ERR_IO, "uart: fd %d is not a terminal: %s", fd,
                                strerror(errno));
    }
    cfmakeraw(&tio);
    tio.c_cflag |= CLOCAL | CREAD;
    tio.c_cflag &= ~(tcflag_t)(CSTOPB | PARENB | CRTSCTS);
    tio.c_cflag = (tio.c_cflag & ~(tcflag_t)CSIZE) | CS8;
    tio.c_iflag &= ~(tcflag_t)(IXON | IXOFF | IXANY);
    tio.c_cc[VMIN] = 1;
    tio.c_cc[VTIME] = 0;
    if (tcsetattr(fd, TCSANOW, &tio) != 0) {
        return tether_set_error(TETHER_ERR_IO, "uart: cannot set raw mode: %s", strerror(errno));
    }
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
    if (baud == 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: baud rate 0");
    }
    for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
        if (standard[i].baud != baud) {
            continue;
        }
        struct termios tio;
        if (tcgetattr(fd, &tio) != 0) {
            return tether_set_error(TETHER_ERR_IO, "uart: fd %d is not a terminal: %s", fd,
                                    strerror(errno));
        }
        cfsetispeed(&tio, standard[i].code);
        cfsetospeed(&tio, standard[i].code);
        if (tcsetattr(fd, TCSANOW, &tio) != 0) {
            return tether_set_error(TETHER_ERR_IO, "uart: cannot set %u baud: %s", (unsigned)baud,
                                    strerror(errno));
        }
        return TETHER_OK;
    }
    return tether__uart_set_baud_termios2(fd, baud);
}

int tether_uart_get_baud(int fd, uint32_t *baud) {
    return tether__uart_get_baud_termios2(fd, baud);
}

/* ---- lock ---- */

/* The ttys this process holds (by device number), with the fd that holds each. */
typedef struct held_tty {
    pid_t pid; /* a forked child inherits the table, not the record locks: not its entries */
    dev_t rdev;
    int fd;
    bool excl; /* TIOCEXCL set by us: cleared on close */
} held_tty;

#define MAX_HELD 64
static held_tty held[MAX_HELD];
static size_t num_held;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;

static bool held_by_us(dev_t rdev) {
    pthread_mutex_lock(&held_mu);
    bool found = false;
    for (size_t i = 0; i < num_held && !found; i++) {
        found = held[i].rdev == rdev && held[i].pid == getpid();
    }
    pthread_mutex_unlock(&held_mu);
    return found;
}

static void held_add(dev_t rdev, int fd, bool excl) {
    pthread_mutex_lock(&held_mu);
    if (num_held < MAX_HELD) { /* beyond that only the pid record can be lost, not the lock */
        held[num_held++] = (held_tty){getpid(), rdev, fd, excl};
    }
    pthread_mutex_unlock(&held_mu);
}

/* Forgets fd; true when we had set TIOCEXCL on it. */
static bool held_remove(int fd) {
    bool excl = false;
    pthread_mutex_lock(&held_mu);
    for (size_t i = 0; i < num_held; i++) {
        if (held[i].fd == fd && held[i].pid == getpid()) {
            excl = held[i].excl;
            held[i] = held[--num_held];
            break;
        }
    }
    pthread_mutex_unlock(&held_mu);
    return excl;
}

/* Unix98 pty slaves (majors 136..143) and legacy BSD pty slaves (major 3). */
static bool is_pty_slave(dev_t rdev) {
    unsigned m = major(rdev);
    return (m >= 136 && m <= 143) || m == 3;
}

/* The pid of a process holding any lock on the file (st_dev, st_ino), from /proc/locks; 0 when
 * none is listed or /proc is not there. Waiters ("->" lines) and OFD locks (pid -1) are
 * skipped. */
static int proc_locks_holder(const struct stat *st) {
    FILE *f = fopen("/proc/locks", "re");
    if (!f) {
        return 0;
    }
    char line[256];
    int pid = 0;
    while (!pid && fgets(line, sizeof line, f)) {
        if (strstr(line, "->")) {
            continue;
        }
        char kind[16];
        int p;
        unsigned maj, min;
        unsigned long ino;
        if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", kind, &p, &maj, &min, &ino) != 5) {
            continue;
        }
        if (p > 0 && maj == major(st->st_dev) && min == minor(st->st_dev) &&
            ino == (unsigned long)st->st_ino) {
            pid = p;
        }
    }
    fclose(f);
    return pid;
}

/* The holder's pid through F_GETLK (the POSIX record lock), else /proc/locks; 0 = unknown. */
static int holder_of(int fd, const struct stat *st) {
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    if (fd >= 0 && fcntl(fd, F_GETLK, &l) == 0 && l.l_type != F_UNLCK && l.l_pid > 0) {
        return (int)l.l_pid;
    }
    return proc_locks_holder(st);
}

static int busy_error(const char *path, int pid, bool self) {
    if (pid <= 0) {
        return tether_set_error(TETHER_ERR_BUSY,
                                "device busy: %s is held by another process (pid unknown)", path);
    }
    return tether_set_error(TETHER_ERR_BUSY, "device busy: %s is held by pid %d%s", path, pid,
                            self ? " (this process)" : "");
}

/* One attempt: opens path and takes the lock. 0 with *fd_out (locked, registered), or
 * TETHER_ERR_BUSY with *holder (pid, 0 = unknown), or another error; messages set. */
static int open_locked(const char *path, int *fd_out, int *holder) {
    *fd_out = -1;
    *holder = 0;
    struct stat st;
    memset(&st, 0, sizeof st);
    bool known = stat(path, &st) == 0 && S_ISCHR(st.st_mode);
    if (known && held_by_us(st.st_rdev)) {
        *holder = (int)getpid();
        return busy_error(path, *holder, true);
    }
    int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == EBUSY) { /* TIOCEXCL of a holder; we are not root */
            *holder = known ? proc_locks_holder(&st) : 0;
            return busy_error(path, *holder, false);
        }
        return tether_set_error(TETHER_ERR_IO, "uart: cannot open %s: %s", path, strerror(errno));
    }
    if (!isatty(fd) || fstat(fd, &st) != 0) {
        close(fd);
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: %s is not a terminal device", path);
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            *holder = holder_of(fd, &st);
            close(fd);
            return busy_error(path, *holder, false);
        }
        close(fd);
        return tether_set_error(TETHER_ERR_IO, "uart: cannot lock %s: %s", path, strerror(e));
    }
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    if (fcntl(fd, F_SETLK, &l) != 0 && (errno == EAGAIN || errno == EACCES)) {
        /* a program that uses record locks only holds it */
        *holder = holder_of(fd, &st);
        close(fd);
        return busy_error(path, *holder, false);
    } /* other failures (ENOLCK): the flock still excludes; only the pid record is missing */
    bool excl = !is_pty_slave(st.st_rdev) && ioctl(fd, TIOCEXCL) == 0;
    held_add(st.st_rdev, fd, excl);
    *fd_out = fd;
    return TETHER_OK;
}

/* Releases the lock explicitly (close would drop flock and the record lock anyway; TIOCEXCL
 * could outlive the fd while another process has the tty open). */
static void unlock_fd(int fd) {
    if (fd < 0) {
        return;
    }
    if (held_remove(fd)) {
        ioctl(fd, TIOCNXCL);
    }
    flock(fd, LOCK_UN);
}

static void uart_close(tether_transport *t) {
    unlock_fd(t->fd_read);
    tether__rpc_fd_ops.close(t);
}

static int uart_send(tether_transport *t, const uint8_t *msg, size_t len, int timeout_ms) {
    return tether__rpc_fd_ops.send(t, msg, len, timeout_ms);
}

static int uart_recv(tether_transport *t, const uint8_t **msg, size_t *len, int timeout_ms) {
    return tether__rpc_fd_ops.recv(t, msg, len, timeout_ms);
}

static int uart_send2(tether_transport *t, const uint8_t *head, size_t head_len,
                      const uint8_t *tail, size_t tail_len, int timeout_ms) {
    return tether__rpc_fd_ops.send2(t, head, head_len, tail, tail_len, timeout_ms);
}

static const tether_transport_ops uart_ops = {uart_send, uart_recv, uart_close, uart_send2};

#define LOCK_POLL_MS 50

static void sleep_ms(int64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Opens and locks, waiting as opt says. */
static int open_waiting(const char *path, const tether_uart_open_options *opt, int *fd) {
    int wait_ms = opt ? opt->wait_ms : 0;
    int64_t deadline = wait_ms > 0 ? tether__rpc_now_ms() + wait_ms : -1;
    int announced = -1; /* the holder the callback was told about */
    for (;;) {
        int holder;
        int rc = open_locked(path, fd, &holder);
        if (rc != TETHER_ERR_BUSY || wait_ms == 0) {
            return rc;
        }
        int64_t left = deadline < 0 ? LOCK_POLL_MS : deadline - tether__rpc_now_ms();
        if (left <= 0) {
            char e[TETHER_ERROR_MSG_MAX];
            snprintf(e, sizeof e, "%s", tether_last_error());
            return tether_set_error(TETHER_ERR_BUSY, "%s (waited %d ms)", e, wait_ms);
        }
        if (holder != announced) {
            announced = holder;
            if (opt->on_wait) {
                opt->on_wait(opt->wait_ctx, path, holder);
            }
        }
        sleep_ms(left < LOCK_POLL_MS ? left : LOCK_POLL_MS);
    }
}

int tether_transport_uart_open_ex(tether_transport *t, const char *path, uint32_t baud,
                                  uint32_t max_frame, const tether_uart_open_options *opt) {
    if (!t || !path) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: no device path");
    }
    memset(t, 0, sizeof *t);
    t->fd_read = t->fd_write = -1;
    if (opt && opt->wait_ms < -1) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "uart: wait of %d ms", opt->wait_ms);
    }
    int fd;
    int rc = open_waiting(path, opt, &fd);
    if (rc) {
        return rc;
    }
    rc = tether_uart_make_raw(fd);
    if (!rc) {
        rc = tether_uart_set_baud(fd, baud);
    }
    if (!rc) {
        tcflush(fd, TCIOFLUSH);
        rc = tether_transport_fd_open(t, TETHER_TRANSPORT_UART, fd, fd, max_frame, true);
    }
    if (rc) {
        unlock_fd(fd);
        close(fd);
        return rc;
    }
    t->ops = &uart_ops;
    return TETHER_OK;
}

int tether_transport_uart_open(tether_transport *t, const char *path, uint32_t baud,
                               uint32_t max_frame) {
    return tether_transport_uart_open_ex(t, path, baud, max_frame, NULL);
}
