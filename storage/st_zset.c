/*
 * st_zset.c - sorted sets: members by hash (zmembers) and by score
 * (zscores), and the ordered walks over the latter.
 */
#include "storage/st_zset.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SIGN_BIT 0x8000000000000000ull
#define ZSEED_A 0x6c61726465720004ull
#define ZSEED_B 0x6c61726465720005ull
#define SCORE_BYTES 8

#define ZSCORES(t) ((t)->env->dbi[ST_DBI_ZSCORES])

uint64_t st_zset_score_enc(double d)
{
    uint64_t u;

    if (d == 0)
        d = 0.0;                        /* -0 sorts with 0 */
    memcpy(&u, &d, sizeof u);
    return (u & SIGN_BIT) ? ~u : u | SIGN_BIT;
}

double st_zset_score_dec(uint64_t u)
{
    double d;

    u = (u & SIGN_BIT) ? u & ~SIGN_BIT : ~u;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* The zscores key of (score, member) in buf (ST_LMDB_MAXKEY bytes). */
static size_t zs_key(uint8_t *buf, uint64_t id, double score,
                     const void *m, size_t len)
{
    st_put_be64(buf, id);
    st_put_be64(buf + ST_COLL_ID_BYTES, st_zset_score_enc(score));
    if (len <= ST_ZSET_INLINE_MAX) {
        if (len)
            memcpy(buf + ST_ZSET_HEAD, m, len);
        return ST_ZSET_HEAD + len;
    }
    memcpy(buf + ST_ZSET_HEAD, m, ST_ZSET_LONG_PREFIX);
    st_put_be64(buf + ST_ZSET_HEAD + ST_ZSET_LONG_PREFIX,
                st_hash64(m, len, ZSEED_A));
    st_put_be64(buf + ST_ZSET_HEAD + ST_ZSET_LONG_PREFIX + 8,
                st_hash64(m, len, ZSEED_B));
    return ST_LMDB_MAXKEY;
}

/* Member and score of the zscores entry (k, v). */
static void zs_decode(const MDB_val *k, const MDB_val *v, const uint8_t **m,
                      size_t *len, double *score)
{
    const uint8_t *p = k->mv_data;

    *score = st_zset_score_dec(st_get_be64(p + ST_COLL_ID_BYTES));
    if (k->mv_size == ST_LMDB_MAXKEY) {
        *m = v->mv_data;
        *len = v->mv_size;
    } else {
        *m = p + ST_ZSET_HEAD;
        *len = k->mv_size - ST_ZSET_HEAD;
    }
}

static int zs_put(st_txn *t, uint64_t id, double score, const void *m,
                  size_t len)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;

    k.mv_size = zs_key(buf, id, score, m, len);
    k.mv_data = buf;
    v.mv_size = k.mv_size == ST_LMDB_MAXKEY ? len : 0;
    v.mv_data = (void *)m;
    return st_map_err(mdb_put(t->txn, ZSCORES(t), &k, &v, 0));
}

static int zs_del(st_txn *t, uint64_t id, double score, const void *m,
                  size_t len)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k;

    k.mv_size = zs_key(buf, id, score, m, len);
    k.mv_data = buf;
    return st_map_err(mdb_del(t->txn, ZSCORES(t), &k, NULL));
}

int st_zset_score(st_txn *t, const st_obj *o, const void *member,
                  size_t len, double *score)
{
    const uint8_t *v;
    size_t vl;
    int rc;

    if (!o->exists)
        return ST_ENOTFOUND;
    rc = st_elem_get(t, ST_ELEM_ZMEMBER, o->c.id, member, len, &v, &vl);
    if (rc)
        return rc;
    if (vl != SCORE_BYTES)
        return ST_ECORRUPT;
    memcpy(score, v, sizeof *score);
    return 0;
}

int st_zset_add(st_txn *t, st_obj *o, const void *member, size_t len,
                double score, int *created)
{
    double old;
    int rc = st_zset_score(t, o, member, len, &old);

    if (rc && rc != ST_ENOTFOUND)
        return rc;
    *created = rc == ST_ENOTFOUND;
    if (!*created) {
        if (old == score && memcmp(&old, &score, sizeof old) == 0)
            return 0;
        if ((rc = zs_del(t, o->c.id, old, member, len)))
            return rc;
    }
    int cr;
    if ((rc = st_elem_put(t, ST_ELEM_ZMEMBER, o->c.id, member, len, &score,
                          sizeof score, 0, &cr)) ||
        (rc = zs_put(t, o->c.id, score, member, len)))
        return rc;
    if (*created)
        o->c.card++;
    return 0;
}

int st_zset_rem(st_txn *t, st_obj *o, const void *member, size_t len)
{
    double old;
    int rc = st_zset_score(t, o, member, len, &old);

    if (rc)
        return rc;
    if ((rc = st_elem_del(t, ST_ELEM_ZMEMBER, o->c.id, member, len)) ||
        (rc = zs_del(t, o->c.id, old, member, len)))
        return rc;
    o->c.card--;
    return 0;
}

static int in_coll(const MDB_val *k, uint64_t id)
{
    return k->mv_size >= ST_ZSET_HEAD && st_get_be64(k->mv_data) == id;
}

/* Position on the first (rev: last) element of `id`. */
static int zfirst(MDB_cursor *cur, uint64_t id, int rev, MDB_val *k,
                  MDB_val *v)
{
    uint8_t pos[ST_COLL_ID_BYTES];
    int rc;

    st_put_be64(pos, rev ? id + 1 : id);
    k->mv_size = sizeof pos;
    k->mv_data = pos;
    rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rev) {
        if (rc == MDB_NOTFOUND)
            rc = mdb_cursor_get(cur, k, v, MDB_LAST);
        else if (rc == 0)
            rc = mdb_cursor_get(cur, k, v, MDB_PREV);
    }
    if (rc == 0 && !in_coll(k, id))
        rc = MDB_NOTFOUND;
    return rc;
}

/*
 * Position at the first entry >= key (forward) or the last entry < key
 * (rev: the walk then skips nothing it should keep, since entries equal
 * to key sort at key itself - callers pass a key just past the range).
 */
static int zseek(MDB_cursor *cur, uint64_t id, const uint8_t *key, size_t len,
                 int rev, MDB_val *k, MDB_val *v)
{
    int rc;

    k->mv_size = len;
    k->mv_data = (void *)key;
    rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rev) {
        if (rc == MDB_NOTFOUND)
            rc = mdb_cursor_get(cur, k, v, MDB_LAST);
        else if (rc == 0)
            rc = mdb_cursor_get(cur, k, v, MDB_PREV);
    }
    if (rc == 0 && !in_coll(k, id))
        rc = MDB_NOTFOUND;
    return rc;
}

int st_zset_rank(st_txn *t, const st_obj *o, const void *member, size_t len,
                 int rev, uint64_t *rank, double *score)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_cursor *back = NULL, *fwd = NULL;
    MDB_val k, v, k2, v2;
    uint64_t nb = 0, nf = 0;
    int rc, rb = 0, rf = 0;

    if ((rc = st_zset_score(t, o, member, len, score)))
        return rc;
    k.mv_size = zs_key(buf, o->c.id, *score, member, len);
    k.mv_data = buf;
    k2 = k;
    if ((rc = mdb_cursor_open(t->txn, ZSCORES(t), &back)) ||
        (rc = mdb_cursor_open(t->txn, ZSCORES(t), &fwd)) ||
        (rc = mdb_cursor_get(back, &k, &v, MDB_SET_KEY)) ||
        (rc = mdb_cursor_get(fwd, &k2, &v2, MDB_SET_KEY)))
        goto out;
    /* Count towards both ends at once; the nearer end answers. */
    for (;;) {
        rb = mdb_cursor_get(back, &k, &v, MDB_PREV);
        if (rb || !in_coll(&k, o->c.id)) {
            *rank = nb;
            break;
        }
        nb++;
        rf = mdb_cursor_get(fwd, &k2, &v2, MDB_NEXT);
        if (rf || !in_coll(&k2, o->c.id)) {
            *rank = o->c.card - 1 - nf;
            break;
        }
        nf++;
    }
    if (rb && rb != MDB_NOTFOUND)
        rc = rb;
    else if (rf && rf != MDB_NOTFOUND)
        rc = rf;
    if (rev)
        *rank = o->c.card - 1 - *rank;
out:
    if (back)
        mdb_cursor_close(back);
    if (fwd)
        mdb_cursor_close(fwd);
    return st_map_err(rc);
}

static int lex_cmp(const uint8_t *m, size_t ml, const st_zlex *b)
{
    size_t n = ml < b->len ? ml : b->len;
    int c = n ? memcmp(m, b->p, n) : 0;

    if (c)
        return c;
    return ml < b->len ? -1 : ml > b->len ? 1 : 0;
}

static int lex_gte_min(const uint8_t *m, size_t ml, const st_zlex *min)
{
    switch (min->kind) {
    case ST_ZLEX_MIN: return 1;
    case ST_ZLEX_MAX: return 0;
    case ST_ZLEX_INCL: return lex_cmp(m, ml, min) >= 0;
    default: return lex_cmp(m, ml, min) > 0;
    }
}

static int lex_lte_max(const uint8_t *m, size_t ml, const st_zlex *max)
{
    switch (max->kind) {
    case ST_ZLEX_MIN: return 0;
    case ST_ZLEX_MAX: return 1;
    case ST_ZLEX_INCL: return lex_cmp(m, ml, max) <= 0;
    default: return lex_cmp(m, ml, max) < 0;
    }
}

enum { POS_BEFORE, POS_IN, POS_PAST };

/* Where element (m, s) is relative to range r in walk order. */
static int classify(const st_zrange *r, const uint8_t *m, size_t ml,
                    double s)
{
    int lo, hi;

    if (r->by == ST_ZBY_RANK)
        return POS_IN;
    if (r->by == ST_ZBY_SCORE) {
        lo = s > r->min || (!r->minex && s == r->min);
        hi = s < r->max || (!r->maxex && s == r->max);
    } else {
        lo = lex_gte_min(m, ml, &r->lmin);
        hi = lex_lte_max(m, ml, &r->lmax);
    }
    if (lo && hi)
        return POS_IN;
    if (r->rev)
        return hi ? POS_PAST : POS_BEFORE;
    return lo ? POS_PAST : POS_BEFORE;
}

/* Step `n` times in direction `rev`. */
static int zskip(MDB_cursor *cur, uint64_t n, int rev, MDB_val *k, MDB_val *v)
{
    int rc = 0;

    while (n-- && rc == 0)
        rc = mdb_cursor_get(cur, k, v, rev ? MDB_PREV : MDB_NEXT);
    return rc;
}

/* Put the cursor where walk `r` starts. */
static int zstart(MDB_cursor *cur, const st_obj *o, const st_zrange *r,
                  MDB_val *k, MDB_val *v)
{
    uint8_t key[ST_LMDB_MAXKEY];
    uint64_t id = o->c.id;
    size_t len;
    int rc;

    switch (r->by) {
    case ST_ZBY_RANK:
        if (r->start >= o->c.card)
            return MDB_NOTFOUND;
        if (r->start <= o->c.card / 2) {
            if ((rc = zfirst(cur, id, r->rev, k, v)))
                return rc;
            return zskip(cur, r->start, r->rev, k, v);
        }
        if ((rc = zfirst(cur, id, !r->rev, k, v)))
            return rc;
        return zskip(cur, o->c.card - 1 - r->start, !r->rev, k, v);
    case ST_ZBY_SCORE: {
        uint64_t e = st_zset_score_enc(r->rev ? r->max : r->min);
        st_put_be64(key, id);
        if (r->rev && e == UINT64_MAX) {
            st_put_be64(key, id + 1);
            len = ST_COLL_ID_BYTES;
        } else {
            st_put_be64(key + ST_COLL_ID_BYTES, r->rev ? e + 1 : e);
            len = ST_ZSET_HEAD;
        }
        return zseek(cur, id, key, len, r->rev, k, v);
    }
    default: {
        const st_zlex *b = r->rev ? &r->lmax : &r->lmin;
        const uint8_t *m;
        size_t ml;
        double s0;
        if ((rc = zfirst(cur, id, r->rev, k, v)))
            return rc;
        if (b->kind != ST_ZLEX_INCL && b->kind != ST_ZLEX_EXCL)
            return 0;
        /* Lex ranges assume one score: seek within the end's score. */
        zs_decode(k, v, &m, &ml, &s0);
        st_put_be64(key, id);
        st_put_be64(key + ST_COLL_ID_BYTES, st_zset_score_enc(s0));
        len = ST_ZSET_HEAD;
        if (b->len <= ST_ZSET_INLINE_MAX) {
            memcpy(key + ST_ZSET_HEAD, b->p, b->len);
            len += b->len;
            if (r->rev)
                key[len++] = 0;     /* just past members equal to it */
        } else if (r->rev) {
            st_put_be64(key + ST_COLL_ID_BYTES, st_zset_score_enc(s0) + 1);
        } else {
            memcpy(key + ST_ZSET_HEAD, b->p, ST_ZSET_INLINE_MAX);
            len += ST_ZSET_INLINE_MAX;
        }
        return zseek(cur, id, key, len, r->rev, k, v);
    }
    }
}

typedef struct zcopy {
    uint8_t *p;
    size_t cap;
} zcopy;

static int zcopy_in(zcopy *b, const void *src, size_t len)
{
    if (len > b->cap) {
        uint8_t *p = realloc(b->p, len);
        if (!p)
            return ENOMEM;
        b->p = p;
        b->cap = len;
    }
    if (len)
        memcpy(b->p, src, len);
    return 0;
}

int st_zset_walk(st_txn *t, st_obj *o, const st_zrange *r, int del,
                 st_zset_fn fn, void *ctx, uint64_t *visited)
{
    MDB_cursor *cur;
    MDB_val k, v;
    uint64_t offset = r->by == ST_ZBY_RANK ? 0 : r->offset;
    uint64_t left = r->by == ST_ZBY_RANK ? r->count : r->limit;
    uint8_t kbuf[ST_LMDB_MAXKEY];
    zcopy name = { NULL, 0 };
    int rc;

    *visited = 0;
    if (!o->exists || left == 0)
        return 0;
    if ((rc = mdb_cursor_open(t->txn, ZSCORES(t), &cur)))
        return st_map_err(rc);
    for (rc = zstart(cur, o, r, &k, &v); rc == 0;) {
        const uint8_t *m;
        size_t ml;
        double s;
        if (!in_coll(&k, o->c.id))
            break;
        zs_decode(&k, &v, &m, &ml, &s);
        int pos = classify(r, m, ml, s);
        if (pos == POS_PAST)
            break;
        if (pos == POS_BEFORE || offset) {
            if (pos == POS_IN)
                offset--;
            rc = mdb_cursor_get(cur, &k, &v, r->rev ? MDB_PREV : MDB_NEXT);
            continue;
        }
        if (left == 0)
            break;
        left--;
        (*visited)++;
        int stop = fn ? fn(ctx, m, ml, s) : 0;
        if (!del) {
            if (stop)
                break;
            rc = mdb_cursor_get(cur, &k, &v, r->rev ? MDB_PREV : MDB_NEXT);
            continue;
        }
        /* Delete both records, then find the neighbour again. */
        size_t klen = k.mv_size;
        memcpy(kbuf, k.mv_data, klen);
        if ((rc = zcopy_in(&name, m, ml)) || (rc = mdb_cursor_del(cur, 0)))
            break;
        if ((rc = st_elem_del(t, ST_ELEM_ZMEMBER, o->c.id, name.p, ml)))
            break;
        o->c.card--;
        if (stop)
            break;
        rc = zseek(cur, o->c.id, kbuf, klen, r->rev, &k, &v);
    }
    mdb_cursor_close(cur);
    free(name.p);
    return rc == MDB_NOTFOUND ? 0 : st_map_err(rc);
}

typedef struct zadapt {
    st_zset_fn fn;
    void *ctx;
} zadapt;

static int adapt(void *ctx, const uint8_t *name, size_t nlen,
                 const uint8_t *val, size_t vlen)
{
    zadapt *a = ctx;
    double s = 0;

    if (vlen == SCORE_BYTES)
        memcpy(&s, val, sizeof s);
    return a->fn(a->ctx, name, nlen, s);
}

int st_zset_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                 st_zset_fn fn, void *ctx, uint64_t *next)
{
    zadapt a = { fn, ctx };

    return st_elem_scan(t, ST_ELEM_ZMEMBER, o->c.id, cursor, count, adapt,
                        &a, next);
}

int st_zset_sample(st_txn *t, const st_obj *o, uint64_t r, size_t count,
                   st_zset_fn fn, void *ctx)
{
    zadapt a = { fn, ctx };

    return st_elem_sample(t, ST_ELEM_ZMEMBER, o->c.id, o->c.card, r, count,
                          adapt, &a);
}
