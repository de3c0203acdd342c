/*
 * srv_coll.h - what the collection handlers share: argv[i] opened as a
 * collection of one type with its error replies done, the record saved
 * back, and the generic bodies behind the families of hashes, sets, lists
 * and sorted sets: member removal and lookup, the cardinality, and the
 * multi-key pop.
 */
#ifndef SRV_COLL_H
#define SRV_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "storage/st_codec.h"
#include "storage/st_elem.h"

struct st_txn;
struct st_obj;

/*
 * Open argv[i] as a collection of `type` (st_elem.h): 1 found, 0 absent
 * (o is then ready to be created), -1 after an error reply (WRONGTYPE,
 * storage failure).
 */
int srv_coll_open_or_reply(srv_conn *c, struct st_txn *t, int i, int type,
                           st_keyref *k, struct st_obj *o);

/* Write the collection record back (or drop it if emptied): 0, or -1
 * after an error reply. */
int srv_coll_save_or_reply(srv_conn *c, struct st_txn *t, struct st_obj *o);

/* Removes one member of a collection: 0, ST_ENOTFOUND, or an error. */
typedef int srv_coll_remove_fn(struct st_txn *t, struct st_obj *o,
                               const void *member, size_t len);

/*
 * HDEL, SREM, ZREM: remove members argv[2..] from the collection argv[1]
 * of `type` with `remove`, save it (an emptied one disappears) and reply
 * how many were there.
 */
void srv_coll_remove_members(srv_conn *c, int type, srv_coll_remove_fn *remove);

/* Replies what the collection holds for argv[i]: 0, or a storage error
 * (nothing replied then). */
typedef int srv_coll_reply_fn(srv_conn *c, struct st_txn *t,
                              const struct st_obj *o, int i);

/*
 * HGET/ZSCORE (one member, argv[2]) and HMGET/ZMSCORE (`many`: an array
 * over argv[2..]) on the collection argv[1] of `type`.
 */
void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_coll_reply_fn *reply);

/* What srv_coll_emit_elem replies per element of a hash or set walk. */
#define SRV_COLL_NAMES 0x1u  /* the field or member */
#define SRV_COLL_VALUES 0x2u /* a hash field's value */

typedef struct srv_coll_emit {
    srv_conn *c;
    unsigned want;          /* SRV_COLL_NAMES | SRV_COLL_VALUES */
    const srv_slice *match; /* a SCAN's MATCH pattern, or NULL */
    long long n;            /* reply elements written */
} srv_coll_emit;

/* The callback of a hash or set walk (st_elem_fn; ctx a srv_coll_emit):
 * reply each element that passes `match`, as `want` says. Returns 0. */
int srv_coll_emit_elem(void *ctx, const uint8_t *name, size_t nlen,
                       const uint8_t *val, size_t vlen);

/* Walks a hash's or a set's elements: st_hash_scan, st_set_scan. */
typedef int srv_coll_scan_fn(struct st_txn *t, const struct st_obj *o,
                             uint64_t cursor, size_t count, st_elem_fn fn,
                             void *ctx, uint64_t *next);

/*
 * HGETALL, HKEYS, HVALS, SMEMBERS: every element of the collection argv[1]
 * of `type`, walked with `scan`, replied as `want` says: a map of field
 * and value, a set of members, or an array.
 */
void srv_coll_reply_all(srv_conn *c, int type, unsigned want,
                        srv_coll_scan_fn *scan);

/* A 64-bit random number (random(3)), the seed of the sampling commands
 * (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER). */
uint64_t srv_coll_rand64(void);

/* Members copied at a time by walks that write while they go. */
#define SRV_COLL_BATCH 512

/*
 * Copies of members (and their scores) taken during a storage walk, whose
 * pointers die at the next write: up to SRV_COLL_BATCH at a time. Start
 * zeroed; free the buffer with srv_coll_batch_free().
 */
typedef struct srv_coll_batch {
    uint8_t *buf;
    size_t len, cap;
    size_t n; /* members held */
    size_t off[SRV_COLL_BATCH + 1];
    double score[SRV_COLL_BATCH];
} srv_coll_batch;

#define SRV_COLL_BATCH_PTR(b, i) ((b)->buf + (b)->off[i])
#define SRV_COLL_BATCH_LEN(b, i) ((b)->off[(i) + 1] - (b)->off[i])

/* Empty b for the next batch (it keeps its buffer). */
void srv_coll_batch_reset(srv_coll_batch *b);

/* Append a copy of member m with score s. 1 when the batch is full, or
 * out of memory (the walk stops; the caller sees b->n short), else 0. */
int srv_coll_batch_add(srv_coll_batch *b, const void *m, size_t ml, double s);

/* srv_coll_batch_add as the callbacks of hash/set walks (st_elem_fn,
 * score 0) and of zset walks (st_zset_fn); ctx is the batch. */
int srv_coll_batch_elem(void *ctx, const uint8_t *m, size_t ml,
                        const uint8_t *v, size_t vl);
int srv_coll_batch_scored(void *ctx, const uint8_t *m, size_t ml, double s);

void srv_coll_batch_free(srv_coll_batch *b);

/* HLEN, SCARD, LLEN, ZCARD: the cardinality of the collection argv[1] of
 * `type` (0 when absent). */
void srv_coll_reply_card(srv_conn *c, int type);

/*
 * Pops `n` elements of o from its `end` (0 or 1, as srv_args_mpop_or_reply
 * gives it) into the reply, whose array header the caller has written,
 * and saves o: 0, or a storage error (nothing more replied then).
 */
typedef int srv_coll_pop_fn(srv_conn *c, struct st_txn *t, struct st_obj *o,
                            int end, uint64_t n);

/*
 * LMPOP, ZMPOP: "numkeys key ... <end0|end1> [COUNT n]" from argv[base]
 * over collections of `type`: pop up to n elements of the first non-empty
 * key with `pop`, replying [key, [elements]] (and telling a blocked
 * client's waiter what is left, srv_block_served). With `timeout`
 * (BLMPOP, BZMPOP) argv[1] is parsed into it after the other arguments,
 * as Redis does. Returns 1 when every key is empty and nothing is
 * replied (LMPOP then replies a null array, BLMPOP blocks, with *numkeys
 * set), else 0 (replied, an error maybe).
 */
int srv_coll_mpop(srv_conn *c, int base, int type, const char *end0,
                  const char *end1, srv_coll_pop_fn *pop, int *numkeys,
                  int64_t *timeout);

#endif
