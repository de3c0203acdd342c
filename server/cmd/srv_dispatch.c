/*
 * srv_dispatch.c - the dispatcher: the checks every command passes once
 * (known command and subcommand, arity, authenticated, allowed by the
 * user's ACL rules, allowed in RESP2 subscribed mode) before
 * its handler runs; a connection's features may take a checked command
 * (MULTI queues it); running a handler stamps the command's clock and
 * counts it.
 */
#include "server/cmd/srv_dispatch.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_aclconn.h"
#include "server/srv_group.h"
#include "server/srv_hooks.h"
#include "server/srv_monitor.h"
#include "server/srv_reply.h"
#include "server/srv_track.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <stdio.h>

#define UNKNOWN_ARGS_MAX 128

static void reply_unknown(srv_conn *c)
{
    char args[UNKNOWN_ARGS_MAX * 2 + 1];
    size_t n = 0;

    args[0] = '\0';
    for (int i = 1; i < c->argc && n < UNKNOWN_ARGS_MAX; i++) {
        int room = (int)(UNKNOWN_ARGS_MAX - n);
        int len = (int)c->argv[i].len < room ? (int)c->argv[i].len : room;
        n += (size_t)snprintf(args + n, sizeof args - n, "'%.*s' ", len,
                              c->argv[i].ptr);
    }
    int namelen = c->argv[0].len < UNKNOWN_ARGS_MAX ? (int)c->argv[0].len
                                                    : UNKNOWN_ARGS_MAX;
    srv_reply_errorf(c,
                     "ERR unknown command '%.*s', with args beginning with: %s",
                     namelen, c->argv[0].ptr, args);
}

static void execute(srv_conn *c)
{
    const srv_command *cmd = c->cmd;

    c->last_cmd = NULL; /* CLIENT LIST's cmd, as Redis sets it */
    if (!cmd) {
        reply_unknown(c);
        SRV_HOOKS_EACH(&c->hooks, c, refused);
        return;
    }
    if (cmd->nsubs && c->argc >= 2) {
        const srv_command *sub = srv_cmd_lookup_sub(cmd, c->argv[1].ptr,
                                                    c->argv[1].len);
        if (!sub) {
            srv_args_subcommand_error(c);
            SRV_HOOKS_EACH(&c->hooks, c, refused);
            return;
        }
        c->cmd = cmd = sub;
    }
    c->last_cmd = cmd->name; /* also when queued or refused below */
    if ((cmd->arity > 0 && c->argc != cmd->arity) ||
        (cmd->arity < 0 && c->argc < -cmd->arity)) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         cmd->name);
        SRV_HOOKS_EACH(&c->hooks, c, refused);
        return;
    }
    if (!c->authed && !(cmd->flags & F_NOAUTH) && srv_aclconn_auth_required()) {
        srv_reply_error(c, "NOAUTH Authentication required.");
        SRV_HOOKS_EACH(&c->hooks, c, refused);
        return;
    }
    int denied = srv_aclconn_check_or_reply(c);
    if (denied) {
        if (denied > 0)
            SRV_HOOKS_EACH(&c->hooks, c, refused);
        return;
    }
    if (c->flags & SRV_CONN_SUBSCRIBED && c->resp == 2 &&
        !(cmd->flags & F_SUBSCRIBED_OK)) {
        srv_reply_errorf(c,
                         "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
                         "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                         "allowed in this context",
                         cmd->name);
        SRV_HOOKS_EACH(&c->hooks, c, refused);
        return;
    }
    if (c->hooks.n && srv_hooks_intercept(&c->hooks, c))
        return; /* queued by MULTI */
    srv_dispatch_run(c);
}

/*
 * CLIENT REPLY OFF and SKIP: the command's reply is dropped (Redis drops
 * what it would send, errors of refused commands too); SKIP covers one
 * command, the one after CLIENT REPLY SKIP.
 */
void srv_dispatch_execute(srv_conn *c)
{
    size_t mark = c->out.len;

    execute(c);
    srv_track_seen(c, 1); /* CLIENT CACHING lasts one command */
    if (c->flags & (SRV_CONN_REPLY_OFF | SRV_CONN_REPLY_SKIP))
        c->out.len = mark;
    c->flags &= ~SRV_CONN_REPLY_SKIP;
    if (c->flags & SRV_CONN_REPLY_SKIP_NEXT) {
        c->flags &= ~SRV_CONN_REPLY_SKIP_NEXT;
        c->flags |= SRV_CONN_REPLY_SKIP;
    }
}

void srv_dispatch_run(srv_conn *c)
{
    srv_command *cmd = (srv_command *)c->cmd;

    /* EXEC's and a script's commands share one clock */
    if (!(c->flags & (SRV_CONN_IN_EXEC | SRV_CONN_IN_SCRIPT)))
        c->now_ms = srv_util_mstime();
    cmd->proc(c);
    srv_monitor_feed(c);  /* after it ran, as Redis */
    srv_track_seen(c, 0); /* the keys a tracking client read */
    if (cmd->flags & F_NOREPLAY)
        srv_group_commit_after(&c->worker->group); /* never replayed */
    cmd->calls++;
    c->commands++;
    SRV_STAT_ADD(c->worker->stats, total_commands, 1);
}
