/*
 * st_keyspace.c - lookups, string writes, deletes, expiry, rename/copy and the
 * iterators of the keys database, keeping the expires index and the key
 * counters in step with every record.
 */
#include "storage/st_keyspace.h"
#include "shm/shm_cache.h"
#include "shm/shm_clock.h"
#include "storage/st_coll.h"
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_stream.h"
#include "storage/st_string.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <time.h>
#include <zstd.h>

#include <string.h>

/* expires key: BE expire-at, then the keys-db key cut to fit LMDB. */
#define EXP_AT_BYTES 8
#define EXP_ENC_MAX (ST_LMDB_MAXKEY - EXP_AT_BYTES)
#define PROBES 256
#define RANDOM_TRIES 16

#define DBI(t, which) ((t)->env->dbi[which])

static int is_expired(const st_rec *r, int64_t now)
{
    return r->expire_at != 0 && r->expire_at <= now;
}

/* Build the expires-db key (and value, for cut keys) of a record. */
static void exp_key(uint8_t *buf, const uint8_t *enc, size_t enc_len,
                    int64_t at, MDB_val *k, MDB_val *v)
{
    size_t n = enc_len < EXP_ENC_MAX ? enc_len : EXP_ENC_MAX;

    st_codec_put_be64(buf, (uint64_t)at);
    memcpy(buf + EXP_AT_BYTES, enc, n);
    k->mv_size = EXP_AT_BYTES + n;
    k->mv_data = buf;
    v->mv_size = enc_len > EXP_ENC_MAX ? enc_len : 0;
    v->mv_data = (void *)enc;
}

static int exp_put(st_txn *t, const uint8_t *enc, size_t len, int64_t at)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;

    exp_key(buf, enc, len, at, &k, &v);
    return st_err_map(st_mdb_put(t->txn, DBI(t, ST_DBI_EXPIRES), &k, &v, 0));
}

static int exp_del(st_txn *t, const uint8_t *enc, size_t len, int64_t at)
{
    uint8_t buf[ST_LMDB_MAXKEY];
    MDB_val k, v;
    int rc;

    exp_key(buf, enc, len, at, &k, &v);
    rc = st_mdb_del(t->txn, DBI(t, ST_DBI_EXPIRES), &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

/* Does the record at `v` belong to the long name of `k`? */
static int long_name_matches(const st_keyref *k, const MDB_val *v)
{
    st_rec r;

    return st_codec_rec_decode(v->mv_data, v->mv_size, &r) == 0 &&
           r.name_len == k->len && memcmp(r.name, k->name, k->len) == 0;
}

/*
 * Find the LMDB record of `k`. For long names, walk the slots sharing the
 * stem and pick the one whose record holds the full name; when absent,
 * point k->enc at the first free probe so a write can use it.
 */
static int raw_get(st_txn *t, st_keyref *k, MDB_val *val)
{
    MDB_val key = { k->enc_len, k->enc };
    MDB_cursor *cur;
    uint8_t used[PROBES] = { 0 };
    int rc;

    if ((rc = st_dbmap_bind(t, k)))
        return rc;
    if (!k->is_long)
        return st_err_map(mdb_get(t->txn, DBI(t, ST_DBI_KEYS), &key, val));
    if ((rc = mdb_cursor_open(t->txn, DBI(t, ST_DBI_KEYS), &cur)))
        return st_err_map(rc);
    k->enc[ST_KEY_LONG_STEM] = 0;
    key.mv_size = ST_KEY_LONG_STEM;
    for (rc = mdb_cursor_get(cur, &key, val, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &key, val, MDB_NEXT)) {
        if (key.mv_size != ST_LMDB_MAXKEY ||
            memcmp(key.mv_data, k->enc, ST_KEY_LONG_STEM) != 0)
            break;
        uint8_t probe = ((const uint8_t *)key.mv_data)[ST_KEY_LONG_STEM];
        if (long_name_matches(k, val)) {
            k->enc[ST_KEY_LONG_STEM] = probe;
            mdb_cursor_close(cur);
            return 0;
        }
        used[probe] = 1;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    for (int p = 0; p < PROBES; p++) {
        if (!used[p]) {
            k->enc[ST_KEY_LONG_STEM] = (uint8_t)p;
            return ST_ENOTFOUND;
        }
    }
    return ST_ECOLLISION;
}

/* The cache's hash of a key: the scan hash (a full hash of the name that
 * st_codec_keyref_init computed once) remixed with the database, so every bit
 * varies (the scan hash has bit 0 set and bit 63 clear) and equal names
 * in two databases part ways. A finalizer, not a second st_codec_hash64 pass:
 * it runs on every cache call. */
#define CACHE_HASH_DB_MUL 0x9e3779b97f4a7c15ull
#define CACHE_HASH_MUL_A 0xbf58476d1ce4e5b9ull
#define CACHE_HASH_MUL_B 0x94d049bb133111ebull
#define PREFETCH_BATCH 64 /* keys hashed per st_keyspace_prefetch call */
static uint64_t cache_hash_of(uint64_t scan_hash, unsigned db)
{
    uint64_t h = scan_hash ^ ((uint64_t)db * CACHE_HASH_DB_MUL);

    h ^= h >> 30;
    h *= CACHE_HASH_MUL_A;
    h ^= h >> 27;
    h *= CACHE_HASH_MUL_B;
    h ^= h >> 31;
    return h;
}

/* Keyed by the stored database: a SWAPDB changes no cache entry. */
static uint64_t cache_hash(const st_keyref *k)
{
    return cache_hash_of(k->hash, k->stored_db);
}

#define MS_PER_S 1000

/* Record an access to `k` in the shared clock at `now` (ms; < 0: read
 * the kernel's coarse clock, a vDSO call, for writes that have no time
 * of their own). */
static void touch(st_env *e, const st_keyref *k, int64_t now)
{
    struct timespec ts;

    if (!e->clock)
        return;
    if (now < 0) {
        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        now = (int64_t)ts.tv_sec * MS_PER_S;
    }
    shm_clock_touch(e->clock, cache_hash(k), (uint32_t)(now / MS_PER_S));
}

uint64_t st_keyspace_idle(st_env *env, const st_keyref *k, int64_t now)
{
    int64_t at, now_s = now / MS_PER_S;

    if (!env->clock)
        return 0;
    at = shm_clock_get(env->clock, cache_hash(k));
    return now_s > at ? (uint64_t)(now_s - at) : 0;
}

int st_keyspace_prefetch_useful(const st_env *env)
{
    return env->cache != NULL && shm_cache_enabled(env->cache);
}

/* Long names are never cached (see cacheable()): nothing to fetch. */
void st_keyspace_prefetch(st_env *env, unsigned db, const void *const *names,
                          const size_t *lens, size_t n)
{
    uint64_t h[PREFETCH_BATCH];
    size_t m = 0;

    if (!env->cache)
        return;
    db = st_dbmap_hint(env, db);
    for (size_t i = 0; i < n && m < PREFETCH_BATCH; i++)
        if (lens[i] <= ST_KEY_INLINE_MAX)
            h[m++] = cache_hash_of(st_codec_scan_hash(names[i], lens[i]), db);
    shm_cache_prefetch(env->cache, h, m);
}

/*
 * A write to `k` in transaction t: drop it from the cache and leave a
 * tombstone at t's version BEFORE the commit. Until the commit, readers
 * miss and read the old value from LMDB, and their fills (from snapshots
 * older than t) are refused; after it, only snapshots that include t can
 * fill. So the cache never serves a value this write superseded, and a
 * multi-key read never mixes cached new values with an older snapshot.
 * If t aborts, the tombstone only costs a miss.
 */
static void cache_invalidate(st_txn *t, const st_keyref *k)
{
    if (t->env->cache && !k->is_long)
        shm_cache_invalidate(t->env->cache, k->enc, k->enc_len, cache_hash(k),
                             st_txn_version(t));
}

static void note_seen(st_env *e, const st_keyref *k)
{
    if (e->nseen == ST_SEEN_MAX)
        return; /* the active expiry gets the rest */
    e->seen[e->nseen].len = k->enc_len;
    memcpy(e->seen[e->nseen].enc, k->enc, k->enc_len);
    e->nseen++;
}

/* Hand what a record owns outside itself (a collection's elements, a
 * chunked string's spans) to the lazy freer. */
static int detach_owned(st_txn *t, const st_rec *r)
{
    return r->type == ST_TYPE_STRING ? st_string_detach(t, r)
                                     : st_coll_detach(t, r);
}

/* A stream went (deleted, overwritten): its blocked readers are told,
 * as of an entry (st_stream_signal), and find it gone. */
static void stream_gone(st_txn *t, const st_keyref *k)
{
    st_internal_created(t->env, k->db, k->name, k->len, ST_TYPE_STREAM,
                        ST_STREAM_READERS_ANY, 0);
}

/*
 * Remove the record of `k` (known to exist as `r`) and its expiry entry; a
 * collection's elements are detached for lazy freeing unless `keep_elems`
 * (RENAME moves them with the record).
 */
static int del_record_freeing(st_txn *t, const st_keyref *k, const st_rec *r,
                              int keep_elems);

/* A delete frees: its writes may use the room's reserve (st_room.h), so
 * DEL and expiry still run on a full disk. */
static int del_record(st_txn *t, const st_keyref *k, const st_rec *r,
                      int keep_elems)
{
    int was = t->env->room.freeing, rc;

    t->env->room.freeing = 1;
    rc = del_record_freeing(t, k, r, keep_elems);
    t->env->room.freeing = was;
    return rc;
}

static int del_record_freeing(st_txn *t, const st_keyref *k, const st_rec *r,
                              int keep_elems)
{
    MDB_val key = { k->enc_len, (void *)k->enc };
    int64_t at = r->expire_at;
    int rc;

    if (!keep_elems && (rc = detach_owned(t, r)))
        return rc;
    if (r->type == ST_TYPE_STREAM && !keep_elems)
        stream_gone(t, k);
    if ((rc = st_mdb_del(t->txn, DBI(t, ST_DBI_KEYS), &key, NULL)))
        return st_err_map(rc);
    cache_invalidate(t, k);
    if (at && (rc = exp_del(t, k->enc, k->enc_len, at)))
        return rc;
    st_txn_count_keys(t, k->stored_db, -1, at ? -1 : 0);
    return 0;
}

static int del_found(st_txn *t, const st_keyref *k, const st_rec *r)
{
    return del_record(t, k, r, 0);
}

/* Find `k` as stored (no cache, no decompression): internal lookups that
 * may rewrite the record use this form. */
int st_keyspace_lookup_raw(st_txn *t, st_keyref *k, int64_t now, st_rec *out)
{
    MDB_val v;
    int rc = raw_get(t, k, &v);

    if (rc)
        return rc;
    if ((rc = st_codec_rec_decode(v.mv_data, v.mv_size, out)))
        return rc;
    if (!is_expired(out, now))
        return 0;
    if (!t->write) {
        note_seen(t->env, k);
        return ST_ENOTFOUND;
    }
    if (t->env->obs.expired)
        t->env->obs.expired(t->env->obs.ctx, k->db, k->name, k->len);
    rc = del_found(t, k, out);
    return rc ? rc : ST_ENOTFOUND;
}

/* Replace a compressed payload by its decompressed bytes (in the arena:
 * valid until the transaction ends, like LMDB's own pointers). */
int st_keyspace_inflate(st_txn *t, st_rec *r)
{
    unsigned long long n;
    uint8_t *dst;
    size_t got;

    if (!(r->flags & ST_REC_ZSTD))
        return 0;
    n = ZSTD_getFrameContentSize(r->payload, r->payload_len);
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN)
        return ST_ECORRUPT;
    if (!(dst = st_txn_arena_alloc(t, n ? (size_t)n : 1)))
        return ENOMEM;
    got = ZSTD_decompressDCtx(t->env->zd, dst, (size_t)n, r->payload,
                              r->payload_len);
    if (ZSTD_isError(got) || got != n)
        return ST_ECORRUPT;
    r->payload = dst;
    r->payload_len = got;
    r->flags &= ~ST_REC_ZSTD;
    return 0;
}

/* Cacheable: short names, read transactions (a write transaction must see
 * its own uncommitted writes, which the cache never holds). */
static int cacheable(const st_txn *t, const st_keyref *k)
{
    return t->env->cache && !t->write && !k->is_long;
}

/* A read that missed the cache offers what it found in its snapshot. */
static void cache_fill(st_txn *t, const st_keyref *k, uint64_t hash,
                       const st_rec *r)
{
    shm_cache_entry_t e = {
        .key = k->enc,
        .klen = k->enc_len,
        .hash = hash,
        .val = r->payload,
        .vlen = r->payload_len,
        .version = r->version,
        .expire_at = r->expire_at,
        .type = (uint8_t)r->type,
        .flags = (uint8_t)r->flags,
    };

    /* A chunked string's record is not its value: never cached. */
    if (r->type == ST_TYPE_STRING && !(r->flags & ST_REC_CHUNKED))
        shm_cache_fill(t->env->cache, &e, mdb_txn_id(t->txn));
}

/*
 * 1 and *out filled on a usable cache hit, 0 otherwise. An entry is
 * usable only if its version is within the reader's snapshot: a present
 * entry is the key's newest committed state (every write invalidates
 * before it commits), so with version <= snapshot it is also the state
 * the snapshot sees; a newer one must not mix with this transaction's
 * older reads of other keys (MGET must see one snapshot).
 */
static int cache_get(st_txn *t, const st_keyref *k, uint64_t hash, int64_t now,
                     st_rec *out)
{
    st_env *e = t->env;
    shm_cache_value_t v;
    int rc;

    v.cap = st_txn_arena_room(t, (uint8_t **)&v.buf);
    rc = shm_cache_get(e->cache, k->enc, k->enc_len, hash, now, &v);
    if (rc == SHM_ETOOSMALL) {
        size_t need = v.len;
        if (!(v.buf = st_txn_arena_alloc(t, need)))
            return 0;
        t->arena->used -= need; /* claimed below if it is a hit */
        v.cap = need;
        rc = shm_cache_get(e->cache, k->enc, k->enc_len, hash, now, &v);
    }
    if (rc || v.version > mdb_txn_id(t->txn))
        return 0;
    out->payload = st_txn_arena_alloc(t, v.len); /* claims the bytes in place */
    out->type = v.type;
    out->flags = v.flags;
    out->version = v.version;
    out->expire_at = v.expire_at;
    out->name = NULL;
    out->name_len = 0;
    out->payload_len = v.len;
    return 1;
}

int st_keyspace_peek(st_txn *t, st_keyref *k, int64_t now, st_rec *out)
{
    uint64_t hash;
    int rc;

    if ((rc = st_dbmap_bind(t, k)))
        return rc;
    if (!cacheable(t, k)) {
        rc = st_keyspace_lookup_raw(t, k, now, out);
        return rc ? rc : st_keyspace_inflate(t, out);
    }
    hash = cache_hash(k);
    if (cache_get(t, k, hash, now, out))
        return st_keyspace_inflate(t, out);
    if ((rc = st_keyspace_lookup_raw(t, k, now, out)))
        return rc;
    cache_fill(t, k, hash, out);
    return st_keyspace_inflate(t, out);
}

int st_keyspace_lookup(st_txn *t, st_keyref *k, int64_t now, st_rec *out)
{
    int rc = st_keyspace_peek(t, k, now, out);

    if (rc == 0)
        touch(t->env, k, now);
    return rc;
}

/*
 * Write a record for `k` replacing any old one, keeping the expires index
 * and counters right; returns where `payload_len` bytes go. A replaced
 * collection is detached unless `same_value` (the record is rewritten
 * with its own payload). The reserve is the last LMDB call so the pointer
 * stays valid for the caller.
 */
int st_keyspace_put_rec(st_txn *t, st_keyref *k, int type, unsigned flags,
                        int64_t expire_at, size_t payload_len, int same_value,
                        uint8_t **dst)
{
    MDB_val key, v;
    st_rec old;
    int rc = raw_get(t, k, &v);
    int existed = 0, old_type = ST_TYPE_NONE, fresh;
    int64_t old_at = 0;

    if (rc == 0) {
        if ((rc = st_codec_rec_decode(v.mv_data, v.mv_size, &old)))
            return rc;
        existed = 1;
        old_type = old.type;
        old_at = old.expire_at;
        if (!same_value && (rc = detach_owned(t, &old)))
            return rc;
        if (old.type == ST_TYPE_STREAM && !same_value)
            stream_gone(t, k);
    } else if (rc != ST_ENOTFOUND) {
        return rc;
    }
    if (old_at != expire_at) {
        if (old_at && (rc = exp_del(t, k->enc, k->enc_len, old_at)))
            return rc;
        if (expire_at && (rc = exp_put(t, k->enc, k->enc_len, expire_at)))
            return rc;
    }
    st_txn_count_keys(t, k->stored_db, existed ? 0 : 1,
                      (expire_at ? 1 : 0) - (old_at ? 1 : 0));
    cache_invalidate(t, k);
    touch(t->env, k, -1);
    key.mv_size = k->enc_len;
    key.mv_data = k->enc;
    v.mv_size = st_codec_rec_size(k, payload_len);
    v.mv_data = NULL;
    if ((rc = st_mdb_put(t->txn, DBI(t, ST_DBI_KEYS), &key, &v, MDB_RESERVE)))
        return st_err_map(rc);
    *dst = st_codec_rec_encode_head(v.mv_data, k, type, flags,
                                    st_txn_version(t), expire_at);
    fresh = st_internal_fresh(k) && !existed;
    if (old_type != type)
        st_internal_created(t->env, k->db, k->name, k->len, type, 0, fresh);
    return 0;
}

int st_keyspace_string_reserve(st_txn *t, st_keyref *k, size_t len,
                               int64_t expire_at, uint8_t **dst)
{
    if (len > ST_STRING_INLINE_MAX)
        return EINVAL;
    return st_keyspace_put_rec(t, k, ST_TYPE_STRING, 0, expire_at, len, 0, dst);
}

int st_keyspace_string_set(st_txn *t, st_keyref *k, const void *val, size_t len,
                           int64_t expire_at)
{
    return st_string_set(t, k, val, len, expire_at, ST_STRING_ENC_AUTO);
}

int st_keyspace_delete(st_txn *t, st_keyref *k, int64_t now)
{
    st_rec r;
    int rc = st_keyspace_lookup_raw(t, k, now, &r);

    return rc ? rc : del_found(t, k, &r);
}

int st_keyspace_replace(st_txn *t, st_keyref *k, int64_t now)
{
    int rc = st_keyspace_delete(t, k, now);

    if (rc == 0)
        k->replacing = 1;
    return rc;
}

/*
 * Write record `r` (of `k` or of another key) at `k` with expiry `at`,
 * payload unchanged (copied through the scratch buffer: LMDB may move it).
 */
static int rewrite(st_txn *t, st_keyref *k, const st_rec *r, int64_t at)
{
    uint8_t *copy, *dst;
    size_t n = r->payload_len;
    int type = r->type;
    unsigned flags = r->flags & ~ST_REC_LONGNAME;
    int rc;

    if ((rc = st_env_scratch(t->env, n, &copy)))
        return rc;
    if (n)
        memcpy(copy, r->payload, n);
    if ((rc = st_keyspace_put_rec(t, k, type, flags, at, n, 1, &dst)))
        return rc;
    if (n)
        memcpy(dst, copy, n);
    return 0;
}

int st_keyspace_expire_set(st_txn *t, st_keyref *k, int64_t now,
                           int64_t expire_at)
{
    st_rec r;
    int rc = st_keyspace_lookup_raw(t, k, now, &r);

    if (rc)
        return rc;
    if (r.expire_at == expire_at)
        return 0;
    return rewrite(t, k, &r, expire_at);
}

/* Copy the record of `src` (found as `r`) to `dst`, which is free: a
 * collection gets a deep copy of its elements under a new id. */
static int copy_record(st_txn *t, st_keyref *dst, const st_rec *r)
{
    st_coll c;
    uint8_t *dst_payload;
    int rc;

    if (r->type == ST_TYPE_STRING && (r->flags & ST_REC_CHUNKED))
        return st_string_copy_rec(t, dst, r);
    if (r->type == ST_TYPE_STRING)
        return rewrite(t, dst, r, r->expire_at);
    if ((rc = st_coll_copy(t, r, &c)))
        return rc;
    if ((rc = st_keyspace_put_rec(t, dst, r->type, 0, r->expire_at,
                                  ST_COLL_PAYLOAD, 0, &dst_payload)))
        return rc;
    st_coll_encode(dst_payload, &c);
    return 0;
}

static int same_key(const st_keyref *a, const st_keyref *b)
{
    return a->db == b->db && a->len == b->len &&
           memcmp(a->name, b->name, a->len) == 0;
}

int st_keyspace_rename(st_txn *t, st_keyref *src, st_keyref *dst, int64_t now,
                       int nx)
{
    st_rec r, d;
    int rc = st_keyspace_lookup_raw(t, src, now, &r);

    if (rc)
        return rc;
    if (same_key(src, dst))
        return nx ? ST_EEXISTS : 0;
    rc = st_keyspace_lookup_raw(t, dst, now, &d);
    if (rc == 0) {
        if (nx)
            return ST_EEXISTS;
        if ((rc = del_found(t, dst, &d)))
            return rc;
    } else if (rc != ST_ENOTFOUND) {
        return rc;
    }
    /* dst's deletion may have moved src's pages: look it up again. */
    if ((rc = st_keyspace_lookup_raw(t, src, now, &r)))
        return rc;
    /* The record moves as it is: a collection keeps its id and elements. */
    if ((rc = rewrite(t, dst, &r, r.expire_at)))
        return rc;
    if ((rc = st_keyspace_lookup_raw(t, src, now, &r)))
        return rc;
    return del_record(t, src, &r, 1);
}

int st_keyspace_copy(st_txn *t, st_keyref *src, st_keyref *dst, int64_t now,
                     int replace)
{
    st_rec r, d;
    int rc = st_keyspace_lookup_raw(t, src, now, &r);

    if (rc)
        return rc;
    rc = st_keyspace_lookup_raw(t, dst, now, &d);
    if (rc == 0) {
        if (!replace || same_key(src, dst))
            return ST_EEXISTS;
        if ((rc = del_found(t, dst, &d)))
            return rc;
        if ((rc = st_keyspace_lookup_raw(t, src, now, &r)))
            return rc;
    } else if (rc != ST_ENOTFOUND) {
        return rc;
    }
    return copy_record(t, dst, &r);
}

/* Name of the key at (key, val) of the keys database. */
static void rec_name(const MDB_val *key, const st_rec *r, const uint8_t **name,
                     size_t *len)
{
    if (r->flags & ST_REC_LONGNAME) {
        *name = r->name;
        *len = r->name_len;
    } else {
        *name = (const uint8_t *)key->mv_data + ST_KEY_HEAD_BYTES;
        *len = key->mv_size - ST_KEY_HEAD_BYTES;
    }
}

static int key_db(const MDB_val *key)
{
    return st_codec_get_be16(key->mv_data);
}

/* Tell the observer the key under `key` (record r) expires now. */
static void note_expired(st_txn *t, const MDB_val *key, const st_rec *r)
{
    const uint8_t *name;
    size_t len;
    unsigned db;

    if (!t->env->obs.expired)
        return;
    /* the number clients know the key's database by (st_dbmap.h) */
    if (st_dbmap_number(t, (unsigned)key_db(key), &db))
        db = (unsigned)key_db(key);
    rec_name(key, r, &name, &len);
    t->env->obs.expired(t->env->obs.ctx, db, name, len);
}

static uint64_t key_hash(const MDB_val *key)
{
    return st_codec_get_be64((const uint8_t *)key->mv_data + ST_KEY_DB_BYTES);
}

/* Position `cur` on the first key of `db` with hash >= h. */
static int seek(MDB_cursor *cur, unsigned db, uint64_t h, MDB_val *key,
                MDB_val *val)
{
    uint8_t pos[ST_KEY_HEAD_BYTES];
    int rc;

    st_codec_put_be16(pos, (uint16_t)db);
    st_codec_put_be64(pos + ST_KEY_DB_BYTES, h);
    key->mv_size = sizeof pos;
    key->mv_data = pos;
    rc = mdb_cursor_get(cur, key, val, MDB_SET_RANGE);
    if (rc == 0 && key_db(key) != (int)db)
        rc = MDB_NOTFOUND;
    return rc;
}

int st_keyspace_scan(st_txn *t, unsigned db, uint64_t cursor, size_t count,
                     int64_t now, st_key_fn fn, void *ctx, uint64_t *next)
{
    MDB_cursor *cur;
    MDB_val key, val;
    size_t seen = 0;
    uint64_t last = 0;
    int rc, stop = 0;

    *next = 0;
    if (count == 0)
        count = 1; /* always progress */
    if ((rc = st_dbmap_resolve(t, db, &db)))
        return rc;
    if ((rc = mdb_cursor_open(t->txn, DBI(t, ST_DBI_KEYS), &cur)))
        return st_err_map(rc);
    for (rc = seek(cur, db, cursor, &key, &val); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        if (key_db(&key) != (int)db)
            break;
        uint64_t h = key_hash(&key);
        if ((seen >= count && h != last) || stop) {
            *next = h;
            break;
        }
        st_rec r;
        const uint8_t *name;
        size_t len;
        if ((rc = st_codec_rec_decode(val.mv_data, val.mv_size, &r)))
            break;
        last = h;
        seen++;
        if (is_expired(&r, now))
            continue;
        rec_name(&key, &r, &name, &len);
        stop = fn(ctx, name, len, r.type, r.expire_at);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

/* Report the key under the cursor if it is live: 1 reported, 0 not. */
static int report_live(const MDB_val *key, const MDB_val *val, int64_t now,
                       st_key_fn fn, void *ctx, int *rc)
{
    st_rec rec;
    const uint8_t *name;
    size_t len;

    if ((*rc = st_codec_rec_decode(val->mv_data, val->mv_size, &rec)))
        return 0;
    if (is_expired(&rec, now))
        return 0;
    rec_name(key, &rec, &name, &len);
    fn(ctx, name, len, rec.type, rec.expire_at);
    return 1;
}

int st_keyspace_random_key(st_txn *t, unsigned db, uint64_t r, int64_t now,
                           st_key_fn fn, void *ctx)
{
    MDB_cursor *cur;
    MDB_val key, val;
    int rc, wrapped = 0;

    if ((rc = st_dbmap_resolve(t, db, &db)))
        return rc;
    if ((rc = mdb_cursor_open(t->txn, DBI(t, ST_DBI_KEYS), &cur)))
        return st_err_map(rc);
    for (int i = 0; i < RANDOM_TRIES; i++) {
        uint64_t h = (r & 0x7fffffffffffffffull) | 1u;
        rc = seek(cur, db, h, &key, &val);
        if (rc == MDB_NOTFOUND)
            rc = seek(cur, db, 0, &key, &val); /* wrap around */
        if (rc)
            break;
        if (report_live(&key, &val, now, fn, ctx, &rc) || rc) {
            mdb_cursor_close(cur);
            return rc;
        }
        r = r * 6364136223846793005ull + 1442695040888963407ull;
    }
    /* Mostly expired keys (not yet reaped): walk on from the last probe,
     * once around the database, to the first live key. */
    while (rc == 0) {
        rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT);
        if (rc == MDB_NOTFOUND || (rc == 0 && key_db(&key) != (int)db)) {
            if (wrapped++)
                break;
            rc = seek(cur, db, 0, &key, &val);
            if (rc)
                break;
        }
        if (rc == 0 && (report_live(&key, &val, now, fn, ctx, &rc) || rc)) {
            mdb_cursor_close(cur);
            return rc;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND || rc == 0 ? ST_ENOTFOUND : st_err_map(rc);
}

/* Keys and keys-with-TTL of stored database `db`. */
static int stored_size(st_txn *t, unsigned db, uint64_t *keys,
                       uint64_t *expires)
{
    MDB_val k = { sizeof ST_META_COUNTS - 1, ST_META_COUNTS }, v;
    int64_t c[2] = { 0, 0 };
    int rc = mdb_get(t->txn, DBI(t, ST_DBI_META), &k, &v);

    if (rc == 0 && v.mv_size >= (db + 1) * sizeof c)
        memcpy(c, (const uint8_t *)v.mv_data + db * sizeof c, sizeof c);
    else if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    if (t->write) {
        c[0] += t->dkeys[db];
        c[1] += t->dexpires[db];
    }
    *keys = c[0] > 0 ? (uint64_t)c[0] : 0;
    *expires = c[1] > 0 ? (uint64_t)c[1] : 0;
    return 0;
}

int st_keyspace_dbsize(st_txn *t, unsigned db, uint64_t *keys,
                       uint64_t *expires)
{
    int rc = st_dbmap_resolve(t, db, &db);

    return rc ? rc : stored_size(t, db, keys, expires);
}

/* Empty every data database in one transaction (FLUSHALL). */
static int drop_all(st_txn *t)
{
    MDB_val k = { sizeof ST_META_COUNTS - 1, ST_META_COUNTS };
    /* A deferred write-back goes before the drop, not after it. */
    int rc = st_txn_settle(t);

    for (int i = 0; i < ST_DBI_COUNT && !rc; i++)
        if (i != ST_DBI_META)
            rc = st_mdb_drop(t->txn, DBI(t, i), 0);
    if (!rc) {
        rc = st_mdb_del(t->txn, DBI(t, ST_DBI_META), &k, NULL);
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    for (unsigned db = 0; db < t->env->nstored; db++)
        t->dkeys[db] = t->dexpires[db] = 0;
    return st_err_map(rc);
}

/* A keyref for a key known only by its LMDB key (iterators, expiry):
 * enough to delete it and to invalidate it in the cache. */
static void keyref_from_enc(st_keyref *k, const void *enc, size_t len)
{
    memcpy(k->enc, enc, len);
    k->enc_len = len;
    k->db = k->stored_db = st_codec_get_be16(k->enc);
    k->bound = ST_KEYREF_STORED;
    k->hash = st_codec_get_be64(k->enc + ST_KEY_DB_BYTES);
    k->is_long = len == ST_LMDB_MAXKEY;
    k->name = NULL;
    k->len = 0;
    k->replacing = 0;
}

/* Delete up to ST_CHUNK_KEYS keys of `db`; *more when some remain. */
static int flush_chunk(st_txn *t, unsigned db, int *more)
{
    MDB_cursor *cur;
    MDB_val key, val;
    size_t n = 0;
    int rc;

    *more = 0;
    if ((rc = st_dbmap_resolve(t, db, &db)))
        return rc;
    if ((rc = mdb_cursor_open(t->txn, DBI(t, ST_DBI_KEYS), &cur)))
        return st_err_map(rc);
    for (rc = seek(cur, db, 0, &key, &val); rc == 0;
         rc = seek(cur, db, 0, &key, &val)) {
        if (n++ == ST_CHUNK_KEYS) {
            *more = 1;
            break;
        }
        st_rec r;
        st_keyref k;
        if ((rc = st_codec_rec_decode(val.mv_data, val.mv_size, &r)))
            break;
        keyref_from_enc(&k, key.mv_data, key.mv_size);
        if ((rc = del_found(t, &k, &r)))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

/* Keys in every database the counts record knows, this open's or not. */
static int total_keys(st_txn *t, uint64_t *total)
{
    MDB_val k = { sizeof ST_META_COUNTS - 1, ST_META_COUNTS }, v;
    int rc = mdb_get(t->txn, DBI(t, ST_DBI_META), &k, &v);
    int64_t c;

    *total = 0;
    if (rc == MDB_NOTFOUND)
        rc = 0;
    else if (rc == 0)
        for (size_t off = 0; off + 2 * sizeof c <= v.mv_size;
             off += 2 * sizeof c) {
            memcpy(&c, (const uint8_t *)v.mv_data + off, sizeof c);
            *total += c > 0 ? (uint64_t)c : 0;
        }
    for (unsigned d = 0; d < t->env->nstored; d++)
        *total += (uint64_t)t->dkeys[d];
    return st_err_map(rc);
}

/* Does emptying `db` (< 0: all) empty the whole environment? */
static int empties_all(st_txn *t, int db, int *all)
{
    uint64_t total = 0, mine = 0, exp;
    int rc;

    if ((rc = total_keys(t, &total)) ||
        (db >= 0 && (rc = st_keyspace_dbsize(t, (unsigned)db, &mine, &exp))))
        return rc;
    *all = db < 0 || mine == total;
    return 0;
}

/* Everything at once: drop every database (cache first, see above). */
static int flush_all_in(st_txn *t)
{
    if (t->env->cache)
        shm_cache_flush_all(t->env->cache, st_txn_version(t));
    return drop_all(t);
}

int st_keyspace_flush(st_env *env, int db, uint64_t *version)
{
    st_txn *t;
    int rc, more = 1, all;

    if ((rc = st_txn_begin(env, 1, &t)))
        return rc;
    if ((rc = empties_all(t, db, &all))) {
        st_txn_abort(&t);
        return rc;
    }
    *version = st_txn_version(t);
    if (all) {
        if ((rc = flush_all_in(t))) {
            st_txn_abort(&t);
            return rc;
        }
        return st_txn_commit(&t);
    }
    while (more) {
        if (!t && (rc = st_txn_begin(env, 1, &t)))
            return rc;
        *version = st_txn_version(t);
        if ((rc = flush_chunk(t, (unsigned)db, &more))) {
            st_txn_abort(&t);
            return rc;
        }
        if ((rc = st_txn_commit(&t)))
            return rc;
    }
    return 0;
}

int st_keyspace_flush_txn(st_txn *t, int db)
{
    int rc, more = 1, all;

    if ((rc = empties_all(t, db, &all)))
        return rc;
    if (all)
        return flush_all_in(t);
    while (more && rc == 0)
        rc = flush_chunk(t, (unsigned)db, &more);
    return rc;
}

/* Delete the key behind one expires entry if it is still due then. */
static int expire_entry(st_txn *t, const MDB_val *ek, const MDB_val *ev,
                        int64_t at)
{
    st_keyref k;
    MDB_val key, val;
    st_rec r;
    int rc;

    if (ev->mv_size)
        keyref_from_enc(&k, ev->mv_data, ev->mv_size);
    else
        keyref_from_enc(&k, (const uint8_t *)ek->mv_data + EXP_AT_BYTES,
                        ek->mv_size - EXP_AT_BYTES);
    key.mv_size = k.enc_len;
    key.mv_data = k.enc;
    rc = mdb_get(t->txn, DBI(t, ST_DBI_KEYS), &key, &val);
    if (rc == MDB_NOTFOUND) {
        /* An index entry without its key: drop it. */
        MDB_val ekc = *ek;
        return st_err_map(
            st_mdb_del(t->txn, DBI(t, ST_DBI_EXPIRES), &ekc, NULL));
    }
    if (rc)
        return st_err_map(rc);
    if ((rc = st_codec_rec_decode(val.mv_data, val.mv_size, &r)))
        return rc;
    if (r.expire_at != at) {
        MDB_val ekc = *ek;
        return st_err_map(
            st_mdb_del(t->txn, DBI(t, ST_DBI_EXPIRES), &ekc, NULL));
    }
    note_expired(t, &key, &r);
    return del_found(t, &k, &r);
}

int st_keyspace_expire_due(st_env *env, int64_t now, size_t max, size_t *done,
                           uint64_t *version)
{
    st_txn *t;
    MDB_cursor *cur;
    MDB_val key, val;
    int rc;

    *done = 0;
    if (max > ST_CHUNK_KEYS)
        max = ST_CHUNK_KEYS; /* no transaction grows unbounded */
    if ((rc = st_txn_begin(env, 1, &t)))
        return rc;
    *version = st_txn_version(t);
    if ((rc = mdb_cursor_open(t->txn, DBI(t, ST_DBI_EXPIRES), &cur))) {
        st_txn_abort(&t);
        return st_err_map(rc);
    }
    while (*done < max &&
           (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST)) == 0) {
        int64_t at = (int64_t)st_codec_get_be64(key.mv_data);
        if (at > now)
            break;
        if ((rc = expire_entry(t, &key, &val, at)))
            break;
        (*done)++;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND) {
        st_txn_abort(&t);
        return rc > 0 ? rc : st_err_map(rc);
    }
    if (*done == 0) {
        st_txn_abort(&t);
        return 0;
    }
    return st_txn_commit(&t);
}

int st_keyspace_reap_seen(st_env *env, int64_t now, size_t *done)
{
    st_txn *t;
    int rc;

    *done = 0;
    if (env->nseen == 0)
        return 0;
    if ((rc = st_txn_begin(env, 1, &t)))
        return rc;
    for (unsigned i = 0; i < env->nseen && !rc; i++) {
        MDB_val key = { env->seen[i].len, env->seen[i].enc }, val;
        st_rec r;
        st_keyref k;
        rc = mdb_get(t->txn, DBI(t, ST_DBI_KEYS), &key, &val);
        if (rc == MDB_NOTFOUND) {
            rc = 0;
            continue;
        }
        if (rc || (rc = st_codec_rec_decode(val.mv_data, val.mv_size, &r)))
            break;
        if (!is_expired(&r, now))
            continue;
        keyref_from_enc(&k, env->seen[i].enc, env->seen[i].len);
        note_expired(t, &key, &r);
        if ((rc = del_found(t, &k, &r)) == 0)
            (*done)++;
    }
    env->nseen = 0;
    if (rc) {
        st_txn_abort(&t);
        return rc > 0 ? rc : st_err_map(rc);
    }
    return st_txn_commit(&t);
}
