/*
 * srv_syncer.h - the syncer: flushes LMDB to disk and publishes the
 * durable transaction id, one flush covering every worker's commits since
 * the last (group commit across processes). Its own process, or a thread
 * of the reaper (`syncer-thread yes`); either way its own environment.
 */
#ifndef SRV_SYNCER_H
#define SRV_SYNCER_H

#include "server/srv_stats.h"
#include "storage/st_env.h"

/* Run the syncer until SIGTERM (the syncer process); the exit status. */
int srv_syncer_main(void);

/* Ask the syncer for a flush (any worker, after a commit). */
void srv_syncer_poke(void);

/*
 * The syncer's loop on `env`, counting into `slot`: make the newest
 * snapshot durable (storage/st_durable.h) when poked or on the 1 s beat,
 * publish the durable id, wake the workers; returns at srv_child_stop
 * after a last flush, leaving the durable snapshot pinned.
 */
void srv_syncer_loop(st_env *env, srv_stats_slot *slot);

/* The reaper's environment, handed to the syncer thread. */
typedef struct srv_syncer_thread_arg {
    st_env *env;
} srv_syncer_thread_arg;

/* pthread entry of the syncer thread (arg: srv_syncer_thread_arg). */
void *srv_syncer_thread(void *arg);

#endif
