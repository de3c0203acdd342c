/*
 * srv_bsubs.h - the broker's subscription counts: per kind (channel,
 * pattern, shard channel) a table from name to the subscription counts of
 * each worker link that has any, and their total. A name is in its table
 * only while its total is above zero, so PUBSUB NUMPAT is the size of the
 * pattern table. It finds a message's receivers (the links to send it to
 * are the broker's business) and answers PUBSUB NUMSUB and CHANNELS.
 *
 * Pure and single-threaded (the broker's); links are the broker's ids.
 * Targets are delivered through a callback, during the call that finds
 * them.
 */
#ifndef SRV_BSUBS_H
#define SRV_BSUBS_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_bproto.h"
#include "server/srv_buf.h"

typedef struct srv_bsubs srv_bsubs;

/* Link `link` has subscribers of a message (called once per name it
 * matched, so a link may be named more than once). */
typedef void srv_bsubs_target_fn(void *ctx, uint32_t link);

/* Empty tables; NULL on ENOMEM. */
srv_bsubs *srv_bsubs_create(void);

/* Free the tables and NULL *s. */
void srv_bsubs_destroy(srv_bsubs **s);

/*
 * Set link `link`'s subscriptions to name[0..len) of `kind` to `n` (an
 * absolute count: a worker's current number); the name leaves its table
 * at total 0. Out of memory loses the count (logged).
 */
void srv_bsubs_set(srv_bsubs *s, int kind, const char *name, size_t len,
                   uint32_t link, uint64_t n);

/* A link went away: its workers' subscriptions leave every count. */
void srv_bsubs_drop_link(srv_bsubs *s, uint32_t link);

/*
 * A message on channel ch[0..chlen) of `kind`: `target(ctx, link)` for
 * each link with a subscriber on it or, for a plain channel, on a pattern
 * matching it. Returns the receivers (Redis's count).
 */
uint64_t srv_bsubs_route(const srv_bsubs *s, int kind, const char *ch,
                         size_t chlen, srv_bsubs_target_fn *target, void *ctx);

/* The number of names of `kind` with subscriptions (NUMPAT's count). */
size_t srv_bsubs_names(const srv_bsubs *s, int kind);

/*
 * Append to `out` the R_NUMSUB frame answering NUMSUB frame `f`: each
 * name's total. 0, or ENOMEM (logged; `out` may hold part of a frame).
 */
int srv_bsubs_numsub(const srv_bsubs *s, const srv_bframe *f, srv_buf *out);

/*
 * Append to `out` the R_CHANNELS frame answering CHANNELS frame `f`: the
 * names of its kind matching its pattern (all without one). A list past
 * what a worker accepts in one frame (`max_body`: srv_bproto_max_body)
 * is cut there. 0, or ENOMEM (logged; `out` may hold part of a frame).
 */
int srv_bsubs_channels(const srv_bsubs *s, const srv_bframe *f,
                       uint64_t max_body, srv_buf *out);

#endif
