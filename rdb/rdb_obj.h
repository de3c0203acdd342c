/*
 * rdb_obj.h - RDB objects: the type byte and the value that follows it,
 * as DUMP payloads and RDB files hold them. Decoding walks any encoding
 * Redis 2.x to 7.0 writes (and Redis 7.2's listpack sets) and hands the
 * value to a sink element by element; encoding writes what Redis 7.0
 * would: a compact encoding (listpack, intset, quicklist of listpacks)
 * when the value is within Redis's default limits, the plain one past
 * them. Also the DUMP payload frame: object, RDB version, CRC64.
 */
#ifndef RDB_OBJ_H
#define RDB_OBJ_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"
#include "rdb/rdb_pack.h"

/* The RDB version this codec writes (Redis 7.0) and the oldest it reads
 * in files (the first with a checksum trailer). */
#define RDB_VERSION 10
#define RDB_VERSION_MIN 5

/* Object type bytes. */
enum rdb_type {
    RDB_TYPE_STRING = 0,
    RDB_TYPE_LIST = 1,
    RDB_TYPE_SET = 2,
    RDB_TYPE_ZSET = 3,
    RDB_TYPE_HASH = 4,
    RDB_TYPE_ZSET_2 = 5,
    RDB_TYPE_MODULE_PRE_GA = 6,
    RDB_TYPE_MODULE_2 = 7,
    RDB_TYPE_HASH_ZIPMAP = 9,
    RDB_TYPE_LIST_ZIPLIST = 10,
    RDB_TYPE_SET_INTSET = 11,
    RDB_TYPE_ZSET_ZIPLIST = 12,
    RDB_TYPE_HASH_ZIPLIST = 13,
    RDB_TYPE_LIST_QUICKLIST = 14,
    RDB_TYPE_STREAM_LISTPACKS = 15,
    RDB_TYPE_HASH_LISTPACK = 16,
    RDB_TYPE_ZSET_LISTPACK = 17,
    RDB_TYPE_LIST_QUICKLIST_2 = 18,
    RDB_TYPE_STREAM_LISTPACKS_2 = 19,
    RDB_TYPE_SET_LISTPACK = 20,
    RDB_TYPE_STREAM_LISTPACKS_3 = 21,
};

/* Quicklist 2 node containers. */
#define RDB_QL_PLAIN 1
#define RDB_QL_PACKED 2

/* What a value is, whatever its encoding. */
enum rdb_kind {
    RDB_KIND_STRING,
    RDB_KIND_LIST,
    RDB_KIND_SET,
    RDB_KIND_ZSET,
    RDB_KIND_HASH,
};

/*
 * The kind of type byte `type`: >= 0, or RDB_EUNSUPPORTED (streams,
 * modules; *what names them) or RDB_ECORRUPT (no such type).
 */
int rdb_obj_kind(int type, const char **what);

/* Type bytes that can only be stored, never decoded here. */
int rdb_obj_is_stream(int type);

/*
 * Where a decoded value goes. Any callback returning non-zero stops the
 * decode with RDB_ESINK (the sink keeps its own reason). Pointers borrow
 * the decoder's memory for the call. A string value comes in one call;
 * a collection as begin (its kind and the elements announced, 0 when the
 * encoding does not say), its elements (elem for lists and sets, pair
 * for hashes, scored for sorted sets) and end.
 */
typedef struct rdb_sink {
    void *ctx;
    int (*string)(void *ctx, const uint8_t *p, size_t n);
    int (*begin)(void *ctx, int kind, uint64_t hint);
    int (*elem)(void *ctx, const uint8_t *p, size_t n);
    int (*pair)(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                size_t vn);
    int (*scored)(void *ctx, const uint8_t *m, size_t mn, double score);
    int (*end)(void *ctx);
} rdb_sink;

/* The decoder's reusable memory (strings, blobs, integer texts). */
typedef struct rdb_scratch {
    rdb_buf a, b, blob;
} rdb_scratch;

void rdb_scratch_free(rdb_scratch *sc);

/*
 * Decode the value of type byte `type` from r into sink s. 0; or the
 * reader's failure (r->why says what: RDB_ETRUNC, RDB_ECORRUPT — a
 * duplicate member of a plain set, hash or zset, a NaN score — ...);
 * RDB_EUNSUPPORTED for streams and modules (before reading anything of
 * the value); RDB_EEMPTY for a collection without elements; RDB_ESINK.
 */
int rdb_obj_decode(rdb_reader *r, int type, const rdb_sink *s, rdb_scratch *sc);

/* Read past a value of type `type` (for keys that are not kept). */
int rdb_obj_skip(rdb_reader *r, int type, rdb_scratch *sc);

/* Redis's limits for the compact encodings. */
typedef struct rdb_limits {
    uint64_t hash_entries, hash_value; /* hash-max-listpack-* */
    uint64_t zset_entries, zset_value; /* zset-max-listpack-* */
    uint64_t set_intset;               /* set-max-intset-entries */
    size_t list_node_bytes;            /* list-max-listpack-size -2 */
} rdb_limits;

/* redis-server 7.0's built-in defaults (hash-max-listpack-entries 512,
 * hash-max-listpack-value 64, zset-max-listpack-entries 128,
 * zset-max-listpack-value 64, set-max-intset-entries 512,
 * list-max-listpack-size -2). */
extern const rdb_limits rdb_limits_default;

/*
 * An object being encoded: rdb_enc_begin (kind, exact element count,
 * and for RDB files the key name written after the type byte), one add
 * call per element, rdb_enc_end. Sorted set members must come in
 * ascending score order (ties by member) when there are at most
 * zset_entries of them (listpacks keep that order); past that any order
 * is right, and Redis writes the highest score first. The
 * encoder's buffers are kept for the next object; rdb_enc_fini frees
 * them.
 */
typedef struct rdb_enc {
    rdb_writer *w;
    const rdb_limits *lim;
    const uint8_t *key; /* NULL: a DUMP payload (no key) */
    size_t klen;
    int kind;
    uint64_t count, added;
    int generic;  /* writing the plain encoding as it comes */
    int intset;   /* set: every member so far is an integer */
    int too_long; /* zset: a member past the value limit */
    rdb_buf pack; /* the compact blob being built */
    rdb_lp lp;
    rdb_writer side; /* list: finished quicklist nodes */
    uint64_t nodes;
    int64_t *ints;
    size_t ints_cap;
} rdb_enc;

void rdb_enc_init(rdb_enc *e);
void rdb_enc_fini(rdb_enc *e);

/* A string object: type byte, [key], value. */
int rdb_enc_string(rdb_writer *w, const void *key, size_t klen, const void *p,
                   size_t n);

int rdb_enc_begin(rdb_enc *e, rdb_writer *w, const rdb_limits *lim, int kind,
                  uint64_t count, const void *key, size_t klen);
int rdb_enc_elem(rdb_enc *e, const void *p, size_t n);
int rdb_enc_pair(rdb_enc *e, const void *f, size_t fn, const void *v,
                 size_t vn);
int rdb_enc_scored(rdb_enc *e, const void *m, size_t mn, double score);
/* Finish the object; RDB_ECORRUPT if the elements added are not the
 * count announced (a caller's bug). */
int rdb_enc_end(rdb_enc *e);

/* The DUMP trailer: RDB version (LE u16) and CRC64 (LE u64). */
#define RDB_DUMP_TRAILER 10

/* Append the trailer to a memory writer holding one object. */
int rdb_dump_finish(rdb_writer *w);

/*
 * Check the trailer of a DUMP payload of `n` bytes at `p` as Redis 7.0
 * does: at least the trailer, a version up to RDB_VERSION, and the CRC64
 * of everything before it (always: unlike a file's, a payload's zero
 * CRC is no exemption in 7.0). 0, or RDB_EVERSION / RDB_ECHECKSUM /
 * RDB_ETRUNC.
 */
int rdb_dump_verify(const uint8_t *p, size_t n);

#endif
