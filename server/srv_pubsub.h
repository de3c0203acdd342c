/*
 * srv_pubsub.h - pub/sub inside a worker: each client's subscriptions
 * (channels, patterns, shard channels), the worker's name -> local
 * subscribers maps, delivery of messages to local clients, and the link
 * to the broker process (nonblocking, buffered, reconnecting with
 * back-off, re-sending the worker's whole subscription state on each
 * connection). Everything here runs on the worker's thread.
 *
 * A command that needs the broker's answer (PUBLISH's receiver count,
 * PUBSUB CHANNELS / NUMSUB / NUMPAT) sets c->blocked (inside EXEC a
 * PUBLISH's count goes to the place EXEC's reply keeps for it instead): the
 * worker runs no further command of that connection until the answer is
 * appended to its output, so replies keep pipeline order while other clients
 * are served. While the broker is unreachable the worker answers from its own
 * state (PUBLISH delivers to its local subscribers only).
 */
#ifndef SRV_PUBSUB_H
#define SRV_PUBSUB_H

#include <stddef.h>

#include "server/srv_conn.h"
#include "server/srv_worker.h"

/* The message kinds, as in the broker protocol. */
#define SRV_PS_CHANNEL 0
#define SRV_PS_PATTERN 1
#define SRV_PS_SHARD 2
#define SRV_PS_KINDS 3

/*
 * The worker service (srv_worker.h). start: join the link (without the
 * link, as in the embedded worker, pub/sub works worker-local); the link
 * then hands it the broker's frames after each group commit (deliver
 * messages, append answers, unblock their connections) and it runs the
 * input of the connections it unblocked. stop: forget what waits.
 */
extern const srv_service srv_pubsub_service;

/*
 * Subscribe c to `name` of `kind`: 1 if added, 0 if c already had it, -1
 * when out of memory (c is then marked to be closed). The broker learns
 * the worker's new count.
 */
int srv_pubsub_subscribe(srv_conn *c, int kind, const char *name, size_t len);

/* Unsubscribe c from one name: 1 if removed, 0 if c did not have it. */
int srv_pubsub_unsubscribe(srv_conn *c, int kind, const char *name, size_t len);

/*
 * Unsubscribe c from every name of `kind`, calling fn (if not NULL) after
 * each removal with the name, which lives until fn returns. Returns how
 * many were removed.
 */
size_t srv_pubsub_unsubscribe_all(srv_conn *c, int kind,
                                  void (*fn)(srv_conn *c, const char *name,
                                             size_t len));

/* c's subscriptions of one kind. */
size_t srv_pubsub_count(const srv_conn *c, int kind);

/*
 * Call fn(arg, name, len, pattern) for each of c's subscriptions (pattern:
 * 1 for a PSUBSCRIBE pattern), until fn returns nonzero. The name lives
 * until fn returns; fn must not change c's subscriptions. (ACL: does c's
 * user still allow what it listens to?)
 */
void srv_pubsub_each_subscription(const srv_conn *c,
                                  int (*fn)(void *arg, const char *name,
                                            size_t len, int pattern),
                                  void *arg);

/* A client's state is attached to it as hooks (srv_hooks.h): RESET drops
 * its subscriptions; close also forgets its pending broker requests. */

/*
 * PUBLISH / SPUBLISH `msg` on `ch`. Broker up: the message goes to the
 * broker and c is blocked until the receiver count comes back (it is then
 * c's reply). Otherwise the message is delivered to this worker's
 * subscribers and the reply is how many received it.
 */
void srv_pubsub_publish(srv_conn *c, int kind, const srv_slice *ch,
                        const srv_slice *msg);

/*
 * Inside a script PUBLISH answers at once with every worker's count of
 * receivers (asked through the broker while the script waits), and the
 * message is held with c until the script's transaction commits: sent
 * then, dropped if it does not. srv_pubsub_held is how much c holds;
 * srv_pubsub_unhold drops what was held after `mark` (a script killed
 * or run again from its start).
 */
size_t srv_pubsub_held(const srv_conn *c);
void srv_pubsub_unhold(srv_conn *c, size_t mark);

/*
 * How many would receive a message on `ch` of `kind` on every worker:
 * 0 with *n set, or -1 (not known now: this worker's count is used).
 * The scripting feature provides it (it asks every worker, each
 * answering with srv_pubsub_receivers_here); without it, or with the
 * broker away, a script's PUBLISH counts this worker's receivers.
 */
typedef int srv_pubsub_counter_fn(int kind, const char *ch, size_t chlen,
                                  long long *n);
void srv_pubsub_set_counter(srv_pubsub_counter_fn *fn);

/* This worker's receivers of a message on `ch` of `kind` (its channel's
 * subscribers and, for a channel, the matching patterns'), as a delivery
 * here would count them. */
long long srv_pubsub_receivers_here(int kind, const char *ch, size_t chlen);

/* The PUBSUB subcommands that need every worker's state. */
#define SRV_PS_Q_NUMSUB 1
#define SRV_PS_Q_CHANNELS 2
#define SRV_PS_Q_NUMPAT 3

/*
 * Answer a PUBSUB query: `args` are the subcommand's arguments (channel
 * names for NUMSUB, an optional pattern for CHANNELS). Broker up: c is
 * blocked until its answer arrives (inside a script, the script waits
 * for it); otherwise, and inside EXEC, answered from this worker.
 */
void srv_pubsub_query(srv_conn *c, int query, int kind, int nargs,
                      const srv_slice *args);

/*
 * Deliver `msg` on channel `ch` to this worker's subscribers (its channel
 * and the patterns that match it) as a PUBLISH would, without the broker
 * (keyspace events while it is away). Returns how many received it.
 */
long long srv_pubsub_deliver(const char *ch, size_t chlen, const char *msg,
                             size_t mlen);

/* The header of a push (RESP3 '>') or, in RESP2, an array of n. */
void srv_pubsub_reply_push(srv_conn *c, long long n);

#endif
