/*
 * srv_cmd.h - the command table. One table (generated from
 * srv_commands.def) drives lookup, the dispatcher's checks (arity, auth;
 * srv_dispatch.h), COMMAND and COMMAND DOCS; handlers never repeat those
 * checks. Handlers reach storage only through the worker's group
 * transactions (srv_txn.h).
 */
#ifndef SRV_CMD_H
#define SRV_CMD_H

#include <stdint.h>

#include "server/srv_conn.h"

struct st_txn;

/* Command flags. */
#define F_WRITE 0x001u      /* may modify the keyspace */
#define F_READONLY 0x002u   /* reads the keyspace */
#define F_FAST 0x004u       /* O(1) or O(log n) */
#define F_NOSTORE 0x008u    /* never touches storage */
#define F_NOAUTH 0x010u     /* allowed before AUTH */
#define F_BARRIER 0x020u    /* ends the open batch before running */
#define F_ADMIN 0x040u
#define F_PUBSUB 0x080u
#define F_BLOCKING 0x100u
#define F_DENYOOM 0x200u    /* may grow the data set */
#define F_TXCTL 0x400u      /* runs at once inside MULTI, never queued */
#define F_NOREPLAY 0x800u   /* acts outside storage (pub/sub): the group
                             * commits right after it runs (as for
                             * srv_group_commit_after), so it never
                             * re-runs */

typedef void srv_cmd_proc(srv_conn *c);

typedef struct srv_command {
    const char *name;
    srv_cmd_proc *proc;
    int arity;
    unsigned flags;
    int first_key, last_key, key_step;
    const char *group;
    const char *since;
    const char *summary;
    uint64_t calls;         /* this process's count */
} srv_command;

#define CMD(fn, ...) srv_cmd_proc srv_cmd_##fn;
#include "server/cmd/srv_commands.def"
#undef CMD

/* Build the lookup index; call once per process before dispatching. */
void srv_cmd_init(void);

/* Find a command by name, any case; NULL if unknown. */
const srv_command *srv_cmd_lookup(const char *name, size_t len);

/* The table, for COMMAND and INFO. */
const srv_command *srv_cmd_table(int *count);

/* The clock of the command c runs, ms since the epoch (set by the
 * dispatcher; one for every command of an EXEC). */
static inline int64_t srv_cmd_now(const srv_conn *c) { return c->now_ms; }

#endif
