/*
 * st_env.c - environment open/close, reusable transactions, and the
 * per-database key counters kept in the meta database.
 */
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#define ST_DATA_FILE "/data.mdb"
#define ST_LOCK_FILE "/lock.mdb"
#define ST_FILE_MODE 0600
#define ST_DIR_MODE 0700
/* st_blocks counts 512-byte units. */
#define ST_STAT_BLOCK 512

static const char *const dbi_names[ST_DBI_COUNT] = {
    [ST_DBI_KEYS] = "keys",           [ST_DBI_EXPIRES] = "expires",
    [ST_DBI_HASHES] = "hashes",       [ST_DBI_SETS] = "sets",
    [ST_DBI_ZMEMBERS] = "zmembers",   [ST_DBI_ZSCORES] = "zscores",
    [ST_DBI_LISTS] = "lists",         [ST_DBI_GARBAGE] = "garbage",
    [ST_DBI_META] = "meta",           [ST_DBI_SCRIPTS] = "scripts",
    [ST_DBI_FUNCTIONS] = "functions", [ST_DBI_CHUNKS] = "chunks",
    [ST_DBI_STREAMS] = "streams",     [ST_DBI_SGROUPS] = "sgroups",
};

int st_env_scratch(st_env *env, size_t len, uint8_t **out)
{
    int rc = st_internal_grow(&env->scratch, &env->scratch_cap, len);

    *out = env->scratch;
    return rc;
}

/*
 * Stamp a new environment with ST_SCHEMA_VERSION, accept one that has it,
 * migrate an older one this build knows (in the opening transaction, so a
 * crash leaves it as it was) and refuse anything else with ST_ESCHEMA.
 * 2 -> 3: version 3 adds the chunks database (opened by the caller) and
 * chunked strings; every version 2 record, inline strings of any length
 * included, reads the same in version 3, so the stamp is the migration.
 * 3 -> 4: version 4 adds the streams and sgroups databases (opened by
 * the caller, empty): the stamp again is the whole migration.
 */
static int check_schema(st_env *e, MDB_txn *txn)
{
    MDB_val k = { sizeof ST_META_SCHEMA - 1, ST_META_SCHEMA }, v;
    uint32_t ver = ST_SCHEMA_VERSION;
    int rc = mdb_get(txn, e->dbi[ST_DBI_META], &k, &v);

    if (rc == 0) {
        if (v.mv_size != sizeof ver)
            return ST_ESCHEMA;
        memcpy(&ver, v.mv_data, sizeof ver);
        if (ver == ST_SCHEMA_VERSION)
            return 0;
        if (ver < ST_SCHEMA_MIGRATES_FROM || ver > ST_SCHEMA_VERSION)
            return ST_ESCHEMA;
        ver = ST_SCHEMA_VERSION;
    } else if (rc != MDB_NOTFOUND) {
        return st_err_map(rc);
    }
    v.mv_size = sizeof ver;
    v.mv_data = &ver;
    return st_err_map(st_mdb_put(txn, e->dbi[ST_DBI_META], &k, &v, 0));
}

static int open_dbis(st_env *e)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(e->env, NULL, 0, &txn);

    if (rc)
        return st_err_map(rc);
    if (e->room.on)
        st_room_begin(&e->room, txn);
    for (int i = 0; i < ST_DBI_COUNT && !rc; i++)
        rc = mdb_dbi_open(txn, dbi_names[i], MDB_CREATE, &e->dbi[i]);
    rc = rc ? st_err_map(rc) : check_schema(e, txn);
    if (rc == 0)
        rc = st_dbmap_space(e, txn, &e->nstored);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    return st_err_map(mdb_txn_commit(txn));
}

/*
 * A descriptor of lock.mdb of our own, for st_durable.c to ask which
 * processes hold their byte of it (LMDB's test of a reader's liveness).
 * It is closed only after the environment: closing any descriptor of a
 * file drops the process's POSIX locks on it, LMDB's included.
 */
static int open_lockfd(st_env *e)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof path, "%s%s", e->dir, ST_LOCK_FILE) >=
        sizeof path)
        return ENAMETOOLONG;
    if ((e->lockfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno;
    return 0;
}

int st_env_open(const st_env_opts *o, st_env **out)
{
    st_env *e = calloc(1, sizeof *e);
    int rc;

    if (!e)
        return ENOMEM;
    e->lockfd = -1;
    e->databases = o->databases ? o->databases : ST_DEFAULT_DATABASES;
    e->cache = o->cache;
    e->clock = o->clock;
    e->compress_threshold = o->compress_threshold;
    e->compress_level = o->compress_level;
    if (!(e->zc = ZSTD_createCCtx()) || !(e->zd = ZSTD_createDCtx())) {
        rc = ENOMEM;
        goto fail;
    }
    e->rtxn.env = e->wtxn.env = e;
    e->wtxn.write = 1;
    if (!(e->dir = strdup(o->dir))) {
        rc = ENOMEM;
        goto fail;
    }
    if (o->boot_id && o->boot_id[0]) {
        if (strlen(o->boot_id) >= sizeof e->boot_id) {
            rc = EINVAL;
            goto fail;
        }
        memcpy(e->boot_id, o->boot_id, strlen(o->boot_id) + 1);
        if (o->nosync)
            e->gate = ST_GATE_WAIT;
        e->pressure = o->nosync;
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
    mdb_env_set_maxreaders(e->env, o->max_readers ? o->max_readers
                                                  : ST_DEFAULT_MAX_READERS);
    mdb_env_set_mapsize(e->env,
                        o->map_size ? o->map_size : ST_DEFAULT_MAP_SIZE);
    if ((rc = mdb_env_open(e->env, o->dir,
                           (o->nosync ? MDB_NOSYNC : 0) | MDB_NORDAHEAD |
                               MDB_NOTLS | (o->writemap ? MDB_WRITEMAP : 0),
                           ST_FILE_MODE)))
        goto fail_map;
    if (o->writemap) {
        e->writemap = 1;
        st_room_open(&e->room, e->env);
    }
    if ((rc = open_dbis(e)))
        goto fail;
    if (e->boot_id[0] && (rc = open_lockfd(e)))
        goto fail;
    /* Key counts per stored database (st_dbmap.h: hidden ones too). */
    e->wtxn.dkeys = calloc(e->nstored, sizeof *e->wtxn.dkeys);
    e->wtxn.dexpires = calloc(e->nstored, sizeof *e->wtxn.dexpires);
    if (!e->wtxn.dkeys || !e->wtxn.dexpires) {
        rc = ENOMEM;
        goto fail;
    }
    *out = e;
    return 0;
fail_map:
    rc = st_err_map(rc);
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
    if (e->lockfd >= 0)
        close(e->lockfd);
    free(e->dir);
    free(e->wtxn.dkeys);
    free(e->wtxn.dexpires);
    free(e->wtxn.map);
    free(e->rtxn.map);
    free(e->map_hint);
    free(e->scratch);
    free(e->span_rd);
    free(e->span_wr);
    ZSTD_freeCCtx(e->zc);
    ZSTD_freeDCtx(e->zd);
    st_txn_arena_reset(&e->rtxn);
    st_txn_arena_reset(&e->wtxn);
    free(e->rtxn.arena);
    free(e->wtxn.arena);
    free(e);
    *envp = NULL;
}

int st_env_sync(st_env *env) { return st_err_map(mdb_env_sync(env->env, 1)); }

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
    rc = st_err_map(mdb_env_copyfd2(env->env, fd, MDB_CP_COMPACT));
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
    *dead = 0;
    /* A dead syncer's pin must outlive it until a live pin is recorded. */
    if (env->boot_id[0] && !st_durable_pin_live(env))
        return 0;
    return st_err_map(mdb_reader_check(env->env, dead));
}

unsigned st_env_databases(const st_env *env) { return env->databases; }

int st_env_room_unguarded(const st_env *env) { return env->room.unguarded; }

int st_env_room_errno(const st_env *env) { return env->room.err; }

void st_env_observe(st_env *env, const st_env_observer *obs)
{
    if (obs)
        env->obs = *obs;
    else
        memset(&env->obs, 0, sizeof env->obs);
}

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
        return st_err_map(rc);
    out->map_size = info.me_mapsize;
    out->used_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
    out->last_txn = info.me_last_txnid;
    out->readers_used = info.me_numreaders;
    out->readers_max = info.me_maxreaders;
    out->file_bytes = 0;
    char file[4096];
    if ((size_t)snprintf(file, sizeof file, "%s%s", path, ST_DATA_FILE) <
            sizeof file &&
        stat(file, &fs) == 0)
        out->file_bytes = env->writemap ? (uint64_t)fs.st_blocks * ST_STAT_BLOCK
                                        : (uint64_t)fs.st_size;
    return 0;
}
