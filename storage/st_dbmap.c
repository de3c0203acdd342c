/*
 * st_dbmap.c - the database map (st_dbmap.h).
 *
 * The record ST_DBMAP_META, in LMDB's unnamed database (beside the names
 * of the named databases: read with every transaction's start, it costs
 * no extra database open), lists every number a SWAPDB ever touched:
 * big-endian u16 number, u16 stored database, u32 swap count, sorted by
 * number; a number not listed is its own stored database and was never
 * swapped, and no record at all is the identity. A transaction loads it
 * on its first key (one meta lookup) into its own copy, which SWAPDB
 * edits and writes back in the same transaction.
 */
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <string.h>

#define ENTRY_BYTES 8
#define OFF_STORED 2
#define OFF_SWAPS 4
#define STAGE_BYTES 2

typedef struct st_dbmap_entry entry;

static MDB_val meta_key(const char *name)
{
    MDB_val k = { strlen(name), (void *)name };

    return k;
}

static uint32_t get_be32(const uint8_t *p)
{
    return ((uint32_t)st_codec_get_be16(p) << 16) | st_codec_get_be16(p + 2);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    st_codec_put_be16(p, (uint16_t)(v >> 16));
    st_codec_put_be16(p + 2, (uint16_t)v);
}

/* Grow-only entry array of at least n entries. */
static int grow(entry **a, unsigned *cap, unsigned n)
{
    if (n <= *cap)
        return 0;
    entry *p = realloc(*a, (size_t)n * sizeof *p);
    if (!p)
        return ENOMEM;
    *a = p;
    *cap = n;
    return 0;
}

/* Decode a map record into entries at *out (n of them); checks order. */
static int decode(const MDB_val *v, entry **out, unsigned *cap, unsigned *n)
{
    const uint8_t *p = v->mv_data;
    unsigned count;

    if (v->mv_size % ENTRY_BYTES)
        return ST_ECORRUPT;
    count = (unsigned)(v->mv_size / ENTRY_BYTES);
    if (grow(out, cap, count))
        return ENOMEM;
    for (unsigned i = 0; i < count; i++, p += ENTRY_BYTES) {
        (*out)[i].db = st_codec_get_be16(p);
        (*out)[i].stored = st_codec_get_be16(p + OFF_STORED);
        (*out)[i].swaps = get_be32(p + OFF_SWAPS);
        if (i > 0 && (*out)[i].db <= (*out)[i - 1].db)
            return ST_ECORRUPT;
    }
    *n = count;
    return 0;
}

/* The process-wide hint (number -> stored) from t's entries. */
static void refresh_hint(st_txn *t)
{
    st_env *e = t->env;
    unsigned span = t->map_n ? (unsigned)t->map[t->map_n - 1].db + 1 : 0;

    e->map_hint_n = 0;
    if (span == 0)
        return;
    if (span > e->map_hint_cap) {
        uint16_t *h = realloc(e->map_hint, (size_t)span * sizeof *h);
        if (!h)
            return;
        e->map_hint = h;
        e->map_hint_cap = span;
    }
    for (unsigned i = 0; i < span; i++)
        e->map_hint[i] = (uint16_t)i;
    for (unsigned i = 0; i < t->map_n; i++)
        e->map_hint[t->map[i].db] = t->map[i].stored;
    e->map_hint_n = span;
}

/*
 * The map of t's snapshot. Without a map record LMDB's unnamed database
 * holds only the names of the named databases: its entry count (read in
 * O(1) from the transaction's own copy of its root) then says there is
 * nothing to look up, so a never-swapped environment pays no lookup.
 */
static int load(st_txn *t)
{
    MDB_val k = meta_key(ST_DBMAP_META), v;
    MDB_stat st;
    int rc;

    if (mdb_stat(t->txn, t->env->dbi_main, &st) == 0 &&
        st.ms_entries <= t->env->main_names)
        rc = MDB_NOTFOUND;
    else
        rc = mdb_get(t->txn, t->env->dbi_main, &k, &v);
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

/* The entry of number db, or NULL (then *at is where it would go). */
static entry *find(const st_txn *t, unsigned db, unsigned *at)
{
    unsigned lo = 0, hi = t->map_n;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (t->map[mid].db < db)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < t->map_n && t->map[lo].db == db ? &t->map[lo] : NULL;
}

static int ensure_loaded(st_txn *t) { return t->map_loaded ? 0 : load(t); }

int st_dbmap_resolve(st_txn *t, unsigned db, unsigned *stored)
{
    unsigned at;
    entry *x;
    int rc;

    if ((rc = ensure_loaded(t)))
        return rc;
    x = find(t, db, &at);
    *stored = x ? x->stored : db;
    return *stored < t->env->nstored ? 0 : ST_ESCHEMA;
}

int st_dbmap_number(st_txn *t, unsigned stored, unsigned *db)
{
    int rc;

    if ((rc = ensure_loaded(t)))
        return rc;
    /* A permutation: a stored database no entry names is its own
     * number's (that number is unlisted too). */
    *db = stored;
    for (unsigned i = 0; i < t->map_n; i++)
        if (t->map[i].stored == stored) {
            *db = t->map[i].db;
            break;
        }
    return 0;
}

int st_dbmap_swaps(st_txn *t, unsigned db, uint32_t *swaps)
{
    unsigned at;
    entry *x;
    int rc;

    if ((rc = ensure_loaded(t)))
        return rc;
    x = find(t, db, &at);
    *swaps = x ? x->swaps : 0;
    return 0;
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

/* The entry of number db, created (as the identity) if absent. */
static entry *entry_of(st_txn *t, unsigned db)
{
    unsigned at;
    entry *x = find(t, db, &at);

    if (x)
        return x;
    if (grow(&t->map, &t->map_cap, t->map_n + 1))
        return NULL;
    memmove(t->map + at + 1, t->map + at, (t->map_n - at) * sizeof *t->map);
    t->map[at] = (entry){ (uint16_t)db, (uint16_t)db, 0 };
    t->map_n++;
    return &t->map[at];
}

static int store(st_txn *t)
{
    MDB_val k = meta_key(ST_DBMAP_META), v;
    uint8_t *buf;
    int rc;

    v.mv_size = (size_t)t->map_n * ENTRY_BYTES;
    v.mv_data = NULL;
    if ((rc = st_mdb_put(t->txn, t->env->dbi_main, &k, &v, MDB_RESERVE)))
        return st_err_map(rc);
    buf = v.mv_data;
    for (unsigned i = 0; i < t->map_n; i++, buf += ENTRY_BYTES) {
        st_codec_put_be16(buf, t->map[i].db);
        st_codec_put_be16(buf + OFF_STORED, t->map[i].stored);
        put_be32(buf + OFF_SWAPS, t->map[i].swaps);
    }
    return 0;
}

int st_dbmap_swap(st_txn *t, unsigned a, unsigned b)
{
    unsigned sa, sb;
    entry *ea, *eb;
    int rc;

    if (!t->write)
        return EINVAL;
    if ((rc = st_dbmap_resolve(t, a, &sa)) ||
        (rc = st_dbmap_resolve(t, b, &sb)))
        return rc;
    if (a == b)
        return 0;
    if (!entry_of(t, a) || !entry_of(t, b))
        return ENOMEM;
    ea = find(t, a, &(unsigned){ 0 });
    eb = find(t, b, &(unsigned){ 0 });
    ea->stored = (uint16_t)sb;
    eb->stored = (uint16_t)sa;
    ea->swaps++;
    eb->swaps++;
    if ((rc = store(t)))
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
        rc = st_mdb_del(t->txn, t->env->dbi[ST_DBI_META], &k, NULL);
        return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
    }
    st_codec_put_be16(buf, (uint16_t)n);
    v.mv_size = sizeof buf;
    v.mv_data = buf;
    return st_err_map(st_mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, 0));
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
    entry *map = NULL;
    unsigned cap = 0, n = 0, need = ST_DBMAP_SPACE(env->databases);
    MDB_stat st;
    int rc = mdb_dbi_open(txn, NULL, 0, &env->dbi_main);

    if (rc || (rc = mdb_stat(txn, env->dbi_main, &st)))
        return st_err_map(rc);
    rc = mdb_get(txn, env->dbi_main, &k, &v);
    /* What the unnamed database holds besides the map: names. */
    env->main_names = st.ms_entries - (rc == 0);
    if (rc == MDB_NOTFOUND) {
        *nstored = need;
        return 0;
    }
    if (rc)
        return st_err_map(rc);
    if ((rc = decode(&v, &map, &cap, &n))) {
        free(map);
        return rc;
    }
    for (unsigned i = 0; i < n; i++) {
        if ((unsigned)map[i].db + 1 > need)
            need = (unsigned)map[i].db + 1;
        if ((unsigned)map[i].stored + 1 > need)
            need = (unsigned)map[i].stored + 1;
    }
    free(map);
    *nstored = need;
    return 0;
}
