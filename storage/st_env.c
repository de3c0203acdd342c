/*
 * st_env.c - environment open/close, reusable transactions, and the
 * per-database key counters kept in the meta database.
 */
#include "storage/st_internal.h"
#include "storage/st_err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include <zstd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ST_DATA_FILE "/data.mdb"
#define ST_FILE_MODE 0600
#define ST_DIR_MODE 0700

static const char *const dbi_names[ST_DBI_COUNT] = {
    [ST_DBI_KEYS] = "keys",         [ST_DBI_EXPIRES] = "expires",
    [ST_DBI_HASHES] = "hashes",     [ST_DBI_SETS] = "sets",
    [ST_DBI_ZMEMBERS] = "zmembers", [ST_DBI_ZSCORES] = "zscores",
    [ST_DBI_LISTS] = "lists",       [ST_DBI_GARBAGE] = "garbage",
    [ST_DBI_META] = "meta",
};

const char *st_strerror(int err)
{
    switch (err) {
    case ST_OK: return "success";
    case ST_ENOTFOUND: return "not found";
    case ST_EWRONGTYPE: return "wrong type";
    case ST_EFULL: return "database map is full (maxdisk reached)";
    case ST_ETXNFULL: return "transaction too large";
    case ST_ECORRUPT: return "corrupt record";
    case ST_ESCHEMA: return "unsupported schema version";
    case ST_EEXISTS: return "key exists";
    case ST_ECOLLISION: return "long-name digest slots exhausted";
    case ST_EKEYSIZE: return "LMDB key size limit below 511 bytes";
    case ST_EREADERS: return "no free LMDB reader slot";
    case ST_ELMDB: return "LMDB failure";
    case ST_EBUSY: return "transaction already open";
    default: break;
    }
    return err > 0 ? strerror(err) : "unknown storage error";
}

/* ST_E* codes are small negatives; LMDB's own sit near -30800. */
#define ST_ERR_FLOOR (-1000)

int st_map_err(int rc)
{
    if (rc < 0 && rc > ST_ERR_FLOOR)
        return rc;                      /* already a storage code */
    switch (rc) {
    case MDB_SUCCESS: return 0;
    case MDB_NOTFOUND: return ST_ENOTFOUND;
    case MDB_MAP_FULL: return ST_EFULL;
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL: return ST_ETXNFULL;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID: return ST_ECORRUPT;
    case MDB_READERS_FULL: return ST_EREADERS;
    case MDB_KEYEXIST: return ST_EEXISTS;
    default: break;
    }
    return rc > 0 ? rc : ST_ELMDB;
}

int st_grow(uint8_t **buf, size_t *cap, size_t len)
{
    if (len > *cap) {
        uint8_t *p = realloc(*buf, len);
        if (!p)
            return ENOMEM;
        *buf = p;
        *cap = len;
    }
    return 0;
}

uint8_t *st_arena_alloc(st_txn *t, size_t len)
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

size_t st_arena_room(const st_txn *t, uint8_t **at)
{
    const st_arena_chunk *c = t->arena;

    if (!c) {
        *at = NULL;
        return 0;
    }
    *at = (uint8_t *)c->data + c->used;
    return c->cap - c->used;
}

void st_arena_reset(st_txn *t)
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

int st_scratch(st_env *env, size_t len, uint8_t **out)
{
    int rc = st_grow(&env->scratch, &env->scratch_cap, len);

    *out = env->scratch;
    return rc;
}

static int check_schema(st_env *e, MDB_txn *txn)
{
    MDB_val k = { sizeof ST_META_SCHEMA - 1, ST_META_SCHEMA }, v;
    uint32_t ver = ST_SCHEMA_VERSION;
    int rc = mdb_get(txn, e->dbi[ST_DBI_META], &k, &v);

    if (rc == MDB_NOTFOUND) {
        v.mv_size = sizeof ver;
        v.mv_data = &ver;
        return st_map_err(mdb_put(txn, e->dbi[ST_DBI_META], &k, &v, 0));
    }
    if (rc)
        return st_map_err(rc);
    if (v.mv_size != sizeof ver)
        return ST_ESCHEMA;
    memcpy(&ver, v.mv_data, sizeof ver);
    return ver == ST_SCHEMA_VERSION ? 0 : ST_ESCHEMA;
}

static int open_dbis(st_env *e)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(e->env, NULL, 0, &txn);

    if (rc)
        return st_map_err(rc);
    for (int i = 0; i < ST_DBI_COUNT && !rc; i++)
        rc = mdb_dbi_open(txn, dbi_names[i], MDB_CREATE, &e->dbi[i]);
    rc = rc ? st_map_err(rc) : check_schema(e, txn);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return st_map_err(mdb_txn_commit(txn));
}

int st_env_open(const st_env_opts *o, st_env **out)
{
    st_env *e = calloc(1, sizeof *e);
    int rc;

    if (!e)
        return ENOMEM;
    e->databases = o->databases ? o->databases : ST_DEFAULT_DATABASES;
    e->cache = o->cache;
    e->compress_threshold = o->compress_threshold;
    e->compress_level = o->compress_level;
    if (!(e->zc = ZSTD_createCCtx()) || !(e->zd = ZSTD_createDCtx())) {
        rc = ENOMEM;
        goto fail;
    }
    e->rtxn.env = e->wtxn.env = e;
    e->wtxn.write = 1;
    e->wtxn.dkeys = calloc(e->databases, sizeof *e->wtxn.dkeys);
    e->wtxn.dexpires = calloc(e->databases, sizeof *e->wtxn.dexpires);
    if (!e->wtxn.dkeys || !e->wtxn.dexpires) {
        rc = ENOMEM;
        goto fail;
    }
    if (mkdir(o->dir, ST_DIR_MODE) && errno != EEXIST) {
        rc = errno;
        goto fail;
    }
    if ((rc = mdb_env_create(&e->env)))
        goto fail_map;
    if (mdb_env_get_maxkeysize(e->env) < ST_LMDB_MAXKEY) {
        rc = ST_EKEYSIZE;
        goto fail;
    }
    mdb_env_set_maxdbs(e->env, ST_DBI_COUNT);
    mdb_env_set_maxreaders(e->env,
                           o->max_readers ? o->max_readers
                                          : ST_DEFAULT_MAX_READERS);
    mdb_env_set_mapsize(e->env, o->map_size ? o->map_size
                                            : ST_DEFAULT_MAP_SIZE);
    if ((rc = mdb_env_open(e->env, o->dir,
                           (o->nosync ? MDB_NOSYNC : 0) | MDB_NORDAHEAD | MDB_NOTLS |
                               (o->writemap ? MDB_WRITEMAP : 0),
                           ST_FILE_MODE)))
        goto fail_map;
    if ((rc = open_dbis(e)))
        goto fail;
    *out = e;
    return 0;
fail_map:
    rc = st_map_err(rc);
fail:
    st_env_close(&e);
    return rc;
}

void st_env_close(st_env **envp)
{
    st_env *e = *envp;

    if (!e)
        return;
    if (e->wtxn.active)
        mdb_txn_abort(e->wtxn.txn);
    if (e->rtxn.active || e->rtxn_parked)
        mdb_txn_abort(e->rtxn.active ? e->rtxn.txn : e->rtxn_parked);
    if (e->env)
        mdb_env_close(e->env);
    free(e->wtxn.dkeys);
    free(e->wtxn.dexpires);
    free(e->scratch);
    ZSTD_freeCCtx(e->zc);
    ZSTD_freeDCtx(e->zd);
    st_arena_reset(&e->rtxn);
    st_arena_reset(&e->wtxn);
    free(e->rtxn.arena);
    free(e->wtxn.arena);
    free(e);
    *envp = NULL;
}

int st_env_sync(st_env *env) { return st_map_err(mdb_env_sync(env->env, 1)); }

#define ST_BACKUP_SUFFIX ".tmp"

int st_env_backup(st_env *env, const char *path)
{
    char tmp[PATH_MAX];
    int fd, rc;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s%s", path, ST_BACKUP_SUFFIX) >=
        sizeof tmp)
        return ENAMETOOLONG;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, ST_FILE_MODE);
    if (fd < 0)
        return errno;
    rc = st_map_err(mdb_env_copyfd2(env->env, fd, MDB_CP_COMPACT));
    if (rc == 0 && fsync(fd))
        rc = errno;
    if (close(fd) && rc == 0)
        rc = errno;
    if (rc == 0 && rename(tmp, path))
        rc = errno;
    if (rc)
        unlink(tmp);
    return rc;
}

int st_env_reader_check(st_env *env, int *dead)
{
    return st_map_err(mdb_reader_check(env->env, dead));
}

unsigned st_env_databases(const st_env *env) { return env->databases; }

int st_env_stat_get(st_env *env, st_env_stat *out)
{
    MDB_envinfo info;
    MDB_stat st;
    const char *path;
    struct stat fs;
    int rc;

    if ((rc = mdb_env_info(env->env, &info)) ||
        (rc = mdb_env_stat(env->env, &st)) ||
        (rc = mdb_env_get_path(env->env, &path)))
        return st_map_err(rc);
    out->map_size = info.me_mapsize;
    out->used_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
    out->last_txn = info.me_last_txnid;
    out->readers_used = info.me_numreaders;
    out->readers_max = info.me_maxreaders;
    out->file_bytes = 0;
    char file[4096];
    if ((size_t)snprintf(file, sizeof file, "%s%s", path, ST_DATA_FILE) <
            sizeof file && stat(file, &fs) == 0)
        out->file_bytes = (uint64_t)fs.st_size;
    return 0;
}

int st_txn_begin(st_env *env, int write, st_txn **out)
{
    st_txn *t = write ? &env->wtxn : &env->rtxn;
    int rc;

    if (t->active)
        return ST_EBUSY;
    if (write) {
        rc = mdb_txn_begin(env->env, NULL, 0, &t->txn);
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
        return st_map_err(rc);
    t->active = 1;
    t->counts_dirty = 0;
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
    size_t n = (size_t)e->databases * 2 * sizeof(int64_t), len = n;
    int64_t *c;
    uint8_t *buf;
    int rc = mdb_get(t->txn, e->dbi[ST_DBI_META], &k, &v);
    int found = rc == 0;

    if (rc && rc != MDB_NOTFOUND)
        return st_map_err(rc);
    if (found && v.mv_size > len)
        len = v.mv_size;
    if ((rc = st_scratch(e, len, &buf)))
        return rc;
    c = (int64_t *)(void *)buf;
    memset(c, 0, len);
    if (found)
        memcpy(c, v.mv_data, v.mv_size);
    for (unsigned db = 0; db < e->databases; db++) {
        c[db * 2] += t->dkeys[db];
        c[db * 2 + 1] += t->dexpires[db];
        t->dkeys[db] = t->dexpires[db] = 0;
    }
    v.mv_size = len;
    v.mv_data = c;
    return st_map_err(mdb_put(t->txn, e->dbi[ST_DBI_META], &k, &v, 0));
}

void st_count_keys(st_txn *t, unsigned db, int64_t dkeys, int64_t dexpires)
{
    if (!dkeys && !dexpires)
        return;                 /* an overwrite: no meta page to rewrite */
    t->dkeys[db] += dkeys;
    t->dexpires[db] += dexpires;
    t->counts_dirty = 1;
}

int st_txn_commit(st_txn **tp)
{
    st_txn *t = *tp;
    int rc = 0;

    *tp = NULL;
    st_arena_reset(t);
    if (!t->write) {
        mdb_txn_reset(t->txn);
        t->env->rtxn_parked = t->txn;
        t->active = 0;
        return 0;
    }
    if (t->counts_dirty && (rc = apply_counts(t))) {
        st_txn *self = t;
        st_txn_abort(&self);
        return rc;
    }
    rc = mdb_txn_commit(t->txn);
    t->active = 0;
    return st_map_err(rc);
}

void st_txn_abort(st_txn **tp)
{
    st_txn *t = *tp;

    *tp = NULL;
    st_arena_reset(t);
    if (!t->write) {
        mdb_txn_reset(t->txn);
        t->env->rtxn_parked = t->txn;
    } else {
        mdb_txn_abort(t->txn);
        for (unsigned db = 0; db < t->env->databases; db++)
            t->dkeys[db] = t->dexpires[db] = 0;
    }
    t->active = 0;
}

int st_txn_is_write(const st_txn *t) { return t->write; }

uint64_t st_txn_version(const st_txn *t) { return mdb_txn_id(t->txn); }
