/*
 * srv_cmd.c - the command table, its lookup index, and the dispatcher's
 * checks (arity, auth) before a handler runs.
 */
#include "server/cmd/srv_cmd.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_txn.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 32
#define INDEX_SIZE 256          /* power of two, > 2x the commands */
#define UNKNOWN_ARGS_MAX 128

static srv_command table[] = {
#define CMD(fn, name, arity, flags, fk, lk, ks, group, since, summary) \
    { name, srv_cmd_##fn, arity, flags, fk, lk, ks, group, since, summary, 0 },
#include "server/cmd/srv_commands.def"
#undef CMD
};
#define NCOMMANDS ((int)(sizeof table / sizeof table[0]))

static srv_command *index_[INDEX_SIZE];

static unsigned name_hash(const char *lower, size_t len)
{
    unsigned h = 2166136261u;           /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)lower[i]) * 16777619u;
    return h;
}

void srv_cmd_init(void)
{
    memset(index_, 0, sizeof index_);
    for (int i = 0; i < NCOMMANDS; i++) {
        unsigned h = name_hash(table[i].name, strlen(table[i].name));
        while (index_[h & (INDEX_SIZE - 1)])
            h++;
        index_[h & (INDEX_SIZE - 1)] = &table[i];
    }
}

const srv_command *srv_cmd_lookup(const char *name, size_t len)
{
    char lower[NAME_MAX_LEN];

    if (len == 0 || len >= NAME_MAX_LEN)
        return NULL;
    for (size_t i = 0; i < len; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    for (unsigned h = name_hash(lower, len);; h++) {
        srv_command *c = index_[h & (INDEX_SIZE - 1)];
        if (!c)
            return NULL;
        if (strlen(c->name) == len && memcmp(c->name, lower, len) == 0)
            return c;
    }
}

const srv_command *srv_cmd_table(int *count)
{
    *count = NCOMMANDS;
    return table;
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
    srv_reply_errorf(c, "ERR unknown command '%.*s', with args beginning with: %s",
                     namelen, c->argv[0].ptr, args);
}

void srv_cmd_execute(srv_conn *c)
{
    srv_command *cmd = (srv_command *)c->cmd;

    if (!cmd) {
        reply_unknown(c);
        srv_multi_flag_error(c);
        return;
    }
    if ((cmd->arity > 0 && c->argc != cmd->arity) ||
        (cmd->arity < 0 && c->argc < -cmd->arity)) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         cmd->name);
        srv_multi_flag_error(c);
        return;
    }
    if (!c->authed && !(cmd->flags & F_NOAUTH)) {
        srv_reply_error(c, "NOAUTH Authentication required.");
        srv_multi_flag_error(c);
        return;
    }
    if (c->pubsub && c->resp == 2 && srv_pubsub_denied_or_reply(c)) {
        srv_multi_flag_error(c);
        return;
    }
    if (srv_multi_queue(c))
        return;
    srv_cmd_run(c);
}

void srv_cmd_run(srv_conn *c)
{
    srv_command *cmd = (srv_command *)c->cmd;

    if (!srv_multi_in_exec())           /* EXEC's commands share one clock */
        c->worker->now_ms = srv_util_mstime();
    cmd->proc(c);
    if (cmd->flags & F_NOREPLAY)
        srv_worker_commit_after();      /* consumed: never replayed */
    cmd->calls++;
    c->commands++;
    c->last_cmd = cmd->name;
    SRV_STAT_ADD(c->worker->stats, total_commands, 1);
}

int64_t srv_cmd_now(const srv_conn *c) { return c->worker->now_ms; }
