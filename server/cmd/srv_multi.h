/*
 * srv_multi.h - MULTI/EXEC/DISCARD/WATCH/UNWATCH: a connection's queued
 * commands and watched keys. EXEC runs the queue in one storage
 * transaction (the write transaction when any queued command writes or a
 * key is watched), so no other client sees a part of it; WATCH compares
 * the record versions (transaction ids) of the watched keys at EXEC.
 *
 * The worker's group commit may rewind a connection to its last commit
 * and replay its input: the state here is saved at every commit and
 * restored on a rewind (srv_group.h). Commands that shrink it (EXEC, DISCARD,
 * UNWATCH, RESET) commit right after they run, so a rewind only ever truncates.
 */
#ifndef SRV_MULTI_H
#define SRV_MULTI_H

#include "server/srv_conn.h"

/*
 * MULTI attaches its hooks (srv_hooks.h) to a connection at its first
 * MULTI or WATCH: it queues checked commands inside MULTI (intercept),
 * marks the transaction for EXECABORT when one is refused, saves and
 * restores its state at group commits and rewinds, keeps slots in EXEC's
 * reply for PUBLISH counts (defer / deferred), and frees it all at close.
 * The handlers MULTI, EXEC, DISCARD, WATCH and UNWATCH are in the table.
 */

/* Queued commands (-1 outside MULTI), for CLIENT LIST's multi= field and
 * ACL LOG's context (MULTI keeps c->multi_queued up to date, so readers
 * need not reach into MULTI's state). */
static inline int srv_multi_queued(const srv_conn *c)
{
    return c->multi_queued;
}

/* The F_* flags of c's queued commands, OR-ed (0 outside MULTI): an EXEC
 * that writes waits out CLIENT PAUSE WRITE. */
unsigned srv_multi_queued_flags(const srv_conn *c);

#endif
