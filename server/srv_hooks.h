/*
 * srv_hooks.h - per-connection hooks: how session features (MULTI, pub/sub,
 * and later blocking commands, scripts, client tracking) keep state on a
 * connection and hear about its life without the worker, the connection
 * layer or the group commit naming them.
 *
 * A feature attaches its hooks and its state to a connection the first
 * time it needs them (MULTI at the first MULTI or WATCH, pub/sub at the
 * first subscription or broker request). The layers below call every
 * attached hook at the moments of a connection's life:
 *
 *   committed  the group committed: what the state holds now is what a
 *              later rewind goes back to
 *   rewind     the group's transaction was lost: go back to the state of
 *              the last commit (the connection's input will be replayed)
 *   lost       the connection's command ran alone in a transaction that
 *              failed to commit, and its reply became that error
 *   reset      the RESET command
 *   close      the connection is being freed: release the state
 *
 * and, for the dispatcher and for replies that arrive later:
 *
 *   intercept  a command passed its checks: return 1 to take it (MULTI
 *              queues it and replies +QUEUED), 0 to let it run
 *   refused    a command was refused by its checks (unknown, arity, auth)
 *   defer      the running command's reply will arrive later (PUBLISH's
 *              receiver count): return 1 if the hook keeps a place for it
 *              (EXEC builds its reply aside), 0 to let the caller block
 *              the connection until it arrives
 *   deferred   the integer a `defer` kept a place for arrived: return 1
 *              when the hook's reply is now complete in c->out, 0 while
 *              it waits for more, -1 if it kept no place (the caller then
 *              replies the integer itself)
 *
 * Any hook may be NULL. Everything here runs on the connection's worker
 * thread; the functions are inline so that calling them references no
 * module above (the circle-free rule of ARCHITECTURE.md).
 */
#ifndef SRV_HOOKS_H
#define SRV_HOOKS_H

#include <stddef.h>

struct srv_conn;

typedef struct srv_hooks {
    const char *name;
    void (*committed)(struct srv_conn *c, void *state);
    void (*rewind)(struct srv_conn *c, void *state);
    void (*lost)(struct srv_conn *c, void *state);
    void (*reset)(struct srv_conn *c, void *state);
    void (*close)(struct srv_conn *c, void *state);
    int (*intercept)(struct srv_conn *c, void *state);
    void (*refused)(struct srv_conn *c, void *state);
    int (*defer)(struct srv_conn *c, void *state);
    int (*deferred)(struct srv_conn *c, void *state, long long value);
} srv_hooks;

/* Features one connection may carry at once. */
#define SRV_HOOKS_MAX 8

typedef struct srv_hook_slot {
    const srv_hooks *hooks; /* NULL: free */
    void *state;            /* the feature's, freed by its close hook */
} srv_hook_slot;

/* The hook slots of a connection (a member of srv_conn). */
typedef struct srv_hook_set {
    srv_hook_slot slot[SRV_HOOKS_MAX];
    int n; /* slots in use, in attach order */
} srv_hook_set;

/* The state `hooks` attached to the set, or NULL. */
static inline void *srv_hooks_state(const srv_hook_set *s,
                                    const srv_hooks *hooks)
{
    for (int i = 0; i < s->n; i++)
        if (s->slot[i].hooks == hooks)
            return s->slot[i].state;
    return NULL;
}

/*
 * Attach `hooks` with its `state` (once per feature: the caller checks
 * srv_hooks_state first). 0, or -1 when every slot is taken (a bug:
 * SRV_HOOKS_MAX is the number of features).
 */
static inline int srv_hooks_attach(srv_hook_set *s, const srv_hooks *hooks,
                                   void *state)
{
    if (s->n == SRV_HOOKS_MAX)
        return -1;
    s->slot[s->n].hooks = hooks;
    s->slot[s->n].state = state;
    s->n++;
    return 0;
}

/* Call one kind of void hook of every attached feature, in attach order. */
#define SRV_HOOKS_EACH(set, conn, which)                                   \
    do {                                                                   \
        srv_hook_set *set_ = (set);                                        \
        for (int i_ = 0; i_ < set_->n; i_++)                               \
            if (set_->slot[i_].hooks->which)                               \
                set_->slot[i_].hooks->which((conn), set_->slot[i_].state); \
    } while (0)

/* Free every feature's state (connection close) and empty the set. */
static inline void srv_hooks_close(srv_hook_set *s, struct srv_conn *c)
{
    SRV_HOOKS_EACH(s, c, close);
    s->n = 0;
}

/* The dispatcher's question: does a feature take this command? */
static inline int srv_hooks_intercept(srv_hook_set *s, struct srv_conn *c)
{
    for (int i = 0; i < s->n; i++)
        if (s->slot[i].hooks->intercept &&
            s->slot[i].hooks->intercept(c, s->slot[i].state))
            return 1;
    return 0;
}

/* A reply of c's running command comes later: 1 if a feature keeps a
 * place for it, 0 if the caller must block c until it arrives. */
static inline int srv_hooks_defer(srv_hook_set *s, struct srv_conn *c)
{
    for (int i = 0; i < s->n; i++)
        if (s->slot[i].hooks->defer &&
            s->slot[i].hooks->defer(c, s->slot[i].state))
            return 1;
    return 0;
}

/* The deferred integer arrived: as the `deferred` hook (1, 0 or -1). */
static inline int srv_hooks_deferred(srv_hook_set *s, struct srv_conn *c,
                                     long long value)
{
    for (int i = 0; i < s->n; i++)
        if (s->slot[i].hooks->deferred) {
            int rc = s->slot[i].hooks->deferred(c, s->slot[i].state, value);
            if (rc >= 0)
                return rc;
        }
    return -1;
}

#endif
