/*
 * srv_cmd_string.c - string commands. Families share one generic function
 * each: get (GET GETDEL GETEX), set (SET SETNX SETEX PSETEX GETSET),
 * incr (INCR DECR INCRBY DECRBY), range (GETRANGE SUBSTR).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#define SET_NX 0x01u
#define SET_XX 0x02u
#define SET_GET 0x04u
#define SET_KEEPTTL 0x08u
#define SET_EX 0x10u
#define SET_PX 0x20u
#define SET_EXAT 0x40u
#define SET_PXAT 0x80u
#define SET_PERSIST 0x100u
#define SET_ANY_EXPIRE (SET_EX | SET_PX | SET_EXAT | SET_PXAT)

static const char ERR_TOO_BIG[] =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

static int check_length_or_reply(srv_conn *c, unsigned long long len)
{
    if (len > (unsigned long long)srv_her.cfg->proto_max_bulk_len) {
        srv_reply_error(c, ERR_TOO_BIG);
        return -1;
    }
    return 0;
}

/*
 * Parse SET/GETEX options from argv[first..]. `allowed` limits them to the
 * command's own. On success *flags and *expire_arg (the expire option's
 * value, NULL if none; parsed later by expire_value_or_reply, as Redis
 * does) are set; else the syntax error was replied and -1 returned.
 */
static int parse_set_options(srv_conn *c, int first, unsigned allowed,
                             unsigned *flags, const srv_slice **expire_arg)
{
    const srv_slice *expire = NULL;
    unsigned f = 0;

    for (int j = first; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        int has_next = j + 1 < c->argc;
        unsigned add = 0;

        if (srv_util_streq(o->ptr, o->len, "nx") && !(f & SET_XX))
            add = SET_NX;
        else if (srv_util_streq(o->ptr, o->len, "xx") && !(f & SET_NX))
            add = SET_XX;
        else if (srv_util_streq(o->ptr, o->len, "get"))
            add = SET_GET;
        else if (srv_util_streq(o->ptr, o->len, "keepttl") &&
                 !(f & (SET_PERSIST | SET_ANY_EXPIRE)))
            add = SET_KEEPTTL;
        else if (srv_util_streq(o->ptr, o->len, "persist") &&
                 !(f & (SET_KEEPTTL | SET_ANY_EXPIRE)))
            add = SET_PERSIST;
        else if (has_next) {
            if (srv_util_streq(o->ptr, o->len, "ex"))
                add = SET_EX;
            else if (srv_util_streq(o->ptr, o->len, "px"))
                add = SET_PX;
            else if (srv_util_streq(o->ptr, o->len, "exat"))
                add = SET_EXAT;
            else if (srv_util_streq(o->ptr, o->len, "pxat"))
                add = SET_PXAT;
            /* The same expire option may repeat (the last wins), as in
             * Redis; a different one conflicts. */
            if (add &&
                (f & (SET_KEEPTTL | SET_PERSIST | (SET_ANY_EXPIRE & ~add))))
                add = 0;
            if (add)
                expire = &c->argv[++j];
        }
        if (!add || !(add & allowed)) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        f |= add;
    }
    *flags = f;
    *expire_arg = expire;
    return 0;
}

/* The absolute expiry of a parsed expire option (none: *at = 0). */
static int expire_value_or_reply(srv_conn *c, unsigned f,
                                 const srv_slice *expire, int64_t *at)
{
    *at = 0;
    if (!expire)
        return 0;
    return srv_args_expire_or_reply(c, expire,
                                    f & (SET_EX | SET_EXAT) ? SRV_UNIT_S
                                                            : SRV_UNIT_MS,
                                    (f & (SET_EXAT | SET_PXAT)) != 0, 0, at);
}

/*
 * The SET family: store argv[vi] at argv[1] under `flags` with absolute
 * expiry `at`. Replies OK / nil (NX, XX not met) / the old value (GET) /
 * 1 or 0 (`reply_int`, SETNX).
 */
static void set_generic(srv_conn *c, int vi, unsigned flags, int64_t at,
                        int reply_int)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    st_rec r;
    int found, rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &k);
    rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return;
    }
    found = rc == 0;
    if (flags & SET_GET) {
        if (found && r.type != ST_TYPE_STRING) {
            srv_reply_error(c, SRV_ERR_WRONGTYPE);
            return;
        }
        if (!found)
            srv_reply_null(c);
        else if (srv_key_reply_string(c, t, &r, 0, UINT64_MAX))
            return;
    }
    if (((flags & SET_NX) && found) || ((flags & SET_XX) && !found)) {
        if (reply_int)
            srv_reply_int(c, 0);
        else if (!(flags & SET_GET))
            srv_reply_null(c);
        return;
    }
    if (flags & SET_KEEPTTL)
        at = found ? r.expire_at : 0;
    if (at && at <= srv_cmd_now(c))
        rc = found ? st_keyspace_delete(t, &k, srv_cmd_now(c))
                   : 0; /* born expired */
    else
        rc = st_keyspace_string_set(t, &k, c->argv[vi].ptr, c->argv[vi].len,
                                    at);
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_STRING, "set", 1);
    if (at && !(flags & SET_KEEPTTL))
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "expire", 1);
    if (reply_int)
        srv_reply_int(c, 1);
    else if (!(flags & SET_GET))
        srv_reply_ok(c);
}

void srv_cmd_set(srv_conn *c)
{
    const srv_slice *expire;
    unsigned flags;
    int64_t at;

    if (parse_set_options(c, 3,
                          SET_NX | SET_XX | SET_GET | SET_KEEPTTL |
                              SET_ANY_EXPIRE,
                          &flags, &expire) == 0 &&
        expire_value_or_reply(c, flags, expire, &at) == 0)
        set_generic(c, 2, flags, at, 0);
}

void srv_cmd_setnx(srv_conn *c) { set_generic(c, 2, SET_NX, 0, 1); }

static void setex_generic(srv_conn *c, int unit)
{
    int64_t at;

    if (srv_args_expire_or_reply(c, &c->argv[2], unit, 0, 0, &at) == 0)
        set_generic(c, 3, 0, at, 0);
}

void srv_cmd_setex(srv_conn *c) { setex_generic(c, SRV_UNIT_S); }
void srv_cmd_psetex(srv_conn *c) { setex_generic(c, SRV_UNIT_MS); }
void srv_cmd_getset(srv_conn *c) { set_generic(c, 2, SET_GET, 0, 0); }

/* What the get family does after reading the value. */
enum get_then { GET_ONLY, GET_DELETE, GET_EXPIRE };

/*
 * GET, GETDEL, GETEX: reply the value, then delete it or change its
 * expiry. GETEX's expire value is parsed only once the key is found, as
 * Redis does. The reply is built before the write, which may move the
 * value.
 */
static void get_generic(srv_conn *c, int then, unsigned flags,
                        const srv_slice *expire)
{
    struct st_txn *t = then == GET_ONLY ? srv_txn_read_or_reply(c)
                                        : srv_txn_write_or_reply(c);
    st_keyref k;
    st_rec r;
    int64_t at = 0;
    int rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &k);
    if ((rc = srv_key_lookup_string(c, t, &k, &r)) <= 0) {
        if (rc == 0)
            srv_reply_null(c);
        return;
    }
    if (expire_value_or_reply(c, flags, expire, &at) ||
        srv_key_reply_string(c, t, &r, 0, UINT64_MAX))
        return;
    rc = 0;
    if (then == GET_DELETE ||
        (then == GET_EXPIRE && at && at <= srv_cmd_now(c))) {
        rc = st_keyspace_delete(t, &k, srv_cmd_now(c));
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
    } else if (then == GET_EXPIRE && (at || (flags & SET_PERSIST))) {
        int had_ttl = r.expire_at != 0;
        rc = st_keyspace_expire_set(t, &k, srv_cmd_now(c), at);
        if (at)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "expire", 1);
        else if (had_ttl)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "persist", 1);
    }
    if (rc)
        srv_txn_error(c, rc); /* poisons: the group is replayed */
}

void srv_cmd_get(srv_conn *c) { get_generic(c, GET_ONLY, 0, NULL); }
void srv_cmd_getdel(srv_conn *c) { get_generic(c, GET_DELETE, 0, NULL); }

void srv_cmd_getex(srv_conn *c)
{
    const srv_slice *expire;
    unsigned flags;

    if (parse_set_options(c, 2, SET_ANY_EXPIRE | SET_PERSIST, &flags, &expire))
        return;
    get_generic(c, flags ? GET_EXPIRE : GET_ONLY, flags, expire);
}

void srv_cmd_mget(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);

    if (!t)
        return;
    srv_reply_array(c, c->argc - 1);
    for (int i = 1; i < c->argc; i++) {
        st_keyref k;
        st_rec r;
        srv_key_ref(c, i, &k);
        int rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == 0 && r.type == ST_TYPE_STRING) {
            if (srv_key_reply_string(c, t, &r, 0, UINT64_MAX))
                return;
        } else {
            srv_reply_null(c);
        }
    }
}

/* MSET and MSETNX: all keys set in the command's transaction. */
static void mset_generic(srv_conn *c, int nx)
{
    struct st_txn *t;

    if (c->argc % 2 == 0) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         c->cmd->name);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    if (nx) {
        for (int i = 1; i < c->argc; i += 2) {
            st_keyref k;
            st_rec r;
            srv_key_ref(c, i, &k);
            int rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
            if (rc == 0) {
                srv_reply_int(c, 0);
                return;
            }
            if (rc != ST_ENOTFOUND) {
                srv_txn_error(c, rc);
                return;
            }
        }
    }
    for (int i = 1; i < c->argc; i += 2) {
        st_keyref k;
        srv_key_ref(c, i, &k);
        int rc = st_keyspace_string_set(t, &k, c->argv[i + 1].ptr,
                                        c->argv[i + 1].len, 0);
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        srv_notify_arg(c, SRV_NOTIFY_STRING, "set", i);
    }
    if (nx)
        srv_reply_int(c, 1);
    else
        srv_reply_ok(c);
}

void srv_cmd_mset(srv_conn *c) { mset_generic(c, 0); }
void srv_cmd_msetnx(srv_conn *c) { mset_generic(c, 1); }

/*
 * The INCR family's start: the write transaction and the string at
 * argv[1] (its TTL in *at, kept by the update). 1 found (r), 0 absent,
 * -1 after an error reply.
 */
static int open_number_or_reply(srv_conn *c, struct st_txn **t, st_keyref *k,
                                st_rec *r, int64_t *at)
{
    int rc;

    *at = 0;
    if (!(*t = srv_txn_write_or_reply(c)))
        return -1;
    srv_key_ref(c, 1, k);
    if ((rc = srv_key_lookup_string(c, *t, k, r)) == 1)
        *at = r->expire_at;
    return rc;
}

/* The INCR family's end: store the new value's text (reported with
 * encoding `enc`, st_string.h); 0, or -1 after an error reply. */
static int store_number_or_reply(srv_conn *c, struct st_txn *t, st_keyref *k,
                                 const char *text, int len, int64_t at, int enc)
{
    int rc = st_string_set(t, k, text, (size_t)len, at, enc);

    if (rc)
        srv_txn_error(c, rc);
    return rc ? -1 : 0;
}

/* INCR family: add `by` to the integer at argv[1], keeping its TTL. */
static void incr_generic(srv_conn *c, long long by)
{
    struct st_txn *t;
    char buf[SRV_LLSTR_SIZE];
    st_keyref k;
    st_rec r;
    long long v = 0;
    int64_t at;
    int rc;

    if ((rc = open_number_or_reply(c, &t, &k, &r, &at)) < 0)
        return;
    if (rc == 1 &&
        (st_string_is_chunked(&r) ||
         !srv_util_str2ll((const char *)r.payload, r.payload_len, &v))) {
        srv_reply_error(c, SRV_ERR_NOT_INT);
        return;
    }
    if ((by < 0 && v < 0 && by < LLONG_MIN - v) ||
        (by > 0 && v > 0 && by > LLONG_MAX - v)) {
        srv_reply_error(c, SRV_ERR_OVERFLOW);
        return;
    }
    v += by;
    if (store_number_or_reply(c, t, &k, buf, srv_util_ll2str(buf, v), at,
                              ST_STRING_ENC_AUTO))
        return;
    srv_notify_arg(c, SRV_NOTIFY_STRING, "incrby", 1);
    srv_reply_int(c, v);
}

void srv_cmd_incr(srv_conn *c) { incr_generic(c, 1); }
void srv_cmd_decr(srv_conn *c) { incr_generic(c, -1); }

void srv_cmd_incrby(srv_conn *c)
{
    long long by;

    if (srv_args_ll_or_reply(c, &c->argv[2], &by) == 0)
        incr_generic(c, by);
}

void srv_cmd_decrby(srv_conn *c)
{
    long long by;

    if (srv_args_ll_or_reply(c, &c->argv[2], &by))
        return;
    if (by == LLONG_MIN) {
        srv_reply_error(c, "ERR decrement would overflow");
        return;
    }
    incr_generic(c, -by);
}

void srv_cmd_incrbyfloat(srv_conn *c)
{
    struct st_txn *t;
    char buf[SRV_LDSTR_SIZE];
    long double v = 0, by;
    st_keyref k;
    st_rec r;
    int64_t at;
    int rc, n;

    if ((rc = open_number_or_reply(c, &t, &k, &r, &at)) < 0)
        return;
    if ((rc == 1 &&
         (st_string_is_chunked(&r) ||
          !srv_util_str2ld((const char *)r.payload, r.payload_len, &v))) ||
        !srv_util_str2ld(c->argv[2].ptr, c->argv[2].len, &by)) {
        srv_reply_error(c, SRV_ERR_NOT_FLOAT);
        return;
    }
    v += by;
    if (isnan(v) || isinf(v)) {
        srv_reply_error(c, "ERR increment would produce NaN or Infinity");
        return;
    }
    n = srv_util_ld2str(buf, sizeof buf, v);
    if (store_number_or_reply(c, t, &k, buf, n, at, ST_STRING_ENC_NOINT))
        return;
    srv_notify_arg(c, SRV_NOTIFY_STRING, "incrbyfloat", 1);
    srv_reply_bulk(c, buf, (size_t)n);
}

/*
 * Write argv value `val` at `offset` of the string at argv[1] (APPEND:
 * at its end), zero-padding a gap, keeping the TTL; replies the new
 * length. Only the spans of a chunked string that the range covers are
 * rewritten (st_string_write). Redis leaves the result raw, but for an
 * APPEND that creates the key.
 */
static void splice_generic(srv_conn *c, int append, long long offset,
                           const srv_slice *val)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    st_rec r;
    uint64_t old = 0, len;
    int found, rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &k);
    if ((found = srv_key_lookup_string(c, t, &k, &r)) < 0)
        return;
    if (found)
        old = st_string_len(&r);
    if (append)
        offset = (long long)old;
    if (val->len == 0 && !append) {
        srv_reply_int(c, (long long)old); /* nothing to write */
        return;
    }
    if (check_length_or_reply(c, (unsigned long long)offset + val->len))
        return;
    rc = st_string_write(t, &k, srv_cmd_now(c), (uint64_t)offset, val->ptr,
                         val->len,
                         append && !found ? ST_STRING_ENC_AUTO
                                          : ST_STRING_ENC_RAW,
                         &len);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_STRING, append ? "append" : "setrange", 1);
    srv_reply_int(c, (long long)len);
}

void srv_cmd_append(srv_conn *c) { splice_generic(c, 1, 0, &c->argv[2]); }

void srv_cmd_setrange(srv_conn *c)
{
    long long offset;

    if (srv_args_ll_or_reply(c, &c->argv[2], &offset))
        return;
    if (offset < 0) {
        srv_reply_error(c, "ERR offset is out of range");
        return;
    }
    splice_generic(c, 0, offset, &c->argv[3]);
}

void srv_cmd_strlen(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_rec r;
    int rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &k);
    if ((rc = srv_key_lookup_string(c, t, &k, &r)) >= 0)
        srv_reply_int(c, rc ? (long long)st_string_len(&r) : 0);
}

void srv_cmd_getrange(srv_conn *c)
{
    struct st_txn *t;
    long long start, end, len;
    st_keyref k;
    st_rec r;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &start) ||
        srv_args_ll_or_reply(c, &c->argv[3], &end))
        return;
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    srv_key_ref(c, 1, &k);
    if ((rc = srv_key_lookup_string(c, t, &k, &r)) < 0)
        return;
    len = rc ? (long long)st_string_len(&r) : 0;
    if (start < 0 && end < 0 && start > end) {
        srv_reply_bulk(c, "", 0);
        return;
    }
    if (start < 0)
        start += len;
    if (end < 0)
        end += len;
    if (start < 0)
        start = 0;
    if (end < 0)
        end = 0;
    if (end >= len)
        end = len - 1;
    if (len == 0 || start > end) {
        srv_reply_bulk(c, "", 0);
        return;
    }
    srv_key_reply_string(c, t, &r, (uint64_t)start,
                         (uint64_t)(end - start + 1));
}

void srv_cmd_substr(srv_conn *c) { srv_cmd_getrange(c); }
