/*
 * srv_ask.h - questions to every worker: a command of one client that
 * needs the clients of all workers (CLIENT LIST, KILL, UNBLOCK, whether a
 * client id exists) asks through the broker, each worker answers its part
 * for its own clients, and the parts come back together (concatenated,
 * or summed: enum srv_bp_query says which) as the asking command's reply.
 *
 * The asking client waits (c->blocked) until the reply is in its output,
 * so replies keep pipeline order while others are served. Without the
 * broker (link down, the embedded worker), or inside EXEC (whose reply
 * cannot wait in its middle), the worker answers from its own clients
 * at once, and a question in flight when the broker goes away is
 * answered so too. Everything runs on the worker's thread.
 */
#ifndef SRV_ASK_H
#define SRV_ASK_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_buf.h"
#include "server/srv_conn.h"
#include "server/srv_worker.h"

/*
 * This worker's part of question `q` (the asking command's encoding,
 * which names the asking client by id where that matters): append it to
 * `part` (for a summed kind one count, srv_ask_put_count). 0, or -1 when
 * out of memory.
 */
typedef int srv_ask_part_fn(const char *q, size_t qlen, srv_buf *part);

/* The whole answer arrived (or this worker's alone): reply to c. */
typedef void srv_ask_reply_fn(srv_conn *c, const char *ans, size_t len);

/* Have `part` answer questions of `kind` (enum srv_bp_query) here. */
void srv_ask_register(int kind, srv_ask_part_fn *part);

/*
 * As srv_ask_register, for a kind whose part only reads this worker's
 * state: it is also answered in the middle of a command, while this
 * worker waits for an answer of its own (srv_ask_wait) or runs a long
 * script (srv_ask_answer_waiting), so that two workers asking each other
 * never wait on one another.
 */
void srv_ask_register_anytime(int kind, srv_ask_part_fn *part);

/*
 * Ask every worker question `q` of `kind` and wait for the whole answer
 * (a script's command needs it before it goes on), up to `timeout_ms`;
 * meanwhile this worker answers the anytime kinds. The answer is copied
 * to `ans` (emptied first). 0; -1 when the broker is not up or the time
 * ran out (the caller answers from this worker; a late answer is
 * dropped), with `ans` empty.
 */
int srv_ask_wait(int kind, const void *q, size_t qlen, int timeout_ms,
                 srv_buf *ans);

/* Answer the anytime questions that already arrived (a long script's
 * worker, now and then). */
void srv_ask_answer_waiting(void);

/*
 * Ask every worker question `q` of `kind` on behalf of c: `reply` builds
 * c's reply from the answer, now (this worker's part only, see the top)
 * or when it arrives.
 */
void srv_ask(srv_conn *c, int kind, const void *q, size_t qlen,
             srv_ask_reply_fn *reply);

/* A count as a summed part holds it; and the sum of an answer. */
int srv_ask_put_count(srv_buf *part, uint64_t n);
uint64_t srv_ask_count(const char *ans, size_t len);

/* The worker service: joins the link (ASK out, QUERY and REPLY in). */
extern const srv_service srv_ask_service;

#endif
