/*
 * srv_coll.c - what the collection handlers share: opening argv[i] as a
 * collection of a type with the error replies done, saving it back, and
 * the member removal and member lookup families (HDEL/SREM/ZREM,
 * HGET/HMGET/ZSCORE/ZMSCORE).
 */
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_reply.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"

int srv_coll_open_or_reply(srv_conn *c, struct st_txn *t, int i, int type,
                           st_keyref *k, st_obj *o)
{
    int rc;

    srv_key_ref(c, i, k);
    rc = st_coll_open(t, k, type, srv_cmd_now(c), o);
    if (rc == 0)
        return 1;
    if (rc == ST_ENOTFOUND)
        return 0;
    srv_txn_error(c, rc);
    return -1;
}

int srv_coll_save_or_reply(srv_conn *c, struct st_txn *t, st_obj *o)
{
    int rc = st_coll_save(t, o, srv_cmd_now(c));

    if (rc)
        srv_txn_error(c, rc);
    return rc ? -1 : 0;
}

void srv_coll_remove_members(srv_conn *c, int type,
                             srv_coll_remove_fn *remove)
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
            srv_txn_error(c, r);
            return;
        }
    }
    if (n && srv_coll_save_or_reply(c, t, &o))
        return;
    srv_reply_int(c, n);
}

void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_coll_reply_fn *reply)
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
            srv_txn_error(c, rc);
            return;
        }
    }
}
