/*
 * srv_coll.c - what the collection handlers share: opening argv[i] as a
 * collection of a type with the error replies done, saving it back, and
 * the member removal and member lookup families (HDEL/SREM/ZREM,
 * HGET/HMGET/ZSCORE/ZMSCORE), the cardinality (HLEN/SCARD/LLEN/ZCARD)
 * the multi-key pop (LMPOP/ZMPOP), and the member batches of walks that
 * write as they go.
 */
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_BUF_MIN 4096

int srv_coll_open_or_reply(srv_conn *c, struct st_txn *t, int i, int type,
                           st_keyref *k, st_obj *o)
{
    int rc;

    srv_key_ref(c, i, k);
    rc = st_coll_open(t, k, type, srv_cmd_now(c), o);
    if (rc == 0)
        return 1;
    if (rc == ST_ENOTFOUND)
        return 0;
    srv_txn_error(c, rc);
    return -1;
}

int srv_coll_save_or_reply(srv_conn *c, struct st_txn *t, st_obj *o)
{
    int rc = st_coll_save(t, o, srv_cmd_now(c));

    if (rc)
        srv_txn_error(c, rc);
    return rc ? -1 : 0;
}

void srv_coll_remove_members(srv_conn *c, int type, srv_coll_remove_fn *remove)
{
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    long long n = 0;
    int rc;

    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_coll_open_or_reply(c, t, 1, type, &k, &o)) < 0)
        return;
    for (int j = 2; rc && j < c->argc; j++) {
        int r = remove(t, &o, c->argv[j].ptr, c->argv[j].len);
        if (r == 0)
            n++;
        else if (r != ST_ENOTFOUND) {
            srv_txn_error(c, r);
            return;
        }
    }
    if (n && srv_coll_save_or_reply(c, t, &o))
        return;
    if (n) {
        static const struct {
            int type, cls;
            const char *event;
        } ev[] = { { ST_TYPE_HASH, SRV_NOTIFY_HASH, "hdel" },
                   { ST_TYPE_SET, SRV_NOTIFY_SET, "srem" },
                   { ST_TYPE_ZSET, SRV_NOTIFY_ZSET, "zrem" } };
        for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
            if (ev[i].type == type)
                srv_notify_arg(c, ev[i].cls, ev[i].event, 1);
        if (o.c.card == 0)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
    }
    srv_reply_int(c, n);
}

void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_coll_reply_fn *reply)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    size_t mark;
    int rc;

    if (!t || srv_coll_open_or_reply(c, t, 1, type, &k, &o) < 0)
        return;
    mark = c->out.len;
    if (many)
        srv_reply_array(c, c->argc - 2);
    for (int j = 2; j < (many ? c->argc : 3); j++) {
        if ((rc = reply(c, t, &o, j))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
    }
}

void srv_coll_reply_card(srv_conn *c, int type)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;

    if (!t || srv_coll_open_or_reply(c, t, 1, type, &k, &o) < 0)
        return;
    srv_reply_int(c, (long long)o.c.card);
}

int srv_coll_mpop(srv_conn *c, int base, int type, const char *end0,
                  const char *end1, srv_coll_pop_fn *pop, int *numkeys,
                  int64_t *timeout)
{
    struct st_txn *t;
    long long count;
    int end;

    if (srv_args_mpop_or_reply(c, base, end0, end1, numkeys, &end, &count) ||
        (timeout && srv_block_timeout_or_reply(c, &c->argv[1], timeout)) ||
        !(t = srv_txn_write_or_reply(c)))
        return 0;
    for (int j = base + 1; j < base + 1 + *numkeys; j++) {
        st_keyref k;
        st_obj o;
        int rc = srv_coll_open_or_reply(c, t, j, type, &k, &o);
        if (rc < 0)
            return 0;
        if (rc == 0)
            continue;
        uint64_t n = (uint64_t)count < o.c.card ? (uint64_t)count : o.c.card;
        size_t mark = c->out.len;
        srv_reply_array(c, 2);
        srv_reply_bulk(c, c->argv[j].ptr, c->argv[j].len);
        srv_reply_array(c, (long long)n);
        if ((rc = pop(c, t, &o, end, n))) {
            c->out.len = mark;
            srv_txn_error(c, rc);
        } else {
            srv_block_served(c, j, o.c.card);
        }
        return 0;
    }
    return 1;
}

void srv_coll_batch_reset(srv_coll_batch *b)
{
    b->len = 0;
    b->n = 0;
    b->off[0] = 0;
}

int srv_coll_batch_add(srv_coll_batch *b, const void *m, size_t ml, double s)
{
    if (b->len + ml > b->cap) {
        size_t cap = b->cap ? b->cap : BATCH_BUF_MIN;
        while (cap < b->len + ml)
            cap *= 2;
        uint8_t *p = realloc(b->buf, cap);
        if (!p)
            return 1;
        b->buf = p;
        b->cap = cap;
    }
    if (ml)
        memcpy(b->buf + b->len, m, ml);
    b->len += ml;
    b->score[b->n] = s;
    b->off[++b->n] = b->len;
    return b->n == SRV_COLL_BATCH;
}

int srv_coll_batch_elem(void *ctx, const uint8_t *m, size_t ml,
                        const uint8_t *v, size_t vl)
{
    return srv_coll_batch_add(ctx, m, ml, 0);
}

int srv_coll_batch_scored(void *ctx, const uint8_t *m, size_t ml, double s)
{
    return srv_coll_batch_add(ctx, m, ml, s);
}

void srv_coll_batch_free(srv_coll_batch *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = b->n = 0;
}

void srv_coll_reply_all(srv_conn *c, int type, unsigned want,
                        srv_coll_scan_fn *scan)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    srv_coll_emit e = { c, want, NULL, 0 };
    st_keyref k;
    st_obj o;
    uint64_t next;
    size_t mark;
    int rc;

    if (!t || srv_coll_open_or_reply(c, t, 1, type, &k, &o) < 0)
        return;
    mark = c->out.len;
    if (want == (SRV_COLL_NAMES | SRV_COLL_VALUES))
        srv_reply_map(c, (long long)o.c.card);
    else if (type == ST_TYPE_SET)
        srv_reply_set(c, (long long)o.c.card);
    else
        srv_reply_array(c, (long long)o.c.card);
    if (o.exists &&
        (rc = scan(t, &o, 0, SIZE_MAX, srv_coll_emit_elem, &e, &next))) {
        c->out.len = mark;
        srv_txn_error(c, rc);
    }
}

uint64_t srv_coll_rand64(void)
{
    /* random() gives 31 bits: three draws cover 64 */
    return ((uint64_t)random() << 33) ^ ((uint64_t)random() << 2) ^
           (uint64_t)random();
}

int srv_coll_emit_elem(void *ctx, const uint8_t *name, size_t nlen,
                       const uint8_t *val, size_t vlen)
{
    srv_coll_emit *e = ctx;

    if (e->match && !srv_util_glob_match(e->match->ptr, e->match->len,
                                         (const char *)name, nlen, 0))
        return 0;
    if (e->want & SRV_COLL_NAMES) {
        srv_reply_bulk(e->c, name, nlen);
        e->n++;
    }
    if (e->want & SRV_COLL_VALUES) {
        srv_reply_bulk(e->c, val, vlen);
        e->n++;
    }
    return 0;
}
