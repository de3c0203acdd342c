/*
 * srv_keyspace.c - key naming, typed lookups and expire parsing shared by
 * the command handlers.
 */
#include "server/srv_keyspace.h"
#include "server/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_keys.h"

#include <limits.h>
#include <stdlib.h>

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
