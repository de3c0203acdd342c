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
#include "server/srv_cmdstats.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_hooks.h"
#include "server/srv_latency.h"
#include "server/srv_monitor.h"
#include "server/srv_reply.h"
#include "server/srv_slowlog.h"
#include "server/srv_track.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <stdio.h>
#include <string.h>

#define UNKNOWN_ARGS_MAX 128
#define NS_PER_US 1000
#define NS_PER_MS 1000000
#define US_PER_S 1000000

/* The error replies this process had sent when the last command ended:
 * a command failed if it sent more (EXEC's commands take theirs first,
 * so EXEC itself fails only on its own error, as in Redis). */
static uint64_t errors_seen;

/* The command table's row of cmd (its commandstats record). */
static unsigned row_of(const srv_command *cmd)
{
    int n;
    const srv_command *table = srv_cmd_table(&n);

    return (unsigned)(cmd - table);
}

/* A checked command was refused (arity, auth, ACL, subscribed mode). */
static void refused(srv_conn *c, const srv_command *cmd)
{
    srv_cmdstats_rejected(row_of(cmd));
    errors_seen = srv_cmdstats_errors();
    SRV_HOOKS_EACH(&c->hooks, c, refused);
}

/* Log c's command in the slow log, passwords redacted as Redis does
 * (AUTH's arguments, HELLO's after AUTH). */
static void slowlog(srv_conn *c, const srv_command *cmd, int64_t us)
{
    static char redacted[] = "(redacted)";
    srv_slice argv[SRV_SLOWLOG_ARGS + 1];
    int argc = c->argc < SRV_SLOWLOG_ARGS + 1 ? c->argc : SRV_SLOWLOG_ARGS + 1;
    int from = c->argc; /* the first argument redacted */

    if (!strcmp(cmd->name, "auth"))
        from = 1;
    for (int i = 1; i + 2 < c->argc && !strcmp(cmd->name, "hello"); i++)
        if (srv_util_streq(c->argv[i].ptr, c->argv[i].len, "auth")) {
            from = i + 1;
            break;
        }
    for (int i = 0; i < argc; i++)
        argv[i] = i >= from ? (srv_slice){ redacted, sizeof redacted - 1 }
                            : c->argv[i];
    /* The count of arguments past those kept is the real one. */
    srv_slowlog_add(argv, c->argc, srv_util_ustime() / US_PER_S, us, c->addr,
                    c->name, srv_her.cfg->slowlog_max_len);
}

/*
 * What Redis's call() records after a command: its statistics, the slow
 * log (a command outside EXEC that took slowlog-log-slower-than us or
 * more, and is not F_SKIP_SLOWLOG) and the latency monitor ("command" or
 * "fast-command" at latency-monitor-threshold ms or more).
 */
static void record(srv_conn *c, const srv_command *cmd, int64_t ns)
{
    const srv_config *cfg = srv_her.cfg;
    uint64_t errors = srv_cmdstats_errors();
    int64_t us = ns / NS_PER_US;

    srv_cmdstats_call(row_of(cmd), ns, errors != errors_seen);
    errors_seen = errors;
    if (cfg->slowlog_log_slower_than >= 0 &&
        us >= cfg->slowlog_log_slower_than && !(cmd->flags & F_SKIP_SLOWLOG) &&
        !(c->flags & SRV_CONN_IN_EXEC))
        slowlog(c, cmd, us);
    if (cfg->latency_monitor_threshold > 0 &&
        ns / NS_PER_MS >= cfg->latency_monitor_threshold)
        srv_latency_add(cmd->flags & F_FAST ? "fast-command" : "command",
                        srv_util_ustime() / US_PER_S,
                        (uint32_t)(ns / NS_PER_MS));
}

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
        refused(c, cmd);
        return;
    }
    if (!c->authed && !(cmd->flags & F_NOAUTH) && srv_aclconn_auth_required()) {
        srv_reply_error(c, "NOAUTH Authentication required.");
        refused(c, cmd);
        return;
    }
    int denied = srv_aclconn_check_or_reply(c);
    if (denied) {
        if (denied > 0)
            refused(c, cmd); /* a rejected call, as Redis counts it */
        return;
    }
    if (c->flags & SRV_CONN_SUBSCRIBED && c->resp == 2 &&
        !(cmd->flags & F_SUBSCRIBED_OK)) {
        srv_reply_errorf(c,
                         "ERR Can't execute '%s': only (P|S)SUBSCRIBE / "
                         "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                         "allowed in this context",
                         cmd->name);
        refused(c, cmd);
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
    int64_t t0;

    /* EXEC's and a script's commands share one clock */
    if (!(c->flags & (SRV_CONN_IN_EXEC | SRV_CONN_IN_SCRIPT)))
        c->now_ms = srv_util_mstime();
    errors_seen = srv_cmdstats_errors();
    t0 = srv_util_monotonic_ns();
    cmd->proc(c);
    record(c, cmd, srv_util_monotonic_ns() - t0);
    srv_monitor_feed(c);  /* after it ran, as Redis */
    srv_track_seen(c, 0); /* the keys a tracking client read */
    if (cmd->flags & F_NOREPLAY)
        srv_group_commit_after(&c->worker->group); /* never replayed */
    cmd->calls++;
    c->commands++;
    SRV_STAT_ADD(c->worker->stats, total_commands, 1);
}
