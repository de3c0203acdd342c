/*
 * st_set.h - sets: member records (no value) in the sets database under
 * the collection id, hash-ordered (st_elem.h). Calls take a collection
 * opened with st_coll_open(..., ST_TYPE_SET, ...) and keep its
 * cardinality; the caller writes the record back with st_coll_save().
 */
#ifndef ST_SET_H
#define ST_SET_H

#include "storage/st_elem.h"

/* 1 if `member` is in the set, 0 if not, or a negative error code. */
int st_set_has(st_txn *t, const st_obj *o, const void *member, size_t len);

/* Add `member`: *added is 1 when it was new. */
int st_set_add(st_txn *t, st_obj *o, const void *member, size_t len,
               int *added);

/* Remove `member`: 0 or ST_ENOTFOUND. */
int st_set_rem(st_txn *t, st_obj *o, const void *member, size_t len);

/* SSCAN step / every member (count SIZE_MAX); see st_elem_scan. */
int st_set_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                st_elem_fn fn, void *ctx, uint64_t *next);

/* A uniform random sample of min(count, card) distinct members, drawn
 * from `seed`; see st_elem_sample. */
int st_set_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                  st_elem_fn fn, void *ctx);

#endif
