/*
 * srv_child.h - what the master's background children (the reaper and the
 * syncer) share when they start: dying with the master,
 * signals (SIGTERM sets srv_child_stop), their stats slot, and their own
 * LMDB environment opened after fork.
 */
#ifndef SRV_CHILD_H
#define SRV_CHILD_H

#include <signal.h>

#include "server/srv_stats.h"
#include "storage/st_env.h"

/* Set by SIGTERM: the child's loop ends at its next check. */
extern volatile sig_atomic_t srv_child_stop;

/*
 * Start a background child (the master has set its role and log prefix):
 * die with the master, SIGTERM sets srv_child_stop, SIGINT and SIGHUP
 * ignored, pid and start time in `slot`. 0, or -1 when the master is
 * already gone.
 */
int srv_child_start(srv_stats_slot *slot);

/* Open the child's own LMDB environment (commits unflushed: the syncer
 * flushes). 0, or -1 after logging why it failed. */
int srv_child_env_open(st_env **env);

#endif
