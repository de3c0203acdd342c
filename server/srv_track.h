/*
 * srv_track.h - client-side caching (CLIENT TRACKING) across workers.
 *
 * A tracking client's worker remembers the keys it reads (the default
 * mode; OPTIN / OPTOUT with CLIENT CACHING), or its BCAST prefixes. Every
 * write on any worker records the keys it touches while any client
 * tracks (srv_notify.h), and they travel with the write's transaction to
 * the broker, which hands each worker with tracking clients an INVAL
 * frame in commit order; the worker sends Redis's invalidation messages
 * (RESP3 "invalidate" pushes, or "__redis__:invalidate" messages to a
 * RESP2 redirection) and forgets the keys, as Redis: a key is
 * invalidated once per read. NOLOOP skips the client's own writes;
 * FLUSHDB / FLUSHALL invalidate everything (a null key list), and so does
 * a new connection to the broker (writes went unheard meanwhile). A
 * redirection to a client of another worker is delivered through the
 * broker (when that client has gone, the messages are dropped: only a
 * redirection to a missing client of this worker is seen as broken).
 * A write's invalidation reaches other workers after the write's reply,
 * so it may find a key a client read again meanwhile: that costs a
 * spurious invalidation (the client fetches the key again), never a
 * missed one. Everything runs on the worker's thread.
 */
#ifndef SRV_TRACK_H
#define SRV_TRACK_H

#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_worker.h"

/* CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
 * [OPTOUT] [NOLOOP]: Redis's checks and errors, then the change. */
void srv_track_command(srv_conn *c);

/* CLIENT CACHING YES|NO, CLIENT GETREDIR, CLIENT TRACKINGINFO. */
void srv_track_caching(srv_conn *c);
void srv_track_getredir(srv_conn *c);
void srv_track_info(srv_conn *c);

/*
 * After c ran a command (the dispatcher, only for connections with
 * SRV_CONN_TRACKING): remember the keys of a read, or forget CLIENT
 * CACHING's mark. `top`: a command of c's input (not one EXEC runs).
 */
void srv_track_after(srv_conn *c, int top);

/* The dispatcher's call: one test for a connection that never tracked. */
static inline void srv_track_seen(srv_conn *c, int top)
{
    if (c->flags & SRV_CONN_TRACKING)
        srv_track_after(c, top);
}

/* CLIENT LIST's flags (t B R) and redir of c: writes the letters to
 * *flags (advanced; flags may be NULL) and returns the redirection (0
 * for none, -1 without tracking). */
long long srv_track_list(const srv_conn *c, char **flags);

/* The worker service: joins the link (INVAL, TOCLIENT, its interest). */
extern const srv_service srv_track_service;

#endif
