/*
 * srv_sgroup.h - the consumer-group side of XREADGROUP, which the XREAD
 * generic (srv_cmd_stream.c) hands over once the arguments are parsed.
 * The group commands themselves (XGROUP, XACK, XPENDING, XCLAIM,
 * XAUTOCLAIM, XINFO, XSETID) are rows of the table with handlers in
 * srv_cmd_sgroup.c.
 */
#ifndef SRV_SGROUP_H
#define SRV_SGROUP_H

#include "server/cmd/srv_stream.h"
#include "server/srv_conn.h"

/*
 * XREADGROUP with its arguments parsed into `r`: resolve the group of
 * every stream (NOGROUP otherwise), serve new entries (">") or the
 * consumer's history, recording deliveries in the PEL (unless NOACK) and
 * creating the consumer, and reply; with nothing to serve, the null
 * array (or block, when BLOCK was given).
 */
void srv_sgroup_read(srv_conn *c, const srv_stream_read *r);

#endif
