/*
 * st_zset.c - sorted sets: members by hash (zmembers) and by score
 * (zscores), and the ordered walks over the latter.
 */
#include "storage/st_zset.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_rank.h"

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
        d = 0.0; /* -0 sorts with 0 */
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
static size_t zs_key(uint8_t *buf, uint64_t id, double score, const void *m,
                     size_t len)
{
    st_codec_put_be64(buf, id);
    st_codec_put_be64(buf + ST_COLL_ID_BYTES, st_zset_score_enc(score));
    if (len <= ST_ZSET_INLINE_MAX) {
        if (len)
            memcpy(buf + ST_ZSET_HEAD, m, len);
        return ST_ZSET_HEAD + len;
    }
    memcpy(buf + ST_ZSET_HEAD, m, ST_ZSET_LONG_PREFIX);
    st_codec_put_be64(buf + ST_ZSET_HEAD + ST_ZSET_LONG_PREFIX,
                      st_codec_hash64(m, len, ZSEED_A));
    st_codec_put_be64(buf + ST_ZSET_HEAD + ST_ZSET_LONG_PREFIX + 8,
                      st_codec_hash64(m, len, ZSEED_B));
    return ST_LMDB_MAXKEY;
}

/* Member and score of the zscores entry (k, v). */
static void zs_decode(const MDB_val *k, const MDB_val *v, const uint8_t **m,
                      size_t *len, double *score)
{
    const uint8_t *p = k->mv_data;

    *score = st_zset_score_dec(st_codec_get_be64(p + ST_COLL_ID_BYTES));
    if (k->mv_size == ST_LMDB_MAXKEY) {
        *m = v->mv_data;
        *len = v->mv_size;
    } else {
        *m = p + ST_ZSET_HEAD;
        *len = k->mv_size - ST_ZSET_HEAD;
    }
}

/*
 * Ranks are key-order positions among the zscores records of the zset,
 * from the counted B-tree of st_rank.c kept in the same database (its
 * records carry ST_RANK_MARK in the score slot, which no score encodes
 * to, so they sort after every element). Copies and the lazy freer
 * treat them as elements of the collection.
 */
static st_rank zrank_of(const st_txn *t, uint64_t id)
{
    st_rank r = { t->txn, ZSCORES(t), id };

    return r;
}

/* An element (not a count record) of collection `id`. */
static int in_coll(const MDB_val *k, uint64_t id)
{
    return st_rank_is_elem(k, id);
}

/* How many elements of `o` have zscores keys below `ek`. */
static int key_position(st_txn *t, const st_obj *o, const uint8_t *ek,
                        size_t eklen, uint64_t *pos)
{
    st_rank r = zrank_of(t, o->c.id);
    MDB_val k = { eklen, (void *)ek };

    return st_rank_below(&r, o->c.card, &k, pos);
}

/* Put `cur` on the element at key-order position `pos` (< card). */
static int seek_position(st_txn *t, const st_obj *o, MDB_cursor *cur,
                         uint64_t pos, MDB_val *k, MDB_val *v)
{
    st_rank r = zrank_of(t, o->c.id);

    return st_rank_seek(&r, o->c.card, cur, pos, k, v);
}

/* Store the zscores record of (score, m) and count it (o->c.card is the
 * count before). */
static int zs_put(st_txn *t, const st_obj *o, double score, const void *m,
                  size_t len, int count)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    st_rank r = zrank_of(t, o->c.id);
    MDB_val k, v;
    int rc;

    k.mv_size = zs_key(buf, o->c.id, score, m, len);
    k.mv_data = buf;
    v.mv_size = k.mv_size == ST_LMDB_MAXKEY ? len : 0;
    v.mv_data = (void *)m;
    rc = st_mdb_put(t->txn, ZSCORES(t), &k, &v, MDB_NOOVERWRITE);
    if (rc == 0 && count)
        rc = st_rank_insert(&r, o->c.card, &k);
    else if (rc == MDB_KEYEXIST)
        rc = 0;
    return st_err_map(rc);
}

/* Delete the zscores record of (score, m) and uncount it. */
static int zs_del(st_txn *t, const st_obj *o, double score, const void *m,
                  size_t len, int count)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    st_rank r = zrank_of(t, o->c.id);
    MDB_val k;
    int rc;

    k.mv_size = zs_key(buf, o->c.id, score, m, len);
    k.mv_data = buf;
    if ((rc = st_mdb_del(t->txn, ZSCORES(t), &k, NULL)) == 0 && count)
        rc = st_rank_remove(&r, o->c.card, &k);
    return st_err_map(rc);
}

int st_zset_score(st_txn *t, const st_obj *o, const void *member, size_t len,
                  double *score)
{
    const uint8_t *v;
    size_t vl;
    int rc;

    if (!o->c.id)
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
    int cr, moved = 1;
    if (!*created) {
        if (old == score && memcmp(&old, &score, sizeof old) == 0)
            return 0;
        /* A new score: the counts change only if the leaf does. */
        uint8_t a[ST_LMDB_MAXKEY], b[ST_LMDB_MAXKEY];
        st_rank r = zrank_of(t, o->c.id);
        MDB_val ka = { zs_key(a, o->c.id, old, member, len), a };
        MDB_val kb = { zs_key(b, o->c.id, score, member, len), b };
        int same;
        if ((rc = st_err_map(
                 st_rank_same_leaf(&r, o->c.card, &ka, &kb, &same))) ||
            (rc = zs_del(t, o, old, member, len, !same)))
            return rc;
        moved = !same;
        o->c.card--; /* counted without it until it is back */
    }
    rc = st_elem_put(t, ST_ELEM_ZMEMBER, &o->c, member, len, &score,
                     sizeof score, 0, &cr);
    if (rc == 0)
        rc = zs_put(t, o, score, member, len, moved);
    if (rc == 0 || !*created)
        o->c.card++;
    return rc;
}

int st_zset_rem(st_txn *t, st_obj *o, const void *member, size_t len)
{
    double old;
    int rc = st_zset_score(t, o, member, len, &old);

    if (rc)
        return rc;
    if ((rc = st_elem_del(t, ST_ELEM_ZMEMBER, &o->c, member, len)) ||
        (rc = zs_del(t, o, old, member, len, 1)))
        return rc;
    o->c.card--;
    return 0;
}

/* Position on the first (rev: last) element of `id`. */
static int zfirst(MDB_cursor *cur, uint64_t id, int rev, MDB_val *k, MDB_val *v)
{
    uint8_t pos[ST_ZSET_HEAD];
    int rc;

    /* Going down: from the count records, just after the elements. */
    st_codec_put_be64(pos, id);
    st_codec_put_be64(pos + ST_COLL_ID_BYTES, rev ? ST_RANK_MARK : 0);
    k->mv_size = rev ? sizeof pos : ST_COLL_ID_BYTES;
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

/*
 * Runs. Keys at least RUN_KEY bytes long may share their first RUN_KEY
 * bytes with the digest-form key of a long member, and such keys sort by
 * digest, not by member. Every key sharing those bytes is contiguous in
 * the database (a "run"), so ordered walks load a run whole and sort it
 * by member; only members of at least ST_ZSET_LONG_PREFIX bytes with the
 * same score and prefix ever share a run.
 */
#define RUN_KEY (ST_ZSET_HEAD + ST_ZSET_LONG_PREFIX)
#define RUN_INITIAL 8

typedef struct zrun_ent {
    const uint8_t *m; /* into zrun.buf once loaded */
    size_t off, len;
    double s;
    size_t raw; /* position in key order */
} zrun_ent;

typedef struct zrun {
    uint8_t prefix[RUN_KEY];
    uint8_t first[ST_LMDB_MAXKEY]; /* key of the run's first entry */
    size_t first_len;
    zrun_ent *e;
    size_t n, cap;
    uint8_t *buf;
    size_t blen, bcap;
} zrun;

static int is_run_key(const MDB_val *k) { return k->mv_size >= RUN_KEY; }

static void run_free(zrun *r)
{
    free(r->e);
    free(r->buf);
}

static int run_cmp(const void *a, const void *b)
{
    const zrun_ent *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->m, y->m, n) : 0;

    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

static int run_add(zrun *r, const uint8_t *m, size_t ml, double s)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : RUN_INITIAL;
        zrun_ent *e = realloc(r->e, cap * sizeof *e);
        if (!e)
            return ENOMEM;
        r->e = e;
        r->cap = cap;
    }
    if (r->blen + ml > r->bcap) {
        size_t cap = r->bcap ? r->bcap : ST_LMDB_MAXKEY;
        while (cap < r->blen + ml)
            cap *= 2;
        uint8_t *b = realloc(r->buf, cap);
        if (!b)
            return ENOMEM;
        r->buf = b;
        r->bcap = cap;
    }
    if (ml)
        memcpy(r->buf + r->blen, m, ml);
    r->e[r->n] = (zrun_ent){ NULL, r->blen, ml, s, r->n };
    r->blen += ml;
    r->n++;
    return 0;
}

/*
 * Load the run holding the cursor's key `k`, sorted by member. *raw_at
 * gets how many run keys precede `k` in key order, *sorted_at the sorted
 * index of `k`'s member. The cursor is left anywhere.
 */
static int run_load(MDB_cursor *cur, const MDB_val *k, zrun *r, size_t *raw_at,
                    size_t *sorted_at)
{
    uint8_t land[ST_LMDB_MAXKEY];
    size_t land_len = k->mv_size;
    MDB_val key = { RUN_KEY, r->prefix }, v;
    int rc;

    memcpy(land, k->mv_data, land_len);
    memcpy(r->prefix, k->mv_data, RUN_KEY);
    r->n = 0;
    r->blen = 0;
    *raw_at = 0;
    for (rc = mdb_cursor_get(cur, &key, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &key, &v, MDB_NEXT)) {
        const uint8_t *m;
        size_t ml;
        double s;
        if (key.mv_size < RUN_KEY || memcmp(key.mv_data, r->prefix, RUN_KEY))
            break;
        if (key.mv_size == land_len && !memcmp(key.mv_data, land, land_len))
            *raw_at = r->n;
        if (r->n == 0) {
            r->first_len = key.mv_size;
            memcpy(r->first, key.mv_data, key.mv_size);
        }
        zs_decode(&key, &v, &m, &ml, &s);
        if ((rc = run_add(r, m, ml, s)))
            return rc;
    }
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    for (size_t i = 0; i < r->n; i++)
        r->e[i].m = r->buf + r->e[i].off;
    qsort(r->e, r->n, sizeof *r->e, run_cmp);
    *sorted_at = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].raw == *raw_at)
            *sorted_at = i;
    return 0;
}

/* Put the cursor just past run `r` in walk direction `rev`. */
static int run_leave(MDB_cursor *cur, uint64_t id, const zrun *r, int rev,
                     MDB_val *k, MDB_val *v)
{
    uint8_t key[RUN_KEY];
    int i = RUN_KEY - 1;

    memcpy(key, r->prefix, RUN_KEY);
    if (!rev) {
        /* The smallest key above every key with this prefix. */
        while (i >= 0 && key[i] == UINT8_MAX)
            key[i--] = 0;
        if (i < 0)
            return MDB_NOTFOUND;
        key[i]++;
    }
    return zseek(cur, id, key, RUN_KEY, rev, k, v);
}

int st_zset_rank(st_txn *t, const st_obj *o, const void *member, size_t len,
                 int rev, uint64_t *rank, double *score)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_cursor *cur = NULL;
    MDB_val k;
    zrun run;
    uint64_t pos = 0;
    int rc;

    memset(&run, 0, sizeof run);
    if ((rc = st_zset_score(t, o, member, len, score)))
        return rc;
    k.mv_size = zs_key(buf, o->c.id, *score, member, len);
    k.mv_data = buf;
    if (is_run_key(&k)) {
        /* The run's first key by position, plus the sorted index. */
        size_t raw_at, sorted_at;
        if (!(rc = mdb_cursor_open(t->txn, ZSCORES(t), &cur)) &&
            !(rc = run_load(cur, &k, &run, &raw_at, &sorted_at)) &&
            !(rc = key_position(t, o, run.first, run.first_len, &pos)))
            pos += sorted_at;
    } else {
        rc = key_position(t, o, buf, k.mv_size, &pos);
    }
    if (cur)
        mdb_cursor_close(cur);
    run_free(&run);
    if (rc)
        return st_err_map(rc);
    *rank = rev ? o->c.card - 1 - pos : pos;
    return 0;
}

/* Position of the first element at or after score bound `d` (after
 * every element scoring d when `past`). */
static int score_position(st_txn *t, const st_obj *o, double d, int past,
                          uint64_t *pos)
{
    uint8_t key[ST_ZSET_HEAD];
    uint64_t e = st_zset_score_enc(d);

    st_codec_put_be64(key, o->c.id);
    st_codec_put_be64(key + ST_COLL_ID_BYTES, past ? e + 1 : e);
    return key_position(t, o, key, sizeof key, pos);
}

int st_zset_count_score(st_txn *t, const st_obj *o, double min, int minex,
                        double max, int maxex, uint64_t *n)
{
    uint64_t lo, hi;
    int rc;

    *n = 0;
    if (!o->c.id || o->c.card == 0)
        return 0;
    if ((rc = score_position(t, o, min, minex, &lo)) ||
        (rc = score_position(t, o, max, !maxex, &hi)))
        return st_err_map(rc);
    *n = hi > lo ? hi - lo : 0;
    return 0;
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
static int classify(const st_zrange *r, const uint8_t *m, size_t ml, double s)
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

/* Put the cursor where walk `r` starts. */
static int zstart(st_txn *t, MDB_cursor *cur, const st_obj *o,
                  const st_zrange *r, MDB_val *k, MDB_val *v)
{
    uint8_t key[ST_LMDB_MAXKEY];
    uint64_t id = o->c.id;
    size_t len;
    int rc;

    switch (r->by) {
    case ST_ZBY_RANK:
        if (r->start >= o->c.card)
            return MDB_NOTFOUND;
        return seek_position(t, o, cur,
                             r->rev ? o->c.card - 1 - r->start : r->start, k,
                             v);
    case ST_ZBY_SCORE: {
        uint64_t e = st_zset_score_enc(r->rev ? r->max : r->min);
        st_codec_put_be64(key, id);
        if (r->rev && e == UINT64_MAX) {
            st_codec_put_be64(key + ST_COLL_ID_BYTES, ST_RANK_MARK);
            len = ST_ZSET_HEAD;
        } else {
            st_codec_put_be64(key + ST_COLL_ID_BYTES, r->rev ? e + 1 : e);
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
        st_codec_put_be64(key, id);
        st_codec_put_be64(key + ST_COLL_ID_BYTES, st_zset_score_enc(s0));
        len = ST_ZSET_HEAD;
        if (b->len <= ST_ZSET_INLINE_MAX) {
            memcpy(key + ST_ZSET_HEAD, b->p, b->len);
            len += b->len;
            if (r->rev)
                key[len++] = 0; /* just past members equal to it */
        } else if (r->rev) {
            st_codec_put_be64(key + ST_COLL_ID_BYTES,
                              st_zset_score_enc(s0) + 1);
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

/*
 * The part of st_zset_walk() inside a run: load it sorted, visit its
 * members in walk order (from the landing point when a rank walk starts
 * inside it), deleting as asked. *stop is set when the walk ends here.
 */
static int walk_run(st_txn *t, MDB_cursor *cur, st_obj *o, const st_zrange *r,
                    int del, int first, st_zset_fn fn, void *ctx,
                    uint64_t *offset, uint64_t *left, uint64_t *visited,
                    zrun *run, int *stop)
{
    MDB_val k, v;
    size_t raw_at, sorted_at, from;
    int rc;

    if ((rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT)) ||
        (rc = run_load(cur, &k, run, &raw_at, &sorted_at)))
        return rc;
    if (first && r->by == ST_ZBY_RANK)
        from = raw_at; /* ranks count keys, whatever their order */
    else
        from = r->rev ? run->n - 1 : 0;
    for (size_t step = 0; step < run->n; step++) {
        if (r->rev ? step > from : from + step >= run->n)
            break;
        const zrun_ent *e = &run->e[r->rev ? from - step : from + step];
        int pos = classify(r, e->m, e->len, e->s);
        if (pos == POS_PAST) {
            *stop = 1;
            break;
        }
        if (pos == POS_BEFORE)
            continue;
        if (*offset) {
            (*offset)--;
            continue;
        }
        if (*left == 0) {
            *stop = 1;
            break;
        }
        (*left)--;
        (*visited)++;
        int fstop = fn ? fn(ctx, e->m, e->len, e->s) : 0;
        if (del) {
            if ((rc = zs_del(t, o, e->s, e->m, e->len, 1)) ||
                (rc = st_elem_del(t, ST_ELEM_ZMEMBER, &o->c, e->m, e->len)))
                return rc;
            o->c.card--;
        }
        if (fstop) {
            *stop = 1;
            break;
        }
    }
    return 0;
}

/*
 * The key of the first element of lex range `r` in walk direction
 * r->rev: *found 0 when the range is empty, *in_run 1 when the edge lies
 * in a run (raw key positions then do not follow member order).
 */
static int lex_edge(st_txn *t, const st_obj *o, const st_zrange *r,
                    uint8_t *key, size_t *klen, int *found, int *in_run)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    *found = *in_run = 0;
    if ((rc = mdb_cursor_open(t->txn, ZSCORES(t), &cur)))
        return rc;
    for (rc = zstart(t, cur, o, r, &k, &v); rc == 0 && in_coll(&k, o->c.id);
         rc = mdb_cursor_get(cur, &k, &v, r->rev ? MDB_PREV : MDB_NEXT)) {
        const uint8_t *m;
        size_t ml;
        double s;
        if (is_run_key(&k)) {
            *in_run = 1;
            break;
        }
        zs_decode(&k, &v, &m, &ml, &s);
        int pos = classify(r, m, ml, s);
        if (pos == POS_BEFORE)
            continue;
        if (pos == POS_IN) {
            *found = 1;
            *klen = k.mv_size;
            memcpy(key, k.mv_data, k.mv_size);
        }
        break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int st_zset_count_lex(st_txn *t, st_obj *o, const st_zrange *r, uint64_t *n)
{
    uint8_t a[ST_LMDB_MAXKEY], b[ST_LMDB_MAXKEY];
    size_t al = 0, bl = 0;
    uint64_t pa, pb;
    st_zrange back = *r;
    int found, in_run, rc;

    *n = 0;
    if (!o->c.id || o->c.card == 0)
        return 0;
    back.rev = !r->rev;
    if ((rc = lex_edge(t, o, r, a, &al, &found, &in_run)))
        return st_err_map(rc);
    if (!in_run && !found)
        return 0;
    if (!in_run && (rc = lex_edge(t, o, &back, b, &bl, &found, &in_run)))
        return st_err_map(rc);
    if (in_run || !found) /* members order differently: count them */
        return st_zset_walk(t, o, r, 0, NULL, NULL, n);
    if ((rc = key_position(t, o, a, al, &pa)) ||
        (rc = key_position(t, o, b, bl, &pb)))
        return st_err_map(rc);
    if (r->rev) {
        uint64_t x = pa;
        pa = pb;
        pb = x;
    }
    *n = pb >= pa ? pb - pa + 1 : 0;
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
    zrun run;
    int rc, first = 1;

    *visited = 0;
    memset(&run, 0, sizeof run);
    if (!o->c.id || left == 0)
        return 0;
    if ((rc = mdb_cursor_open(t->txn, ZSCORES(t), &cur)))
        return st_err_map(rc);
    for (rc = zstart(t, cur, o, r, &k, &v); rc == 0;) {
        const uint8_t *m;
        size_t ml;
        double s;
        if (!in_coll(&k, o->c.id))
            break;
        if (is_run_key(&k)) {
            int stop = 0;
            rc = walk_run(t, cur, o, r, del, first, fn, ctx, &offset, &left,
                          visited, &run, &stop);
            first = 0;
            if (rc || stop)
                break;
            rc = run_leave(cur, o->c.id, &run, r->rev, &k, &v);
            continue;
        }
        first = 0;
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
        MDB_val gone = { klen, kbuf };
        st_rank rk = zrank_of(t, o->c.id);
        if ((rc = zcopy_in(&name, m, ml)) || (rc = st_mdb_cursor_del(cur, 0)) ||
            (rc = st_rank_remove(&rk, o->c.card, &gone)))
            break;
        if ((rc = st_elem_del(t, ST_ELEM_ZMEMBER, &o->c, name.p, ml)))
            break;
        o->c.card--;
        if (stop)
            break;
        rc = zseek(cur, o->c.id, kbuf, klen, r->rev, &k, &v);
    }
    mdb_cursor_close(cur);
    free(name.p);
    run_free(&run);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
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

    return st_elem_scan(t, ST_ELEM_ZMEMBER, o->c.id, cursor, count, adapt, &a,
                        next);
}

static int adapt_zscore(void *ctx, const MDB_val *k, const MDB_val *v)
{
    zadapt *a = ctx;
    const uint8_t *m;
    size_t ml;
    double s;

    zs_decode(k, v, &m, &ml, &s);
    return a->fn(a->ctx, m, ml, s);
}

int st_zset_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                   st_zset_fn fn, void *ctx)
{
    zadapt a = { fn, ctx };
    st_rank r = zrank_of(t, o->c.id);

    if (!o->c.id || !o->c.card)
        return ST_ENOTFOUND;
    return st_err_map(
        st_rank_sample(&r, o->c.card, seed, count, adapt_zscore, &a));
}
