/*
 * srv_dispatch.h - running a command: the dispatcher's checks, then the
 * handler.
 */
#ifndef SRV_DISPATCH_H
#define SRV_DISPATCH_H

#include "server/srv_conn.h"

/*
 * Check the command in c->cmd / c->argc / c->argv (c->cmd NULL: unknown)
 * and run it, replying to c. A refused command is told to c's features
 * (MULTI's EXECABORT); a feature may take a checked command instead of
 * running it (MULTI queues it).
 */
void srv_dispatch_execute(srv_conn *c);

/* Run c->cmd on c->argc / c->argv, already checked (EXEC's queue). */
void srv_dispatch_run(srv_conn *c);

#endif
