/*
 * srv_cmd_ctl.c - commands that act on clients rather than keys: WAIT,
 * and the CLIENT subcommands about the clients of every worker (LIST,
 * INFO, KILL, UNBLOCK, NO-EVICT, NO-TOUCH), which srv_clients.h answers
 * across workers.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_aclconn.h"
#include "server/srv_cinfo.h"
#include "server/srv_clients.h"
#include "server/srv_conn.h"
#include "server/srv_monitor.h"
#include "server/srv_pause.h"
#include "server/srv_reply.h"
#include "server/srv_track.h"
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
    srv_clients_unblock(c, (uint64_t)id, error);
}

void srv_cmd_client_list(srv_conn *c) { srv_clients_list(c); }

void srv_cmd_client_kill(srv_conn *c) { srv_clients_kill(c); }

void srv_cmd_client_info(srv_conn *c)
{
    srv_buf line = { NULL, 0, 0 };

    if (srv_cinfo_line(c, srv_aclconn_user_name(c), NULL, &line))
        srv_reply_error(c, "ERR out of memory");
    else
        srv_reply_verbatim(c, line.data, line.len);
    srv_buf_free(&line);
}

/*
 * CLIENT NO-EVICT / NO-TOUCH on|off: the connection's flag (CLIENT
 * LIST's e and T). larder evicts no clients and keeps no access time a
 * client could see (no OBJECT IDLETIME), so neither changes what the
 * commands do.
 */
void srv_cmd_client_onoff(srv_conn *c)
{
    const srv_slice *v = &c->argv[2];
    unsigned flag = srv_util_streq(c->argv[1].ptr, c->argv[1].len, "no-evict")
                        ? SRV_CONN_NO_EVICT
                        : SRV_CONN_NO_TOUCH;

    if (srv_util_streq(v->ptr, v->len, "on"))
        c->flags |= flag;
    else if (srv_util_streq(v->ptr, v->len, "off"))
        c->flags &= ~flag;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    srv_reply_ok(c);
}

/* CLIENT PAUSE timeout [WRITE|ALL] (ms; ALL by default). */
void srv_cmd_client_pause(srv_conn *c)
{
    long long ms;
    int mode = SRV_PAUSE_ALL;

    if (c->argc > 4) {
        srv_args_subcommand_syntax(c);
        return;
    }
    if (!srv_util_str2ll(c->argv[2].ptr, c->argv[2].len, &ms)) {
        srv_reply_error(c, "ERR timeout is not an integer or out of range");
        return;
    }
    if (ms < 0) {
        srv_reply_error(c, "ERR timeout is negative");
        return;
    }
    if (c->argc == 4) {
        const srv_slice *m = &c->argv[3];
        if (srv_util_streq(m->ptr, m->len, "write"))
            mode = SRV_PAUSE_WRITE;
        else if (!srv_util_streq(m->ptr, m->len, "all")) {
            srv_reply_error(c, "ERR CLIENT PAUSE mode must be WRITE or ALL");
            return;
        }
    }
    srv_pause_clients(c, (int64_t)ms, mode);
}

void srv_cmd_client_unpause(srv_conn *c) { srv_pause_lift(c); }

/* CLIENT REPLY ON|OFF|SKIP (the dispatcher drops the replies). */
void srv_cmd_client_reply(srv_conn *c)
{
    const srv_slice *v = &c->argv[2];

    if (srv_util_streq(v->ptr, v->len, "on")) {
        c->flags &= ~(SRV_CONN_REPLY_OFF | SRV_CONN_REPLY_SKIP |
                      SRV_CONN_REPLY_SKIP_NEXT);
        srv_reply_ok(c);
    } else if (srv_util_streq(v->ptr, v->len, "off")) {
        c->flags |= SRV_CONN_REPLY_OFF;
    } else if (srv_util_streq(v->ptr, v->len, "skip")) {
        if (!(c->flags & SRV_CONN_REPLY_OFF))
            c->flags |= SRV_CONN_REPLY_SKIP_NEXT;
    } else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
    }
}

void srv_cmd_monitor(srv_conn *c) { srv_monitor_start(c); }

/* CLIENT TRACKING, TRACKINGINFO, CACHING, GETREDIR (srv_track.h). */
void srv_cmd_client_tracking(srv_conn *c) { srv_track_command(c); }

void srv_cmd_client_trackinginfo(srv_conn *c) { srv_track_info(c); }

void srv_cmd_client_caching(srv_conn *c) { srv_track_caching(c); }

void srv_cmd_client_getredir(srv_conn *c) { srv_track_getredir(c); }
