/*
 * The CLI's signal handling and temporary directories (a model compiled for `run`, the two
 * artifacts of `ab`, an MCU link): made under $TMPDIR (or /tmp), removed when the command ends
 * and also when it is interrupted. main() installs the handler for SIGINT, SIGTERM and SIGHUP
 * (tether_cli_signals_init). On one of them, sent to the tether process alone (`kill PID`, a CI
 * runner) or to its whole process group (a terminal's Ctrl-C), the handler ends every compiler
 * the build driver started, with what those started (they run in process groups of their own:
 * tether_build_isolate), removes what the compile in progress wrote (tether_build_interrupt),
 * kills a local: tetherd the command spawned (tether_transport_kill_spawned: it may be busy in a
 * call that never ends, e.g. a Loop whose condition stays true), removes every registered directory
 * with a forked `rm -rf` (fork, execv and waitpid are async-signal-safe, a directory walk is not),
 * then dies of the same signal, so the shell sees the usual status (128 + signal). Must stay true:
 * a registered path is complete before the handlers can see it (slots are filled first, then the
 * count is published); at most TEMPDIR_MAX directories at a time; a signal that was ignored when
 * tether started (nohup) stays ignored; the handler runs once.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "tether/crt.h"
#include "tether/rpc/transport.h"
#ifdef TETHER_HAVE_COMPILER
#include "tether/compiler.h"
#endif

#define TEMPDIR_MAX 8

static char g_dirs[TEMPDIR_MAX][512];
static volatile sig_atomic_t g_used[TEMPDIR_MAX];
static int g_handlers;
static atomic_flag g_handling = ATOMIC_FLAG_INIT;

static void remove_now(const char *dir) {
    pid_t pid = fork();
    if (pid == 0) {
        char *const argv[] = {"/bin/rm", "-rf", "--", (char *)dir, NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    if (pid > 0) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
}

static void on_signal(int sig) {
    if (atomic_flag_test_and_set(&g_handling)) {
        return; /* another thread is already ending the process */
    }
#ifdef TETHER_HAVE_COMPILER
    tether_build_interrupt(sig); /* compilers first: they may be writing into the directories */
#endif
    tether_transport_kill_spawned(); /* a local: tetherd, which may be busy in a call */
    for (int i = 0; i < TEMPDIR_MAX; i++) {
        if (g_used[i]) {
            g_used[i] = 0;
            remove_now(g_dirs[i]);
        }
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void tether_cli_signals_init(void) {
    if (g_handlers) {
        return;
    }
    g_handlers = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGHUP);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
            sigaction(sigs[i], &sa, NULL);
        }
    }
#ifdef TETHER_HAVE_COMPILER
    tether_build_isolate(true); /* the handler ends each compiler's whole process group */
#endif
}

int tether_cli_tempdir_make(char *out, size_t size, const char *tag) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base) {
        base = "/tmp";
    }
    int n = snprintf(out, size, "%s/tether-%s-XXXXXX", base, tag);
    if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof g_dirs[0]) {
        return tether_set_error(TETHER_ERR_IO, "temporary directory name under %s is too long",
                                base);
    }
    int slot = -1;
    for (int i = 0; i < TEMPDIR_MAX && slot < 0; i++) {
        slot = g_used[i] ? -1 : i;
    }
    if (slot < 0) {
        return tether_set_error(TETHER_ERR_IO, "more than %d temporary directories at once",
                                TEMPDIR_MAX);
    }
    tether_cli_signals_init();
    if (!mkdtemp(out)) {
        return tether_set_error(TETHER_ERR_IO, "cannot create a temporary directory in %s: %s",
                                base, strerror(errno));
    }
    memcpy(g_dirs[slot], out, (size_t)n + 1);
    g_used[slot] = 1;
    return 0;
}

void tether_cli_tempdir_remove(const char *dir) {
    for (int i = 0; i < TEMPDIR_MAX; i++) {
        if (g_used[i] && strcmp(g_dirs[i], dir) == 0) {
            remove_now(dir);
            g_used[i] = 0;
            return;
        }
    }
}

const char *tether_cli_tempdir_shown(const char *path) {
    for (int i = 0; i < TEMPDIR_MAX; i++) {
        size_t n = strlen(g_dirs[i]);
        if (g_used[i] && n && strncmp(path, g_dirs[i], n) == 0 && path[n] == '/') {
            return path + n + 1;
        }
    }
    return path;
}
