/*
 * st_coll.c - collection records (open, create, save), ids, detaching,
 * lazy freeing and deep copies.
 */
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <string.h>

#define COLL_OFF_ID 0
#define COLL_OFF_CARD 8
#define COLL_OFF_HEAD 16
#define COLL_OFF_TAIL 24
#define GARBAGE_VALUE_BYTES 1
#define FIRST_ID 1

void st_coll_decode(const st_rec *r, st_coll *out)
{
    memset(out, 0, sizeof *out);
    if (r->payload_len < ST_COLL_PAYLOAD)
        return;
    memcpy(&out->id, r->payload + COLL_OFF_ID, sizeof out->id);
    memcpy(&out->card, r->payload + COLL_OFF_CARD, sizeof out->card);
    memcpy(&out->head, r->payload + COLL_OFF_HEAD, sizeof out->head);
    memcpy(&out->tail, r->payload + COLL_OFF_TAIL, sizeof out->tail);
}

void st_coll_encode(uint8_t *p, const st_coll *c)
{
    memcpy(p + COLL_OFF_ID, &c->id, sizeof c->id);
    memcpy(p + COLL_OFF_CARD, &c->card, sizeof c->card);
    memcpy(p + COLL_OFF_HEAD, &c->head, sizeof c->head);
    memcpy(p + COLL_OFF_TAIL, &c->tail, sizeof c->tail);
}

int st_coll_new_id(st_txn *t, uint64_t *id)
{
    MDB_val k = { sizeof ST_META_NEXT_ID - 1, ST_META_NEXT_ID }, v;
    uint64_t next = FIRST_ID;
    int rc = mdb_get(t->txn, t->env->dbi[ST_DBI_META], &k, &v);

    if (rc == 0 && v.mv_size == sizeof next)
        memcpy(&next, v.mv_data, sizeof next);
    else if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    *id = next++;
    v.mv_size = sizeof next;
    v.mv_data = &next;
    return st_err_map(st_mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, 0));
}

/* The element databases of a type (zsets have two). */
static int type_dbis(const st_env *e, int type, MDB_dbi out[2])
{
    switch (type) {
    case ST_TYPE_HASH: out[0] = e->dbi[ST_DBI_HASHES]; return 1;
    case ST_TYPE_SET: out[0] = e->dbi[ST_DBI_SETS]; return 1;
    case ST_TYPE_LIST: out[0] = e->dbi[ST_DBI_LISTS]; return 1;
    case ST_TYPE_STRING: out[0] = e->dbi[ST_DBI_CHUNKS]; return 1;
    case ST_TYPE_ZSET:
        out[0] = e->dbi[ST_DBI_ZMEMBERS];
        out[1] = e->dbi[ST_DBI_ZSCORES];
        return 2;
    case ST_TYPE_STREAM:
        out[0] = e->dbi[ST_DBI_STREAMS];
        out[1] = e->dbi[ST_DBI_SGROUPS];
        return 2;
    default: return 0;
    }
}

int st_coll_detach_id(st_txn *t, uint64_t id, int type)
{
    uint8_t key[ST_COLL_ID_BYTES], tb = (uint8_t)type;
    MDB_val k = { sizeof key, key }, v = { GARBAGE_VALUE_BYTES, &tb };

    st_codec_put_be64(key, id);
    return st_err_map(
        st_mdb_put(t->txn, t->env->dbi[ST_DBI_GARBAGE], &k, &v, 0));
}

int st_coll_detach_below(st_txn *t, uint64_t id, int type, const uint8_t *below,
                         const uint8_t *old, size_t len)
{
    uint8_t key[ST_LMDB_MAXKEY], tb = (uint8_t)type;
    MDB_val k = { ST_COLL_ID_BYTES + len, key },
            v = { GARBAGE_VALUE_BYTES, &tb };
    MDB_dbi g = t->env->dbi[ST_DBI_GARBAGE];
    int rc;

    if (len == 0 || len > sizeof key - ST_COLL_ID_BYTES)
        return EINVAL;
    st_codec_put_be64(key, id);
    if (old) {
        memcpy(key + ST_COLL_ID_BYTES, old, len);
        rc = st_mdb_del(t->txn, g, &k, NULL);
        if (rc && rc != MDB_NOTFOUND)
            return st_err_map(rc);
    }
    memcpy(key + ST_COLL_ID_BYTES, below, len);
    return st_err_map(st_mdb_put(t->txn, g, &k, &v, 0));
}

int st_coll_detach(st_txn *t, const st_rec *r)
{
    st_coll c;

    st_coll_decode(r, &c);
    return st_coll_detach_id(t, c.id, r->type);
}

/* st_coll_copy_elems, the first database's copy starting at the key
 * src_id + from[0..flen) (flen 0: at its first). */
static int copy_elems_from(st_txn *t, int type, uint64_t src_id,
                           uint64_t dst_id, const uint8_t *from, size_t flen)
{
    MDB_dbi dbis[2];
    int n = type_dbis(t->env, type, dbis);
    int rc;

    /* Keys read raw below: what a module deferred must be written. */
    if ((rc = st_txn_settle(t)))
        return rc;
    for (int i = 0; i < n; i++) {
        uint8_t at[ST_LMDB_MAXKEY], nkey[ST_LMDB_MAXKEY];
        MDB_cursor *cur;
        MDB_val k = { ST_COLL_ID_BYTES, at }, v;
        st_codec_put_be64(at, src_id);
        if (i == 0 && flen) {
            memcpy(at + ST_COLL_ID_BYTES, from, flen);
            k.mv_size += flen;
        }
        if ((rc = mdb_cursor_open(t->txn, dbis[i], &cur)))
            return st_err_map(rc);
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (k.mv_size < ST_COLL_ID_BYTES ||
                st_codec_get_be64(k.mv_data) != src_id)
                break;
            size_t klen = k.mv_size;
            memcpy(at, k.mv_data, klen);
            memcpy(nkey, k.mv_data, klen);
            st_codec_put_be64(nkey, dst_id);
            MDB_val nk = { klen, nkey };
            /* The new id is the largest yet: its keys append. */
            rc = st_mdb_put(t->txn, dbis[i], &nk, &v, MDB_APPEND);
            if (rc == MDB_KEYEXIST)
                rc = st_mdb_put(t->txn, dbis[i], &nk, &v, 0);
            if (rc)
                break;
            /* Re-find the source element: the put may split pages. */
            k.mv_size = klen;
            k.mv_data = at;
            if ((rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY)))
                break;
        }
        mdb_cursor_close(cur);
        if (rc && rc != MDB_NOTFOUND)
            return st_err_map(rc);
    }
    return 0;
}

int st_coll_copy_elems(st_txn *t, int type, uint64_t src_id, uint64_t dst_id)
{
    return copy_elems_from(t, type, src_id, dst_id, NULL, 0);
}

int st_coll_copy(st_txn *t, const st_rec *src, st_coll *out)
{
    uint8_t floor[2 * sizeof(uint64_t)];
    size_t flen = 0;
    st_coll c;
    int rc;

    st_coll_decode(src, &c);
    *out = c;
    if ((rc = st_coll_new_id(t, &out->id)))
        return rc;
    /* A stream's entries below its floor are dead (the freer's): the copy
     * starts at the floor, as its entries' keys (ms, seq) spell it. */
    if (src->type == ST_TYPE_STREAM && (c.head || c.tail)) {
        st_codec_put_be64(floor, (uint64_t)c.head);
        st_codec_put_be64(floor + sizeof(uint64_t), (uint64_t)c.tail);
        flen = sizeof floor;
    }
    return copy_elems_from(t, src->type, c.id, out->id, floor, flen);
}

/* Delete up to *budget elements of collection `id` from `dbi` (with
 * `below`, only those whose keys sort before it: a garbage key of
 * st_coll_detach_below); *empty is set when none remain. */
static int free_elements(MDB_txn *txn, MDB_dbi dbi, uint64_t id,
                         const MDB_val *below, size_t *budget, int *empty)
{
    uint8_t prefix[ST_COLL_ID_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof prefix, prefix }, v;
    int rc, done = 0;

    *empty = 0;
    st_codec_put_be64(prefix, id);
    if ((rc = mdb_cursor_open(txn, dbi, &cur)))
        return st_err_map(rc);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0) {
        if (k.mv_size < ST_COLL_ID_BYTES ||
            st_codec_get_be64(k.mv_data) != id ||
            (below && mdb_cmp(txn, dbi, &k, below) >= 0)) {
            done = 1;
            break;
        }
        if (*budget == 0)
            break;
        if ((rc = st_mdb_cursor_del(cur, 0)))
            break;
        (*budget)--;
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
    if (rc == MDB_NOTFOUND || rc == EINVAL || done) {
        *empty = 1;
        rc = 0;
    }
    mdb_cursor_close(cur);
    return st_err_map(rc);
}

/* Commit a write of the meta record ST_META_ROOM, so that the pin can
 * move past the pages the last commits freed (st_room_nudge_due). */
static int room_nudge(st_txn *t)
{
    uint64_t id = mdb_txn_id(t->txn);
    MDB_val k = { sizeof ST_META_ROOM - 1, ST_META_ROOM };
    MDB_val v = { sizeof id, &id };
    int rc = st_mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, 0);

    if (rc) {
        st_txn_abort(&t);
        return st_err_map(rc);
    }
    t->env->room.nudged = id;
    return st_txn_commit(&t);
}

int st_coll_free_chunk(st_env *env, size_t max, size_t *freed,
                       uint64_t *pending)
{
    st_txn *t;
    MDB_cursor *cur;
    MDB_val k, v;
    MDB_stat st;
    size_t budget = max;
    int rc;

    *freed = 0;
    *pending = 0;
    if ((rc = st_txn_begin(env, 1, &t)))
        return rc;
    env->room.freeing = 1; /* the reserve is for this (st_room.h) */
    if ((rc = mdb_cursor_open(t->txn, env->dbi[ST_DBI_GARBAGE], &cur))) {
        st_txn_abort(&t);
        return st_err_map(rc);
    }
    while (budget > 0 && (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)) == 0) {
        uint64_t id = st_codec_get_be64(k.mv_data);
        int type = v.mv_size ? *(const uint8_t *)v.mv_data : ST_TYPE_NONE;
        MDB_dbi dbis[2];
        int n = type_dbis(env, type, dbis), all_empty = 1;
        /* A longer key is a hand-off of st_coll_detach_below: the first
         * database's elements below the bound the key spells (the garbage
         * key is the element key bound). */
        uint8_t bkey[ST_LMDB_MAXKEY];
        MDB_val bound = { k.mv_size, bkey };
        if (k.mv_size > ST_COLL_ID_BYTES) {
            if (k.mv_size > sizeof bkey) {
                rc = ST_ECORRUPT;
                break;
            }
            memcpy(bkey, k.mv_data, k.mv_size);
            n = n ? 1 : 0;
        }
        for (int i = 0; i < n && !rc; i++) {
            int empty;
            rc = free_elements(t->txn, dbis[i], id,
                               bound.mv_size > ST_COLL_ID_BYTES ? &bound : NULL,
                               &budget, &empty);
            all_empty &= empty;
        }
        if (rc)
            break;
        if (!all_empty)
            break; /* budget spent mid-collection */
        if ((rc = st_mdb_cursor_del(cur, 0)))
            break;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND) {
        st_txn_abort(&t);
        return st_err_map(rc);
    }
    *freed = max - budget;
    if (mdb_stat(t->txn, env->dbi[ST_DBI_GARBAGE], &st) == 0)
        *pending = st.ms_entries;
    if (*freed == 0 && *pending == 0) {
        if (st_room_nudge_due(&env->room))
            return room_nudge(t);
        st_txn_abort(&t);
        return 0;
    }
    return st_txn_commit(&t);
}

int st_coll_open(st_txn *t, st_keyref *k, int type, int64_t now, st_obj *o)
{
    st_rec r;
    int rc = st_keyspace_lookup(t, k, now, &r);

    memset(o, 0, sizeof *o);
    o->k = k;
    o->type = type;
    if (rc)
        return rc;
    if (r.type != type)
        return ST_EWRONGTYPE;
    o->exists = 1;
    o->expire_at = r.expire_at;
    st_coll_decode(&r, &o->c);
    return 0;
}

int st_coll_create(st_txn *t, st_obj *o)
{
    memset(&o->c, 0, sizeof o->c);
    return st_coll_new_id(t, &o->c.id);
}

/* Rewrite the record of `o` in place (or create it, without a TTL). */
static int rec_write(st_txn *t, st_obj *o)
{
    MDB_val key = { o->k->enc_len, o->k->enc }, v;
    uint8_t *p;
    int rc;

    v.mv_size = st_codec_rec_size(o->k, ST_COLL_PAYLOAD);
    v.mv_data = NULL;
    rc = st_mdb_put(t->txn, t->env->dbi[ST_DBI_KEYS], &key, &v, MDB_RESERVE);
    if (rc)
        return st_err_map(rc);
    p = st_codec_rec_encode_head(v.mv_data, o->k, o->type, 0, st_txn_version(t),
                                 o->expire_at);
    st_coll_encode(p, &o->c);
    if (!o->exists) {
        st_txn_count_keys(t, o->k->stored_db, 1, o->expire_at ? 1 : 0);
        o->exists = 1;
        st_internal_created(t->env, o->k->db, o->k->name, o->k->len, o->type,
                            o->c.card, st_internal_fresh(o->k));
    }
    return 0;
}

int st_coll_save(st_txn *t, st_obj *o, int64_t now)
{
    int rc;

    /* A stream outlives its last entry (XDEL, XTRIM, MKSTREAM). */
    if (o->c.card > 0 || o->type == ST_TYPE_STREAM)
        return rec_write(t, o);
    if (!o->exists)
        return 0;
    rc = st_keyspace_delete(t, o->k, now);
    o->exists = 0;
    return rc == ST_ENOTFOUND ? 0 : rc;
}
