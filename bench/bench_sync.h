/*
 * bench_sync: a blocking RESP client for larder-bench's set-up and
 * check-up work outside the measured run: AUTH and SELECT, INFO, preload,
 * and the transfer workload's balance checks.  Every read has a timeout,
 * so a dead server cannot hang the tool.
 */
#ifndef BENCH_SYNC_H
#define BENCH_SYNC_H

#include <stddef.h>

#include "bench/bench_resp.h"

/* Where to connect and how to log in; the strings are borrowed. */
typedef struct bench_target {
    const char *host;
    int port;
    const char *socket_path; /* non-NULL: use this Unix socket */
    const char *password;    /* non-NULL: AUTH with it */
    int db;                  /* SELECT it when non-zero */
} bench_target;

typedef struct bench_sync {
    int fd;
    bench_buf in;
    bench_buf out;
    bench_resp_scan scan; /* the reply being received */
    char err[256];        /* the last failure, for the user */
} bench_sync;

/* larder-bench's code table: its own failures (errno values are
 * positive; these are negative). */
#define BENCH_EREFUSED                                                   \
    (-1)                /* the server answered an error; see the message \
                         */
#define BENCH_ERUN (-2) /* a measured run failed; see the message */

/* Timeout of one blocking read or write. */
#define BENCH_SYNC_TIMEOUT_S 30

/*
 * Open a non-blocking socket to t and start connecting; *fd gets it.
 * Returns 0 (connected or EINPROGRESS) or an errno.  Shared with the
 * engine so both connect the same way (TCP_NODELAY on TCP).
 */
int bench_target_connect(const bench_target *t, int *fd);

/*
 * Connect, AUTH and SELECT.  Returns 0, an errno, or BENCH_EREFUSED when
 * the server refused AUTH or SELECT; c->err says which.  Close with
 * bench_sync_close() in every case.
 */
int bench_sync_open(bench_sync *c, const bench_target *t);
void bench_sync_close(bench_sync *c);

/* Send what bench_cmd_*() queued in c->out.  Returns 0 or an errno. */
int bench_sync_flush(bench_sync *c);

/*
 * Read the next reply into *r; r's pointers stay valid until the next
 * read.  Returns 0, an errno (ETIMEDOUT, ECONNRESET ...) or EPROTO.
 */
int bench_sync_read(bench_sync *c, bench_reply *r);

/*
 * Send argv and read its reply.  An error reply is returned in *r with
 * code 0: the caller decides what an error means.
 */
int bench_sync_command(bench_sync *c, bench_reply *r, unsigned argc,
                       const char *const *argv);

#endif /* BENCH_SYNC_H */
