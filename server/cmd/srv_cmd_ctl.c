/*
 * srv_cmd_ctl.c - commands that act on clients rather than keys: WAIT,
 * and (with srv_block.h) CLIENT UNBLOCK.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_block.h"
#include "server/srv_conn.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

/*
 * WAIT numreplicas timeout: there are no replicas, so 0 at once, after
 * Redis's argument checks (the count, then the timeout: an integer of ms,
 * not negative). Redis would wait out the timeout when asked
 * for replicas it does not have; larder answers at once (no replica will
 * ever come).
 */
void srv_cmd_wait(srv_conn *c)
{
    long long ms, n;

    if (srv_args_ll_or_reply(c, &c->argv[1], &n))
        return;
    if (!srv_util_str2ll(c->argv[2].ptr, c->argv[2].len, &ms)) {
        srv_reply_error(c, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        srv_reply_error(c, "ERR timeout is negative");
        return;
    }
    srv_reply_int(c, 0);
}

/*
 * CLIENT UNBLOCK id [TIMEOUT|ERROR]: a client blocked in a blocking
 * command gets its timeout reply (or the UNBLOCKED error) as if its
 * timeout had passed. 1 if it was blocked, else 0.
 */
void srv_cmd_client_unblock(srv_conn *c)
{
    long long id;
    int error = 0;

    if (c->argc > 4) {
        srv_args_subcommand_syntax(c);
        return;
    }
    if (srv_args_ll_or_reply(c, &c->argv[2], &id))
        return;
    if (c->argc == 4) {
        const srv_slice *how = &c->argv[3];
        if (srv_util_streq(how->ptr, how->len, "error"))
            error = 1;
        else if (!srv_util_streq(how->ptr, how->len, "timeout")) {
            srv_reply_error(c, "ERR CLIENT UNBLOCK reason should be TIMEOUT "
                               "or ERROR");
            return;
        }
    }
    srv_reply_int(c, srv_block_unblock((uint64_t)id, error));
}
