/*
 * st_hash.h - hashes: field -> value records in the hashes database under
 * the collection id, hash-ordered (st_elem.h). Calls take a collection
 * opened with st_coll_open(..., ST_TYPE_HASH, ...) and keep its
 * cardinality; the caller writes the record back with st_coll_save().
 */
#ifndef ST_HASH_H
#define ST_HASH_H

#include "storage/st_elem.h"

/* Value of `field`: 0 with *val borrowed until the next write, or
 * ST_ENOTFOUND. */
int st_hash_get(st_txn *t, const st_obj *o, const void *field, size_t flen,
                const uint8_t **val, size_t *vlen);

/* Set `field` (with `nx`, only when absent: else ST_EEXISTS). *created is
 * 1 for a new field. `val` must not point into LMDB memory. */
int st_hash_set(st_txn *t, st_obj *o, const void *field, size_t flen,
                const void *val, size_t vlen, int nx, int *created);

/* Delete `field`: 0 or ST_ENOTFOUND. */
int st_hash_del(st_txn *t, st_obj *o, const void *field, size_t flen);

/* HSCAN step / every field (count SIZE_MAX); see st_elem_scan. */
int st_hash_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                 st_elem_fn fn, void *ctx, uint64_t *next);

/* A uniform random sample of min(count, card) distinct fields, drawn
 * from `seed`; see st_elem_sample. */
int st_hash_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                   st_elem_fn fn, void *ctx);

#endif
