/*
 * srv_block.h - blocking commands (BLPOP & co., XREAD BLOCK): a
 * client that finds nothing to take waits on keys until one of them may
 * hold data, its timeout passes, it is unblocked or it goes away, while
 * its worker serves everyone else. Generic: a command blocks with the
 * keys and the storage type it waits for; when one may hold data the
 * command itself runs again (its "try to serve"), and either answers or
 * blocks on.
 *
 * The key-ready protocol. A client's waiter and the push that can serve
 * it are usually on different workers; the broker (srv_bwait.h) joins
 * them.
 *
 *  1. The command finds every key empty in the group's write
 *     transaction and blocks. Just before that transaction commits, with
 *     LMDB's write lock still held, the worker sends WAIT(token, db,
 *     place, keys) to the broker and writes it out (UNWAIT if the commit
 *     fails); after the commit it checks the keys again in a fresh
 *     snapshot (the check). A key that
 *     holds something for it then is told to the broker (HINT), which
 *     grants it as in 3., so the oldest waiter is served first even when
 *     a younger one looked.
 *  2. Storage reports every key of a waited-for type that comes into
 *     being (a push to an absent list, a move, RENAME, COPY ...); after
 *     the commit the worker sends those keys to the broker (srv_keys.h,
 *     COMMITTED). Waiters exist only for absent keys (a present one is
 *     served at once), so creation is the only event that can make a
 *     waited key hold data.
 *  3. The broker grants each such key to its oldest free waiters, one
 *     grant per element it believes the key holds (GRANT(token, key)); a
 *     stream signals each entry added, and a consumer group's readers
 *     are granted one at a time, as each takes its own entries).
 *  4. The waiter's worker runs the command again in a write transaction
 *     (the pop), commits, and reports SERVED(token, done or still,
 *     elements left, txn id). What is left is granted on (FIFO); a
 *     waiter that found nothing keeps its place.
 *
 * No wake-up is lost: the broker applies WAITs ahead of every other
 * frame it has read (as subscription counts), so a COMMITTED written
 * after a WAIT is handled after the registration. A push that commits
 * after the check's snapshot writes its COMMITTED after the commit,
 * hence after the WAIT; one that committed before it is seen by the
 * check. No element is lost or served twice: grants are hints, the pop
 * happens in a write transaction that re-reads the key, and a waiter that
 * timed out or disconnected never pops (its UNWAIT passes its grant on).
 * FIFO: grants go to the oldest waiter on the key across workers, oldest
 * by a place every worker draws from one shared counter when a client
 * blocks (WAIT carries it), so registrations that reach the broker out of
 * order (two workers' WAITs read in one round) still queue as the clients
 * blocked; and since a WAIT is written before its block commits, a push
 * (which commits later: it needs the write lock) cannot reach the broker
 * before the registrations of the waiters blocked ahead of it, however
 * slow their worker is after its commit. A client that arrives while a
 * granted waiter is on its way may take the element first; the waiter then
 * keeps its place for the next one.
 *
 * Without the broker (link down) the worker wakes its own waiters from
 * its own commits, and sends every waiter again when the link is back
 * (each then checked once more), so nothing waits for a broker that is
 * being respawned. Inside MULTI/EXEC, and without the service (the
 * embedded worker), a blocking command answers as its non-blocking form.
 *
 * Replies keep pipeline order: a blocked client runs none of its next
 * commands until it is answered. Everything runs on the worker's thread.
 */
#ifndef SRV_BLOCK_H
#define SRV_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_worker.h"

struct st_txn;

/* A blocked command as its check sees it (its copy of the command). */
typedef struct srv_block_view {
    unsigned db;
    int argc;
    const srv_slice *argv;
    int first_key, nkeys;
    int group; /* srv_block_spec's */
} srv_block_view;

/* How many elements argv[key] holds for the blocked command `v` in the
 * snapshot t (a hint: 0 when running it again would find nothing). */
typedef uint64_t srv_block_ready_fn(struct st_txn *t, const srv_block_view *v,
                                    int key, int64_t now);

/* How a blocking command waits. */
typedef struct srv_block_spec {
    int type;      /* ST_TYPE_* of the keys it waits for */
    int first_key; /* its keys: argv[first_key .. first_key + nkeys) */
    int nkeys;
    int64_t timeout_ms; /* relative, from srv_block_timeout_or_reply;
                         * 0: for ever */
    int null_array;     /* its timeout reply: a null array, else a null
                         * bulk */
    int group; /* argv index of the consumer group it reads as (XREADGROUP:
                * its group's readers are served one at a time, in order),
                * or 0 */
    srv_block_ready_fn *ready; /* the check; NULL: a key of `type` holds
                                * its cardinality */
} srv_block_spec;

/*
 * Parse a blocking command's timeout `a` in seconds (fractional) as Redis
 * 7.0 does: 0 waits for ever, a fraction of a millisecond rounds up to
 * one, negative is "ERR timeout is negative", anything that is not a
 * finite number (or overflows) "ERR timeout is not a float or out of
 * range"; a timeout past what the clock can count waits for ever. 0 with
 * *ms set, or -1 after the error reply.
 */
int srv_block_timeout_or_reply(srv_conn *c, const srv_slice *a, int64_t *ms);

/*
 * The running command found nothing to serve c with: block c as `spec`
 * says. Inside EXEC, or without the service, reply the timeout reply at
 * once instead (the non-blocking form). When the command is being run
 * again for a blocked c (a wake-up that found nothing), c just stays
 * blocked. The command must not reply anything else after calling it.
 */
void srv_block_or_reply(srv_conn *c, const srv_block_spec *spec);

/*
 * The running command served c from argv[key], which now holds `left`
 * elements: the broker grants what is left to the next waiters. Only
 * meaningful while a blocked c's command runs again (ignored otherwise).
 */
void srv_block_served(srv_conn *c, int key, uint64_t left);

/*
 * Every key of `db` may have changed (SWAPDB, FLUSHDB ...): waiters on
 * them try again (on every worker, through the broker). Call it from the
 * command that did it, after its write.
 */
void srv_block_db_changed(srv_conn *c, unsigned db);

/*
 * CLIENT UNBLOCK for this worker: unblock the client with this id if it
 * is blocked here, answering its timeout reply, or the UNBLOCKED error
 * with `error`. 1 if it was, else 0.
 */
int srv_block_unblock(uint64_t id, int error);

/* 1 if c is blocked in a blocking command (CLIENT LIST's flag 'b'). */
int srv_block_is_blocked(const srv_conn *c);

/* Clients of this worker blocked in blocking commands. */
unsigned srv_block_count(void);

/*
 * DEBUG REGISTER-SLEEP: the next turn of this worker in which clients
 * blocked sleeps `ms` after their commit, before the work that follows
 * it (their checks): the window in which another worker's push may reach
 * the broker first (test_blocking's FIFO test widens it with this).
 */
void srv_block_debug_register_sleep(int64_t ms);

/*
 * The worker service: joins the link (WAIT, UNWAIT, SERVED out, GRANT
 * in), asks storage for the keys it waits on, and after each group
 * commit registers new waiters, runs the checks and the granted
 * waiters' commands. stop: forgets every waiter.
 */
extern const srv_service srv_block_service;

#endif
