/*
 * srv_cmd_set.c - set commands. SINTER, SUNION and SDIFF (and their
 * STORE forms) share one generic function; replies stream from storage
 * cursors, and STORE builds the result under a fresh collection id that
 * replaces the destination only at the end (a source may be the
 * destination).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_scan.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_set.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* argv[i] as a set: see srv_coll_open_or_reply. */
static int open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                         st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_SET, k, o);
}

/* Fill a deferred head as a RESP3 set or RESP2 array of n. */
static void defer_set(srv_conn *c, size_t mark, long long n)
{
    char head[SRV_REPLY_DEFER_MAX];
    int hn = snprintf(head, sizeof head, "%c%lld\r\n", c->resp == 3 ? '~' : '*',
                      n);

    srv_reply_defer_fill(c, mark, head, (size_t)hn);
}

void srv_cmd_sadd(srv_conn *c)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    st_obj o;
    long long added = 0;
    int rc;

    if (!t || (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 && (rc = st_coll_create(t, &o))) {
        srv_txn_error(c, rc);
        return;
    }
    for (int j = 2; j < c->argc; j++) {
        int a;
        if ((rc = st_set_add(t, &o, c->argv[j].ptr, c->argv[j].len, &a))) {
            srv_txn_error(c, rc);
            return;
        }
        added += a;
    }
    if (added && srv_coll_save_or_reply(c, t, &o))
        return;
    if (added)
        srv_notify_arg(c, SRV_NOTIFY_SET, "sadd", 1);
    srv_reply_int(c, added);
}

/* A set that lost members: its event, and "del" if it is gone. */
static void notify_removed(srv_conn *c, const st_obj *o, const char *event)
{
    srv_notify(c, SRV_NOTIFY_SET, event, o->k->name, o->k->len);
    if (o->c.card == 0)
        srv_notify(c, SRV_NOTIFY_GENERIC, "del", o->k->name, o->k->len);
}

void srv_cmd_srem(srv_conn *c)
{
    srv_coll_remove_members(c, ST_TYPE_SET, st_set_rem);
}

void srv_cmd_scard(srv_conn *c) { srv_coll_reply_card(c, ST_TYPE_SET); }

void srv_cmd_sismember(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    int rc;

    if (!t || open_or_reply(c, t, 1, &k, &o) < 0)
        return;
    rc = st_set_has(t, &o, c->argv[2].ptr, c->argv[2].len);
    if (rc < 0)
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, rc);
}

void srv_cmd_smismember(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    size_t mark;

    if (!t || open_or_reply(c, t, 1, &k, &o) < 0)
        return;
    mark = c->out.len;
    srv_reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        int rc = st_set_has(t, &o, c->argv[j].ptr, c->argv[j].len);
        if (rc < 0) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
        srv_reply_int(c, rc);
    }
}

void srv_cmd_smembers(srv_conn *c)
{
    srv_coll_reply_all(c, ST_TYPE_SET, SRV_COLL_NAMES, st_set_scan);
}

/* SPOP and SRANDMEMBER without a count: one random member. */
static void one_random(srv_conn *c, int pop)
{
    struct st_txn *t = pop ? srv_txn_write_or_reply(c)
                           : srv_txn_read_or_reply(c);
    srv_coll_batch b = { 0 };
    st_keyref k;
    st_obj o;
    int rc;

    if (!t || (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_null(c);
        return;
    }
    srv_coll_batch_reset(&b);
    rc = st_set_sample(t, &o, srv_coll_rand64(), 1, srv_coll_batch_elem, &b);
    if (!rc && b.n != 1)
        rc = ENOMEM;
    if (!rc && pop &&
        !(rc = st_set_rem(t, &o, SRV_COLL_BATCH_PTR(&b, 0),
                          SRV_COLL_BATCH_LEN(&b, 0))))
        rc = st_coll_save(t, &o, srv_cmd_now(c));
    if (rc)
        srv_txn_error(c, rc);
    else
        srv_reply_bulk(c, SRV_COLL_BATCH_PTR(&b, 0), SRV_COLL_BATCH_LEN(&b, 0));
    if (!rc && pop)
        notify_removed(c, &o, "spop");
    srv_coll_batch_free(&b);
}

void srv_cmd_spop(srv_conn *c)
{
    struct st_txn *t;
    srv_coll_batch b = { 0 };
    st_keyref k;
    st_obj o;
    long long count;
    size_t mark;
    int rc = 0;

    if (c->argc == 2) {
        one_random(c, 1);
        return;
    }
    if (c->argc > 3) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (srv_args_count_or_reply(c, &c->argv[2], &count))
        return;
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || count == 0) {
        srv_reply_set(c, 0);
        return;
    }
    mark = c->out.len;
    if ((uint64_t)count >= o.c.card) {
        /* Everything: reply the members, then drop the key in O(1). */
        srv_coll_emit e = { c, SRV_COLL_NAMES, NULL, 0 };
        uint64_t next;
        srv_reply_set(c, (long long)o.c.card);
        if ((rc = st_set_scan(t, &o, 0, SIZE_MAX, srv_coll_emit_elem, &e,
                              &next)) ||
            (rc = st_keyspace_delete(t, &k, srv_cmd_now(c)))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
        o.c.card = 0;
        notify_removed(c, &o, "spop");
        return;
    }
    srv_reply_set(c, count);
    uint64_t left = (uint64_t)count;
    rc = 0;
    while (left && !rc) {
        srv_coll_batch_reset(&b);
        size_t want = left < SRV_COLL_BATCH ? (size_t)left : SRV_COLL_BATCH;
        rc = st_set_sample(t, &o, srv_coll_rand64(), want, srv_coll_batch_elem,
                           &b);
        for (size_t i = 0; i < b.n && !rc; i++) {
            const uint8_t *m = SRV_COLL_BATCH_PTR(&b, i);
            size_t ml = SRV_COLL_BATCH_LEN(&b, i);
            srv_reply_bulk(c, m, ml);
            rc = st_set_rem(t, &o, m, ml);
        }
        if (!rc && b.n == 0)
            rc = ST_ECORRUPT;
        left -= b.n < left ? b.n : left;
    }
    if (!rc)
        rc = st_coll_save(t, &o, srv_cmd_now(c));
    srv_coll_batch_free(&b);
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    notify_removed(c, &o, "spop");
}

void srv_cmd_srandmember(srv_conn *c)
{
    struct st_txn *t;
    srv_coll_emit e = { c, SRV_COLL_NAMES, NULL, 0 };
    st_keyref k;
    st_obj o;
    long long count;
    size_t mark;
    int rc;

    if (c->argc == 2) {
        one_random(c, 0);
        return;
    }
    if (c->argc > 3) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (srv_args_rand_count_or_reply(c, 0, &count))
        return;
    if (!(t = srv_txn_read_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || count == 0) {
        srv_reply_array(c, 0);
        return;
    }
    mark = c->out.len;
    if (count > 0) {
        uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
        srv_reply_array(c, (long long)n);
        rc = st_set_sample(t, &o, srv_coll_rand64(), n, srv_coll_emit_elem, &e);
    } else {
        unsigned long long n = 0ull - (unsigned long long)count;
        if (srv_reply_room_or_drop(c, n, SRV_REPLY_BULK_MIN))
            return;
        srv_reply_array(c, (long long)n);
        rc = 0;
        for (unsigned long long i = 0; i < n && !rc && !srv_reply_dropped(c);
             i++)
            rc = st_set_sample(t, &o, srv_coll_rand64(), 1, srv_coll_emit_elem,
                               &e);
    }
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

void srv_cmd_smove(srv_conn *c)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref sk, dk;
    st_obj so, dobj;
    const srv_slice *m = &c->argv[3];
    int rc, drc, a;

    if (!t)
        return;
    srv_key_ref(c, 1, &sk);
    rc = st_coll_open(t, &sk, ST_TYPE_SET, srv_cmd_now(c), &so);
    if (rc == ST_ENOTFOUND) {
        srv_reply_int(c, 0);
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    if ((drc = open_or_reply(c, t, 2, &dk, &dobj)) < 0)
        return;
    if (sk.len == dk.len && memcmp(sk.name, dk.name, sk.len) == 0) {
        rc = st_set_has(t, &so, m->ptr, m->len);
        if (rc < 0)
            srv_txn_error(c, rc);
        else
            srv_reply_int(c, rc);
        return;
    }
    rc = st_set_rem(t, &so, m->ptr, m->len);
    if (rc == ST_ENOTFOUND) {
        srv_reply_int(c, 0);
        return;
    }
    if (rc || (rc = st_coll_save(t, &so, srv_cmd_now(c))) ||
        (drc == 0 && (rc = st_coll_create(t, &dobj))) ||
        (rc = st_set_add(t, &dobj, m->ptr, m->len, &a)) ||
        (rc = st_coll_save(t, &dobj, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    notify_removed(c, &so, "srem");
    if (a)
        srv_notify_arg(c, SRV_NOTIFY_SET, "sadd", 2);
    srv_reply_int(c, 1);
}

/* ---- SINTER SUNION SDIFF, their STORE forms and SINTERCARD ---- */

enum { OP_INTER, OP_UNION, OP_DIFF };

#define MAX_STACK_SETS 16

typedef struct algebra {
    srv_conn *c;
    struct st_txn *t;
    int op;
    int nsets;
    st_obj *sets;   /* absent keys have exists == 0 */
    int cur;        /* index of the set being walked */
    st_obj *dst;    /* STORE: result collection, else NULL */
    uint64_t limit; /* SINTERCARD: stop at this many (0: none) */
    long long n;
    int rc;
} algebra;

/* Whether member m of sets[cur] belongs in the result (and is new). */
static int algebra_keep(algebra *a, const uint8_t *m, size_t ml)
{
    for (int j = 0; j < a->nsets; j++) {
        int has;
        if (j == a->cur)
            continue;
        if (a->op == OP_UNION && j > a->cur)
            break;
        has = st_set_has(a->t, &a->sets[j], m, ml);
        if (has < 0) {
            a->rc = has;
            return 0;
        }
        if (a->op == OP_INTER && !has)
            return 0;
        if (a->op != OP_INTER && has)
            return 0; /* union: seen in an earlier set; diff: removed */
    }
    return 1;
}

static int algebra_emit(void *ctx, const uint8_t *m, size_t ml,
                        const uint8_t *v, size_t vl)
{
    algebra *a = ctx;

    if (!algebra_keep(a, m, ml))
        return a->rc != 0;
    a->n++;
    if (!a->limit)
        srv_reply_bulk(a->c, m, ml);
    return a->limit && (uint64_t)a->n >= a->limit;
}

/* Walk sets[i] in batches, adding kept members to a->dst. */
static int algebra_store_walk(algebra *a, int i)
{
    srv_coll_batch b = { 0 };
    uint64_t cursor = 0, next;
    int rc;

    do {
        srv_coll_batch_reset(&b);
        rc = st_set_scan(a->t, &a->sets[i], cursor, SRV_COLL_BATCH,
                         srv_coll_batch_elem, &b, &next);
        for (size_t j = 0; j < b.n && !rc; j++) {
            const uint8_t *m = SRV_COLL_BATCH_PTR(&b, j);
            size_t ml = SRV_COLL_BATCH_LEN(&b, j);
            int added;
            if (!algebra_keep(a, m, ml)) {
                rc = a->rc;
                continue;
            }
            rc = st_set_add(a->t, a->dst, m, ml, &added);
        }
        cursor = next;
    } while (!rc && cursor);
    srv_coll_batch_free(&b);
    return rc;
}

/*
 * Run the operation over the open sets: stream members to the reply, or
 * with a->dst add them there. Intersections walk the smallest set.
 */
static int algebra_run(algebra *a)
{
    uint64_t next;
    int first = 0, last = a->op == OP_UNION ? a->nsets - 1 : 0;

    if (a->op == OP_INTER) {
        for (int j = 0; j < a->nsets; j++) {
            if (!a->sets[j].exists)
                return 0;
            if (a->sets[j].c.card < a->sets[first].c.card)
                first = j;
        }
        last = first;
    }
    for (int i = first; i <= last && !a->rc; i++) {
        int rc;
        if (!a->sets[i].exists)
            continue;
        a->cur = i;
        if (a->dst)
            rc = algebra_store_walk(a, i);
        else
            rc = st_set_scan(a->t, &a->sets[i], 0, SIZE_MAX, algebra_emit, a,
                             &next);
        if (rc)
            return rc;
        if (a->limit && (uint64_t)a->n >= a->limit)
            break;
    }
    return a->rc;
}

/* Open argv[first..first+n) as sets; -1 after an error reply. */
static int open_sets_or_reply(srv_conn *c, struct st_txn *t, int first, int n,
                              st_keyref *keys, st_obj *sets)
{
    for (int j = 0; j < n; j++)
        if (open_or_reply(c, t, first + j, &keys[j], &sets[j]) < 0)
            return -1;
    return 0;
}

static void algebra_generic(srv_conn *c, int op, int store)
{
    int first = store ? 2 : 1, n = c->argc - first;
    st_keyref kstack[MAX_STACK_SETS], *keys = kstack;
    st_obj ostack[MAX_STACK_SETS], *sets = ostack;
    struct st_txn *t = store ? srv_txn_write_or_reply(c)
                             : srv_txn_read_or_reply(c);
    algebra a = { c, t, op, n, NULL, 0, NULL, 0, 0, 0 };
    int rc;

    if (!t)
        return;
    if (n > MAX_STACK_SETS) {
        keys = malloc(sizeof *keys * (size_t)n);
        sets = malloc(sizeof *sets * (size_t)n);
        if (!keys || !sets) {
            srv_txn_error(c, ENOMEM);
            goto out;
        }
    }
    a.sets = sets;
    if (open_sets_or_reply(c, t, first, n, keys, sets))
        goto out;
    if (!store) {
        size_t mark = srv_reply_defer(c);
        if ((rc = algebra_run(&a))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
        } else {
            defer_set(c, mark, a.n);
        }
        goto out;
    }
    /* STORE: build under a fresh id, then make it the destination's. */
    st_keyref dk;
    st_obj res, d;
    srv_key_ref(c, 1, &dk);
    memset(&res, 0, sizeof res);
    res.type = ST_TYPE_SET;
    if ((rc = st_coll_create(t, &res))) {
        srv_txn_error(c, rc);
        goto out;
    }
    a.dst = &res;
    if ((rc = algebra_run(&a))) {
        srv_txn_error(c, rc);
        goto out;
    }
    rc = st_keyspace_delete(t, &dk, srv_cmd_now(c));
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        goto out;
    }
    int existed = rc == 0;
    rc = st_coll_open(t, &dk, ST_TYPE_SET, srv_cmd_now(c), &d);
    if (rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc ? rc : ST_ECORRUPT);
        goto out;
    }
    d.c = res.c;
    if (srv_coll_save_or_reply(c, t, &d) == 0) {
        static const char *const events[] = { [OP_INTER] = "sinterstore",
                                              [OP_UNION] = "sunionstore",
                                              [OP_DIFF] = "sdiffstore" };
        if (res.c.card)
            srv_notify_arg(c, SRV_NOTIFY_SET, events[op], 1);
        else if (existed)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
        srv_reply_int(c, (long long)res.c.card);
    }
out:
    if (keys != kstack)
        free(keys);
    if (sets != ostack)
        free(sets);
}

void srv_cmd_sinter(srv_conn *c) { algebra_generic(c, OP_INTER, 0); }
void srv_cmd_sunion(srv_conn *c) { algebra_generic(c, OP_UNION, 0); }
void srv_cmd_sdiff(srv_conn *c) { algebra_generic(c, OP_DIFF, 0); }
void srv_cmd_sinterstore(srv_conn *c) { algebra_generic(c, OP_INTER, 1); }
void srv_cmd_sunionstore(srv_conn *c) { algebra_generic(c, OP_UNION, 1); }
void srv_cmd_sdiffstore(srv_conn *c) { algebra_generic(c, OP_DIFF, 1); }

void srv_cmd_sintercard(srv_conn *c)
{
    long long numkeys, limit = 0;
    st_keyref kstack[MAX_STACK_SETS], *keys = kstack;
    st_obj ostack[MAX_STACK_SETS], *sets = ostack;
    struct st_txn *t;
    int rc;

    if (!srv_util_str2ll(c->argv[1].ptr, c->argv[1].len, &numkeys) ||
        numkeys <= 0) {
        srv_reply_error(c, "ERR numkeys should be greater than 0");
        return;
    }
    if (numkeys > c->argc - 2) {
        srv_reply_error(c, "ERR Number of keys can't be greater than number "
                           "of args");
        return;
    }
    for (int j = 2 + (int)numkeys; j < c->argc; j += 2) {
        if (j + 1 < c->argc &&
            srv_util_streq(c->argv[j].ptr, c->argv[j].len, "limit")) {
            if (!srv_util_str2ll(c->argv[j + 1].ptr, c->argv[j + 1].len,
                                 &limit) ||
                limit < 0) {
                srv_reply_error(c, "ERR LIMIT can't be negative");
                return;
            }
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    if (numkeys > MAX_STACK_SETS) {
        keys = malloc(sizeof *keys * (size_t)numkeys);
        sets = malloc(sizeof *sets * (size_t)numkeys);
        if (!keys || !sets) {
            srv_txn_error(c, ENOMEM);
            goto out;
        }
    }
    if (open_sets_or_reply(c, t, 2, (int)numkeys, keys, sets))
        goto out;
    /* Counting only: a limit of "all" still must not reply members. */
    algebra a = { c,    t, OP_INTER, (int)numkeys,
                  sets, 0, NULL,     limit ? (uint64_t)limit : UINT64_MAX,
                  0,    0 };
    if ((rc = algebra_run(&a)))
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, a.n);
out:
    if (keys != kstack)
        free(keys);
    if (sets != ostack)
        free(sets);
}

static int sscan_step(srv_conn *c, struct st_txn *t, const st_obj *o,
                      const srv_scan_args *a, uint64_t *next, long long *n)
{
    srv_coll_emit e = { c, SRV_COLL_NAMES, a->match, 0 };
    int rc = st_set_scan(t, o, a->cursor, (size_t)a->count, srv_coll_emit_elem,
                         &e, next);

    *n = e.n;
    return rc;
}

void srv_cmd_sscan(srv_conn *c)
{
    srv_scan_collection(c, ST_TYPE_SET, sscan_step);
}
