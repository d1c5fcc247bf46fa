/*
 * tetherd: the session-process table of the daemon (daemon.h). Every session is a child process,
 * forked here into a slot that holds its pid, its private directory and the daemon's copy of its
 * connection; here it is reaped, its end logged, and its slot and directory freed.
 *
 * What must stay true:
 *  - the daemon never runs uploaded code itself: every session is a child process (leader of its
 *    own process group, dying with the daemon), reaped with waitpid (no zombies); its private
 *    0700 directory is removed after it has been reaped;
 *  - the daemon keeps one copy of each session's connection until it has reaped the session (no
 *    fd growth past the live sessions), so that it can answer a call for a session it had to
 *    kill; a child closes every inherited descriptor except its own connection and stdio;
 *  - a call whose session process died in it (an exit() or a kill its own handlers could not
 *    report) is answered CRASHED here, once: the watch's phase says whether it is still open;
 *  - session directories are named after the daemon (tetherd-<pid>-XXXXXX); at start the
 *    directories of daemons that are gone (killed with SIGKILL) are removed, never those of a
 *    live process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "tether/crt.h"

tether__child tether__children[TETHERD_MAX_CHILDREN];
tetherd_watch *tether__watches;
tether__uart_pending_error tether__uart_pending;

int tether__children_init(void) {
    tether__watches = mmap(NULL, sizeof(tetherd_watch) * TETHERD_MAX_CHILDREN,
                           PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (tether__watches == MAP_FAILED) {
        fprintf(stderr, "tetherd: cannot map the session watches: %s\n", strerror(errno));
        return -1;
    }
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        tether__children[i].fd = -1;
    }
    return 0;
}

/* Removes a session directory and the files in it (it holds no subdirectories). */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Session directories are named tetherd-<daemon pid>-XXXXXX, so that a daemon starting later can
 * tell the directories of a daemon that is gone (killed with SIGKILL: it could not clean up). */
static int make_session_dir(char *out, size_t size) {
    snprintf(out, size, "%s/tetherd-%ld-XXXXXX", tether__work_base, (long)getpid());
    if (!mkdtemp(out)) { /* mkdtemp creates it 0700 */
        fprintf(stderr, "tetherd: cannot create a session directory in %s: %s\n", tether__work_base,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* At start: removes the session directories in the work directory whose daemon is gone
 * (tetherd-<pid>-XXXXXX with no process <pid>; its session processes died with it). A directory
 * of a live process (another tetherd's, whatever its user), one that is not a plain directory of
 * this user, or one without a daemon pid in its name is left alone. Returns how many went. */
int tether__sweep_stale_session_dirs(void) {
    DIR *d = opendir(tether__work_base);
    if (!d) {
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid;
        char rest[64];
        if (sscanf(e->d_name, "tetherd-%ld-%63s", &pid, rest) != 2 || pid <= 1 ||
            strlen(rest) != 6 || pid == (long)getpid()) {
            continue;
        }
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
            continue; /* alive (or not ours to ask about): never touched */
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid()) {
            continue;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", tether__work_base, e->d_name);
        remove_dir(path);
        n += access(path, F_OK) != 0;
    }
    closedir(d);
    return n;
}

static void describe_status(int status, char *buf, size_t size) {
    if (WIFEXITED(status)) {
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(buf, size, "status %d", status);
    }
}

/* A session process has ended: say how, answer its call if it died inside one (an exit() or a
 * kill the session's own handlers could not report), free its slot and remove its directory. */
void tether__finish_child(int i, int status) {
    tether__child *c = &tether__children[i];
    tetherd_watch *w = &tether__watches[i];
    char how[128];
    describe_status(status, how, sizeof how);
    uint32_t phase = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE);
    if (c->why[0]) {
        tetherd_log(&tether__cfg, 0, c->peer, "session process %d killed: %s", (int)c->pid, c->why);
    } else if (phase == TETHERD_PHASE_CALL) {
        char text[512];
        snprintf(text, sizeof text,
                 "function '%s' ended the session process (%s) during the call; the session was "
                 "ended",
                 w->func, how);
        tetherd_log(&tether__cfg, 0, c->peer, "session process %d: %s", (int)c->pid, text);
        if (c->fd >= 0) {
            tetherd_write_error(c->fd, c->kind, w->call_id, TETHER_ERR_CRASHED, text);
        } else if (c->kind == TETHER_TRANSPORT_UART) {
            tether__uart_pending.set = 1;
            tether__uart_pending.id = w->call_id;
            tether__uart_pending.code = TETHER_ERR_CRASHED;
            snprintf(tether__uart_pending.text, sizeof tether__uart_pending.text, "%s", text);
        }
    } else {
        tetherd_log(&tether__cfg, (WIFEXITED(status) && WEXITSTATUS(status) == 0) ? 1 : 0, c->peer,
                    "session process %d %s", (int)c->pid, how);
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    c->fd = -1;
    remove_dir(c->dir);
    c->pid = 0;
    c->why[0] = 0;
}

void tether__reap_children(int block) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
        if (pid <= 0) {
            return;
        }
        for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
            if (tether__children[i].pid == pid) {
                tether__finish_child(i, status);
            }
        }
        if (block) {
            return;
        }
    }
}

unsigned tether__live_children(void) {
    unsigned n = 0;
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        n += tether__children[i].pid != 0;
    }
    return n;
}

/* In a forked session child: default signal dispositions, its own process group, die with the
 * daemon, and close every inherited descriptor except stdio and `keep` (-1 = none). */
static void child_setup(int keep) {
    signal(SIGCHLD, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (keep < 0) {
        close_range(3, ~0u, 0);
    } else {
        if (keep > 3) {
            close_range(3, (unsigned)keep - 1, 0);
        }
        close_range((unsigned)keep + 1, ~0u, 0);
    }
}

/* Forks a session process. run(ctx, dir) runs in the child. `fd` is the daemon's copy of the
 * connection (owned by the slot from now on, -1 = none) and `kind` its framing. Returns the
 * pid or -1 (fd closed). */
pid_t tether__spawn_session(const char *peer, int keep_fd, int fd, tether_transport_kind kind,
                            bool tcp, void (*run)(void *, const char *), void *ctx) {
    int slot = -1;
    for (int i = 0; i < TETHERD_MAX_CHILDREN && slot < 0; i++) {
        if (!tether__children[i].pid) {
            slot = i;
        }
    }
    if (slot < 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    tether__child *c = &tether__children[slot];
    if (make_session_dir(c->dir, sizeof c->dir)) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    c->fd = fd;
    c->kind = kind;
    c->why[0] = 0;
    tetherd_watch *w = &tether__watches[slot];
    memset(w, 0, sizeof *w);
    w->started_ns = tetherd_now_ns();
    /* only TCP sessions compete for slots: HELLO and idle deadlines apply to them alone */
    if (tcp && tether__cfg.hello_timeout_ms) {
        w->deadline_ns = w->started_ns + (uint64_t)tether__cfg.hello_timeout_ms * 1000000u;
    }
    __atomic_store_n(&w->phase, TETHERD_PHASE_HELLO, __ATOMIC_RELEASE);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        tetherd_log(&tether__cfg, -1, peer, "fork failed: %s", strerror(errno));
        remove_dir(c->dir);
        if (fd >= 0) {
            close(fd);
        }
        c->fd = -1;
        return -1;
    }
    if (pid == 0) {
        child_setup(keep_fd);
        tether__cfg.watch = w;
        if (!tcp) {
            tether__cfg.hello_timeout_ms = 0;
            tether__cfg.idle_timeout_ms = 0;
        }
        run(ctx, c->dir);
        _exit(0);
    }
    setpgid(pid, pid); /* also here, so a kill right after the fork reaches the group */
    c->pid = pid;
    return pid;
}

/* Stopping the daemon: SIGTERM to every session's group, SIGKILL to those still there after
 * two seconds (an uploaded function may block SIGTERM), and reap them all. */
void tether__stop_children(void) {
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        if (tether__children[i].pid) {
            kill(-tether__children[i].pid, SIGTERM);
            kill(tether__children[i].pid, SIGTERM);
        }
    }
    for (int tick = 0; tether__live_children() && tick < 200; tick++) {
        tether__reap_children(0);
        if (tether__live_children()) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < TETHERD_MAX_CHILDREN; i++) {
        if (tether__children[i].pid) {
            kill(-tether__children[i].pid, SIGKILL);
            kill(tether__children[i].pid, SIGKILL);
        }
    }
    while (tether__live_children()) {
        tether__reap_children(1);
    }
}
