/*
 * unit_embed.h - the command suites' fixture: an embedded worker (the
 * real parser, command table, dispatcher, MULTI, group commit and
 * storage; no sockets, no loop, no broker) on a fresh data directory per
 * test, and helpers that feed commands to its connections and compare
 * the RESP bytes they get back exactly.
 */
#ifndef UNIT_EMBED_H
#define UNIT_EMBED_H

#include <check.h>
#include <stddef.h>

#include "server/srv_conn.h"
#include "server/srv_embed.h"

/*
 * Give tc the fixtures: a scratch root named after the program under
 * $TMPDIR for the TCase (removed by the runner process), and before each
 * test an embedded worker opened on a new directory inside it (closed,
 * with all its connections, after the test).
 */
void unit_embed_fixture(TCase *tc);

/* A new connection of the embedded worker (RESP2, db 0; not yet
 * authenticated if a password is set). Closed by the fixture. */
srv_conn *unit_embed_conn(void);

/* Feed raw bytes as if read from c's socket; fail unless the connection
 * stays open. */
void unit_embed_feed(srv_conn *c, const char *data, size_t len);

/* Feed one command, its arguments C strings ending with NULL, encoded as
 * a RESP array of bulk strings. */
void unit_embed_send(srv_conn *c, const char *arg, ...)
    __attribute__((sentinel));

/* The replies c holds since the last expect are exactly `want` (shown
 * escaped when they differ); then forget them. */
void unit_embed_expect(srv_conn *c, const char *want);

/* The replies c holds start with `prefix` (for replies that carry a
 * value the test does not know, like HELLO's client id); then forget
 * them all. */
void unit_embed_expect_prefix(srv_conn *c, const char *prefix);

/* Send a command and expect its reply: UNIT_CALL(c, "+OK\r\n", "SET",
 * "k", "v"). */
#define UNIT_CALL(c, want, ...)                                \
    do {                                                       \
        unit_embed_send((c), __VA_ARGS__, (const char *)NULL); \
        unit_embed_expect((c), (want));                        \
    } while (0)

#endif
