/*
 * srv_cmd_keys.c - commands on whole keys of any type: delete, exist,
 * type, expiry, iteration, rename and copy.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_scan.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_PER_S 1000
#define HALF_S_MS 500

static const char *const type_names[] = {
    [ST_TYPE_NONE] = "none",     [ST_TYPE_STRING] = "string",
    [ST_TYPE_LIST] = "list",     [ST_TYPE_SET] = "set",
    [ST_TYPE_ZSET] = "zset",     [ST_TYPE_HASH] = "hash",
    [ST_TYPE_STREAM] = "stream",
};

/* What count_keys_generic does with each key. */
enum { KEYS_DELETE, KEYS_PEEK, KEYS_TOUCH };

/*
 * DEL and UNLINK (KEYS_DELETE: collections are detached either way, O(1)
 * for both), EXISTS (KEYS_PEEK: not an access, as in Redis) and TOUCH
 * (an access): how many of the named keys were there (repeats count).
 */
static void count_keys_generic(srv_conn *c, int mode)
{
    int del = mode == KEYS_DELETE;
    struct st_txn *t = del ? srv_txn_write_or_reply(c)
                           : srv_txn_read_or_reply(c);
    long long n = 0;

    if (!t)
        return;
    for (int i = 1; i < c->argc; i++) {
        st_keyref k;
        st_rec r;
        srv_key_ref(c, i, &k);
        int rc = del ? st_keyspace_delete(t, &k, srv_cmd_now(c))
                 : mode == KEYS_PEEK
                     ? st_keyspace_peek(t, &k, srv_cmd_now(c), &r)
                     : st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == 0 && del)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", i);
        if (rc == 0)
            n++;
        else if (rc != ST_ENOTFOUND) {
            srv_txn_error(c, rc);
            return;
        }
    }
    srv_reply_int(c, n);
}

void srv_cmd_del(srv_conn *c) { count_keys_generic(c, KEYS_DELETE); }
void srv_cmd_unlink(srv_conn *c) { count_keys_generic(c, KEYS_DELETE); }
void srv_cmd_exists(srv_conn *c) { count_keys_generic(c, KEYS_PEEK); }
void srv_cmd_touch(srv_conn *c) { count_keys_generic(c, KEYS_TOUCH); }

/* Look up argv[1] of any type: 1 found, 0 absent, -1 error replied. Not
 * an access of the key (TYPE, TTL ... do not count, as in Redis). */
static int lookup_any(srv_conn *c, struct st_txn *t, st_keyref *k, st_rec *r)
{
    int rc;

    srv_key_ref(c, 1, k);
    rc = st_keyspace_peek(t, k, srv_cmd_now(c), r);
    if (rc == ST_ENOTFOUND)
        return 0;
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    return 1;
}

void srv_cmd_type(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_rec r;
    int rc;

    if (!t || (rc = lookup_any(c, t, &k, &r)) < 0)
        return;
    srv_reply_simple(c, type_names[rc ? r.type : ST_TYPE_NONE]);
}

#define EXP_NX 0x1u
#define EXP_XX 0x2u
#define EXP_GT 0x4u
#define EXP_LT 0x8u

static int parse_expire_flags_or_reply(srv_conn *c, unsigned *flags)
{
    unsigned f = 0;

    for (int j = 3; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        if (srv_util_streq(o->ptr, o->len, "nx"))
            f |= EXP_NX;
        else if (srv_util_streq(o->ptr, o->len, "xx"))
            f |= EXP_XX;
        else if (srv_util_streq(o->ptr, o->len, "gt"))
            f |= EXP_GT;
        else if (srv_util_streq(o->ptr, o->len, "lt"))
            f |= EXP_LT;
        else {
            srv_reply_errorf(c, "ERR Unsupported option %.*s", (int)o->len,
                             o->ptr);
            return -1;
        }
    }
    if ((f & EXP_NX) && (f & (EXP_XX | EXP_GT | EXP_LT))) {
        srv_reply_error(c, "ERR NX and XX, GT or LT options at the same time "
                           "are not compatible");
        return -1;
    }
    if ((f & EXP_GT) && (f & EXP_LT)) {
        srv_reply_error(c, "ERR GT and LT options at the same time are not "
                           "compatible");
        return -1;
    }
    *flags = f;
    return 0;
}

/* Whether the NX/XX/GT/LT conditions let `at` replace `cur` (0 = none). */
static int expire_allowed(unsigned f, int64_t at, int64_t cur)
{
    if ((f & EXP_NX) && cur)
        return 0;
    if ((f & EXP_XX) && !cur)
        return 0;
    if ((f & EXP_GT) && (!cur || at <= cur))
        return 0;
    if ((f & EXP_LT) && cur && at >= cur)
        return 0;
    return 1;
}

/* EXPIRE family: relative or absolute, seconds or ms. */
static void expire_generic(srv_conn *c, int unit, int absolute)
{
    struct st_txn *t;
    unsigned flags;
    int64_t at;
    st_keyref k;
    st_rec r;
    int rc;

    if (parse_expire_flags_or_reply(c, &flags) ||
        srv_args_expire_or_reply(c, &c->argv[2], unit, absolute, 1, &at))
        return;
    if (!(t = srv_txn_write_or_reply(c)) || (rc = lookup_any(c, t, &k, &r)) < 0)
        return;
    if (rc == 0 || !expire_allowed(flags, at, r.expire_at)) {
        srv_reply_int(c, 0);
        return;
    }
    if (at <= srv_cmd_now(c))
        rc = st_keyspace_delete(t, &k, srv_cmd_now(c));
    else
        rc = st_keyspace_expire_set(t, &k, srv_cmd_now(c), at);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_GENERIC,
                   at <= srv_cmd_now(c) ? "del" : "expire", 1);
    srv_reply_int(c, 1);
}

void srv_cmd_expire(srv_conn *c) { expire_generic(c, SRV_UNIT_S, 0); }
void srv_cmd_pexpire(srv_conn *c) { expire_generic(c, SRV_UNIT_MS, 0); }
void srv_cmd_expireat(srv_conn *c) { expire_generic(c, SRV_UNIT_S, 1); }
void srv_cmd_pexpireat(srv_conn *c) { expire_generic(c, SRV_UNIT_MS, 1); }

/* TTL family: remaining time (`remaining`) or the deadline, s or ms. */
static void ttl_generic(srv_conn *c, int ms, int remaining)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_rec r;
    int rc;

    if (!t || (rc = lookup_any(c, t, &k, &r)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, -2);
        return;
    }
    if (!r.expire_at) {
        srv_reply_int(c, -1);
        return;
    }
    if (!remaining) {
        srv_reply_int(c, ms ? r.expire_at : r.expire_at / MS_PER_S);
        return;
    }
    int64_t ttl = r.expire_at - srv_cmd_now(c);
    if (ttl < 0)
        ttl = 0;
    srv_reply_int(c, ms ? ttl : (ttl + HALF_S_MS) / MS_PER_S);
}

void srv_cmd_ttl(srv_conn *c) { ttl_generic(c, 0, 1); }
void srv_cmd_pttl(srv_conn *c) { ttl_generic(c, 1, 1); }
void srv_cmd_expiretime(srv_conn *c) { ttl_generic(c, 0, 0); }
void srv_cmd_pexpiretime(srv_conn *c) { ttl_generic(c, 1, 0); }

void srv_cmd_persist(srv_conn *c)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    st_rec r;
    int rc;

    if (!t || (rc = lookup_any(c, t, &k, &r)) < 0)
        return;
    if (rc == 0 || !r.expire_at) {
        srv_reply_int(c, 0);
        return;
    }
    if ((rc = st_keyspace_expire_set(t, &k, srv_cmd_now(c), 0))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_GENERIC, "persist", 1);
    srv_reply_int(c, 1);
}

/* Filter and collector shared by KEYS and SCAN. */
typedef struct key_filter {
    srv_conn *c;
    const srv_slice *match; /* NULL: all */
    int type;               /* ST_TYPE_NONE: all */
    long long n;
} key_filter;

static int collect_key(void *ctx, const uint8_t *name, size_t len, int type,
                       int64_t expire_at)
{
    key_filter *f = ctx;

    if (f->type != ST_TYPE_NONE && type != f->type)
        return 0;
    if (f->match && !(f->match->len == 1 && f->match->ptr[0] == '*') &&
        !srv_util_glob_match(f->match->ptr, f->match->len, (const char *)name,
                             len, 0))
        return 0; /* KEYS' pattern or SCAN's MATCH */
    srv_reply_bulk(f->c, name, len);
    f->n++;
    return 0;
}

void srv_cmd_keys(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    key_filter f = { c, &c->argv[1], ST_TYPE_NONE, 0 };
    uint64_t next;
    size_t mark;
    int rc;

    if (!t)
        return;
    mark = srv_reply_defer(c);
    rc = st_keyspace_scan(t, c->db, 0, SIZE_MAX, srv_cmd_now(c), collect_key,
                          &f, &next);
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_defer_array(c, mark, f.n);
}

static int type_by_name(const srv_slice *s)
{
    for (int i = ST_TYPE_STRING; i <= ST_TYPE_STREAM; i++)
        if (srv_util_streq(s->ptr, s->len, type_names[i]))
            return i;
    return -1;
}

void srv_cmd_scan(srv_conn *c)
{
    struct st_txn *t;
    key_filter f = { c, NULL, ST_TYPE_NONE, 0 };
    srv_scan_args a;
    uint64_t next = 0;
    size_t mark;
    int rc;

    if (srv_scan_args_or_reply(c, 1, 1, &a))
        return;
    f.match = a.match;
    if (a.type && (f.type = type_by_name(a.type)) < 0) {
        /* No key has an unknown type: an empty, finished iteration. */
        srv_reply_array(c, 2);
        srv_reply_bulk(c, "0", 1);
        srv_reply_array(c, 0);
        return;
    }
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    mark = srv_reply_defer(c);
    rc = st_keyspace_scan(t, c->db, a.cursor, (size_t)a.count, srv_cmd_now(c),
                          collect_key, &f, &next);
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_scan_reply_finish(c, mark, next, f.n);
}

/* RENAME and RENAMENX. */
static void rename_generic(srv_conn *c, int nx)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref src, dst;
    int rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &src);
    srv_key_ref(c, 2, &dst);
    rc = st_keyspace_rename(t, &src, &dst, srv_cmd_now(c), nx);
    if (rc == 0 &&
        (src.len != dst.len || memcmp(src.name, dst.name, src.len))) {
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "rename_from", 1);
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "rename_to", 2);
    }
    if (rc == ST_ENOTFOUND)
        srv_reply_error(c, SRV_ERR_NO_KEY);
    else if (rc == ST_EEXISTS)
        srv_reply_int(c, 0);
    else if (rc)
        srv_txn_error(c, rc);
    else if (nx)
        srv_reply_int(c, 1);
    else
        srv_reply_ok(c);
}

void srv_cmd_rename(srv_conn *c) { rename_generic(c, 0); }
void srv_cmd_renamenx(srv_conn *c) { rename_generic(c, 1); }

static int reply_random_key(void *ctx, const uint8_t *name, size_t len,
                            int type, int64_t expire_at)
{
    srv_reply_bulk(ctx, name, len);
    return 1;
}

void srv_cmd_randomkey(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    uint64_t r = ((uint64_t)random() << 33) ^ ((uint64_t)random() << 2) ^
                 (uint64_t)random();
    int rc;

    if (!t)
        return;
    rc = st_keyspace_random_key(t, c->db, r, srv_cmd_now(c), reply_random_key,
                                c);
    if (rc == ST_ENOTFOUND)
        srv_reply_null(c);
    else if (rc)
        srv_txn_error(c, rc);
}

void srv_cmd_copy(srv_conn *c)
{
    struct st_txn *t;
    int db = (int)c->db;
    int replace = 0, rc;
    st_keyref src, dst;

    for (int j = 3; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        if (srv_util_streq(o->ptr, o->len, "replace")) {
            replace = 1;
        } else if (srv_util_streq(o->ptr, o->len, "db") && j + 1 < c->argc) {
            /* Checked where it comes, as Redis does (before a later bad
             * option). */
            if (srv_args_int_or_reply(c, &c->argv[++j], &db))
                return;
            if (db < 0 || db >= srv_her.cfg->databases) {
                srv_reply_error(c, "ERR DB index is out of range");
                return;
            }
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    srv_key_ref(c, 1, &src);
    st_codec_keyref_init(&dst, (unsigned)db, c->argv[2].ptr, c->argv[2].len);
    if (src.db == dst.db && src.len == dst.len &&
        memcmp(src.name, dst.name, src.len) == 0) {
        srv_reply_error(c, "ERR source and destination objects are the same");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    rc = st_keyspace_copy(t, &src, &dst, srv_cmd_now(c), replace);
    if (rc == ST_ENOTFOUND || rc == ST_EEXISTS)
        srv_reply_int(c, 0);
    else if (rc)
        srv_txn_error(c, rc);
    else {
        srv_notify_db(c, dst.db, SRV_NOTIFY_GENERIC, "copy_to", c->argv[2].ptr,
                      c->argv[2].len);
        srv_reply_int(c, 1);
    }
}
