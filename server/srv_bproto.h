/*
 * srv_bproto.h - the frames of the stream between a worker (or the
 * reaper) and the broker (a Unix stream socket). A frame is a fixed 24-byte
 * header and a body of `len` bytes:
 *
 *   0  'L' 'B'        magic
 *   2  type           enum srv_bp_type
 *   3  kind           enum srv_bp_kind (channel, pattern, shard channel)
 *   4  0 0 0 0        reserved, must be zero
 *   8  arg            u64, little-endian: per type (a count, a length ...)
 *   16 len            u64, little-endian: body bytes
 *
 * Lists in a body are fields: a u64 little-endian length, then the bytes.
 * Pure functions over memory; the only allocation is growing a srv_buf.
 * Any process may use them.
 */
#ifndef SRV_BPROTO_H
#define SRV_BPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_buf.h"

#define SRV_BP_HDR_SIZE 24
#define SRV_BP_MAGIC0 'L'
#define SRV_BP_MAGIC1 'B'
#define SRV_BP_FIELD_HDR 8
/* Room a body may need besides names and message (field headers ...). */
#define SRV_BP_BODY_SLACK (1024 * 1024)

enum srv_bp_type {
    /* worker -> broker */
    SRV_BP_HELLO = 1, /* arg: worker index */
    SRV_BP_COUNT,     /* kind; arg: this worker's subscriptions to the
                       * name (absolute, 0 = none); body: the name */
    SRV_BP_PUBLISH,   /* kind channel|shard; arg: channel length;
                       * body: channel then message */
    SRV_BP_NUMSUB,    /* kind channel|shard; body: fields (names) */
    SRV_BP_CHANNELS,  /* kind channel|shard; arg: 1 if body is a
                       * pattern, 0 for all */
    SRV_BP_NUMPAT,    /* no body */
    /* broker -> worker */
    SRV_BP_WELCOME,    /* arg: broker pid */
    SRV_BP_DELIVER,    /* as PUBLISH, to each interested worker */
    SRV_BP_PUBCOUNT,   /* arg: receivers of the oldest PUBLISH */
    SRV_BP_R_NUMSUB,   /* body: (field name, u64 count) per name */
    SRV_BP_R_CHANNELS, /* arg: number of fields; body: fields */
    SRV_BP_R_NUMPAT,   /* arg: number of patterns */
    /* blocking commands (srv_block.h, srv_bwait.h) */
    SRV_BP_WAIT,   /* w->b; arg: waiter token; kind: SRV_BP_GROUP for a
                    * consumer group's reader, else 0; body: u64 db, u64
                    * order (srv_bwait_add's), the group's name (a field,
                    * with SRV_BP_GROUP), then fields (the keys it waits
                    * on, in its order) */
    SRV_BP_UNWAIT, /* w->b; arg: token; no body: it waits no more */
    SRV_BP_SERVED, /* w->b; arg: token; kind: SRV_BP_STILL (it waits
                    * on) or SRV_BP_DONE (it is answered); body: u64 db,
                    * u64 elements left, u64 txn id, field key (the key
                    * it was served from, or the one granted), and for a
                    * group's reader a field: the group */
    SRV_BP_GRANT,  /* b->w; arg: token; body: a key of the waiter that
                    * may hold data: try to serve it */
    /* writes (srv_keys.h) */
    SRV_BP_TXN,       /* w->b, before the commit; arg: txn id; body:
                       * records whose delivery follows commit order */
    SRV_BP_COMMITTED, /* w->b, after the commit; arg: txn id; kind:
                       * SRV_BP_DONE committed or SRV_BP_STILL failed;
                       * body: keys that came into being (u64 db, u64
                       * elements, field key), each a hint */
    /* questions to every worker (client control) */
    SRV_BP_ASK,    /* w->b; kind: query; arg: request id; body: query */
    SRV_BP_QUERY,  /* b->w; kind: query; arg: broker's id; body: query */
    SRV_BP_ANSWER, /* w->b; arg: broker's id; body: this worker's part */
    SRV_BP_REPLY,  /* b->w; kind: query; arg: request id; body: the
                    * parts (concatenated, or summed u64s) */
    /* interests (applied ahead of other frames, as COUNT) */
    SRV_BP_INTEREST, /* w->b; kind: enum srv_bp_interest; arg: this
                      * worker's count (absolute) */
    SRV_BP_INVAL,    /* b->w; body per key: u64 writer id, u64 1 for
                      * "every key" (FLUSHALL) else 0, field key */
    SRV_BP_MONITOR,  /* both ways; arg: the line's number (the order its
                      * command ran in: srv_morder.h); body: one MONITOR
                      * line */
    SRV_BP_TOCLIENT, /* both ways; arg: a client id; body: the value of
                      * an invalidation message (RESP: an array of keys,
                      * or a null) for that client, which is on some
                      * worker (a tracking redirection) */
    SRV_BP_HINT,     /* w->b; arg: txn id of a snapshot; body: u64 db, u64
                      * elements, field key, and for a group's readers a
                      * field, the group: a waiter's check found the key
                      * holding that much for them (srv_bwait_hint) */
    SRV_BP_NTYPES
};

/* SERVED's and COMMITTED's kinds. */
#define SRV_BP_STILL 0
#define SRV_BP_DONE 1
/* WAIT's kind for a consumer group's reader. */
#define SRV_BP_GROUP 1

/* Questions of ASK / QUERY / REPLY (the kind). */
enum srv_bp_query {
    SRV_BP_Q_LIST = 0,  /* CLIENT LIST: lines, concatenated */
    SRV_BP_Q_KILL,      /* CLIENT KILL: clients killed, summed */
    SRV_BP_Q_UNBLOCK,   /* CLIENT UNBLOCK: 1 where it was, summed */
    SRV_BP_Q_EXISTS,    /* is there a client with this id: summed */
    SRV_BP_Q_PAUSE,     /* CLIENT PAUSE/UNPAUSE changed: summed acks */
    SRV_BP_Q_RECEIVERS, /* PUBLISH in a script: who would receive it
                         * (u8 kind, then the channel), summed */
    SRV_BP_NQUERIES
};

/* What INTEREST counts. */
enum srv_bp_interest {
    SRV_BP_I_TRACKING = 0, /* clients with CLIENT TRACKING on */
    SRV_BP_I_MONITOR,      /* MONITOR clients */
    SRV_BP_NINTERESTS
};

enum srv_bp_kind {
    SRV_BP_CHANNEL = 0,
    SRV_BP_PATTERN = 1,
    SRV_BP_SHARD = 2,
    SRV_BP_NKINDS
};

/* Results of srv_bproto_decode besides 0. */
#define SRV_BP_MORE 1 /* incomplete: read more */
#define SRV_BP_EMAGIC (-1)
#define SRV_BP_ETYPE (-2)
#define SRV_BP_EKIND (-3)
#define SRV_BP_ERESERVED (-4)
#define SRV_BP_ETOOBIG (-5)
#define SRV_BP_EARG (-6)

typedef struct srv_bframe {
    int type;
    int kind;
    uint64_t arg;
    uint64_t len;
    const char *body; /* into the decoded buffer */
} srv_bframe;

/* A read position in a body. */
typedef struct srv_bcursor {
    const char *p;
    const char *end;
} srv_bcursor;

/*
 * Decode the frame at the start of buf[0..len). Returns 0 with *f filled
 * and *size the frame's bytes (header and body); SRV_BP_MORE when buf
 * holds only part of it, with *size the bytes the whole frame needs if the
 * header is complete (else SRV_BP_HDR_SIZE), so the caller can reserve
 * once for a big frame; or a negative SRV_BP_E* code for a frame that can
 * never be valid (bad magic, type, kind, reserved bytes, a body over
 * max_body, or an argument the type does not allow). Checked as soon as
 * the header is in, before the body arrives.
 */
int srv_bproto_decode(const char *buf, size_t len, uint64_t max_body,
                      srv_bframe *f, size_t *size);

/* Text of a srv_bproto_decode error code. */
const char *srv_bproto_strerror(int code);

/* The largest body a peer may send when bulks are at most max_bulk bytes:
 * two bulks (channel and message) and the slack, saturating. */
uint64_t srv_bproto_max_body(long long max_bulk);

/*
 * Append a frame whose body is p1[0..n1) then p2[0..n2) (either may be
 * empty). 0, or ENOMEM with b unchanged.
 */
int srv_bproto_put(srv_buf *b, int type, int kind, uint64_t arg, const void *p1,
                   size_t n1, const void *p2, size_t n2);

/*
 * Build a frame piecewise: begin appends a header and returns its offset
 * in b (or (size_t)-1 on ENOMEM); the body is appended with put_field and
 * put_u64; end writes the body length into the header. A failed piece
 * returns ENOMEM and the caller drops the frame with b->len = offset.
 */
size_t srv_bproto_begin(srv_buf *b, int type, int kind, uint64_t arg);
int srv_bproto_put_field(srv_buf *b, const void *p, size_t n);
int srv_bproto_put_u64(srv_buf *b, uint64_t v);
void srv_bproto_end(srv_buf *b, size_t offset);
/* Replace the arg of the frame begun at offset (a count known at end). */
void srv_bproto_set_arg(srv_buf *b, size_t offset, uint64_t arg);

/* Read a body: 0, or -1 when the body ends or a field overruns it. */
void srv_bproto_cursor(srv_bcursor *c, const srv_bframe *f);
int srv_bproto_get_field(srv_bcursor *c, const char **p, size_t *n);
int srv_bproto_get_u64(srv_bcursor *c, uint64_t *v);

#endif
