/*
 * tetherd cross-built for aarch64 (cmake/toolchains/aarch64-linux-gnu.cmake, TETHER_DEVICE_ONLY)
 * run under qemu-aarch64 on 127.0.0.1, as it would run on a board or phone: its HELLO says
 * aarch64, and `tether ab` compiles the KWS example for aarch64-linux from that HELLO, uploads
 * both ABIs and gets outputs equal to the interpreter.
 * usage: test_tetherd_aarch64 AARCH64_TETHERD TETHER_EXECUTABLE
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

static const char *tetherd_a64, *tether_exe;
static char dir[64] = "/tmp/ta64XXXXXX", url[64];
static pid_t daemon_pid = -1;
static char out_text[65536];

/* Runs `tether ARGS` in dir; output in out_text. */
static int cli(const char *fmt, ...) {
    char args[1024], cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s > out.txt 2>&1", dir, tether_exe, args);
    int st = system(cmd);
    char p[128];
    snprintf(p, sizeof p, "%s/out.txt", dir);
    FILE *f = fopen(p, "r");
    out_text[f ? fread(out_text, 1, sizeof out_text - 1, f) : 0] = 0;
    if (f) {
        fclose(f);
    }
    printf("$ tether %s\n%s", args, out_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static cJSON *read_json(const char *name) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    if (!f) {
        fail_msg("%s was not written", name);
    }
    static char txt[65536];
    size_t n = fread(txt, 1, sizeof txt - 1, f);
    fclose(f);
    txt[n] = 0;
    cJSON *j = cJSON_Parse(txt);
    if (!j) {
        fail_msg("%s is not JSON", name);
    }
    return j;
}

static int setup(void **state) {
    (void)state;
    if (system("command -v qemu-aarch64 >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: qemu-aarch64 not installed (scripts/setup installs qemu-user)\n");
        exit(77);
    }
    if (!mkdtemp(dir)) {
        return -1;
    }
    char pf[128];
    snprintf(pf, sizeof pf, "%s/port", dir);
    daemon_pid = fork();
    if (daemon_pid < 0) {
        return -1;
    }
    if (daemon_pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execlp("qemu-aarch64", "qemu-aarch64", tetherd_a64, "--tcp", "127.0.0.1:0", "--port-file",
               pf, "--quiet", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1500; i++) { /* up to 15 s: the emulated daemon starts slowly */
        FILE *f = fopen(pf, "r");
        int port = 0;
        if (f) {
            int got = fscanf(f, "%d", &port);
            fclose(f);
            if (got == 1 && port > 0) {
                snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
                return 0;
            }
        }
        usleep(10000);
    }
    return -1;
}

static int teardown(void **state) {
    (void)state;
    if (daemon_pid > 0) {
        kill(daemon_pid, SIGTERM);
        while (waitpid(daemon_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_hello(void **state) {
    (void)state;
    assert_int_equal(cli("info --device %s --json", url), 0);
    cJSON *j = cJSON_Parse(out_text);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "triple")->valuestring, "aarch64-linux-gnu");
    assert_string_equal(cJSON_GetObjectItem(j, "arch")->valuestring, "aarch64");
    cJSON_Delete(j);
}

static void test_ab_picks_aarch64(void **state) {
    (void)state;
    int rc = cli("ab '%s/examples/kws/kws.json' --device %s --json ab.json --repeat 3 "
                 "--min-repeat-ms 2",
                 TETHER_SOURCE_DIR, url);
    if (rc) {
        fail_msg("ab failed (%d)", rc);
    }
    assert_non_null(strstr(out_text, "for aarch64-linux on tcp://127.0.0.1:"));
    cJSON *j = read_json("ab.json");
    assert_string_equal(cJSON_GetObjectItem(j, "target")->valuestring, "aarch64-linux");
    cJSON *abis = cJSON_GetObjectItem(j, "abis");
    assert_int_equal(cJSON_GetArraySize(abis), 2);
    for (int k = 0; k < 2; k++) {
        cJSON *a = cJSON_GetArrayItem(abis, k);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "outputs_equal")));
        assert_true(cJSON_GetObjectItem(a, "stack_hwm")->valuedouble > 0);
    }
    cJSON_Delete(j);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s AARCH64_TETHERD TETHER_EXECUTABLE\n", argv[0]);
        return 2;
    }
    tetherd_a64 = argv[1];
    tether_exe = argv[2];
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello),
        cmocka_unit_test(test_ab_picks_aarch64),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
