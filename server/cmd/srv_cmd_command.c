/*
 * srv_cmd_command.c - COMMAND and its subcommands (COUNT, INFO, DOCS,
 * LIST), answered from the command table.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <string.h>

#define COMMAND_INFO_FIELDS 10
#define DOCS_FIELDS 3

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
#include "server/cmd/srv_command_docs.def"
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
    int n;
    const srv_command *table = srv_cmd_table(&n);

    if (c->argc == 2) {
        if (docs)
            srv_reply_map(c, n);
        else
            srv_reply_array(c, n);
        for (int i = 0; i < n; i++)
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
    int found = 0;
    for (int i = 2; i < c->argc; i++)
        found += srv_cmd_lookup(c->argv[i].ptr, c->argv[i].len) != NULL;
    srv_reply_map(c, found);
    for (int i = 2; i < c->argc; i++) {
        const srv_command *cmd = srv_cmd_lookup(c->argv[i].ptr,
                                                c->argv[i].len);
        if (cmd)
            reply_command_docs(c, cmd);
    }
}

void srv_cmd_command(srv_conn *c)
{
    int n;
    const srv_command *table = srv_cmd_table(&n);

    if (c->argc == 1) {
        srv_reply_array(c, n);
        for (int i = 0; i < n; i++)
            reply_command_info(c, &table[i]);
        return;
    }
    const srv_slice *sub = &c->argv[1];
    if (srv_util_streq(sub->ptr, sub->len, "count")) {
        if (c->argc == 2)
            srv_reply_int(c, n);
        else
            srv_args_subcommand_arity(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "info")) {
        command_lookup_reply(c, 0);
    } else if (srv_util_streq(sub->ptr, sub->len, "docs")) {
        command_lookup_reply(c, 1);
    } else if (srv_util_streq(sub->ptr, sub->len, "list")) {
        srv_reply_array(c, n);
        for (int i = 0; i < n; i++)
            srv_reply_bulk_cstr(c, table[i].name);
    } else {
        srv_args_subcommand_error(c);
    }
}
