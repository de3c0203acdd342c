/*
 * srv_cmd_hash.c - hash commands. Families share one generic function
 * each: set (HSET HMSET), keys/values (HGETALL HKEYS HVALS). Whole-hash
 * replies stream from a storage cursor into the output buffer.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_scan.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ERR_HASH_NOT_INT[] = "ERR hash value is not an integer";
static const char ERR_HASH_NOT_FLOAT[] = "ERR hash value is not a float";

/* argv[i] as a hash: see srv_coll_open_or_reply. */
static int open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                         st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_HASH, k, o);
}

/* Open argv[1] for writing, creating it when absent; -1 after a reply. */
static int open_write_or_reply(srv_conn *c, struct st_txn *t, st_keyref *k,
                               st_obj *o)
{
    int rc = open_or_reply(c, t, 1, k, o);

    if (rc == 0 && (rc = st_coll_create(t, o))) {
        srv_txn_error(c, rc);
        return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* HSET / HMSET: field-value pairs from argv[2]. */
static void set_generic(srv_conn *c, int reply_ok)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    long long added = 0;
    int rc;

    if (c->argc % 2) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         c->cmd->name);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)) || open_write_or_reply(c, t, &k, &o))
        return;
    for (int j = 2; j < c->argc; j += 2) {
        int created;
        rc = st_hash_set(t, &o, c->argv[j].ptr, c->argv[j].len,
                         c->argv[j + 1].ptr, c->argv[j + 1].len, 0, &created);
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        added += created;
    }
    if (srv_coll_save_or_reply(c, t, &o))
        return;
    srv_notify_arg(c, SRV_NOTIFY_HASH, "hset", 1);
    if (reply_ok)
        srv_reply_ok(c);
    else
        srv_reply_int(c, added);
}

void srv_cmd_hset(srv_conn *c) { set_generic(c, 0); }
void srv_cmd_hmset(srv_conn *c) { set_generic(c, 1); }

void srv_cmd_hsetnx(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    int rc, created;

    if (!(t = srv_txn_write_or_reply(c)) || open_write_or_reply(c, t, &k, &o))
        return;
    rc = st_hash_set(t, &o, c->argv[2].ptr, c->argv[2].len, c->argv[3].ptr,
                     c->argv[3].len, 1, &created);
    if (rc == ST_EEXISTS) {
        srv_reply_int(c, 0);
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    if (srv_coll_save_or_reply(c, t, &o) == 0) {
        srv_notify_arg(c, SRV_NOTIFY_HASH, "hset", 1);
        srv_reply_int(c, 1);
    }
}

/* Reply the value of field argv[i] of `o` (nil when absent). */
static int reply_field(srv_conn *c, struct st_txn *t, const st_obj *o, int i)
{
    const uint8_t *v;
    size_t vl;
    int rc = o->exists
                 ? st_hash_get(t, o, c->argv[i].ptr, c->argv[i].len, &v, &vl)
                 : ST_ENOTFOUND;

    if (rc == ST_ENOTFOUND)
        srv_reply_null(c);
    else if (rc)
        return rc;
    else
        srv_reply_bulk(c, v, vl);
    return 0;
}

void srv_cmd_hget(srv_conn *c)
{
    srv_coll_reply_members(c, ST_TYPE_HASH, 0, reply_field);
}

void srv_cmd_hmget(srv_conn *c)
{
    srv_coll_reply_members(c, ST_TYPE_HASH, 1, reply_field);
}

/* HEXISTS and HSTRLEN (`length`): an integer about the field argv[2]. */
static void field_int_generic(srv_conn *c, int length)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    const uint8_t *v;
    size_t vl = 0;
    int rc;

    if (!t || (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    rc = st_hash_get(t, &o, c->argv[2].ptr, c->argv[2].len, &v, &vl);
    if (rc && rc != ST_ENOTFOUND)
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, rc ? 0 : length ? (long long)vl : 1);
}

void srv_cmd_hexists(srv_conn *c) { field_int_generic(c, 0); }
void srv_cmd_hstrlen(srv_conn *c) { field_int_generic(c, 1); }

void srv_cmd_hlen(srv_conn *c) { srv_coll_reply_card(c, ST_TYPE_HASH); }

void srv_cmd_hdel(srv_conn *c)
{
    srv_coll_remove_members(c, ST_TYPE_HASH, st_hash_del);
}

static void getall_generic(srv_conn *c, unsigned want)
{
    srv_coll_reply_all(c, ST_TYPE_HASH, want, st_hash_scan);
}

void srv_cmd_hgetall(srv_conn *c)
{
    getall_generic(c, SRV_COLL_NAMES | SRV_COLL_VALUES);
}

void srv_cmd_hkeys(srv_conn *c) { getall_generic(c, SRV_COLL_NAMES); }
void srv_cmd_hvals(srv_conn *c) { getall_generic(c, SRV_COLL_VALUES); }

void srv_cmd_hincrby(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    const uint8_t *v;
    size_t vl;
    long long by, cur = 0;
    char buf[SRV_LLSTR_SIZE];
    int rc, created;

    if (srv_args_ll_or_reply(c, &c->argv[3], &by) ||
        !(t = srv_txn_write_or_reply(c)) || open_write_or_reply(c, t, &k, &o))
        return;
    rc = o.c.card ? st_hash_get(t, &o, c->argv[2].ptr, c->argv[2].len, &v, &vl)
                  : ST_ENOTFOUND;
    if (rc == 0 && !srv_util_str2ll((const char *)v, vl, &cur)) {
        srv_reply_error(c, ERR_HASH_NOT_INT);
        return;
    }
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return;
    }
    if ((by < 0 && cur < 0 && by < LLONG_MIN - cur) ||
        (by > 0 && cur > 0 && by > LLONG_MAX - cur)) {
        srv_reply_error(c, "ERR increment or decrement would overflow");
        return;
    }
    cur += by;
    int n = srv_util_ll2str(buf, cur);
    if ((rc = st_hash_set(t, &o, c->argv[2].ptr, c->argv[2].len, buf, (size_t)n,
                          0, &created)) ||
        (rc = st_coll_save(t, &o, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_HASH, "hincrby", 1);
    srv_reply_int(c, cur);
}

void srv_cmd_hincrbyfloat(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    const uint8_t *v;
    size_t vl;
    long double by, cur = 0;
    char buf[SRV_LDSTR_SIZE];
    int rc, created;

    if (!srv_util_str2ld(c->argv[3].ptr, c->argv[3].len, &by)) {
        srv_reply_error(c, SRV_ERR_NOT_FLOAT);
        return;
    }
    if (isnan(by) || isinf(by)) {
        srv_reply_error(c, "ERR value is NaN or Infinity");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)) || open_write_or_reply(c, t, &k, &o))
        return;
    rc = o.c.card ? st_hash_get(t, &o, c->argv[2].ptr, c->argv[2].len, &v, &vl)
                  : ST_ENOTFOUND;
    if (rc == 0 && !srv_util_str2ld((const char *)v, vl, &cur)) {
        srv_reply_error(c, ERR_HASH_NOT_FLOAT);
        return;
    }
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return;
    }
    cur += by;
    if (isnan(cur) || isinf(cur)) {
        srv_reply_error(c, "ERR increment would produce NaN or Infinity");
        return;
    }
    int n = srv_util_ld2str(buf, sizeof buf, cur);
    if ((rc = st_hash_set(t, &o, c->argv[2].ptr, c->argv[2].len, buf, (size_t)n,
                          0, &created)) ||
        (rc = st_coll_save(t, &o, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_HASH, "hincrbyfloat", 1);
    srv_reply_bulk(c, buf, (size_t)n);
}

/* HRANDFIELD with a count: the pairs of WITHVALUES are nested arrays in
 * RESP3 and flat in RESP2. */
typedef struct rand_ctx {
    srv_conn *c;
    int withvalues;
} rand_ctx;

static int emit_rand(void *ctx, const uint8_t *f, size_t fl, const uint8_t *v,
                     size_t vl)
{
    rand_ctx *r = ctx;

    if (r->withvalues && r->c->resp == 3)
        srv_reply_array(r->c, 2);
    srv_reply_bulk(r->c, f, fl);
    if (r->withvalues)
        srv_reply_bulk(r->c, v, vl);
    return 0;
}

void srv_cmd_hrandfield(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    long long count = 1;
    rand_ctx r = { c, 0 };
    size_t mark;
    int rc;

    if (c->argc > 4 ||
        (c->argc == 4 &&
         !srv_util_streq(c->argv[3].ptr, c->argv[3].len, "withvalues"))) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    r.withvalues = c->argc == 4;
    if (c->argc >= 3 && srv_args_rand_count_or_reply(c, r.withvalues, &count))
        return;
    if (!(t = srv_txn_read_or_reply(c)) || open_or_reply(c, t, 1, &k, &o) < 0)
        return;
    if (c->argc == 2) {
        if (!o.exists) {
            srv_reply_null(c);
            return;
        }
        rc = st_hash_sample(t, &o, srv_coll_rand64(), 1, emit_rand, &r);
        if (rc)
            srv_txn_error(c, rc);
        return;
    }
    if (!o.exists || count == 0) {
        srv_reply_array(c, 0);
        return;
    }
    mark = c->out.len;
    if (count > 0) {
        uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
        if (r.withvalues && c->resp == 2)
            srv_reply_array(c, (long long)n * 2);
        else
            srv_reply_array(c, (long long)n);
        rc = st_hash_sample(t, &o, srv_coll_rand64(), n, emit_rand, &r);
    } else {
        unsigned long long n = 0ull - (unsigned long long)count;
        if (srv_reply_room_or_drop(c, n,
                                   SRV_REPLY_BULK_MIN * (r.withvalues + 1)))
            return;
        if (r.withvalues && c->resp == 2)
            srv_reply_array(c, (long long)n * 2);
        else
            srv_reply_array(c, (long long)n);
        rc = 0;
        for (unsigned long long i = 0; i < n && !rc && !srv_reply_dropped(c);
             i++)
            rc = st_hash_sample(t, &o, srv_coll_rand64(), 1, emit_rand, &r);
    }
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

static int hscan_step(srv_conn *c, struct st_txn *t, const st_obj *o,
                      const srv_scan_args *a, uint64_t *next, long long *n)
{
    srv_coll_emit e = { c, SRV_COLL_NAMES | SRV_COLL_VALUES, a->match, 0 };
    int rc = st_hash_scan(t, o, a->cursor, (size_t)a->count, srv_coll_emit_elem,
                          &e, next);

    *n = e.n;
    return rc;
}

void srv_cmd_hscan(srv_conn *c)
{
    srv_scan_collection(c, ST_TYPE_HASH, hscan_step);
}
