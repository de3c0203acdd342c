/*
 * srv_rdbfile.c - writing the keyspace as an RDB stream, and importing
 * an RDB through the hidden database numbers (srv_rdbfile.h).
 */
#include "server/srv_rdbfile.h"
#include "rdb/rdb_err.h"
#include "rdb/rdb_file.h"
#include "rdb/rdb_obj.h"
#include "server/srv_heritage.h"
#include "server/srv_rdbkey.h"
#include "storage/st_bulk.h"
#include "storage/st_dbmap.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MS_PER_S 1000
#define AUX_TEXT 32

/* ---- writing ---- */

typedef struct wr_ctx {
    struct st_txn *t;
    rdb_writer *w;
    rdb_enc e;
    unsigned db;
    int64_t now;
    srv_rdbfile_stats *st;
    int rc;
} wr_ctx;

static int write_key(void *ctx, const uint8_t *name, size_t len, int type,
                     int64_t expire_at)
{
    wr_ctx *x = ctx;
    st_keyref k;
    st_rec r;
    int rc;

    st_codec_keyref_init(&k, x->db, name, len);
    rc = st_keyspace_lookup(x->t, &k, x->now, &r);
    if (rc == ST_ENOTFOUND) {
        x->st->expired++;
        return 0;
    }
    if (rc == 0 && r.expire_at)
        rc = rdb_file_write_expire(x->w, r.expire_at) ? x->w->err : 0;
    if (rc == 0)
        rc = srv_rdbkey_encode(x->t, &k, &r, x->w, &x->e, name, len);
    if (rc) {
        x->rc = rc;
        return 1;
    }
    x->st->keys++;
    x->st->by_type[r.type]++;
    x->st->expires += r.expire_at != 0;
    /* The values this key borrowed are encoded: give their memory back. */
    st_bulk_values_release(x->t);
    return 0;
}

static int write_aux(rdb_writer *w, int64_t now)
{
    char ctime[AUX_TEXT];

    snprintf(ctime, sizeof ctime, "%" PRId64, now / MS_PER_S);
    if (rdb_file_write_aux(w, "redis-ver", SRV_REDIS_VERSION) ||
        rdb_file_write_aux(w, "redis-bits", "64") ||
        rdb_file_write_aux(w, "ctime", ctime) ||
        rdb_file_write_aux(w, "used-mem", "0") ||
        rdb_file_write_aux(w, "aof-base", "0") ||
        rdb_file_write_aux(w, "larder-ver", SRV_VERSION))
        return w->err;
    return 0;
}

int srv_rdbfile_write(struct st_env *env, int64_t now, rdb_writer *w,
                      srv_rdbfile_stats *st)
{
    wr_ctx x = { .w = w, .now = now, .st = st };
    unsigned dbs = st_env_databases(env);
    uint64_t next;
    int rc;

    memset(st, 0, sizeof *st);
    rdb_enc_init(&x.e);
    if ((rc = rdb_file_write_header(w)) || (rc = write_aux(w, now)))
        goto out;
    if ((rc = st_txn_begin(env, 0, &x.t)))
        goto out;
    for (unsigned db = 0; db < dbs && !rc; db++) {
        uint64_t keys, expires;
        if ((rc = st_keyspace_dbsize(x.t, db, &keys, &expires)) || keys == 0)
            continue;
        if ((rc = rdb_file_write_select(w, db, keys, expires)))
            break;
        st->dbs++;
        x.db = db;
        rc = st_keyspace_scan(x.t, db, 0, SIZE_MAX, now, write_key, &x, &next);
        if (rc == 0)
            rc = x.rc;
    }
    st_txn_commit(&x.t);
    if (rc == 0)
        rc = rdb_file_write_end(w);
out:
    rdb_enc_fini(&x.e);
    return rc;
}

/* ---- importing ---- */

typedef struct imp {
    st_env *env;
    rdb_reader *r;
    unsigned dbs;
    int64_t now;
    struct st_txn *t;
    uint64_t in_txn; /* keys and elements since the last commit */
    st_keyref k;
    srv_rdbkey_load l;
    rdb_sink sink;
    int skip; /* the current key is not kept */
    int ttl;
    srv_rdbfile_stats *st;
    srv_rdbfile_progress_fn *progress;
    void *pctx;
    int rc; /* the storage code that stopped us */
    char *err;
    size_t errlen;
} imp;

static void say(imp *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(imp *x, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
}

/* Commit the staging transaction and begin the next. */
static int recommit(imp *x)
{
    int rc;

    x->in_txn = 0;
    if ((rc = st_txn_commit(&x->t)))
        return rc;
    return st_txn_begin(x->env, 1, &x->t);
}

static int rotate(void *ctx, struct st_txn **t)
{
    imp *x = ctx;
    int rc = recommit(x);

    *t = x->t;
    return rc;
}

static int on_select(void *ctx, uint64_t db)
{
    imp *x = ctx;

    if (db < x->dbs)
        return 0;
    say(x,
        "offset %" PRIu64 ": the file has database %" PRIu64
        " but this server has `databases %u`: raise databases",
        rdb_reader_offset(x->r), db, x->dbs);
    x->rc = ST_EEXISTS;
    return 1;
}

static int on_key(void *ctx, uint64_t db, const uint8_t *name, size_t n,
                  int type, int64_t expire, const rdb_sink **obj)
{
    imp *x = ctx;

    x->skip = 0;
    if (expire != -1 && expire <= x->now) {
        x->skip = 1;
        x->st->expired++;
        *obj = NULL;
        return 0;
    }
    st_codec_keyref_init(&x->k, x->dbs + (unsigned)db, name, n);
    srv_rdbkey_load_init(&x->l, x->t, &x->k, x->now, expire == -1 ? 0 : expire);
    x->l.batch = SRV_RDBFILE_BATCH;
    x->l.rotate = rotate;
    x->l.rotate_ctx = x;
    x->ttl = expire != -1;
    *obj = srv_rdbkey_load_sink(&x->l, &x->sink);
    return 0;
}

static int on_key_done(void *ctx, int rc)
{
    imp *x = ctx;
    int type = x->l.opened ? x->l.o.type : ST_TYPE_STRING;

    if (x->skip)
        return 0;
    if (rc == RDB_EEMPTY) {
        x->st->empty++;
        return 0;
    }
    if ((rc = srv_rdbkey_load_finish(&x->l))) {
        x->rc = rc;
        return 1;
    }
    x->st->keys++;
    x->st->by_type[type]++;
    x->st->expires += x->ttl;
    x->in_txn += 1 + x->l.since_rotate;
    if (x->in_txn >= SRV_RDBFILE_BATCH) {
        if ((rc = recommit(x))) {
            x->rc = rc;
            return 1;
        }
        if (x->progress)
            x->progress(x->pctx, x->st, rdb_reader_offset(x->r), x->r->size);
    }
    return 0;
}

/* Empty the hidden numbers a load owns (before it, after a failure, and
 * the old data after the switch), then drop the claim if `release`. */
static int clear_hidden(imp *x, int release)
{
    struct st_txn *t;
    uint64_t ver;
    int rc = 0;

    for (unsigned i = 0; i < x->dbs && !rc; i++)
        rc = st_keyspace_flush(x->env, (int)(x->dbs + i), &ver);
    if (rc || !release)
        return rc;
    if ((rc = st_txn_begin(x->env, 1, &t)))
        return rc;
    if ((rc = st_dbmap_stage_set(t, 0))) {
        st_txn_abort(&t);
        return rc;
    }
    return st_txn_commit(&t);
}

/*
 * Claim the hidden numbers: they must be empty or left by an earlier
 * import (the staging record says how many it owned); then emptied.
 */
static int claim_hidden(imp *x)
{
    struct st_txn *t;
    unsigned owned;
    int rc;

    if ((rc = st_txn_begin(x->env, 1, &t)))
        return rc;
    rc = st_dbmap_stage_get(t, &owned);
    for (unsigned i = owned; i < x->dbs && rc == 0; i++) {
        uint64_t keys, expires;
        if ((rc = st_keyspace_dbsize(t, x->dbs + i, &keys, &expires)))
            break;
        if (keys) {
            say(x,
                "database %u (hidden: past `databases %u`) holds %" PRIu64
                " keys, and the import needs it to stage database %u; "
                "see them with a larger `databases`, or empty it",
                x->dbs + i, x->dbs, keys, i);
            rc = ST_EEXISTS;
        }
    }
    if (rc == 0)
        rc = st_dbmap_stage_set(t, x->dbs);
    if (rc) {
        st_txn_abort(&t);
        return rc;
    }
    if ((rc = st_txn_commit(&t)))
        return rc;
    return clear_hidden(x, 0);
}

/* The switch: every visible number swaps with its hidden one, in one
 * transaction; *replaced gets the keys the visible ones held. */
static int switch_in(imp *x)
{
    struct st_txn *t;
    int rc;

    if ((rc = st_txn_begin(x->env, 1, &t)))
        return rc;
    for (unsigned i = 0; i < x->dbs && rc == 0; i++) {
        uint64_t keys, expires;
        rc = st_keyspace_dbsize(t, i, &keys, &expires);
        x->st->replaced += keys;
        if (rc == 0)
            rc = st_dbmap_swap(t, i, x->dbs + i);
    }
    if (rc) {
        st_txn_abort(&t);
        return rc;
    }
    return st_txn_commit(&t);
}

static void storage_failure(imp *x, const char *when, int rc)
{
    if (!x->err[0])
        say(x, "%s: %s", when, rc > 0 ? strerror(rc) : st_strerror(rc));
}

/* The sentence for a failed read: the file's fault, or storage's. */
static void fail_reason(imp *x, int rc)
{
    int lerr = x->l.err;

    if (x->err[0])
        return;
    if (x->rc && x->rc != ST_EEXISTS) {
        storage_failure(x, "writing", x->rc);
    } else if (lerr == ST_EEXISTS || lerr == ST_EWRONGTYPE) {
        say(x, "offset %" PRIu64 ": %s: the key comes twice in the file",
            x->r->err_off, x->r->why);
    } else if (lerr) {
        say(x, "offset %" PRIu64 ": %s: %s", x->r->err_off, x->r->why,
            lerr > 0 ? strerror(lerr) : st_strerror(lerr));
    } else {
        say(x, "offset %" PRIu64 ": %s", x->r->err_off,
            x->r->why[0] ? x->r->why : rdb_strerror(rc));
    }
}

int srv_rdbfile_import(struct st_env *env, rdb_reader *r, int64_t now,
                       srv_rdbfile_stats *st, srv_rdbfile_progress_fn *fn,
                       void *ctx, char *err, size_t errlen)
{
    imp x = { .env = env,
              .r = r,
              .dbs = st_env_databases(env),
              .now = now,
              .st = st,
              .progress = fn,
              .pctx = ctx,
              .err = err,
              .errlen = errlen };
    rdb_file_sink s = { .ctx = &x,
                        .select_db = on_select,
                        .key = on_key,
                        .key_done = on_key_done };
    rdb_scratch sc = { 0 };
    rdb_buf keybuf = { 0 };
    int rc;

    memset(st, 0, sizeof *st);
    err[0] = '\0';
    if ((rc = claim_hidden(&x))) {
        storage_failure(&x, "preparing the staging databases", rc);
        return rc;
    }
    if ((rc = st_txn_begin(env, 1, &x.t))) {
        storage_failure(&x, "beginning a transaction", rc);
        clear_hidden(&x, 1);
        return rc;
    }
    rc = rdb_file_read(r, &s, &sc, &keybuf, &st->version);
    if (rc == 0 && (rc = st_txn_commit(&x.t)))
        storage_failure(&x, "committing", rc);
    else if (rc) {
        st_txn_abort(&x.t);
        fail_reason(&x, rc);
    }
    rdb_scratch_free(&sc);
    rdb_buf_free(&keybuf);
    if (rc == 0 && (rc = switch_in(&x)))
        storage_failure(&x, "switching the databases in", rc);
    /* Failed: what was staged goes. Done: the old keys go. */
    int crc = clear_hidden(&x, 1);
    if (rc == 0 && crc)
        storage_failure(&x,
                        "emptying the old databases (the import is "
                        "complete; the next import empties them)",
                        crc);
    if (rc == 0) {
        for (unsigned i = 0; i < x.dbs; i++) {
            struct st_txn *t;
            uint64_t keys = 0, expires;
            if (st_txn_begin(env, 0, &t) == 0) {
                st_keyspace_dbsize(t, i, &keys, &expires);
                st_txn_commit(&t);
            }
            st->dbs += keys > 0;
        }
    }
    return rc ? rc : 0;
}
