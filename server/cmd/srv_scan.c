/*
 * srv_scan.c - the SCAN family's arguments (cursor, MATCH, COUNT, TYPE),
 * the MATCH filter and the reply head filled in once the batch is known;
 * the body of HSCAN, SSCAN and ZSCAN.
 */
#include "server/cmd/srv_scan.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srv_scan_args_or_reply(srv_conn *c, int first, int allow_type,
                           srv_scan_args *a)
{
    a->count = SRV_SCAN_DEFAULT_COUNT;
    a->match = a->type = NULL;
    if (!srv_util_str2cursor(c->argv[first].ptr, c->argv[first].len,
                             &a->cursor)) {
        srv_reply_error(c, "ERR invalid cursor");
        return -1;
    }
    for (int j = first + 1; j < c->argc; j += 2) {
        const srv_slice *o = &c->argv[j];
        if (j + 1 >= c->argc) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        if (srv_util_streq(o->ptr, o->len, "count")) {
            if (srv_args_ll_or_reply(c, &c->argv[j + 1], &a->count))
                return -1;
            if (a->count < 1) {
                srv_reply_error(c, SRV_ERR_SYNTAX);
                return -1;
            }
        } else if (srv_util_streq(o->ptr, o->len, "match")) {
            a->match = &c->argv[j + 1];
            if (a->match->len == 1 && a->match->ptr[0] == '*')
                a->match = NULL;
        } else if (allow_type && srv_util_streq(o->ptr, o->len, "type")) {
            a->type = &c->argv[j + 1];
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    return 0;
}

int srv_scan_match(const srv_slice *match, const void *name, size_t len)
{
    return !match || srv_util_glob_match(match->ptr, match->len, name, len, 0);
}

void srv_scan_reply_finish(srv_conn *c, size_t mark, uint64_t next, long long n)
{
    char cur[SRV_LLSTR_SIZE + 1], head[SRV_REPLY_DEFER_MAX];
    int cn = snprintf(cur, sizeof cur, "%llu", (unsigned long long)next);
    int hn = snprintf(head, sizeof head, "*2\r\n$%d\r\n%s\r\n*%lld\r\n", cn,
                      cur, n);

    srv_reply_defer_fill(c, mark, head, (size_t)hn);
}

void srv_scan_collection(srv_conn *c, int type, srv_scan_step_fn *step)
{
    struct st_txn *t;
    srv_scan_args a;
    uint64_t next = 0;
    long long n = 0;
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (srv_scan_args_or_reply(c, 2, 0, &a))
        return;
    if (!(t = srv_txn_read_or_reply(c)) ||
        srv_coll_open_or_reply(c, t, 1, type, &k, &o) < 0)
        return;
    mark = srv_reply_defer(c);
    if (o.exists && (rc = step(c, t, &o, &a, &next, &n))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_scan_reply_finish(c, mark, next, n);
}
