/*
 * st_codec.h - how names become LMDB keys, and how key records are laid out.
 *
 * A key of the keys database is: db (big-endian u16), the name's scan hash
 * (big-endian u64, never 0), then the name itself when it is short enough;
 * a longer name is replaced by a fixed-size digest form (a prefix of the
 * name, a second 64-bit hash and a probe byte) and its full text moves into
 * the record. Ordering by hash first is what makes SCAN cursors plain
 * integers (the hash where the next batch starts) and RANDOMKEY O(log n).
 * The hash functions are part of the on-disk format: never change them
 * without bumping ST_SCHEMA_VERSION.
 */
#ifndef ST_CODEC_H
#define ST_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* LMDB's key limit in Debian's build; the environment refuses smaller. */
#define ST_LMDB_MAXKEY 511
#define ST_KEY_DB_BYTES 2
#define ST_KEY_HASH_BYTES 8
#define ST_KEY_HEAD_BYTES (ST_KEY_DB_BYTES + ST_KEY_HASH_BYTES)
/*
 * Digest form, exactly ST_LMDB_MAXKEY bytes: head, second hash, probe byte,
 * then a prefix of the name. Head + second hash (the stem) identify the name
 * up to a 128-bit collision, which the probe byte and the full name kept in
 * the record resolve.
 */
#define ST_KEY_PROBE_BYTES 1
#define ST_KEY_LONG_STEM (ST_KEY_HEAD_BYTES + ST_KEY_HASH_BYTES)
#define ST_KEY_LONG_PREFIX \
    (ST_LMDB_MAXKEY - ST_KEY_LONG_STEM - ST_KEY_PROBE_BYTES)
/* Longest name stored inline; its key stays shorter than the digest form. */
#define ST_KEY_INLINE_MAX (ST_LMDB_MAXKEY - ST_KEY_HEAD_BYTES - 1)
#define ST_KEY_MAXDB 65535

/* 64-bit hash of bytes with a seed; stable across versions and machines. */
uint64_t st_codec_hash64(const void *data, size_t len, uint64_t seed);

/* The scan hash of a name: in [1, 2^63 - 1], so a SCAN cursor built from it
 * is positive for any client's signed or unsigned integer parser. */
uint64_t st_codec_scan_hash(const void *name, size_t len);

/*
 * A name resolved for one database, hashed once. `enc` holds the LMDB key
 * (for a long name, its digest form; lookups set the probe byte).
 * The struct borrows `name`; it must outlive the struct's use.
 */
typedef struct st_keyref {
    unsigned db;        /* the number the caller named */
    unsigned stored_db; /* the stored database enc holds (st_dbmap.h) */
    uint64_t bound;     /* st_dbmap's stamp of that choice; 0: none yet */
    const uint8_t *name;
    size_t len;
    uint64_t hash; /* scan hash; the cache remixes it (st_keyspace.c) */
    int is_long;   /* digest form */
    size_t enc_len;
    uint8_t enc[ST_LMDB_MAXKEY];
} st_keyref;

/* Fill `k` for `name` in database `db` (0 <= db <= ST_KEY_MAXDB). The
 * keyspace maps `db` to its stored database on first use (st_dbmap.h). */
void st_codec_keyref_init(st_keyref *k, unsigned db, const void *name,
                          size_t len);

/* k->bound of a key reference made from a stored LMDB key: its stored
 * database is what the key says, whatever the map. */
#define ST_KEYREF_STORED UINT64_MAX

/* Big-endian helpers shared by the storage encodings. */
void st_codec_put_be16(uint8_t *p, uint16_t v);
void st_codec_put_be64(uint8_t *p, uint64_t v);
uint16_t st_codec_get_be16(const uint8_t *p);
uint64_t st_codec_get_be64(const uint8_t *p);

/* Record of the keys database. */
enum st_type {
    ST_TYPE_NONE = 0,
    ST_TYPE_STRING = 1,
    ST_TYPE_LIST = 2,
    ST_TYPE_SET = 3,
    ST_TYPE_ZSET = 4,
    ST_TYPE_HASH = 5,
    ST_TYPE_STREAM = 6,
};

/* Record flags. */
#define ST_REC_LONGNAME 0x01u /* the full name follows the header */
#define ST_REC_ZSTD 0x02u     /* the string payload is zstd-compressed */
#define ST_REC_CHUNKED                                              \
    0x04u                      /* the payload is a chunked string's \
                                * descriptor (st_string.h) */
#define ST_REC_ENC_RAW 0x08u   /* a string Redis would hold raw */
#define ST_REC_ENC_NOINT 0x10u /* a string Redis would not hold as int */

#define ST_REC_HEADER 24

/* Collection payload: id, cardinality, list head and tail sequence. */
#define ST_COLL_PAYLOAD 32

/*
 * A decoded record. Pointers borrow the LMDB value they were decoded from:
 * valid until the transaction ends or writes anything.
 */
typedef struct st_rec {
    int type;
    unsigned flags;
    uint64_t version;
    int64_t expire_at;   /* ms since the epoch; 0 = no expiry */
    const uint8_t *name; /* full name when ST_REC_LONGNAME */
    size_t name_len;
    const uint8_t *payload; /* string bytes or the collection payload */
    size_t payload_len;
} st_rec;

/* Decode `len` bytes at `p`; ST_ECORRUPT when they cannot be a record. */
int st_codec_rec_decode(const void *p, size_t len, st_rec *out);

/* Bytes a record with this name form and payload size takes. */
size_t st_codec_rec_size(const st_keyref *k, size_t payload_len);

/*
 * Write the header (and the long name) of a record at `p`, which has
 * st_codec_rec_size() bytes; returns where the payload goes.
 */
uint8_t *st_codec_rec_encode_head(uint8_t *p, const st_keyref *k, int type,
                                  unsigned flags, uint64_t version,
                                  int64_t expire_at);

#endif
