/*
 * srv_cmd.c - the command table (generated from srv_commands.def), its
 * checks at start-up and its lookup index.
 */
#include "server/cmd/srv_cmd.h"
#include "server/srv_log.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 32
#define INDEX_SIZE 512 /* power of two, > 2x the top-level rows */

/* The row macros of srv_commands.def, as table entries. */
#define KEYS(...)                                               \
    .keyspecs = { __VA_ARGS__ },                                \
    .nkeyspecs = (int)(sizeof((srv_keyspec[]){ __VA_ARGS__ }) / \
                       sizeof(srv_keyspec))
#define NOKEYS .nkeyspecs = 0
#define KS(fl, begin_, find_)        \
    {                                \
        .flags = (fl), begin_, find_ \
    }
#define KSN(fl, begin_, find_, text)                  \
    {                                                 \
        .flags = (fl), begin_, find_, .notes = (text) \
    }
#define KEY1(fl) KS(fl, INDEX(1), RANGE(0, 1, 0))
#define INDEX(i) .begin = SRV_KS_INDEX, .index = (i)
#define KEYWORD(word, from) \
    .begin = SRV_KS_KEYWORD, .keyword = (word), .index = (from)
#define RANGE(last, step, lim) \
    .find = SRV_KS_RANGE, .lastkey = (last), .keystep = (step), .limit = (lim)
#define KEYNUM(idx, first, step)                                    \
    .find = SRV_KS_KEYNUM, .keynumidx = (idx), .firstkey = (first), \
    .keystep = (step)
#define BEGIN_UNKNOWN .begin = SRV_KS_BEGIN_UNKNOWN
#define FIND_UNKNOWN .find = SRV_KS_FIND_UNKNOWN
#define NODOC .doc_flags = 0
#define HISTORY(...) \
    .history = (const char *const[]) { __VA_ARGS__, NULL }
#define DOC(dflags, dep, by, hist)                                         \
    .doc_flags = (dflags), .deprecated_since = (dep), .replaced_by = (by), \
    .history = (hist)
#define HIST(...) \
    (const char *const[]) { __VA_ARGS__, NULL }

static srv_command table[] = {
#define CMD(fn, name_, arity_, flags_, acl_, keys_, tips_, group_, since_, \
            complexity_, summary_, doc_)                                   \
    { .name = name_,                                                       \
      .proc = srv_cmd_##fn,                                                \
      .arity = arity_,                                                     \
      .flags = flags_,                                                     \
      .acl = acl_,                                                         \
      keys_,                                                               \
      .tips = tips_,                                                       \
      .group = group_,                                                     \
      .since = since_,                                                     \
      .complexity = complexity_,                                           \
      .summary = summary_,                                                 \
      doc_ },
#define CONTAINER(name_, arity_, flags_, acl_, group_, since_, complexity_, \
                  summary_, doc_)                                           \
    { .name = name_,                                                        \
      .proc = NULL,                                                         \
      .arity = arity_,                                                      \
      .flags = flags_,                                                      \
      .acl = acl_,                                                          \
      .group = group_,                                                      \
      .since = since_,                                                      \
      .complexity = complexity_,                                            \
      .summary = summary_,                                                  \
      doc_ },
#include "server/cmd/srv_commands.def"
#undef CONTAINER
#undef CMD
};
#define NCOMMANDS ((int)(sizeof table / sizeof table[0]))

static srv_command *index_[INDEX_SIZE];

static unsigned name_hash(const char *lower, size_t len)
{
    unsigned h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)lower[i]) * 16777619u;
    return h;
}

static void table_bug(const srv_command *cmd, const char *what)
{
    srv_log(SRV_LOG_WARNING, 0, "command table: '%s' %s", cmd->name, what);
    fprintf(stderr, "larder: command table: '%s' %s\n", cmd->name, what);
    abort();
}

/*
 * Redis's legacy (first, last, step) triple of COMMAND INFO, derived from
 * the key specs as Redis 7 derives it: the index-and-range specs that
 * follow one another with a step of 1 make one range; any other spec (a
 * key count, a gap, another step, an incomplete spec) makes the keys
 * movable (F_MOVABLEKEYS), and so does a command whose keys none of that
 * covers. A single index-and-range spec is taken as it is.
 */
static void derive_key_range(srv_command *cmd)
{
    int first = INT_MAX, prev_last = 0;
    unsigned last = 0;

    cmd->first_key = cmd->last_key = cmd->key_step = 0;
    if (cmd->nkeyspecs == 0)
        return;
    const srv_keyspec *s = &cmd->keyspecs[0];
    if (cmd->nkeyspecs == 1 && s->begin == SRV_KS_INDEX &&
        s->find == SRV_KS_RANGE) {
        cmd->first_key = s->index;
        cmd->last_key = s->lastkey >= 0 ? s->index + s->lastkey : s->lastkey;
        cmd->key_step = s->keystep;
        if (s->flags & KS_INCOMPLETE)
            cmd->flags |= F_MOVABLEKEYS;
        return;
    }
    for (int i = 0; i < cmd->nkeyspecs; i++) {
        s = &cmd->keyspecs[i];
        if (s->begin != SRV_KS_INDEX || s->find != SRV_KS_RANGE ||
            s->keystep != 1 || (prev_last && prev_last != s->index - 1)) {
            cmd->flags |= F_MOVABLEKEYS;
            continue;
        }
        if (s->flags & KS_INCOMPLETE)
            cmd->flags |= F_MOVABLEKEYS;
        if (s->index < first)
            first = s->index;
        /* a negative last key (counted from the end) is past any other */
        int abs_last = s->lastkey >= 0 ? s->index + s->lastkey : s->lastkey;
        if ((unsigned)abs_last > last)
            last = (unsigned)abs_last;
        prev_last = (int)last;
    }
    if (first == INT_MAX) {
        cmd->flags |= F_MOVABLEKEYS;
        return;
    }
    cmd->first_key = first;
    cmd->last_key = (int)last;
    cmd->key_step = 1;
}

void srv_cmd_init(void)
{
    srv_command *container = NULL;
    int top = 0;

    memset(index_, 0, sizeof index_);
    for (int i = 0; i < NCOMMANDS; i++) {
        srv_command *cmd = &table[i];
        const char *bar = strchr(cmd->name, '|');

        cmd->parent = NULL;
        cmd->subs = NULL;
        cmd->nsubs = 0;
        cmd->flags &= ~F_MOVABLEKEYS;
        derive_key_range(cmd);
        if (cmd->nkeyspecs > SRV_CMD_KEYSPECS_MAX)
            table_bug(cmd, "has too many key specs");
        for (const char *p = cmd->name; *p; p++)
            if (isupper((unsigned char)*p))
                table_bug(cmd, "is not in lower case");
        if (bar) {
            size_t plen = (size_t)(bar - cmd->name);
            if (!container || strlen(container->name) != plen ||
                memcmp(container->name, cmd->name, plen) != 0)
                table_bug(cmd, "does not follow its container's row");
            if (!cmd->proc)
                table_bug(cmd, "has no handler");
            if (srv_cmd_lookup_sub(container, bar + 1, strlen(bar + 1)))
                table_bug(cmd, "is in the table twice");
            if (!container->subs)
                container->subs = cmd;
            container->nsubs++;
            container->flags |= cmd->flags & F_BARRIER;
            cmd->parent = container;
            continue;
        }
        container = cmd;
        size_t len = strlen(cmd->name);
        if (len >= NAME_MAX_LEN)
            table_bug(cmd, "is too long a name");
        if (srv_cmd_lookup(cmd->name, len))
            table_bug(cmd, "is in the table twice");
        if (++top > INDEX_SIZE / 2)
            table_bug(cmd, "does not fit the index: raise INDEX_SIZE");
        unsigned h = name_hash(cmd->name, len);
        while (index_[h & (INDEX_SIZE - 1)])
            h++;
        index_[h & (INDEX_SIZE - 1)] = cmd;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (!table[i].proc && table[i].nsubs == 0)
            table_bug(&table[i], "is a container without subcommands");
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

const srv_command *srv_cmd_lookup_name(const char *name, size_t len)
{
    const char *bar = memchr(name, '|', len);
    const srv_command *cmd;

    if (!bar)
        return srv_cmd_lookup(name, len);
    cmd = srv_cmd_lookup(name, (size_t)(bar - name));
    if (!cmd || !cmd->nsubs)
        return NULL;
    return srv_cmd_lookup_sub(cmd, bar + 1, len - (size_t)(bar - name) - 1);
}

const srv_command *srv_cmd_table(int *count)
{
    *count = NCOMMANDS;
    return table;
}

unsigned srv_cmd_categories(const srv_command *cmd)
{
    unsigned acl = cmd->acl;

    if (cmd->flags & F_WRITE)
        acl |= A_WRITE;
    if ((cmd->flags & F_READONLY) && !(acl & A_SCRIPTING))
        acl |= A_READ; /* not the read-only scripting commands (Redis) */
    if (cmd->flags & F_ADMIN)
        acl |= A_ADMIN | A_DANGEROUS;
    if (cmd->flags & F_PUBSUB)
        acl |= A_PUBSUB;
    if (cmd->flags & F_FAST)
        acl |= A_FAST;
    if (!(acl & A_FAST))
        acl |= A_SLOW;
    return acl;
}

/*
 * Flags of a spec flagged KS_VARIABLE_FLAGS, which depend on the
 * arguments: SET's key is read too when GET is given.
 */
static unsigned resolve_flags(const srv_command *cmd, const srv_keyspec *s,
                              int argc, const srv_slice *argv)
{
    if (!(s->flags & KS_VARIABLE_FLAGS))
        return s->flags;
    if (!strcmp(cmd->name, "set")) {
        for (int i = 3; i < argc; i++)
            if (srv_util_streq(argv[i].ptr, argv[i].len, "get"))
                return KS_RW | KS_ACCESS | KS_UPDATE;
        return KS_OW | KS_UPDATE;
    }
    return s->flags;
}

/*
 * The key an unknown spec of SORT stands for: the argument after the last
 * STORE, skipping the arguments of LIMIT, GET and BY (Redis's rule); -1
 * for none, and for any other command's unknown specs.
 */
static int unknown_key(const srv_command *cmd, const srv_keyspec *s, int argc,
                       const srv_slice *argv)
{
    static const struct {
        const char *word;
        int skip;
    } skip[] = { { "limit", 2 }, { "get", 1 }, { "by", 1 } };
    int store = -1;

    if (strcmp(cmd->name, "sort") || !(s->flags & KS_OW))
        return -1;
    for (int i = 2; i < argc; i++) {
        for (size_t j = 0; j < sizeof skip / sizeof skip[0]; j++) {
            if (srv_util_streq(argv[i].ptr, argv[i].len, skip[j].word)) {
                i += skip[j].skip;
                break;
            }
            if (srv_util_streq(argv[i].ptr, argv[i].len, "store") &&
                i + 1 < argc) {
                store = i + 1;
                break;
            }
        }
    }
    return store;
}

/* Where spec `s` begins in argv: an index, or -1 when it finds nothing. */
static int spec_begin(const srv_keyspec *s, int argc, const srv_slice *argv)
{
    if (s->begin == SRV_KS_INDEX)
        return s->index < argc ? s->index : -1;
    int from = s->index >= 0 ? s->index : argc + s->index;
    int dir = s->index >= 0 ? 1 : -1;
    for (int i = from; i > 0 && i < argc; i += dir)
        if (argv[i].len == strlen(s->keyword) &&
            strncasecmp(argv[i].ptr, s->keyword, argv[i].len) == 0)
            return i + 1 < argc ? i + 1 : -1;
    return -1;
}

int srv_cmd_each_key(const srv_command *cmd, int argc, const srv_slice *argv,
                     srv_cmd_key_fn *fn, void *ctx)
{
    int n = 0;

    for (int i = 0; i < cmd->nkeyspecs; i++) {
        const srv_keyspec *s = &cmd->keyspecs[i];
        int first, last, step = s->keystep;

        if (s->flags & KS_NOT_KEY)
            continue;
        if (s->begin == SRV_KS_BEGIN_UNKNOWN) {
            int at = unknown_key(cmd, s, argc, argv);
            if (at >= 0) {
                n++;
                if (fn && fn(ctx, at, resolve_flags(cmd, s, argc, argv)))
                    return n;
            }
            continue;
        }
        if ((first = spec_begin(s, argc, argv)) < 0)
            continue;
        if (s->find == SRV_KS_RANGE) {
            if (s->lastkey >= 0)
                last = first + s->lastkey;
            else if (s->limit <= 1)
                last = argc + s->lastkey;
            else
                last = first + (argc - first) / s->limit + s->lastkey;
        } else {
            long long keys;
            int at = first + s->keynumidx;
            if (at >= argc ||
                !srv_util_str2ll(argv[at].ptr, argv[at].len, &keys) ||
                keys < 1 || keys > argc)
                return -1;
            first += s->firstkey;
            last = first + ((int)keys - 1) * step;
        }
        if (last >= argc || last < first || step < 1)
            return -1;
        for (int k = first; k <= last; k += step) {
            n++;
            if (fn && fn(ctx, k, resolve_flags(cmd, s, argc, argv)))
                return n;
        }
    }
    return n;
}
