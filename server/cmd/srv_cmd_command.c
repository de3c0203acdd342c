/*
 * srv_cmd_command.c - COMMAND and its subcommands (COUNT, INFO, DOCS,
 * LIST, GETKEYS, GETKEYSANDFLAGS, HELP), answered from the command table
 * in the shapes Redis 7.0 replies them (RESP2 and RESP3).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define COMMAND_INFO_FIELDS 10
#define KEYSPEC_FIELDS 3 /* flags, begin_search, find_keys */
#define DOCS_FIELDS 4    /* summary, since, group, complexity */
#define FILTER_ARGC 5    /* COMMAND LIST FILTERBY <type> <arg> */

/* Flags by Redis's names, in the order COMMAND INFO lists them. */
static const struct {
    unsigned flag;
    const char *name;
} flag_names[] = {
    { F_WRITE, "write" },
    { F_READONLY, "readonly" },
    { F_DENYOOM, "denyoom" },
    { F_ADMIN, "admin" },
    { F_PUBSUB, "pubsub" },
    { F_NOSCRIPT, "noscript" },
    { F_BLOCKING, "blocking" },
    { F_LOADING, "loading" },
    { F_STALE, "stale" },
    { F_SKIP_MONITOR, "skip_monitor" },
    { F_SKIP_SLOWLOG, "skip_slowlog" },
    { F_FAST, "fast" },
    { F_NOAUTH, "no_auth" },
    { F_NO_MANDATORY_KEYS, "no_mandatory_keys" },
    { F_NO_ASYNC_LOADING, "no_async_loading" },
    { F_NO_MULTI, "no_multi" },
    { F_MOVABLEKEYS, "movablekeys" },
    { F_ALLOW_BUSY, "allow_busy" },
};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])

/* ACL categories, in the order of their bits (Redis's order). */
static const char *const acl_names[] = {
    "keyspace",  "read",     "write",     "set",        "sortedset",
    "list",      "hash",     "string",    "bitmap",     "hyperloglog",
    "geo",       "stream",   "pubsub",    "admin",      "fast",
    "slow",      "blocking", "dangerous", "connection", "transaction",
    "scripting",
};
#define NACL (sizeof acl_names / sizeof acl_names[0])

static const char *const keyspec_flag_names[] = {
    "RO",     "RW",     "OW",      "RM",         "access",         "update",
    "insert", "delete", "not_key", "incomplete", "variable_flags",
};
#define NKSFLAGS (sizeof keyspec_flag_names / sizeof keyspec_flag_names[0])

static const struct {
    unsigned flag;
    const char *name;
} doc_flag_names[] = {
    { D_DEPRECATED, "deprecated" },
    { D_SYSCMD, "syscmd" },
};
#define NDOCFLAGS (sizeof doc_flag_names / sizeof doc_flag_names[0])

static int popcount(unsigned v) { return __builtin_popcount(v); }

/* Words of a space-separated list (tips): count, or the i-th. */
static int count_words(const char *s)
{
    int n = 0;

    for (; s && *s; n++) {
        s += strcspn(s, " ");
        s += strspn(s, " ");
    }
    return n;
}

static void reply_words(srv_conn *c, const char *s)
{
    srv_reply_set(c, count_words(s));
    while (s && *s) {
        size_t n = strcspn(s, " ");
        srv_reply_bulk(c, s, n);
        s += n;
        s += strspn(s, " ");
    }
}

static void reply_bits(srv_conn *c, unsigned bits, const char *const *names,
                       size_t nnames)
{
    srv_reply_set(c, popcount(bits));
    for (size_t i = 0; i < nnames; i++)
        if (bits & (1u << i))
            srv_reply_simple(c, names[i]);
}

static void reply_acl(srv_conn *c, const srv_command *cmd)
{
    char name[sizeof "@hyperloglog"];
    unsigned acl = srv_cmd_categories(cmd);

    srv_reply_set(c, popcount(acl));
    for (size_t i = 0; i < NACL; i++)
        if (acl & (1u << i)) {
            snprintf(name, sizeof name, "@%s", acl_names[i]);
            srv_reply_simple(c, name);
        }
}

/* {"type": type, "spec": {names[i]: values[i], ...}}: how a key spec
 * begins its search or finds its keys. */
static void reply_search(srv_conn *c, const char *type, int n,
                         const char *const *names, const int *values)
{
    srv_reply_map(c, 2);
    srv_reply_bulk_cstr(c, "type");
    srv_reply_bulk_cstr(c, type);
    srv_reply_bulk_cstr(c, "spec");
    srv_reply_map(c, n);
    for (int i = 0; i < n; i++) {
        srv_reply_bulk_cstr(c, names[i]);
        srv_reply_int(c, values[i]);
    }
}

static void reply_keyspec(srv_conn *c, const srv_keyspec *s)
{
    static const char *const index_names[] = { "index" };
    static const char *const range_names[] = { "lastkey", "keystep", "limit" };
    static const char *const keynum_names[] = { "keynumidx", "firstkey",
                                                "keystep" };

    srv_reply_map(c, KEYSPEC_FIELDS + (s->notes != NULL));
    if (s->notes) {
        srv_reply_bulk_cstr(c, "notes");
        srv_reply_bulk_cstr(c, s->notes);
    }
    srv_reply_bulk_cstr(c, "flags");
    reply_bits(c, s->flags, keyspec_flag_names, NKSFLAGS);
    srv_reply_bulk_cstr(c, "begin_search");
    if (s->begin == SRV_KS_BEGIN_UNKNOWN) {
        reply_search(c, "unknown", 0, NULL, NULL);
    } else if (s->begin == SRV_KS_INDEX) {
        reply_search(c, "index", 1, index_names, &s->index);
    } else { /* a word and an int: by hand */
        srv_reply_map(c, 2);
        srv_reply_bulk_cstr(c, "type");
        srv_reply_bulk_cstr(c, "keyword");
        srv_reply_bulk_cstr(c, "spec");
        srv_reply_map(c, 2);
        srv_reply_bulk_cstr(c, "keyword");
        srv_reply_bulk_cstr(c, s->keyword);
        srv_reply_bulk_cstr(c, "startfrom");
        srv_reply_int(c, s->index);
    }
    srv_reply_bulk_cstr(c, "find_keys");
    if (s->find == SRV_KS_FIND_UNKNOWN) {
        reply_search(c, "unknown", 0, NULL, NULL);
    } else if (s->find == SRV_KS_RANGE) {
        int v[] = { s->lastkey, s->keystep, s->limit };
        reply_search(c, "range", 3, range_names, v);
    } else {
        int v[] = { s->keynumidx, s->firstkey, s->keystep };
        reply_search(c, "keynum", 3, keynum_names, v);
    }
}

/* One COMMAND INFO entry: Redis 7's ten fields, subcommands nested. */
static void reply_info(srv_conn *c, const srv_command *cmd)
{
    int nflags = 0;

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
    reply_acl(c, cmd);
    reply_words(c, cmd->tips);
    srv_reply_set(c, cmd->nkeyspecs);
    for (int i = 0; i < cmd->nkeyspecs; i++)
        reply_keyspec(c, &cmd->keyspecs[i]);
    if (cmd->nsubs) {
        srv_reply_array(c, cmd->nsubs);
        for (int i = 0; i < cmd->nsubs; i++)
            reply_info(c, &cmd->subs[i]);
    } else {
        srv_reply_set(c, 0);
    }
}

static int count_history(const srv_command *cmd)
{
    int n = 0;

    for (const char *const *h = cmd->history; h && *h; h += 2)
        n++;
    return n;
}

/*
 * One COMMAND DOCS entry (name, then its map), in Redis's field order;
 * Redis's "arguments" descriptions are not in the table.
 */
static void reply_docs(srv_conn *c, const srv_command *cmd)
{
    int nhist = count_history(cmd);

    srv_reply_bulk_cstr(c, cmd->name);
    /* A command without a complexity (MONITOR) has no such field. */
    srv_reply_map(c, DOCS_FIELDS - (cmd->complexity == NULL) +
                         (cmd->doc_flags != 0) +
                         (cmd->deprecated_since != NULL) +
                         (cmd->replaced_by != NULL) + (nhist > 0) +
                         (cmd->nsubs > 0));
    srv_reply_bulk_cstr(c, "summary");
    srv_reply_bulk_cstr(c, cmd->summary);
    srv_reply_bulk_cstr(c, "since");
    srv_reply_bulk_cstr(c, cmd->since);
    srv_reply_bulk_cstr(c, "group");
    srv_reply_bulk_cstr(c, cmd->group);
    if (cmd->complexity) { /* Redis gives none for SYNC and PSYNC */
        srv_reply_bulk_cstr(c, "complexity");
        srv_reply_bulk_cstr(c, cmd->complexity);
    }
    if (cmd->doc_flags) {
        srv_reply_bulk_cstr(c, "doc_flags");
        srv_reply_set(c, popcount(cmd->doc_flags));
        for (size_t i = 0; i < NDOCFLAGS; i++)
            if (cmd->doc_flags & doc_flag_names[i].flag)
                srv_reply_simple(c, doc_flag_names[i].name);
    }
    if (cmd->deprecated_since) {
        srv_reply_bulk_cstr(c, "deprecated_since");
        srv_reply_bulk_cstr(c, cmd->deprecated_since);
    }
    if (cmd->replaced_by) {
        srv_reply_bulk_cstr(c, "replaced_by");
        srv_reply_bulk_cstr(c, cmd->replaced_by);
    }
    if (nhist) {
        srv_reply_bulk_cstr(c, "history");
        srv_reply_set(c, nhist);
        for (const char *const *h = cmd->history; *h; h += 2) {
            srv_reply_array(c, 2);
            srv_reply_bulk_cstr(c, h[0]);
            srv_reply_bulk_cstr(c, h[1]);
        }
    }
    if (cmd->nsubs) {
        srv_reply_bulk_cstr(c, "subcommands");
        srv_reply_map(c, cmd->nsubs);
        for (int i = 0; i < cmd->nsubs; i++)
            reply_docs(c, &cmd->subs[i]);
    }
}

static int count_top_level(void)
{
    int n, top = 0;
    const srv_command *table = srv_cmd_table(&n);

    for (int i = 0; i < n; i++)
        top += table[i].parent == NULL;
    return top;
}

/* COMMAND, COMMAND INFO, COMMAND DOCS without names: every top-level
 * command (its subcommands nested in it). */
static void reply_all(srv_conn *c, int docs)
{
    int n;
    const srv_command *table = srv_cmd_table(&n);
    int top = count_top_level();

    if (docs)
        srv_reply_map(c, top);
    else
        srv_reply_array(c, top);
    for (int i = 0; i < n; i++) {
        if (table[i].parent)
            continue;
        if (docs)
            reply_docs(c, &table[i]);
        else
            reply_info(c, &table[i]);
    }
}

void srv_cmd_command(srv_conn *c) { reply_all(c, 0); }

void srv_cmd_command_count(srv_conn *c) { srv_reply_int(c, count_top_level()); }

/* COMMAND INFO [name ...]: an unknown name gives a null, as in Redis. */
void srv_cmd_command_info(srv_conn *c)
{
    if (c->argc == 2) {
        reply_all(c, 0);
        return;
    }
    srv_reply_array(c, c->argc - 2);
    for (int i = 2; i < c->argc; i++) {
        const srv_command *cmd = srv_cmd_lookup_name(c->argv[i].ptr,
                                                     c->argv[i].len);
        if (cmd)
            reply_info(c, cmd);
        else
            srv_reply_null(c);
    }
}

/* COMMAND DOCS [name ...]: unknown names are left out, as in Redis. */
void srv_cmd_command_docs(srv_conn *c)
{
    int found = 0;

    if (c->argc == 2) {
        reply_all(c, 1);
        return;
    }
    for (int i = 2; i < c->argc; i++)
        found += srv_cmd_lookup_name(c->argv[i].ptr, c->argv[i].len) != NULL;
    srv_reply_map(c, found);
    for (int i = 2; i < c->argc; i++) {
        const srv_command *cmd = srv_cmd_lookup_name(c->argv[i].ptr,
                                                     c->argv[i].len);
        if (cmd)
            reply_docs(c, cmd);
    }
}

/* ---- COMMAND LIST [FILTERBY MODULE name | ACLCAT cat | PATTERN pat] ---- */

enum list_filter { LIST_ALL, LIST_MODULE, LIST_ACLCAT, LIST_PATTERN };

static int listed(const srv_command *cmd, int filter, const srv_slice *arg,
                  unsigned category)
{
    switch (filter) {
    case LIST_MODULE: return 0; /* larder has no modules */
    case LIST_ACLCAT: return (srv_cmd_categories(cmd) & category) != 0;
    case LIST_PATTERN:
        return srv_util_glob_match(arg->ptr, arg->len, cmd->name,
                                   strlen(cmd->name), 1);
    default: return 1;
    }
}

void srv_cmd_command_list(srv_conn *c)
{
    int n, filter = LIST_ALL;
    const srv_command *table = srv_cmd_table(&n);
    const srv_slice *arg = NULL;
    unsigned category = 0;

    if (c->argc == FILTER_ARGC &&
        srv_util_streq(c->argv[2].ptr, c->argv[2].len, "filterby")) {
        const srv_slice *type = &c->argv[3];
        arg = &c->argv[4];
        if (srv_util_streq(type->ptr, type->len, "module"))
            filter = LIST_MODULE;
        else if (srv_util_streq(type->ptr, type->len, "aclcat"))
            filter = LIST_ACLCAT;
        else if (srv_util_streq(type->ptr, type->len, "pattern"))
            filter = LIST_PATTERN;
    }
    if (c->argc != 2 && filter == LIST_ALL) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (filter == LIST_ACLCAT) /* unknown: no command listed */
        for (size_t i = 0; i < NACL; i++)
            if (srv_util_streq(arg->ptr, arg->len, acl_names[i]))
                category = 1u << i;
    int matched = 0;
    for (int i = 0; i < n; i++)
        matched += listed(&table[i], filter, arg, category);
    srv_reply_array(c, matched);
    for (int i = 0; i < n; i++)
        if (listed(&table[i], filter, arg, category))
            srv_reply_bulk_cstr(c, table[i].name);
}

/* ---- COMMAND GETKEYS / GETKEYSANDFLAGS <command> [arg ...] ---- */

typedef int key_found(void *c, int pos, unsigned flags);

/* The command line COMMAND GETKEYS looks at: after "command getkeys". */
#define GETKEYS_ARGV 2

static int key_only(void *arg, int pos, unsigned flags)
{
    srv_conn *c = arg;
    const srv_slice *key = &c->argv[GETKEYS_ARGV + pos];

    srv_reply_bulk(c, key->ptr, key->len);
    return 0;
}

static int key_and_flags(void *arg, int pos, unsigned flags)
{
    srv_conn *c = arg;
    const srv_slice *key = &c->argv[GETKEYS_ARGV + pos];

    srv_reply_array(c, 2);
    srv_reply_bulk(c, key->ptr, key->len);
    reply_bits(c, flags, keyspec_flag_names, NKSFLAGS);
    return 0;
}

static void getkeys(srv_conn *c, key_found *found)
{
    int argc = c->argc - GETKEYS_ARGV;
    const srv_slice *argv = c->argv + GETKEYS_ARGV;
    const srv_command *cmd = srv_cmd_lookup(argv[0].ptr, argv[0].len);
    int has_keys = 0;

    if (cmd && cmd->nsubs && argc >= 2)
        cmd = srv_cmd_lookup_sub(cmd, argv[1].ptr, argv[1].len);
    if (!cmd) {
        srv_reply_error(c, "ERR Invalid command specified");
        return;
    }
    for (int i = 0; i < cmd->nkeyspecs; i++)
        has_keys |= !(cmd->keyspecs[i].flags & KS_NOT_KEY);
    if (!has_keys) {
        srv_reply_error(c, "ERR The command has no key arguments");
        return;
    }
    if ((cmd->arity > 0 && argc != cmd->arity) ||
        (cmd->arity < 0 && argc < -cmd->arity)) {
        srv_reply_error(c, "ERR Invalid number of arguments specified for "
                           "command");
        return;
    }
    int n = srv_cmd_each_key(cmd, argc, argv, NULL, NULL);
    if (n <= 0) {
        srv_reply_error(c, "ERR Invalid arguments specified for command");
        return;
    }
    srv_reply_array(c, n);
    srv_cmd_each_key(cmd, argc, argv, found, c);
}

void srv_cmd_command_getkeys(srv_conn *c) { getkeys(c, key_only); }

void srv_cmd_command_getkeysandflags(srv_conn *c) { getkeys(c, key_and_flags); }

void srv_cmd_command_help(srv_conn *c)
{
    static const char *const help[] = {
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Describe every command: name, arity, flags, key positions, ACL",
        "    categories, tips, key specs and subcommands.",
        "COUNT",
        "    The number of commands (not counting subcommands).",
        "LIST [FILTERBY MODULE <name>|ACLCAT <category>|PATTERN <glob>]",
        "    The names of the commands and subcommands, optionally filtered.",
        "INFO [<command-name> ...]",
        "    Describe the named commands (all without names).",
        "DOCS [<command-name> ...]",
        "    Summary, version, group, complexity and history of the named",
        "    commands (all without names).",
        "GETKEYS <full-command>",
        "    The keys of a full command line.",
        "GETKEYSANDFLAGS <full-command>",
        "    The keys of a full command line and what it does to each.",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}
