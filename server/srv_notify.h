/*
 * srv_notify.h - keyspace notifications: the event classes of
 * `notify-keyspace-events` (Redis's flag letters), and the call every
 * write command's handler makes once per event it causes. An event goes
 * out as Redis's two messages, "__keyspace@<db>__:<key>" carrying the
 * event name and "__keyevent@<db>__:<event>" carrying the key (each when
 * K and E are set), to subscribers on every worker, in the order the
 * writes committed (srv_keys.h carries them with their transaction).
 * srv_notify.c itself only knows the flag letters, so the config can
 * parse them without reaching the event path.
 */
#ifndef SRV_NOTIFY_H
#define SRV_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_keys.h"

/* Event classes and the two kinds of message (Redis's values). */
#define SRV_NOTIFY_KEYSPACE (1 << 0)  /* K */
#define SRV_NOTIFY_KEYEVENT (1 << 1)  /* E */
#define SRV_NOTIFY_GENERIC (1 << 2)   /* g */
#define SRV_NOTIFY_STRING (1 << 3)    /* $ */
#define SRV_NOTIFY_LIST (1 << 4)      /* l */
#define SRV_NOTIFY_SET (1 << 5)       /* s */
#define SRV_NOTIFY_HASH (1 << 6)      /* h */
#define SRV_NOTIFY_ZSET (1 << 7)      /* z */
#define SRV_NOTIFY_EXPIRED (1 << 8)   /* x */
#define SRV_NOTIFY_EVICTED (1 << 9)   /* e */
#define SRV_NOTIFY_STREAM (1 << 10)   /* t */
#define SRV_NOTIFY_KEY_MISS (1 << 11) /* m */
#define SRV_NOTIFY_MODULE (1 << 12)   /* d */
#define SRV_NOTIFY_NEW (1 << 13)      /* n */
/* A: every class but key misses and new keys. */
#define SRV_NOTIFY_ALL                                                         \
    (SRV_NOTIFY_GENERIC | SRV_NOTIFY_STRING | SRV_NOTIFY_LIST |                \
     SRV_NOTIFY_SET | SRV_NOTIFY_HASH | SRV_NOTIFY_ZSET | SRV_NOTIFY_EXPIRED | \
     SRV_NOTIFY_EVICTED | SRV_NOTIFY_STREAM | SRV_NOTIFY_MODULE)

/* Longest flags text srv_notify_format writes, NUL included. */
#define SRV_NOTIFY_FLAGS_MAX 24

/* Parse Redis's flag letters (any order, repeats allowed): 0 with
 * *flags set, or -1 for a letter that is not one. Any process. */
int srv_notify_parse(const char *s, long long *flags);

/* The flags as CONFIG GET shows them (Redis's order; "A" for all). */
void srv_notify_format(long long flags, char *out, size_t size);

/* Flags of a write's record (srv_keys.h) besides K and E. */
#define SRV_NOTIFY_INVALIDATE (1 << 14) /* tracking clients forget it */
#define SRV_NOTIFY_FLUSH (1 << 15)      /* ... forget every key */

/*
 * What srv_notify records for an event of class `type`: the messages
 * notify-keyspace-events asks for (K, E), and the invalidation tracking
 * clients need (any key a write touches) while some client tracks.
 */
static inline unsigned srv_notify_wanted(int type)
{
    long long f = srv_her.cfg->notify_keyspace_events;
    unsigned w = (f & type) ? (unsigned)(f & (SRV_NOTIFY_KEYSPACE |
                                              SRV_NOTIFY_KEYEVENT))
                            : 0;

    if (atomic_load_explicit(&srv_her.stats->trackers, memory_order_relaxed))
        w |= SRV_NOTIFY_INVALIDATE;
    return w;
}

/*
 * Event `event` of class `type` (SRV_NOTIFY_*) happened to `key` of c's
 * database in the running command (the key was written): published after
 * its transaction commits if notify-keyspace-events asks for it, and the
 * key invalidated for tracking clients. Costs two loads and a test when
 * neither is in use.
 */
static inline void srv_notify(srv_conn *c, int type, const char *event,
                              const void *key, size_t len)
{
    unsigned w = srv_notify_wanted(type);

    if (w)
        srv_keys_record(c->db, w, event, key, len, c->id);
}

/* srv_notify for a key of another database than c's (COPY ... DB). */
static inline void srv_notify_db(srv_conn *c, unsigned db, int type,
                                 const char *event, const void *key, size_t len)
{
    unsigned w = srv_notify_wanted(type);

    if (w)
        srv_keys_record(db, w, event, key, len, c->id);
}

/* srv_notify for the key at argv[i] (most handlers' case). */
static inline void srv_notify_arg(srv_conn *c, int type, const char *event,
                                  int i)
{
    srv_notify(c, type, event, c->argv[i].ptr, c->argv[i].len);
}

#endif
