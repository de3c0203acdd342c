/*
 * st_codec.c - name hashing, LMDB key encoding and the key record codec.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"

#include <string.h>

#define HASH_MUL_A 0x9e3779b97f4a7c15ull /* 2^64 / golden ratio */
#define HASH_MUL_B 0xd6e8feb86659fd93ull
#define HASH_SEED_SCAN 0x6c61726465720001ull
#define HASH_SEED_DIGEST 0x6c61726465720002ull
#define HASH_MASK_63 0x7fffffffffffffffull

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t load64_le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Final avalanche: every input bit reaches every output bit. */
static uint64_t mix_final(uint64_t h)
{
    h ^= h >> 31;
    h *= HASH_MUL_B;
    h ^= h >> 29;
    h *= HASH_MUL_A;
    h ^= h >> 32;
    return h;
}

uint64_t st_codec_hash64(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t a = seed ^ (len * HASH_MUL_A);
    uint64_t b = rotl64(seed, 23) + HASH_MUL_B;

    while (len >= 16) {
        a = rotl64(a ^ (load64_le(p) * HASH_MUL_B), 29) * HASH_MUL_A;
        b = rotl64(b ^ (load64_le(p + 8) * HASH_MUL_A), 31) * HASH_MUL_B;
        p += 16;
        len -= 16;
    }
    uint8_t tail[16] = { 0 };
    memcpy(tail, p, len);
    tail[15] = (uint8_t)len;
    a = rotl64(a ^ (load64_le(tail) * HASH_MUL_B), 29) * HASH_MUL_A;
    b = rotl64(b ^ (load64_le(tail + 8) * HASH_MUL_A), 31) * HASH_MUL_B;
    return mix_final(a ^ rotl64(b, 17));
}

uint64_t st_codec_scan_hash(const void *name, size_t len)
{
    return (st_codec_hash64(name, len, HASH_SEED_SCAN) & HASH_MASK_63) | 1u;
}

void st_codec_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

void st_codec_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

uint16_t st_codec_get_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

uint64_t st_codec_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

void st_codec_keyref_init(st_keyref *k, unsigned db, const void *name,
                          size_t len)
{
    k->db = db;
    k->stored_db = db;
    k->bound = 0;
    k->name = name;
    k->len = len;
    k->hash = st_codec_scan_hash(name, len);
    st_codec_put_be16(k->enc, (uint16_t)db);
    st_codec_put_be64(k->enc + ST_KEY_DB_BYTES, k->hash);
    if (len <= ST_KEY_INLINE_MAX) {
        k->is_long = 0;
        if (len)
            memcpy(k->enc + ST_KEY_HEAD_BYTES, name, len);
        k->enc_len = ST_KEY_HEAD_BYTES + len;
        return;
    }
    k->is_long = 1;
    uint8_t *p = k->enc + ST_KEY_HEAD_BYTES;
    st_codec_put_be64(p, st_codec_hash64(name, len, HASH_SEED_DIGEST));
    p += ST_KEY_HASH_BYTES;
    *p++ = 0; /* probe */
    memcpy(p, name, ST_KEY_LONG_PREFIX);
    k->enc_len = ST_LMDB_MAXKEY;
}

/*
 * Header layout (native byte order; the file is not portable across
 * architectures, as LMDB's own is not):
 *   0 u8 type, 1 u8 flags, 2 u16 reserved, 4 u32 name length (long names),
 *   8 u64 version, 16 i64 expire-at ms, 24 [name], payload.
 */
#define REC_OFF_TYPE 0
#define REC_OFF_FLAGS 1
#define REC_OFF_NAMELEN 4
#define REC_OFF_VERSION 8
#define REC_OFF_EXPIRE 16

int st_codec_rec_decode(const void *p, size_t len, st_rec *out)
{
    const uint8_t *b = p;
    uint32_t nlen;

    if (len < ST_REC_HEADER)
        return ST_ECORRUPT;
    out->type = b[REC_OFF_TYPE];
    out->flags = b[REC_OFF_FLAGS];
    memcpy(&nlen, b + REC_OFF_NAMELEN, sizeof nlen);
    memcpy(&out->version, b + REC_OFF_VERSION, sizeof out->version);
    memcpy(&out->expire_at, b + REC_OFF_EXPIRE, sizeof out->expire_at);
    if (out->type < ST_TYPE_STRING || out->type > ST_TYPE_STREAM)
        return ST_ECORRUPT;
    b += ST_REC_HEADER;
    len -= ST_REC_HEADER;
    if (out->flags & ST_REC_LONGNAME) {
        if (nlen > len)
            return ST_ECORRUPT;
        out->name = b;
        out->name_len = nlen;
        b += nlen;
        len -= nlen;
    } else {
        out->name = NULL;
        out->name_len = 0;
    }
    out->payload = b;
    out->payload_len = len;
    return 0;
}

size_t st_codec_rec_size(const st_keyref *k, size_t payload_len)
{
    return ST_REC_HEADER + (k->is_long ? k->len : 0) + payload_len;
}

uint8_t *st_codec_rec_encode_head(uint8_t *p, const st_keyref *k, int type,
                                  unsigned flags, uint64_t version,
                                  int64_t expire_at)
{
    uint32_t nlen = k->is_long ? (uint32_t)k->len : 0;

    memset(p, 0, ST_REC_HEADER);
    p[REC_OFF_TYPE] = (uint8_t)type;
    p[REC_OFF_FLAGS] = (uint8_t)(flags | (k->is_long ? ST_REC_LONGNAME : 0));
    memcpy(p + REC_OFF_NAMELEN, &nlen, sizeof nlen);
    memcpy(p + REC_OFF_VERSION, &version, sizeof version);
    memcpy(p + REC_OFF_EXPIRE, &expire_at, sizeof expire_at);
    p += ST_REC_HEADER;
    if (nlen) {
        memcpy(p, k->name, nlen);
        p += nlen;
    }
    return p;
}
