/*
 * srv_objinfo.h - what OBJECT and MEMORY USAGE report of a key, in
 * Redis's terms: the encoding Redis would give the same data (int, embstr
 * or raw strings by their form and the writes that made them; listpack
 * while a hash or zset is within the *-max-listpack-* limits, intset for
 * small all-integer sets, quicklist lists, hashtable and skiplist beyond),
 * the reference count Redis shows (shared integers), and Redis's memory
 * estimate of the key (jemalloc size classes over Redis's structures:
 * exact for strings and the compact encodings, an estimate from the first
 * `samples` elements for the big ones, as Redis's own is).
 */
#ifndef SRV_OBJINFO_H
#define SRV_OBJINFO_H

#include <stdint.h>

#include "storage/st_codec.h"

struct st_txn;
struct st_obj;

/* Redis's encoding name for the key `k` found as `r`. 0 or an error. */
int srv_objinfo_encoding(struct st_txn *t, st_keyref *k, const st_rec *r,
                         int64_t now, const char **name);

/* OBJECT REFCOUNT: 2147483647 for a shared integer (0..9999), else 1. */
long long srv_objinfo_refcount(struct st_txn *t, const st_rec *r);

/*
 * MEMORY USAGE of `k` found as `r`: the key, its entry and its value, in
 * bytes; `samples` elements of a big collection are looked at (0: all).
 * 0 or an error.
 */
int srv_objinfo_memory(struct st_txn *t, st_keyref *k, const st_rec *r,
                       int64_t now, long long samples, uint64_t *bytes);

/* 1 when the open set `o` would be an intset in Redis, 0 if not, or a
 * negative error. */
int srv_objinfo_is_intset(struct st_txn *t, const struct st_obj *o);

/* jemalloc's usable size for a request of n bytes (its size classes). */
uint64_t srv_objinfo_alloc_size(uint64_t n);

#endif
