/*
 * srv_txn.h - how handlers reach storage: through the transactions of the
 * worker's group (group commit), never by opening their own.
 */
#ifndef SRV_TXN_H
#define SRV_TXN_H

#include "server/srv_conn.h"

struct st_txn;

/*
 * The transaction to read in: the batch's write transaction when one is
 * open, otherwise the worker's read transaction. NULL after replying an
 * error.
 */
struct st_txn *srv_txn_read_or_reply(srv_conn *c);

/*
 * The batch's write transaction, begun if needed; NULL after an error.
 * Only for a command whose row has F_WRITE or F_WRITE_TXN: debug builds
 * (NDEBUG not defined) abort when c->cmd has neither.
 */
struct st_txn *srv_txn_write_or_reply(srv_conn *c);

/*
 * Reply the error for storage code `rc` (WRONGTYPE, disk full, ...). A
 * failure inside a write transaction poisons the batch: the worker
 * aborts it and replays the batch's commands one transaction each.
 */
void srv_txn_error(srv_conn *c, int rc);

#endif
