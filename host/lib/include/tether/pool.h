/*
 * tether pool: shared devices through a Redis server (docs/remote-boards.md, "A device pool").
 *
 * Devices register under a key ("mps2-an385", "aarch64-linux") with their URL and capabilities
 * and keep the record alive with a heartbeat; clients queue per key, first come first served,
 * and hold a device through a lease that a background thread renews. A client that dies stops
 * renewing: its lease and its place in the queue expire. A device whose heartbeat stops drops out
 * of the pool. `--device pool://HOST:PORT/KEY` (tether_session_open) leases a device for the
 * session's lifetime; a device it finds dead is removed from the pool, leased no more by that open,
 * and comes back only when its agent's check (tether_pool_device_options.probe) says it answers.
 *
 * Ownership: tether_pool_lease and tether_pool_device are opaque; release / stop them exactly once.
 * Errors: int status (0 ok, negative tether_status), the text in tether_last_error().
 */
#ifndef TETHER_POOL_H
#define TETHER_POOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default lease and heartbeat lifetimes: a dead client or device is noticed within these. */
#define TETHER_POOL_LEASE_MS_DEFAULT     5000
#define TETHER_POOL_HEARTBEAT_MS_DEFAULT 5000

typedef struct tether_pool_lease tether_pool_lease;
typedef struct tether_pool_device tether_pool_device;

/* Splits "pool://HOST:PORT/KEY"; 0 or TETHER_ERR_INVALID_ARG naming what is wrong. */
int tether_pool_url_parse(const char *url, char *host, size_t host_size, uint16_t *port, char *key,
                          size_t key_size);

/* Called while waiting in the queue: how many tickets are ahead (first call and on change). */
typedef void (*tether_pool_wait_fn)(void *ctx, const char *key, int ahead);

typedef struct tether_pool_acquire_options {
    int lease_ms;   /* 0 = TETHER_POOL_LEASE_MS_DEFAULT */
    int timeout_ms; /* give up waiting after this long (TETHER_ERR_TIMEOUT); -1 = wait forever */
    const char *holder; /* shown by status (default "pid@host") */
    tether_pool_wait_fn on_wait;
    void *wait_ctx;
    /* Devices (names) this client found dead: never leased, even when registered again; when only
     * they are left, the key counts as having no live device (TETHER_ERR_NOT_FOUND). */
    const char *const *skip;
    int nskip;
} tether_pool_acquire_options;

/* Queues for a device of `key` at the Redis server host:port and waits for the lease (FIFO per
 * key; o NULL = defaults, waiting as long as it takes). On success *out holds the lease (renewed
 * in the background, the renewal reconnecting after a Redis error) and the device's URL. A key
 * without a live device (other than o->skip) fails at once (TETHER_ERR_NOT_FOUND). */
int tether_pool_acquire(const char *host, uint16_t port, const char *key,
                        const tether_pool_acquire_options *o, tether_pool_lease **out);
const char *tether_pool_lease_url(const tether_pool_lease *l);
const char *tether_pool_lease_device(const tether_pool_lease *l); /* the device's name */
uint64_t tether_pool_lease_ticket(const tether_pool_lease *l);    /* its place in the queue */
/* Stops renewing and gives the device back. NULL is ignored. */
void tether_pool_release(tether_pool_lease *l);
/* The same for a device found dead (unreachable, or lost mid-run): its record is also removed,
 * so the next client is not handed it again; a device that is alive after all comes back with
 * its agent's next heartbeat. */
void tether_pool_release_dead(tether_pool_lease *l);

typedef struct tether_pool_device_options {
    int ttl_ms; /* the record's lifetime, renewed every third of it; 0 = the default */
    /* 0 when the device answers (e.g. a session opened: HELLO), else its status with the reason
     * in tether_last_error(). Called from the heartbeat thread before a record that is gone (a
     * client removed the device as dead, or the record expired) is written again, never while a
     * client holds the device; NULL = written again unchecked. */
    int (*probe)(void *ctx);
    /* Told once per change: the device is kept out (registered 0, why = the probe's reason) or
     * registered again (1, why NULL). Called from the heartbeat thread; may be NULL. */
    void (*on_change)(void *ctx, int registered, const char *why);
    void *ctx;
} tether_pool_device_options;

/* Registers device `name` (unique in the pool: a live record of that name is refused; the check
 * and the registration are two steps, so two agents started at the same instant with one name
 * may both pass) of `key` at `url` with capabilities (a JSON text, may be NULL) and keeps its
 * record alive from a background thread (o NULL = defaults). `url` is what clients connect to:
 * it must be reachable from them. A record that disappears (a client found the device dead) is
 * written again only once o->probe says the device answers. tether_pool_device_stop removes
 * it. */
int tether_pool_device_start(const char *host, uint16_t port, const char *key, const char *name,
                             const char *url, const char *caps, const tether_pool_device_options *o,
                             tether_pool_device **out);
void tether_pool_device_stop(tether_pool_device *d);

/* The pool's state as a JSON text (malloc'd): {"devices": [{name, key, url, caps, ticket,
 * holder, ttl_ms}], "queues": [{key, waiting: [holder...]}]}; ticket and holder are null for a
 * free device. */
int tether_pool_status_json(const char *host, uint16_t port, char **out);

#ifdef __cplusplus
}
#endif
#endif /* TETHER_POOL_H */
