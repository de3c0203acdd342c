/*
 * st_rank.h - order statistics over the elements of one collection in one
 * LMDB database: how many elements sort below a key (ZRANK, ZCOUNT), the
 * element at a position (rank windows, uniform random picks) and uniform
 * random samples, each O(log n), kept by every insert and delete inside
 * the write transaction that changes the element. The counts live in
 * records of the same database under the collection id (see st_rank.c).
 *
 * Storage-internal (it speaks LMDB types): included by st_elem.c and
 * st_zset.c, and by unit tests built with LMDB's flags. Functions return
 * 0, an LMDB code (MDB_NOTFOUND where documented), ENOMEM, or
 * ST_ECORRUPT when the counts disagree with the elements; callers pass
 * them through st_err_map(). Single process, single thread: the caller's
 * transaction.
 */
#ifndef ST_RANK_H
#define ST_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_coll.h"
#include "storage/st_internal.h"

/* Bytes 8..15 of every count record key: no element key has them (a
 * score never encodes to it, a scan hash is below 2^63). */
#define ST_RANK_MARK UINT64_MAX
/* Children of a count node at most; at least a quarter of it. */
#define ST_RANK_FANOUT 128
#define ST_RANK_MIN (ST_RANK_FANOUT / 4)
/* Collections of at most this many elements keep no count records. */
#define ST_RANK_SMALL ST_RANK_FANOUT

/* The counted elements of collection `id` in database `dbi`, whose keys
 * are the id (big-endian u64) then at least 8 more bytes. */
typedef struct st_rank {
    MDB_txn *txn;
    MDB_dbi dbi;
    uint64_t id;
} st_rank;

/* 1 if `k` is an element of collection `id` (not a count record). */
int st_rank_is_elem(const MDB_val *k, uint64_t id);

/*
 * Count element `key`, just stored, in a collection that held `card`
 * elements before it. A write transaction; O(log n) records, plus
 * O(FANOUT) reads when a node splits (and once, at card SMALL, building
 * the first nodes).
 */
int st_rank_insert(const st_rank *r, uint64_t card, const MDB_val *key);

/*
 * Uncount element `key`, just deleted, from a collection that held `card`
 * elements before. Write transaction; O(log n), plus O(FANOUT) on a merge
 * or a borrow (and dropping every count record at card SMALL + 1).
 */
int st_rank_remove(const st_rank *r, uint64_t card, const MDB_val *key);

/*
 * *same = 1 if replacing element key `a` by `b` (a score change in a
 * collection of `card`) leaves every count as it is: both fall in the same
 * leaf node, or the collection keeps no counts. Call before the change;
 * when *same is 0, remove `a` and insert `b` as usual.
 */
int st_rank_same_leaf(const st_rank *r, uint64_t card, const MDB_val *a,
                      const MDB_val *b, int *same);

/* *n = how many of the `card` elements have keys below `key` (any key of
 * the collection's key space, stored or not). */
int st_rank_below(const st_rank *r, uint64_t card, const MDB_val *key,
                  uint64_t *n);

/*
 * Position `cur` (a cursor on r->dbi) on the element at 0-based key-order
 * position `pos`, with its key and value in *k, *v. MDB_NOTFOUND when
 * pos >= card.
 */
int st_rank_seek(const st_rank *r, uint64_t card, MDB_cursor *cur, uint64_t pos,
                 MDB_val *k, MDB_val *v);

/* Called per sampled element (LMDB memory, for the call only); non-zero
 * stops the sample. */
typedef int (*st_rank_fn)(void *ctx, const MDB_val *k, const MDB_val *v);

/*
 * A uniform random sample of min(count, card) distinct elements, drawn
 * from `seed`, visited in key order: every subset of that size is equally
 * likely. O(count log n) while count < card / ST_RANK_DENSE; at or above,
 * one O(n) pass (selection sampling), no worse than O(DENSE * count).
 * MDB_NOTFOUND if the collection is empty.
 */
#define ST_RANK_DENSE 8
int st_rank_sample(const st_rank *r, uint64_t card, uint64_t seed,
                   uint64_t count, st_rank_fn fn, void *ctx);

/*
 * For tests, O(n): check every invariant of the count records against
 * the elements (counts, child counts within bounds, nesting of levels,
 * empty first keys, one root). *levels gets the number of levels (0: no
 * count records). ST_ECORRUPT on the first violation.
 */
int st_rank_verify(const st_rank *r, uint64_t card, unsigned *levels);

#endif
