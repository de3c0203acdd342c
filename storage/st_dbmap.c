/*
 * st_dbmap.c - the database map (st_dbmap.h).
 *
 * The record ST_DBMAP_META holds the numbers whose stored database is not
 * their own, as big-endian u16 pairs (number, stored) sorted by number;
 * no record means every number is its own stored database. A
 * transaction loads it on its first key (one meta lookup) into its own
 * copy, which SWAPDB edits and writes back in the same transaction.
 */
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <string.h>

#define PAIR_U16 2
#define PAIR_BYTES 4
#define STAGE_BYTES 2

static MDB_val meta_key(const char *name)
{
    MDB_val k = { strlen(name), (void *)name };

    return k;
}

/* Grow-only u16 array of at least n entries. */
static int grow16(uint16_t **a, unsigned *cap, unsigned n)
{
    if (n <= *cap)
        return 0;
    uint16_t *p = realloc(*a, (size_t)n * sizeof *p);
    if (!p)
        return ENOMEM;
    *a = p;
    *cap = n;
    return 0;
}

/* Decode a map record into pairs at *out (n pairs); checks its order. */
static int decode(const MDB_val *v, uint16_t **out, unsigned *cap, unsigned *n)
{
    const uint8_t *p = v->mv_data;
    unsigned pairs;

    if (v->mv_size % PAIR_BYTES)
        return ST_ECORRUPT;
    pairs = (unsigned)(v->mv_size / PAIR_BYTES);
    if (grow16(out, cap, pairs * PAIR_U16))
        return ENOMEM;
    for (unsigned i = 0; i < pairs; i++) {
        (*out)[2 * i] = st_codec_get_be16(p + PAIR_BYTES * i);
        (*out)[2 * i + 1] = st_codec_get_be16(p + PAIR_BYTES * i + 2);
        if (i > 0 && (*out)[2 * i] <= (*out)[2 * i - 2])
            return ST_ECORRUPT;
    }
    *n = pairs;
    return 0;
}

/* The process-wide hint (number -> stored) from t's pairs. */
static void refresh_hint(st_txn *t)
{
    st_env *e = t->env;
    unsigned span = t->map_n ? (unsigned)t->map[2 * (t->map_n - 1)] + 1 : 0;
    unsigned cap = e->map_hint_n;

    e->map_hint_n = 0;
    if (span == 0 || grow16(&e->map_hint, &cap, span))
        return;
    for (unsigned i = 0; i < span; i++)
        e->map_hint[i] = (uint16_t)i;
    for (unsigned i = 0; i < t->map_n; i++)
        e->map_hint[t->map[2 * i]] = t->map[2 * i + 1];
    e->map_hint_n = span;
}

static int load(st_txn *t)
{
    MDB_val k = meta_key(ST_DBMAP_META), v;
    int rc = mdb_get(t->txn, t->env->dbi[ST_DBI_META], &k, &v);

    t->map_n = 0;
    if (rc == 0)
        rc = decode(&v, &t->map, &t->map_cap, &t->map_n);
    else if (rc == MDB_NOTFOUND)
        rc = 0;
    else
        return st_err_map(rc);
    if (rc)
        return rc;
    t->map_loaded = 1;
    t->map_stamp = ++t->env->map_stamps;
    refresh_hint(t);
    return 0;
}

/* Index of number db's pair, or -1 (then *at is where it would go). */
static int find(const st_txn *t, unsigned db, unsigned *at)
{
    unsigned lo = 0, hi = t->map_n;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (t->map[2 * mid] < db)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < t->map_n && t->map[2 * lo] == db ? (int)lo : -1;
}

static unsigned lookup(const st_txn *t, unsigned db)
{
    unsigned at;
    int i = find(t, db, &at);

    return i < 0 ? db : t->map[2 * i + 1];
}

int st_dbmap_resolve(st_txn *t, unsigned db, unsigned *stored)
{
    int rc;

    if (!t->map_loaded && (rc = load(t)))
        return rc;
    *stored = lookup(t, db);
    return *stored < t->env->nstored ? 0 : ST_ESCHEMA;
}

int st_dbmap_bind(st_txn *t, st_keyref *k)
{
    unsigned s;
    int rc;

    if (k->bound == ST_KEYREF_STORED ||
        (t->map_loaded && k->bound == t->map_stamp))
        return 0;
    if ((rc = st_dbmap_resolve(t, k->db, &s)))
        return rc;
    if (s != k->stored_db) {
        k->stored_db = s;
        st_codec_put_be16(k->enc, (uint16_t)s);
    }
    k->bound = t->map_stamp;
    return 0;
}

/* Number db names stored database s from now on in t. */
static int set(st_txn *t, unsigned db, unsigned s)
{
    unsigned at;
    int i = find(t, db, &at);

    if (i >= 0) {
        if (s == db) {
            memmove(t->map + 2 * i, t->map + 2 * i + 2,
                    (t->map_n - (unsigned)i - 1) * PAIR_U16 * sizeof *t->map);
            t->map_n--;
        } else {
            t->map[2 * i + 1] = (uint16_t)s;
        }
        return 0;
    }
    if (s == db)
        return 0;
    if (grow16(&t->map, &t->map_cap, (t->map_n + 1) * PAIR_U16))
        return ENOMEM;
    memmove(t->map + 2 * at + 2, t->map + 2 * at,
            (t->map_n - at) * PAIR_U16 * sizeof *t->map);
    t->map[2 * at] = (uint16_t)db;
    t->map[2 * at + 1] = (uint16_t)s;
    t->map_n++;
    return 0;
}

static int store(st_txn *t)
{
    MDB_val k = meta_key(ST_DBMAP_META), v;
    uint8_t *buf;
    int rc;

    if (t->map_n == 0) {
        rc = mdb_del(t->txn, t->env->dbi[ST_DBI_META], &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
    }
    v.mv_size = (size_t)t->map_n * PAIR_BYTES;
    v.mv_data = NULL;
    if ((rc = mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, MDB_RESERVE)))
        return st_err_map(rc);
    buf = v.mv_data;
    for (unsigned i = 0; i < t->map_n; i++) {
        st_codec_put_be16(buf + PAIR_BYTES * i, t->map[2 * i]);
        st_codec_put_be16(buf + PAIR_BYTES * i + 2, t->map[2 * i + 1]);
    }
    return 0;
}

int st_dbmap_swap(st_txn *t, unsigned a, unsigned b)
{
    unsigned sa, sb;
    int rc;

    if (!t->write)
        return EINVAL;
    if ((rc = st_dbmap_resolve(t, a, &sa)) ||
        (rc = st_dbmap_resolve(t, b, &sb)))
        return rc;
    if (a == b)
        return 0;
    if ((rc = set(t, a, sb)) || (rc = set(t, b, sa)) || (rc = store(t)))
        return rc;
    /* Key references bound before the swap resolve again. */
    t->map_stamp = ++t->env->map_stamps;
    refresh_hint(t);
    return 0;
}

unsigned st_dbmap_hint(const st_env *env, unsigned db)
{
    return db < env->map_hint_n ? env->map_hint[db] : db;
}

int st_dbmap_stage_set(st_txn *t, unsigned n)
{
    MDB_val k = meta_key(ST_DBMAP_STAGE_META), v;
    uint8_t buf[STAGE_BYTES];
    int rc;

    if (!t->write)
        return EINVAL;
    if (n == 0) {
        rc = mdb_del(t->txn, t->env->dbi[ST_DBI_META], &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
    }
    st_codec_put_be16(buf, (uint16_t)n);
    v.mv_size = sizeof buf;
    v.mv_data = buf;
    return st_err_map(mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, 0));
}

int st_dbmap_stage_get(st_txn *t, unsigned *n)
{
    MDB_val k = meta_key(ST_DBMAP_STAGE_META), v;
    int rc = mdb_get(t->txn, t->env->dbi[ST_DBI_META], &k, &v);

    *n = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return st_err_map(rc);
    if (v.mv_size != STAGE_BYTES)
        return ST_ECORRUPT;
    *n = st_codec_get_be16(v.mv_data);
    return 0;
}

int st_dbmap_space(st_env *env, MDB_txn *txn, unsigned *nstored)
{
    MDB_val k = meta_key(ST_DBMAP_META), v;
    uint16_t *pairs = NULL;
    unsigned cap = 0, n = 0, need = ST_DBMAP_SPACE(env->databases);
    int rc = mdb_get(txn, env->dbi[ST_DBI_META], &k, &v);

    if (rc == MDB_NOTFOUND) {
        *nstored = need;
        return 0;
    }
    if (rc)
        return st_err_map(rc);
    if ((rc = decode(&v, &pairs, &cap, &n))) {
        free(pairs);
        return rc;
    }
    for (unsigned i = 0; i < 2 * n; i++)
        if ((unsigned)pairs[i] + 1 > need)
            need = (unsigned)pairs[i] + 1;
    free(pairs);
    *nstored = need;
    return 0;
}
