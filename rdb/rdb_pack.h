/*
 * rdb_pack.h - the compact blobs RDB objects embed as strings: listpack
 * (Redis 7: hashes, sorted sets, quicklist nodes), ziplist (Redis 3.2 to
 * 6.2), intset (sets of integers) and zipmap (hashes before 2.6). Each
 * can be walked entry by entry with every bound checked (a hostile DUMP
 * payload can get no read outside its blob); listpacks and intsets can
 * also be built, as Redis 7.0 writes them.
 */
#ifndef RDB_PACK_H
#define RDB_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"

enum rdb_pack_kind {
    RDB_PACK_LISTPACK,
    RDB_PACK_ZIPLIST,
    RDB_PACK_INTSET,
    RDB_PACK_ZIPMAP,
};

#define RDB_LP_HEADER 6 /* total bytes (u32), entries (u16) */
#define RDB_LP_END 0xff
#define RDB_LP_COUNT_UNKNOWN 65535u
#define RDB_ZL_HEADER 10 /* bytes (u32), tail (u32), entries (u16) */
#define RDB_ZL_END 0xff
#define RDB_ZL_COUNT_UNKNOWN 65535u
#define RDB_IS_HEADER 8 /* encoding (u32), length (u32) */

/* One entry: a string (s, len) or an integer (is_int, v). */
typedef struct rdb_pack_item {
    const uint8_t *s;
    size_t len;
    int is_int;
    int64_t v;
} rdb_pack_item;

typedef struct rdb_pack_iter {
    int kind;
    const uint8_t *blob;
    const uint8_t *p;   /* next entry */
    const uint8_t *end; /* the terminator (or the blob's end) */
    uint64_t declared;  /* entries the header announces, or UINT64_MAX */
    uint64_t seen;
    size_t prev_size; /* ziplist: size of the entry before p */
    unsigned width;   /* intset: bytes per value */
    int zm_value;     /* zipmap: the next entry is a value */
} rdb_pack_iter;

/*
 * Start walking the blob of `len` bytes at `blob` (borrowed): its header
 * is checked against its size. 0 or RDB_ECORRUPT.
 */
int rdb_pack_open(rdb_pack_iter *it, int kind, const uint8_t *blob, size_t len);

/*
 * The next entry: 1 with *out filled (strings borrow the blob), 0 at the
 * end (after checking the terminator and the announced count), or
 * RDB_ECORRUPT.
 */
int rdb_pack_next(rdb_pack_iter *it, rdb_pack_item *out);

/* The text of an entry: its bytes, or an integer's decimal form written
 * into buf (RDB_LL_MAX bytes). */
void rdb_pack_item_text(const rdb_pack_item *it, char *buf, const uint8_t **s,
                        size_t *n);

/* A listpack being built at the end of a buffer. */
typedef struct rdb_lp {
    rdb_buf *b;
    size_t start; /* where its header is */
    uint64_t count;
} rdb_lp;

/* Begin a listpack at b->len (header reserved). 0 or ENOMEM. */
int rdb_lp_begin(rdb_lp *lp, rdb_buf *b);

/* Append an entry; strings that are canonical integers are stored as
 * integers (as Redis does). 0 or ENOMEM. */
int rdb_lp_add(rdb_lp *lp, const void *s, size_t n);
int rdb_lp_add_int(rdb_lp *lp, int64_t v);

/* Bytes the entry for this string would take. */
size_t rdb_lp_entry_size(const void *s, size_t n);

/* Write the terminator and the header. 0, or RDB_ETOOBIG past 4 GiB. */
int rdb_lp_end(rdb_lp *lp);

/* Bytes the listpack holds so far (header and terminator included). */
size_t rdb_lp_bytes(const rdb_lp *lp);

/*
 * Append to `b` the intset of the `n` values at `v` (sorted ascending,
 * distinct), in the narrowest width holding them all. 0 or ENOMEM.
 */
int rdb_intset_build(rdb_buf *b, const int64_t *v, size_t n);

#endif
