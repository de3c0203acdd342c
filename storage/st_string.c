/*
 * st_string.c - string values inline and in spans (st_string.h): the
 * writers (whole value, range, patch), the readers (pieces, copy, flat),
 * span compression, and the detach and deep copy the keyspace needs.
 */
#include "storage/st_string.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <string.h>
#include <zstd.h>

#define DESC_OFF_ID 0
#define DESC_OFF_LEN 8
#define SPAN_TAG_RAW 0
#define SPAN_TAG_ZSTD 1
/* Compression must save at least 1/COMPRESS_MIN_GAIN of the bytes. */
#define COMPRESS_MIN_GAIN 8

#define CHUNKS(t) ((t)->env->dbi[ST_DBI_CHUNKS])

/* The record bits that tell how Redis would encode the string. */
#define ENC_FLAGS (ST_REC_ENC_RAW | ST_REC_ENC_NOINT)

static unsigned enc_flags(int enc)
{
    switch (enc) {
    case ST_STRING_ENC_RAW: return ST_REC_ENC_RAW;
    case ST_STRING_ENC_NOINT: return ST_REC_ENC_NOINT;
    default: return 0;
    }
}

int st_string_is_chunked(const st_rec *r)
{
    return (r->flags & ST_REC_CHUNKED) != 0;
}

static void desc_decode(const st_rec *r, uint64_t *id, uint64_t *len)
{
    *id = *len = 0;
    if (r->payload_len < ST_STRING_DESC_BYTES)
        return;
    memcpy(id, r->payload + DESC_OFF_ID, sizeof *id);
    memcpy(len, r->payload + DESC_OFF_LEN, sizeof *len);
}

static void desc_encode(uint8_t *p, uint64_t id, uint64_t len)
{
    memcpy(p + DESC_OFF_ID, &id, sizeof id);
    memcpy(p + DESC_OFF_LEN, &len, sizeof len);
}

uint64_t st_string_len(const st_rec *r)
{
    uint64_t id, len;

    if (!st_string_is_chunked(r))
        return r->payload_len;
    desc_decode(r, &id, &len);
    return len;
}

static void span_key(uint8_t *buf, uint64_t id, uint64_t idx)
{
    st_codec_put_be64(buf, id);
    buf[8] = (uint8_t)(idx >> 24);
    buf[9] = (uint8_t)(idx >> 16);
    buf[10] = (uint8_t)(idx >> 8);
    buf[11] = (uint8_t)idx;
}

static uint64_t span_key_idx(const uint8_t *buf)
{
    return ((uint64_t)buf[8] << 24) | ((uint64_t)buf[9] << 16) |
           ((uint64_t)buf[10] << 8) | buf[11];
}

/* Room of the write buffer: a span, or an inline string a partial write
 * rebuilds. */
#define SPAN_WR_BYTES                                                          \
    (ST_STRING_PATCH_INLINE_MAX > ST_STRING_CHUNK ? ST_STRING_PATCH_INLINE_MAX \
                                                  : ST_STRING_CHUNK)

/* The buffers of the environment, allocated once: a span to read, and
 * the write buffer above. */
static int span_buffers(st_env *e)
{
    if (!e->span_rd && !(e->span_rd = malloc(ST_STRING_CHUNK)))
        return ENOMEM;
    if (!e->span_wr && !(e->span_wr = malloc(SPAN_WR_BYTES)))
        return ENOMEM;
    return 0;
}

/*
 * The bytes of a stored span value `v`: raw ones point into LMDB, a
 * compressed one is inflated into `buf` (a span's room). *n gets how many
 * bytes the span holds (the rest of it reads as zeros).
 */
static int span_decode(st_txn *t, const MDB_val *v, uint8_t *buf,
                       const uint8_t **p, size_t *n)
{
    const uint8_t *b = v->mv_data;
    size_t got;

    if (v->mv_size < ST_STRING_TAG_BYTES)
        return ST_ECORRUPT;
    if (b[0] == SPAN_TAG_RAW) {
        if (v->mv_size - ST_STRING_TAG_BYTES > ST_STRING_CHUNK)
            return ST_ECORRUPT;
        *p = b + ST_STRING_TAG_BYTES;
        *n = v->mv_size - ST_STRING_TAG_BYTES;
        return 0;
    }
    if (b[0] != SPAN_TAG_ZSTD)
        return ST_ECORRUPT;
    got = ZSTD_decompressDCtx(t->env->zd, buf, ST_STRING_CHUNK,
                              b + ST_STRING_TAG_BYTES,
                              v->mv_size - ST_STRING_TAG_BYTES);
    if (ZSTD_isError(got))
        return ST_ECORRUPT;
    *p = buf;
    *n = got;
    return 0;
}

/*
 * Store span `idx` of chunk `id` holding the `n` bytes at `p` (which must
 * not point into LMDB), compressed when the environment compresses values
 * this long and it saves enough. `append`: the key is the largest yet.
 */
static int span_put(st_txn *t, uint64_t id, uint64_t idx, const uint8_t *p,
                    size_t n, int append)
{
    st_env *e = t->env;
    uint8_t key[ST_STRING_SPAN_KEY_BYTES];
    MDB_val k = { sizeof key, key }, v;
    const uint8_t *src = p;
    uint8_t tag = SPAN_TAG_RAW, *z;
    size_t len = n;
    int rc;

    if (e->compress_threshold && n >= e->compress_threshold &&
        st_env_scratch(e, ZSTD_compressBound(n), &z) == 0) {
        size_t zn = ZSTD_compressCCtx(e->zc, z, e->scratch_cap, p, n,
                                      e->compress_level);
        if (!ZSTD_isError(zn) && zn <= n - n / COMPRESS_MIN_GAIN) {
            tag = SPAN_TAG_ZSTD;
            src = z;
            len = zn;
        }
    }
    span_key(key, id, idx);
    v.mv_size = ST_STRING_TAG_BYTES + len;
    v.mv_data = NULL;
    rc = st_mdb_put(t->txn, CHUNKS(t), &k, &v,
                    MDB_RESERVE | (append ? MDB_APPEND : 0));
    if (rc == MDB_KEYEXIST && append)
        rc = st_mdb_put(t->txn, CHUNKS(t), &k, &v, MDB_RESERVE);
    if (rc)
        return st_err_map(rc);
    ((uint8_t *)v.mv_data)[0] = tag;
    memcpy((uint8_t *)v.mv_data + ST_STRING_TAG_BYTES, src, len);
    return 0;
}

static int all_zero(const uint8_t *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Write bytes [0, len) of `val` as the spans of the fresh chunk `id`;
 * spans of zeros are left out (they read as zeros). */
static int spans_fill(st_txn *t, uint64_t id, const uint8_t *val, uint64_t len)
{
    int rc;

    for (uint64_t idx = 0, off = 0; off < len; idx++, off += ST_STRING_CHUNK) {
        size_t n = len - off < ST_STRING_CHUNK ? (size_t)(len - off)
                                               : ST_STRING_CHUNK;
        if (all_zero(val + off, n))
            continue;
        if ((rc = span_put(t, id, idx, val + off, n, 1)))
            return rc;
    }
    return 0;
}

/* Write the record of a chunked string (id, len) at `k`. `same` keeps
 * what the old record owns (it is this string's own). */
static int put_desc(st_txn *t, st_keyref *k, unsigned flags, int64_t at,
                    uint64_t id, uint64_t len, int same)
{
    uint8_t *dst;
    int rc = st_keyspace_put_rec(t, k, ST_TYPE_STRING,
                                 ST_REC_CHUNKED | (flags & ENC_FLAGS), at,
                                 ST_STRING_DESC_BYTES, same, &dst);

    if (rc == 0)
        desc_encode(dst, id, len);
    return rc;
}

/* An inline string record, compressed when it pays (see span_put). */
static int put_inline(st_txn *t, st_keyref *k, const void *val, size_t len,
                      int64_t at, unsigned flags, int same)
{
    st_env *e = t->env;
    uint8_t *dst, *z;
    int rc;

    flags &= ENC_FLAGS;
    if (e->compress_threshold && len >= e->compress_threshold &&
        st_env_scratch(e, ZSTD_compressBound(len), &z) == 0) {
        size_t n = ZSTD_compressCCtx(e->zc, z, e->scratch_cap, val, len,
                                     e->compress_level);
        if (!ZSTD_isError(n) && n <= len - len / COMPRESS_MIN_GAIN) {
            rc = st_keyspace_put_rec(t, k, ST_TYPE_STRING, flags | ST_REC_ZSTD,
                                     at, n, same, &dst);
            if (rc == 0)
                memcpy(dst, z, n);
            return rc;
        }
    }
    rc = st_keyspace_put_rec(t, k, ST_TYPE_STRING, flags, at, len, same, &dst);
    if (rc == 0 && len)
        memcpy(dst, val, len);
    return rc;
}

int st_string_set(st_txn *t, st_keyref *k, const void *val, size_t len,
                  int64_t expire_at, int enc)
{
    uint64_t id;
    int rc;

    if (len <= ST_STRING_INLINE_MAX)
        return put_inline(t, k, val, len, expire_at, enc_flags(enc), 0);
    if ((rc = st_coll_new_id(t, &id)) || (rc = spans_fill(t, id, val, len)))
        return rc;
    return put_desc(t, k, enc_flags(enc), expire_at, id, len, 0);
}

int st_string_detach(st_txn *t, const st_rec *r)
{
    uint64_t id, len;

    if (!st_string_is_chunked(r))
        return 0;
    desc_decode(r, &id, &len);
    return st_coll_detach_id(t, id, ST_TYPE_STRING);
}

int st_string_copy_rec(st_txn *t, st_keyref *dst, const st_rec *r)
{
    uint64_t id, len, nid;
    int rc;

    desc_decode(r, &id, &len);
    if ((rc = st_coll_new_id(t, &nid)) ||
        (rc = st_coll_copy_elems(t, ST_TYPE_STRING, id, nid)))
        return rc;
    return put_desc(t, dst, r->flags, r->expire_at, nid, len, 0);
}

/* ------------------------------------------------------------------ */
/* reading */

/* Zeros as pieces: a NULL piece of n bytes. */
static int zeros(st_string_fn fn, void *ctx, uint64_t n)
{
    return n ? fn(ctx, NULL, (size_t)n) : 0;
}

/*
 * Pieces of bytes [pos, end) of chunk `id`: stored spans as they are (or
 * inflated), the gaps between them and their unwritten tails as zeros.
 */
static int read_chunked(st_txn *t, uint64_t id, uint64_t pos, uint64_t end,
                        st_string_fn fn, void *ctx)
{
    uint8_t key[ST_STRING_SPAN_KEY_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof key, key }, v;
    int mrc, rc = 0;

    if ((rc = span_buffers(t->env)))
        return rc;
    if ((mrc = mdb_cursor_open(t->txn, CHUNKS(t), &cur)))
        return st_err_map(mrc);
    span_key(key, id, pos / ST_STRING_CHUNK);
    mrc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (pos < end && rc == 0) {
        uint64_t idx = UINT64_MAX, base, stop, have;
        const uint8_t *p;
        size_t n;
        if (mrc && mrc != MDB_NOTFOUND) {
            rc = st_err_map(mrc);
            break;
        }
        if (mrc == 0 && k.mv_size == ST_STRING_SPAN_KEY_BYTES &&
            st_codec_get_be64(k.mv_data) == id)
            idx = span_key_idx(k.mv_data);
        if (idx == UINT64_MAX || idx * ST_STRING_CHUNK > pos) {
            /* A gap before the next stored span, or to the end. */
            stop = idx != UINT64_MAX && idx * ST_STRING_CHUNK < end
                       ? idx * ST_STRING_CHUNK
                       : end;
            rc = zeros(fn, ctx, stop - pos);
            pos = stop;
            continue;
        }
        if ((rc = span_decode(t, &v, t->env->span_rd, &p, &n)))
            break;
        base = idx * ST_STRING_CHUNK;
        stop = base + ST_STRING_CHUNK < end ? base + ST_STRING_CHUNK : end;
        have = base + n < stop ? base + n : stop;
        if (pos < have) {
            if ((rc = fn(ctx, p + (pos - base), (size_t)(have - pos))))
                break;
            pos = have;
        }
        rc = zeros(fn, ctx, stop - pos);
        pos = stop;
        mrc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc;
}

int st_string_read(st_txn *t, const st_rec *r, uint64_t off, uint64_t len,
                   st_string_fn fn, void *ctx)
{
    uint64_t id, slen, end;

    if (!st_string_is_chunked(r)) {
        if (off >= r->payload_len)
            return 0;
        end = len < r->payload_len - off ? off + len : r->payload_len;
        return end > off ? fn(ctx, r->payload + off, (size_t)(end - off)) : 0;
    }
    desc_decode(r, &id, &slen);
    if (off >= slen)
        return 0;
    end = len < slen - off ? off + len : slen;
    return read_chunked(t, id, off, end, fn, ctx);
}

struct copy_ctx {
    uint8_t *dst;
};

static int copy_piece(void *ctx, const uint8_t *p, size_t n)
{
    struct copy_ctx *c = ctx;

    if (p)
        memcpy(c->dst, p, n);
    else
        memset(c->dst, 0, n);
    c->dst += n;
    return 0;
}

int st_string_copy_out(st_txn *t, const st_rec *r, uint64_t off, size_t len,
                       uint8_t *dst)
{
    struct copy_ctx c = { dst };
    int rc = st_string_read(t, r, off, len, copy_piece, &c);

    if (rc == 0 && c.dst < dst + len)
        memset(c.dst, 0, (size_t)(dst + len - c.dst));
    return rc;
}

int st_string_flat(st_txn *t, const st_rec *r, const uint8_t **p, size_t *len)
{
    uint64_t n = st_string_len(r);
    uint8_t *buf;
    int rc;

    if (!st_string_is_chunked(r)) {
        *p = r->payload;
        *len = r->payload_len;
        return 0;
    }
    if (n > SIZE_MAX || !(buf = st_txn_arena_alloc(t, (size_t)n)))
        return ENOMEM;
    if ((rc = st_string_copy_out(t, r, 0, (size_t)n, buf)))
        return rc;
    *p = buf;
    *len = (size_t)n;
    return 0;
}

/* ------------------------------------------------------------------ */
/* writing a range */

/*
 * Rewrite span `idx` of chunk `id` with `n` bytes of `src` at offset `at`
 * inside it; what the span held elsewhere stays, a gap reads as zeros.
 * A write that covers a whole span does not read the old one.
 */
static int span_update(st_txn *t, uint64_t id, uint64_t idx, size_t at,
                       const uint8_t *src, size_t n)
{
    uint8_t key[ST_STRING_SPAN_KEY_BYTES];
    MDB_val k = { sizeof key, key }, v;
    uint8_t *buf = t->env->span_wr;
    size_t have = 0;
    int rc;

    if (at == 0 && n == ST_STRING_CHUNK)
        return span_put(t, id, idx, src, n, 0);
    span_key(key, id, idx);
    rc = mdb_get(t->txn, CHUNKS(t), &k, &v);
    if (rc == 0) {
        const uint8_t *p;
        if ((rc = span_decode(t, &v, t->env->span_rd, &p, &have)))
            return rc;
        memcpy(buf, p, have); /* LMDB may move it on put */
    } else if (rc != MDB_NOTFOUND) {
        return st_err_map(rc);
    }
    if (at > have)
        memset(buf + have, 0, at - have);
    memcpy(buf + at, src, n);
    return span_put(t, id, idx, buf, at + n > have ? at + n : have, 0);
}

/* Write `len` bytes of `val` at `off` into the spans of chunk `id`. */
static int spans_write(st_txn *t, uint64_t id, uint64_t off, const uint8_t *val,
                       size_t len)
{
    int rc;

    while (len > 0) {
        uint64_t idx = off / ST_STRING_CHUNK;
        size_t at = (size_t)(off % ST_STRING_CHUNK);
        size_t n = ST_STRING_CHUNK - at < len ? ST_STRING_CHUNK - at : len;
        if ((rc = span_update(t, id, idx, at, val, n)))
            return rc;
        off += n;
        val += n;
        len -= n;
    }
    return 0;
}

/*
 * The writer behind st_string_write and st_string_patch: `found` says
 * whether `r` (looked up raw in this transaction, inflated) is the
 * current string of `k`.
 */
static int write_found(st_txn *t, st_keyref *k, int found, st_rec *r,
                       uint64_t off, const uint8_t *val, size_t len,
                       unsigned flags, uint64_t *newlen)
{
    uint64_t old = found ? st_string_len(r) : 0, id, slen;
    int64_t at = found ? r->expire_at : 0;
    uint64_t n;
    int rc;

    if ((rc = span_buffers(t->env)))
        return rc;
    if (off == ST_STRING_APPEND)
        off = old;
    n = off + len > old ? off + len : old;
    *newlen = n;
    if (found && st_string_is_chunked(r)) {
        desc_decode(r, &id, &slen);
        if ((rc = spans_write(t, id, off, val, len)))
            return rc;
        return put_desc(t, k, flags, at, id, n, 1);
    }
    if (n <= ST_STRING_PATCH_INLINE_MAX) {
        uint8_t *buf = t->env->span_wr;
        if (old)
            memcpy(buf, r->payload, (size_t)old);
        if (off > old)
            memset(buf + old, 0, (size_t)(off - old));
        memcpy(buf + off, val, len);
        return put_inline(t, k, buf, (size_t)n, at, flags, 1);
    }
    /* Past the limit of partial writes: the string moves into spans. */
    if ((rc = st_coll_new_id(t, &id)))
        return rc;
    if (old) {
        uint8_t *copy = st_txn_arena_alloc(t, (size_t)old);
        if (!copy)
            return ENOMEM;
        memcpy(copy, r->payload, (size_t)old); /* LMDB may move it */
        if ((rc = spans_fill(t, id, copy, old)))
            return rc;
    }
    if ((rc = spans_write(t, id, off, val, len)))
        return rc;
    return put_desc(t, k, flags, at, id, n, 1);
}

/* Look `k` up for a write: 1 a string (inflated), 0 absent, or an error. */
static int lookup_string(st_txn *t, st_keyref *k, int64_t now, st_rec *r)
{
    int rc = st_keyspace_lookup_raw(t, k, now, r);

    if (rc == ST_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (r->type != ST_TYPE_STRING)
        return ST_EWRONGTYPE;
    return (rc = st_keyspace_inflate(t, r)) ? rc : 1;
}

int st_string_write(st_txn *t, st_keyref *k, int64_t now, uint64_t off,
                    const void *val, size_t len, int enc, uint64_t *newlen)
{
    st_rec r;
    int found = lookup_string(t, k, now, &r);

    if (found < 0 || found > 1)
        return found;
    return write_found(t, k, found, &r, off, val, len, enc_flags(enc), newlen);
}

int st_string_patch(st_txn *t, st_keyref *k, int64_t now, uint64_t off,
                    size_t len, st_string_patch_fn fn, void *ctx,
                    uint64_t *newlen)
{
    uint8_t bytes[ST_STRING_PATCH_MAX];
    st_rec r;
    int found, rc;

    if (len > ST_STRING_PATCH_MAX)
        return EINVAL;
    found = lookup_string(t, k, now, &r);
    if (found < 0 || found > 1)
        return found;
    memset(bytes, 0, len);
    if (found && (rc = st_string_copy_out(t, &r, off, len, bytes)))
        return rc;
    fn(ctx, bytes, len);
    return write_found(t, k, found, &r, off, bytes, len, ST_REC_ENC_RAW,
                       newlen);
}

int st_string_enc(const st_rec *r)
{
    if (r->flags & ST_REC_ENC_RAW)
        return ST_STRING_ENC_RAW;
    if (r->flags & ST_REC_ENC_NOINT)
        return ST_STRING_ENC_NOINT;
    return ST_STRING_ENC_AUTO;
}
