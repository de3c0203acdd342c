/*
 * srv_txn.c - how handlers reach storage: the worker's group transactions
 * (a read snapshot, or the group's write transaction begun on first use),
 * and the reply for a storage error, which poisons the group's write
 * transaction so the worker replays its other members.
 */
#include "server/cmd/srv_txn.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_txn.h"

#include <stdio.h>
#include <stdlib.h>

struct st_txn *srv_txn_read_or_reply(srv_conn *c)
{
    srv_group *b = &c->worker->group;
    int rc;

    if (b->wtxn)
        return b->wtxn;
    if (!b->rtxn && (rc = st_txn_begin(c->worker->env, 0, &b->rtxn))) {
        srv_txn_error(c, rc);
        return NULL;
    }
    return b->rtxn;
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
    srv_log(SRV_LOG_WARNING, 0, "BUG: '%s' opened a write transaction but "
            "its command table row has no F_WRITE", name);
    fprintf(stderr, "larder: BUG: '%s' opened a write transaction but its "
            "command table row has no F_WRITE\n", name);
    abort();
}
#endif

struct st_txn *srv_txn_write_or_reply(srv_conn *c)
{
    srv_group *b = &c->worker->group;
    int rc;

#ifndef NDEBUG
    check_write_flag(c);
#endif
    b->cmd_wrote = 1;
    if (b->wtxn)
        return b->wtxn;
    if (b->rtxn)
        st_txn_commit(&b->rtxn);        /* release the older snapshot */
    if ((rc = st_txn_begin(c->worker->env, 1, &b->wtxn))) {
        srv_txn_error(c, rc);
        return NULL;
    }
    return b->wtxn;
}

void srv_txn_error(srv_conn *c, int rc)
{
    srv_group *b = &c->worker->group;

    switch (rc) {
    case ST_EWRONGTYPE:
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return;
    case ST_EFULL:
        srv_reply_error(c, "ERR disk full: the database reached maxdisk, "
                           "write refused (reads still work)");
        break;
    case ST_ETXNFULL:
        srv_reply_error(c, "ERR write too large for one transaction");
        break;
    default:
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "storage error: %s",
                st_strerror(rc));
        srv_reply_errorf(c, "ERR storage error: %s", st_strerror(rc));
        break;
    }
    if (b->wtxn)
        b->poisoned = 1;
}
