/*
 * srv_cmd.h - the command table. One table (generated from
 * srv_commands.def) holds every command and subcommand: handler, arity,
 * flags, ACL categories, key specs, tips and docs. It drives lookup, the
 * dispatcher's checks (srv_dispatch.h: arity, subcommand, auth,
 * subscribed mode), COMMAND
 * and its subcommands; handlers never repeat those checks. Handlers reach
 * storage only through the worker's group transactions (srv_txn.h).
 */
#ifndef SRV_CMD_H
#define SRV_CMD_H

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "server/srv_conn.h"

struct st_txn;

/*
 * Command flags. The first group is Redis's: COMMAND INFO reports them by
 * Redis's names, and some drive larder too (noted). The second group is
 * larder's own and never shown.
 */
#define F_WRITE 0x00001u    /* may modify the keyspace (MULTI, srv_txn) */
#define F_READONLY 0x00002u /* reads the keyspace */
#define F_DENYOOM 0x00004u  /* may grow the data set */
#define F_ADMIN 0x00008u
#define F_PUBSUB 0x00010u
#define F_NOSCRIPT 0x00020u
#define F_LOADING 0x00040u
#define F_STALE 0x00080u
#define F_SKIP_SLOWLOG 0x00100u
#define F_FAST 0x00200u   /* O(1) or O(log n) */
#define F_NOAUTH 0x00400u /* allowed before AUTH (dispatcher) */
#define F_NO_ASYNC_LOADING 0x00800u
#define F_NO_MULTI 0x01000u
#define F_ALLOW_BUSY 0x02000u
#define F_MOVABLEKEYS 0x04000u /* set by srv_cmd_init from the key specs */
#define F_BLOCKING 0x08000u    /* may block its client (srv_block.h) */
/* (issue 12) */
#define F_SKIP_MONITOR 0x1000000u
#define F_NO_MANDATORY_KEYS 0x2000000u

/* The worker ends the open batch before it runs (a container gets it
 * from its subcommands: the worker reads it before the subcommand is
 * known). */
#define F_BARRIER 0x10000u
/* Runs at once inside MULTI, never queued. */
#define F_TXCTL 0x20000u
/* Acts outside storage (pub/sub): the group commits right after it runs
 * (srv_group_commit_after), so it never re-runs. */
#define F_NOREPLAY 0x40000u
/* Allowed in RESP2 subscribed mode. */
#define F_SUBSCRIBED_OK 0x80000u
/* No write command, yet it may open the group's write transaction: EXEC
 * (for its queue), DEBUG (TXN-SLEEP), ZUNION ZINTER ZDIFF (a scratch
 * result). */
#define F_WRITE_TXN 0x100000u

/* ACL categories a row names; COMMAND adds those its flags imply, as
 * Redis does (write, read, admin and dangerous, pubsub, fast, else slow).
 * In Redis's order, which is the order COMMAND INFO lists them in. */
#define A_KEYSPACE 0x000001u
#define A_READ 0x000002u
#define A_WRITE 0x000004u
#define A_SET 0x000008u
#define A_SORTEDSET 0x000010u
#define A_LIST 0x000020u
#define A_HASH 0x000040u
#define A_STRING 0x000080u
#define A_BITMAP 0x000100u
#define A_HYPERLOGLOG 0x000200u
#define A_GEO 0x000400u
#define A_STREAM 0x000800u
#define A_PUBSUB 0x001000u
#define A_ADMIN 0x002000u
#define A_FAST 0x004000u
#define A_SLOW 0x008000u
#define A_BLOCKING 0x010000u
#define A_DANGEROUS 0x020000u
#define A_CONNECTION 0x040000u
#define A_TRANSACTION 0x080000u
#define A_SCRIPTING 0x100000u

/* Key-spec flags (Redis 7's), in the order COMMAND INFO lists them. */
#define KS_RO 0x001u
#define KS_RW 0x002u
#define KS_OW 0x004u
#define KS_RM 0x008u
#define KS_ACCESS 0x010u
#define KS_UPDATE 0x020u
#define KS_INSERT 0x040u
#define KS_DELETE 0x080u
#define KS_NOT_KEY 0x100u
#define KS_INCOMPLETE 0x200u
#define KS_VARIABLE_FLAGS 0x400u

/* Doc flags of COMMAND DOCS. */
#define D_DEPRECATED 0x1u
#define D_SYSCMD 0x2u

#define SRV_CMD_KEYSPECS_MAX 4

/* SRV_KS_BEGIN_UNKNOWN, SRV_KS_FIND_UNKNOWN: keys Redis cannot locate from
 * the spec (SORT's BY/GET patterns and STORE); COMMAND GETKEYS finds them
 * by the command's own rule, if it has one. */
enum srv_ks_begin { SRV_KS_INDEX, SRV_KS_KEYWORD, SRV_KS_BEGIN_UNKNOWN };
enum srv_ks_find { SRV_KS_RANGE, SRV_KS_KEYNUM, SRV_KS_FIND_UNKNOWN };

/*
 * One key spec: where the search for keys begins (at argv index `index`,
 * or after the argument `keyword`, searched from `index`, from the end if
 * negative) and how the keys are found from there (a range: the last key
 * `lastkey` arguments on, -1 the last argument, every `keystep`-th, with
 * `limit`; or a count: the number of keys at `keynumidx`, the first key
 * at `firstkey`, every `keystep`-th; both relative to the beginning).
 */
typedef struct srv_keyspec {
    unsigned flags; /* KS_* */
    enum srv_ks_begin begin;
    int index;
    const char *keyword;
    enum srv_ks_find find;
    int lastkey, limit;      /* range */
    int keynumidx, firstkey; /* keynum */
    int keystep;
    const char *notes; /* or NULL */
} srv_keyspec;

typedef void srv_cmd_proc(srv_conn *c);

typedef struct srv_command {
    const char *name;   /* lower case; "client|list" for a sub */
    srv_cmd_proc *proc; /* NULL for a container */
    int arity;          /* N exactly, -N at least N (name included;
                         * a subcommand counts both words) */
    unsigned flags;     /* F_* */
    unsigned acl;       /* A_* the row names */
    srv_keyspec keyspecs[SRV_CMD_KEYSPECS_MAX];
    int nkeyspecs;
    const char *tips; /* space separated, or NULL */
    const char *group;
    const char *since;
    const char *complexity;
    const char *summary;
    unsigned doc_flags;           /* D_* */
    const char *deprecated_since; /* or NULL */
    const char *replaced_by;      /* or NULL */
    const char *const *history;   /* version, text, ..., NULL; or NULL */
    /* set by srv_cmd_init */
    int first_key, last_key, key_step; /* Redis's legacy key range */
    const struct srv_command *parent;  /* a subcommand's container */
    const struct srv_command *subs;    /* a container's subcommands */
    int nsubs;
    uint64_t calls; /* this process's count */
} srv_command;

#define CMD(fn, ...) srv_cmd_proc srv_cmd_##fn;
#define CONTAINER(...)
#include "server/cmd/srv_commands.def"
#undef CONTAINER
#undef CMD

/*
 * Build the lookup index and the derived fields (container links, legacy
 * key range, F_MOVABLEKEYS); call once per process before dispatching.
 * Aborts on a malformed table (a subcommand that does not follow its
 * container, a duplicate name): a bug, caught by the first start.
 */
void srv_cmd_init(void);

/* Find a top-level command by name, any case; NULL if unknown. */
const srv_command *srv_cmd_lookup(const char *name, size_t len);

/* Find container's subcommand by its own name ("list"), any case.
 * Inline: the dispatcher reaches the rows it was handed, not the table. */
static inline const srv_command *
srv_cmd_lookup_sub(const srv_command *container, const char *name, size_t len)
{
    size_t plen = strlen(container->name) + 1; /* "client|" */

    for (int i = 0; i < container->nsubs; i++) {
        const srv_command *sub = &container->subs[i];
        if (strlen(sub->name) - plen == len &&
            strncasecmp(sub->name + plen, name, len) == 0)
            return sub;
    }
    return NULL;
}

/* Find a command or subcommand by its full name ("get", "client|list"),
 * any case, as COMMAND INFO and DOCS name them. */
const srv_command *srv_cmd_lookup_name(const char *name, size_t len);

/* The table, for COMMAND and INFO: containers and top-level commands in
 * table order, each container followed by its subcommands. */
const srv_command *srv_cmd_table(int *count);

/* The row's ACL categories and those its flags imply, as Redis adds them
 * (write, read, admin and dangerous, pubsub, fast, else slow): what
 * COMMAND INFO shows and what ACL rules of a category cover. */
unsigned srv_cmd_categories(const srv_command *cmd);

/* Called for each key srv_cmd_each_key finds: its argv index and its
 * KS_* flags (KS_VARIABLE_FLAGS resolved for these arguments). Nonzero
 * stops the walk. */
typedef int srv_cmd_key_fn(void *ctx, int pos, unsigned flags);

/*
 * Walk the keys of the command line argv[0..argc) (argv[0] the command's
 * name, argv[1] a subcommand's) that cmd's key specs name, spec by spec,
 * leaving out specs flagged KS_NOT_KEY; `fn` NULL only counts. Returns
 * the number of keys visited (up to the one where fn stopped), or -1 when
 * the arguments contradict a spec (a key count that is not a positive
 * integer or runs past the end): Redis then finds no keys. Any process.
 */
int srv_cmd_each_key(const srv_command *cmd, int argc, const srv_slice *argv,
                     srv_cmd_key_fn *fn, void *ctx);

/* The clock of the command c runs, ms since the epoch (set by the
 * dispatcher; one for every command of an EXEC). */
static inline int64_t srv_cmd_now(const srv_conn *c) { return c->now_ms; }

#endif
