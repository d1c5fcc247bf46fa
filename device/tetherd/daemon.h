/*
 * tetherd: what the files of the daemon share (private to device/tetherd). The daemon is the
 * process that listens and forks; every session runs in a child of it (session.h):
 *   main.c          options, start-up checks (work directory, token, upload cache), the mode;
 *   children.c      the session-process table: session directories, fork (child_setup), reaping
 *                   and how each process ended, stopping them all;
 *   watch.c         the daemon's side of each session's watch: HELLO/AUTH and idle deadlines,
 *                   the call timeout (SIGKILL to the session's process group, the call answered
 *                   for it), and evicting a session that never got in when every slot is taken;
 *   serve_tcp.c     TCP: the libuv loop, resolving the bind address, accepting and refusing;
 *   serve_serial.c  UART and stdio: one session process at a time, waited for in a loop.
 *
 * What must stay true: only children.c fills or frees a slot of tether__children (spawn, finish);
 * a slot's watch (tether__watches[i]) is shared with the session process in that slot and is
 * moved to CONDEMNED only by compare-and-swap (watch.c), so that a call is answered exactly
 * once; the daemon never runs uploaded code itself.
 */
#ifndef TETHERD_DAEMON_H
#define TETHERD_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "session.h"

#define TETHERD_MAX_CHILDREN 256

/* One slot of the session-process table (pid 0 = free). */
typedef struct tether__child {
    pid_t pid;
    int fd; /* the daemon's copy of the connection, to answer for a killed session (-1 = none) */
    tether_transport_kind kind;
    char dir[512];
    char peer[96];
    char why[512]; /* why the daemon killed it ("" = it ended by itself) */
} tether__child;

/* UART: a call the daemon answered by killing its session; the next session process sends the
 * ERROR first (the daemon does not hold the serial line). */
typedef struct tether__uart_pending_error {
    int set;
    uint32_t id;
    int code;
    char text[512];
} tether__uart_pending_error;

/* main.c: the options */
extern tetherd_config tether__cfg;
extern const char *tether__work_base; /* where session directories are made */
extern unsigned tether__max_sessions; /* TCP sessions at once */

/* children.c: the session-process table and its watches (TETHERD_MAX_CHILDREN each; the watches
 * are MAP_SHARED with the session processes) */
extern tether__child tether__children[TETHERD_MAX_CHILDREN];
extern tetherd_watch *tether__watches;
extern tether__uart_pending_error tether__uart_pending;

/* main.c: a decimal number with nothing after it; 0 or -1. */
int tether__parse_u64(const char *s, uint64_t *out);

/* children.c */
/* Maps the watches and marks every slot free; -1 (message printed) when the map fails. */
int tether__children_init(void);
/* At start: removes the session directories of daemons that are gone; how many went. */
int tether__sweep_stale_session_dirs(void);
/* Forks a session process. run(ctx, dir) runs in the child, which keeps only stdio and keep_fd
 * (-1 = none) open. `fd` is the daemon's copy of the connection (owned by the slot from now on,
 * -1 = none) and `kind` its framing; `tcp`: HELLO and idle deadlines apply. Returns the pid or
 * -1 (fd closed). */
pid_t tether__spawn_session(const char *peer, int keep_fd, int fd, tether_transport_kind kind,
                            bool tcp, void (*run)(void *, const char *), void *ctx);
/* Slot i's process ended with wait status `status`: log, answer its call if it died in one,
 * free the slot and remove its directory. */
void tether__finish_child(int i, int status);
/* Reaps ended session processes (block: wait for one). */
void tether__reap_children(int block);
unsigned tether__live_children(void);
/* SIGTERM to every session's group, SIGKILL after two seconds, all reaped. */
void tether__stop_children(void);

/* watch.c */
/* Enforces every slot's deadlines now (the daemon's timer, or the UART/stdio wait loop). */
void tether__watch_scan(void);
/* A full daemon kills and reaps the session that waited longest without getting in (HELLO,
 * AUTH), once it has waited a second; false when there is none. */
bool tether__evict_one(void);

/* serve_tcp.c, serve_serial.c: the three modes; each returns main's exit status. */
int tether__serve_tcp(const char *spec, const char *port_file, int insecure);
int tether__serve_uart(const char *path, uint32_t baud);
int tether__serve_stdio(void);

#endif
