/*
 * srv_admin.h - the master's admin control socket: a Unix socket (mode
 * 0600, `admin-socket`, relative to `dir`) speaking RESP, so that
 * `redis-cli -s PATH` works as well as larderctl. The master serves it
 * from its own loop, so it answers while every worker is busy or dead.
 *
 * Verbs (HELP lists them): PING, STATUS (every process), WORKERS [n],
 * RELOAD, BACKUP path | BACKUP STATUS, SHUTDOWN [NOW], CACHE STATS |
 * FLUSH, LOGLEVEL [level], CONFIG GET | SET | REWRITE, HELP. What touches
 * the process tree (its table, the worker count, reload, shutdown) the
 * master does through the srv_admin_ops it hands over; the rest (the
 * configuration, the cache, the backup child) is this module's.
 *
 * Only the master calls these functions, from its main thread.
 */
#ifndef SRV_ADMIN_H
#define SRV_ADMIN_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/srv_role.h"

#define SRV_ADMIN_CAUSE_MAX 128
/* Poll slots the admin socket may use: its listener and its clients. */
#define SRV_ADMIN_CLIENTS_MAX 16
#define SRV_ADMIN_POLLFDS (SRV_ADMIN_CLIENTS_MAX + 1)

/* States of a process as STATUS shows them. */
enum srv_admin_state {
    SRV_ADMIN_RUNNING,
    SRV_ADMIN_STOPPING,   /* told to stop (a worker WORKERS removed) */
    SRV_ADMIN_RESPAWNING, /* dead, to be forked again after its back-off */
    SRV_ADMIN_STOPPED,    /* not wanted (a syncer run as the reaper's
                           * thread, a worker slot beyond the count) */
};

/* One process of the tree as the master describes it. */
typedef struct srv_admin_proc {
    srv_proc proc; /* role, index, pid (0: not running), slot */
    enum srv_admin_state state;
    int64_t started_ms;                  /* wall clock; 0 if not running */
    int64_t respawns;                    /* times forked again after a death */
    char last_exit[SRV_ADMIN_CAUSE_MAX]; /* "killed by signal 9 (Killed)",
                                          * "" if it never died */
    int64_t last_exit_ms; /* wall clock of that death; 0 if none */
} srv_admin_proc;

/* What the master does for the admin socket. */
typedef struct srv_admin_ops {
    /* Describe up to `max` processes into out (the master first);
     * returns how many. */
    int (*procs)(srv_admin_proc *out, int max);
    /* The worker count now asked for, and the most there may be. */
    int (*workers)(int *max);
    /* Grow or shrink the pool to n workers (1..max). 0, or -1 with the
     * reason in err. */
    int (*set_workers)(int n, char *err, size_t errlen);
    /* Re-read the config file and apply it (srv_cfgops_reload), reopen
     * the log, tell systemd. 0 with the names applied and those that
     * need a restart in the two buffers (space separated), or -1 with
     * the reason in err. */
    int (*reload)(char *applied, char *restart, size_t size, char *err,
                  size_t errlen);
    /* Begin the shutdown (now: do not wait for clients). */
    void (*shutdown)(int now);
} srv_admin_ops;

/*
 * Bind the socket at `path` (mode 0600; a stale socket file left by a
 * dead master is replaced, a live one refused) and remember ops. 0, or
 * an errno with the reason in err.
 */
int srv_admin_open(const char *path, const srv_admin_ops *ops, char *err,
                   size_t errlen);

/* Close the socket and its clients and unlink the path (the master, at
 * exit). */
void srv_admin_close(void);

/* In a child just forked: close the inherited admin socket and clients
 * without touching the path (they are the master's). */
void srv_admin_forget(void);

/* Fill fds with what the master's poll must watch; returns how many (at
 * most SRV_ADMIN_POLLFDS). */
int srv_admin_pollfds(struct pollfd *fds);

/* Serve what poll reported on the `n` fds srv_admin_pollfds filled. */
void srv_admin_serve(const struct pollfd *fds, int n);

/*
 * A child of the master exited: if it was the backup child, record how
 * and return 1; 0 if it was not (the caller's child).
 */
int srv_admin_child_exited(pid_t pid, int status);

/* The pid of the running backup child, 0 if none (the master stops it
 * at shutdown). */
pid_t srv_admin_backup_pid(void);

/* A process's exit status as a log and STATUS say it: "exited with
 * status 1", "killed by signal 9 (Killed)", "... (core dumped)". */
void srv_admin_describe_exit(int status, char *out, size_t size);

#endif
