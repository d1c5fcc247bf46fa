/*
 * The device pool on Redis (tether/pool.h, `tether pool`, pool:// URLs) against a redis-server
 * this test starts on 127.0.0.1: 4 tetherd devices registered by `tether pool add` serve 16
 * concurrent `tether run` clients (2 of a model, 14 of an artifact; every output equal to the
 * interpreter, nothing held after);
 * grants follow the queue order; a client killed with SIGKILL while holding a device loses it
 * when its lease expires; a device killed mid-run makes its client queue again and finish on
 * another device, or end with an error when none is left (an artifact and a module's function
 * alike); dead devices drop out of the pool, and a key without devices is refused at once; an
 * agent registers a device a client removed as dead again only once it answers; a client never
 * leases again a device it found dead, and finishes on a live one.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "free_port.h"
#include "tether/crt.h"
#include "tether/npy.h"
#include "tether/pool.h"

#define NDEV     4
#define NCLIENTS 16
/* the devices of each test: tetherd_pid[i] and agent_pid[i] ("dev<i>") */
#define LOSS0  NDEV       /* and LOSS0 + 1: test_device_loss */
#define MOD0   (NDEV + 2) /* and MOD0 + 1: test_module_loss */
#define PROBED (NDEV + 4) /* test_agent_probe */
#define LIVE   (NDEV + 5) /* test_skip_dead */
#define NPROC  (NDEV + 6)

static char dir[64] = "/tmp/tpoolXXXXXX";
static int redis_port;
static char redis_addr[64];
static pid_t redis_pid = -1, tetherd_pid[NPROC], agent_pid[NPROC];
static int tetherd_port[NPROC];

/* Starts `sh -c cmd` (exec'd) in dir; the child dies with this test. */
static pid_t spawn(const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0); /* its own group: stop() ends it with every process it started */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (chdir(dir) != 0) {
            _exit(127);
        }
        char full[2100];
        snprintf(full, sizeof full, "exec %s", cmd);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void stop(pid_t *pid, int sig) {
    if (*pid > 0) {
        kill(-*pid, sig);
        while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
        }
        *pid = -1;
    }
}

/* Runs `tether ARGS` in dir, output into out.txt; returns the exit code. */
static int tether(char *out, size_t n, const char *fmt, ...) {
    char args[1536], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    static int seq;
    char of[128];
    snprintf(of, sizeof of, "%s/cmd%d.txt", dir, __atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST));
    snprintf(cmd, sizeof cmd, "cd '%s' && TETHER_POOL_LEASE_MS=2000 '%s' %s > '%s' 2>&1", dir,
             TETHER_CLI, args, of);
    int st = system(cmd);
    FILE *f = fopen(of, "r");
    size_t got = f ? fread(out, 1, n - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    out[got] = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static cJSON *status(void) {
    char *text;
    if (tether_pool_status_json("127.0.0.1", (uint16_t)redis_port, &text) != 0) {
        fail_msg("status: %s", tether_last_error());
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    assert_non_null(j);
    return j;
}

/* Devices of status j that are held, and queued tickets over every key. */
static void count_status(cJSON *j, int *held, int *waiting, int *devices) {
    *held = *waiting = *devices = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "devices")) {
        (*devices)++;
        *held += cJSON_IsString(cJSON_GetObjectItem(e, "holder"));
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "queues")) {
        *waiting += cJSON_GetArraySize(cJSON_GetObjectItem(e, "waiting"));
    }
}

/* Starts tetherd i on port (0: a free one, read back into tetherd_port[i]). */
static void start_tetherd(int i, int port) {
    char pf[128];
    snprintf(pf, sizeof pf, "%s/port%d", dir, i);
    unlink(pf);
    tetherd_pid[i] =
        spawn("'%s' --tcp 127.0.0.1:%d --port-file '%s' --quiet", TETHERD_PATH, port, pf);
    port = 0;
    for (int k = 0; k < 500 && port <= 0; k++) {
        FILE *f = fopen(pf, "r");
        if (f) {
            if (fscanf(f, "%d", &port) != 1) {
                port = 0;
            }
            fclose(f);
        }
        if (port <= 0) {
            usleep(10000);
        }
    }
    assert_true(port > 0);
    tetherd_port[i] = port;
}

/* Starts tetherd i on a free port and registers it under key as "dev<i>" (the agent's output in
 * agent<i>.log). */
static void start_device(int i, const char *key) {
    char url[64];
    start_tetherd(i, 0);
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", tetherd_port[i]);
    agent_pid[i] = spawn("'%s' pool add --redis %s --key %s --device %s --name dev%d --ttl-ms 1000 "
                         "> agent%d.log 2>&1",
                         TETHER_CLI, redis_addr, key, url, i, i);
    for (int k = 0; k < 500; k++) { /* registered? */
        cJSON *j = status();
        int found = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "devices")) {
            char want[16];
            snprintf(want, sizeof want, "dev%d", i);
            found |= strcmp(cJSON_GetObjectItem(e, "name")->valuestring, want) == 0;
        }
        cJSON_Delete(j);
        if (found) {
            return;
        }
        usleep(10000);
    }
    fail_msg("device %d did not register", i);
}

static int setup(void **state) {
    (void)state;
    if (system("command -v redis-server >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: redis-server not installed (scripts/setup installs it)\n");
        exit(77);
    }
    if (!mkdtemp(dir)) {
        return -1;
    }
    for (int attempt = 0; attempt < 3; attempt++) { /* the port may be taken meanwhile */
        redis_port = tether_test_free_port();
        snprintf(redis_addr, sizeof redis_addr, "127.0.0.1:%d", redis_port);
        redis_pid = spawn("redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no "
                          "--protected-mode yes",
                          redis_port);
        for (int k = 0; k < 500; k++) {
            char *text;
            if (tether_pool_status_json("127.0.0.1", (uint16_t)redis_port, &text) == 0) {
                free(text);
                return 0;
            }
            if (waitpid(redis_pid, NULL, WNOHANG) == redis_pid) { /* it exited: try another */
                redis_pid = -1;
                break;
            }
            usleep(10000);
        }
        stop(&redis_pid, SIGKILL);
    }
    return -1;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < NPROC; i++) {
        stop(&agent_pid[i], SIGTERM);
        stop(&tetherd_pid[i], SIGTERM);
    }
    stop(&redis_pid, SIGTERM);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_input(void) {
    int64_t shape[] = {1, 1, 49, 10};
    float x[490];
    for (int i = 0; i < 490; i++) {
        x[i] = (float)((i * 37) % 100) / 100.0f;
    }
    char p[128];
    snprintf(p, sizeof p, "%s/mfcc.npy", dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 4, x), 0);
}

typedef struct client {
    int index, rc;
    char out[4096];
    char args[1024]; /* loss_client, cmd_client: the command's arguments */
    volatile int done;
} client;

/* Clients 0 and 1 run the model (compiled for the device they lease), the others the artifact
 * kwsmany compiled before: 16 gcc -O3 builds of KWS at once on 2 cores were most of this file's
 * time, and the pool's part (leases, queue, uploads, outputs) is the same for both. */
static void *client_main(void *arg) {
    client *c = arg;
    char model[512];
    snprintf(model, sizeof model, "%s/examples/kws/kws.json", TETHER_SOURCE_DIR);
    c->rc = tether(c->out, sizeof c->out,
                   "run '%s' --device pool://%s/x86 --in mfcc.npy --out out%d.npy",
                   c->index < 2 ? model : "kwsmany", redis_addr, c->index);
    return NULL;
}

/* 4 devices x 16 clients at once (2 compile the model, 14 run an artifact): every run succeeds
 * with the interpreter's outputs; then no device is held and nobody waits. */
static void test_many_clients(void **state) {
    (void)state;
    for (int i = 0; i < NDEV; i++) {
        start_device(i, "x86");
    }
    write_input();
    char out[4096];
    int rc = tether(out, sizeof out,
                    "run '%s/examples/kws/kws.json' --reference --in mfcc.npy --out ref.npy",
                    TETHER_SOURCE_DIR);
    assert_int_equal(rc, 0);
    rc = tether(out, sizeof out, "compile '%s/examples/kws/kws.json' -o kwsmany --quiet",
                TETHER_SOURCE_DIR);
    if (rc) {
        fail_msg("compile: %s", out);
    }
    static client cl[NCLIENTS];
    pthread_t th[NCLIENTS];
    for (int i = 0; i < NCLIENTS; i++) {
        cl[i].index = i;
        pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    for (int i = 0; i < NCLIENTS; i++) {
        pthread_join(th[i], NULL);
    }
    char p[128];
    snprintf(p, sizeof p, "%s/ref.npy", dir);
    tether_npy ref;
    assert_int_equal(tether_npy_read(p, &ref), 0);
    for (int i = 0; i < NCLIENTS; i++) {
        if (cl[i].rc != 0) {
            fail_msg("client %d: exit %d: %s", i, cl[i].rc, cl[i].out);
        }
        snprintf(p, sizeof p, "%s/out%d.npy", dir, i);
        tether_npy y;
        assert_int_equal(tether_npy_read(p, &y), 0);
        assert_int_equal(y.nbytes, ref.nbytes);
        for (size_t k = 0; k < y.nbytes / 4; k++) {
            assert_true(fabsf(((float *)y.data)[k] - ((float *)ref.data)[k]) < 1e-5f);
        }
        tether_npy_free(&y);
    }
    tether_npy_free(&ref);
    cJSON *j = status();
    int held, waiting, devices;
    count_status(j, &held, &waiting, &devices);
    cJSON_Delete(j);
    assert_int_equal(devices, NDEV);
    assert_int_equal(held, 0);
    assert_int_equal(waiting, 0);
    /* the text status names the devices */
    rc = tether(out, sizeof out, "pool status --redis %s", redis_addr);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "dev0"));
    assert_non_null(strstr(out, "(free)"));
}

/* Grants follow the queue: with the one "fair" device held, 6 waiters queued one after another
 * get it in that order. */
typedef struct waiter {
    int index;
    int *order, *next;
    pthread_mutex_t *mu;
    int rc;
} waiter;

static void *waiter_main(void *arg) {
    waiter *w = arg;
    tether_pool_acquire_options o = {.lease_ms = 2000, .timeout_ms = 20000};
    tether_pool_lease *l;
    w->rc = tether_pool_acquire("127.0.0.1", (uint16_t)redis_port, "fair", &o, &l);
    if (w->rc == 0) {
        pthread_mutex_lock(w->mu);
        w->order[(*w->next)++] = w->index;
        pthread_mutex_unlock(w->mu);
        usleep(20000);
        tether_pool_release(l);
    }
    return NULL;
}

static int queue_length(const char *key) {
    cJSON *j = status();
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "queues")) {
        if (strcmp(cJSON_GetObjectItem(e, "key")->valuestring, key) == 0) {
            n = cJSON_GetArraySize(cJSON_GetObjectItem(e, "waiting"));
        }
    }
    cJSON_Delete(j);
    return n;
}

static void test_fifo(void **state) {
    (void)state;
    tether_pool_device *d;
    tether_pool_device_options dopt = {.ttl_ms = 2000};
    assert_int_equal(tether_pool_device_start("127.0.0.1", (uint16_t)redis_port, "fair", "fair0",
                                              "tcp://127.0.0.1:1", "{}", &dopt, &d),
                     0);
    tether_pool_acquire_options o = {.lease_ms = 2000, .timeout_ms = 5000};
    tether_pool_lease *first;
    assert_int_equal(tether_pool_acquire("127.0.0.1", (uint16_t)redis_port, "fair", &o, &first), 0);
    assert_string_equal(tether_pool_lease_device(first), "fair0");
    enum { N = 6 };
    waiter w[N];
    pthread_t th[N];
    int order[N], next = 0;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < N; i++) {
        w[i] = (waiter){i, order, &next, &mu, -1};
        pthread_create(&th[i], NULL, waiter_main, &w[i]);
        for (int k = 0; k < 500 && queue_length("fair") < i + 1; k++) { /* queued, in order */
            usleep(10000);
        }
        assert_int_equal(queue_length("fair"), i + 1);
    }
    tether_pool_release(first);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    assert_int_equal(next, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(order[i], i);
    }
    /* a client killed with SIGKILL while holding the device: its lease expires */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t child = fork();
    if (child == 0) {
        tether_pool_acquire_options co = {.lease_ms = 1000, .timeout_ms = 5000};
        tether_pool_lease *l;
        char ok = tether_pool_acquire("127.0.0.1", (uint16_t)redis_port, "fair", &co, &l) == 0;
        if (write(pfd[1], &ok, 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    char ok = 0;
    assert_int_equal(read(pfd[0], &ok, 1), 1);
    assert_int_equal(ok, 1);
    close(pfd[0]);
    close(pfd[1]);
    cJSON *j = status();
    int held, waiting, devices;
    count_status(j, &held, &waiting, &devices);
    cJSON_Delete(j);
    assert_true(held >= 1); /* the child holds fair0 */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    tether_pool_lease *after;
    o.timeout_ms = 10000; /* well over the dead client's 1 s lease */
    assert_int_equal(tether_pool_acquire("127.0.0.1", (uint16_t)redis_port, "fair", &o, &after), 0);
    tether_pool_release(after);
    tether_pool_device_stop(d);
}

/* A device killed mid-run: `tether bench` gives it back and queues again, finishing on the other
 * device of the key; when the last device dies mid-run too, the client ends with an error (not a
 * hang); the dead devices' records expire, and the key is then refused at once with a reason. */
static void *loss_client(void *arg) {
    client *c = arg;
    c->rc = tether(c->out, sizeof c->out, "%s", c->args);
    c->done = 1;
    return NULL;
}

static int device_state(const char *name, int *held) {
    cJSON *j = status();
    int found = 0;
    *held = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "devices")) {
        if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) == 0) {
            found = 1;
            *held = cJSON_IsString(cJSON_GetObjectItem(e, "holder"));
        }
    }
    cJSON_Delete(j);
    return found;
}

/* Runs a bench client, kills whichever of the devices `first`..`last` it holds once the
 * measurement runs, and returns the killed device's index (the client's result in *c). */
static int bench_and_kill(client *c, int first, int last) {
    pthread_t th;
    pthread_create(&th, NULL, loss_client, c);
    int victim = -1;
    for (int k = 0; k < 3000 && victim < 0; k++) {
        for (int i = first; i <= last && victim < 0; i++) {
            char name[16];
            int held;
            snprintf(name, sizeof name, "dev%d", i);
            if (tetherd_pid[i] > 0 && device_state(name, &held) && held) {
                victim = i;
            }
        }
        if (victim < 0) {
            usleep(10000);
        }
    }
    assert_true(victim >= 0);
    usleep(500000); /* into the measurement */
    stop(&agent_pid[victim], SIGKILL);
    stop(&tetherd_pid[victim], SIGKILL); /* with its session processes */
    pthread_join(th, NULL);
    char name[16];
    snprintf(name, sizeof name, "dev%d", victim);
    int gone = 0, held;
    for (int k = 0; k < 500 && !gone; k++) { /* its record expires (1 s heartbeat TTL) */
        gone = !device_state(name, &held);
        if (!gone) {
            usleep(10000);
        }
    }
    assert_true(gone);
    return victim;
}

static void test_device_loss(void **state) {
    (void)state;
    start_device(LOSS0, "loss");
    start_device(LOSS0 + 1, "loss");
    write_input();
    char cout[4096];
    assert_int_equal(tether(cout, sizeof cout, "compile '%s/examples/kws/kws.json' -o kwsart",
                            TETHER_SOURCE_DIR),
                     0);
    static client c1, c2;
    /* an artifact (compiled before), so the client holds one device from the start: a MODEL
     * would first lease one to read its target */
    snprintf(c1.args, sizeof c1.args,
             "bench kwsart --device pool://%s/loss --in mfcc.npy --number 1 --repeat 3 "
             "--min-repeat-ms 1000",
             redis_addr);
    snprintf(c2.args, sizeof c2.args, "%s", c1.args);
    int v = bench_and_kill(&c1, LOSS0, LOSS0 + 1);
    /* usually killed during the measurement (the run is queued again, said on stderr); on a
     * slow machine maybe while the session opened (another device is leased quietly) */
    if (c1.rc != 0 || !strstr(c1.out, "3 repeats")) {
        fail_msg("device %d lost: the client should finish on the other one: exit %d, %s", v, c1.rc,
                 c1.out);
    }
    printf("first loss: %s\n",
           strstr(c1.out, "queuing again") ? "mid-run, queued again" : "before the measurement");
    bench_and_kill(&c2, LOSS0, LOSS0 + 1); /* the last one */
    if (c2.rc != 1 || !strstr(c2.out, "tether bench: ")) {
        fail_msg("the last device lost: exit %d, output %s", c2.rc, c2.out);
    }
    char out[4096];
    int rc = tether(out, sizeof out, "info --device pool://%s/loss", redis_addr);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "no device is registered under this key"));
    cJSON *j = status();
    int held, waiting, devices;
    count_status(j, &held, &waiting, &devices);
    cJSON_Delete(j);
    assert_int_equal(held, 0); /* nothing left locked */
    assert_int_equal(waiting, 0);
}

/* a.npy, b.npy: add_packed's float32 inputs (16 values); a + b is what c.npy must hold */
static void write_ab(void) {
    int64_t shape[] = {16};
    float a[16], b[16];
    for (int i = 0; i < 16; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 100.0f - (float)i;
    }
    char p[128];
    snprintf(p, sizeof p, "%s/a.npy", dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 1, a), 0);
    snprintf(p, sizeof p, "%s/b.npy", dir);
    assert_int_equal(tether_npy_write(p, TETHER_FLOAT32, shape, 1, b), 0);
}

static void assert_sum(const char *file) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    tether_npy y;
    assert_int_equal(tether_npy_read(p, &y), 0);
    assert_int_equal(y.nbytes, 16 * sizeof(float));
    for (int i = 0; i < 16; i++) {
        assert_true(((float *)y.data)[i] == (float)i * 0.5f + 100.0f - (float)i);
    }
    tether_npy_free(&y);
}

/* `tether bench MODULE.so FUNC` whose device is killed mid-run queues again and finishes on the
 * other device of the key, as an artifact's run does. */
static void test_module_loss(void **state) {
    (void)state;
    start_device(MOD0, "modloss");
    start_device(MOD0 + 1, "modloss");
    write_ab();
    static client c;
    snprintf(c.args, sizeof c.args,
             "bench '%s' add_packed --device pool://%s/modloss --in a.npy --in b.npy --out "
             "c.npy --number 1 --repeat 2 --min-repeat-ms 1000",
             TESTMOD_PATH, redis_addr);
    int v = bench_and_kill(&c, MOD0, MOD0 + 1);
    if (c.rc != 0 || !strstr(c.out, "2 repeats")) {
        fail_msg("device %d lost: the module's client should finish on the other one: exit %d, %s",
                 v, c.rc, c.out);
    }
    assert_sum("c.npy");
    printf("module run: %s\n",
           strstr(c.out, "queuing again") ? "mid-run, queued again" : "before the measurement");
}

static int agent_log_count(int i, const char *what) {
    char p[128], text[8192];
    snprintf(p, sizeof p, "%s/agent%d.log", dir, i);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    text[n] = 0;
    int count = 0;
    for (const char *t = strstr(text, what); t; t = strstr(t + 1, what)) {
        count++;
    }
    return count;
}

/* A device whose tetherd died stays in the pool until a client finds it dead; its agent then
 * keeps it out (said once) while it does not answer a HELLO, and registers it again once a new
 * tetherd answers on its address. */
static void test_agent_probe(void **state) {
    (void)state;
    start_device(PROBED, "probed");
    char name[16], out[4096];
    snprintf(name, sizeof name, "dev%d", PROBED);
    stop(&tetherd_pid[PROBED], SIGKILL);
    int rc = tether(out, sizeof out, "info --device pool://%s/probed", redis_addr);
    if (rc != 1) {
        fail_msg("a dead device: exit %d, %s", rc, out);
    }
    /* the agent probes at its next heartbeat (1000/3 ms) and says why it keeps the device out */
    int held;
    for (int k = 0; k < 300 && !agent_log_count(PROBED, "does not answer"); k++) {
        assert_false(device_state(name, &held)); /* never back while dead */
        usleep(10000);
    }
    assert_int_equal(agent_log_count(PROBED, "does not answer"), 1);
    for (int k = 0; k < 100; k++) { /* three more heartbeats: still out, said once */
        assert_false(device_state(name, &held));
        usleep(10000);
    }
    assert_int_equal(agent_log_count(PROBED, "does not answer"), 1);
    /* alive again on the same address: back within a heartbeat or two */
    start_tetherd(PROBED, tetherd_port[PROBED]);
    int back = 0;
    for (int k = 0; k < 500 && !back; k++) { /* registered, then said */
        back = device_state(name, &held) && agent_log_count(PROBED, "answers again");
        if (!back) {
            usleep(10000);
        }
    }
    assert_true(back);
    assert_int_equal(agent_log_count(PROBED, "answers again"), 1);
    rc = tether(out, sizeof out, "info --device pool://%s/probed", redis_addr);
    if (rc != 0) {
        fail_msg("the device back in the pool: exit %d, %s", rc, out);
    }
}

/* An agent whose check passes but whose device clients cannot reach (it registers a port
 * nobody listens on again whenever a client removed it): counts its probes. */
static int dead_probes;

static int probe_passes(void *ctx) {
    (void)ctx;
    __atomic_fetch_add(&dead_probes, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* Two devices under one key, one of them dead but registered again at every heartbeat: a client
 * finds it dead once, never leases it again, waits for the live one (held by someone else
 * meanwhile) and finishes there; with only the dead one left, the key is refused. */
static void test_skip_dead(void **state) {
    (void)state;
    start_device(LIVE, "flaky");
    write_ab();
    tether_pool_acquire_options o = {.lease_ms = 2000, .timeout_ms = 5000};
    tether_pool_lease *live;
    assert_int_equal(tether_pool_acquire("127.0.0.1", (uint16_t)redis_port, "flaky", &o, &live), 0);
    char live_name[16];
    snprintf(live_name, sizeof live_name, "dev%d", LIVE);
    assert_string_equal(tether_pool_lease_device(live), live_name);
    /* the dead device: a port bound but not listening (connections refused) */
    int sock = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof a;
    assert_int_equal(bind(sock, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(sock, (struct sockaddr *)&a, &alen), 0);
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
    tether_pool_device_options dopt = {.ttl_ms = 1000, .probe = probe_passes};
    tether_pool_device *dead;
    assert_int_equal(tether_pool_device_start("127.0.0.1", (uint16_t)redis_port, "flaky", "ghost",
                                              url, "{}", &dopt, &dead),
                     0);
    static client c;
    snprintf(c.args, sizeof c.args,
             "run '%s' add_packed --device pool://%s/flaky --in a.npy --in b.npy --out s.npy",
             TESTMOD_PATH, redis_addr);
    pthread_t th;
    pthread_create(&th, NULL, loss_client, &c);
    /* the client leases the dead device (the only free one) and removes it; its heartbeat
     * writes it again at once (the probe passes) */
    for (int k = 0; k < 500 && !__atomic_load_n(&dead_probes, __ATOMIC_SEQ_CST) && !c.done; k++) {
        usleep(10000);
    }
    assert_int_equal(__atomic_load_n(&dead_probes, __ATOMIC_SEQ_CST), 1);
    /* three of its heartbeats: the client waits for the live device instead of leasing the dead
     * one again */
    for (int k = 0; k < 100 && !c.done; k++) {
        usleep(10000);
    }
    tether_pool_release(live);
    pthread_join(th, NULL);
    if (c.rc != 0) {
        fail_msg("the client should finish on the live device: exit %d, %s", c.rc, c.out);
    }
    assert_sum("s.npy");
    assert_int_equal(__atomic_load_n(&dead_probes, __ATOMIC_SEQ_CST), 1); /* found dead once */
    /* only the dead device left: refused, naming it */
    stop(&agent_pid[LIVE], SIGTERM); /* unregisters the live one */
    char out[4096];
    int rc = tether(out, sizeof out, "info --device pool://%s/flaky", redis_addr);
    if (rc != 1 || !strstr(out, "ghost") || !strstr(out, "no other live device is left")) {
        fail_msg("only a dead device left: exit %d, %s", rc, out);
    }
    tether_pool_device_stop(dead);
    close(sock);
    cJSON *j = status();
    int nheld, waiting, devices;
    count_status(j, &nheld, &waiting, &devices);
    cJSON_Delete(j);
    assert_int_equal(nheld, 0); /* nothing left locked */
    assert_int_equal(waiting, 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_clients), cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_device_loss),  cmocka_unit_test(test_module_loss),
        cmocka_unit_test(test_agent_probe),  cmocka_unit_test(test_skip_dead),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
