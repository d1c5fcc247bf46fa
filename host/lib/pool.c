/*
 * The device pool on Redis (tether/pool.h; docs/remote-boards.md, "A device pool").
 *
 * Keys (all under "tether:"):
 *   dev:NAME      hash {key, url, caps}; expires unless its device's heartbeat renews it; a
 *                 client that finds the device dead deletes it, and the heartbeat writes it
 *                 again only once the agent's probe says the device answers
 *   devs:KEY      set of device names of KEY (names whose hash expired are pruned on use)
 *   queue:KEY     list of tickets, first come first served
 *   ticket:N      the holder's description; expires unless its client renews it (waiting or
 *                 holding), so a dead client's place in the queue disappears
 *   lease:NAME    the ticket holding device NAME; expires unless renewed
 *   next          ticket counter
 *
 * What must stay true: a device is leased to at most one ticket (SET NX in one Lua script that
 * also pops the head of the queue); only the head of a queue can lease, so grants follow the
 * queue order; a lease or ticket is only renewed or deleted by its own holder (compare and act
 * in Lua); every lifetime is bounded, so nothing stays locked after a kill -9; an acquire never
 * leases a device its caller found dead (skip), nor does the heartbeat probe a device while a
 * client holds it.
 */
#include "tether/pool.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>

#include "tether/crt/error.h"

/* Acquire: drop dead tickets at the head; if ours is the head, lease a free live device that is
 * not among ARGV[3..] (the devices this client found dead). Returns {1, name, url}, {0, tickets
 * ahead of ours}, or {2, skipped} when KEY has no live device but the skipped ones. */
static const char acquire_lua[] =
    "local q, devs, ticket = KEYS[1], KEYS[2], ARGV[1]\n"
    "while true do\n"
    "  local head = redis.call('LINDEX', q, 0)\n"
    "  if not head then return {0, -1} end\n"
    "  if redis.call('EXISTS', 'tether:ticket:' .. head) == 1 then\n"
    "    if head ~= ticket then\n"
    "      local pos = redis.call('LPOS', q, ticket)\n"
    "      if not pos then return {0, -1} end\n"
    "      return {0, pos}\n"
    "    end\n"
    "    break\n"
    "  end\n"
    "  redis.call('LPOP', q)\n"
    "end\n"
    "local skip = {}\n"
    "for i = 3, #ARGV do skip[ARGV[i]] = true end\n"
    "local live, skipped = 0, 0\n"
    "for _, name in ipairs(redis.call('SMEMBERS', devs)) do\n"
    "  local dk = 'tether:dev:' .. name\n"
    "  if redis.call('EXISTS', dk) == 0 then\n"
    "    redis.call('SREM', devs, name)\n"
    "  elseif skip[name] then\n"
    "    skipped = skipped + 1\n"
    "  else\n"
    "    live = live + 1\n"
    "    if redis.call('SET', 'tether:lease:' .. name, ticket, 'PX', ARGV[2], 'NX') then\n"
    "      redis.call('LPOP', q)\n"
    "      return {1, name, redis.call('HGET', dk, 'url')}\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if live == 0 then return {2, skipped} end\n"
    "return {0, 0}\n";

/* Renew (ARGV[2] ms) or delete (ARGV[2] = "del") KEYS[1] only while it holds ARGV[1]. */
static const char own_lua[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
                              "if ARGV[2] == 'del' then return redis.call('DEL', KEYS[1]) end\n"
                              "return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n";

static int redis_error(const char *what, const redisContext *c, const redisReply *r) {
    if (!r) {
        return tether_set_error(TETHER_ERR_IO, "pool: %s: %s", what,
                                c ? c->errstr : "no connection");
    }
    return tether_set_error(TETHER_ERR_PROTOCOL, "pool: %s: %s", what,
                            r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
}

static int redis_open(const char *host, uint16_t port, redisContext **out) {
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        int rc = tether_set_error(TETHER_ERR_IO, "pool: cannot reach the Redis server at %s:%u: %s",
                                  host, (unsigned)port, c ? c->errstr : "out of memory");
        if (c) {
            redisFree(c);
        }
        return rc;
    }
    redisSetTimeout(c, tv);
    *out = c;
    return 0;
}

/* A background thread's connection: reopened after an error (a Redis restart, a timeout), since
 * hiredis does not recover a context once it failed. Returns the usable context or NULL. */
static redisContext *usable(redisContext **c, const char *host, uint16_t port) {
    if (*c && (*c)->err) {
        redisFree(*c);
        *c = NULL;
    }
    if (!*c && redis_open(host, port, c) != 0) {
        *c = NULL;
    }
    return *c;
}

/* A command whose reply only has to be no error. */
static int run(redisContext *c, const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    int rc = !r || r->type == REDIS_REPLY_ERROR ? redis_error(what, c, r) : 0;
    if (r) {
        freeReplyObject(r);
    }
    return rc;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A background thread calling tick() every period_ms until stopped. */
typedef struct ticker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, started;
    int period_ms;
    void (*tick)(void *);
    void *ctx;
} ticker;

static void *ticker_main(void *arg) {
    ticker *t = arg;
    /* a write to a Redis connection that was reset must not kill the process (hiredis 0.14
     * writes with write(), which raises SIGPIPE); blocked here, EPIPE is an error instead */
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += t->period_ms / 1000;
        until.tv_nsec += (long)(t->period_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int w = 0;
        while (!t->stop && w != ETIMEDOUT) {
            w = pthread_cond_timedwait(&t->cv, &t->mu, &until);
        }
        if (t->stop) {
            break;
        }
        pthread_mutex_unlock(&t->mu);
        t->tick(t->ctx);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

static int ticker_start(ticker *t, int period_ms, void (*tick)(void *), void *ctx) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* no stall when the wall clock is set back */
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    t->period_ms = period_ms > 10 ? period_ms : 10;
    t->tick = tick;
    t->ctx = ctx;
    if (pthread_create(&t->thread, NULL, ticker_main, t) != 0) {
        return tether_set_error(TETHER_ERR_IO, "pool: cannot start a renewal thread");
    }
    t->started = 1;
    return 0;
}

static void ticker_stop(ticker *t) {
    if (!t->started) {
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    t->started = 0;
}

/* ---- url ---- */

int tether_pool_url_parse(const char *url, char *host, size_t host_size, uint16_t *port, char *key,
                          size_t key_size) {
    if (!url || strncmp(url, "pool://", 7) != 0) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': want pool://HOST:PORT/KEY",
                                url ? url : "");
    }
    const char *hp = url + 7, *slash = strchr(hp, '/');
    const char *colon = slash ? memchr(hp, ':', (size_t)(slash - hp)) : NULL;
    if (!slash || !colon || colon == hp || (size_t)(colon - hp) >= host_size || !slash[1] ||
        strlen(slash + 1) >= key_size || strchr(slash + 1, '/')) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': want pool://HOST:PORT/KEY",
                                url);
    }
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end != slash || p < 1 || p > 65535) {
        return tether_set_error(TETHER_ERR_INVALID_ARG, "bad URL '%s': port must be 1..65535", url);
    }
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    snprintf(key, key_size, "%s", slash + 1);
    *port = (uint16_t)p;
    return 0;
}

/* ---- leases ---- */

struct tether_pool_lease {
    char host[256];
    uint16_t port;
    char key[128], name[128], url[512];
    char ticket_key[64], lease_key[256], ticket_s[32];
    uint64_t ticket;
    int lease_ms;
    redisContext *renew; /* the renewal thread's own connection */
    ticker t;
};

static void lease_tick(void *arg) {
    tether_pool_lease *l = arg;
    char ms[16], lease_key[sizeof l->lease_key];
    snprintf(ms, sizeof ms, "%d", l->lease_ms);
    pthread_mutex_lock(&l->t.mu); /* written by the acquiring thread */
    memcpy(lease_key, l->lease_key, sizeof lease_key);
    pthread_mutex_unlock(&l->t.mu);
    redisContext *c = usable(&l->renew, l->host, l->port);
    if (!c) {
        return; /* Redis unreachable: tried again next tick, within the lease */
    }
    redisReply *r;
    if (lease_key[0]) {
        r = redisCommand(c, "EVAL %s 1 %s %s %s", own_lua, lease_key, l->ticket_s, ms);
        if (r) {
            freeReplyObject(r);
        }
    }
    r = redisCommand(c, "PEXPIRE %s %s", l->ticket_key, ms);
    if (r) {
        freeReplyObject(r);
    }
}

int tether_pool_acquire(const char *host, uint16_t port, const char *key,
                        const tether_pool_acquire_options *o, tether_pool_lease **out) {
    tether_pool_acquire_options d = {0};
    if (!o) {
        d.timeout_ms = -1; /* no options: wait as long as it takes */
        o = &d;
    }
    *out = NULL;
    tether_pool_lease *l = calloc(1, sizeof *l);
    if (!l) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(l->host, sizeof l->host, "%s", host);
    l->port = port;
    snprintf(l->key, sizeof l->key, "%s", key);
    l->lease_ms = o->lease_ms > 0 ? o->lease_ms : TETHER_POOL_LEASE_MS_DEFAULT;
    char holder[300];
    if (o->holder) {
        snprintf(holder, sizeof holder, "%s", o->holder);
    } else {
        char hn[128] = "?";
        gethostname(hn, sizeof hn - 1);
        snprintf(holder, sizeof holder, "pid %d@%s", (int)getpid(), hn);
    }
    redisContext *c = NULL;
    int rc = redis_open(host, port, &c);
    if (!rc) {
        rc = redis_open(host, port, &l->renew);
    }
    redisReply *r = NULL;
    if (!rc) {
        r = redisCommand(c, "INCR tether:next");
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            rc = redis_error("INCR", c, r);
        } else {
            l->ticket = (uint64_t)r->integer;
        }
        if (r) {
            freeReplyObject(r);
        }
    }
    char q[200], devs[200], ms[16];
    snprintf(l->ticket_s, sizeof l->ticket_s, "%llu", (unsigned long long)l->ticket);
    snprintf(l->ticket_key, sizeof l->ticket_key, "tether:ticket:%s", l->ticket_s);
    snprintf(q, sizeof q, "tether:queue:%s", key);
    snprintf(devs, sizeof devs, "tether:devs:%s", key);
    snprintf(ms, sizeof ms, "%d", l->lease_ms);
    if (!rc) { /* the ticket lives while we renew it; then our place in the queue */
        rc = run(c, "SET ticket", "SET %s %s PX %s", l->ticket_key, holder, ms);
    }
    if (!rc) {
        rc = run(c, "RPUSH", "RPUSH %s %s", q, l->ticket_s);
    }
    if (!rc) {
        rc = ticker_start(&l->t, l->lease_ms / 3, lease_tick, l);
    }
    /* EVAL acquire_lua 2 QUEUE DEVS TICKET MS [SKIP...] */
    int nskip = o->skip && o->nskip > 0 ? o->nskip : 0;
    const char **argv = calloc((size_t)nskip + 7, sizeof *argv);
    if (!rc && !argv) {
        rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (argv) {
        const char *head[] = {"EVAL", acquire_lua, "2", q, devs, l->ticket_s, ms};
        memcpy(argv, head, sizeof head);
        for (int i = 0; i < nskip; i++) {
            argv[7 + i] = o->skip[i];
        }
    }
    int64_t deadline = o->timeout_ms >= 0 ? now_ms() + o->timeout_ms : INT64_MAX;
    int last_ahead = -2;
    while (!rc) {
        r = redisCommandArgv(c, 7 + nskip, argv, NULL);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
            rc = redis_error("acquire", c, r);
        } else if (r->element[0]->integer == 1 && r->elements == 3) {
            snprintf(l->name, sizeof l->name, "%s", r->element[1]->str);
            snprintf(l->url, sizeof l->url, "%s",
                     r->element[2]->type == REDIS_REPLY_STRING ? r->element[2]->str : "");
            pthread_mutex_lock(&l->t.mu);
            snprintf(l->lease_key, sizeof l->lease_key, "tether:lease:%s", l->name);
            pthread_mutex_unlock(&l->t.mu);
            freeReplyObject(r);
            break;
        } else if (r->element[0]->integer == 2 && r->element[1]->integer > 0) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "pool %s: no live device is left under this key (this client "
                                  "found %lld of them dead)",
                                  key, (long long)r->element[1]->integer);
        } else if (r->element[0]->integer == 2) {
            rc = tether_set_error(TETHER_ERR_NOT_FOUND,
                                  "pool %s: no device is registered under this key (tether pool "
                                  "status lists the pool; tether pool add registers one)",
                                  key);
        } else {
            int ahead = (int)r->element[1]->integer;
            if (ahead < 0) { /* our ticket left the queue: it expired while we were stalled */
                rc = tether_set_error(TETHER_ERR_STATE,
                                      "pool %s: this client's place in the queue expired", key);
            } else if (ahead != last_ahead && o->on_wait) {
                o->on_wait(o->wait_ctx, key, ahead);
            }
            last_ahead = ahead;
        }
        if (r && !rc) {
            freeReplyObject(r);
        } else if (r) {
            freeReplyObject(r);
            break;
        }
        if (!rc && now_ms() >= deadline) {
            rc = tether_set_error(TETHER_ERR_TIMEOUT, "pool %s: no device became free within %d ms",
                                  key, o->timeout_ms);
        }
        if (!rc) {
            usleep(20000);
        }
    }
    free(argv);
    if (rc) {
        char e[TETHER_ERROR_MSG_MAX];
        snprintf(e, sizeof e, "%s", tether_last_error());
        ticker_stop(&l->t);
        if (c && l->ticket) { /* leave the queue */
            redisReply *x = redisCommand(c, "LREM %s 0 %s", q, l->ticket_s);
            if (x) {
                freeReplyObject(x);
            }
            x = redisCommand(c, "DEL %s", l->ticket_key);
            if (x) {
                freeReplyObject(x);
            }
        }
        if (c) {
            redisFree(c);
        }
        if (l->renew) {
            redisFree(l->renew);
        }
        free(l);
        return tether_set_error(rc, "%s", e);
    }
    redisFree(c);
    *out = l;
    return 0;
}

const char *tether_pool_lease_url(const tether_pool_lease *l) {
    return l->url;
}

const char *tether_pool_lease_device(const tether_pool_lease *l) {
    return l->name;
}

uint64_t tether_pool_lease_ticket(const tether_pool_lease *l) {
    return l->ticket;
}

static void release(tether_pool_lease *l, int dead) {
    if (!l) {
        return;
    }
    ticker_stop(&l->t);
    if (!usable(&l->renew, l->host, l->port)) { /* the lease and ticket just expire */
        free(l);
        return;
    }
    if (dead) {
        char dk[300], devs[200];
        snprintf(dk, sizeof dk, "tether:dev:%s", l->name);
        snprintf(devs, sizeof devs, "tether:devs:%s", l->key);
        redisReply *x = redisCommand(l->renew, "DEL %s", dk);
        if (x) {
            freeReplyObject(x);
        }
        x = redisCommand(l->renew, "SREM %s %s", devs, l->name);
        if (x) {
            freeReplyObject(x);
        }
    }
    redisReply *r =
        redisCommand(l->renew, "EVAL %s 1 %s %s del", own_lua, l->lease_key, l->ticket_s);
    if (r) {
        freeReplyObject(r);
    }
    r = redisCommand(l->renew, "DEL %s", l->ticket_key);
    if (r) {
        freeReplyObject(r);
    }
    redisFree(l->renew);
    free(l);
}

void tether_pool_release(tether_pool_lease *l) {
    release(l, 0);
}

void tether_pool_release_dead(tether_pool_lease *l) {
    release(l, 1);
}

/* ---- devices ---- */

struct tether_pool_device {
    char host[256];
    uint16_t port;
    char dev_key[256], devs_key[200], lease_key[256], name[128], key[128], url[512];
    char *caps;
    tether_pool_device_options o;
    int out; /* the record is gone and the probe said the device does not answer */
    redisContext *c;
    ticker t;
};

/* The whole record, its lifetime and its set membership in one step (it never exists without a
 * TTL). */
static const char heartbeat_lua[] =
    "redis.call('HSET', KEYS[1], 'key', ARGV[1], 'url', ARGV[2], 'caps', ARGV[3])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
    "return redis.call('SADD', KEYS[2], ARGV[5])\n";

/* The heartbeat of a record that is still there: as heartbeat_lua, returning 1. A record that is
 * gone (a client removed the device as dead, or it expired) is not written: 0, or 2 while a
 * client still holds the device (the one that removed it, giving it back). */
static const char renew_lua[] = "if redis.call('EXISTS', KEYS[1]) == 0 then\n"
                                "  if redis.call('EXISTS', KEYS[3]) == 1 then return 2 end\n"
                                "  return 0\n"
                                "end\n"
                                "redis.call('HSET', KEYS[1], 'key', ARGV[1], 'url', ARGV[2], "
                                "'caps', ARGV[3])\n"
                                "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
                                "redis.call('SADD', KEYS[2], ARGV[5])\n"
                                "return 1\n";

static void device_tick(void *arg) {
    tether_pool_device *d = arg;
    redisContext *c = usable(&d->c, d->host, d->port);
    if (!c) {
        return; /* tried again next tick */
    }
    redisReply *r =
        redisCommand(c, "EVAL %s 3 %s %s %s %s %s %s %d %s", renew_lua, d->dev_key, d->devs_key,
                     d->lease_key, d->key, d->url, d->caps, d->o.ttl_ms, d->name);
    long long state = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) {
        freeReplyObject(r);
    }
    if (state == 1) {
        d->out = 0;
    }
    if (state != 0) {
        return; /* renewed, held by the client that removed it, or a Redis error */
    }
    /* the record is gone: written again only when the device answers */
    if (d->o.probe && d->o.probe(d->o.ctx) != 0) {
        if (!d->out && d->o.on_change) {
            d->o.on_change(d->o.ctx, 0, tether_last_error());
        }
        d->out = 1;
        return;
    }
    c = usable(&d->c, d->host, d->port); /* the probe may have taken a while */
    r = c ? redisCommand(c, "EVAL %s 2 %s %s %s %s %s %d %s", heartbeat_lua, d->dev_key,
                         d->devs_key, d->key, d->url, d->caps, d->o.ttl_ms, d->name)
          : NULL;
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (r) {
        freeReplyObject(r);
    }
    if (ok && d->out && d->o.on_change) {
        d->o.on_change(d->o.ctx, 1, NULL);
    }
    if (ok) {
        d->out = 0;
    }
}

int tether_pool_device_start(const char *host, uint16_t port, const char *key, const char *name,
                             const char *url, const char *caps, const tether_pool_device_options *o,
                             tether_pool_device **out) {
    *out = NULL;
    tether_pool_device *d = calloc(1, sizeof *d);
    if (!d) {
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (o) {
        d->o = *o;
    }
    if (d->o.ttl_ms <= 0) {
        d->o.ttl_ms = TETHER_POOL_HEARTBEAT_MS_DEFAULT;
    }
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->key, sizeof d->key, "%s", key);
    snprintf(d->url, sizeof d->url, "%s", url);
    snprintf(d->host, sizeof d->host, "%s", host);
    d->port = port;
    d->caps = strdup(caps ? caps : "{}");
    if (!d->caps) {
        free(d);
        return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(d->dev_key, sizeof d->dev_key, "tether:dev:%s", name);
    snprintf(d->devs_key, sizeof d->devs_key, "tether:devs:%s", key);
    snprintf(d->lease_key, sizeof d->lease_key, "tether:lease:%s", name);
    int rc = redis_open(host, port, &d->c);
    if (!rc) {
        redisReply *r = redisCommand(d->c, "EXISTS %s", d->dev_key);
        if (!r || r->type != REDIS_REPLY_INTEGER) {
            rc = redis_error("EXISTS", d->c, r);
        } else if (r->integer) {
            rc = tether_set_error(TETHER_ERR_STATE,
                                  "pool: a device named '%s' is already registered (alive)", name);
        }
        if (r) {
            freeReplyObject(r);
        }
    }
    if (!rc) {
        rc = run(d->c, "register", "EVAL %s 2 %s %s %s %s %s %d %s", heartbeat_lua, d->dev_key,
                 d->devs_key, d->key, d->url, d->caps, d->o.ttl_ms, d->name);
    }
    if (!rc) {
        rc = ticker_start(&d->t, d->o.ttl_ms / 3, device_tick, d);
    }
    if (rc) {
        if (d->c) {
            redisFree(d->c);
        }
        free(d->caps);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void tether_pool_device_stop(tether_pool_device *d) {
    if (!d) {
        return;
    }
    ticker_stop(&d->t);
    if (usable(&d->c, d->host, d->port)) {
        redisReply *r = redisCommand(d->c, "DEL %s", d->dev_key);
        if (r) {
            freeReplyObject(r);
        }
        r = redisCommand(d->c, "SREM %s %s", d->devs_key, d->name);
        if (r) {
            freeReplyObject(r);
        }
        redisFree(d->c);
    }
    free(d->caps);
    free(d);
}

/* ---- status ---- */

/* Every key matching pattern (SCAN), as a malloc'd array of strings. */
static int scan_keys(redisContext *c, const char *pattern, char ***out, size_t *n) {
    *out = NULL;
    *n = 0;
    char cursor[32] = "0";
    size_t cap = 0;
    do {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 100", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            int rc = redis_error("SCAN", c, r);
            if (r) {
                freeReplyObject(r);
            }
            return rc;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 16;
                char **nk = realloc(*out, cap * sizeof *nk);
                if (!nk) {
                    freeReplyObject(r);
                    return tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
                }
                *out = nk;
            }
            (*out)[(*n)++] = strdup(r->element[1]->element[i]->str);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

static void free_keys(char **k, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(k[i]);
    }
    free(k);
}

/* GET key as a JSON string item, or null. */
static cJSON *get_str(redisContext *c, const char *fmt, const char *arg) {
    redisReply *r = redisCommand(c, fmt, arg);
    cJSON *v = r && r->type == REDIS_REPLY_STRING ? cJSON_CreateString(r->str) : cJSON_CreateNull();
    if (r) {
        freeReplyObject(r);
    }
    return v;
}

int tether_pool_status_json(const char *host, uint16_t port, char **out) {
    *out = NULL;
    redisContext *c = NULL;
    int rc = redis_open(host, port, &c);
    if (rc) {
        return rc;
    }
    cJSON *root = cJSON_CreateObject(), *devs = cJSON_AddArrayToObject(root, "devices"),
          *queues = cJSON_AddArrayToObject(root, "queues");
    char **keys = NULL;
    size_t n = 0;
    rc = scan_keys(c, "tether:dev:*", &keys, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *name = keys[i] + strlen("tether:dev:");
        redisReply *r = redisCommand(c, "HGETALL %s", keys[i]);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
            if (r) {
                freeReplyObject(r);
            }
            continue; /* expired meanwhile */
        }
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", name);
        for (size_t k = 0; k + 1 < r->elements; k += 2) {
            const char *f = r->element[k]->str, *v = r->element[k + 1]->str;
            if (strcmp(f, "caps") == 0) {
                cJSON *caps = cJSON_Parse(v);
                cJSON_AddItemToObject(d, "caps", caps ? caps : cJSON_CreateString(v));
            } else {
                cJSON_AddStringToObject(d, f, v);
            }
        }
        freeReplyObject(r);
        r = redisCommand(c, "PTTL %s", keys[i]);
        cJSON_AddNumberToObject(d, "ttl_ms",
                                r && r->type == REDIS_REPLY_INTEGER ? (double)r->integer : -1);
        if (r) {
            freeReplyObject(r);
        }
        cJSON *ticket = get_str(c, "GET tether:lease:%s", name);
        cJSON *holder = cJSON_IsString(ticket)
                            ? get_str(c, "GET tether:ticket:%s", ticket->valuestring)
                            : cJSON_CreateNull();
        cJSON_AddItemToObject(d, "ticket", ticket);
        cJSON_AddItemToObject(d, "holder", holder);
        cJSON_AddItemToArray(devs, d);
    }
    free_keys(keys, n);
    keys = NULL;
    n = 0;
    if (!rc) {
        rc = scan_keys(c, "tether:queue:*", &keys, &n);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        redisReply *r = redisCommand(c, "LRANGE %s 0 -1", keys[i]);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            if (r) {
                freeReplyObject(r);
            }
            continue;
        }
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "key", keys[i] + strlen("tether:queue:"));
        cJSON *w = cJSON_AddArrayToObject(q, "waiting");
        for (size_t k = 0; k < r->elements; k++) {
            cJSON *h = get_str(c, "GET tether:ticket:%s", r->element[k]->str);
            if (cJSON_IsString(h)) {
                cJSON_AddItemToArray(w, h);
            } else {
                cJSON_Delete(h); /* a dead client's ticket, dropped at the next acquire */
            }
        }
        freeReplyObject(r);
        cJSON_AddItemToArray(queues, q);
    }
    free_keys(keys, n);
    redisFree(c);
    if (!rc) {
        *out = cJSON_Print(root);
        if (!*out) {
            rc = tether_set_error(TETHER_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    cJSON_Delete(root);
    return rc;
}
