/*
 * The processes a build starts, and what a signal handler needs to end them and to remove a
 * partial artifact (tether_build_isolate / tether_build_interrupt, compiler.h).
 *
 * Every compiler, archiver and disassembler the build driver runs is started by
 * tether__child_start and stays registered until tether__child_wait has seen it end; with
 * tether_build_isolate on, each leads a process group of its own, so one kill reaches what it
 * starts in turn (gcc: cc1, as, collect2, ld). An artifact directory being written is registered
 * from the moment it is opened until the compile ends (tether__artifact_watch/unwatch, called by
 * artifact/compile.c), with a copy of its path and whether the compile created it.
 *
 * What must stay true: tether_build_interrupt makes only async-signal-safe calls (kill, waitpid,
 * nanosleep, open, getdents, unlinkat, rmdir, fork/execv, lock-free atomics) and restores errno;
 * it removes a directory only when the compile created it, otherwise only the files the compile
 * wrote into it (names checked against the registered copy of the path); a child is registered
 * before a signal this process handles can reach the thread that started it (those signals are
 * blocked from before fork until the pid is registered, and an interrupt waits for threads in
 * that window); no child starts once an interrupt has begun; a child never runs the parent's
 * handlers (reset to the default before they are unblocked in it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "../internal.h"
#include "tether/compiler.h"
#include "tether/crt/error.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_BOOL_LOCK_FREE == 2,
               "the interrupt registry must be usable from a signal handler");

#define CHILD_SLOTS  32
#define WATCH_SLOTS  16
#define TERM_WAIT_MS 5000 /* after the signal, before SIGKILL */
#define KILL_WAIT_MS 1000

static atomic_int g_child[CHILD_SLOTS]; /* pid of a running child; 0 free, -1 being started */
static atomic_bool g_isolate;
static atomic_int g_starting;  /* threads between blocking the signals and registering a pid */
static atomic_bool g_stopping; /* tether_build_interrupt has begun */

enum { WATCH_FREE, WATCH_FILLING, WATCH_SET, WATCH_TAKEN };
static struct {
    atomic_int state;
    char dir[sizeof(((tether__artifact_writer *)0)->dir)];
    int made_dir;
    const tether__artifact_writer *w; /* the files written so far */
} g_watch[WATCH_SLOTS];

void tether_build_isolate(bool on) {
    atomic_store(&g_isolate, on);
#ifdef __linux__
    if (on) { /* a compiler's children whose parent was killed become ours, for us to reap */
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
#endif
}

static void handled_signals(sigset_t *s) {
    sigemptyset(s);
    sigaddset(s, SIGINT);
    sigaddset(s, SIGTERM);
    sigaddset(s, SIGHUP);
}

int tether__child_start(char *const *argv, int out_fd, int err_fd, int close_fd, tether__child *c) {
    c->pid = -1;
    c->slot = -1;
    sigset_t block, old;
    handled_signals(&block);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    atomic_fetch_add(&g_starting, 1);
    int rc = TETHER_OK;
    if (atomic_load(&g_stopping)) {
        rc = tether_set_error(TETHER_ERR_IO, "interrupted: %s is not started", argv[0]);
    }
    for (int i = 0; !rc && i < CHILD_SLOTS && c->slot < 0; i++) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&g_child[i], &expect, -1)) {
            c->slot = i;
        }
    }
    if (!rc && c->slot < 0) {
        rc =
            tether_set_error(TETHER_ERR_LIMIT, "more than %d build processes at once", CHILD_SLOTS);
    }
    bool group = atomic_load(&g_isolate);
    pid_t pid = rc ? -1 : fork();
    if (pid == 0) {
        /* the child: the default action for the signals the parent handles (unless ignored,
         * as under nohup), its own process group, no terminal input, then the program */
        int sigs[] = {SIGINT, SIGTERM, SIGHUP};
        for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
            struct sigaction sa;
            if (sigaction(sigs[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN) {
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = SIG_DFL;
                sigaction(sigs[i], &sa, NULL);
            }
        }
        if (group) {
            setpgid(0, 0);
        }
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0 && nul != 0) {
            dup2(nul, 0);
            close(nul);
        }
        if (close_fd >= 0) {
            close(close_fd);
        }
        if (out_fd >= 0 && out_fd != 1) {
            dup2(out_fd, 1);
        }
        if (err_fd >= 0 && err_fd != 2) {
            dup2(err_fd, 2);
        }
        if (out_fd > 2) {
            close(out_fd);
        }
        if (err_fd > 2 && err_fd != out_fd) {
            close(err_fd);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid > 0) {
        if (group) {
            setpgid(pid, pid); /* also here: registered means the group exists */
        }
        c->pid = pid;
        atomic_store(&g_child[c->slot], pid);
    } else if (!rc) {
        rc = tether_set_error(TETHER_ERR_IO, "cannot start %s: %s", argv[0], strerror(errno));
    }
    if (rc && c->slot >= 0) {
        atomic_store(&g_child[c->slot], 0);
        c->slot = -1;
    }
    atomic_fetch_sub(&g_starting, 1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int tether__child_wait(tether__child *c) {
    if (c->pid <= 0) {
        return -1;
    }
    /* ended, but not reaped yet: its pid cannot be reused before it is unregistered */
    siginfo_t si;
    while (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    atomic_store(&g_child[c->slot], 0);
    int st = 0;
    pid_t r;
    while ((r = waitpid(c->pid, &st, 0)) < 0 && errno == EINTR) {
    }
    c->pid = -1;
    c->slot = -1;
    return r > 0 ? st : -1;
}

int tether__artifact_watch(const tether__artifact_writer *w) {
    for (int k = 0; k < WATCH_SLOTS; k++) {
        int expect = WATCH_FREE;
        if (atomic_compare_exchange_strong(&g_watch[k].state, &expect, WATCH_FILLING)) {
            memcpy(g_watch[k].dir, w->dir, sizeof g_watch[k].dir);
            g_watch[k].made_dir = w->made_dir;
            g_watch[k].w = w;
            atomic_store(&g_watch[k].state, WATCH_SET);
            return k;
        }
    }
    return -1; /* more compiles at once than slots: this one is not removed on a signal */
}

void tether__artifact_unwatch(int slot) {
    if (slot < 0 || slot >= WATCH_SLOTS) {
        return;
    }
    int expect = WATCH_SET;
    /* a handler that took the slot owns it until the process ends */
    atomic_compare_exchange_strong(&g_watch[slot].state, &expect, WATCH_FREE);
}

/* ---- the handler's half: async-signal-safe from here on ---- */

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void signal_child(pid_t pid, int sig, bool group) {
    if (!group || kill(-pid, sig) != 0) {
        kill(pid, sig);
    }
}

/* Whether the child, or (isolated) any process of its group, is still there; reaps the child
 * once it ended (ECHILD: the thread that started it did), and the group's processes that became
 * ours when it died (this process is their subreaper on Linux; elsewhere init reaps them). */
static bool child_alive(pid_t pid, bool group) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == 0) {
        return true;
    }
    if (!group) {
        return false;
    }
    while (waitpid(-pid, &st, WNOHANG) > 0) {
    }
    return kill(-pid, 0) == 0 || errno == EPERM;
}

static int wait_children(const pid_t *pids, int n, bool group, long ms) {
    for (long t = 0;; t += 5) {
        int alive = 0;
        for (int i = 0; i < n; i++) {
            alive += child_alive(pids[i], group);
        }
        if (alive == 0 || t >= ms) {
            return alive;
        }
        nap_ms(5);
    }
}

/* Unlinks the entries of dir whose names start with prefix ("": every entry). */
static void unlink_matching(const char *dir, const char *prefix) {
#ifdef __linux__
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    size_t pl = strlen(prefix);
    for (int pass = 0; pass < 8; pass++) { /* removing while listing may skip entries */
        int removed = 0;
        lseek(fd, 0, SEEK_SET);
        for (;;) {
            _Alignas(8) char buf[4096];
            long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (got <= 0) {
                break;
            }
            for (long off = 0; off + 19 < got;) {
                unsigned short reclen;
                memcpy(&reclen, buf + off + 16, sizeof reclen); /* linux_dirent64: d_reclen */
                const char *name = buf + off + 19;              /* d_name */
                if (reclen == 0) {
                    break;
                }
                if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
                    strncmp(name, prefix, pl) == 0 && unlinkat(fd, name, 0) == 0) {
                    removed++;
                }
                off += reclen;
            }
        }
        if (!removed) {
            break;
        }
    }
    close(fd);
#else
    (void)dir;
    (void)prefix;
#endif
}

static void remove_tree(const char *dir) {
    unlink_matching(dir, "");
    if (rmdir(dir) == 0 || errno == ENOENT) {
        return;
    }
    pid_t pid = fork(); /* what the listing could not remove */
    if (pid == 0) {
        char *const argv[] = {"/bin/rm", "-rf", "--", (char *)dir, NULL};
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
}

/* Removes what the compile in slot k wrote: the directory when it created it, else its files
 * (and the temporary of the file being written, ".NAME.tmp-XXXXXX", tether/file.h). */
static void remove_watched(int k) {
    const char *dir = g_watch[k].dir;
    const tether__artifact_writer *w = g_watch[k].w;
    size_t dl = strlen(dir);
    int n = w->n, pending = w->pending;
    n = n < 0 ? 0 : n > TETHER_ARTIFACT_MAX_FILES ? TETHER_ARTIFACT_MAX_FILES : n;
    int upto = pending && n < TETHER_ARTIFACT_MAX_FILES ? n + 1 : n;
    for (int i = 0; i < upto; i++) {
        const char *p = w->paths[i];
        const char *base = p + dl + 1;
        if (strncmp(p, dir, dl) != 0 || p[dl] != '/' || !*base || strchr(base, '/')) {
            continue; /* not a file of this directory */
        }
        unlink(p);
        if (i == n) {
            char tmp[300] = ".";
            size_t bl = strlen(base);
            if (bl + 7 < sizeof tmp) {
                memcpy(tmp + 1, base, bl);
                memcpy(tmp + 1 + bl, ".tmp-", 6);
                unlink_matching(dir, tmp);
            }
        }
    }
    if (g_watch[k].made_dir) {
        remove_tree(dir);
    }
}

void tether_build_interrupt(int sig) {
    int saved = errno;
    atomic_store(&g_stopping, true);
    for (int i = 0; i < 200 && atomic_load(&g_starting) > 0; i++) {
        nap_ms(5); /* another thread between fork and registering its child */
    }
    bool group = atomic_load(&g_isolate);
    pid_t pids[CHILD_SLOTS];
    int n = 0;
    for (int i = 0; i < CHILD_SLOTS; i++) {
        pid_t p = atomic_load(&g_child[i]);
        if (p > 0) {
            pids[n++] = p;
            signal_child(p, sig, group);
            signal_child(p, SIGCONT, group); /* a stopped one acts on it now */
        }
    }
    if (wait_children(pids, n, group, TERM_WAIT_MS) > 0) {
        for (int i = 0; i < n; i++) {
            signal_child(pids[i], SIGKILL, group);
        }
        wait_children(pids, n, group, KILL_WAIT_MS);
    }
    for (int k = 0; k < WATCH_SLOTS; k++) {
        int expect = WATCH_SET;
        if (atomic_compare_exchange_strong(&g_watch[k].state, &expect, WATCH_TAKEN)) {
            remove_watched(k);
        }
    }
    errno = saved;
}
