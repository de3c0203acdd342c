/*
 * srv_cmd.c - the command table, its lookup index, the dispatcher's
 * checks (arity, auth), the storage access handlers use, and COMMAND.
 */
#include "server/srv_cmd.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_multi.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 32
#define INDEX_SIZE 256          /* power of two, > 2x the commands */
#define UNKNOWN_ARGS_MAX 128
#define COMMAND_INFO_FIELDS 10
#define DOCS_FIELDS 3

static srv_command table[] = {
#define CMD(fn, name, arity, flags, fk, lk, ks, group, since, summary) \
    { name, srv_cmd_##fn, arity, flags, fk, lk, ks, group, since, summary, 0 },
#include "server/srv_commands.def"
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
        srv_w->now_ms = srv_mstime();
    cmd->proc(c);
    if (cmd->flags & F_NOREPLAY)
        srv_worker_commit_after();      /* consumed: never replayed */
    cmd->calls++;
    c->commands++;
    c->last_cmd = cmd->name;
    SRV_STAT_ADD(srv_w->stats, total_commands, 1);
}

int64_t srv_cmd_now(void) { return srv_w->now_ms; }

struct st_txn *srv_txn_read_or_reply(srv_conn *c)
{
    srv_group *b = &srv_w->group;
    int rc;

    if (b->wtxn)
        return b->wtxn;
    if (!b->rtxn && (rc = st_txn_begin(srv_w->env, 0, &b->rtxn))) {
        srv_storage_error(c, rc);
        return NULL;
    }
    return b->rtxn;
}

struct st_txn *srv_txn_write_or_reply(srv_conn *c)
{
    srv_group *b = &srv_w->group;
    int rc;

    b->cmd_wrote = 1;
    if (b->wtxn)
        return b->wtxn;
    if (b->rtxn)
        st_txn_commit(&b->rtxn);        /* release the older snapshot */
    if ((rc = st_txn_begin(srv_w->env, 1, &b->wtxn))) {
        srv_storage_error(c, rc);
        return NULL;
    }
    return b->wtxn;
}

void srv_storage_error(srv_conn *c, int rc)
{
    srv_group *b = &srv_w->group;

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

int srv_arg_ll_or_reply(srv_conn *c, const srv_slice *a, long long *out)
{
    if (srv_str2ll(a->ptr, a->len, out))
        return 0;
    srv_reply_error(c, SRV_ERR_NOT_INT);
    return -1;
}

#define SUBCMD_NAME_MAX 32
#define SUBCMD_ARG_MAX 128

void srv_reply_subcommand_error(srv_conn *c)
{
    char upper[SUBCMD_NAME_MAX];
    size_t n = strlen(c->cmd->name);

    if (n > sizeof upper - 1)
        n = sizeof upper - 1;
    for (size_t i = 0; i < n; i++)
        upper[i] = (char)toupper((unsigned char)c->cmd->name[i]);
    upper[n] = '\0';
    srv_reply_errorf(c, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                     (int)(c->argv[1].len < SUBCMD_ARG_MAX ? c->argv[1].len
                                                           : SUBCMD_ARG_MAX),
                     c->argv[1].ptr, upper);
}

void srv_reply_subcommand_arity(srv_conn *c)
{
    char sub[SUBCMD_NAME_MAX];
    size_t n = c->argv[1].len < sizeof sub - 1 ? c->argv[1].len
                                               : sizeof sub - 1;

    for (size_t i = 0; i < n; i++)
        sub[i] = (char)tolower((unsigned char)c->argv[1].ptr[i]);
    sub[n] = '\0';
    srv_reply_errorf(c, "ERR wrong number of arguments for '%s|%s' command",
                     c->cmd->name, sub);
}

int srv_arg_int_or_reply(srv_conn *c, const srv_slice *a, int *out)
{
    long long v;

    if (srv_arg_ll_or_reply(c, a, &v))
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        /* Redis's text, its typo included: clients match on it. */
        srv_reply_error(c, "ERR value is out of range, value must between "
                           "-2147483648 and 2147483647");
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* ---- COMMAND ---- */

/* Flags in the order Redis lists them. */
static const struct {
    unsigned flag;
    const char *name;
} flag_names[] = {
    { F_WRITE, "write" },     { F_READONLY, "readonly" },
    { F_DENYOOM, "denyoom" }, { F_ADMIN, "admin" },
    { F_PUBSUB, "pubsub" },   { F_BLOCKING, "blocking" },
    { F_FAST, "fast" },       { F_NOAUTH, "no_auth" },
};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])

/* ACL categories, derived from flags and group, in Redis's order. */
#define MAX_CATEGORIES 8

static int categories(const srv_command *cmd, const char **out)
{
    static const char *const groups[][2] = {
        {"set", "@set"}, {"sorted-set", "@sortedset"}, {"list", "@list"},
        {"hash", "@hash"}, {"string", "@string"},
    };
    int n = 0;

    if (!strcmp(cmd->group, "generic"))
        out[n++] = "@keyspace";
    if (cmd->flags & F_READONLY)
        out[n++] = "@read";
    if (cmd->flags & F_WRITE)
        out[n++] = "@write";
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!strcmp(cmd->group, groups[i][0]))
            out[n++] = groups[i][1];
    if (cmd->flags & F_PUBSUB)
        out[n++] = "@pubsub";
    if (cmd->flags & F_ADMIN) {
        out[n++] = "@admin";
    }
    out[n++] = cmd->flags & F_FAST ? "@fast" : "@slow";
    if (cmd->flags & F_BLOCKING)
        out[n++] = "@blocking";
    if (cmd->flags & F_ADMIN)
        out[n++] = "@dangerous";
    if (!strcmp(cmd->group, "connection"))
        out[n++] = "@connection";
    if (!strcmp(cmd->group, "transactions"))
        out[n++] = "@transaction";
    return n;
}

static void reply_command_info(srv_conn *c, const srv_command *cmd)
{
    const char *cats[MAX_CATEGORIES];
    int nflags = 0, ncats = categories(cmd, cats);

    srv_reply_array(c, COMMAND_INFO_FIELDS);
    srv_reply_bulk_cstr(c, cmd->name);
    srv_reply_int(c, cmd->arity);
    for (size_t i = 0; i < NFLAGS; i++)
        nflags += (cmd->flags & flag_names[i].flag) != 0;
    srv_reply_set(c, nflags);
    for (size_t i = 0; i < NFLAGS; i++)
        if (cmd->flags & flag_names[i].flag)
            srv_reply_simple(c, flag_names[i].name);
    srv_reply_int(c, cmd->first_key);
    srv_reply_int(c, cmd->last_key);
    srv_reply_int(c, cmd->key_step);
    srv_reply_set(c, ncats);
    for (int i = 0; i < ncats; i++)
        srv_reply_simple(c, cats[i]);
    srv_reply_array(c, 0);      /* tips */
    srv_reply_array(c, 0);      /* key specs */
    srv_reply_array(c, 0);      /* subcommands */
}

/* Time complexity for COMMAND DOCS, as Redis documents it. */
static const struct {
    const char *name;
    const char *complexity;
} complexities[] = {
#define DOC(name, text) { name, text },
#include "server/srv_command_docs.def"
#undef DOC
};

static const char *complexity_of(const char *name)
{
    for (size_t i = 0; i < sizeof complexities / sizeof complexities[0]; i++)
        if (!strcmp(complexities[i].name, name))
            return complexities[i].complexity;
    return NULL;
}

static void reply_command_docs(srv_conn *c, const srv_command *cmd)
{
    const char *complexity = complexity_of(cmd->name);

    srv_reply_bulk_cstr(c, cmd->name);
    srv_reply_map(c, DOCS_FIELDS + (complexity != NULL));
    if (complexity) {
        srv_reply_bulk_cstr(c, "complexity");
        srv_reply_bulk_cstr(c, complexity);
    }
    srv_reply_bulk_cstr(c, "summary");
    srv_reply_bulk_cstr(c, cmd->summary);
    srv_reply_bulk_cstr(c, "since");
    srv_reply_bulk_cstr(c, cmd->since);
    srv_reply_bulk_cstr(c, "group");
    srv_reply_bulk_cstr(c, cmd->group);
}

/* COMMAND INFO / DOCS with names: unknown names give nil (INFO) or are
 * left out (DOCS), as Redis does. */
static void command_lookup_reply(srv_conn *c, int docs)
{
    int n = 0;

    if (c->argc == 2) {
        if (docs)
            srv_reply_map(c, NCOMMANDS);
        else
            srv_reply_array(c, NCOMMANDS);
        for (int i = 0; i < NCOMMANDS; i++)
            docs ? reply_command_docs(c, &table[i])
                 : reply_command_info(c, &table[i]);
        return;
    }
    if (!docs) {
        srv_reply_array(c, c->argc - 2);
        for (int i = 2; i < c->argc; i++) {
            const srv_command *cmd = srv_cmd_lookup(c->argv[i].ptr,
                                                    c->argv[i].len);
            if (cmd)
                reply_command_info(c, cmd);
            else
                srv_reply_null_array(c);
        }
        return;
    }
    for (int i = 2; i < c->argc; i++)
        n += srv_cmd_lookup(c->argv[i].ptr, c->argv[i].len) != NULL;
    srv_reply_map(c, n);
    for (int i = 2; i < c->argc; i++) {
        const srv_command *cmd = srv_cmd_lookup(c->argv[i].ptr,
                                                c->argv[i].len);
        if (cmd)
            reply_command_docs(c, cmd);
    }
}

void srv_cmd_command(srv_conn *c)
{
    if (c->argc == 1) {
        srv_reply_array(c, NCOMMANDS);
        for (int i = 0; i < NCOMMANDS; i++)
            reply_command_info(c, &table[i]);
        return;
    }
    const srv_slice *sub = &c->argv[1];
    if (srv_streq(sub->ptr, sub->len, "count")) {
        if (c->argc == 2)
            srv_reply_int(c, NCOMMANDS);
        else
            srv_reply_subcommand_arity(c);
    } else if (srv_streq(sub->ptr, sub->len, "info")) {
        command_lookup_reply(c, 0);
    } else if (srv_streq(sub->ptr, sub->len, "docs")) {
        command_lookup_reply(c, 1);
    } else if (srv_streq(sub->ptr, sub->len, "list")) {
        srv_reply_array(c, NCOMMANDS);
        for (int i = 0; i < NCOMMANDS; i++)
            srv_reply_bulk_cstr(c, table[i].name);
    } else {
        srv_reply_subcommand_error(c);
    }
}
