/*
 * srv_txn.c - how handlers reach storage: the worker's group transactions
 * (a read snapshot, or the group's write transaction begun on first use),
 * and the reply for a storage error, which poisons the group's write
 * transaction so the worker replays its other members.
 */
#include "server/cmd/srv_txn.h"
#include "server/srv_group.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"

struct st_txn *srv_txn_read_or_reply(srv_conn *c)
{
    int rc;
    struct st_txn *t = srv_group_read_txn(&c->worker->group, &rc);

    if (!t)
        srv_txn_error(c, rc);
    return t;
}

struct st_txn *srv_txn_write_or_reply(srv_conn *c)
{
    int rc;
    struct st_txn *t = srv_group_write_txn(&c->worker->group, &rc);

    if (!t)
        srv_txn_error(c, rc);
    return t;
}

void srv_txn_error(srv_conn *c, int rc)
{
    srv_group_reply_error(c, rc);
    if (rc != ST_EWRONGTYPE)        /* a refusal, not a failed write */
        srv_group_poison(&c->worker->group);
}
