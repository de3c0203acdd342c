/*
 * srv_cmd_list.c - list commands. Families share one generic function
 * each: push (LPUSH RPUSH LPUSHX RPUSHX), pop (LPOP RPOP, and BLPOP
 * BRPOP), move (LMOVE RPOPLPUSH, and BLMOVE BRPOPLPUSH), multi-key pop
 * (LMPOP BLMPOP). The blocking forms block through srv_block.h when
 * every key is empty. LRANGE streams from a storage cursor.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_list.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* argv[i] as a list: see srv_coll_open_or_reply. */
static int open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                         st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_LIST, k, o);
}

/* Parse LEFT / RIGHT: 1 left, 0 right, -1 neither. */
static int parse_where(const srv_slice *a)
{
    if (srv_util_streq(a->ptr, a->len, "left"))
        return 1;
    if (srv_util_streq(a->ptr, a->len, "right"))
        return 0;
    return -1;
}

static void push_generic(srv_conn *c, int left, int only_existing)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    st_obj o;
    int rc;

    if (!t || (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        if (only_existing) {
            srv_reply_int(c, 0);
            return;
        }
        if ((rc = st_coll_create(t, &o))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    for (int j = 2; j < c->argc; j++) {
        if ((rc = st_list_push(t, &o, left, c->argv[j].ptr, c->argv[j].len))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    if (srv_coll_save_or_reply(c, t, &o) == 0) {
        srv_notify_arg(c, SRV_NOTIFY_LIST, left ? "lpush" : "rpush", 1);
        srv_reply_int(c, (long long)o.c.card);
    }
}

void srv_cmd_lpush(srv_conn *c) { push_generic(c, 1, 0); }
void srv_cmd_rpush(srv_conn *c) { push_generic(c, 0, 0); }
void srv_cmd_lpushx(srv_conn *c) { push_generic(c, 1, 1); }
void srv_cmd_rpushx(srv_conn *c) { push_generic(c, 0, 1); }

static int emit_elem(void *ctx, const uint8_t *v, size_t len)
{
    srv_reply_bulk(ctx, v, len);
    return 0;
}

/* A list that lost elements: its event, and "del" if it is gone. */
static void notify_removed(srv_conn *c, const st_obj *o, const char *event)
{
    srv_notify(c, SRV_NOTIFY_LIST, event, o->k->name, o->k->len);
    if (o->c.card == 0)
        srv_notify(c, SRV_NOTIFY_GENERIC, "del", o->k->name, o->k->len);
}

/* Pop up to `count` elements of `o` from one end into the reply. */
static int pop_into_reply(srv_conn *c, struct st_txn *t, st_obj *o, int left,
                          uint64_t count)
{
    int rc = 0;

    for (uint64_t i = 0; i < count && !rc; i++)
        rc = st_list_pop(t, o, left, emit_elem, c);
    if (!rc)
        rc = st_coll_save(t, o, srv_cmd_now(c));
    if (!rc && count)
        notify_removed(c, o, left ? "lpop" : "rpop");
    return rc;
}

static void pop_generic(srv_conn *c, int left)
{
    struct st_txn *t;
    long long count = 0;
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (c->argc > 3) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         c->cmd->name);
        return;
    }
    if (c->argc == 3 && srv_args_count_or_reply(c, &c->argv[2], &count))
        return;
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        if (c->argc == 3)
            srv_reply_null_array(c);
        else
            srv_reply_null(c);
        return;
    }
    mark = c->out.len;
    if (c->argc == 3) {
        uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
        srv_reply_array(c, (long long)n);
        rc = pop_into_reply(c, t, &o, left, n);
    } else {
        rc = pop_into_reply(c, t, &o, left, 1);
    }
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

void srv_cmd_lpop(srv_conn *c) { pop_generic(c, 1); }
void srv_cmd_rpop(srv_conn *c) { pop_generic(c, 0); }

/* BLPOP / BRPOP key [key ...] timeout: pop from the first non-empty key,
 * replying [key, element]; block when every key is empty. */
static void bpop_generic(srv_conn *c, int left)
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
        srv_reply_array(c, 2);
        srv_reply_bulk(c, c->argv[j].ptr, c->argv[j].len);
        if ((rc = pop_into_reply(c, t, &o, left, 1))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
        srv_block_served(c, j, o.c.card);
        return;
    }
    srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_LIST,
                                             .first_key = 1,
                                             .nkeys = c->argc - 2,
                                             .timeout_ms = timeout,
                                             .null_array = 1 });
}

void srv_cmd_blpop(srv_conn *c) { bpop_generic(c, 1); }
void srv_cmd_brpop(srv_conn *c) { bpop_generic(c, 0); }

void srv_cmd_llen(srv_conn *c) { srv_coll_reply_card(c, ST_TYPE_LIST); }

/* Normalise a Redis index against length n: -1 when out of range. */
static long long norm_index(long long i, uint64_t n)
{
    if (i < 0)
        i += (long long)n;
    return i < 0 || (uint64_t)i >= n ? -1 : i;
}

void srv_cmd_lindex(srv_conn *c)
{
    struct st_txn *t;
    long long i;
    st_keyref k;
    st_obj o;
    const uint8_t *v;
    size_t len;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &i) ||
        !(t = srv_txn_read_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || (i = norm_index(i, o.c.card)) < 0) {
        srv_reply_null(c);
        return;
    }
    if ((rc = st_list_get(t, &o, (uint64_t)i, &v, &len)))
        srv_txn_error(c, rc);
    else
        srv_reply_bulk(c, v, len);
}

void srv_cmd_lset(srv_conn *c)
{
    struct st_txn *t;
    long long i;
    st_keyref k;
    st_obj o;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &i) ||
        !(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_error(c, SRV_ERR_NO_KEY);
        return;
    }
    if ((i = norm_index(i, o.c.card)) < 0) {
        srv_reply_error(c, "ERR index out of range");
        return;
    }
    if ((rc = st_list_set(t, &o, (uint64_t)i, c->argv[3].ptr,
                          c->argv[3].len)) ||
        (rc = st_coll_save(t, &o, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_LIST, "lset", 1);
    srv_reply_ok(c);
}

void srv_cmd_lrange(srv_conn *c)
{
    struct st_txn *t;
    long long start, stop;
    uint64_t s, e;
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &start) ||
        srv_args_ll_or_reply(c, &c->argv[3], &stop) ||
        !(t = srv_txn_read_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0 || !srv_args_clamp_range(start, stop, o.c.card, &s, &e)) {
        srv_reply_array(c, 0);
        return;
    }
    mark = c->out.len;
    srv_reply_array(c, (long long)(e - s + 1));
    if ((rc = st_list_range(t, &o, s, e - s + 1, 0, emit_elem, c))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

void srv_cmd_ltrim(srv_conn *c)
{
    struct st_txn *t;
    long long start, stop;
    uint64_t s, e;
    st_keyref k;
    st_obj o;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &start) ||
        srv_args_ll_or_reply(c, &c->argv[3], &stop) ||
        !(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_ok(c);
        return;
    }
    if (!srv_args_clamp_range(start, stop, o.c.card, &s, &e)) {
        rc = st_keyspace_delete(t, &k, srv_cmd_now(c)); /* O(1): lazy free */
        o.c.card = 0;
    } else if (!(rc = st_list_trim(t, &o, s, e))) {
        rc = st_coll_save(t, &o, srv_cmd_now(c));
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    notify_removed(c, &o, "ltrim");
    srv_reply_ok(c);
}

void srv_cmd_lrem(srv_conn *c)
{
    struct st_txn *t;
    long long count, removed;
    st_keyref k;
    st_obj o;
    int rc;

    if (srv_args_ll_or_reply(c, &c->argv[2], &count) ||
        !(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    if ((rc = st_list_rem(t, &o, count, c->argv[3].ptr, c->argv[3].len,
                          &removed)) ||
        (removed && (rc = st_coll_save(t, &o, srv_cmd_now(c))))) {
        srv_txn_error(c, rc);
        return;
    }
    if (removed)
        notify_removed(c, &o, "lrem");
    srv_reply_int(c, removed);
}

void srv_cmd_linsert(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    int after, rc;

    if (srv_util_streq(c->argv[2].ptr, c->argv[2].len, "after"))
        after = 1;
    else if (srv_util_streq(c->argv[2].ptr, c->argv[2].len, "before"))
        after = 0;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    rc = st_list_insert(t, &o, after, c->argv[3].ptr, c->argv[3].len,
                        c->argv[4].ptr, c->argv[4].len);
    if (rc == ST_ENOTFOUND) {
        srv_reply_int(c, -1);
        return;
    }
    if (rc || (rc = st_coll_save(t, &o, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_LIST, "linsert", 1);
    srv_reply_int(c, (long long)o.c.card);
}

typedef struct lpos_ctx {
    srv_conn *c;
    const srv_slice *elem;
    long long rank; /* matches still to skip, plus one */
    long long want; /* matches to reply; 0: all */
    long long found;
    long long index; /* of the element being visited */
    int rev;
    uint64_t card;
} lpos_ctx;

static int lpos_visit(void *ctx, const uint8_t *v, size_t len)
{
    lpos_ctx *p = ctx;
    long long i = p->index++;

    if (len != p->elem->len || (len && memcmp(v, p->elem->ptr, len)))
        return 0;
    if (p->rank > 1) {
        p->rank--;
        return 0;
    }
    srv_reply_int(p->c, p->rev ? (long long)p->card - 1 - i : i);
    p->found++;
    return p->want && p->found >= p->want;
}

void srv_cmd_lpos(srv_conn *c)
{
    struct st_txn *t;
    long long rank = 1, count = -1, maxlen = 0;
    st_keyref k;
    st_obj o;
    int rc;

    for (int j = 3; j < c->argc; j += 2) {
        const srv_slice *a = &c->argv[j];
        long long v;
        if (j + 1 >= c->argc) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
        if (!srv_util_streq(a->ptr, a->len, "rank") &&
            !srv_util_streq(a->ptr, a->len, "count") &&
            !srv_util_streq(a->ptr, a->len, "maxlen")) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
        const srv_slice *va = &c->argv[j + 1];
        if (srv_util_streq(a->ptr, a->len, "rank")) {
            if (srv_args_ll_or_reply(c, va, &v))
                return;
            if (v == LLONG_MIN) {
                /* Redis 7.0 negates it into itself; 7.2's answer. */
                srv_reply_error(c, "ERR value is out of range, value must "
                                   "between -9223372036854775807 and "
                                   "9223372036854775807");
                return;
            }
            if (v == 0) {
                srv_reply_error(c, "ERR RANK can't be zero: use 1 to start "
                                   "from the first match, 2 from the second "
                                   "... or use negative to start from the "
                                   "end of the list");
                return;
            }
            rank = v;
        } else if (srv_util_streq(a->ptr, a->len, "count")) {
            /* Redis's one text for both: not a number, or negative. */
            if (!srv_util_str2ll(va->ptr, va->len, &v) || v < 0) {
                srv_reply_error(c, "ERR COUNT can't be negative");
                return;
            }
            count = v;
        } else {
            if (!srv_util_str2ll(va->ptr, va->len, &v) || v < 0) {
                srv_reply_error(c, "ERR MAXLEN can't be negative");
                return;
            }
            maxlen = v;
        }
    }
    if (!(t = srv_txn_read_or_reply(c)) ||
        (rc = open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        if (count >= 0)
            srv_reply_array(c, 0);
        else
            srv_reply_null(c);
        return;
    }
    lpos_ctx p = { c,
                   &c->argv[2],
                   rank < 0 ? -rank : rank,
                   count < 0 ? 1 : count,
                   0,
                   0,
                   rank < 0,
                   o.c.card };
    uint64_t n = maxlen && (uint64_t)maxlen < o.c.card ? (uint64_t)maxlen
                                                       : o.c.card;
    size_t mark = count >= 0 ? srv_reply_defer(c) : c->out.len;
    rc = st_list_range(t, &o, p.rev ? o.c.card - 1 : 0, n, p.rev, lpos_visit,
                       &p);
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    if (count >= 0)
        srv_reply_defer_array(c, mark, p.found);
    else if (!p.found)
        srv_reply_null(c);
}

/* Copy of a popped element (storage memory dies at the next write). */
typedef struct held {
    char *p;
    size_t len;
} held;

static int hold_elem(void *ctx, const uint8_t *v, size_t len)
{
    held *h = ctx;

    h->p = srv_key_scratch(len ? len : 1);
    if (!h->p)
        return 1;
    if (len)
        memcpy(h->p, v, len);
    h->len = len;
    return 0;
}

/*
 * LMOVE / RPOPLPUSH: pop from argv[1] at `from_left`, push to argv[2].
 * An empty source replies a null, or with `block` (BLMOVE, BRPOPLPUSH:
 * the timeout at argv[block]) blocks on it.
 */
static void move_generic(srv_conn *c, int from_left, int to_left, int block)
{
    struct st_txn *t;
    int64_t timeout = 0;
    st_keyref sk, dk;
    st_obj so, dobj, *dst = &dobj;
    held h = { NULL, 0 };
    int rc, drc;

    if ((block && srv_block_timeout_or_reply(c, &c->argv[block], &timeout)) ||
        !(t = srv_txn_write_or_reply(c)))
        return;
    srv_key_ref(c, 1, &sk);
    rc = st_coll_open(t, &sk, ST_TYPE_LIST, srv_cmd_now(c), &so);
    if (rc == ST_ENOTFOUND && block) {
        srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_LIST,
                                                 .first_key = 1,
                                                 .nkeys = 1,
                                                 .timeout_ms = timeout });
        return;
    }
    if (rc == ST_ENOTFOUND) {
        srv_reply_null(c);
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    if (sk.len == c->argv[2].len &&
        memcmp(sk.name, c->argv[2].ptr, sk.len) == 0) {
        dst = &so;
    } else {
        if ((drc = open_or_reply(c, t, 2, &dk, &dobj)) < 0)
            return;
        if (drc == 0 && (rc = st_coll_create(t, &dobj))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    if ((rc = st_list_pop(t, &so, from_left, hold_elem, &h)) ||
        (!h.p && (rc = ENOMEM)) ||
        (dst != &so && (rc = st_coll_save(t, &so, srv_cmd_now(c)))) ||
        (rc = st_list_push(t, dst, to_left, h.p, h.len)) ||
        (rc = st_coll_save(t, dst, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    /* Redis's order: the push, the pop, the source gone. */
    srv_notify(c, SRV_NOTIFY_LIST, to_left ? "lpush" : "rpush", dst->k->name,
               dst->k->len);
    notify_removed(c, &so, from_left ? "lpop" : "rpop");
    srv_reply_bulk(c, h.p, h.len);
    srv_block_served(c, 1, so.c.card);
}

void srv_cmd_rpoplpush(srv_conn *c) { move_generic(c, 0, 1, 0); }
void srv_cmd_brpoplpush(srv_conn *c) { move_generic(c, 0, 1, 3); }

/* LMOVE / BLMOVE: the ends are argv[3] and argv[4]. */
static void lmove_generic(srv_conn *c, int block)
{
    int from = parse_where(&c->argv[3]), to = parse_where(&c->argv[4]);

    if (from < 0 || to < 0) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    move_generic(c, from, to, block);
}

void srv_cmd_lmove(srv_conn *c) { lmove_generic(c, 0); }
void srv_cmd_blmove(srv_conn *c) { lmove_generic(c, 5); }

void srv_cmd_lmpop(srv_conn *c)
{
    int numkeys;

    if (srv_coll_mpop(c, 1, ST_TYPE_LIST, "right", "left", pop_into_reply,
                      &numkeys, NULL))
        srv_reply_null_array(c);
}

void srv_cmd_blmpop(srv_conn *c)
{
    int64_t timeout;
    int numkeys;

    if (srv_coll_mpop(c, 2, ST_TYPE_LIST, "right", "left", pop_into_reply,
                      &numkeys, &timeout))
        srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_LIST,
                                                 .first_key = 3,
                                                 .nkeys = numkeys,
                                                 .timeout_ms = timeout,
                                                 .null_array = 1 });
}
