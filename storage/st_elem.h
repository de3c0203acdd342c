/*
 * st_elem.h - the element keys of the hash-ordered databases (hashes,
 * sets, zset members), shared by their three modules.
 *
 * A hash-ordered element key is: collection id (BE u64), the name's scan
 * hash (BE u64, in [1, 2^63-1]), then the name when the key stays under
 * ST_LMDB_MAXKEY bytes; a longer name uses the digest form (id, hash, a
 * second hash, a prefix of the name: exactly ST_LMDB_MAXKEY bytes) and
 * its full text moves into the value. Ordering by hash is what makes
 * HSCAN/SSCAN/ZSCAN cursors plain integers. Hashes and sets also keep
 * order statistics over that order (st_rank.c): the element at a
 * position, so a uniform random element, is O(log n). Zset members do
 * not (st_zset.h samples its score order instead).
 */
#ifndef ST_ELEM_H
#define ST_ELEM_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_codec.h"
#include "storage/st_coll.h"
#include "storage/st_env.h"

#define ST_ELEM_HEAD (ST_COLL_ID_BYTES + ST_KEY_HASH_BYTES)
/* Longest name kept inline in a hash-ordered element key. */
#define ST_ELEM_INLINE_MAX (ST_LMDB_MAXKEY - ST_ELEM_HEAD - 1)
/* Prefix of a long name kept in its digest-form key. */
#define ST_ELEM_LONG_PREFIX (ST_LMDB_MAXKEY - ST_ELEM_HEAD - ST_KEY_HASH_BYTES)

/* The hash-ordered element databases. */
enum st_elem_kind {
    ST_ELEM_HASH,    /* field -> value */
    ST_ELEM_SET,     /* member -> nothing */
    ST_ELEM_ZMEMBER, /* member -> score (native double) */
};

/* Called per element by the iterators; `val` is the element's payload.
 * Pointers borrow LMDB memory for the call only; non-zero stops. */
typedef int (*st_elem_fn)(void *ctx, const uint8_t *name, size_t nlen,
                          const uint8_t *val, size_t vlen);

/* Find element `name`: 0 with its payload (borrowed until the next write)
 * or ST_ENOTFOUND. */
int st_elem_get(st_txn *t, int kind, uint64_t id, const void *name, size_t len,
                const uint8_t **val, size_t *vlen);

/*
 * Insert or replace element `name` of collection `c` with payload `val`.
 * *created is 1 when it was new. With `nx`, an existing element gives
 * ST_EEXISTS and nothing is written. ST_ECOLLISION for a 128-bit digest
 * clash of long names. c->card is the count before the call (the caller
 * updates it); the order statistics follow in the same transaction.
 */
int st_elem_put(st_txn *t, int kind, const st_coll *c, const void *name,
                size_t len, const void *val, size_t vlen, int nx, int *created);

/* Delete element `name` of `c` (c->card as for st_elem_put): 0 or
 * ST_ENOTFOUND. */
int st_elem_del(st_txn *t, int kind, const st_coll *c, const void *name,
                size_t len);

/*
 * One SCAN step from `cursor` (0 = start): about `count` elements (all
 * sharing the last one's hash come along); *next is the next cursor, 0
 * when done. SIZE_MAX visits every element (HGETALL, SMEMBERS).
 */
int st_elem_scan(st_txn *t, int kind, uint64_t id, uint64_t cursor,
                 size_t count, st_elem_fn fn, void *ctx, uint64_t *next);

/*
 * Random samples of a hash or a set (SRANDMEMBER, SPOP, HRANDFIELD):
 * visit min(count, c->card) distinct elements, a uniform random sample
 * drawn from `seed` (every subset of that size equally likely; count 1 is
 * a uniform pick), in hash order. O(count log n), or one O(n) pass once
 * count reaches n / ST_RANK_DENSE (8). ST_ENOTFOUND if `c` is empty.
 */
int st_elem_sample(st_txn *t, int kind, const st_coll *c, uint64_t seed,
                   uint64_t count, st_elem_fn fn, void *ctx);

/* Visit the element of a hash or set at 0-based hash-order position
 * `pos`: O(log n). ST_ENOTFOUND when pos >= c->card. */
int st_elem_at(st_txn *t, int kind, const st_coll *c, uint64_t pos,
               st_elem_fn fn, void *ctx);

/* The scan hash of an element name (its order in the collection). */
uint64_t st_elem_hash(const void *name, size_t len);

#endif
