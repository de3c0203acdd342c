/*
 * srv_multi.h - MULTI/EXEC/DISCARD/WATCH/UNWATCH: a connection's queued
 * commands and watched keys. EXEC runs the queue in one storage
 * transaction (the write transaction when any queued command writes or a
 * key is watched), so no other client sees a part of it; WATCH compares
 * the record versions (transaction ids) of the watched keys at EXEC.
 *
 * The worker's group commit may rewind a connection to its last commit
 * and replay its input: the state here is saved at every commit and
 * restored on a rewind. Commands that shrink it (EXEC, DISCARD, UNWATCH,
 * RESET) commit right after they run, so a rewind only ever truncates.
 */
#ifndef SRV_MULTI_H
#define SRV_MULTI_H

#include "server/srv_conn.h"

/*
 * Dispatcher hook for a command that passed its checks: inside MULTI it
 * is queued and +QUEUED replied (returns 1); otherwise returns 0 and the
 * dispatcher runs it.
 */
int srv_multi_queue(srv_conn *c);

/* Dispatcher hook for a command refused by its checks (unknown, arity,
 * auth): inside MULTI the transaction will answer EXECABORT. */
void srv_multi_flag_error(srv_conn *c);

/* Is an EXEC running its queue right now (in this worker)? */
int srv_multi_in_exec(void);

/* The group committed: what c holds now is what a rewind goes back to. */
void srv_multi_committed(srv_conn *c);

/* The group was lost: go back to the state of the last commit. */
void srv_multi_rewind(srv_conn *c);

/*
 * The command c->cmd ran alone in a transaction that could not commit,
 * and its reply became that error: an EXEC is over all the same.
 */
void srv_multi_lost(srv_conn *c);

/* RESET: leave MULTI and forget the watched keys. */
void srv_multi_reset(srv_conn *c);

/* Queued commands (-1 outside MULTI), for CLIENT LIST's multi= field. */
int srv_multi_queued(const srv_conn *c);

/*
 * PUBLISH inside EXEC: the message went to the broker and its count will
 * come back later. EXEC's reply is built aside with a slot for the count;
 * the connection waits (c->blocked) until every slot is filled.
 */
void srv_multi_publish_sent(srv_conn *c);

/* The broker's count for c's oldest open slot: 1 when EXEC's reply is now
 * complete in c->out and c may run its next commands. */
int srv_multi_publish_answered(srv_conn *c, long long count);

/* Release everything c's transaction state holds (connection close). */
void srv_multi_free(srv_conn *c);

#endif
