/*
 * st_script.c - the script cache and the function libraries in their
 * named databases (see st_script.h); the libraries' generation is a
 * record of the meta database.
 */
#include "storage/st_script.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <string.h>

#define ST_META_FUNC_GEN "func-gen"

int st_script_get(st_txn *t, const char *sha, const uint8_t **body, size_t *len)
{
    MDB_val k = { ST_SCRIPT_SHA_LEN, (void *)sha }, v;
    int rc = mdb_get(t->txn, t->env->dbi[ST_DBI_SCRIPTS], &k, &v);

    if (rc)
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    *body = v.mv_data;
    *len = v.mv_size;
    return 0;
}

int st_script_put(st_txn *t, const char *sha, const void *body, size_t len)
{
    MDB_val k = { ST_SCRIPT_SHA_LEN, (void *)sha }, v = { len, (void *)body };
    int rc = st_mdb_put(t->txn, t->env->dbi[ST_DBI_SCRIPTS], &k, &v,
                        MDB_NOOVERWRITE);

    return rc == MDB_KEYEXIST ? 0 : st_err_map(rc);
}

int st_script_flush(st_txn *t)
{
    return st_err_map(st_mdb_drop(t->txn, t->env->dbi[ST_DBI_SCRIPTS], 0));
}

static int count_of(st_txn *t, int dbi, uint64_t *n)
{
    MDB_stat s;
    int rc = mdb_stat(t->txn, t->env->dbi[dbi], &s);

    *n = rc ? 0 : (uint64_t)s.ms_entries;
    return st_err_map(rc);
}

int st_script_count(st_txn *t, uint64_t *n)
{
    return count_of(t, ST_DBI_SCRIPTS, n);
}

/* ---- function libraries ---- */

int st_func_generation(st_txn *t, uint64_t *gen)
{
    MDB_val k = { sizeof ST_META_FUNC_GEN - 1, ST_META_FUNC_GEN }, v;
    int rc = mdb_get(t->txn, t->env->dbi[ST_DBI_META], &k, &v);

    *gen = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return st_err_map(rc);
    if (v.mv_size != sizeof *gen)
        return ST_ECORRUPT;
    memcpy(gen, v.mv_data, sizeof *gen);
    return 0;
}

static int bump_generation(st_txn *t)
{
    MDB_val k = { sizeof ST_META_FUNC_GEN - 1, ST_META_FUNC_GEN }, v;
    uint64_t gen;
    int rc = st_func_generation(t, &gen);

    if (rc)
        return rc;
    gen++;
    v.mv_size = sizeof gen;
    v.mv_data = &gen;
    return st_err_map(st_mdb_put(t->txn, t->env->dbi[ST_DBI_META], &k, &v, 0));
}

static int name_ok(size_t nlen) { return nlen > 0 && nlen <= ST_FUNC_NAME_MAX; }

int st_func_get(st_txn *t, const char *name, size_t nlen, const uint8_t **code,
                size_t *clen)
{
    MDB_val k = { nlen, (void *)name }, v;
    int rc;

    if (!name_ok(nlen))
        return ST_ENOTFOUND;
    rc = mdb_get(t->txn, t->env->dbi[ST_DBI_FUNCTIONS], &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    *code = v.mv_data;
    *clen = v.mv_size;
    return 0;
}

int st_func_put(st_txn *t, const char *name, size_t nlen, const void *code,
                size_t clen)
{
    MDB_val k = { nlen, (void *)name }, v = { clen, (void *)code };
    int rc;

    if (!name_ok(nlen))
        return EINVAL;
    rc = st_mdb_put(t->txn, t->env->dbi[ST_DBI_FUNCTIONS], &k, &v, 0);
    return rc ? st_err_map(rc) : bump_generation(t);
}

int st_func_delete(st_txn *t, const char *name, size_t nlen)
{
    MDB_val k = { nlen, (void *)name };
    int rc;

    if (!name_ok(nlen))
        return ST_ENOTFOUND;
    rc = st_mdb_del(t->txn, t->env->dbi[ST_DBI_FUNCTIONS], &k, NULL);
    if (rc)
        return rc == MDB_NOTFOUND ? ST_ENOTFOUND : st_err_map(rc);
    return bump_generation(t);
}

int st_func_flush(st_txn *t)
{
    int rc = st_mdb_drop(t->txn, t->env->dbi[ST_DBI_FUNCTIONS], 0);

    return rc ? st_err_map(rc) : bump_generation(t);
}

int st_func_each(st_txn *t, st_func_fn fn, void *ctx)
{
    MDB_cursor *cur;
    MDB_val k, v;
    int rc = mdb_cursor_open(t->txn, t->env->dbi[ST_DBI_FUNCTIONS], &cur);

    if (rc)
        return st_err_map(rc);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        int stop = fn(ctx, k.mv_data, k.mv_size, v.mv_data, v.mv_size);
        if (stop) {
            mdb_cursor_close(cur);
            return stop;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}
