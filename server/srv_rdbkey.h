/*
 * srv_rdbkey.h - one key as an RDB object, between storage/ and the
 * codec in rdb/: a stored key serialised with Redis 7.0's encodings
 * (DUMP, MIGRATE, the RDB export and SYNC), and a decoded object written
 * into storage (RESTORE, the RDB import) through the ordinary keyspace
 * and collection calls, so it works whatever the storage layout.
 *
 * Writes go through st_keyspace and the collection modules only; a load
 * into a key that may already exist must delete it first.
 */
#ifndef SRV_RDBKEY_H
#define SRV_RDBKEY_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"
#include "storage/st_codec.h"
#include "storage/st_coll.h"

struct st_txn;

/*
 * Serialise key k (found as record r in transaction t) with encoder e
 * into writer w: the type byte, then the key name when `name` is not NULL
 * (RDB files), then the value. 0, ENOMEM, or a storage code (ST_*: the
 * collection could not be read, or ST_ECORRUPT when it does not add up).
 */
int srv_rdbkey_encode(struct st_txn *t, st_keyref *k, const st_rec *r,
                      rdb_writer *w, rdb_enc *e, const void *name, size_t nlen);

/*
 * A DUMP payload of key k (record r): object, RDB version and CRC64, in
 * the memory writer w (reset first). 0 or as srv_rdbkey_encode.
 */
int srv_rdbkey_dump(struct st_txn *t, st_keyref *k, const st_rec *r,
                    rdb_writer *w, rdb_enc *e);

/*
 * Check a value completely without storing it: the decode of type
 * `type` from r, and for the plain set and sorted set encodings, and
 * plain hashes past hash-max-listpack-entries, no member twice (Redis
 * refuses those; smaller hashes it takes as they are). `digests` is the
 * caller's reusable
 * memory. 0, RDB_ECORRUPT for a duplicate (r->why says so), or the
 * decode's code.
 */
int srv_rdbkey_check(rdb_reader *r, int type, rdb_scratch *sc,
                     rdb_buf *digests);

/*
 * The process's reusable codec memory for one command at a time (DUMP,
 * RESTORE, MIGRATE): a memory writer, an encoder, the decoder's scratch
 * and digests. Worker thread only. srv_rdbkey_kit_trim gives back buffers
 * a big value grew past SRV_RDBKEY_KEEP bytes, after the reply is built.
 */
#define SRV_RDBKEY_KEEP (1u << 20)

typedef struct srv_rdbkey_kit {
    rdb_writer w;
    rdb_enc e;
    rdb_scratch sc;
    rdb_buf digests;
} srv_rdbkey_kit;

srv_rdbkey_kit *srv_rdbkey_kit_get(void);
void srv_rdbkey_kit_trim(srv_rdbkey_kit *kit);

/*
 * A decoded object being written into key k (absent: the caller deleted
 * it). For bulk loads, `rotate` is called every `batch` elements to
 * commit and begin the transaction again (*t replaced), so a huge key
 * never makes one huge transaction.
 */
typedef struct srv_rdbkey_load {
    struct st_txn *t;
    st_keyref *k;
    int64_t now;
    int64_t expire_at; /* ms; 0 = none; set when the object is done */
    st_obj o;
    int opened;
    int err; /* the storage code that stopped the load */
    int dup; /* a member came twice (its last value kept) */
    uint64_t elems;
    uint64_t batch; /* 0: never rotate */
    uint64_t since_rotate;
    int (*rotate)(void *ctx, struct st_txn **t);
    void *rotate_ctx;
    uint64_t xgroup, xconsumer; /* a stream: groups and consumers so far */
    /* a stream: the first ordinal of the node being loaded, how many of
     * its entries came, and the ordinal its last slot stands for */
    uint64_t xnode_base, xnode_pos, xnode_end;
} srv_rdbkey_load;

/* Start loading into k (which must be absent) in t at `now`. */
void srv_rdbkey_load_init(srv_rdbkey_load *l, struct st_txn *t, st_keyref *k,
                          int64_t now, int64_t expire_at);

/* The sink that writes what the decoder hands it into l's key. */
const rdb_sink *srv_rdbkey_load_sink(srv_rdbkey_load *l, rdb_sink *s);

/*
 * After a decode that returned 0: the collection's record and the key's
 * expiry are written. 0 or a storage code.
 */
int srv_rdbkey_load_finish(srv_rdbkey_load *l);

#endif
