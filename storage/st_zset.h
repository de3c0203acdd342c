/*
 * st_zset.h - sorted sets in two databases under the collection id:
 * zmembers (hash-ordered, st_elem.h: member -> score) answers ZSCORE,
 * membership and ZSCAN in O(log n); zscores (id, the order-preserving
 * score encoding, member) gives every ordered walk: by rank, score or lex
 * range, forward or reverse, deleting as it goes for the pops and
 * ZREMRANGEBY*. zscores also keeps order statistics (st_rank.h), so
 * ranks, rank windows, counts of ranges and random members are O(log n).
 * A member longer than ST_ZSET_INLINE_MAX bytes is keyed in zscores by a
 * prefix and a digest, its full text in the value: such members sort
 * right unless they share a score and their first ST_ZSET_LONG_PREFIX
 * bytes (then their order is the digest's).
 * Calls take a collection opened with st_coll_open(..., ST_TYPE_ZSET, ...)
 * and keep its cardinality; the caller saves it with st_coll_save().
 */
#ifndef ST_ZSET_H
#define ST_ZSET_H

#include "storage/st_elem.h"

#define ST_ZSET_HEAD (ST_COLL_ID_BYTES + 8)
#define ST_ZSET_INLINE_MAX (ST_LMDB_MAXKEY - ST_ZSET_HEAD - 1)
#define ST_ZSET_DIGEST_BYTES 16
#define ST_ZSET_LONG_PREFIX \
    (ST_LMDB_MAXKEY - ST_ZSET_HEAD - ST_ZSET_DIGEST_BYTES)

/* Order-preserving encoding of a score (-0 as 0; never NaN). */
uint64_t st_zset_score_enc(double d);
double st_zset_score_dec(uint64_t u);

/* Called per element (member borrowed for the call); non-zero stops. */
typedef int (*st_zset_fn)(void *ctx, const uint8_t *member, size_t len,
                          double score);

/* Score of `member`: 0 or ST_ENOTFOUND. */
int st_zset_score(st_txn *t, const st_obj *o, const void *member, size_t len,
                  double *score);

/* Set the score of `member` (added when absent: *created = 1). */
int st_zset_add(st_txn *t, st_obj *o, const void *member, size_t len,
                double score, int *created);

/* Remove `member`: 0 or ST_ENOTFOUND. */
int st_zset_rem(st_txn *t, st_obj *o, const void *member, size_t len);

/* 0-based rank of `member` (from the top with `rev`) and its score:
 * O(log n) through the counted B-tree over the score order (st_rank.h).
 * ST_ENOTFOUND when absent. */
int st_zset_rank(st_txn *t, const st_obj *o, const void *member, size_t len,
                 int rev, uint64_t *rank, double *score);

/* ZCOUNT: members scoring within [min, max] (exclusive ends with minex /
 * maxex): rank(past max) - rank(min), O(log n), not O(count). */
int st_zset_count_score(st_txn *t, const st_obj *o, double min, int minex,
                        double max, int maxex, uint64_t *n);

/* Lex range bounds: "-", "+", "[x", "(x". */
enum st_zlex_kind { ST_ZLEX_MIN, ST_ZLEX_MAX, ST_ZLEX_INCL, ST_ZLEX_EXCL };

typedef struct st_zlex {
    int kind;
    const uint8_t *p;
    size_t len;
} st_zlex;

enum st_zby { ST_ZBY_RANK, ST_ZBY_SCORE, ST_ZBY_LEX };

/* An ordered walk. */
typedef struct st_zrange {
    int by;
    int rev;               /* from the highest score down */
    uint64_t start, count; /* by rank: ranks in walk order */
    double min, max;       /* by score (min <= max even with rev) */
    int minex, maxex;
    st_zlex lmin, lmax;     /* by lex */
    uint64_t offset, limit; /* by score/lex: LIMIT (UINT64_MAX: all) */
} st_zrange;

/*
 * Walk range `r`, calling `fn` per element (may be NULL); with `del`
 * each visited element is removed after the call. *visited gets the
 * count. O(log n + offset + visited) for score/lex; for rank, the start
 * is found by position (O(log n)), so O(log n + visited).
 */
int st_zset_walk(st_txn *t, st_obj *o, const st_zrange *r, int del,
                 st_zset_fn fn, void *ctx, uint64_t *visited);

/* ZLEXCOUNT of lex range `r` (by == ST_ZBY_LEX): rank(last) - rank(first)
 * + 1, O(log n), when both ends of the range are ordinary keys; by
 * walking when an end lies in a run of long members (see st_zset.c). */
int st_zset_count_lex(st_txn *t, st_obj *o, const st_zrange *r, uint64_t *n);

/* ZSCAN step / all members, in hash order; see st_elem_scan. */
int st_zset_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                 st_zset_fn fn, void *ctx, uint64_t *next);

/*
 * A uniform random sample of min(count, card) distinct members, drawn
 * from `seed` over the score order (every subset of that size equally
 * likely; count 1 is a uniform pick), visited in score order. O(count log
 * n), or one O(n) pass from count >= n / 8 on (st_rank_sample).
 * ST_ENOTFOUND if the zset is empty.
 */
int st_zset_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                   st_zset_fn fn, void *ctx);

#endif
