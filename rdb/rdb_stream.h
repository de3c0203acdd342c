/*
 * rdb_stream.h - streams as RDB objects (types 15, 19 and 21: Redis 5 to
 * 7.2's listpacks of entries, the stream's state, consumer groups with
 * their pending entries and consumers). Decoding hands a stream to a sink
 * piece by piece: entries in id order, the state, then each group with
 * its consumers and each consumer's pending entries (the group-wide
 * pending list, which the format writes before the consumers, is joined
 * to its owners here). Encoding writes what Redis 7.0 would: type 19,
 * nodes of at most RDB_STREAM_NODE_ENTRIES entries and
 * RDB_STREAM_NODE_BYTES bytes (stream-node-max-entries and -bytes).
 */
#ifndef RDB_STREAM_H
#define RDB_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"
#include "rdb/rdb_pack.h"

/* Redis 7.0's default node limits. */
#define RDB_STREAM_NODE_ENTRIES 100
#define RDB_STREAM_NODE_BYTES 4096
/* An entry id as the format writes it raw: ms and seq, big-endian. */
#define RDB_STREAM_ID_BYTES 16

typedef struct rdb_stream_id {
    uint64_t ms, seq;
} rdb_stream_id;

/* A borrowed string. */
typedef struct rdb_str {
    const uint8_t *p;
    size_t n;
} rdb_str;

/* The stream's state beside its entries. Type 15 has no first,
 * max_deleted or entries_added: the decoder gives 0-0 for max_deleted,
 * the first entry's id and the length, as Redis 7.0 does. */
typedef struct rdb_stream_meta {
    uint64_t length;
    rdb_stream_id last, first, max_deleted;
    uint64_t entries_added;
    uint64_t groups;
} rdb_stream_meta;

/* entries_read of a group when unknown (Redis's -1; a type 15 group gets
 * Redis 7.0's estimate from the stream's state). */
#define RDB_STREAM_READ_UNKNOWN (-1)

/*
 * Where a decoded stream goes; any callback may be NULL, any non-zero
 * return stops the decode with RDB_ESINK. Strings are borrowed for the
 * call. Order: (node, entry*)* (ascending ids), meta, then for each
 * group: group,
 * and for each of its consumers: consumer, pel* (its pending entries in
 * id order, with what the group's list says of them).
 */
typedef struct rdb_stream_sink {
    int (*entry)(void *ctx, const rdb_stream_id *id, const rdb_str *fv,
                 size_t n); /* n strings: field, value, ... */
    int (*meta)(void *ctx, const rdb_stream_meta *m);
    int (*group)(void *ctx, const uint8_t *name, size_t len,
                 const rdb_stream_id *last, int64_t entries_read,
                 uint64_t pending, uint64_t consumers);
    int (*consumer)(void *ctx, const uint8_t *name, size_t len,
                    int64_t seen_time, uint64_t pending);
    int (*pel)(void *ctx, const rdb_stream_id *id, int64_t delivery_time,
               uint64_t delivery_count);
    /* A node begins: a listpack of `bytes` bytes holding `live` entries
     * and `deleted` ones flagged deleted; the entries that follow until
     * the next node call are its live ones. */
    int (*node)(void *ctx, uint64_t live, uint64_t deleted, size_t bytes);
} rdb_stream_sink;

/* The decoder's reusable memory. */
typedef struct rdb_stream_scratch {
    rdb_buf fv;   /* rdb_str of an entry */
    rdb_buf text; /* integer fields as text */
    rdb_buf pel;  /* the group-wide pending list */
    rdb_buf out;  /* the rdb_str handed to the sink */
} rdb_stream_scratch;

void rdb_stream_scratch_free(rdb_stream_scratch *sc);

/*
 * Decode a stream of type byte `type` from r into s (ctx its context);
 * strings go through `str` (the caller's scratch). 0; the reader's
 * failure; RDB_ECORRUPT (r->why says what: ids out of order, a length
 * that is not the entries', a pending entry without a consumer or owned
 * twice, a malformed node ...); RDB_ESINK.
 */
int rdb_stream_decode(rdb_reader *r, int type, const rdb_stream_sink *s,
                      void *ctx, rdb_stream_scratch *sc, rdb_buf *str);

/*
 * A stream being encoded: begin, one entry call per entry in ascending
 * id order, meta (the entries given must be m->length), then m->groups
 * times: group, `pending` gpel calls (the group's pending entries in id
 * order), then for each of its `consumers`: consumer and its `pending`
 * cpel calls. end checks the counts. Any call out of that order, or
 * counts that do not add up, give RDB_ECORRUPT (a caller's bug). Buffers
 * are kept for the next stream; fini frees them.
 */
typedef struct rdb_xenc {
    rdb_writer *w;
    const uint8_t *key; /* NULL: a DUMP payload */
    size_t klen;
    rdb_writer nodes; /* finished nodes: master id, listpack */
    rdb_buf pack;     /* the node being built */
    rdb_buf body;     /* its entries after the master entry */
    rdb_lp body_lp;
    rdb_buf master; /* the node's master fields: (size_t len, bytes) ... */
    uint64_t master_fields;
    rdb_stream_id master_id, prev;
    uint64_t node_entries, nnodes, entries, length;
    uint64_t groups_left, gpel_left, consumers_left, cpel_left;
    int state;
} rdb_xenc;

void rdb_xenc_init(rdb_xenc *x);
void rdb_xenc_fini(rdb_xenc *x);

int rdb_xenc_begin(rdb_xenc *x, rdb_writer *w, const void *key, size_t klen);
int rdb_xenc_entry(rdb_xenc *x, const rdb_stream_id *id, const rdb_str *fv,
                   size_t n);
int rdb_xenc_meta(rdb_xenc *x, const rdb_stream_meta *m);
int rdb_xenc_group(rdb_xenc *x, const void *name, size_t len,
                   const rdb_stream_id *last, int64_t entries_read,
                   uint64_t pending, uint64_t consumers);
int rdb_xenc_gpel(rdb_xenc *x, const rdb_stream_id *id, int64_t delivery_time,
                  uint64_t delivery_count);
int rdb_xenc_consumer(rdb_xenc *x, const void *name, size_t len,
                      int64_t seen_time, uint64_t pending);
int rdb_xenc_cpel(rdb_xenc *x, const rdb_stream_id *id);
int rdb_xenc_end(rdb_xenc *x);

#endif
