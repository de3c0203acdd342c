/*
 * srv_keys.h - what a worker's write transactions did to keys, told to
 * the features that care across workers: keys of the types clients wait
 * for coming into being (the wake-ups of blocking commands, srv_block.h),
 * keyspace events (srv_notify.h: the handlers' events, "expired" from
 * lazy expiry, "new" keys), and the keys tracking clients must forget.
 *
 * Records are gathered per write transaction, from storage's observer
 * (st_env_observe: keys created, keys expired, commit and abort) and from
 * the handlers, and leave with their transaction:
 *
 *  - Ordered records (events) go in a TXN frame while the transaction
 *    still holds LMDB's write lock, just before its commit, written out
 *    at once (waiting up to 100 ms for a slow broker). Any transaction
 *    that commits later takes the lock later, so its TXN frame is written
 *    after this one: the broker, which reads every link before it handles
 *    what it read (srv_broker.c), delivers them in transaction order,
 *    which is commit order.
 *  - After the commit a COMMITTED frame tells the outcome (a failed
 *    commit's events are dropped) and carries the keys that came into
 *    being, which the broker passes to the waiters' workers.
 *
 * While the link is down the records go to this worker's own subscribers
 * and waiters instead. An aborted transaction's records are dropped: its
 * commands run again (a replay) and record again. Everything here runs
 * on the worker's thread.
 */
#ifndef SRV_KEYS_H
#define SRV_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_worker.h"

/*
 * The worker service: start observes the worker's environment, stop lets
 * go. Without it (the embedded worker) nothing is recorded.
 */
extern const srv_service srv_keys_service;

struct st_env;

/*
 * Observe `env` outside a worker (the reaper: its expiries become
 * "expired" events), over a link opened with srv_link_open_plain.
 * unobserve lets go.
 */
void srv_keys_observe(struct st_env *env);
void srv_keys_unobserve(struct st_env *env);

/*
 * A key of database `db` came into being in transaction `txn` with `n`
 * elements (at least one), told to this worker's waiters because the
 * broker could not be told. Runs after the commit.
 */
typedef void srv_keys_ready_fn(unsigned db, const uint8_t *name, size_t len,
                               uint64_t n, uint64_t txn);

/* Have `fn` hear of keys coming into being while the link is down (one
 * listener: the blocking commands). */
void srv_keys_on_ready(srv_keys_ready_fn *fn);

/*
 * Have `fn` run just before each write transaction of this worker
 * commits, with the write lock held (one listener: the blocking
 * commands, whose new waiters register then). It returns 1 if it put
 * frames on the link: they are written out with the TXN frame's.
 */
typedef int srv_keys_committing_fn(void);
void srv_keys_on_committing(srv_keys_committing_fn *fn);

/* Have keys of storage type `type` (ST_TYPE_*) reported as they come
 * into being (the blocking commands ask for lists and sorted sets). */
void srv_keys_want_created(int type);

/*
 * Record `event` of `key` in `db` in the open write transaction, with
 * `flags` saying what becomes of it (srv_notify.h: K and E messages,
 * SRV_NOTIFY_INVALIDATE / _FLUSH for tracking clients; 0 records
 * nothing); `writer` is the client id that wrote (NOLOOP), 0 for none.
 * srv_notify.h's inlines decide the flags. With the service only.
 */
void srv_keys_record(unsigned db, unsigned flags, const char *event,
                     const void *key, size_t len, uint64_t writer);

/*
 * Tracking invalidations of this worker's own writes, while the broker
 * is away: `key` written by client `writer` (`all`: every key, FLUSHALL).
 * One listener (client tracking).
 */
typedef void srv_keys_inval_fn(uint64_t writer, int all, const char *key,
                               size_t len);
void srv_keys_on_inval(srv_keys_inval_fn *fn);

/* FLUSHDB / FLUSHALL by c: tracking clients forget every key (recorded
 * with the flush's first transaction). */
void srv_keys_flushed(srv_conn *c);

/*
 * Every key of `db` may have changed in the open write transaction
 * (SWAPDB): told as a key of that database with no name and no count
 * (to srv_keys_ready_fn too).
 */
void srv_keys_db_changed(unsigned db);

#endif
