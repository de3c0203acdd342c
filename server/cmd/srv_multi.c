/*
 * srv_multi.c - transactions: the MULTI queue, WATCH versions, EXEC.
 *
 * A connection's state lives in one struct attached to it (srv_hooks.h)
 * at its first MULTI or WATCH and kept until it closes, so a client that runs
 * transactions in a loop reuses the same buffers. Queued arguments are copied
 * (the read buffer is consumed at each group commit) into one byte buffer;
 * entries and watched keys hold offsets into their buffers.
 */
#include "server/cmd/srv_multi.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_dispatch.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_aclconn.h"
#include "server/srv_group.h"
#include "server/srv_hooks.h"
#include "server/srv_reply.h"
#include "server/srv_worker.h"
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <stdlib.h>
#include <string.h>

typedef struct queued {
    const srv_command *cmd;
    int argc;
    unsigned first_arg; /* index into `args` */
} queued;

typedef struct arg {
    size_t off, len; /* into `bytes` */
} arg;

/* A watched key as it was: its version, the stored database its number
 * named and that number's SWAPDB count (st_dbmap.h). */
typedef struct keystate {
    uint64_t version; /* 0: absent */
    unsigned stored;
    uint32_t swaps;
} keystate;

typedef struct watched {
    unsigned db;
    size_t off, len; /* name, into `names` */
    keystate at;     /* when watched */
} watched;

/* What a rewind goes back to. */
typedef struct saved {
    int active, dirty;
    unsigned nq, nargs, nw;
    size_t bytes, names;
} saved;

typedef struct srv_multi {
    int active; /* between MULTI and EXEC/DISCARD */
    int dirty;  /* a command was refused: EXECABORT */
    queued *q;
    unsigned nq, capq;
    arg *args;
    unsigned nargs, capargs;
    srv_buf bytes;
    watched *w;
    unsigned nw, capw;
    srv_buf names;
    srv_slice *argv; /* EXEC's argument vector */
    int capargv;
    /* an EXEC that published: its reply, with slots for the counts */
    srv_buf aside;
    size_t *slots; /* offsets into `aside` */
    long long *counts;
    unsigned nslots, capslots, nanswered;
    int aside_lost; /* the reply became one error: no slots */
    saved at_commit;
} srv_multi;

static const srv_hooks multi_hooks;

/* c's transaction state, NULL until its first MULTI or WATCH. */
static srv_multi *multi_of(const srv_conn *c)
{
    return srv_hooks_state(&c->hooks, &multi_hooks);
}

#define GROW_MIN 8

/* Make room for one more element of `size` bytes in *v (count n, cap *cap). */
static int grow(void **v, unsigned n, unsigned *cap, size_t size)
{
    if (n < *cap)
        return 0;
    unsigned ncap = *cap ? *cap * 2 : GROW_MIN;
    void *p = realloc(*v, ncap * size);
    if (!p)
        return -1;
    *v = p;
    *cap = ncap;
    return 0;
}

static srv_multi *state_or_reply(srv_conn *c)
{
    srv_multi *m = multi_of(c);

    if (m)
        return m;
    if (!(m = calloc(1, sizeof *m)) ||
        srv_hooks_attach(&c->hooks, &multi_hooks, m)) {
        free(m);
        srv_reply_error(c, "ERR out of memory");
        return NULL;
    }
    return m;
}

/* Forget the queue (MULTI is over). Bytes stay until the next commit:
 * a rewind may still need them (see the header). */
static void end_multi(srv_multi *m)
{
    m->active = 0;
    m->dirty = 0;
    m->nq = 0;
    m->nargs = 0;
}

static void unwatch_all(srv_multi *m) { m->nw = 0; }

/* Keep c->multi_queued (CLIENT LIST's multi=, ACL LOG's context) in step
 * with m: called after every change of m->active or m->nq. */
static void show(srv_conn *c, const srv_multi *m)
{
    c->multi_queued = m->active ? (int)m->nq : -1;
}

unsigned srv_multi_queued_flags(const srv_conn *c)
{
    const srv_multi *m = multi_of(c);
    unsigned f = 0;

    for (unsigned i = 0; m && m->active && i < m->nq; i++)
        f |= m->q[i].cmd->flags;
    return f;
}

/* ---- the connection's hooks ---- */

/* A command refused by the dispatcher's checks: EXEC will answer
 * EXECABORT. */
static void on_refused(srv_conn *c, void *state)
{
    srv_multi *m = state;

    if (m->active)
        m->dirty = 1;
}

/* Inside MULTI a checked command is queued and +QUEUED replied (or
 * refused, for the commands Redis keeps out of transactions). */
static int on_intercept(srv_conn *c, void *state)
{
    srv_multi *m = state;

    if (!m->active || (c->cmd->flags & F_TXCTL))
        return 0;
    if (c->cmd->flags & F_NO_MULTI) {
        /* As Redis: refused, and EXEC will answer EXECABORT. */
        m->dirty = 1;
        srv_reply_error(c, "ERR Command not allowed inside a transaction");
        return 1;
    }
    if (grow((void **)&m->q, m->nq, &m->capq, sizeof *m->q))
        goto oom;
    for (int i = 0; i < c->argc; i++) {
        if (grow((void **)&m->args, m->nargs + (unsigned)i, &m->capargs,
                 sizeof *m->args))
            goto oom;
        m->args[m->nargs + (unsigned)i] = (arg){ m->bytes.len, c->argv[i].len };
        if (srv_buf_append(&m->bytes, c->argv[i].ptr, c->argv[i].len))
            goto oom;
    }
    m->q[m->nq++] = (queued){ c->cmd, c->argc, m->nargs };
    show(c, m);
    m->nargs += (unsigned)c->argc;
    srv_reply_simple(c, "QUEUED");
    return 1;
oom:
    m->dirty = 1;
    srv_reply_error(c, "ERR out of memory queueing the command");
    return 1;
}

/* The group committed: what m holds now is what a rewind goes back to. */
static void on_committed(srv_conn *c, void *state)
{
    srv_multi *m = state;

    if (m->nq == 0)
        m->bytes.len = 0;
    if (m->nw == 0)
        m->names.len = 0;
    m->at_commit = (saved){ m->active, m->dirty,     m->nq,       m->nargs,
                            m->nw,     m->bytes.len, m->names.len };
}

/* The group was lost: back to the state of the last commit. */
static void on_rewind(srv_conn *c, void *state)
{
    srv_multi *m = state;

    m->active = m->at_commit.active;
    m->dirty = m->at_commit.dirty;
    m->nq = m->at_commit.nq;
    m->nargs = m->at_commit.nargs;
    m->nw = m->at_commit.nw;
    m->bytes.len = m->at_commit.bytes;
    m->names.len = m->at_commit.names;
    show(c, m);
}

/* RESET: leave MULTI and forget the watched keys. */
static void on_reset(srv_conn *c, void *state)
{
    end_multi(state);
    show(c, state);
    unwatch_all(state);
    srv_group_commit_after(&c->worker->group);
}

/* The connection closes: free everything its transaction state holds. */
static void on_close(srv_conn *c, void *state)
{
    srv_multi *m = state;

    free(m->q);
    free(m->args);
    free(m->w);
    free(m->argv);
    free(m->slots);
    free(m->counts);
    srv_buf_free(&m->aside);
    srv_buf_free(&m->bytes);
    srv_buf_free(&m->names);
    free(m);
}

/* ---- commands ---- */

void srv_cmd_multi(srv_conn *c)
{
    srv_multi *m = state_or_reply(c);

    if (!m)
        return;
    if (m->active) {
        srv_reply_error(c, "ERR MULTI calls can not be nested");
        return;
    }
    m->active = 1;
    show(c, m);
    m->dirty = 0;
    srv_reply_ok(c);
}

void srv_cmd_discard(srv_conn *c)
{
    srv_multi *m = multi_of(c);

    if (!m || !m->active) {
        srv_reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    end_multi(m);
    show(c, m);
    unwatch_all(m);
    srv_group_commit_after(&c->worker->group);
    srv_reply_ok(c);
}

void srv_cmd_unwatch(srv_conn *c)
{
    srv_multi *m = multi_of(c);

    if (m) {
        unwatch_all(m);
        srv_group_commit_after(&c->worker->group);
    }
    srv_reply_ok(c);
}

/* The state `k` has now: its record's version (0 when absent or
 * expired), where its number points and how often that was swapped. */
static int state_of(const srv_conn *c, struct st_txn *t, st_keyref *k,
                    keystate *s)
{
    st_rec r;
    int rc = st_keyspace_lookup(t, k, srv_cmd_now(c), &r);

    if (rc && rc != ST_ENOTFOUND)
        return rc;
    s->version = rc == 0 ? r.version : 0;
    s->stored = k->stored_db;
    return st_dbmap_swaps(t, k->db, &s->swaps);
}

/*
 * Was a watched key touched? Its version changed; or it exists (now or
 * when watched) and a SWAPDB changed its database in between (Redis
 * touches the watched keys that exist in either swapped database). A
 * key absent throughout stays untouched by swaps, as in Redis.
 */
static int touched(const keystate *then, const keystate *now)
{
    if (then->version != now->version)
        return 1;
    if (then->version == 0)
        return 0;
    return then->stored != now->stored || then->swaps != now->swaps;
}

static int is_watched(const srv_multi *m, unsigned db, const srv_slice *a)
{
    for (unsigned i = 0; i < m->nw; i++)
        if (m->w[i].db == db && m->w[i].len == a->len &&
            memcmp(m->names.data + m->w[i].off, a->ptr, a->len) == 0)
            return 1;
    return 0;
}

/*
 * WATCH is a barrier that commits right after it: it reads in a snapshot
 * taken after every earlier command of the connection committed, and any
 * later write (its own included) gets a newer transaction id, so a
 * changed version can only mean a write after the WATCH.
 */
void srv_cmd_watch(srv_conn *c)
{
    srv_multi *m = state_or_reply(c);
    struct st_txn *t;

    if (!m)
        return;
    if (m->active) {
        srv_reply_error(c, "ERR WATCH inside MULTI is not allowed");
        return;
    }
    srv_group_commit_after(&c->worker->group);
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    for (int i = 1; i < c->argc; i++) {
        st_keyref k;
        keystate ks;
        int rc;

        if (is_watched(m, c->db, &c->argv[i]))
            continue;
        st_codec_keyref_init(&k, c->db, c->argv[i].ptr, c->argv[i].len);
        if ((rc = state_of(c, t, &k, &ks))) {
            srv_txn_error(c, rc);
            return;
        }
        if (grow((void **)&m->w, m->nw, &m->capw, sizeof *m->w) ||
            srv_buf_append(&m->names, c->argv[i].ptr, c->argv[i].len)) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        m->w[m->nw++] = (watched){ c->db, m->names.len - c->argv[i].len,
                                   c->argv[i].len, ks };
    }
    srv_reply_ok(c);
}

/* Has a watched key changed since WATCH? 1 yes, 0 no, <0 storage code. */
static int watch_broken(const srv_conn *c, srv_multi *m, struct st_txn *t)
{
    for (unsigned i = 0; i < m->nw; i++) {
        st_keyref k;
        keystate now;
        int rc;

        st_codec_keyref_init(&k, m->w[i].db, m->names.data + m->w[i].off,
                             m->w[i].len);
        if ((rc = state_of(c, t, &k, &now)))
            return rc;
        if (touched(&m->w[i].at, &now))
            return 1;
    }
    return 0;
}

static int any_flagged(const srv_multi *m, unsigned flag)
{
    for (unsigned i = 0; i < m->nq; i++)
        if (m->q[i].cmd->flags & flag)
            return 1;
    return 0;
}

static void swap_out(srv_conn *c, srv_multi *m)
{
    srv_buf t = c->out;

    c->out = m->aside;
    m->aside = t;
}

/*
 * A PUBLISH inside EXEC sent its message to the broker: EXEC's reply,
 * built aside, gets a slot for the count that comes back later.
 */
static int on_defer(srv_conn *c, void *state)
{
    srv_multi *m = state;
    unsigned cap = m->capslots;

    if (!(c->flags & SRV_CONN_IN_EXEC))
        return 0;

    if (grow((void **)&m->slots, m->nslots, &m->capslots, sizeof *m->slots) ||
        grow((void **)&m->counts, m->nslots, &cap, sizeof *m->counts)) {
        m->aside_lost = 1; /* no memory: the reply says so below */
        return 1;
    }
    m->slots[m->nslots++] = c->out.len;
    return 1;
}

/* The broker's count for the oldest open slot: 1 when EXEC's reply is
 * now complete in c->out, 0 while it waits for more, -1 with no slot. */
static int on_deferred(srv_conn *c, void *state, long long count)
{
    srv_multi *m = state;
    size_t from = 0;

    if (m->nanswered >= m->nslots)
        return -1;
    m->counts[m->nanswered++] = count;
    if (m->nanswered < m->nslots)
        return 0;
    if (m->aside_lost) {
        srv_buf_append(&c->out, m->aside.data, m->aside.len);
    } else {
        for (unsigned i = 0; i < m->nslots; i++) {
            srv_buf_append(&c->out, m->aside.data + from, m->slots[i] - from);
            srv_reply_int(c, m->counts[i]);
            from = m->slots[i];
        }
        srv_buf_append(&c->out, m->aside.data + from, m->aside.len - from);
    }
    m->aside.len = 0;
    m->nslots = m->nanswered = 0;
    m->aside_lost = 0;
    return 1;
}

/* Point c->argv at queued command i's arguments. */
static int load_queued(srv_conn *c, srv_multi *m, unsigned i)
{
    queued *e = &m->q[i];

    if (e->argc > m->capargv) {
        srv_slice *p = realloc(m->argv, (size_t)e->argc * sizeof *p);
        if (!p)
            return -1;
        m->argv = p;
        m->capargv = e->argc;
    }
    for (int j = 0; j < e->argc; j++) {
        const arg *a = &m->args[e->first_arg + (unsigned)j];
        m->argv[j].ptr = m->bytes.data + a->off;
        m->argv[j].len = a->len;
    }
    c->argc = e->argc;
    c->argv = m->argv;
    c->cmd = e->cmd;
    return 0;
}

/*
 * A storage failure inside the queue (disk full, a transaction too big)
 * loses the whole transaction: the worker aborts it, so EXEC's reply
 * becomes that one error and none of the queued replies, which would
 * claim writes that did not happen.
 */
static void reply_lost(srv_conn *c, size_t exec_mark, size_t cmd_mark)
{
    size_t n = c->out.len - cmd_mark; /* the error, last in the buffer */

    memmove(c->out.data + exec_mark, c->out.data + cmd_mark, n);
    c->out.len = exec_mark + n;
}

void srv_cmd_exec(srv_conn *c)
{
    srv_multi *m = multi_of(c);
    struct st_txn *t;
    int rc;

    if (!m || !m->active) {
        srv_reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    srv_group_commit_after(&c->worker->group);
    if (m->dirty) {
        srv_reply_error(c, "EXECABORT Transaction discarded because of "
                           "previous errors.");
        end_multi(m);
        show(c, m);
        unwatch_all(m);
        return;
    }
    t = any_flagged(m, F_WRITE | F_WRITE_TXN) || m->nw
            ? srv_txn_write_or_reply(c)
            : srv_txn_read_or_reply(c);
    if (!t) {
        end_multi(m);
        show(c, m);
        unwatch_all(m);
        return;
    }
    if ((rc = watch_broken(c, m, t)) != 0) {
        if (rc < 0)
            srv_txn_error(c, rc);
        else
            srv_reply_null_array(c);
        end_multi(m);
        show(c, m);
        unwatch_all(m);
        return;
    }
    unwatch_all(m);
    m->active = 0; /* the queue runs, it is not queued again */
    show(c, m);
    int argc = c->argc;
    srv_slice *argv = c->argv;
    const srv_command *cmd = c->cmd;
    /*
     * A queue with pub/sub commands builds its reply aside: a PUBLISH's
     * count comes from the broker after EXEC has run. (If EXEC's commit
     * then fails and the group replays it, its messages go out twice:
     * the replay cannot take a message back.)
     */
    int aside = any_flagged(m, F_NOREPLAY);
    if (aside) {
        m->aside.len = 0;
        m->nslots = m->nanswered = 0;
        m->aside_lost = 0;
        swap_out(c, m);
    }
    size_t exec_mark = c->out.len;
    srv_reply_array(c, m->nq);
    c->flags |= SRV_CONN_IN_EXEC;
    for (unsigned i = 0; i < m->nq; i++) {
        size_t cmd_mark = c->out.len;
        if (load_queued(c, m, i)) {
            srv_reply_error(c, "ERR out of memory");
            continue;
        }
        if (srv_aclconn_exec_check_or_reply(c) == 0)
            srv_dispatch_run(c);
        if (c->worker->group.poisoned) {
            reply_lost(c, exec_mark, cmd_mark);
            m->aside_lost = 1;
            break;
        }
    }
    c->flags &= ~SRV_CONN_IN_EXEC;
    if (aside) {
        swap_out(c, m);
        if (m->nslots == 0) {
            srv_buf_append(&c->out, m->aside.data, m->aside.len);
            m->aside.len = 0;
        } else {
            c->blocked = 1; /* until on_deferred completes it */
        }
    }
    end_multi(m);
    show(c, m);
    c->argc = argc;
    c->argv = argv;
    c->cmd = cmd;
}

/*
 * The command ran alone in a transaction that could not commit, and its
 * reply became that error: an EXEC is over all the same.
 */
static void on_lost(srv_conn *c, void *state)
{
    if (c->cmd && c->cmd->proc == srv_cmd_exec) {
        end_multi(state);
        show(c, state);
        unwatch_all(state);
    }
}

static const srv_hooks multi_hooks = {
    .name = "multi",
    .committed = on_committed,
    .rewind = on_rewind,
    .lost = on_lost,
    .reset = on_reset,
    .close = on_close,
    .intercept = on_intercept,
    .refused = on_refused,
    .defer = on_defer,
    .deferred = on_deferred,
};
