/*
 * srv_keyspace.c - key naming, typed lookups and expire parsing shared by
 * the command handlers.
 */
#include "server/srv_keyspace.h"
#include "server/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_elem.h"
#include "storage/st_err.h"
#include "storage/st_keys.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_PER_S 1000

void srv_key(srv_conn *c, int i, st_keyref *k)
{
    st_keyref_init(k, c->db, c->argv[i].ptr, c->argv[i].len);
}

int srv_lookup_string(srv_conn *c, struct st_txn *t, st_keyref *k, st_rec *r)
{
    int rc = st_lookup(t, k, srv_cmd_now(), r);

    if (rc == ST_ENOTFOUND) {
        SRV_STAT_ADD(srv_w->stats, keyspace_misses, 1);
        return 0;
    }
    if (rc) {
        srv_storage_error(c, rc);
        return -1;
    }
    SRV_STAT_ADD(srv_w->stats, keyspace_hits, 1);
    if (r->type != ST_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return -1;
    }
    return 1;
}

int srv_coll_open_or_reply(srv_conn *c, struct st_txn *t, int i, int type,
                           st_keyref *k, st_obj *o)
{
    int rc;

    srv_key(c, i, k);
    rc = st_obj_open(t, k, type, srv_cmd_now(), o);
    if (rc == 0)
        return 1;
    if (rc == ST_ENOTFOUND)
        return 0;
    srv_storage_error(c, rc);
    return -1;
}

int srv_coll_save_or_reply(srv_conn *c, struct st_txn *t, st_obj *o)
{
    int rc = st_obj_save(t, o, srv_cmd_now());

    if (rc)
        srv_storage_error(c, rc);
    return rc ? -1 : 0;
}

void srv_coll_remove_members(srv_conn *c, int type,
                             srv_member_remove_fn *remove)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    long long n = 0;
    int rc;

    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_coll_open_or_reply(c, t, 1, type, &k, &o)) < 0)
        return;
    for (int j = 2; rc && j < c->argc; j++) {
        int r = remove(t, &o, c->argv[j].ptr, c->argv[j].len);
        if (r == 0)
            n++;
        else if (r != ST_ENOTFOUND) {
            srv_storage_error(c, r);
            return;
        }
    }
    if (n && srv_coll_save_or_reply(c, t, &o))
        return;
    srv_reply_int(c, n);
}

void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_member_reply_fn *reply)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (!t || srv_coll_open_or_reply(c, t, 1, type, &k, &o) < 0)
        return;
    mark = c->out.len;
    if (many)
        srv_reply_array(c, c->argc - 2);
    for (int j = 2; j < (many ? c->argc : 3); j++) {
        if ((rc = reply(c, t, &o, j))) {
            c->out.len = mark;
            srv_storage_error(c, rc);
            return;
        }
    }
}

int srv_mpop_args_or_reply(srv_conn *c, const char *end0, const char *end1,
                           int *numkeys, int *end, long long *count)
{
    long long n;
    int j, seen_count = 0;

    if (!srv_str2ll(c->argv[1].ptr, c->argv[1].len, &n) || n <= 0 ||
        n > INT_MAX) {
        srv_reply_error(c, "ERR numkeys should be greater than 0");
        return -1;
    }
    j = 2 + (int)n;
    if (j >= c->argc) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    if (srv_streq(c->argv[j].ptr, c->argv[j].len, end0))
        *end = 0;
    else if (srv_streq(c->argv[j].ptr, c->argv[j].len, end1))
        *end = 1;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    *count = 1;
    for (j++; j < c->argc; j += 2) {
        if (seen_count || j + 1 >= c->argc ||
            !srv_streq(c->argv[j].ptr, c->argv[j].len, "count")) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        if (!srv_str2ll(c->argv[j + 1].ptr, c->argv[j + 1].len, count) ||
            *count <= 0) {
            srv_reply_error(c, "ERR count should be greater than 0");
            return -1;
        }
        seen_count = 1;
    }
    *numkeys = (int)n;
    return 0;
}

int srv_parse_expire_or_reply(srv_conn *c, const srv_slice *arg, int unit,
                              int absolute, int allow_nonpositive,
                              int64_t *at)
{
    long long v;

    if (srv_arg_ll_or_reply(c, arg, &v))
        return -1;
    if ((!allow_nonpositive && v <= 0) ||
        (unit == SRV_UNIT_S && (v > LLONG_MAX / MS_PER_S ||
                                v < LLONG_MIN / MS_PER_S)))
        goto invalid;
    if (unit == SRV_UNIT_S)
        v *= MS_PER_S;
    if (!absolute) {
        int64_t now = srv_cmd_now();
        if (v > LLONG_MAX - now)      /* now > 0: no underflow */
            goto invalid;
        v += now;
    }
    *at = v;
    return 0;
invalid:
    srv_reply_errorf(c, "ERR invalid expire time in '%s' command",
                     c->cmd->name);
    return -1;
}

/* Redis's rule (strtoul): no leading space, all digits used, in range;
 * a sign is accepted ("-1" wraps to the largest cursor). */
static int parse_cursor(const srv_slice *a, uint64_t *cursor)
{
    char buf[SRV_LLSTR_SIZE + 2], *end;

    if (a->len == 0 || a->len >= sizeof buf ||
        isspace((unsigned char)a->ptr[0]))
        return -1;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    errno = 0;
    *cursor = strtoull(buf, &end, 10);
    return *end == '\0' && errno == 0 ? 0 : -1;
}

int srv_scan_args_or_reply(srv_conn *c, int first, int allow_type,
                           srv_scan_args *a)
{
    a->count = SRV_SCAN_DEFAULT_COUNT;
    a->match = a->type = NULL;
    if (parse_cursor(&c->argv[first], &a->cursor)) {
        srv_reply_error(c, "ERR invalid cursor");
        return -1;
    }
    for (int j = first + 1; j < c->argc; j += 2) {
        const srv_slice *o = &c->argv[j];
        if (j + 1 >= c->argc) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        if (srv_streq(o->ptr, o->len, "count")) {
            if (srv_arg_ll_or_reply(c, &c->argv[j + 1], &a->count))
                return -1;
            if (a->count < 1) {
                srv_reply_error(c, SRV_ERR_SYNTAX);
                return -1;
            }
        } else if (srv_streq(o->ptr, o->len, "match")) {
            a->match = &c->argv[j + 1];
            if (a->match->len == 1 && a->match->ptr[0] == '*')
                a->match = NULL;
        } else if (allow_type && srv_streq(o->ptr, o->len, "type")) {
            a->type = &c->argv[j + 1];
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    return 0;
}

int srv_scan_match(const srv_scan_args *a, const void *name, size_t len)
{
    return !a->match ||
           srv_glob_match(a->match->ptr, a->match->len, name, len, 0);
}

void srv_scan_reply_finish(srv_conn *c, size_t mark, uint64_t next,
                           long long n)
{
    char cur[SRV_LLSTR_SIZE + 1], head[SRV_REPLY_DEFER_MAX];
    int cn = snprintf(cur, sizeof cur, "%llu", (unsigned long long)next);
    int hn = snprintf(head, sizeof head, "*2\r\n$%d\r\n%s\r\n*%lld\r\n",
                      cn, cur, n);

    srv_reply_defer_fill(c, mark, head, (size_t)hn);
}

char *srv_scratch(size_t len)
{
    static char *buf;
    static size_t cap;

    if (len > cap) {
        char *p = realloc(buf, len);
        if (!p)
            return NULL;
        buf = p;
        cap = len;
    }
    return buf;
}
