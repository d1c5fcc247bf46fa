/*
 * tether rpc: the transport interface and its hosted implementations (tether_rpc, POSIX only).
 *
 * A tether_transport moves whole encoded messages; framing is its business (stream framing on
 * TCP, pipes and stdio; UART framing with CRC on serial lines). The session layer (tetherd, the
 * host client) sees only send/recv/close, so it is transport-agnostic. All calls are blocking
 * with a timeout in milliseconds (< 0 = wait forever, 0 = do not wait), which fits the blocking
 * host client and a forked tetherd session child alike. An event loop that wants to wait for
 * input itself polls fd_read (e.g. with uv_poll) and then calls recv with timeout 0.
 *
 * Daemons accept connections with the libuv helper tether_tcp_listen: each accepted connection
 * is handed to a callback as a plain blocking file descriptor (close-on-exec) that the daemon
 * turns into a transport with tether_transport_fd_open, typically in a forked child.
 *
 * Ownership: the caller owns the tether_transport struct; open functions fill it, close releases
 * everything it holds (and the fds when it owns them). A message returned by recv lives in the
 * transport's buffer until the next recv or close. A transport is used by one thread at a time.
 */
#ifndef TETHER_RPC_TRANSPORT_H
#define TETHER_RPC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "tether/rpc/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tether_transport_kind {
    TETHER_TRANSPORT_TCP = 0,    /* stream framing over a socket */
    TETHER_TRANSPORT_PIPE = 1,   /* stream framing over pipes / stdio */
    TETHER_TRANSPORT_UART = 2,   /* UART framing over a tty */
    TETHER_TRANSPORT_CUSTOM = 3, /* caller-supplied ops (tests, in-memory links) */
} tether_transport_kind;

typedef struct tether_transport tether_transport;

typedef struct tether_transport_ops {
    int (*send)(tether_transport *t, const uint8_t *msg, size_t len, int timeout_ms);
    int (*recv)(tether_transport *t, const uint8_t **msg, size_t *len, int timeout_ms);
    void (*close)(tether_transport *t);
    /* Optional: one message given in two pieces, sent without joining them (NULL: joined). */
    int (*send2)(tether_transport *t, const uint8_t *head, size_t head_len, const uint8_t *tail,
                 size_t tail_len, int timeout_ms);
} tether_transport_ops;

typedef struct tether_transport_stats {
    uint64_t frames_sent;
    uint64_t frames_received;
    uint64_t frames_dropped; /* UART: CRC/oversize/truncated/escape/garbage-run drops */
    uint64_t garbage_bytes;  /* UART: bytes outside frames */
    uint64_t crc_errors;     /* UART: frames dropped for their CRC (part of frames_dropped) */
    uint64_t naks_sent;      /* UART: NAKs this end sent for damaged frames */
    uint64_t naks_received;  /* UART: NAKs the peer sent */
    uint64_t frames_resent;  /* requests sent again (counted by the rpc client) */
    uint64_t bytes_sent;     /* on the wire, framing included */
    uint64_t bytes_received;
    uint64_t bytes_staged; /* stream: payload bytes of frames of 16 KiB or more copied out of
                              the read-ahead buffer (the rest is received where it belongs) */
} tether_transport_stats;

/* Positive results of tether_transport_recv, only when report_damage is set (UART): */
#define TETHER_TRANSPORT_DAMAGED 1 /* a damaged frame arrived (nothing delivered) */
#define TETHER_TRANSPORT_NAK     2 /* the peer sent a NAK: it got a damaged frame of ours */

struct tether_transport {
    const tether_transport_ops *ops;
    tether_transport_kind kind;
    int fd_read; /* -1 when none; poll it for input */
    int fd_write;
    uint32_t max_frame; /* largest message this end accepts */
    int child_pid;      /* tether_transport_spawn: the child's pid, else 0 */
    tether_transport_stats stats;
    /* UART link (docs/rpc.md, "UART link"); all false after open, set once HELLO agreed:
     * link2 = send link-2 frames (CRC-32, closing FLAG); send_naks = answer every damaged
     * frame with a NAK at once; report_damage = recv returns TETHER_TRANSPORT_DAMAGED or
     * TETHER_TRANSPORT_NAK instead of waiting on (a client resends its request then). */
    bool link2;
    bool send_naks;
    bool report_damage;
    /* Stream transports: where a large frame's bulk data belongs, asked once per frame of at
     * least 16 KiB when its first 64 bytes are in (place(ctx, head, head_len, frame_len, &dst,
     * &data_off): true = bytes [data_off, frame_len) of the frame go straight to dst, read from
     * the socket into it, not through the frame buffer). recv then returns the frame as usual,
     * with placed = dst and placed_off = data_off (NULL = nothing placed): the frame buffer
     * holds only its first data_off bytes. tetherd places COPY_TO data into its array. */
    bool (*place)(void *ctx, const uint8_t *head, size_t head_len, size_t frame_len, uint8_t **dst,
                  size_t *data_off);
    void *place_ctx;
    uint8_t *placed;
    size_t placed_off;
    void *impl; /* implementation state */
};

/* Sends one message. TETHER_ERR_LIMIT when len is 0 or above TETHER_RPC_MAX_FRAME_LIMIT,
 * TETHER_ERR_TIMEOUT, TETHER_ERR_IO (peer gone; message says why). */
int tether_transport_send(tether_transport *t, const void *msg, size_t len, int timeout_ms);
/* Sends one message given as head + tail (tether_rpc_encode_split: a request's bulk data stays
 * where it is): on a socket one sendmsg of the frame header, head and tail, no copy. */
int tether_transport_send2(tether_transport *t, const void *head, size_t head_len, const void *tail,
                           size_t tail_len, int timeout_ms);
/* Receives one message. TETHER_ERR_TIMEOUT when none arrived in time (partial input is kept for
 * the next call), TETHER_ERR_IO when the peer closed or the fd failed, TETHER_ERR_LIMIT /
 * TETHER_ERR_PROTOCOL on a bad stream frame (the stream is then unusable: close it). UART
 * transports drop bad frames apart from the stats (and a NAK when send_naks) and keep waiting,
 * or, with report_damage, return TETHER_TRANSPORT_DAMAGED / TETHER_TRANSPORT_NAK (> 0). */
int tether_transport_recv(tether_transport *t, const uint8_t **msg, size_t *len, int timeout_ms);
/* Releases everything; safe on a zeroed or already-closed transport. For a spawned child, closes
 * the pipes and waits for the child to exit. */
void tether_transport_close(tether_transport *t);

/* Wraps open file descriptors (kind TCP/PIPE: stream framing; UART: UART framing). fd_read and
 * fd_write may be equal. max_frame 0 = TETHER_RPC_DEFAULT_MAX_FRAME. The fds are switched to
 * non-blocking mode and closed by close when owns_fds. */
int tether_transport_fd_open(tether_transport *t, tether_transport_kind kind, int fd_read,
                             int fd_write, uint32_t max_frame, bool owns_fds);

/* TCP client: resolves host (numeric or name; "127.0.0.1", "::1", "localhost") with libuv and
 * connects within timeout_ms. TCP_NODELAY is set. */
int tether_transport_tcp_connect(tether_transport *t, const char *host, uint16_t port,
                                 uint32_t max_frame, int timeout_ms);

/* A serial line exported over TCP (ser2net's raw mode, QEMU's -serial tcp:...): a TCP client
 * like tether_transport_tcp_connect whose byte stream carries the UART framing (COBS frames
 * with CRC-16, docs/rpc.md) of the board at the other end, unchanged. The transport's kind is
 * TETHER_TRANSPORT_UART, so the session treats it as a serial link (small frames, resends). */
int tether_transport_tcp_serial_connect(tether_transport *t, const char *host, uint16_t port,
                                        uint32_t max_frame, int timeout_ms);

/* This process's stdin/stdout (a device server run as a child of the host). Not owned. */
int tether_transport_stdio_open(tether_transport *t, uint32_t max_frame);

/* Starts argv[0] (searched in PATH) with its stdin/stdout connected to the returned transport;
 * its stderr is inherited. close() closes the pipes and reaps the child. */
int tether_transport_spawn(tether_transport *t, const char *const argv[], uint32_t max_frame);
/* For a program's SIGINT/SIGTERM/SIGHUP handler (async-signal-safe), so a local tetherd busy in
 * a call (an endless Loop) does not outlive the client the signal ends: forks a reaper that gives
 * every child tether_transport_spawn started (and no close reaped) 2 s to end on its own (EOF
 * once the caller has died; it cleans up after itself), then kills (SIGKILL) those still there.
 * Returns at once in the caller. */
void tether_transport_kill_spawned(void);

/* Opens a serial device in raw mode (8N1, no flow control) at `baud`, which may be any rate the
 * driver accepts (standard rates through termios, others through the Linux termios2 BOTHER
 * interface).
 *
 * The device is locked for this transport before its settings are touched (docs/rpc.md, "Serial
 * port locks"): flock(LOCK_EX) on the tty fd, a POSIX write lock (F_SETLK) on it that records
 * this process as the holder (F_GETLK reports its pid to other processes), and TIOCEXCL on real
 * serial ports (not on pseudo-terminals). All are released by close, on exec (O_CLOEXEC) and
 * by the kernel when the process dies; nothing is left on disk. When another process (or
 * another transport of this process) holds the device, open fails with TETHER_ERR_BUSY and the
 * message "device busy: PATH is held by pid N" ("... held by another process (pid unknown)"
 * when the holder cannot be seen, e.g. in another pid namespace). Same as _ex with NULL. */
int tether_transport_uart_open(tether_transport *t, const char *path, uint32_t baud,
                               uint32_t max_frame);

/* Called when a waiting open finds the device busy: once when it starts waiting, and again only
 * if another process takes the device first. holder_pid 0 = not known. Prints nothing itself. */
typedef void (*tether_uart_wait_fn)(void *ctx, const char *path, int holder_pid);

typedef struct tether_uart_open_options {
    int wait_ms; /* 0 = fail at once with TETHER_ERR_BUSY when the device is busy, -1 = wait
                  * forever, >0 = wait at most that long, then TETHER_ERR_BUSY */
    tether_uart_wait_fn on_wait; /* may be NULL */
    void *wait_ctx;
} tether_uart_open_options;

/* tether_transport_uart_open with options (NULL = all zero). A waiting open polls the lock
 * (every 50 ms); several waiters are served in no particular order. */
int tether_transport_uart_open_ex(tether_transport *t, const char *path, uint32_t baud,
                                  uint32_t max_frame, const tether_uart_open_options *opt);

/* termios helpers for tty fds: raw 8N1 mode; set and read back the baud rate (any rate). */
int tether_uart_make_raw(int fd);
int tether_uart_set_baud(int fd, uint32_t baud);
int tether_uart_get_baud(int fd, uint32_t *baud);

/* ---- daemon side: libuv TCP listener ---- */

typedef struct tether_tcp_listener tether_tcp_listener;

/* Called for each accepted connection with a new blocking, close-on-exec fd owned by the
 * callee, and the peer address as text ("127.0.0.1:5501", "[::1]:5501"). */
typedef void (*tether_tcp_accept_fn)(void *ctx, int fd, const char *peer);

/* Listens on host:port (port 0 = any free port; read it back with tether_tcp_listener_port).
 * The listener lives on `loop`; callbacks run from uv_run. */
int tether_tcp_listen(uv_loop_t *loop, const char *host, uint16_t port, tether_tcp_accept_fn cb,
                      void *ctx, tether_tcp_listener **out);
uint16_t tether_tcp_listener_port(const tether_tcp_listener *l);
/* Stops listening; the memory is released once the loop has run the close callback. */
void tether_tcp_listener_close(tether_tcp_listener *l);

/* ---- blocking request/reply helper (host client, tests) ---- */

typedef void (*tether_rpc_log_fn)(void *ctx, const tether_rpc_msg *log);

typedef struct tether_rpc_client {
    tether_transport *t;
    uint32_t next_id; /* id of the next request (starts at 1, skips 0) */
    uint8_t *tx;      /* encode buffer (malloc'ed, tx_cap bytes) */
    size_t tx_cap;
    int retries;              /* resends after a timeout (UART); 0 = fail on the first timeout */
    tether_rpc_log_fn on_log; /* LOG notifications received while waiting; may be NULL */
    void *log_ctx;
    uint64_t stale_replies; /* replies to older ids that were discarded */
    /* ARQ on a lossy link (set when t->report_damage): a request is resent at once when the
     * peer NAKs it or a damaged frame arrives, and after the retransmission timeout when
     * nothing arrives, until (retries + 1) * timeout_ms have passed. */
    int rto_ms;     /* retransmission timeout from measured round trips (0 = none yet) */
    int min_rto_ms; /* the next request's first resend waits at least this long (its
                       execution time, set by the caller); cleared after each request */
    double srtt_ms; /* smoothed round trip of link-only requests (Jacobson/Karn), less the
                       time their bytes took on the line */
    double rttvar_ms;
    double byte_ms;  /* ms a byte takes on the line (0 = not measured): the retransmission
                        timeout of a request adds twice the time its bytes, those queued ahead
                        of it and its reply's take, so a slow line (9600 baud) or a big frame
                        does not time out while still on the wire */
    double att_sum;  /* decayed attempts, failed attempts and bytes on the line: */
    double fail_sum; /* the link's byte error rate for tether_rpc_client_chunk */
    double byte_sum;
    size_t chunk_now;       /* the chunk tether_rpc_client_chunk recommends (0 = not yet) */
    size_t resize_above;    /* the next request carries a chunk of this many data bytes, which
                               may be sent again in smaller pieces: it is given up (returning
                               TETHER_RPC_SMALLER) once it failed 3 times and the line carries
                               less than half of it; cleared by each request (0 = never) */
    uint32_t last_attempts; /* attempts of the last request (1 = no resend) */
    double win_now;         /* pipeline window on a lossy link: 1 after a loss, + 1 per
                               window that got through (0 = not started) */
    const uint8_t *tail;    /* the request in flight: tx holds its head, this its bulk data */
    size_t tail_len;
    uint8_t *copy_from_into; /* the next tether_rpc_client_pipeline of COPY_FROM requests on a
                                stream reads each reply's data straight to copy_from_into +
                                offset (the caller's memory for [0, total)): take gets the
                                reply's data pointing there; cleared by the pipeline (NULL =
                                replies are read into the frame buffer) */
} tether_rpc_client;

/* tether_rpc_client_request gave up a chunk request (resize_above): send its data again in
 * chunks of tether_rpc_client_chunk's size, with new requests. */
#define TETHER_RPC_SMALLER 3

/* tx_cap 0 = t->max_frame. */
int tether_rpc_client_init(tether_rpc_client *c, tether_transport *t, size_t tx_cap, int retries);
void tether_rpc_client_close(tether_rpc_client *c);

/* Sends req (its id is assigned here) and waits up to timeout_ms per attempt for the reply with
 * the same id; on a timeout resends the same bytes (same id) up to `retries` times. LOG messages
 * go to on_log; replies with other ids are discarded. An ERROR reply returns its code (negative)
 * with its message as the last error and *rep holding it. *rep borrows from the transport buffer
 * until the next receive. TETHER_ERR_PROTOCOL when the reply type does not match the request. */
int tether_rpc_client_request(tether_rpc_client *c, tether_rpc_msg *req, tether_rpc_msg *rep,
                              int timeout_ms);

/* The data bytes a chunk (COPY_TO, UPLOAD_CHUNK, COPY_FROM) should carry on this link, at most
 * max: on a lossy link (ARQ) the size that moves the most data per byte time at the byte error
 * rate seen in the last requests (about sqrt(70/rate) bytes, at least 64), growing again while
 * frames get through; max otherwise. */
size_t tether_rpc_client_chunk(tether_rpc_client *c, size_t max);

/* Bulk transfers with up to `window` requests in flight (1..8): the byte range [0, total) in
 * chunks of tether_rpc_client_chunk(c, max_chunk) bytes. make(ctx, offset, len, req) fills the
 * request for bytes [offset, offset + len) (type and fields; the id is assigned here; its bulk
 * data is sent from where it points, not copied); take(ctx, offset, len, rep) gets each reply,
 * in order. On a lossy link (report_damage) a NAK, a damaged frame, a reply overtaking the
 * oldest one's, or the retransmission timeout resends the oldest request and all after it
 * (go-back-N; the device's reply cache answers what it already ran); a chunk far too large for
 * the line is abandoned and its bytes made again in smaller pieces. So the requests must be
 * idempotent and independent of their order (COPY_TO, COPY_FROM; UPLOAD_CHUNK on a stream). A
 * callback's non-zero status, an ERROR reply or a timeout (timeout_ms * (retries + 1) without
 * progress) ends it with that status. total 0 makes one request of length 0. */
typedef int (*tether_rpc_make_fn)(void *ctx, uint64_t offset, size_t len, tether_rpc_msg *req);
typedef int (*tether_rpc_take_fn)(void *ctx, uint64_t offset, size_t len,
                                  const tether_rpc_msg *rep);
int tether_rpc_client_pipeline(tether_rpc_client *c, uint64_t total, size_t max_chunk,
                               uint32_t window, int timeout_ms, tether_rpc_make_fn make,
                               tether_rpc_take_fn take, void *ctx);

/* The byte error rate the client estimates for its link (0 = none seen). */
double tether_rpc_client_error_rate(const tether_rpc_client *c);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_RPC_TRANSPORT_H */
