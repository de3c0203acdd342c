/*
 * st_set.c - set members on the hash-ordered element layer.
 */
#include "storage/st_set.h"
#include "storage/st_err.h"

int st_set_has(st_txn *t, const st_obj *o, const void *member, size_t len)
{
    const uint8_t *v;
    size_t vl;
    int rc;

    if (!o->c.id)
        return 0;
    rc = st_elem_get(t, ST_ELEM_SET, o->c.id, member, len, &v, &vl);
    return rc == 0 ? 1 : rc == ST_ENOTFOUND ? 0 : rc;
}

int st_set_add(st_txn *t, st_obj *o, const void *member, size_t len, int *added)
{
    static const uint8_t none;
    int rc = st_elem_put(t, ST_ELEM_SET, &o->c, member, len, &none, 0, 0,
                         added);

    if (rc == 0 && *added)
        o->c.card++;
    return rc;
}

int st_set_rem(st_txn *t, st_obj *o, const void *member, size_t len)
{
    int rc = st_elem_del(t, ST_ELEM_SET, &o->c, member, len);

    if (rc == 0)
        o->c.card--;
    return rc;
}

int st_set_scan(st_txn *t, const st_obj *o, uint64_t cursor, size_t count,
                st_elem_fn fn, void *ctx, uint64_t *next)
{
    return st_elem_scan(t, ST_ELEM_SET, o->c.id, cursor, count, fn, ctx, next);
}

int st_set_sample(st_txn *t, const st_obj *o, uint64_t seed, size_t count,
                  st_elem_fn fn, void *ctx)
{
    return st_elem_sample(t, ST_ELEM_SET, &o->c, seed, count, fn, ctx);
}
