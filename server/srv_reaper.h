/*
 * srv_reaper.h - the reaper, a child of the master: active expiry in
 * bounded batches, lazy freeing of deleted collections, clearing reader
 * slots of dead processes. It opens its own LMDB environment after fork.
 */
#ifndef SRV_REAPER_H
#define SRV_REAPER_H

/* Run the reaper until SIGTERM (the reaper process); the exit status. */
int srv_reaper_main(void);

#endif
