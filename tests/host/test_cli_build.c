/*
 * `tether compile` as a process while its build runs: a signal sent to the tether process alone
 * (SIGTERM, SIGINT, SIGHUP; `kill PID`, a CI runner) ends the whole compiler tree it started
 * (gcc, cc1, as), leaves no artifact directory it created (and, in one that existed before, none
 * of its files, but the user's), no temporary file in $TMPDIR, and ends tether by that signal;
 * large weights (over 4 MiB) go to a params blob unless --params linked says otherwise, with one
 * line on stderr saying which.
 *
 * The signal cases compile a dense layer with 1 MiB of linked weights, so gcc runs for a second or
 * so; the signal is sent as soon as gcc's own children (cc1) are seen in /proc, and
 * every process seen before it (by pid and start time) must be gone afterwards. Linux only (it
 * reads /proc); elsewhere the test is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#define K     1040 /* big: dense [1,K] x [K,N], 4,259,840 bytes of weights (over 4 MiB) */
#define N     1024
#define K_MID 256 /* mid: [1,K_MID] x [K_MID,N], 1 MiB: linked, gcc still runs for a second */

static char g_root[128]; /* the test's directory: the model, outputs, logs */
static char g_tmp[200];  /* the private $TMPDIR tether and gcc get */

static void path(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", g_root, name);
}

static void write_model(const char *name, int k) {
    char p[300], file[64];
    snprintf(file, sizeof file, "%s.bin", name);
    path(p, sizeof p, file);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    static float row[N];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < N; j++) {
            row[j] = (float)((i * 31 + j * 17) % 97) / 97.0f - 0.5f;
        }
        assert_int_equal(fwrite(row, sizeof row, 1, f), 1);
    }
    fclose(f);
    snprintf(file, sizeof file, "%s.json", name);
    path(p, sizeof p, file);
    f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"format\": \"tether-model\", \"version\": 1, \"name\": \"%s\", \"weights\": "
            "\"%s.bin\",\n \"tensors\": [{\"name\": \"x\", \"shape\": [1, %d]},\n"
            "  {\"name\": \"w\", \"shape\": [%d, %d], \"offset\": 0, \"length\": %zu}],\n"
            " \"inputs\": [\"x\"], \"outputs\": [\"y\"],\n"
            " \"nodes\": [{\"name\": \"d\", \"op\": \"dense\", \"inputs\": [\"x\", \"w\"], "
            "\"outputs\": [\"y\"]}]}\n",
            name, name, k, k, N, (size_t)k * N * sizeof(float));
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(g_root, sizeof g_root, "%s/tether-cli-build-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g_root)) {
        return -1;
    }
    snprintf(g_tmp, sizeof g_tmp, "%s/tmp", g_root);
    if (mkdir(g_tmp, 0755) != 0) {
        return -1;
    }
    write_model("big", K);
    write_model("mid", K_MID);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

/* Starts `tether compile MODEL.json -o OUT ARGS...` in g_root with TMPDIR=g_tmp and stderr into
 * g_root/err.txt; the signals tether handles start at their default action (not inherited from
 * whoever runs the test). */
static pid_t start_compile(const char *model, const char *out, const char *a1, const char *a2) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        char err[300];
        path(err, sizeof err, "err.txt");
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || chdir(g_root) != 0) {
            _exit(126);
        }
        dup2(fd, 2);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 1);
        setenv("TMPDIR", g_tmp, 1);
        char json[64];
        snprintf(json, sizeof json, "%s.json", model);
        const char *argv[] = {TETHER_CLI, "compile", json, "-o", out, "--quiet", a1, a2, NULL};
        execv(TETHER_CLI, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static char *read_text(const char *name) {
    static char buf[8192];
    char p[300];
    path(p, sizeof p, name);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) {
        fclose(f);
    }
    buf[n] = 0;
    return buf;
}

/* A process seen in /proc: pid, parent, start time (clock ticks since boot), state. */
typedef struct proc {
    int pid, ppid;
    unsigned long long start;
    char state;
    char comm[32];
} proc;

static int proc_read(int pid, proc *p) {
    char fn[64], buf[1024];
    snprintf(fn, sizeof fn, "/proc/%d/stat", pid);
    int fd = open(fn, O_RDONLY);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = 0;
    char *l = strchr(buf, '('), *r = strrchr(buf, ')');
    if (!l || !r) {
        return -1;
    }
    memset(p, 0, sizeof *p);
    p->pid = pid;
    snprintf(p->comm, sizeof p->comm, "%.*s", (int)(r - l - 1), l + 1);
    /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime priority nice threads itrealvalue starttime */
    char *s = r + 2;
    p->state = *s;
    unsigned long long f[20];
    int k = 0;
    for (char *t = strtok(s + 2, " "); t && k < 20; t = strtok(NULL, " ")) {
        f[k++] = strtoull(t, NULL, 10);
    }
    if (k < 19) {
        return -1;
    }
    p->ppid = (int)f[0];
    p->start = f[18];
    return 0;
}

/* Adds the children of the processes in tree[0..*n) to it (once each). */
static void add_children(proc *tree, int *n, int max) {
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < max) {
        int pid = atoi(e->d_name);
        proc p;
        if (pid <= 0 || proc_read(pid, &p) != 0) {
            continue;
        }
        int parent = 0, known = 0;
        for (int i = 0; i < *n; i++) {
            parent |= tree[i].pid == p.ppid;
            known |= tree[i].pid == p.pid && tree[i].start == p.start;
        }
        if (parent && !known) {
            tree[(*n)++] = p;
        }
    }
    closedir(d);
}

/* Whether the process seen as p still runs (same pid and start time, not a zombie). */
static int still_running(const proc *p) {
    proc now;
    return proc_read(p->pid, &now) == 0 && now.start == p->start && now.state != 'Z';
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until tether's child (gcc) has children of its own (cc1): the tree seen so far. Fails when
 * tether ends first. */
static int wait_for_compiler(pid_t tether, proc *tree, int max) {
    int n = 0;
    assert_int_equal(proc_read(tether, &tree[n++]), 0);
    for (int i = 0; i < 60000; i++) { /* a bound, not a timing assertion: a minute of polling */
        int st;
        if (waitpid(tether, &st, WNOHANG) == tether) {
            fail_msg("tether ended (status 0x%x) before gcc was seen running: %s", st,
                     read_text("err.txt"));
        }
        add_children(tree, &n, max);
        for (int k = 1; k < n; k++) {
            if (tree[k].ppid != tether) {
                add_children(tree, &n, max); /* as, next to cc1 */
                return n;
            }
        }
        sleep_ms(1);
    }
    fail_msg("gcc was not seen running within a minute");
    return n;
}

static int tmp_entries(void) {
    DIR *d = opendir(g_tmp);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            print_message("left in $TMPDIR: %s\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static int exists(const char *name) {
    char p[300];
    struct stat st;
    path(p, sizeof p, name);
    return stat(p, &st) == 0;
}

static void interrupt_case(int sig, int dir_existed) {
    const char *out = dir_existed ? "mine" : "art";
    if (dir_existed) { /* a directory of the user's, with a file of the user's */
        char p[300];
        path(p, sizeof p, "mine");
        mkdir(p, 0755);
        path(p, sizeof p, "mine/keep.txt");
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("the user's\n", f);
        fclose(f);
    }
    pid_t pid = start_compile("mid", out, NULL, NULL);
    proc tree[64];
    int n = wait_for_compiler(pid, tree, 64);
    for (int i = 0; i < n; i++) {
        print_message("%s %d (parent %d)\n", tree[i].comm, tree[i].pid, tree[i].ppid);
    }
    assert_int_equal(kill(pid, sig), 0); /* tether alone, not its process group */
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    int survivors = 0;
    for (int i = 1; i < n; i++) {
        if (still_running(&tree[i])) {
            print_message("still running after tether ended: %s %d\n", tree[i].comm, tree[i].pid);
            kill(tree[i].pid, SIGKILL); /* the test stops what it started */
            survivors++;
        }
    }
    /* the shell's status 128 + signal: tether ended by that signal */
    if (!WIFSIGNALED(st) || WTERMSIG(st) != sig) {
        fail_msg("tether should end by signal %d, status 0x%x (exit %d): %s", sig, st,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_text("err.txt"));
    }
    assert_int_equal(survivors, 0);
    assert_int_equal(tmp_entries(), 0);
    if (dir_existed) {
        assert_true(exists("mine/keep.txt"));
        static const char *const files[] = {"mine/tether_model.c",  "mine/tether_model.h",
                                            "mine/tether_model.o",  "mine/tether_model.su",
                                            "mine/tether_model.ci", "mine/build.log"};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            if (exists(files[i])) {
                fail_msg("%s was left behind", files[i]);
            }
        }
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s/mine'", g_root);
        assert_int_equal(system(cmd), 0);
    } else if (exists("art")) {
        fail_msg("the artifact directory tether created was left behind");
    }
}

static void test_sigterm(void **state) {
    (void)state;
    interrupt_case(SIGTERM, 0);
}

static void test_sigint(void **state) {
    (void)state;
    interrupt_case(SIGINT, 0);
}

static void test_sighup(void **state) {
    (void)state;
    interrupt_case(SIGHUP, 0);
}

static void test_sigterm_existing_dir(void **state) {
    (void)state;
    interrupt_case(SIGTERM, 1);
}

static cJSON *metadata(const char *dir) {
    char p[300], name[100];
    snprintf(name, sizeof name, "%s/metadata.json", dir);
    path(p, sizeof p, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *m = cJSON_Parse(buf);
    assert_non_null(m);
    return m;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* Over 4 MiB of weights and no --params: a params blob, said once on stderr. */
static void test_large_weights_blob(void **state) {
    (void)state;
    pid_t pid = start_compile("big", "blob", NULL, NULL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    const char *err = read_text("err.txt");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail_msg("compile failed (0x%x): %s", st, err);
    }
    print_message("%s", err);
    assert_int_equal(count(err, "tether compile: 4.1 MiB of weights: they go to a params blob"), 1);
    assert_non_null(strstr(err, "--params linked links them anyway"));
    cJSON *m = metadata("blob");
    assert_string_equal(cJSON_GetObjectItem(m, "params")->valuestring, "blob");
    assert_string_equal(cJSON_GetObjectItem(m, "params_file")->valuestring, "params.bin");
    assert_non_null(cJSON_GetObjectItem(m, "set_params"));
    assert_int_equal((size_t)cJSON_GetObjectItem(m, "params_bytes")->valuedouble,
                     (size_t)K * N * sizeof(float));
    cJSON_Delete(m);
    char p[300];
    struct stat sb;
    path(p, sizeof p, "blob/params.bin");
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal((size_t)sb.st_size, (size_t)K * N * sizeof(float));
    path(p, sizeof p, "blob/tether_model.c"); /* the source holds no weights */
    assert_int_equal(stat(p, &sb), 0);
    assert_true(sb.st_size < 1 << 20);
}

/* --params linked is kept above 4 MiB: the source carries the weights, no params.bin is written,
 * and stderr says at once (before gcc) that this build links that much. Checked while gcc runs,
 * then the build is ended (its cleanup is the cases above). */
static void test_large_weights_linked(void **state) {
    (void)state;
    pid_t pid = start_compile("big", "linked", "--params", "linked");
    proc tree[64];
    wait_for_compiler(pid, tree, 64);
    const char *err = read_text("err.txt");
    int said = count(err, "tether compile: linking 4.1 MiB of weights into the C source");
    struct stat sb;
    char p[300];
    path(p, sizeof p, "linked/tether_model.c");
    int c_ok = stat(p, &sb) == 0 && sb.st_size > K * N * 2; /* at least 2 characters a weight */
    int blob = exists("linked/params.bin");
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(said, 1);
    assert_true(c_ok);
    assert_false(blob);
    assert_null(strstr(err, "they go to a params blob"));
}

int main(void) {
#ifndef __linux__
    return 77;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_sighup),
        cmocka_unit_test(test_sigterm_existing_dir),
        cmocka_unit_test(test_large_weights_blob),
        cmocka_unit_test(test_large_weights_linked),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
