/*
 * st_stream.h - streams: entries keyed by id in the streams database, and
 * the stream's state, consumer groups, consumers and pending entries in
 * the stream-groups database, every key starting with the collection id
 * (so DEL detaches the whole stream in O(1) and the reaper frees it, and
 * COPY copies it, through st_coll.h). An entry's key is collection id,
 * then ms and seq of its id (big-endian u64 each): append, range reads,
 * trimming and deletion are O(log n) per entry touched, whatever the
 * length. The key record's cardinality is the stream's length; a stream
 * may be empty and still exist (st_coll_save keeps it).
 *
 * Group-side keys: id + 'm' (the stream's state), id + 'g' + group name
 * (the group), id + 'c' + group number + consumer name (a consumer),
 * id + 'n' + group number + consumer number (its name), id + 'p' + group
 * number + entry id (the group's pending entry), id + 'q' + group number
 * + consumer number + entry id (the consumer's pending entry). Names of
 * groups and consumers may have any length: one longer than
 * ST_STREAM_NAME_INLINE is keyed by its first ST_STREAM_NAME_INLINE
 * bytes, a 128-bit hash and a probe byte, with the full name after the
 * record, and the walks still visit names in byte order.
 *
 * Calls take a stream opened with st_coll_open(..., ST_TYPE_STREAM, ...)
 * (or created with st_coll_create) and keep o->c.card; the caller writes
 * the record back with st_coll_save(). Values handed to callbacks are
 * borrowed until the next write.
 */
#ifndef ST_STREAM_H
#define ST_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_coll.h"

/* Longest group or consumer name kept whole in its LMDB key (the rest of
 * a key holds ids); longer ones take the digest form. */
#define ST_STREAM_NAME_INLINE 400
/* entries_read of a group when it is not known (Redis's -1). */
#define ST_STREAM_READ_UNKNOWN (-1)

typedef struct st_stream_id {
    uint64_t ms;
    uint64_t seq;
} st_stream_id;

/* -1, 0, 1 as a is before, equal to or after b. */
int st_stream_id_cmp(const st_stream_id *a, const st_stream_id *b);

/* The stream's state beside its length. */
typedef struct st_stream_meta {
    st_stream_id last;        /* the last id added (XADD's floor) */
    st_stream_id max_deleted; /* the greatest id deleted */
    uint64_t entries_added;   /* entries ever added */
    uint64_t ngroups;
    uint64_t next_group; /* number of the next group created */
    /* the last entry's ordinal (st_stream_add): the next one's is one
     * more, whatever XSETID does to entries_added; 0 in a state written
     * before it was kept (then entries_added stands in) */
    uint64_t last_ordinal;
} st_stream_meta;

/* The ordinal of the next entry added to a stream with state m. */
uint64_t st_stream_next_ordinal(const st_stream_meta *m);

/* Read the state (all zero for a stream that has none yet; a state
 * written before last_ordinal was kept reads with it 0) / write it. */
int st_stream_meta_get(st_txn *t, const st_obj *o, st_stream_meta *m);
int st_stream_meta_put(st_txn *t, const st_obj *o, const st_stream_meta *m);

/* The i-th of n fields (name, value, name, ...) of an entry to write. */
typedef void st_stream_field_fn(void *ctx, size_t i, const uint8_t **p,
                                size_t *len);

/*
 * Add the entry `id` with `n` strings from `field` (n even); `ordinal`
 * is its place in the order of additions (the stream's entries_added
 * after it), which approximate trimming groups by. The caller has checked
 * id is above every id in the stream. Write transaction.
 */
int st_stream_add(st_txn *t, st_obj *o, const st_stream_id *id,
                  uint64_t ordinal, size_t n, st_stream_field_fn *field,
                  void *ctx);

/* What a stream tells the observer it holds when it signals: more than
 * any count of waiters, as every reader may read the same entry. */
#define ST_STREAM_READERS_ANY (1ull << 30)

/*
 * Tell the environment's observer (st_env_observe) that readers waiting
 * on this stream may be served now (an entry came, a group went): as a
 * key of ST_TYPE_STREAM that came into being (not fresh) with
 * ST_STREAM_READERS_ANY elements. Write transaction.
 */
void st_stream_signal(st_txn *t, const st_obj *o);

/* An entry's value, decoded one string at a time. */
typedef struct st_stream_value {
    const uint8_t *p, *end;
} st_stream_value;

/* Number of strings in the value (fields and values), or 0 if corrupt. */
size_t st_stream_value_count(const uint8_t *val, size_t len);
/* Start decoding. */
void st_stream_value_init(st_stream_value *v, const uint8_t *val, size_t len);
/* The next string: 1 with *p, *len set, 0 at the end. */
int st_stream_value_next(st_stream_value *v, const uint8_t **p, size_t *len);

/* Called with each entry; non-zero stops the walk. */
typedef int st_stream_entry_fn(void *ctx, const st_stream_id *id,
                               const uint8_t *val, size_t len);

/*
 * Visit entries with start <= id <= end, ascending (or descending with
 * `rev`), at most `count` (0: no limit): O(log n + visited).
 */
int st_stream_range(st_txn *t, const st_obj *o, const st_stream_id *start,
                    const st_stream_id *end, int rev, uint64_t count,
                    st_stream_entry_fn *fn, void *ctx);

/* One entry: 0 with *val borrowed, or ST_ENOTFOUND. */
int st_stream_get(st_txn *t, const st_obj *o, const st_stream_id *id,
                  const uint8_t **val, size_t *len);

/* The first (or `last`) entry's id: 0, or ST_ENOTFOUND when empty. */
int st_stream_edge(st_txn *t, const st_obj *o, int last, st_stream_id *id);

/* Delete entry `id`: 0, or ST_ENOTFOUND. Keeps o->c.card. */
int st_stream_del(st_txn *t, st_obj *o, const st_stream_id *id);

/*
 * Trim from the head: delete entries while there are more than `maxlen`
 * (by_minid 0) or while the first id is below `minid` (by_minid 1).
 * With node == 0 exactly, deleting at most `limit` (0: no limit). With
 * node > 0 approximately, as Redis trims with `~`: entries are grouped in
 * nodes of `node` consecutive ordinals, and only whole nodes go (those
 * whose removal leaves at least maxlen entries, or whose last id is below
 * minid), while the entries deleted stay within `limit`. *deleted gets
 * the count. Up to a thousand entries are deleted here; more are handed
 * to the lazy freer (st_coll_detach_below) by moving the stream's floor
 * past them, so the writes stay O(1) and the command reads them only:
 * O(deleted + node) reads. Every call here skips entries below the floor.
 */
int st_stream_trim(st_txn *t, st_obj *o, int by_minid, uint64_t maxlen,
                   const st_stream_id *minid, uint64_t node, uint64_t limit,
                   uint64_t *deleted);

/* ---- consumer groups ---- */

typedef struct st_stream_group {
    uint64_t num;         /* the group's number inside its stream */
    st_stream_id last;    /* last delivered id */
    int64_t entries_read; /* or ST_STREAM_READ_UNKNOWN */
    uint64_t pending;     /* entries in its PEL */
    uint64_t consumers;
    uint64_t next_consumer; /* number of the next consumer created */
} st_stream_group;

/* The group `name`: 0 and *g, ST_ENOTFOUND. */
int st_stream_group_get(st_txn *t, const st_obj *o, const void *name,
                        size_t len, st_stream_group *g);
/* Write (create or update) the group `name`. ST_ECOLLISION when 256 long
 * names share its 128-bit hash. */
int st_stream_group_put(st_txn *t, const st_obj *o, const void *name,
                        size_t len, const st_stream_group *g);
/* Delete the group with its consumers and PEL: O(consumers + pending). */
int st_stream_group_del(st_txn *t, const st_obj *o, const void *name,
                        size_t len);

typedef int st_stream_group_fn(void *ctx, const uint8_t *name, size_t len,
                               const st_stream_group *g);
/* Every group in name order (bytes, a prefix before the longer name).
 * May allocate (names sharing their first ST_STREAM_NAME_INLINE bytes are
 * sorted in memory): ENOMEM. */
int st_stream_groups(st_txn *t, const st_obj *o, st_stream_group_fn *fn,
                     void *ctx);

typedef struct st_stream_consumer {
    uint64_t num;
    int64_t seen_time; /* ms: its last interaction */
    uint64_t pending;
} st_stream_consumer;

/* The consumer `name` of group number gnum: 0 and *cons, ST_ENOTFOUND. */
int st_stream_consumer_get(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len,
                           st_stream_consumer *cons);
/* Write a consumer (its name record too). ST_ECOLLISION as for groups. */
int st_stream_consumer_put(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len,
                           const st_stream_consumer *cons);
/* Delete a consumer record (its pending entries are the caller's). */
int st_stream_consumer_del(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len, uint64_t cnum);
/* The name of consumer number cnum: 0 with it borrowed, ST_ENOTFOUND. */
int st_stream_consumer_name(st_txn *t, const st_obj *o, uint64_t gnum,
                            uint64_t cnum, const uint8_t **name, size_t *len);

typedef int st_stream_consumer_fn(void *ctx, const uint8_t *name, size_t len,
                                  const st_stream_consumer *cons);
/* Every consumer of group gnum in name order (as st_stream_groups). */
int st_stream_consumers(st_txn *t, const st_obj *o, uint64_t gnum,
                        st_stream_consumer_fn *fn, void *ctx);

/* A pending entry of a group. */
typedef struct st_stream_pel {
    uint64_t consumer;     /* its consumer's number */
    int64_t delivery_time; /* ms */
    uint64_t delivery_count;
} st_stream_pel;

/* Pending entry `id` of group gnum: 0 and *p, ST_ENOTFOUND. */
int st_stream_pel_get(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, st_stream_pel *p);
/* Write it (and its consumer's index entry; a change of consumer moves
 * it from `old_consumer`, or pass UINT64_MAX when it was not pending). */
int st_stream_pel_put(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, const st_stream_pel *p,
                      uint64_t old_consumer);
/* Delete it and its consumer's index entry: 0, ST_ENOTFOUND. */
int st_stream_pel_del(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, uint64_t consumer);

/* The greatest id pending in group gnum: 0, or ST_ENOTFOUND. */
int st_stream_pel_last(st_txn *t, const st_obj *o, uint64_t gnum,
                       st_stream_id *id);

typedef int st_stream_pel_fn(void *ctx, const st_stream_id *id,
                             const st_stream_pel *p);
/*
 * Pending entries of group gnum with start <= id <= end in id order, at
 * most `count` (0: all); with consumer != UINT64_MAX only that consumer's
 * (walked through its own index): O(log n + visited).
 */
int st_stream_pels(st_txn *t, const st_obj *o, uint64_t gnum, uint64_t consumer,
                   const st_stream_id *start, const st_stream_id *end,
                   uint64_t count, st_stream_pel_fn *fn, void *ctx);

#endif
