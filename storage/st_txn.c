/*
 * st_txn.c - transactions: begin (a parked read transaction is renewed
 * instead of begun anew), commit and abort, the per-transaction arena
 * values borrow from, and the per-database key counts folded into the
 * meta database at commit.
 */
#include "storage/st_txn.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <stdlib.h>
#include <string.h>

uint8_t *st_txn_arena_alloc(st_txn *t, size_t len)
{
    st_arena_chunk *c = t->arena;

    if (!c || c->cap - c->used < len) {
        size_t cap = len > ST_ARENA_CHUNK ? len : ST_ARENA_CHUNK;
        if (!(c = malloc(sizeof *c + cap)))
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = t->arena;
        t->arena = c;
    }
    c->used += len;
    return c->data + c->used - len;
}

size_t st_txn_arena_room(const st_txn *t, uint8_t **at)
{
    const st_arena_chunk *c = t->arena;

    if (!c) {
        *at = NULL;
        return 0;
    }
    *at = (uint8_t *)c->data + c->used;
    return c->cap - c->used;
}

void st_txn_arena_reset(st_txn *t)
{
    st_arena_chunk *c = t->arena, *keep = NULL;

    /* Keep one ordinary chunk for the next transaction. */
    while (c) {
        st_arena_chunk *next = c->next;
        if (!keep && c->cap == ST_ARENA_CHUNK) {
            keep = c;
            keep->used = 0;
            keep->next = NULL;
        } else {
            free(c);
        }
        c = next;
    }
    t->arena = keep;
}

int st_txn_begin(st_env *env, int write, st_txn **out)
{
    st_txn *t = write ? &env->wtxn : &env->rtxn;
    int rc;

    if (t->active)
        return ST_EBUSY;
    if (write) {
        /* A server environment's commits rely on the syncer's pin. */
        if (env->gate != ST_GATE_OPEN && (rc = st_durable_gate(env)))
            return rc;
        if (env->pressure)
            st_durable_pressure(env);
        rc = mdb_txn_begin(env->env, NULL, 0, &t->txn);
        if (rc == 0 && env->room.on)
            st_room_begin(&env->room, t->txn);
    } else if (env->rtxn_parked) {
        t->txn = env->rtxn_parked;
        env->rtxn_parked = NULL;
        rc = mdb_txn_renew(t->txn);
        if (rc) {
            mdb_txn_abort(t->txn);
            rc = mdb_txn_begin(env->env, NULL, MDB_RDONLY, &t->txn);
        }
    } else {
        rc = mdb_txn_begin(env->env, NULL, MDB_RDONLY, &t->txn);
    }
    if (rc)
        return st_err_map(rc);
    t->active = 1;
    t->counts_dirty = 0;
    t->deferred = NULL;
    t->smeta_cid = 0;
    t->smeta_dirty = 0;
    t->map_loaded = 0; /* this snapshot's map loads on first use */
    *out = t;
    return 0;
}

/*
 * Fold the transaction's count deltas into the meta record. The record may
 * be longer than this open's databases (an earlier open had more): its
 * tail is kept as it is.
 */
static int apply_counts(st_txn *t)
{
    st_env *e = t->env;
    MDB_val k = { sizeof ST_META_COUNTS - 1, ST_META_COUNTS }, v;
    size_t n = (size_t)e->nstored * 2 * sizeof(int64_t), len = n;
    int64_t *c;
    uint8_t *buf;
    int rc = mdb_get(t->txn, e->dbi[ST_DBI_META], &k, &v);
    int found = rc == 0;

    if (rc && rc != MDB_NOTFOUND)
        return st_err_map(rc);
    if (found && v.mv_size > len)
        len = v.mv_size;
    if ((rc = st_env_scratch(e, len, &buf)))
        return rc;
    c = (int64_t *)(void *)buf;
    memset(c, 0, len);
    if (found)
        memcpy(c, v.mv_data, v.mv_size);
    for (unsigned db = 0; db < e->nstored; db++) {
        c[db * 2] += t->dkeys[db];
        c[db * 2 + 1] += t->dexpires[db];
        t->dkeys[db] = t->dexpires[db] = 0;
    }
    v.mv_size = len;
    v.mv_data = c;
    return st_err_map(st_mdb_put(t->txn, e->dbi[ST_DBI_META], &k, &v, 0));
}

void st_txn_count_keys(st_txn *t, unsigned db, int64_t dkeys, int64_t dexpires)
{
    if (!dkeys && !dexpires)
        return; /* an overwrite: no meta page to rewrite */
    t->dkeys[db] += dkeys;
    t->dexpires[db] += dexpires;
    t->counts_dirty = 1;
}

int st_txn_settle(st_txn *t)
{
    int (*fn)(st_txn *) = t->deferred;

    t->deferred = NULL;
    return fn ? fn(t) : 0;
}

int st_txn_commit(st_txn **tp)
{
    st_txn *t = *tp;
    st_env_observer *obs = &t->env->obs;
    uint64_t id;
    int rc = 0;

    *tp = NULL;
    st_txn_arena_reset(t);
    if (!t->write) {
        mdb_txn_reset(t->txn);
        t->env->rtxn_parked = t->txn;
        t->active = 0;
        return 0;
    }
    /* The commit's own records (the counts, a stream state written back)
     * may use the room's reserve: a transaction of deletes must be able
     * to commit on a full disk (st_room.h). */
    t->env->room.freeing = 1;
    if ((rc = st_txn_settle(t)) ||
        (t->counts_dirty && (rc = apply_counts(t)))) {
        st_txn *self = t;
        st_txn_abort(&self);
        return rc;
    }
    id = mdb_txn_id(t->txn);
    if (obs->committing)
        obs->committing(obs->ctx, id);
    rc = st_err_map(mdb_txn_commit(t->txn));
    t->active = 0;
    if (obs->committed)
        obs->committed(obs->ctx, id, rc);
    return rc;
}

void st_txn_abort(st_txn **tp)
{
    st_txn *t = *tp;

    *tp = NULL;
    st_txn_arena_reset(t);
    if (!t->write) {
        mdb_txn_reset(t->txn);
        t->env->rtxn_parked = t->txn;
    } else {
        uint64_t id = mdb_txn_id(t->txn);
        mdb_txn_abort(t->txn);
        for (unsigned db = 0; db < t->env->nstored; db++)
            t->dkeys[db] = t->dexpires[db] = 0;
        if (t->env->obs.aborted)
            t->env->obs.aborted(t->env->obs.ctx, id);
    }
    t->active = 0;
}

int st_txn_is_write(const st_txn *t) { return t->write; }

uint64_t st_txn_version(const st_txn *t) { return mdb_txn_id(t->txn); }
