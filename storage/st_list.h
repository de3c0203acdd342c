/*
 * st_list.h - lists: one record per element in the lists database, keyed
 * by collection id and sequence (BE u64 of the signed sequence biased by
 * 2^63, so the byte order is the list order). The record keeps the list
 * dense between head (first element) and tail (after the last), so index
 * i lives at sequence head + i: LINDEX/LSET are one O(log n) lookup and
 * pushes/pops at either end touch one page. Calls take a collection
 * opened with st_coll_open(..., ST_TYPE_LIST, ...) and update its bounds
 * and cardinality; the caller writes the record back with st_coll_save().
 * Indexes here are already normalised: 0 <= i < card.
 */
#ifndef ST_LIST_H
#define ST_LIST_H

#include "storage/st_elem.h"

#define ST_LIST_KEY_BYTES (ST_COLL_ID_BYTES + 8)

/* Called with an element (borrowed for the call); non-zero stops. */
typedef int (*st_list_fn)(void *ctx, const uint8_t *val, size_t len);

/* The element key of sequence `seq` (ST_LIST_KEY_BYTES bytes at buf). */
void st_list_key(uint8_t *buf, uint64_t id, int64_t seq);

/* Decode the sequence of an element key. */
int64_t st_list_key_seq(const uint8_t *buf);

/* Push `val` at the head (`left`) or the tail. */
int st_list_push(st_txn *t, st_obj *o, int left, const void *val, size_t len);

/* Pop the head or tail element: `fn` sees it before it is deleted.
 * ST_ENOTFOUND when the list is empty. */
int st_list_pop(st_txn *t, st_obj *o, int left, st_list_fn fn, void *ctx);

/* Element i: 0 with *val borrowed until the next write. */
int st_list_get(st_txn *t, const st_obj *o, uint64_t i, const uint8_t **val,
                size_t *len);

/* Replace element i. */
int st_list_set(st_txn *t, st_obj *o, uint64_t i, const void *val, size_t len);

/*
 * Visit elements from index `start`, forward (towards the tail) or with
 * `rev` backward, at most `count` of them: O(log n + count).
 */
int st_list_range(st_txn *t, const st_obj *o, uint64_t start, uint64_t count,
                  int rev, st_list_fn fn, void *ctx);

/* Keep only indexes [start, stop] (start <= stop < card): the rest are
 * deleted, O(deleted). */
int st_list_trim(st_txn *t, st_obj *o, uint64_t start, uint64_t stop);

/*
 * LREM: delete elements equal to `val`, the first `count` from the head
 * (count > 0), from the tail (count < 0) or all (0), closing the gaps;
 * *removed gets how many. O(n).
 */
int st_list_rem(st_txn *t, st_obj *o, long long count, const void *val,
                size_t len, long long *removed);

/*
 * LINSERT: insert `val` before (or `after`) the first element equal to
 * `pivot`, shifting the shorter side. ST_ENOTFOUND when there is no
 * pivot.
 */
int st_list_insert(st_txn *t, st_obj *o, int after, const void *pivot,
                   size_t plen, const void *val, size_t len);

#endif
