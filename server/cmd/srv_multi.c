/*
 * srv_multi.c - transactions: the MULTI queue, WATCH versions, EXEC.
 *
 * A connection's state lives in one struct allocated at its first MULTI
 * or WATCH and kept until it closes, so a client that runs transactions
 * in a loop reuses the same buffers. Queued arguments are copied (the
 * read buffer is consumed at each group commit) into one byte buffer;
 * entries and watched keys hold offsets into their buffers.
 */
#include "server/cmd/srv_multi.h"
#include "server/cmd/srv_txn.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <stdlib.h>
#include <string.h>

typedef struct queued {
    const srv_command *cmd;
    int argc;
    unsigned first_arg;         /* index into `args` */
} queued;

typedef struct arg {
    size_t off, len;            /* into `bytes` */
} arg;

typedef struct watched {
    unsigned db;
    size_t off, len;            /* name, into `names` */
    uint64_t version;           /* 0: absent when watched */
} watched;

/* What a rewind goes back to. */
typedef struct saved {
    int active, dirty;
    unsigned nq, nargs, nw;
    size_t bytes, names;
} saved;

typedef struct srv_multi {
    int active;                 /* between MULTI and EXEC/DISCARD */
    int dirty;                  /* a command was refused: EXECABORT */
    queued *q;
    unsigned nq, capq;
    arg *args;
    unsigned nargs, capargs;
    srv_buf bytes;
    watched *w;
    unsigned nw, capw;
    srv_buf names;
    srv_slice *argv;            /* EXEC's argument vector */
    int capargv;
    /* an EXEC that published: its reply, with slots for the counts */
    srv_buf aside;
    size_t *slots;              /* offsets into `aside` */
    long long *counts;
    unsigned nslots, capslots, nanswered;
    int aside_lost;             /* the reply became one error: no slots */
    saved at_commit;
} srv_multi;

static int in_exec;

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
    if (!c->mx && !(c->mx = calloc(1, sizeof *c->mx)))
        srv_reply_error(c, "ERR out of memory");
    return c->mx;
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

static void unwatch_all(srv_multi *m)
{
    m->nw = 0;
}

int srv_multi_in_exec(void) { return in_exec; }

int srv_multi_queued(const srv_conn *c)
{
    return c->mx && c->mx->active ? (int)c->mx->nq : -1;
}

void srv_multi_flag_error(srv_conn *c)
{
    if (c->mx && c->mx->active)
        c->mx->dirty = 1;
}

int srv_multi_queue(srv_conn *c)
{
    srv_multi *m = c->mx;

    if (!m || !m->active || (c->cmd->flags & F_TXCTL))
        return 0;
    if (grow((void **)&m->q, m->nq, &m->capq, sizeof *m->q))
        goto oom;
    for (int i = 0; i < c->argc; i++) {
        if (grow((void **)&m->args, m->nargs + (unsigned)i, &m->capargs,
                 sizeof *m->args))
            goto oom;
        m->args[m->nargs + (unsigned)i] =
            (arg){ m->bytes.len, c->argv[i].len };
        if (srv_buf_append(&m->bytes, c->argv[i].ptr, c->argv[i].len))
            goto oom;
    }
    m->q[m->nq++] = (queued){ c->cmd, c->argc, m->nargs };
    m->nargs += (unsigned)c->argc;
    srv_reply_simple(c, "QUEUED");
    return 1;
oom:
    m->dirty = 1;
    srv_reply_error(c, "ERR out of memory queueing the command");
    return 1;
}

void srv_multi_committed(srv_conn *c)
{
    srv_multi *m = c->mx;

    if (!m)
        return;
    if (m->nq == 0)
        m->bytes.len = 0;
    if (m->nw == 0)
        m->names.len = 0;
    m->at_commit = (saved){ m->active, m->dirty, m->nq, m->nargs, m->nw,
                            m->bytes.len, m->names.len };
}

void srv_multi_rewind(srv_conn *c)
{
    srv_multi *m = c->mx;

    if (!m)
        return;
    m->active = m->at_commit.active;
    m->dirty = m->at_commit.dirty;
    m->nq = m->at_commit.nq;
    m->nargs = m->at_commit.nargs;
    m->nw = m->at_commit.nw;
    m->bytes.len = m->at_commit.bytes;
    m->names.len = m->at_commit.names;
}

void srv_multi_reset(srv_conn *c)
{
    if (!c->mx)
        return;
    end_multi(c->mx);
    unwatch_all(c->mx);
    srv_worker_commit_after();
}

void srv_multi_free(srv_conn *c)
{
    srv_multi *m = c->mx;

    if (!m)
        return;
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
    c->mx = NULL;
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
    m->dirty = 0;
    srv_reply_ok(c);
}

void srv_cmd_discard(srv_conn *c)
{
    if (!c->mx || !c->mx->active) {
        srv_reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    end_multi(c->mx);
    unwatch_all(c->mx);
    srv_worker_commit_after();
    srv_reply_ok(c);
}

void srv_cmd_unwatch(srv_conn *c)
{
    if (c->mx) {
        unwatch_all(c->mx);
        srv_worker_commit_after();
    }
    srv_reply_ok(c);
}

/* The version `k` has now: its record's, or 0 when absent or expired. */
static int version_of(const srv_conn *c, struct st_txn *t, st_keyref *k,
                      uint64_t *ver)
{
    st_rec r;
    int rc = st_keyspace_lookup(t, k, srv_cmd_now(c), &r);

    *ver = rc == 0 ? r.version : 0;
    return rc == ST_ENOTFOUND ? 0 : rc;
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
    srv_worker_commit_after();
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    for (int i = 1; i < c->argc; i++) {
        st_keyref k;
        uint64_t ver;
        int rc;

        if (is_watched(m, c->db, &c->argv[i]))
            continue;
        st_codec_keyref_init(&k, c->db, c->argv[i].ptr, c->argv[i].len);
        if ((rc = version_of(c, t, &k, &ver))) {
            srv_txn_error(c, rc);
            return;
        }
        if (grow((void **)&m->w, m->nw, &m->capw, sizeof *m->w) ||
            srv_buf_append(&m->names, c->argv[i].ptr, c->argv[i].len)) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        m->w[m->nw++] = (watched){ c->db, m->names.len - c->argv[i].len,
                                   c->argv[i].len, ver };
    }
    srv_reply_ok(c);
}

/* Has a watched key changed since WATCH? 1 yes, 0 no, <0 storage code. */
static int watch_broken(const srv_conn *c, srv_multi *m, struct st_txn *t)
{
    for (unsigned i = 0; i < m->nw; i++) {
        st_keyref k;
        uint64_t ver;
        int rc;

        st_codec_keyref_init(&k, m->w[i].db, m->names.data + m->w[i].off,
                       m->w[i].len);
        if ((rc = version_of(c, t, &k, &ver)))
            return rc;
        if (ver != m->w[i].version)
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

void srv_multi_publish_sent(srv_conn *c)
{
    srv_multi *m = c->mx;
    unsigned cap = m->capslots;

    if (grow((void **)&m->slots, m->nslots, &m->capslots, sizeof *m->slots) ||
        grow((void **)&m->counts, m->nslots, &cap, sizeof *m->counts)) {
        m->aside_lost = 1;          /* no memory: the reply says so below */
        return;
    }
    m->slots[m->nslots++] = c->out.len;
}

int srv_multi_publish_answered(srv_conn *c, long long count)
{
    srv_multi *m = c->mx;
    size_t from = 0;

    if (!m || m->nanswered >= m->nslots)
        return 0;
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
    size_t n = c->out.len - cmd_mark;   /* the error, last in the buffer */

    memmove(c->out.data + exec_mark, c->out.data + cmd_mark, n);
    c->out.len = exec_mark + n;
}

void srv_cmd_exec(srv_conn *c)
{
    srv_multi *m = c->mx;
    srv_group *g = &c->worker->group;
    struct st_txn *t;
    int rc;

    if (!m || !m->active) {
        srv_reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    srv_worker_commit_after();
    if (m->dirty) {
        srv_reply_error(c, "EXECABORT Transaction discarded because of "
                           "previous errors.");
        end_multi(m);
        unwatch_all(m);
        return;
    }
    t = any_flagged(m, F_WRITE | F_WRITE_TXN) || m->nw
            ? srv_txn_write_or_reply(c) : srv_txn_read_or_reply(c);
    if (!t) {
        end_multi(m);
        unwatch_all(m);
        return;
    }
    if ((rc = watch_broken(c, m, t)) != 0) {
        if (rc < 0)
            srv_txn_error(c, rc);
        else
            srv_reply_null_array(c);
        end_multi(m);
        unwatch_all(m);
        return;
    }
    unwatch_all(m);
    m->active = 0;              /* the queue runs, it is not queued again */
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
    in_exec = 1;
    for (unsigned i = 0; i < m->nq; i++) {
        size_t cmd_mark = c->out.len;
        if (load_queued(c, m, i)) {
            srv_reply_error(c, "ERR out of memory");
            continue;
        }
        srv_cmd_run(c);
        if (g->poisoned) {
            reply_lost(c, exec_mark, cmd_mark);
            m->aside_lost = 1;
            break;
        }
    }
    in_exec = 0;
    if (aside) {
        swap_out(c, m);
        if (m->nslots == 0) {
            srv_buf_append(&c->out, m->aside.data, m->aside.len);
            m->aside.len = 0;
        } else {
            c->blocked = 1;             /* srv_multi_publish_answered */
        }
    }
    end_multi(m);
    c->argc = argc;
    c->argv = argv;
    c->cmd = cmd;
}

void srv_multi_lost(srv_conn *c)
{
    if (c->mx && c->cmd && c->cmd->proc == srv_cmd_exec) {
        end_multi(c->mx);
        unwatch_all(c->mx);
    }
}
