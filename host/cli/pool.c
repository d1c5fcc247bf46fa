/*
 * `tether pool`: the shared device pool on Redis (tether/pool.h, docs/remote-boards.md).
 *
 *   tether pool add --redis HOST:PORT --key KEY --device URL [--name NAME] [--ttl-ms N]
 *       registers a device (its capabilities read from its HELLO) and keeps it registered until
 *       the command is stopped (SIGINT/SIGTERM: unregistered; killed: the record expires); a
 *       device that a client removed as dead is registered again only once it answers a HELLO
 *       again (said once when it is kept out, once when it is back);
 *   tether pool status --redis HOST:PORT [--json]
 *       the devices, who holds them, and who waits per key.
 * Clients use a device of the pool with --device pool://HOST:PORT/KEY on any device command.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "tether/crt.h"
#include "tether/pool.h"

static const char pool_usage[] =
    "usage: tether pool add --redis HOST:PORT --key KEY --device URL [--name NAME] [--ttl-ms N]\n"
    "                       [--token-file FILE] [--timeout-ms N]\n"
    "       tether pool status --redis HOST:PORT [--json]\n"
    "  add     registers a device under KEY (e.g. mps2-an385, aarch64-linux) with the\n"
    "          capabilities of its HELLO and keeps it registered (a heartbeat every TTL/3,\n"
    "          default TTL 5000 ms) until stopped; then clients of --device\n"
    "          pool://HOST:PORT/KEY queue for it, first come first served. A device a\n"
    "          client found dead comes back only once it answers a HELLO again\n"
    "          (each within --timeout-ms, default the TTL)\n"
    "  status  devices (key, URL, holder, time to live) and the queue of each key\n";

static int split_redis(const char *v, char *host, size_t n, uint16_t *port) {
    const char *colon = v ? strrchr(v, ':') : NULL;
    long p = colon ? strtol(colon + 1, NULL, 10) : 0;
    if (!colon || colon == v || (size_t)(colon - v) >= n || p < 1 || p > 65535) {
        return tether_cli_fail(2, "--redis wants HOST:PORT, got '%s'", v ? v : "");
    }
    memcpy(host, v, (size_t)(colon - v));
    host[colon - v] = 0;
    *port = (uint16_t)p;
    return 0;
}

/* The capabilities a client may want to see: what HELLO says about the device. */
static char *caps_of(const tether_device_info *d) {
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "triple", d->triple);
    cJSON_AddStringToObject(c, "arch", d->arch);
    cJSON_AddStringToObject(c, "cpu", d->cpu);
    if (d->board[0]) {
        cJSON_AddStringToObject(c, "board", d->board);
    }
    cJSON *p = cJSON_AddArrayToObject(c, "pools");
    for (uint32_t i = 0; i < d->num_pools && i < 8; i++) {
        cJSON_AddItemToArray(p, cJSON_CreateString(d->pools[i]));
    }
    cJSON_AddBoolToObject(c, "opencl", d->opencl);
    char *t = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    return t;
}

/* The agent's device, as its heartbeat thread checks it (tether_pool_device_options.probe). */
typedef struct agent {
    tether_cli_device dev;
    const char *name, *url;
} agent;

/* Does the device answer a HELLO? (quiet: the agent says each change once, on_change) */
static int probe(void *ctx) {
    return tether_cli_probe(&((agent *)ctx)->dev);
}

static void on_change(void *ctx, int registered, const char *why) {
    agent *a = ctx;
    if (registered) {
        printf("'%s' (%s) answers again: registered again\n", a->name, a->url);
        fflush(stdout);
    } else {
        fprintf(stderr,
                "tether pool: '%s' (%s) is out of the pool (a client found it dead) and does "
                "not answer (%s); kept out until it does\n",
                a->name, a->url, why ? why : "?");
    }
}

static int pool_add(const char *host, uint16_t port, const char *key, const char *name,
                    const tether_cli_device *dev, int ttl_ms) {
    tether_session *s;
    if (tether_cli_open(dev, &s)) {
        return 1;
    }
    char *caps = caps_of(tether_session_info(s));
    tether_session_close(s);
    const char *url = tether_cli_device_url(dev->url);
    /* the heartbeat's check: a quiet open, bounded by --timeout-ms or else the TTL */
    agent a = {*dev, name ? name : url, url};
    if (!a.dev.timeout_ms) {
        a.dev.timeout_ms = ttl_ms > 0 ? ttl_ms : TETHER_POOL_HEARTBEAT_MS_DEFAULT;
    }
    tether_pool_device_options po = {
        .ttl_ms = ttl_ms, .probe = probe, .on_change = on_change, .ctx = &a};
    if (!strncmp(url, "uart:", 5) || !strncmp(url, "local:", 6) || strstr(url, "://127.") ||
        strstr(url, "://localhost") || strstr(url, "://[::1]")) {
        fprintf(stderr,
                "tether pool: note: clients connect to %s themselves; only clients on this "
                "machine can (export a serial port with ser2net as tcp-serial://, give tetherd "
                "an address they reach)\n",
                url);
    }
    /* SIGINT/SIGTERM unregister; they are waited for, not handled asynchronously */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    tether_pool_device *d;
    int rc = tether_pool_device_start(host, port, key, a.name, url, caps, &po, &d);
    free(caps);
    if (rc) {
        return tether_cli_fail(1, "%s", tether_last_error());
    }
    printf("registered %s (%s) in pool %s:%u as '%s'\n", url, key, host, (unsigned)port,
           name ? name : url);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    tether_pool_device_stop(d);
    printf("unregistered '%s'\n", name ? name : url);
    return 0;
}

static int pool_status(const char *host, uint16_t port, int json) {
    char *text;
    if (tether_pool_status_json(host, port, &text)) {
        return tether_cli_fail(1, "%s", tether_last_error());
    }
    if (json) {
        printf("%s\n", text);
        free(text);
        return 0;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *e;
    printf("%-24s %-16s %-28s %-24s %8s\n", "device", "key", "url", "held by", "ttl ms");
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "devices")) {
        const cJSON *h = cJSON_GetObjectItem(e, "holder");
        printf("%-24s %-16s %-28s %-24s %8.0f\n", cJSON_GetObjectItem(e, "name")->valuestring,
               cJSON_IsString(cJSON_GetObjectItem(e, "key"))
                   ? cJSON_GetObjectItem(e, "key")->valuestring
                   : "?",
               cJSON_IsString(cJSON_GetObjectItem(e, "url"))
                   ? cJSON_GetObjectItem(e, "url")->valuestring
                   : "?",
               cJSON_IsString(h) ? h->valuestring : "(free)",
               cJSON_GetObjectItem(e, "ttl_ms")->valuedouble);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "queues")) {
        const cJSON *w = cJSON_GetObjectItem(e, "waiting"), *x;
        printf("queue %s: %d waiting", cJSON_GetObjectItem(e, "key")->valuestring,
               cJSON_GetArraySize(w));
        cJSON_ArrayForEach(x, w) {
            printf(", %s", x->valuestring);
        }
        printf("\n");
    }
    cJSON_Delete(j);
    return 0;
}

int tether_cli_cmd_pool(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(pool_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1], *redis = NULL, *key = NULL, *name = NULL;
    tether_cli_device dev = {0};
    int json = 0, ttl_ms = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = !strcmp(a, "--redis") || !strcmp(a, "--key") || !strcmp(a, "--name") ||
                    !strcmp(a, "--device") || !strcmp(a, "--ttl-ms") ||
                    !strcmp(a, "--token-file") || !strcmp(a, "--timeout-ms");
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(pool_usage, stdout);
            return 0;
        }
        if (takes && !v) {
            return tether_cli_fail(2, "%s needs a value", a);
        }
        if (!strcmp(a, "--redis")) {
            redis = v;
        } else if (!strcmp(a, "--key")) {
            key = v;
        } else if (!strcmp(a, "--name")) {
            name = v;
        } else if (!strcmp(a, "--device")) {
            dev.url = v;
        } else if (!strcmp(a, "--token-file")) {
            dev.token_file = v;
        } else if (!strcmp(a, "--timeout-ms")) {
            dev.timeout_ms = atoi(v);
        } else if (!strcmp(a, "--ttl-ms")) {
            ttl_ms = atoi(v);
            if (ttl_ms < 100) {
                return tether_cli_fail(2, "--ttl-ms wants at least 100, got '%s'", v);
            }
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else {
            return tether_cli_fail(2, "unknown option '%s' (try tether pool --help)", a);
        }
        if (takes) {
            i++;
        }
    }
    char host[256];
    uint16_t port = 0;
    if (!redis) {
        return tether_cli_fail(2, "missing --redis HOST:PORT");
    }
    if (split_redis(redis, host, sizeof host, &port)) {
        return 2;
    }
    if (!strcmp(sub, "status")) {
        return pool_status(host, port, json);
    }
    if (!strcmp(sub, "add")) {
        if (!key || !dev.url) {
            return tether_cli_fail(2, "pool add needs --key KEY and --device URL");
        }
        if (!strncmp(dev.url, "pool://", 7)) {
            return tether_cli_fail(2, "pool add registers a device URL, not a pool:// URL");
        }
        return pool_add(host, port, key, name, &dev, ttl_ms);
    }
    return tether_cli_fail(2, "unknown pool command '%s' (add, status)", sub);
}
