/*
 * st_coll.h - what every collection type shares: opening a key as a
 * collection of one type and writing its record back (st_obj), the
 * collection record payload (id, cardinality, list head/tail), fresh ids,
 * O(1) detaching into the garbage database, the bounded-chunk freer
 * behind it, and the deep copy COPY needs.
 *
 * Elements live in the type's database(s) under keys that start with the
 * collection id (big-endian u64): hashes, sets and lists in one database,
 * sorted sets in two (by member and by score).
 */
#ifndef ST_COLL_H
#define ST_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_codec.h"
#include "storage/st_env.h"

#define ST_COLL_ID_BYTES 8

typedef struct st_coll {
    uint64_t id;
    uint64_t card; /* elements; kept so the LEN and CARD commands are O(1) */
    /* lists: sequence of the first element, and after the last; streams:
     * ms and seq of the floor id, below which entries are dead (handed to
     * the lazy freer by a trim, st_stream.h; 0-0: none) */
    int64_t head;
    int64_t tail;
} st_coll;

/* Read / write the collection payload of a record (ST_COLL_PAYLOAD bytes). */
void st_coll_decode(const st_rec *r, st_coll *out);
void st_coll_encode(uint8_t *payload, const st_coll *c);

/* A new, never used collection id (write transaction). */
int st_coll_new_id(st_txn *t, uint64_t *id);

/*
 * Hand the elements of the collection in record `r` to the lazy freer:
 * O(1), one put into the garbage database. Write transaction.
 */
int st_coll_detach(st_txn *t, const st_rec *r);

/* st_coll_detach by id: the elements of `type` (ST_TYPE_STRING: a
 * chunked string's spans, st_string.h) under `id` go to the lazy freer. */
int st_coll_detach_id(st_txn *t, uint64_t id, int type);

/*
 * Hand the lazy freer the elements of collection `id` in the first
 * database of `type` whose keys sort below id + below[0..len) (a stream's
 * trimmed head, st_stream.h): O(1), one put into the garbage database
 * (and one delete: `old`, the bound of an earlier hand-off of the same
 * collection and length, or NULL, which this one replaces). The caller
 * stops reading those elements first: the freer deletes them at any
 * time after the commit. Write transaction.
 */
int st_coll_detach_below(st_txn *t, uint64_t id, int type, const uint8_t *below,
                         const uint8_t *old, size_t len);

/* Copy every element of `type` under `src_id` to `dst_id`, a fresh id
 * (larger than any in use: its keys append). Write transaction. */
int st_coll_copy_elems(st_txn *t, int type, uint64_t src_id, uint64_t dst_id);

/*
 * Copy every element of the collection in `src` under a new id; *out gets
 * the new collection (same cardinality and list bounds). Write txn.
 */
int st_coll_copy(st_txn *t, const st_rec *src, st_coll *out);

/*
 * Free detached collections: delete at most `max` elements in its own
 * write transaction (the caller has none open). *freed gets how many were
 * deleted, *pending how many collections still wait afterwards.
 */
int st_coll_free_chunk(st_env *env, size_t max, size_t *freed,
                       uint64_t *pending);

/*
 * A key opened as a collection. `k` is borrowed and must outlive the
 * struct; its LMDB key form (long-name probe) is settled by the open.
 */
typedef struct st_obj {
    st_keyref *k;
    int type;   /* ST_TYPE_HASH, _SET, _LIST, _ZSET or _STREAM */
    int exists; /* a record is stored */
    int64_t expire_at;
    st_coll c; /* id, cardinality, list bounds */
} st_obj;

/*
 * Open `k` as a collection of `type`. 0: found; ST_ENOTFOUND: absent, *o
 * set up for st_coll_create; ST_EWRONGTYPE: another type; else an error.
 * Any transaction (a write one deletes an expired key on the spot).
 */
int st_coll_open(st_txn *t, st_keyref *k, int type, int64_t now, st_obj *o);

/* Give an absent collection a fresh id (its record is written by save). */
int st_coll_create(st_txn *t, st_obj *o);

/*
 * Write the record of `o` back after its elements changed: a collection
 * left empty is deleted (the key disappears; a stream stays), otherwise the
 * record is rewritten with the new cardinality and list bounds, its TTL kept
 * and the transaction's version stamped. Write transaction.
 */
int st_coll_save(st_txn *t, st_obj *o, int64_t now);

#endif
