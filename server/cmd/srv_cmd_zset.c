/*
 * srv_cmd_zset.c - sorted set commands. Families share one generic
 * function each: add (ZADD ZINCRBY), range (ZRANGE and its BYSCORE /
 * BYLEX / REV forms, ZRANGESTORE), remrange (ZREMRANGEBY*), pop (ZPOPMIN
 * ZPOPMAX ZMPOP, and the blocking BZPOPMIN BZPOPMAX BZMPOP, which block
 * through srv_block.h when every key is empty), algebra (ZUNION ZINTER
 * ZDIFF and their STORE forms).
 * Every ordered reply streams from a storage walk.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_scan.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_set.h"
#include "storage/st_zset.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ERR_MINMAX_FLOAT[] = "ERR min or max is not a float";
static const char ERR_MINMAX_LEX[] =
    "ERR min or max not valid string range item";

/* argv[i] as a zset: see srv_coll_open_or_reply. */
static int open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                         st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_ZSET, k, o);
}

/* A score argument: 1 ok; NaN is refused. */
static int parse_score(const srv_slice *a, double *d)
{
    return srv_util_str2d(a->ptr, a->len, d) && !isnan(*d);
}

/* ---- ZADD ZINCRBY ---- */

#define ZADD_NX 0x01u
#define ZADD_XX 0x02u
#define ZADD_GT 0x04u
#define ZADD_LT 0x08u
#define ZADD_CH 0x10u
#define ZADD_INCR 0x20u

static void add_generic(srv_conn *c, unsigned flags)
{
    struct st_txn *t;
    int j = 2, rc, found;
    long long added = 0, changed = 0;
    double newscore = 0;
    int incr_done = 0;
    st_keyref k;
    st_obj o;

    for (; j < c->argc; j++) {
        const srv_slice *a = &c->argv[j];
        if (srv_util_streq(a->ptr, a->len, "nx"))
            flags |= ZADD_NX;
        else if (srv_util_streq(a->ptr, a->len, "xx"))
            flags |= ZADD_XX;
        else if (srv_util_streq(a->ptr, a->len, "gt"))
            flags |= ZADD_GT;
        else if (srv_util_streq(a->ptr, a->len, "lt"))
            flags |= ZADD_LT;
        else if (srv_util_streq(a->ptr, a->len, "ch"))
            flags |= ZADD_CH;
        else if (srv_util_streq(a->ptr, a->len, "incr"))
            flags |= ZADD_INCR;
        else
            break;
    }
    int pairs = c->argc - j;
    if (pairs == 0 || pairs % 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    pairs /= 2;
    if ((flags & ZADD_NX) && (flags & ZADD_XX)) {
        srv_reply_error(c, "ERR XX and NX options at the same time are not "
                           "compatible");
        return;
    }
    if (((flags & ZADD_GT) && (flags & (ZADD_NX | ZADD_LT))) ||
        ((flags & ZADD_LT) && (flags & ZADD_NX))) {
        srv_reply_error(c, "ERR GT, LT, and/or NX options at the same time "
                           "are not compatible");
        return;
    }
    if ((flags & ZADD_INCR) && pairs > 1) {
        srv_reply_error(c, "ERR INCR option supports a single "
                           "increment-element pair");
        return;
    }
    for (int p = 0; p < pairs; p++) {
        double d;
        if (!parse_score(&c->argv[j + 2 * p], &d)) {
            srv_reply_error(c, SRV_ERR_NOT_FLOAT);
            return;
        }
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (found = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (!found) {
        if (flags & ZADD_XX) {
            if (flags & ZADD_INCR)
                srv_reply_null(c);
            else
                srv_reply_int(c, 0);
            return;
        }
        if ((rc = st_coll_create(t, &o))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    for (int p = 0; p < pairs; p++) {
        const srv_slice *m = &c->argv[j + 2 * p + 1];
        double score, cur;
        int created;
        parse_score(&c->argv[j + 2 * p], &score);
        rc = st_zset_score(t, &o, m->ptr, m->len, &cur);
        if (rc && rc != ST_ENOTFOUND) {
            srv_txn_error(c, rc);
            return;
        }
        if (rc == 0) {
            if (flags & ZADD_NX)
                continue;
            if (flags & ZADD_INCR) {
                score += cur;
                if (isnan(score)) {
                    srv_reply_error(c, "ERR resulting score is not a number "
                                       "(NaN)");
                    return;
                }
            }
            if (((flags & ZADD_GT) && !(score > cur)) ||
                ((flags & ZADD_LT) && !(score < cur)))
                continue;
            newscore = score;
            incr_done = 1;
            if (score == cur)
                continue;
            changed++;
        } else {
            if (flags & ZADD_XX)
                continue;
            newscore = score;
            incr_done = 1;
            added++;
        }
        if ((rc = st_zset_add(t, &o, m->ptr, m->len, score, &created))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    if ((added || changed) && (rc = st_coll_save(t, &o, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    if (added || changed)
        srv_notify_arg(c, SRV_NOTIFY_ZSET,
                       (flags & ZADD_INCR) ? "zincr" : "zadd", 1);
    if (flags & ZADD_INCR) {
        if (incr_done)
            srv_reply_double(c, newscore);
        else
            srv_reply_null(c);
    } else {
        srv_reply_int(c, added + ((flags & ZADD_CH) ? changed : 0));
    }
}

void srv_cmd_zadd(srv_conn *c) { add_generic(c, 0); }

void srv_cmd_zincrby(srv_conn *c)
{
    double d;

    /* ZINCRBY key incr member is ZADD key INCR incr member. */
    if (!parse_score(&c->argv[2], &d)) {
        srv_reply_error(c, SRV_ERR_NOT_FLOAT);
        return;
    }
    add_generic(c, ZADD_INCR);
}

/* ---- single members ---- */

void srv_cmd_zrem(srv_conn *c)
{
    srv_coll_remove_members(c, ST_TYPE_ZSET, st_zset_rem);
}

void srv_cmd_zcard(srv_conn *c) { srv_coll_reply_card(c, ST_TYPE_ZSET); }

/* Reply the score of argv[i] (nil when absent); storage code on error. */
static int reply_score(srv_conn *c, struct st_txn *t, const st_obj *o, int i)
{
    double s;
    int rc = st_zset_score(t, o, c->argv[i].ptr, c->argv[i].len, &s);

    if (rc == ST_ENOTFOUND)
        srv_reply_null(c);
    else if (rc)
        return rc;
    else
        srv_reply_double(c, s);
    return 0;
}

void srv_cmd_zscore(srv_conn *c)
{
    srv_coll_reply_members(c, ST_TYPE_ZSET, 0, reply_score);
}

void srv_cmd_zmscore(srv_conn *c)
{
    srv_coll_reply_members(c, ST_TYPE_ZSET, 1, reply_score);
}

static void rank_generic(srv_conn *c, int rev)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    uint64_t rank;
    double s;
    int rc;

    if (!t || (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_null(c);
        return;
    }
    rc = st_zset_rank(t, &o, c->argv[2].ptr, c->argv[2].len, rev, &rank, &s);
    if (rc == ST_ENOTFOUND)
        srv_reply_null(c);
    else if (rc)
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, (long long)rank);
}

void srv_cmd_zrank(srv_conn *c) { rank_generic(c, 0); }
void srv_cmd_zrevrank(srv_conn *c) { rank_generic(c, 1); }

/* ---- range parsing ---- */

/* "(1.5", "-inf", "3": 1 ok, 0 invalid. Redis parses these with a bare
 * strtod (so "", "(", " 1" and 1e400 are bounds), unlike scores. */
static int parse_score_bound(const srv_slice *a, double *d, int *ex)
{
    const char *p = a->ptr;
    size_t n = a->len;

    *ex = 0;
    if (n && p[0] == '(') {
        *ex = 1;
        p++;
        n--;
    }
    return srv_util_str2d_lax(p, n, d);
}

static int parse_lex_bound(const srv_slice *a, st_zlex *b)
{
    if (a->len == 0)
        return 0;
    b->p = (const uint8_t *)a->ptr + 1;
    b->len = a->len - 1;
    switch (a->ptr[0]) {
    case '-': b->kind = ST_ZLEX_MIN; return a->len == 1;
    case '+': b->kind = ST_ZLEX_MAX; return a->len == 1;
    case '[': b->kind = ST_ZLEX_INCL; return 1;
    case '(': b->kind = ST_ZLEX_EXCL; return 1;
    default: return 0;
    }
}

/* Fill r's bounds from argv[mi] / argv[ma] for r->by; -1 after a reply. */
static int parse_bounds_or_reply(srv_conn *c, int mi, int ma, st_zrange *r)
{
    if (r->by == ST_ZBY_SCORE) {
        if (!parse_score_bound(&c->argv[mi], &r->min, &r->minex) ||
            !parse_score_bound(&c->argv[ma], &r->max, &r->maxex)) {
            srv_reply_error(c, ERR_MINMAX_FLOAT);
            return -1;
        }
    } else if (r->by == ST_ZBY_LEX) {
        if (!parse_lex_bound(&c->argv[mi], &r->lmin) ||
            !parse_lex_bound(&c->argv[ma], &r->lmax)) {
            srv_reply_error(c, ERR_MINMAX_LEX);
            return -1;
        }
    }
    return 0;
}

/* Turn Redis rank bounds into start/count for a zset of n; 0 if empty. */
static int rank_window(long long start, long long end, uint64_t n, st_zrange *r)
{
    uint64_t first, last;

    if (!srv_args_clamp_range(start, end, n, &first, &last))
        return 0;
    r->start = first;
    r->count = last - first + 1;
    return 1;
}

/* ---- replies of members with scores ---- */

/* emit_ctx.withscores: scores as RESP3 doubles, or as bulk strings in
 * every protocol (ZSCAN, like Redis). */
#define SCORES_BULK 2

typedef struct emit_ctx {
    srv_conn *c;
    int withscores;
    int nested;             /* [member, score] pairs (RESP3 or ZMPOP) */
    const srv_slice *match; /* ZSCAN */
    long long n;            /* reply elements written */
    st_obj *dst;            /* ZRANGESTORE: copy here instead */
    struct st_txn *t;
    int rc;
} emit_ctx;

static int emit_member(void *ctx, const uint8_t *m, size_t ml, double s)
{
    emit_ctx *e = ctx;

    if (!srv_scan_match(e->match, m, ml))
        return 0;
    if (e->nested) {
        srv_reply_array(e->c, 2);
        e->n++;
    }
    srv_reply_bulk(e->c, m, ml);
    if (!e->nested)
        e->n++;
    if (e->withscores == SCORES_BULK) {
        char buf[SRV_DSTR_SIZE];
        int n = srv_util_d2str(buf, sizeof buf, s);
        srv_reply_bulk(e->c, buf, (size_t)n);
        e->n++;
    } else if (e->withscores) {
        srv_reply_double(e->c, s);
        if (!e->nested)
            e->n++;
    }
    return 0;
}

/* ---- ZRANGE family ---- */

enum range_cmd {
    RC_ZRANGE,
    RC_ZRANGESTORE,
    RC_ZREVRANGE,
    RC_BYSCORE,
    RC_REVBYSCORE,
    RC_BYLEX,
    RC_REVBYLEX
};

/*
 * Copy range `r` of `src` into the fresh zset `dst`, SRV_COLL_BATCH at a
 * time (the walk resumes after each batch by offset).
 */
static int store_range(struct st_txn *t, st_obj *src, st_zrange r, st_obj *dst)
{
    srv_coll_batch *b = calloc(1, sizeof *b);
    uint64_t got;
    int rc = 0;

    if (!b)
        return ENOMEM;
    for (;;) {
        srv_coll_batch_reset(b);
        st_zrange part = r;
        if (r.by == ST_ZBY_RANK)
            part.count = r.count < SRV_COLL_BATCH ? r.count : SRV_COLL_BATCH;
        else
            part.limit = r.limit < SRV_COLL_BATCH ? r.limit : SRV_COLL_BATCH;
        if ((rc = st_zset_walk(t, src, &part, 0, srv_coll_batch_scored, b,
                               &got)))
            break;
        for (size_t i = 0; i < b->n && !rc; i++) {
            int created;
            rc = st_zset_add(t, dst, SRV_COLL_BATCH_PTR(b, i),
                             SRV_COLL_BATCH_LEN(b, i), b->score[i], &created);
        }
        if (rc || b->n < SRV_COLL_BATCH)
            break;
        if (r.by == ST_ZBY_RANK) {
            r.start += b->n;
            r.count -= b->n;
            if (!r.count)
                break;
        } else {
            r.offset += b->n;
            if (r.limit != UINT64_MAX && !(r.limit -= b->n))
                break;
        }
    }
    srv_coll_batch_free(b);
    free(b);
    return rc;
}

/* Replace argv[di] with the fresh zset `res` (or delete it if empty),
 * with the keyspace event `event` (or "del" for an emptied one). */
static int install_result(srv_conn *c, struct st_txn *t, int di, st_obj *res,
                          const char *event)
{
    st_keyref dk;
    st_obj d;
    int rc, existed;

    srv_key_ref(c, di, &dk);
    rc = st_keyspace_delete(t, &dk, srv_cmd_now(c));
    if (rc && rc != ST_ENOTFOUND)
        return rc;
    existed = rc == 0;
    rc = st_coll_open(t, &dk, ST_TYPE_ZSET, srv_cmd_now(c), &d);
    if (rc != ST_ENOTFOUND)
        return rc ? rc : ST_ECORRUPT;
    d.c = res->c;
    if ((rc = st_coll_save(t, &d, srv_cmd_now(c))))
        return rc;
    if (res->c.card)
        srv_notify_arg(c, SRV_NOTIFY_ZSET, event, di);
    else if (existed)
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", di);
    return 0;
}

/* A sorted set that lost members: its event, and "del" if it is gone. */
static void notify_removed(srv_conn *c, const st_obj *o, const char *event)
{
    srv_notify(c, SRV_NOTIFY_ZSET, event, o->k->name, o->k->len);
    if (o->c.card == 0)
        srv_notify(c, SRV_NOTIFY_GENERIC, "del", o->k->name, o->k->len);
}

static void range_generic(srv_conn *c, int cmd)
{
    int store = cmd == RC_ZRANGESTORE, first = store ? 2 : 1;
    int by = -1, rev = -1, withscores = 0, has_limit = 0;
    long long offset = 0, limit = -1;
    st_zrange r;
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    int rc;

    switch (cmd) {
    case RC_ZREVRANGE:
        by = ST_ZBY_RANK;
        rev = 1;
        break;
    case RC_BYSCORE:
        by = ST_ZBY_SCORE;
        rev = 0;
        break;
    case RC_REVBYSCORE:
        by = ST_ZBY_SCORE;
        rev = 1;
        break;
    case RC_BYLEX:
        by = ST_ZBY_LEX;
        rev = 0;
        break;
    case RC_REVBYLEX:
        by = ST_ZBY_LEX;
        rev = 1;
        break;
    default: break;
    }
    for (int j = first + 3; j < c->argc; j++) {
        const srv_slice *a = &c->argv[j];
        int left = c->argc - j - 1;
        if (!store && srv_util_streq(a->ptr, a->len, "withscores")) {
            withscores = 1;
        } else if (srv_util_streq(a->ptr, a->len, "limit") && left >= 2) {
            if (srv_args_ll_or_reply(c, &c->argv[j + 1], &offset) ||
                srv_args_ll_or_reply(c, &c->argv[j + 2], &limit))
                return;
            has_limit = 1;
            j += 2;
        } else if (rev < 0 && srv_util_streq(a->ptr, a->len, "rev")) {
            rev = 1;
        } else if (by < 0 && srv_util_streq(a->ptr, a->len, "bylex")) {
            by = ST_ZBY_LEX;
        } else if (by < 0 && srv_util_streq(a->ptr, a->len, "byscore")) {
            by = ST_ZBY_SCORE;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (rev < 0)
        rev = 0;
    if (by < 0)
        by = ST_ZBY_RANK;
    if (has_limit && by == ST_ZBY_RANK) {
        srv_reply_error(c, "ERR syntax error, LIMIT is only supported in "
                           "combination with either BYSCORE or BYLEX");
        return;
    }
    if (withscores && by == ST_ZBY_LEX) {
        srv_reply_error(c, "ERR syntax error, WITHSCORES not supported in "
                           "combination with BYLEX");
        return;
    }
    memset(&r, 0, sizeof r);
    r.by = by;
    r.rev = rev;
    int mi = first + 1, ma = first + 2;
    if (rev && by != ST_ZBY_RANK) {
        mi = first + 2;
        ma = first + 1;
    }
    long long rs = 0, re = 0;
    if (by == ST_ZBY_RANK) {
        if (srv_args_ll_or_reply(c, &c->argv[mi], &rs) ||
            srv_args_ll_or_reply(c, &c->argv[ma], &re))
            return;
    } else if (parse_bounds_or_reply(c, mi, ma, &r)) {
        return;
    }
    r.offset = offset > 0 ? (uint64_t)offset : 0;
    r.limit = limit < 0 ? UINT64_MAX : (uint64_t)limit;
    if (!(t = store ? srv_txn_write_or_reply(c) : srv_txn_read_or_reply(c)))
        return;
    if ((rc = open_or_reply(c, t, first, &k, &o)) < 0)
        return;
    int empty = rc == 0 || offset < 0 ||
                (by == ST_ZBY_RANK && !rank_window(rs, re, o.c.card, &r));
    if (store) {
        st_obj res;
        memset(&res, 0, sizeof res);
        res.type = ST_TYPE_ZSET;
        if ((rc = st_coll_create(t, &res)) ||
            (!empty && (rc = store_range(t, &o, r, &res))) ||
            (rc = install_result(c, t, 1, &res, "zrangestore"))) {
            srv_txn_error(c, rc);
            return;
        }
        srv_reply_int(c, (long long)res.c.card);
        return;
    }
    if (empty) {
        srv_reply_array(c, 0);
        return;
    }
    emit_ctx e = { c, withscores, withscores && c->resp == 3, NULL, 0, NULL,
                   t, 0 };
    uint64_t visited;
    size_t mark = srv_reply_defer(c);
    if ((rc = st_zset_walk(t, &o, &r, 0, emit_member, &e, &visited))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_defer_array(c, mark, e.n);
}

void srv_cmd_zrange(srv_conn *c) { range_generic(c, RC_ZRANGE); }
void srv_cmd_zrangestore(srv_conn *c) { range_generic(c, RC_ZRANGESTORE); }
void srv_cmd_zrevrange(srv_conn *c) { range_generic(c, RC_ZREVRANGE); }
void srv_cmd_zrangebyscore(srv_conn *c) { range_generic(c, RC_BYSCORE); }
void srv_cmd_zrevrangebyscore(srv_conn *c) { range_generic(c, RC_REVBYSCORE); }
void srv_cmd_zrangebylex(srv_conn *c) { range_generic(c, RC_BYLEX); }
void srv_cmd_zrevrangebylex(srv_conn *c) { range_generic(c, RC_REVBYLEX); }

/* ZCOUNT / ZLEXCOUNT: elements in a score or lex range. */
static void count_generic(srv_conn *c, int by)
{
    struct st_txn *t;
    st_zrange r;
    st_keyref k;
    st_obj o;
    uint64_t n = 0;
    int rc;

    memset(&r, 0, sizeof r);
    r.by = by;
    r.limit = UINT64_MAX;
    if (parse_bounds_or_reply(c, 2, 3, &r) || !(t = srv_txn_read_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc && by == ST_ZBY_SCORE)
        rc = st_zset_count_score(t, &o, r.min, r.minex, r.max, r.maxex, &n);
    else if (rc)
        rc = st_zset_count_lex(t, &o, &r, &n);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_int(c, (long long)n);
}

void srv_cmd_zcount(srv_conn *c) { count_generic(c, ST_ZBY_SCORE); }
void srv_cmd_zlexcount(srv_conn *c) { count_generic(c, ST_ZBY_LEX); }

/* ZREMRANGEBYRANK / BYSCORE / BYLEX. */
static void remrange_generic(srv_conn *c, int by)
{
    struct st_txn *t;
    st_zrange r;
    st_keyref k;
    st_obj o;
    long long rs = 0, re = 0;
    uint64_t n = 0;
    int rc;

    memset(&r, 0, sizeof r);
    r.by = by;
    r.limit = UINT64_MAX;
    if (by == ST_ZBY_RANK) {
        if (srv_args_ll_or_reply(c, &c->argv[2], &rs) ||
            srv_args_ll_or_reply(c, &c->argv[3], &re))
            return;
    } else if (parse_bounds_or_reply(c, 2, 3, &r)) {
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || (by == ST_ZBY_RANK && !rank_window(rs, re, o.c.card, &r))) {
        srv_reply_int(c, 0);
        return;
    }
    if ((rc = st_zset_walk(t, &o, &r, 1, NULL, NULL, &n)) ||
        (n && (rc = st_coll_save(t, &o, srv_cmd_now(c))))) {
        srv_txn_error(c, rc);
        return;
    }
    if (n)
        notify_removed(c, &o,
                       by == ST_ZBY_RANK    ? "zremrangebyrank"
                       : by == ST_ZBY_SCORE ? "zremrangebyscore"
                                            : "zremrangebylex");
    srv_reply_int(c, (long long)n);
}

void srv_cmd_zremrangebyrank(srv_conn *c) { remrange_generic(c, ST_ZBY_RANK); }
void srv_cmd_zremrangebyscore(srv_conn *c)
{
    remrange_generic(c, ST_ZBY_SCORE);
}
void srv_cmd_zremrangebylex(srv_conn *c) { remrange_generic(c, ST_ZBY_LEX); }

/* ---- pops ---- */

/* Pop `count` from `o` (max: from the top) into the reply, as pairs. */
static int pop_into_reply(srv_conn *c, struct st_txn *t, st_obj *o, int max,
                          uint64_t count, int nested)
{
    st_zrange r;
    emit_ctx e = { c, 1, nested, NULL, 0, NULL, t, 0 };
    uint64_t n;
    int rc;

    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_RANK;
    r.rev = max;
    r.start = 0;
    r.count = count;
    if ((rc = st_zset_walk(t, o, &r, 1, emit_member, &e, &n)) ||
        (rc = st_coll_save(t, o, srv_cmd_now(c))))
        return rc;
    if (count)
        notify_removed(c, o, max ? "zpopmax" : "zpopmin");
    return 0;
}

static void pop_generic(srv_conn *c, int max)
{
    struct st_txn *t;
    long long count = 1;
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (c->argc > 3) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (c->argc == 3 && srv_args_count_or_reply(c, &c->argv[2], &count))
        return;
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || count == 0) {
        srv_reply_array(c, 0);
        return;
    }
    uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
    int nested = c->argc == 3 && c->resp == 3;
    mark = c->out.len;
    srv_reply_array(c, (long long)(nested ? n : n * 2));
    if ((rc = pop_into_reply(c, t, &o, max, n, nested))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

void srv_cmd_zpopmin(srv_conn *c) { pop_generic(c, 0); }
void srv_cmd_zpopmax(srv_conn *c) { pop_generic(c, 1); }

/* ZMPOP's elements: [member, score] pairs in both protocols. */
static int mpop_into_reply(srv_conn *c, struct st_txn *t, st_obj *o, int max,
                           uint64_t count)
{
    return pop_into_reply(c, t, o, max, count, 1);
}

void srv_cmd_zmpop(srv_conn *c)
{
    int numkeys;

    if (srv_coll_mpop(c, 1, ST_TYPE_ZSET, "min", "max", mpop_into_reply,
                      &numkeys, NULL))
        srv_reply_null_array(c);
}

/* BZPOPMIN / BZPOPMAX key [key ...] timeout: [key, member, score] of the
 * first non-empty key; block when every key is empty. */
static void bpop_generic(srv_conn *c, int max)
{
    struct st_txn *t;
    int64_t timeout;

    if (srv_block_timeout_or_reply(c, &c->argv[c->argc - 1], &timeout) ||
        !(t = srv_txn_write_or_reply(c)))
        return;
    for (int j = 1; j < c->argc - 1; j++) {
        st_keyref k;
        st_obj o;
        size_t mark = c->out.len;
        int rc = open_or_reply(c, t, j, &k, &o);
        if (rc < 0)
            return;
        if (rc == 0)
            continue;
        srv_reply_array(c, 3);
        srv_reply_bulk(c, c->argv[j].ptr, c->argv[j].len);
        if ((rc = pop_into_reply(c, t, &o, max, 1, 0))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
        srv_block_served(c, j, o.c.card);
        return;
    }
    srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_ZSET,
                                             .first_key = 1,
                                             .nkeys = c->argc - 2,
                                             .timeout_ms = timeout,
                                             .null_array = 1 });
}

void srv_cmd_bzpopmin(srv_conn *c) { bpop_generic(c, 0); }
void srv_cmd_bzpopmax(srv_conn *c) { bpop_generic(c, 1); }

void srv_cmd_bzmpop(srv_conn *c)
{
    int64_t timeout;
    int numkeys;

    if (srv_coll_mpop(c, 2, ST_TYPE_ZSET, "min", "max", mpop_into_reply,
                      &numkeys, &timeout))
        srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_ZSET,
                                                 .first_key = 3,
                                                 .nkeys = numkeys,
                                                 .timeout_ms = timeout,
                                                 .null_array = 1 });
}

/* ---- ZRANDMEMBER ZSCAN ---- */

void srv_cmd_zrandmember(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    long long count = 1;
    int withscores = 0, rc;
    size_t mark;

    if (c->argc > 4 ||
        (c->argc == 4 &&
         !srv_util_streq(c->argv[3].ptr, c->argv[3].len, "withscores"))) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    withscores = c->argc == 4;
    if (c->argc >= 3 && srv_args_rand_count_or_reply(c, withscores, &count))
        return;
    if (!(t = srv_txn_read_or_reply(c)) || open_or_reply(c, t, 1, &k, &o) < 0)
        return;
    emit_ctx e = { c, withscores, withscores && c->resp == 3, NULL, 0, NULL,
                   t, 0 };
    if (c->argc == 2) {
        if (!o.exists) {
            srv_reply_null(c);
            return;
        }
        if ((rc = st_zset_sample(t, &o, srv_coll_rand64(), 1, emit_member, &e)))
            srv_txn_error(c, rc);
        return;
    }
    if (!o.exists || count == 0) {
        srv_reply_array(c, 0);
        return;
    }
    mark = srv_reply_defer(c);
    if (count > 0) {
        uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
        rc = st_zset_sample(t, &o, srv_coll_rand64(), n, emit_member, &e);
    } else {
        unsigned long long n = 0ull - (unsigned long long)count;
        if (srv_reply_room_or_drop(c, n, SRV_REPLY_BULK_MIN * (withscores + 1)))
            return;
        rc = 0;
        for (unsigned long long i = 0; i < n && !rc && !srv_reply_dropped(c);
             i++)
            rc = st_zset_sample(t, &o, srv_coll_rand64(), 1, emit_member, &e);
    }
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_defer_array(c, mark, e.n);
}

static int zscan_step(srv_conn *c, struct st_txn *t, const st_obj *o,
                      const srv_scan_args *a, uint64_t *next, long long *n)
{
    emit_ctx e = { c, SCORES_BULK, 0, a->match, 0, NULL, NULL, 0 };
    int rc = st_zset_scan(t, o, a->cursor, (size_t)a->count, emit_member, &e,
                          next);

    *n = e.n;
    return rc;
}

void srv_cmd_zscan(srv_conn *c)
{
    srv_scan_collection(c, ST_TYPE_ZSET, zscan_step);
}

/* ---- ZUNION ZINTER ZDIFF and their STORE forms ---- */

enum { OP_UNION, OP_INTER, OP_DIFF };
enum { AGG_SUM, AGG_MIN, AGG_MAX };

/* One input: a zset or a set (whose members score 1). */
typedef struct input {
    st_keyref k;
    st_obj o;
    double weight;
} input;

typedef struct algebra {
    struct st_txn *t;
    int op, agg;
    int n;
    input *in;
    st_obj *res;
} algebra;

static double weigh(double s, double w)
{
    double v = s * w;

    return isnan(v) ? 0 : v;
}

static double aggregate(int agg, double a, double b)
{
    double v;

    switch (agg) {
    case AGG_MIN: return a < b ? a : b;
    case AGG_MAX: return a > b ? a : b;
    default: v = a + b; return isnan(v) ? 0 : v;
    }
}

/* Score of member m in input i: 1 found, 0 absent, negative error. */
static int input_score(algebra *a, int i, const uint8_t *m, size_t ml,
                       double *s)
{
    input *in = &a->in[i];
    int rc;

    if (!in->o.exists)
        return 0;
    if (in->o.type == ST_TYPE_SET) {
        rc = st_set_has(a->t, &in->o, m, ml);
        *s = 1;
        return rc;
    }
    rc = st_zset_score(a->t, &in->o, m, ml, s);
    return rc == 0 ? 1 : rc == ST_ENOTFOUND ? 0 : rc;
}

static int set_to_batch(void *ctx, const uint8_t *m, size_t ml,
                        const uint8_t *v, size_t vl)
{
    return srv_coll_batch_add(ctx, m, ml, 1);
}

/* One batch of input i from *cursor. */
static int input_batch(algebra *a, int i, uint64_t *cursor, srv_coll_batch *b)
{
    input *in = &a->in[i];

    srv_coll_batch_reset(b);
    if (in->o.type == ST_TYPE_SET)
        return st_set_scan(a->t, &in->o, *cursor, SRV_COLL_BATCH, set_to_batch,
                           b, cursor);
    return st_zset_scan(a->t, &in->o, *cursor, SRV_COLL_BATCH,
                        srv_coll_batch_scored, b, cursor);
}

/* Fold member m (weighted score s, from input `from`) into the result. */
static int fold(algebra *a, int from, const uint8_t *m, size_t ml, double s)
{
    double acc = weigh(s, a->in[from].weight), o;
    int created, rc;

    switch (a->op) {
    case OP_UNION:
        rc = st_zset_score(a->t, a->res, m, ml, &o);
        if (rc == 0)
            acc = aggregate(a->agg, o, acc);
        else if (rc != ST_ENOTFOUND)
            return rc;
        break;
    case OP_INTER:
        for (int j = 0; j < a->n; j++) {
            double sj;
            if (j == from)
                continue;
            rc = input_score(a, j, m, ml, &sj);
            if (rc <= 0)
                return rc;
            acc = aggregate(a->agg, acc, weigh(sj, a->in[j].weight));
        }
        break;
    default:
        acc = s;
        for (int j = 1; j < a->n; j++) {
            double sj;
            rc = input_score(a, j, m, ml, &sj);
            if (rc < 0)
                return rc;
            if (rc)
                return 0;
        }
        break;
    }
    return st_zset_add(a->t, a->res, m, ml, acc, &created);
}

static int algebra_run(algebra *a)
{
    srv_coll_batch *b = calloc(1, sizeof *b);
    int first = 0, last = a->op == OP_UNION ? a->n - 1 : 0, rc = 0;

    if (!b)
        return ENOMEM;
    if (a->op == OP_INTER) {
        for (int j = 0; j < a->n; j++) {
            if (!a->in[j].o.exists)
                goto out;
            if (a->in[j].o.c.card < a->in[first].o.c.card)
                first = j;
        }
        last = first;
    }
    for (int i = first; i <= last && !rc; i++) {
        uint64_t cursor = 0;
        if (!a->in[i].o.exists)
            continue;
        do {
            if ((rc = input_batch(a, i, &cursor, b)))
                break;
            for (size_t j = 0; j < b->n && !rc; j++)
                rc = fold(a, i, SRV_COLL_BATCH_PTR(b, j),
                          SRV_COLL_BATCH_LEN(b, j), b->score[j]);
        } while (!rc && cursor);
    }
out:
    srv_coll_batch_free(b);
    free(b);
    return rc;
}

/* Open input argv[i] (a zset or a set): -1 after an error reply. */
static int open_input_or_reply(srv_conn *c, struct st_txn *t, int i, input *in)
{
    int rc;

    srv_key_ref(c, i, &in->k);
    in->weight = 1;
    rc = st_coll_open(t, &in->k, ST_TYPE_ZSET, srv_cmd_now(c), &in->o);
    if (rc == ST_EWRONGTYPE)
        rc = st_coll_open(t, &in->k, ST_TYPE_SET, srv_cmd_now(c), &in->o);
    if (rc == 0 || rc == ST_ENOTFOUND)
        return 0;
    srv_txn_error(c, rc);
    return -1;
}

static void algebra_generic(srv_conn *c, int op, int store)
{
    int first = store ? 2 : 1, withscores = 0, rc;
    long long numkeys;
    algebra a;
    st_obj res;
    input *in = NULL;

    memset(&a, 0, sizeof a);
    a.op = op;
    if (srv_args_ll_or_reply(c, &c->argv[first], &numkeys))
        return;
    if (numkeys < 1) {
        srv_reply_errorf(c,
                         "ERR at least 1 input key is needed for '%s' "
                         "command",
                         c->cmd->name);
        return;
    }
    if (numkeys > c->argc - first - 1) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    a.n = (int)numkeys;
    if (!(in = calloc((size_t)a.n, sizeof *in))) {
        srv_txn_error(c, ENOMEM);
        return;
    }
    for (int i = 0; i < a.n; i++)
        in[i].weight = 1;
    for (int j = first + 1 + a.n; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        int left = c->argc - j - 1;
        if (op != OP_DIFF && srv_util_streq(o->ptr, o->len, "weights") &&
            left >= a.n) {
            for (int i = 0; i < a.n; i++) {
                const srv_slice *w = &c->argv[j + 1 + i];
                if (!srv_util_str2d(w->ptr, w->len, &in[i].weight) ||
                    isnan(in[i].weight)) {
                    srv_reply_error(c, "ERR weight value is not a float");
                    goto out;
                }
            }
            j += a.n;
        } else if (op != OP_DIFF &&
                   srv_util_streq(o->ptr, o->len, "aggregate") && left >= 1) {
            const srv_slice *g = &c->argv[++j];
            if (srv_util_streq(g->ptr, g->len, "sum"))
                a.agg = AGG_SUM;
            else if (srv_util_streq(g->ptr, g->len, "min"))
                a.agg = AGG_MIN;
            else if (srv_util_streq(g->ptr, g->len, "max"))
                a.agg = AGG_MAX;
            else {
                srv_reply_error(c, SRV_ERR_SYNTAX);
                goto out;
            }
        } else if (!store && srv_util_streq(o->ptr, o->len, "withscores")) {
            withscores = 1;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            goto out;
        }
    }
    if (!(a.t = srv_txn_write_or_reply(c)))
        goto out;
    for (int i = 0; i < a.n; i++) {
        double w = in[i].weight;
        if (open_input_or_reply(c, a.t, first + 1 + i, &in[i]))
            goto out;
        in[i].weight = w;
    }
    a.in = in;
    memset(&res, 0, sizeof res);
    res.type = ST_TYPE_ZSET;
    a.res = &res;
    rc = st_coll_create(a.t, &res);
    res.exists = 1; /* elements may be looked up while built */
    if (rc || (rc = algebra_run(&a))) {
        srv_txn_error(c, rc);
        goto out;
    }
    if (store) {
        static const char *const events[] = { [OP_UNION] = "zunionstore",
                                              [OP_INTER] = "zinterstore",
                                              [OP_DIFF] = "zdiffstore" };
        if ((rc = install_result(c, a.t, 1, &res, events[op])))
            srv_txn_error(c, rc);
        else
            srv_reply_int(c, (long long)res.c.card);
        goto out;
    }
    /* Reply the result in order, deleting it as it goes. */
    st_zrange r;
    emit_ctx e = { c,   withscores, withscores && c->resp == 3, NULL, 0, NULL,
                   a.t, 0 };
    uint64_t n;
    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_RANK;
    r.count = res.c.card;
    size_t mark = srv_reply_defer(c);
    if ((rc = st_zset_walk(a.t, &res, &r, 1, emit_member, &e, &n))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        goto out;
    }
    srv_reply_defer_array(c, mark, e.n);
out:
    free(in);
}

void srv_cmd_zunion(srv_conn *c) { algebra_generic(c, OP_UNION, 0); }
void srv_cmd_zinter(srv_conn *c) { algebra_generic(c, OP_INTER, 0); }
void srv_cmd_zdiff(srv_conn *c) { algebra_generic(c, OP_DIFF, 0); }
void srv_cmd_zunionstore(srv_conn *c) { algebra_generic(c, OP_UNION, 1); }
void srv_cmd_zinterstore(srv_conn *c) { algebra_generic(c, OP_INTER, 1); }
void srv_cmd_zdiffstore(srv_conn *c) { algebra_generic(c, OP_DIFF, 1); }

/* ---- ZINTERCARD (issue 14) ---- */

/*
 * ZINTERCARD numkeys key ... [LIMIT limit]: the size of the intersection
 * of sorted sets (or sets), counting members of the smallest input that
 * every other input holds, up to `limit` (0: no limit).
 */
void srv_cmd_zintercard(srv_conn *c)
{
    long long numkeys, limit = 0, n = 0;
    algebra a;
    input *in;
    int first = 0, rc = 0;

    if (srv_args_ll_or_reply(c, &c->argv[1], &numkeys))
        return;
    if (numkeys < 1) {
        srv_reply_errorf(c,
                         "ERR at least 1 input key is needed for '%s' "
                         "command",
                         c->cmd->name);
        return;
    }
    if (numkeys > c->argc - 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    for (int j = 2 + (int)numkeys; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        if (srv_util_streq(o->ptr, o->len, "limit") && j + 1 < c->argc) {
            const srv_slice *l = &c->argv[++j];
            if (!srv_util_str2ll(l->ptr, l->len, &limit) || limit < 0) {
                srv_reply_error(c, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    memset(&a, 0, sizeof a);
    a.op = OP_INTER;
    a.n = (int)numkeys;
    if (!(a.t = srv_txn_read_or_reply(c)))
        return;
    if (!(in = calloc((size_t)a.n, sizeof *in))) {
        srv_txn_error(c, ENOMEM);
        return;
    }
    a.in = in;
    for (int i = 0; i < a.n; i++)
        if (open_input_or_reply(c, a.t, 2 + i, &in[i]))
            goto out;
    for (int i = 0; i < a.n; i++) {
        if (!in[i].o.exists)
            goto reply; /* an empty input: an empty intersection */
        if (in[i].o.c.card < in[first].o.c.card)
            first = i;
    }
    srv_coll_batch *b = calloc(1, sizeof *b);
    uint64_t cursor = 0;
    if (!b) {
        srv_txn_error(c, ENOMEM);
        goto out;
    }
    do {
        if ((rc = input_batch(&a, first, &cursor, b)))
            break;
        for (size_t m = 0; m < b->n && !rc && (!limit || n < limit); m++) {
            int all = 1;
            for (int j = 0; j < a.n && all; j++) {
                double s;
                if (j == first)
                    continue;
                rc = input_score(&a, j, SRV_COLL_BATCH_PTR(b, m),
                                 SRV_COLL_BATCH_LEN(b, m), &s);
                all = rc > 0;
                rc = rc < 0 ? rc : 0;
            }
            n += all && !rc;
        }
    } while (!rc && cursor && (!limit || n < limit));
    srv_coll_batch_free(b);
    free(b);
    if (rc) {
        srv_txn_error(c, rc);
        goto out;
    }
reply:
    srv_reply_int(c, n);
out:
    free(in);
}
