/*
 * srv_bwait.h - the broker's registry of blocked clients ("waiters") and
 * the keys they wait on, and the rule that decides who is told to try
 * when a key may hold data: FIFO per key across every worker.
 *
 * A waiter is a client of one worker link, named by that link's token,
 * waiting on keys of one database in its order. A wake-up is only ever a
 * hint ("grant"): the waiter's worker then pops in its own write
 * transaction, which sees the truth, and reports the outcome (served, or
 * still waiting). Each key keeps an estimate of the elements it holds,
 * from the newest transaction that reported on it (a key coming into
 * being, or what a pop left), and keeps as many grants outstanding as it
 * has elements and free waiters, granting the oldest free waiter first. A
 * waiter holds at most one grant at a time; when its grant resolves
 * without being served it keeps its place and is free again. Nothing here
 * removes data, so a grant to a waiter that is gone or finds nothing
 * loses nothing: its outcome (or its removal) passes the key on.
 *
 * Readers of a stream's consumer group wait in that group's queue of the
 * key: an entry goes to one reader of the group, so a key that may hold
 * data is granted to all its free plain waiters (as many as it holds) and
 * to one free reader of each group, and that reader's outcome (what it
 * left) lets the next reader of its group try, in order.
 *
 * Pure and single-threaded (the broker's); unit tests drive it directly.
 * Grants are delivered through a callback, called during the call that
 * caused them.
 */
#ifndef SRV_BWAIT_H
#define SRV_BWAIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_bwait srv_bwait;

/* Tell `link` that its waiter `token` may be served from `key`. */
typedef void srv_bwait_grant_fn(void *ctx, uint32_t link, uint64_t token,
                                const char *key, size_t len);

/* A registry delivering grants to `grant(ctx, ...)`; NULL on ENOMEM. */
srv_bwait *srv_bwait_create(srv_bwait_grant_fn *grant, void *ctx);

/* Free the registry and NULL *w. */
void srv_bwait_destroy(srv_bwait **w);

/*
 * Register waiter `token` of `link` on keys[0..nkeys) of database `db`
 * (a key named twice counts once), as a reader of consumer group
 * `group` (glen bytes; NULL: a plain waiter). `order` is when it blocked, from
 * a counter every worker shares: it queues behind every waiter of a lower order
 * and ahead of every one of a higher order, whichever registration arrives
 * first (equal orders: in arrival). Grants nothing by itself: the worker checks
 * the keys once the registration is on its way (srv_block.h). 0, EEXIST (the
 * token is registered already), ENOMEM or EINVAL (no keys).
 */
int srv_bwait_add(srv_bwait *w, uint32_t link, uint64_t token, unsigned db,
                  uint64_t order, const char *group, size_t glen, int nkeys,
                  const char *const *keys, const size_t *lens);

/* The waiter waits no more (timed out, disconnected, unblocked): its
 * place and any grant it held pass on. Unknown tokens are ignored. */
void srv_bwait_remove(srv_bwait *w, uint32_t link, uint64_t token);

/*
 * Key `key` of `db` came into being with `n` elements in transaction
 * `txn` (a push to an absent key, a move or rename onto it, an entry
 * added to a stream ...): grant it to its oldest free waiters, up to n,
 * and (n > 0) to the oldest free reader of each of its groups. Keys
 * nobody waits on are ignored.
 */
void srv_bwait_ready(srv_bwait *w, unsigned db, const char *key, size_t len,
                     uint64_t n, uint64_t txn);

/*
 * A worker's check found `key` of `db` holding n elements for its
 * waiters of `group` (NULL: plain waiters) in the snapshot of `txn`: as
 * srv_bwait_ready, for that queue only, so the element goes to the
 * oldest free waiter there, not necessarily the one that looked.
 */
void srv_bwait_hint(srv_bwait *w, unsigned db, const char *key, size_t len,
                    const char *group, size_t glen, uint64_t n, uint64_t txn);

/*
 * Every key of `db` with waiters may hold data (SWAPDB, FLUSH...): each
 * gets one grant at least.
 */
void srv_bwait_db_ready(srv_bwait *w, unsigned db, uint64_t txn);

/*
 * The outcome of waiter `token`'s attempt in transaction `txn`: `done`
 * (it was answered: it leaves) or not (it keeps its place); `key` (of
 * its db, in the queue of its `group`, NULL for a plain waiter) is the key
 * it was served from, or the one it tried, which had `left` elements (for
 * its group) after the attempt. Resolves the grant it held, if any,
 * and grants what the key still holds. Unknown tokens only update the
 * key's estimate.
 */
void srv_bwait_served(srv_bwait *w, uint32_t link, uint64_t token, int done,
                      unsigned db, const char *key, size_t len,
                      const char *group, size_t glen, uint64_t left,
                      uint64_t txn);

/* The link closed: forget all its waiters (their grants pass on). */
void srv_bwait_drop_link(srv_bwait *w, uint32_t link);

/* Registered waiters, and keys with at least one waiter. */
size_t srv_bwait_waiters(const srv_bwait *w);
size_t srv_bwait_keys(const srv_bwait *w);

#endif
