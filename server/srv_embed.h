/*
 * srv_embed.h - an in-process worker for tests and fuzzing: the real
 * command table, dispatcher, group commit and LMDB, but no sockets, no
 * loop and no other processes (pub/sub is worker-local). One per process.
 */
#ifndef SRV_EMBED_H
#define SRV_EMBED_H

#include <stddef.h>

#include "server/srv_conn.h"

/*
 * Open the embedded worker: defaults for the config (with `dir` as data
 * directory, sync no), the shared counters, the command table and LMDB.
 * 0 or -1.
 */
int srv_embed_open(const char *dir);

/*
 * A connection of the embedded worker whose replies are appended to its
 * `out` buffer and never written anywhere. Free with srv_conn_close().
 * NULL when out of memory or descriptors.
 */
srv_conn *srv_embed_conn(void);

/*
 * Feed bytes to an embedded connection as if read from its socket: run
 * every complete command and the group commit. The replies accumulate in
 * c->out (the caller may read and reset it). Returns 0, or -1 when the
 * connection would have been closed (it is then closed already).
 */
int srv_embed_feed(srv_conn *c, const void *data, size_t len);

/* Close every embedded connection, LMDB and the counters. */
void srv_embed_close(void);

#endif
