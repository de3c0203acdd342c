/*
 * srv_duty.h - the two background children of the master besides the
 * workers: the reaper (active expiry in bounded batches, lazy freeing of
 * deleted collections, clearing reader slots of dead processes) and the
 * syncer (flushes LMDB to disk and publishes the durable transaction id,
 * one flush covering every worker's commits since the last: group commit
 * across processes). Each opens its own LMDB environment after fork.
 */
#ifndef SRV_DUTY_H
#define SRV_DUTY_H

/* Run the reaper until SIGTERM; returns the exit status. */
int srv_reaper_main(void);

/* Run the syncer until SIGTERM; returns the exit status. */
int srv_syncer_main(void);

/* Ask the syncer for a flush (any worker, after a commit). */
void srv_syncer_poke(void);

#endif
