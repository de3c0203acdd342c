/*
 * st_hash.c - hash fields on the hash-ordered element layer.
 */
#include "storage/st_hash.h"
#include "storage/st_err.h"

int st_hash_get(st_txn *t, const st_obj *o, const void *field, size_t flen,
                const uint8_t **val, size_t *vlen)
{
    return st_elem_get(t, ST_ELEM_HASH, o->c.id, field, flen, val, vlen);
}

int st_hash_set(st_txn *t, st_obj *o, const void *field, size_t flen,
                const void *val, size_t vlen, int nx, int *created)
{
    int rc = st_elem_put(t, ST_ELEM_HASH, &o->c, field, flen, val, vlen, nx,
                         created);

    if (rc == 0 && *created)
        o->c.card++;
    return rc;
}

int st_hash_del(st_txn *t, st_obj *o, const void *field, size_t flen)
{
    int rc = st_elem_del(t, ST_ELEM_HASH, &o->c, field, flen);

    if (rc == 0)
        o->c.card--;
    return rc;
}

int st_hash_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                 st_elem_fn fn, void *ctx, uint64_t *next)
{
    return st_elem_scan(t, ST_ELEM_HASH, o->c.id, cursor, count, fn, ctx, next);
}

int st_hash_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                   st_elem_fn fn, void *ctx)
{
    return st_elem_sample(t, ST_ELEM_HASH, &o->c, seed, count, fn, ctx);
}
