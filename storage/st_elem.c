/*
 * st_elem.c - the element keys of the hash-ordered databases shared by
 * hashes, sets and zsets.
 */
#include "storage/st_elem.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_keyspace.h"
#include "storage/st_rank.h"
#include "storage/st_txn.h"

#include <string.h>

#define ELEM_SEED_DIGEST 0x6c61726465720003ull
#define ELEM_NLEN_BYTES 4

static MDB_dbi kind_dbi(const st_txn *t, int kind)
{
    switch (kind) {
    case ST_ELEM_HASH: return t->env->dbi[ST_DBI_HASHES];
    case ST_ELEM_SET: return t->env->dbi[ST_DBI_SETS];
    default: return t->env->dbi[ST_DBI_ZMEMBERS];
    }
}

/* The order statistics of a hash or set (zset members keep none). */
static int counted(int kind, const st_txn *t, uint64_t id, st_rank *r)
{
    r->txn = t->txn;
    r->dbi = kind_dbi(t, kind);
    r->id = id;
    return kind != ST_ELEM_ZMEMBER;
}

uint64_t st_elem_hash(const void *name, size_t len)
{
    return st_codec_scan_hash(name, len);
}

/* Build the element key of `name` in `buf` (ST_LMDB_MAXKEY bytes). */
static size_t elem_key(uint8_t *buf, uint64_t id, const void *name, size_t len)
{
    st_codec_put_be64(buf, id);
    st_codec_put_be64(buf + ST_COLL_ID_BYTES, st_elem_hash(name, len));
    if (len <= ST_ELEM_INLINE_MAX) {
        if (len)
            memcpy(buf + ST_ELEM_HEAD, name, len);
        return ST_ELEM_HEAD + len;
    }
    st_codec_put_be64(buf + ST_ELEM_HEAD,
                      st_codec_hash64(name, len, ELEM_SEED_DIGEST));
    memcpy(buf + ST_ELEM_HEAD + ST_KEY_HASH_BYTES, name, ST_ELEM_LONG_PREFIX);
    return ST_LMDB_MAXKEY;
}

/* Name and payload of the element at (key, val). */
static void elem_decode(const MDB_val *key, const MDB_val *val,
                        const uint8_t **name, size_t *nlen, const uint8_t **pay,
                        size_t *plen)
{
    if (key->mv_size == ST_LMDB_MAXKEY) {
        uint32_t n;
        memcpy(&n, val->mv_data, sizeof n);
        *name = (const uint8_t *)val->mv_data + ELEM_NLEN_BYTES;
        *nlen = n;
        *pay = *name + n;
        *plen = val->mv_size - ELEM_NLEN_BYTES - n;
    } else {
        *name = (const uint8_t *)key->mv_data + ST_ELEM_HEAD;
        *nlen = key->mv_size - ST_ELEM_HEAD;
        *pay = val->mv_data;
        *plen = val->mv_size;
    }
}

/* Does the long element at `val` hold exactly `name`? */
static int long_matches(const MDB_val *val, const void *name, size_t len)
{
    uint32_t n;

    if (val->mv_size < ELEM_NLEN_BYTES)
        return 0;
    memcpy(&n, val->mv_data, sizeof n);
    return n == len && val->mv_size >= ELEM_NLEN_BYTES + n &&
           memcmp((const uint8_t *)val->mv_data + ELEM_NLEN_BYTES, name, len) ==
               0;
}

int st_elem_get(st_txn *t, int kind, uint64_t id, const void *name, size_t len,
                const uint8_t **val, size_t *vlen)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;
    const uint8_t *nm;
    size_t nl;
    int rc;

    k.mv_size = elem_key(buf, id, name, len);
    k.mv_data = buf;
    if ((rc = mdb_get(t->txn, kind_dbi(t, kind), &k, &v)))
        return st_err_map(rc);
    if (k.mv_size == ST_LMDB_MAXKEY && !long_matches(&v, name, len))
        return ST_ENOTFOUND;
    elem_decode(&k, &v, &nm, &nl, val, vlen);
    return 0;
}

int st_elem_put(st_txn *t, int kind, const st_coll *c, const void *name,
                size_t len, const void *val, size_t vlen, int nx, int *created)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;
    MDB_dbi dbi = kind_dbi(t, kind);
    st_rank r;
    int rc, is_long;

    k.mv_size = elem_key(buf, c->id, name, len);
    k.mv_data = buf;
    is_long = k.mv_size == ST_LMDB_MAXKEY;
    rc = mdb_get(t->txn, dbi, &k, &v);
    if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    *created = rc == MDB_NOTFOUND;
    if (!*created) {
        if (is_long && !long_matches(&v, name, len))
            return ST_ECOLLISION;
        if (nx)
            return ST_EEXISTS;
    }
    if (!is_long) {
        v.mv_size = vlen;
        v.mv_data = (void *)val;
        rc = st_mdb_put(t->txn, dbi, &k, &v, 0);
    } else {
        uint32_t n = (uint32_t)len;
        v.mv_size = ELEM_NLEN_BYTES + len + vlen;
        v.mv_data = NULL;
        if ((rc = st_mdb_put(t->txn, dbi, &k, &v, MDB_RESERVE)) == 0) {
            uint8_t *p = v.mv_data;
            memcpy(p, &n, sizeof n);
            memcpy(p + ELEM_NLEN_BYTES, name, len);
            if (vlen)
                memcpy(p + ELEM_NLEN_BYTES + len, val, vlen);
        }
    }
    if (rc == 0 && *created && counted(kind, t, c->id, &r)) {
        MDB_val key = { k.mv_size, buf };
        rc = st_rank_insert(&r, c->card, &key);
    }
    return st_err_map(rc);
}

int st_elem_del(st_txn *t, int kind, const st_coll *c, const void *name,
                size_t len)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;
    MDB_dbi dbi = kind_dbi(t, kind);
    st_rank r;
    int rc;

    k.mv_size = elem_key(buf, c->id, name, len);
    k.mv_data = buf;
    if (k.mv_size == ST_LMDB_MAXKEY) {
        if ((rc = mdb_get(t->txn, dbi, &k, &v)))
            return st_err_map(rc);
        if (!long_matches(&v, name, len))
            return ST_ENOTFOUND;
    }
    if ((rc = st_mdb_del(t->txn, dbi, &k, NULL)) == 0 &&
        counted(kind, t, c->id, &r)) {
        MDB_val key = { k.mv_size, buf };
        rc = st_rank_remove(&r, c->card, &key);
    }
    return st_err_map(rc);
}

/* Position `cur` on the first element of `id` with hash >= h. */
static int seek(MDB_cursor *cur, uint64_t id, uint64_t h, MDB_val *k,
                MDB_val *v)
{
    uint8_t pos[ST_ELEM_HEAD];
    int rc;

    st_codec_put_be64(pos, id);
    st_codec_put_be64(pos + ST_COLL_ID_BYTES, h);
    k->mv_size = sizeof pos;
    k->mv_data = pos;
    rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rc == 0 &&
        (k->mv_size < ST_ELEM_HEAD || st_codec_get_be64(k->mv_data) != id))
        rc = MDB_NOTFOUND;
    return rc;
}

static int in_coll(const MDB_val *k, uint64_t id)
{
    return st_rank_is_elem(k, id);
}

static uint64_t key_hash(const MDB_val *k)
{
    return st_codec_get_be64((const uint8_t *)k->mv_data + ST_COLL_ID_BYTES);
}

int st_elem_scan(st_txn *t, int kind, uint64_t id, uint64_t cursor,
                 size_t count, st_elem_fn fn, void *ctx, uint64_t *next)
{
    MDB_cursor *cur;
    MDB_val k, v;
    size_t seen = 0;
    uint64_t last = 0;
    int rc, stop = 0;

    *next = 0;
    if ((rc = mdb_cursor_open(t->txn, kind_dbi(t, kind), &cur)))
        return st_err_map(rc);
    for (rc = seek(cur, id, cursor, &k, &v); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (!in_coll(&k, id))
            break;
        uint64_t h = key_hash(&k);
        if (stop || (seen >= count && h != last)) {
            *next = h;
            break;
        }
        const uint8_t *nm, *pay;
        size_t nl, pl;
        elem_decode(&k, &v, &nm, &nl, &pay, &pl);
        last = h;
        seen++;
        stop = fn(ctx, nm, nl, pay, pl);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

typedef struct elem_visit {
    st_elem_fn fn;
    void *ctx;
    int seen;
} elem_visit;

static int visit_elem(void *ctx, const MDB_val *k, const MDB_val *v)
{
    elem_visit *e = ctx;
    const uint8_t *nm, *pay;
    size_t nl, pl;

    elem_decode(k, v, &nm, &nl, &pay, &pl);
    e->seen = 1;
    return e->fn(e->ctx, nm, nl, pay, pl);
}

int st_elem_sample(st_txn *t, int kind, const st_coll *c, uint64_t seed,
                   uint64_t count, st_elem_fn fn, void *ctx)
{
    elem_visit e = { fn, ctx, 0 };
    st_rank r;
    int rc;

    if (!counted(kind, t, c->id, &r))
        return ST_EWRONGTYPE;
    rc = st_rank_sample(&r, c->card, seed, count, visit_elem, &e);
    if (rc == 0 && !e.seen && count)
        rc = MDB_NOTFOUND;
    return st_err_map(rc);
}

int st_elem_at(st_txn *t, int kind, const st_coll *c, uint64_t pos,
               st_elem_fn fn, void *ctx)
{
    elem_visit e = { fn, ctx, 0 };
    MDB_cursor *cur;
    MDB_val k, v;
    st_rank r;
    int rc;

    if (!counted(kind, t, c->id, &r))
        return ST_EWRONGTYPE;
    if ((rc = mdb_cursor_open(t->txn, r.dbi, &cur)))
        return st_err_map(rc);
    if ((rc = st_rank_seek(&r, c->card, cur, pos, &k, &v)) == 0)
        visit_elem(&e, &k, &v);
    mdb_cursor_close(cur);
    return st_err_map(rc);
}
