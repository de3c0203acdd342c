/*
 * srv_stream.h - what the stream handlers (srv_cmd_stream.c, entries and
 * reads; srv_cmd_sgroup.c, consumer groups) share: stream ids parsed and
 * printed as Redis 7.0 does, argv[i] opened as a stream with its errors
 * replied, an entry replied, the stream's state saved with its record,
 * and the consumer-group lag arithmetic of Redis 7.0.
 */
#ifndef SRV_STREAM_H
#define SRV_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "storage/st_coll.h"
#include "storage/st_stream.h"

struct st_txn;

/* Room for "ms-seq" of two u64 and a NUL. */
#define SRV_STREAM_ID_MAX 44
/* The longest id argument Redis parses (its 128-byte buffer). */
#define SRV_STREAM_ID_ARG_MAX 127
/* Redis's stream-node-max-entries default: `~` trims nodes this big, and
 * its default LIMIT is 100 of them. */
#define SRV_STREAM_NODE_ENTRIES 100
#define SRV_STREAM_APPROX_LIMIT (100 * SRV_STREAM_NODE_ENTRIES)
/* Largest total of an entry's fields and values (Redis's listpack cap). */
#define SRV_STREAM_ENTRY_MAX (1u << 30)

extern const char SRV_STREAM_ERR_ID[]; /* "Invalid stream ID ..." */

/*
 * Parse a stream id as Redis does: "-" and "+" (unless `strict`), "ms" (the
 * sequence is then `missing_seq`) or "ms-seq"; with `seq_given` non-NULL
 * also "ms-*" (*seq_given 0, else 1). 0, or -1 when invalid (nothing
 * replied).
 */
int srv_stream_parse_id(const srv_slice *a, st_stream_id *id,
                        uint64_t missing_seq, int strict, int *seq_given);

/* srv_stream_parse_id replying "ERR Invalid stream ID ..." on failure. */
int srv_stream_id_or_reply(srv_conn *c, const srv_slice *a, st_stream_id *id,
                           uint64_t missing_seq, int strict);

/* The id after / before `id`: 0, or -1 when there is none. */
int srv_stream_id_incr(st_stream_id *id);
int srv_stream_id_decr(st_stream_id *id);

/* "ms-seq" into buf (SRV_STREAM_ID_MAX bytes); returns its length. */
size_t srv_stream_id_format(char *buf, const st_stream_id *id);

/* Reply the id as a bulk string. */
void srv_stream_reply_id(srv_conn *c, const st_stream_id *id);

/* Reply one entry, [id, [field, value, ...]]: an st_stream_entry_fn with
 * ctx the connection. Returns 0. */
int srv_stream_reply_entry(void *ctx, const st_stream_id *id,
                           const uint8_t *val, size_t len);

/* argv[i] as a stream: 1 found, 0 absent (o ready for st_coll_create),
 * -1 after an error reply. */
int srv_stream_open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                             st_obj *o);

/* Write the stream's state and its record: 0, or -1 after an error
 * reply. */
int srv_stream_save_or_reply(srv_conn *c, struct st_txn *t, st_obj *o,
                             const st_stream_meta *m);

/* A stream opened with its state and first id (zero when empty). */
typedef struct srv_stream {
    st_keyref k;
    st_obj o;
    st_stream_meta m;
    st_stream_id first;
} srv_stream;

/* Whether argv[i] holds a stream now (nothing replied either way): a
 * blocked reader run again asks, as its stream may have gone. */
int srv_stream_there(srv_conn *c, struct st_txn *t, int i);

/* srv_stream_open_or_reply plus the state and first id (found only). */
int srv_stream_load_or_reply(srv_conn *c, struct st_txn *t, int i,
                             srv_stream *s);

/* srv_stream_load_or_reply without s->first (left 0-0), for a command
 * that does not need the first entry (XADD: a cursor seek saved). */
int srv_stream_load_meta_or_reply(srv_conn *c, struct st_txn *t, int i,
                                  srv_stream *s);

/* Redis 7.0's estimate of how many entries come up to `id` (its
 * streamEstimateDistanceFromFirstEverEntry), or ST_STREAM_READ_UNKNOWN. */
int64_t srv_stream_entries_upto(const srv_stream *s, const st_stream_id *id);

/* Whether a deleted entry may lie in [start, end] (NULL: open ended). */
int srv_stream_range_has_tombstones(const srv_stream *s,
                                    const st_stream_id *start,
                                    const st_stream_id *end);

/* Reply a group's lag as Redis 7.0 does: an integer or a null. */
void srv_stream_reply_lag(srv_conn *c, const srv_stream *s,
                          const st_stream_group *g);

/* A delivery to a group moved its last id to `id`: its entries_read as
 * Redis 7.0 counts it. */
void srv_stream_group_advance(const srv_stream *s, st_stream_group *g,
                              const st_stream_id *id);

/* Streams an XREAD or XREADGROUP reads without allocating. */
#define SRV_STREAM_READ_FEW 4

/* XREAD / XREADGROUP's arguments. */
typedef struct srv_stream_read {
    long long timeout_ms; /* BLOCK, relative; -1 when not given */
    long long count;      /* 0: no limit */
    int first_key;        /* argv index of the first key after STREAMS */
    int nkeys;            /* keys, then as many ids */
    int group;            /* argv index of the group name (the consumer's
                           * follows); 0 for XREAD */
    int noack;
} srv_stream_read;

/* Parse XREAD's or XREADGROUP's (c->cmd) options with Redis's errors in
 * its order: 0, or -1 after the error reply. */
int srv_stream_parse_read_or_reply(srv_conn *c, srv_stream_read *r);

/*
 * XREAD / XREADGROUP found nothing to serve: without BLOCK, the null
 * array; with it, block c on its streams (srv_block.h; inside EXEC the
 * null array). `after` (NULL for XREADGROUP) holds the id each key's
 * "$" stood for: the copy of the command the waiter keeps reads from
 * there, so a wake-up serves what came after the block, as Redis does.
 */
void srv_stream_block_or_reply(srv_conn *c, const srv_stream_read *r,
                               const st_stream_id *after);

#endif
