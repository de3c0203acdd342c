/*
 * st_stream.c - stream entries by id, and the stream's groups, consumers
 * and pending entries, as st_stream.h lays them out.
 */
#include "storage/st_stream.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES(t) ((t)->env->dbi[ST_DBI_STREAMS])
#define GROUPS(t) ((t)->env->dbi[ST_DBI_SGROUPS])

#define ID_BYTES 16 /* ms, seq */
#define ENTRY_KEY_BYTES (ST_COLL_ID_BYTES + ID_BYTES)
#define NUM_BYTES 8
#define LEN_BYTES 4 /* of each string in an entry's value */
#define ORD_BYTES 8 /* the entry's ordinal, before them */
#define VAL_HEAD (ORD_BYTES + LEN_BYTES)
/* A trim deleting at most this many entries deletes them itself; more
 * are handed to the lazy freer whole. */
#define TRIM_INLINE_MAX 1000

/* Kinds of the stream-groups database's keys, after the collection id. */
#define KIND_META 'm'
#define KIND_GROUP 'g'
#define KIND_CONSUMER 'c'
#define KIND_CNAME 'n'
#define KIND_PEL 'p'
#define KIND_CPEL 'q'

/*
 * A group or consumer name longer than ST_STREAM_NAME_INLINE is keyed by
 * its first ST_STREAM_NAME_INLINE bytes, a 128-bit hash of the whole and
 * a probe byte; its record is followed by the full name, which lookups
 * compare (two names with one hash take different probes).
 */
#define NAME_HASH_BYTES 16
#define NAME_PROBES 256
#define NAME_LONG_TAIL (NAME_HASH_BYTES + 1)
#define NAME_SEED_A 0x73747265616d6e61ull /* "streamna" */
#define NAME_SEED_B 0x6d65686173686232ull /* "mehashb2" */

#define KEY_MAX                                                                \
    (ST_COLL_ID_BYTES + 1 + 2 * NUM_BYTES + ID_BYTES + ST_STREAM_NAME_INLINE + \
     NAME_LONG_TAIL)

int st_stream_id_cmp(const st_stream_id *a, const st_stream_id *b)
{
    if (a->ms != b->ms)
        return a->ms < b->ms ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static void put_id(uint8_t *p, const st_stream_id *id)
{
    st_codec_put_be64(p, id->ms);
    st_codec_put_be64(p + NUM_BYTES, id->seq);
}

static void get_id(const uint8_t *p, st_stream_id *id)
{
    id->ms = st_codec_get_be64(p);
    id->seq = st_codec_get_be64(p + NUM_BYTES);
}

static void entry_key(uint8_t *buf, uint64_t cid, const st_stream_id *id)
{
    st_codec_put_be64(buf, cid);
    put_id(buf + ST_COLL_ID_BYTES, id);
}

/*
 * The floor: entries below it are dead, handed to the lazy freer by a
 * trim (st_coll_detach_below) and skipped by every read until it deletes
 * them. Kept in the key record (o->c.head, o->c.tail), so reads find it
 * without a lookup; 0-0 for a stream never trimmed that way.
 */
static st_stream_id floor_of(const st_obj *o)
{
    st_stream_id f = { (uint64_t)o->c.head, (uint64_t)o->c.tail };
    return f;
}

static void floor_set(st_obj *o, const st_stream_id *f)
{
    o->c.head = (int64_t)f->ms;
    o->c.tail = (int64_t)f->seq;
}

/* Is `id` below the floor (dead)? */
static int below_floor(const st_obj *o, const st_stream_id *id)
{
    st_stream_id f = floor_of(o);
    return st_stream_id_cmp(id, &f) < 0;
}

/* Move the floor of o to `to`, handing what is below it to the freer. */
static int floor_move(st_txn *t, st_obj *o, const st_stream_id *to)
{
    st_stream_id from = floor_of(o);
    uint8_t old[ID_BYTES], below[ID_BYTES];
    int rc;

    put_id(old, &from);
    put_id(below, to);
    rc = st_coll_detach_below(t, o->c.id, ST_TYPE_STREAM, below,
                              from.ms || from.seq ? old : NULL, ID_BYTES);
    if (rc == 0)
        floor_set(o, to);
    return rc;
}

/*
 * A key of the groups database: collection id, kind, then up to two
 * numbers (nnums), an optional id and an optional name. Returns its size.
 */
static size_t gkey(uint8_t *buf, uint64_t cid, int kind, int nnums, uint64_t a,
                   uint64_t b, const st_stream_id *id, const void *name,
                   size_t len)
{
    size_t n = 0;

    st_codec_put_be64(buf, cid);
    n += ST_COLL_ID_BYTES;
    buf[n++] = (uint8_t)kind;
    if (nnums > 0) {
        st_codec_put_be64(buf + n, a);
        n += NUM_BYTES;
    }
    if (nnums > 1) {
        st_codec_put_be64(buf + n, b);
        n += NUM_BYTES;
    }
    if (id) {
        put_id(buf + n, id);
        n += ID_BYTES;
    }
    if (len)
        memcpy(buf + n, name, len);
    return n + len;
}

/* mdb_get of a fixed-size struct from the groups database. */
static int get_fixed(st_txn *t, const uint8_t *key, size_t klen, void *out,
                     size_t size)
{
    MDB_val k = { klen, (void *)key }, v;
    int rc = mdb_get(t->txn, GROUPS(t), &k, &v);

    if (rc)
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    if (v.mv_size != size)
        return ST_ECORRUPT;
    memcpy(out, v.mv_data, size);
    return 0;
}

static int put_raw(st_txn *t, const uint8_t *key, size_t klen, const void *val,
                   size_t size)
{
    MDB_val k = { klen, (void *)key }, v = { size, (void *)val };

    return st_err_map(st_mdb_put(t->txn, GROUPS(t), &k, &v, 0));
}

static int del_raw(st_txn *t, const uint8_t *key, size_t klen)
{
    MDB_val k = { klen, (void *)key };
    int rc = st_mdb_del(t->txn, GROUPS(t), &k, NULL);

    return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
}

/*
 * The state of a stream is read and written through its transaction's
 * one-stream cache: a pipeline of XADDs to one stream, committed as one
 * transaction (the worker's group commit), writes it once, at the commit
 * (st_txn_settle), instead of once per entry. Another stream's state
 * takes the slot after this one's is written back.
 */
_Static_assert(sizeof(st_stream_meta) <= sizeof(((st_txn *)0)->smeta),
               "the transaction's state cache holds a stream's state");

/* The state's size before last_ordinal was added to it. */
#define META_OLD_BYTES offsetof(st_stream_meta, last_ordinal)

uint64_t st_stream_next_ordinal(const st_stream_meta *m)
{
    return (m->last_ordinal ? m->last_ordinal : m->entries_added) + 1;
}

/* Write the cached state back, if changed (the deferred write-back). */
static int meta_write_back(st_txn *t)
{
    uint8_t key[KEY_MAX];
    size_t klen;
    int rc;

    if (!t->smeta_dirty)
        return 0;
    klen = gkey(key, t->smeta_cid, KIND_META, 0, 0, 0, NULL, NULL, 0);
    if ((rc = put_raw(t, key, klen, t->smeta, sizeof(st_stream_meta))))
        return rc;
    t->smeta_dirty = 0;
    return 0;
}

/* Make the slot free for collection cid: write back another's state. */
static int meta_slot_for(st_txn *t, uint64_t cid)
{
    int rc;

    if (t->smeta_cid == cid || !t->smeta_dirty)
        return 0;
    if ((rc = meta_write_back(t)))
        return rc;
    t->deferred = NULL;
    return 0;
}

int st_stream_meta_get(st_txn *t, const st_obj *o, st_stream_meta *m)
{
    uint8_t key[KEY_MAX];
    size_t klen;
    int rc;

    if (t->write && t->smeta_cid == o->c.id) {
        memcpy(m, t->smeta, sizeof *m);
        return 0;
    }
    klen = gkey(key, o->c.id, KIND_META, 0, 0, 0, NULL, NULL, 0);
    memset(m, 0, sizeof *m);
    rc = get_fixed(t, key, klen, m, sizeof *m);
    if (rc == ST_ECORRUPT) /* maybe the shorter state of before */
        rc = get_fixed(t, key, klen, m, META_OLD_BYTES);
    if (rc == ST_ENOTFOUND) {
        memset(m, 0, sizeof *m);
        rc = 0;
    }
    if (rc || !t->write)
        return rc;
    if ((rc = meta_slot_for(t, o->c.id)))
        return rc;
    t->smeta_cid = o->c.id;
    t->smeta_dirty = 0;
    memcpy(t->smeta, m, sizeof *m);
    return 0;
}

int st_stream_meta_put(st_txn *t, const st_obj *o, const st_stream_meta *m)
{
    int rc;

    if ((rc = meta_slot_for(t, o->c.id)))
        return rc;
    t->smeta_cid = o->c.id;
    memcpy(t->smeta, m, sizeof *m);
    t->smeta_dirty = 1;
    t->deferred = meta_write_back;
    return 0;
}

/* ---- entries ---- */

/*
 * An id below the floor is added (an empty stream whose last id XSETID
 * moved back): delete the dead entries at and above it now and lower the
 * floor to it, so the freer leaves the new entry alone. O(those entries);
 * no ordinary append comes here.
 */
static int floor_lower(st_txn *t, st_obj *o, const st_stream_id *id)
{
    st_stream_id f = floor_of(o);
    uint8_t kb[ENTRY_KEY_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof kb, kb }, v;
    int rc;

    if ((rc = mdb_cursor_open(t->txn, ENTRIES(t), &cur)))
        return st_err_map(rc);
    entry_key(kb, o->c.id, id);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
        st_stream_id at;
        if (k.mv_size != ENTRY_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        get_id((const uint8_t *)k.mv_data + ST_COLL_ID_BYTES, &at);
        if (st_stream_id_cmp(&at, &f) >= 0)
            break;
        if ((rc = st_mdb_cursor_del(cur, 0)))
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND && rc != EINVAL)
        return st_err_map(rc);
    return floor_move(t, o, id);
}

int st_stream_add(st_txn *t, st_obj *o, const st_stream_id *id,
                  uint64_t ordinal, size_t n, st_stream_field_fn *field,
                  void *ctx)
{
    uint8_t kb[ENTRY_KEY_BYTES], *p;
    MDB_val k = { sizeof kb, kb }, v;
    size_t size = VAL_HEAD;
    uint32_t u;
    int rc;

    for (size_t i = 0; i < n; i++) {
        const uint8_t *s;
        size_t len;
        field(ctx, i, &s, &len);
        if (len > UINT32_MAX)
            return E2BIG;
        size += LEN_BYTES + len;
    }
    if (below_floor(o, id) && (rc = floor_lower(t, o, id)))
        return rc;
    entry_key(kb, o->c.id, id);
    v.mv_size = size;
    v.mv_data = NULL;
    /* The newest stream's entries are the database's last keys: appending
     * fills pages instead of splitting them in half. Any other stream's
     * append is an ordinary put. */
    rc = st_mdb_put(t->txn, ENTRIES(t), &k, &v, MDB_RESERVE | MDB_APPEND);
    if (rc == MDB_KEYEXIST) {
        v.mv_size = size;
        v.mv_data = NULL;
        rc = st_mdb_put(t->txn, ENTRIES(t), &k, &v, MDB_RESERVE);
    }
    if (rc)
        return st_err_map(rc);
    p = v.mv_data;
    memcpy(p, &ordinal, ORD_BYTES);
    p += ORD_BYTES;
    u = (uint32_t)n;
    memcpy(p, &u, LEN_BYTES);
    p += LEN_BYTES;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s;
        size_t len;
        field(ctx, i, &s, &len);
        u = (uint32_t)len;
        memcpy(p, &u, LEN_BYTES);
        p += LEN_BYTES;
        if (len)
            memcpy(p, s, len);
        p += len;
    }
    o->c.card++;
    return 0;
}

size_t st_stream_value_count(const uint8_t *val, size_t len)
{
    uint32_t n;

    if (len < VAL_HEAD)
        return 0;
    memcpy(&n, val + ORD_BYTES, LEN_BYTES);
    return n;
}

void st_stream_value_init(st_stream_value *v, const uint8_t *val, size_t len)
{
    v->p = len >= VAL_HEAD ? val + VAL_HEAD : val + len;
    v->end = val + len;
}

int st_stream_value_next(st_stream_value *v, const uint8_t **p, size_t *len)
{
    uint32_t n;

    if ((size_t)(v->end - v->p) < LEN_BYTES)
        return 0;
    memcpy(&n, v->p, LEN_BYTES);
    if ((size_t)(v->end - v->p) - LEN_BYTES < n)
        return 0;
    *p = v->p + LEN_BYTES;
    *len = n;
    v->p += LEN_BYTES + n;
    return 1;
}

int st_stream_range(st_txn *t, const st_obj *o, const st_stream_id *start,
                    const st_stream_id *end, int rev, uint64_t count,
                    st_stream_entry_fn *fn, void *ctx)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof kb, kb }, v;
    uint64_t seen = 0;
    st_stream_id from = floor_of(o);
    int rc;

    if (st_stream_id_cmp(start, &from) > 0)
        from = *start;
    start = &from; /* nothing below the floor is read */
    if (st_stream_id_cmp(start, end) > 0)
        return 0;
    if ((rc = mdb_cursor_open(t->txn, ENTRIES(t), &cur)))
        return st_err_map(rc);
    entry_key(kb, o->c.id, rev ? end : start);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rev) {
        /* SET_RANGE lands on the first key >= end: step back unless it is
         * end itself; past the last key, start from the database's last. */
        if (rc == MDB_NOTFOUND)
            rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
        else if (rc == 0 && memcmp(k.mv_data, kb, sizeof kb) != 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    }
    for (; rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, rev ? MDB_PREV : MDB_NEXT)) {
        st_stream_id id;
        if (k.mv_size != ENTRY_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        get_id((const uint8_t *)k.mv_data + ST_COLL_ID_BYTES, &id);
        if (rev ? st_stream_id_cmp(&id, start) < 0
                : st_stream_id_cmp(&id, end) > 0)
            break;
        if (rev && st_stream_id_cmp(&id, end) > 0)
            continue;
        if (fn(ctx, &id, v.mv_data, v.mv_size))
            break;
        if (count && ++seen == count)
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

int st_stream_get(st_txn *t, const st_obj *o, const st_stream_id *id,
                  const uint8_t **val, size_t *len)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    MDB_val k = { sizeof kb, kb }, v;
    int rc;

    if (below_floor(o, id))
        return ST_ENOTFOUND;
    entry_key(kb, o->c.id, id);
    if ((rc = mdb_get(t->txn, ENTRIES(t), &k, &v)))
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    *val = v.mv_data;
    *len = v.mv_size;
    return 0;
}

/* The walk callback of st_stream_edge: keep the id, stop. */
static int edge_fn(void *ctx, const st_stream_id *id, const uint8_t *val,
                   size_t len)
{
    (void)val;
    (void)len;
    *(st_stream_id *)ctx = *id;
    return 1;
}

int st_stream_edge(st_txn *t, const st_obj *o, int last, st_stream_id *id)
{
    const st_stream_id lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX };
    st_stream_id found = { 0, 0 };
    int rc;

    if (o->c.card == 0)
        return ST_ENOTFOUND;
    if ((rc = st_stream_range(t, o, &lo, &hi, last, 1, edge_fn, &found)))
        return rc;
    *id = found;
    return 0;
}

int st_stream_del(st_txn *t, st_obj *o, const st_stream_id *id)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    MDB_val k = { sizeof kb, kb };
    int rc;

    if (below_floor(o, id))
        return ST_ENOTFOUND;
    entry_key(kb, o->c.id, id);
    if ((rc = st_mdb_del(t->txn, ENTRIES(t), &k, NULL)))
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    o->c.card--;
    return 0;
}

static uint64_t ordinal_of(const MDB_val *v)
{
    uint64_t ord = 0;

    if (v->mv_size >= ORD_BYTES)
        memcpy(&ord, v->mv_data, ORD_BYTES);
    return ord;
}

/*
 * The node the cursor's entry starts (approximate trimming): *count gets
 * its live entries and *last its last id; the cursor is left on the
 * entry after the node (MDB_NOTFOUND past the database's end). O(node).
 */
static int node_span(MDB_cursor *cur, uint64_t cid, uint64_t node,
                     uint64_t *count, st_stream_id *last)
{
    MDB_val k, v;
    uint64_t end;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);

    if (rc)
        return rc;
    end = (ordinal_of(&v) ? (ordinal_of(&v) - 1) / node + 1 : 1) * node;
    *count = 0;
    while (rc == 0 && k.mv_size == ENTRY_KEY_BYTES &&
           st_codec_get_be64(k.mv_data) == cid && ordinal_of(&v) <= end) {
        get_id((const uint8_t *)k.mv_data + ST_COLL_ID_BYTES, last);
        (*count)++;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    return rc;
}

/*
 * Which head entries a trim takes (st_stream_trim's rules), read only:
 * *n gets their count and *last the last one's id. O(n + node) reads.
 */
static int trim_count(st_txn *t, const st_obj *o, int by_minid, uint64_t maxlen,
                      const st_stream_id *minid, uint64_t node, uint64_t limit,
                      uint64_t *n, st_stream_id *last)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    st_stream_id from = floor_of(o);
    MDB_cursor *cur;
    MDB_val k = { sizeof kb, kb }, v;
    uint64_t left = o->c.card; /* entries left after those taken */
    int rc;

    *n = 0;
    if ((rc = mdb_cursor_open(t->txn, ENTRIES(t), &cur)))
        return st_err_map(rc);
    entry_key(kb, o->c.id, &from);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && left > 0) {
        st_stream_id id;
        if (k.mv_size != ENTRY_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        if (node) {
            uint64_t cnt = 0;
            st_stream_id end = { 0, 0 };
            if (!by_minid && left <= maxlen)
                break;
            rc = node_span(cur, o->c.id, node, &cnt, &end);
            if (rc && rc != MDB_NOTFOUND)
                break;
            if (limit && *n + cnt > limit)
                break;
            if (by_minid ? st_stream_id_cmp(&end, minid) >= 0
                         : left - cnt < maxlen)
                break;
            *n += cnt;
            left -= cnt;
            *last = end;
            continue;
        }
        if (limit && *n == limit)
            break;
        get_id((const uint8_t *)k.mv_data + ST_COLL_ID_BYTES, &id);
        if (by_minid ? st_stream_id_cmp(&id, minid) >= 0 : left <= maxlen)
            break;
        (*n)++;
        left--;
        *last = id;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

/* Delete the first n live entries one by one. */
static int trim_inline(st_txn *t, st_obj *o, uint64_t n)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    st_stream_id from = floor_of(o);
    MDB_cursor *cur;
    MDB_val k = { sizeof kb, kb }, v;
    int rc;

    if ((rc = mdb_cursor_open(t->txn, ENTRIES(t), &cur)))
        return st_err_map(rc);
    entry_key(kb, o->c.id, &from);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && n > 0) {
        if (k.mv_size != ENTRY_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        if ((rc = st_mdb_cursor_del(cur, 0)))
            break;
        o->c.card--;
        n--;
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND && rc != EINVAL)
        return st_err_map(rc);
    return n ? ST_ECORRUPT : 0;
}

/* The node an entry belongs to, by its ordinal (as node_span groups). */
static uint64_t node_of(const MDB_val *v, uint64_t node)
{
    uint64_t ord = ordinal_of(v);
    return ord ? (ord - 1) / node : 0;
}

/*
 * trim_count for MAXLEN without a LIMIT, from the tail: what is kept is
 * the last maxlen entries (exact) or, by nodes, the suffix from the start
 * of the node holding the maxlen-th entry from the end (removing that
 * node would leave fewer; every node before it can go). Then the count
 * taken is card minus what is kept. O(maxlen + node) reads, for a trim
 * that keeps fewer entries than it takes.
 */
static int trim_count_tail(st_txn *t, const st_obj *o, uint64_t maxlen,
                           uint64_t node, uint64_t *n, st_stream_id *last)
{
    uint8_t kb[ENTRY_KEY_BYTES];
    const st_stream_id top = { UINT64_MAX, UINT64_MAX };
    MDB_cursor *cur;
    MDB_val k = { sizeof kb, kb }, v;
    uint64_t kept = 0, at_node = 0;
    int rc;

    *n = 0;
    if ((rc = mdb_cursor_open(t->txn, ENTRIES(t), &cur)))
        return st_err_map(rc);
    entry_key(kb, o->c.id, &top);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    else if (rc == 0 && memcmp(k.mv_data, kb, sizeof kb) != 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)) {
        st_stream_id id;
        if (k.mv_size != ENTRY_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        get_id((const uint8_t *)k.mv_data + ST_COLL_ID_BYTES, &id);
        if (below_floor(o, &id))
            break;
        if (kept >= maxlen &&
            (!node || kept == 0 || node_of(&v, node) != at_node)) {
            /* The first entry not kept: the last one taken. */
            *last = id;
            *n = o->c.card - kept;
            break;
        }
        if (node && kept + 1 == maxlen)
            at_node = node_of(&v, node);
        kept++;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    return kept + *n == o->c.card || *n == 0 ? 0 : ST_ECORRUPT;
}

int st_stream_trim(st_txn *t, st_obj *o, int by_minid, uint64_t maxlen,
                   const st_stream_id *minid, uint64_t node, uint64_t limit,
                   uint64_t *deleted)
{
    st_stream_id last = { 0, 0 };
    uint64_t n;
    int rc;

    *deleted = 0;
    if (o->c.card == 0 || (!by_minid && o->c.card <= maxlen))
        return 0;
    /* Count from the end with fewer entries to read. */
    if (!by_minid && !limit && maxlen < o->c.card - maxlen)
        rc = trim_count_tail(t, o, maxlen, node, &n, &last);
    else
        rc = trim_count(t, o, by_minid, maxlen, minid, node, limit, &n, &last);
    if (rc)
        return rc;
    if (n == 0)
        return 0;
    /* A few go at once (trimming as you append); more move the floor
     * past them and the reaper deletes them in its chunks, so the
     * command's writes and its transaction stay small however many
     * entries it takes. The greatest id has no id above it to be a
     * floor: a trim through it deletes. */
    if (n <= TRIM_INLINE_MAX ||
        (last.ms == UINT64_MAX && last.seq == UINT64_MAX)) {
        rc = trim_inline(t, o, n);
    } else {
        st_stream_id to = last;
        if (++to.seq == 0)
            to.ms++;
        if ((rc = floor_move(t, o, &to)) == 0)
            o->c.card -= n;
    }
    if (rc == 0)
        *deleted = n;
    return rc;
}

/* ---- groups, consumers, pending entries ---- */

/*
 * Walk the groups-database keys that start with prefix[0..plen), calling
 * `fn` with the rest of each key and its value; a non-zero return stops.
 * With `del` each key is deleted after fn saw it.
 */
typedef int prefix_fn(void *ctx, const uint8_t *rest, size_t rlen,
                      const uint8_t *val, size_t vlen);

static int walk_prefix(st_txn *t, const uint8_t *prefix, size_t plen,
                       const uint8_t *from, size_t flen, int del, prefix_fn *fn,
                       void *ctx)
{
    uint8_t kb[KEY_MAX];
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    memcpy(kb, from ? from : prefix, from ? flen : plen);
    k.mv_size = from ? flen : plen;
    k.mv_data = kb;
    if ((rc = mdb_cursor_open(t->txn, GROUPS(t), &cur)))
        return st_err_map(rc);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
            break;
        if (fn && fn(ctx, (const uint8_t *)k.mv_data + plen, k.mv_size - plen,
                     v.mv_data, v.mv_size))
            break;
        if (del) {
            if ((rc = st_mdb_cursor_del(cur, 0)))
                break;
            rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
        } else {
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : st_err_map(rc);
}

/*
 * Named records (groups, consumers): the key is `head` (the collection
 * id, the kind and the group number for a consumer) then the name, or
 * for a long name its digest form; the value is the fixed-size record,
 * followed by the full name in the digest form.
 */

/* Key of `name` after head[0..hlen): inline, or the digest form without
 * its probe byte (the stem). Returns the size written. */
static size_t name_stem(uint8_t *key, size_t hlen, const void *name, size_t len)
{
    if (len <= ST_STREAM_NAME_INLINE) {
        if (len)
            memcpy(key + hlen, name, len);
        return hlen + len;
    }
    memcpy(key + hlen, name, ST_STREAM_NAME_INLINE);
    hlen += ST_STREAM_NAME_INLINE;
    st_codec_put_be64(key + hlen, st_codec_hash64(name, len, NAME_SEED_A));
    st_codec_put_be64(key + hlen + NUM_BYTES,
                      st_codec_hash64(name, len, NAME_SEED_B));
    return hlen + NAME_HASH_BYTES;
}

/* Does the digest-form value `v` (a record of `size` bytes, then the
 * name) hold `name`? */
static int long_name_is(const MDB_val *v, size_t size, const void *name,
                        size_t len)
{
    return v->mv_size == size + len &&
           memcmp((const uint8_t *)v->mv_data + size, name, len) == 0;
}

/*
 * Find the record of `name` under head[0..hlen) in `key`: 0 with *klen
 * its key's size and *v its value (borrowed), ST_ENOTFOUND with *klen
 * the key to write it under, ST_ECOLLISION when every probe of its
 * digest holds another name, or a storage error.
 */
static int named_find(st_txn *t, uint8_t *key, size_t hlen, const void *name,
                      size_t len, size_t size, size_t *klen, MDB_val *v)
{
    MDB_cursor *cur;
    MDB_val k;
    size_t stem = name_stem(key, hlen, name, len);
    int rc, free_probe = -1;

    if (len <= ST_STREAM_NAME_INLINE) {
        k.mv_size = *klen = stem;
        k.mv_data = key;
        rc = mdb_get(t->txn, GROUPS(t), &k, v);
        if (rc)
            return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
        return v->mv_size == size ? 0 : ST_ECORRUPT;
    }
    /* The probes of one digest are adjacent keys: walk them in order. */
    key[stem] = 0;
    *klen = stem + 1;
    k.mv_size = *klen;
    k.mv_data = key;
    if ((rc = mdb_cursor_open(t->txn, GROUPS(t), &cur)))
        return st_err_map(rc);
    rc = mdb_cursor_get(cur, &k, v, MDB_SET_RANGE);
    for (int probe = 0; probe < NAME_PROBES && (rc == 0 || rc == MDB_NOTFOUND);
         probe++) {
        int stem_here = rc == 0 && k.mv_size == stem + 1 &&
                        memcmp(k.mv_data, key, stem) == 0;
        if (stem_here && ((const uint8_t *)k.mv_data)[stem] == probe) {
            if (long_name_is(v, size, name, len)) {
                key[stem] = (uint8_t)probe;
                mdb_cursor_close(cur);
                return 0;
            }
            rc = mdb_cursor_get(cur, &k, v, MDB_NEXT);
            continue;
        }
        if (free_probe < 0)
            free_probe = probe;
        if (!stem_here)
            break; /* no later probe of this digest is taken */
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    if (free_probe < 0)
        return ST_ECOLLISION;
    key[stem] = (uint8_t)free_probe;
    return ST_ENOTFOUND;
}

/* Copy out the record of `name`: 0, ST_ENOTFOUND or a storage error. */
static int named_get(st_txn *t, uint8_t *key, size_t hlen, const void *name,
                     size_t len, void *out, size_t size)
{
    MDB_val v;
    size_t klen;
    int rc = named_find(t, key, hlen, name, len, size, &klen, &v);

    if (rc == ST_ECOLLISION)
        return ST_ENOTFOUND;
    if (rc)
        return rc;
    memcpy(out, v.mv_data, size);
    return 0;
}

/* Create or replace the record of `name`. */
static int named_put(st_txn *t, uint8_t *key, size_t hlen, const void *name,
                     size_t len, const void *rec, size_t size)
{
    MDB_val k, v;
    size_t klen;
    int rc = named_find(t, key, hlen, name, len, size, &klen, &v);

    if (rc && rc != ST_ENOTFOUND)
        return rc;
    if (len <= ST_STREAM_NAME_INLINE)
        return put_raw(t, key, klen, rec, size);
    k.mv_size = klen;
    k.mv_data = key;
    v.mv_size = size + len;
    v.mv_data = NULL;
    if ((rc = st_mdb_put(t->txn, GROUPS(t), &k, &v, MDB_RESERVE)))
        return st_err_map(rc);
    memcpy(v.mv_data, rec, size);
    memcpy((uint8_t *)v.mv_data + size, name, len);
    return 0;
}

/* Delete the record of `name`: 0, ST_ENOTFOUND or a storage error. */
static int named_del(st_txn *t, uint8_t *key, size_t hlen, const void *name,
                     size_t len, size_t size)
{
    MDB_val v;
    size_t klen;
    int rc = named_find(t, key, hlen, name, len, size, &klen, &v);

    if (rc == ST_ECOLLISION)
        return ST_ENOTFOUND;
    return rc ? rc : del_raw(t, key, klen);
}

typedef int named_fn(void *ctx, const uint8_t *name, size_t len,
                     const void *rec);

/* One digest-form record held while its run is put in name order. */
typedef struct named_item {
    uint8_t *val; /* the name, then the record */
    size_t len;   /* of the name */
} named_item;

/* Name order: bytes, then the shorter first (Redis's radix tree order). */
static int named_item_cmp(const void *pa, const void *pb)
{
    const named_item *a = pa, *b = pb;
    int c = memcmp(a->val, b->val, a->len < b->len ? a->len : b->len);

    if (c)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

struct named_walk {
    const uint8_t *prefix;
    size_t plen, size;
    named_fn *fn;
    void *ctx;
    named_item *run; /* digest-form names sharing their first bytes */
    size_t n, cap;
    uint8_t *rec; /* a record buffer for the run's calls */
    int rc;
};

/* Hand the run to fn in name order and empty it: non-zero stops. */
static int run_flush(struct named_walk *w)
{
    int stop = 0;

    qsort(w->run, w->n, sizeof *w->run, named_item_cmp);
    for (size_t i = 0; i < w->n; i++) {
        if (!stop) {
            memcpy(w->rec, w->run[i].val + w->run[i].len, w->size);
            stop = w->fn(w->ctx, w->run[i].val, w->run[i].len, w->rec);
        }
        free(w->run[i].val);
    }
    w->n = 0;
    return stop;
}

static int run_add(struct named_walk *w, const uint8_t *val, size_t vlen)
{
    size_t len = vlen - w->size;
    uint8_t *copy;

    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4;
        named_item *v = realloc(w->run, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        w->run = v;
        w->cap = cap;
    }
    if (!(copy = malloc(vlen)))
        return ENOMEM;
    memcpy(copy, val + w->size, len);
    memcpy(copy + len, val, w->size);
    w->run[w->n].val = copy;
    w->run[w->n++].len = len;
    return 0;
}

/* The walk_prefix step of named_walk. Inline names come in key order,
 * which is name order; digest-form names sort after every inline name
 * that is a prefix of theirs and before every other name above their
 * inline part, so only a run sharing that part needs sorting. */
static int named_step(void *ctx, const uint8_t *rest, size_t rlen,
                      const uint8_t *val, size_t vlen)
{
    struct named_walk *w = ctx;
    int is_long = rlen == ST_STREAM_NAME_INLINE + NAME_LONG_TAIL;

    if (w->n &&
        (!is_long || memcmp(rest, w->run[0].val, ST_STREAM_NAME_INLINE) != 0))
        if (run_flush(w))
            return 1;
    if (is_long) {
        if (vlen <= w->size + ST_STREAM_NAME_INLINE)
            return 0;
        if ((w->rc = run_add(w, val, vlen)))
            return 1;
        return 0;
    }
    if (rlen > ST_STREAM_NAME_INLINE || vlen != w->size)
        return 0;
    memcpy(w->rec, val, w->size);
    return w->fn(w->ctx, rest, rlen, w->rec);
}

/* Every record under prefix[0..plen) in name order. */
static int named_walk(st_txn *t, const uint8_t *prefix, size_t plen,
                      size_t size, named_fn *fn, void *ctx, void *rec)
{
    struct named_walk w = { prefix, plen, size, fn, ctx, NULL, 0, 0, rec, 0 };
    int rc = walk_prefix(t, prefix, plen, NULL, 0, 0, named_step, &w);

    if (!rc && !w.rc && w.n)
        run_flush(&w);
    for (size_t i = 0; i < w.n; i++)
        free(w.run[i].val);
    free(w.run);
    return rc ? rc : w.rc;
}

int st_stream_group_get(st_txn *t, const st_obj *o, const void *name,
                        size_t len, st_stream_group *g)
{
    uint8_t key[KEY_MAX];
    size_t hlen = gkey(key, o->c.id, KIND_GROUP, 0, 0, 0, NULL, NULL, 0);

    return named_get(t, key, hlen, name, len, g, sizeof *g);
}

int st_stream_group_put(st_txn *t, const st_obj *o, const void *name,
                        size_t len, const st_stream_group *g)
{
    uint8_t key[KEY_MAX];
    size_t hlen = gkey(key, o->c.id, KIND_GROUP, 0, 0, 0, NULL, NULL, 0);

    return named_put(t, key, hlen, name, len, g, sizeof *g);
}

int st_stream_group_del(st_txn *t, const st_obj *o, const void *name,
                        size_t len)
{
    static const int kinds[] = { KIND_CONSUMER, KIND_CNAME, KIND_PEL,
                                 KIND_CPEL };
    uint8_t key[KEY_MAX];
    st_stream_group g;
    int rc;

    if ((rc = st_stream_group_get(t, o, name, len, &g)))
        return rc;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t klen = gkey(key, o->c.id, kinds[i], 1, g.num, 0, NULL, NULL, 0);
        if ((rc = walk_prefix(t, key, klen, NULL, 0, 1, NULL, NULL)))
            return rc;
    }
    return named_del(t, key,
                     gkey(key, o->c.id, KIND_GROUP, 0, 0, 0, NULL, NULL, 0),
                     name, len, sizeof g);
}

struct group_walk {
    st_stream_group_fn *fn;
    void *ctx;
};

static int group_step(void *ctx, const uint8_t *name, size_t len,
                      const void *rec)
{
    struct group_walk *w = ctx;

    return w->fn(w->ctx, name, len, rec);
}

int st_stream_groups(st_txn *t, const st_obj *o, st_stream_group_fn *fn,
                     void *ctx)
{
    uint8_t key[KEY_MAX];
    size_t klen = gkey(key, o->c.id, KIND_GROUP, 0, 0, 0, NULL, NULL, 0);
    struct group_walk w = { fn, ctx };
    st_stream_group g;

    return named_walk(t, key, klen, sizeof g, group_step, &w, &g);
}

int st_stream_consumer_get(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len,
                           st_stream_consumer *cons)
{
    uint8_t key[KEY_MAX];
    size_t hlen = gkey(key, o->c.id, KIND_CONSUMER, 1, gnum, 0, NULL, NULL, 0);

    return named_get(t, key, hlen, name, len, cons, sizeof *cons);
}

int st_stream_consumer_put(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len,
                           const st_stream_consumer *cons)
{
    uint8_t key[KEY_MAX];
    size_t hlen = gkey(key, o->c.id, KIND_CONSUMER, 1, gnum, 0, NULL, NULL, 0);
    int rc = named_put(t, key, hlen, name, len, cons, sizeof *cons);

    if (rc)
        return rc;
    return put_raw(t, key,
                   gkey(key, o->c.id, KIND_CNAME, 2, gnum, cons->num, NULL,
                        NULL, 0),
                   name, len);
}

int st_stream_consumer_del(st_txn *t, const st_obj *o, uint64_t gnum,
                           const void *name, size_t len, uint64_t cnum)
{
    uint8_t key[KEY_MAX];
    int rc;

    rc = del_raw(t, key,
                 gkey(key, o->c.id, KIND_CNAME, 2, gnum, cnum, NULL, NULL, 0));
    if (rc && rc != ST_ENOTFOUND)
        return rc;
    return named_del(t, key,
                     gkey(key, o->c.id, KIND_CONSUMER, 1, gnum, 0, NULL, NULL,
                          0),
                     name, len, sizeof(st_stream_consumer));
}

int st_stream_consumer_name(st_txn *t, const st_obj *o, uint64_t gnum,
                            uint64_t cnum, const uint8_t **name, size_t *len)
{
    uint8_t key[KEY_MAX];
    MDB_val k, v;
    int rc;

    k.mv_size = gkey(key, o->c.id, KIND_CNAME, 2, gnum, cnum, NULL, NULL, 0);
    k.mv_data = key;
    if ((rc = mdb_get(t->txn, GROUPS(t), &k, &v)))
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    *name = v.mv_data;
    *len = v.mv_size;
    return 0;
}

struct consumer_walk {
    st_stream_consumer_fn *fn;
    void *ctx;
};

static int consumer_step(void *ctx, const uint8_t *name, size_t len,
                         const void *rec)
{
    struct consumer_walk *w = ctx;

    return w->fn(w->ctx, name, len, rec);
}

int st_stream_consumers(st_txn *t, const st_obj *o, uint64_t gnum,
                        st_stream_consumer_fn *fn, void *ctx)
{
    uint8_t key[KEY_MAX];
    size_t klen = gkey(key, o->c.id, KIND_CONSUMER, 1, gnum, 0, NULL, NULL, 0);
    struct consumer_walk w = { fn, ctx };
    st_stream_consumer cons;

    return named_walk(t, key, klen, sizeof cons, consumer_step, &w, &cons);
}

int st_stream_pel_get(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, st_stream_pel *p)
{
    uint8_t key[KEY_MAX];

    return get_fixed(t, key,
                     gkey(key, o->c.id, KIND_PEL, 1, gnum, 0, id, NULL, 0), p,
                     sizeof *p);
}

int st_stream_pel_put(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, const st_stream_pel *p,
                      uint64_t old_consumer)
{
    uint8_t key[KEY_MAX];
    int rc;

    rc = put_raw(t, key, gkey(key, o->c.id, KIND_PEL, 1, gnum, 0, id, NULL, 0),
                 p, sizeof *p);
    if (rc || old_consumer == p->consumer)
        return rc;
    if (old_consumer != UINT64_MAX) {
        rc = del_raw(t, key,
                     gkey(key, o->c.id, KIND_CPEL, 2, gnum, old_consumer, id,
                          NULL, 0));
        if (rc && rc != ST_ENOTFOUND)
            return rc;
    }
    return put_raw(t, key,
                   gkey(key, o->c.id, KIND_CPEL, 2, gnum, p->consumer, id, NULL,
                        0),
                   NULL, 0);
}

int st_stream_pel_del(st_txn *t, const st_obj *o, uint64_t gnum,
                      const st_stream_id *id, uint64_t consumer)
{
    uint8_t key[KEY_MAX];
    int rc;

    rc = del_raw(t, key, gkey(key, o->c.id, KIND_PEL, 1, gnum, 0, id, NULL, 0));
    if (rc)
        return rc;
    rc = del_raw(t, key,
                 gkey(key, o->c.id, KIND_CPEL, 2, gnum, consumer, id, NULL, 0));
    return rc == ST_ENOTFOUND ? 0 : rc;
}

struct pel_walk {
    st_txn *t;
    const st_obj *o;
    uint64_t gnum;
    int by_consumer;
    st_stream_id end;
    uint64_t count, seen;
    st_stream_pel_fn *fn;
    void *ctx;
    int rc;
};

static int pel_step(void *ctx, const uint8_t *rest, size_t rlen,
                    const uint8_t *val, size_t vlen)
{
    struct pel_walk *w = ctx;
    st_stream_id id;
    st_stream_pel p;

    if (rlen != ID_BYTES)
        return 0;
    get_id(rest, &id);
    if (st_stream_id_cmp(&id, &w->end) > 0)
        return 1;
    if (w->by_consumer) {
        /* The consumer's index holds ids only: the entry is in the PEL. */
        if ((w->rc = st_stream_pel_get(w->t, w->o, w->gnum, &id, &p)))
            return 1;
    } else {
        if (vlen != sizeof p)
            return 0;
        memcpy(&p, val, sizeof p);
    }
    if (w->fn(w->ctx, &id, &p))
        return 1;
    return w->count && ++w->seen == w->count;
}

int st_stream_pels(st_txn *t, const st_obj *o, uint64_t gnum, uint64_t consumer,
                   const st_stream_id *start, const st_stream_id *end,
                   uint64_t count, st_stream_pel_fn *fn, void *ctx)
{
    uint8_t prefix[KEY_MAX], from[KEY_MAX];
    struct pel_walk w = { t,  o,   gnum, consumer != UINT64_MAX, *end, count, 0,
                          fn, ctx, 0 };
    size_t plen, flen;
    int rc;

    if (st_stream_id_cmp(start, end) > 0)
        return 0;
    if (w.by_consumer) {
        plen = gkey(prefix, o->c.id, KIND_CPEL, 2, gnum, consumer, NULL, NULL,
                    0);
        flen = gkey(from, o->c.id, KIND_CPEL, 2, gnum, consumer, start, NULL,
                    0);
    } else {
        plen = gkey(prefix, o->c.id, KIND_PEL, 1, gnum, 0, NULL, NULL, 0);
        flen = gkey(from, o->c.id, KIND_PEL, 1, gnum, 0, start, NULL, 0);
    }
    rc = walk_prefix(t, prefix, plen, from, flen, 0, pel_step, &w);
    return rc ? rc : w.rc;
}

int st_stream_pel_last(st_txn *t, const st_obj *o, uint64_t gnum,
                       st_stream_id *id)
{
    uint8_t prefix[KEY_MAX], kb[KEY_MAX];
    size_t plen = gkey(prefix, o->c.id, KIND_PEL, 1, gnum, 0, NULL, NULL, 0);
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    /* The first key past the group's (the next group's), one step back. */
    k.mv_size = gkey(kb, o->c.id, KIND_PEL, 1, gnum + 1, 0, NULL, NULL, 0);
    k.mv_data = kb;
    if ((rc = mdb_cursor_open(t->txn, GROUPS(t), &cur)))
        return st_err_map(rc);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    rc = rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST)
         : rc               ? rc
                            : mdb_cursor_get(cur, &k, &v, MDB_PREV);
    if (rc == 0 && k.mv_size == plen + ID_BYTES &&
        memcmp(k.mv_data, prefix, plen) == 0)
        get_id((const uint8_t *)k.mv_data + plen, id);
    else if (rc == 0 || rc == MDB_NOTFOUND)
        rc = ST_ENOTFOUND;
    else
        rc = st_err_map(rc);
    mdb_cursor_close(cur);
    return rc;
}

void st_stream_signal(st_txn *t, const st_obj *o)
{
    st_internal_created(t->env, o->k->db, o->k->name, o->k->len, ST_TYPE_STREAM,
                        ST_STREAM_READERS_ANY, 0);
}
