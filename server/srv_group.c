/*
 * srv_group.c - group commit inside a worker and the rewind protocol (see
 * the header for the contract).
 */
#include "server/srv_group.h"
#include "server/srv_hooks.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_resp.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_txn.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#define GROUP_CAP_MIN 16

/* The worker's environment, for the errno behind ST_ENOSPACE in
 * srv_group_reply_error (one group per worker process). */
static const struct st_env *reply_env;

int srv_group_init(srv_group *g, struct event_base *base, int priority,
                   struct st_env *env, srv_stats_slot *stats,
                   void (*on_commit)(int, short, void *), void *arg,
                   srv_group_input_fn *run_input)
{
    memset(g, 0, sizeof *g);
    g->env = env;
    reply_env = env;
    g->stats = stats;
    g->run_input = run_input;
    g->ev_commit = event_new(base, -1, 0, on_commit, arg);
    if (!g->ev_commit || event_priority_set(g->ev_commit, priority)) {
        srv_group_fini(g);
        return -1;
    }
    return 0;
}

void srv_group_fini(srv_group *g)
{
    if (g->ev_commit)
        event_free(g->ev_commit);
    free(g->conns);
    g->ev_commit = NULL;
    g->conns = NULL;
    g->nconns = g->cap = 0;
}

void srv_group_on_wtxn_end(srv_group *g, void (*fn)(void *arg), void *arg)
{
    g->wtxn_end = fn;
    g->wtxn_end_arg = arg;
}

/* The write transaction is over: tell who asked (once). */
static void wtxn_ended(srv_group *g)
{
    void (*fn)(void *) = g->wtxn_end;

    g->wtxn_end = NULL;
    if (fn)
        fn(g->wtxn_end_arg);
}

void srv_group_schedule(srv_group *g)
{
    if (g->ev_commit)
        event_active(g->ev_commit, EV_TIMEOUT, 0);
}

void srv_group_join(srv_group *g, srv_conn *c)
{
    if (c->in_group)
        return;
    if (g->nconns == g->cap) {
        unsigned cap = g->cap ? g->cap * 2 : GROUP_CAP_MIN;
        srv_conn **n = realloc(g->conns, cap * sizeof *n);
        if (!n) {
            c->flags |= SRV_CONN_CLOSE_ASAP;
            return;
        }
        g->conns = n;
        g->cap = cap;
    }
    g->conns[g->nconns++] = c;
    c->in_group = 1;
    c->grp_out_mark = c->out.len;
    c->grp_db = c->db;
    c->grp_resp = c->resp;
    srv_group_schedule(g);
}

void srv_group_leave(srv_group *g, srv_conn *c)
{
    if (!c->in_group)
        return;
    for (unsigned i = 0; i < g->nconns; i++)
        if (g->conns[i] == c) {
            g->conns[i] = g->conns[--g->nconns];
            break;
        }
    c->in_group = 0;
}

/* m's executed input is now committed: drop it from `in`. */
static void member_committed(srv_conn *m)
{
    if (m->in_done) {
        srv_buf_consume(&m->in, m->in_done);
        m->in_dropped += m->in_done;
        /* What is left to replay moves with the input. */
        m->replay_until = m->replay_until > m->in_done
                              ? m->replay_until - m->in_done
                              : 0;
        m->in_done = 0;
    }
    m->grp_out_mark = m->out.len;
    m->grp_db = m->db;
    m->grp_resp = m->resp;
    m->mon_fed = 0;
    SRV_HOOKS_EACH(&m->hooks, m, committed);
}

static void members_committed(srv_group *g)
{
    for (unsigned i = 0; i < g->nconns; i++)
        member_committed(g->conns[i]);
}

void srv_group_commit_reads(srv_group *g, srv_conn *except)
{
    for (unsigned i = 0; i < g->nconns; i++)
        if (g->conns[i] != except)
            member_committed(g->conns[i]);
}

/* The transaction is lost: every member discards the replies made since
 * its last commit and will re-run those commands one transaction each. */
static void members_rewind(srv_group *g)
{
    for (unsigned i = 0; i < g->nconns; i++) {
        srv_conn *m = g->conns[i];
        m->out.len = m->grp_out_mark;
        m->db = m->grp_db;
        m->resp = m->grp_resp;
        if (m->in_done > m->replay_until)
            m->replay_until = m->in_done;
        m->in_done = 0;
        m->single = m->replay_until > 0;
        m->mon_skip += m->mon_fed; /* shown already: not again */
        m->mon_fed = 0;
        srv_resp_parser_reset(&m->parser);
        SRV_HOOKS_EACH(&m->hooks, m, rewind);
    }
    g->rewound = 1;
}

int srv_group_commit(srv_group *g)
{
    int rc = 0;

    if (g->rtxn) {
        int64_t v = (int64_t)st_txn_version(g->rtxn);
        if (v > g->hold_ver)
            g->hold_ver = v;
        st_txn_commit(&g->rtxn);
    }
    if (g->wtxn && g->failed) {
        st_txn_abort(&g->wtxn);
        wtxn_ended(g);
    } else if (g->wtxn) {
        int64_t v = (int64_t)st_txn_version(g->wtxn);
        rc = st_txn_commit(&g->wtxn);
        wtxn_ended(g);
        if (rc == 0) {
            SRV_STAT_ADD(g->stats, commits, 1);
            /* Only a committed id may hold replies: a failed one is never
             * made durable (it is reused by the next transaction). */
            if (v > g->hold_ver)
                g->hold_ver = v;
        } else {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "commit failed: %s",
                    st_strerror(rc));
            g->failed = g->writes > 0;
        }
    }
    g->cmds = g->writes = 0;
    if (g->failed) {
        members_rewind(g);
        g->failed = 0;
        return rc ? rc : ST_ELMDB;
    }
    members_committed(g);
    return 0;
}

void srv_group_commit_after(srv_group *g) { g->commit_after = 1; }

int srv_group_others_pending(const srv_group *g, const srv_conn *c)
{
    int what = 0;

    for (unsigned i = 0; i < g->nconns; i++) {
        const srv_conn *m = g->conns[i];
        if (m == c)
            continue;
        if (m->in_done > 0)
            what |= SRV_GROUP_OTHERS_UNCOMMITTED;
        if (m->out_sent < m->out.len)
            what |= SRV_GROUP_OTHERS_UNWRITTEN;
    }
    return what;
}

void srv_group_command_begins(srv_group *g, srv_conn *c)
{
    g->cmd_out_mark = c->out.len;
    g->cmd_wrote = 0;
    g->commit_after = 0;
}

void srv_group_reply_error(srv_conn *c, int rc)
{
    switch (rc) {
    case ST_EWRONGTYPE: srv_reply_error(c, SRV_ERR_WRONGTYPE); break;
    case ST_EFULL:
        srv_reply_error(c, "ERR disk full: the database reached maxdisk, "
                           "write refused (reads still work)");
        break;
    case ST_ETXNFULL:
        srv_reply_error(c, "ERR write too large for one transaction");
        break;
    case ST_ENOSPACE:
        /* Redis's answer when its AOF write fails (MISCONF + strerror);
         * the errno is the last failed growth of the data file's room,
         * ENOSPC when the storage layer did not keep one. */
        srv_reply_errorf(c, "MISCONF Errors writing to the data file: %s",
                         strerror(reply_env && st_env_room_errno(reply_env)
                                      ? st_env_room_errno(reply_env)
                                      : ENOSPC));
        break;
    default:
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "storage error: %s",
                st_strerror(rc));
        srv_reply_errorf(c, "ERR storage error: %s", st_strerror(rc));
        break;
    }
}

int srv_group_command_ends(srv_group *g, srv_conn *c, size_t pos)
{
    int earlier_writes = g->writes;

    c->in_done = pos;
    g->cmds++;
    if (g->cmd_wrote)
        g->writes++;
    if (g->poisoned) {
        g->poisoned = 0;
        if (earlier_writes > 0) {
            /* Other commands' writes went down with the transaction (in
             * a replay, other members': c's own commit one by one). */
            g->failed = 1;
            st_txn_abort(&g->wtxn);
            wtxn_ended(g);
            return 1;
        }
        if (g->wtxn) {
            st_txn_abort(&g->wtxn); /* nothing else was in it */
            wtxn_ended(g);
        }
        g->writes = 0;
    }
    if (c->single) {
        int rc = srv_group_commit(g);
        if (rc) {
            /* Only this command was in it: its reply becomes the error. */
            c->out.len = g->cmd_out_mark;
            srv_group_reply_error(c, rc);
            c->in_done = pos;
            SRV_HOOKS_EACH(&c->hooks, c, lost);
            members_committed(g);
        }
        /* Committed, its input was dropped (member_committed): the
         * replay ends with the last command that had run before. */
        if (c->replay_until == 0) {
            c->single = 0;
            c->mon_skip = 0; /* a replay that ran fewer */
        }
    } else if (g->cmds >= SRV_GROUP_MAX_CMDS || g->commit_after) {
        srv_group_commit(g);
    }
    g->commit_after = 0;
    return 0;
}

void srv_group_wake(srv_group *g, srv_conn *c, int resume)
{
    if (!c->in_group)
        srv_group_join(g, c); /* its mark is after the output */
    else if (c->in_done == 0)
        c->grp_out_mark = c->out.len; /* nothing uncommitted before it */
    if (resume)
        g->run_input(c);
}

void srv_group_settle(srv_group *g)
{
    int again;

    do {
        g->rewound = 0;
        /* Also members that ran nothing: read after the group failed, or
         * rewound at a barrier before their first command. */
        for (unsigned i = 0; i < g->nconns; i++) {
            srv_conn *m = g->conns[i];
            /* One closing at once (its peer went away) replays only. */
            if (m->single ||
                (m->in_done < m->in.len && !(m->flags & SRV_CONN_CLOSE_ASAP)))
                g->run_input(m);
        }
        again = srv_group_commit(g) != 0;
        /* A member that ran earlier in this pass may have been rewound by
         * a later one's failed commit (a replayed command's, or a
         * barrier's): it runs its commands again before the group's
         * turn ends, or they would wait for its next input. */
        if (g->rewound)
            again = 1;
    } while (again);
}

struct st_txn *srv_group_read_txn(srv_group *g, int *rc)
{
    if (g->wtxn)
        return g->wtxn;
    if (!g->rtxn && (*rc = st_txn_begin(g->env, 0, &g->rtxn)))
        return NULL;
    return g->rtxn;
}

struct st_txn *srv_group_write_txn(srv_group *g, int *rc)
{
    g->cmd_wrote = 1;
    if (g->wtxn)
        return g->wtxn;
    if (g->rtxn)
        st_txn_commit(&g->rtxn); /* release the older snapshot */
    if ((*rc = st_txn_begin(g->env, 1, &g->wtxn))) {
        wtxn_ended(g);
        return NULL;
    }
    return g->wtxn;
}

void srv_group_poison(srv_group *g)
{
    if (g->wtxn)
        g->poisoned = 1;
}
