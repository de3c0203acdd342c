/*
 * srv_txn.c - how handlers reach storage: the worker's group transactions
 * (a read snapshot, or the group's write transaction begun on first use),
 * and the reply for a storage error, which poisons the group's write
 * transaction so the worker replays its other members.
 */
#include "server/cmd/srv_txn.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_scriptgate.h"
#include "server/srv_group.h"
#include "server/srv_log.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"

#include <stdio.h>
#include <stdlib.h>

struct st_txn *srv_txn_read_or_reply(srv_conn *c)
{
    int rc;
    struct st_txn *t = srv_group_read_txn(&c->worker->group, &rc);

    if (!t)
        srv_txn_error(c, rc);
    return t;
}

#ifndef NDEBUG
/*
 * Debug builds: the command that opens the group's write transaction must
 * say so in its table row (F_WRITE, or F_WRITE_TXN for the others),
 * since MULTI, COMMAND INFO and clients trust the row. A row that lies is
 * a bug in the table: stop at once, naming it.
 */
static void check_write_flag(const srv_conn *c)
{
    const char *name = c->cmd ? c->cmd->name : "(no command)";

    if (c->cmd && (c->cmd->flags & (F_WRITE | F_WRITE_TXN)))
        return;
    srv_log(SRV_LOG_WARNING, 0,
            "BUG: '%s' opened a write transaction but "
            "its command table row has no F_WRITE",
            name);
    fprintf(stderr,
            "larder: BUG: '%s' opened a write transaction but its "
            "command table row has no F_WRITE\n",
            name);
    abort();
}
#endif

struct st_txn *srv_txn_write_or_reply(srv_conn *c)
{
    int rc;
    struct st_txn *t;

#ifndef NDEBUG
    check_write_flag(c);
#endif
    /* A script on another worker may hold LMDB's write lock: BUSY past
     * busy-reply-threshold rather than waiting for it. */
    if (!c->worker->group.wtxn && srv_scriptgate_enter_or_reply(c))
        return NULL;
    if (!(t = srv_group_write_txn(&c->worker->group, &rc)))
        srv_txn_error(c, rc);
    return t;
}

void srv_txn_error(srv_conn *c, int rc)
{
    srv_group_reply_error(c, rc);
    if (rc != ST_EWRONGTYPE) /* a refusal, not a failed write */
        srv_group_poison(&c->worker->group);
}
