/*
 * srv_rdbkey.c - a stored key serialised as an RDB object, and an RDB
 * object written into a key (srv_rdbkey.h).
 */
#include "server/srv_rdbkey.h"
#include "rdb/rdb_err.h"
#include "rdb/rdb_stream.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"
#include "storage/st_list.h"
#include "storage/st_set.h"
#include "storage/st_stream.h"
#include "storage/st_string.h"
#include "storage/st_zset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Seeds of the two halves of a member's 128-bit digest (duplicates). */
#define DIGEST_SEED_A 0x5bd1e9955bd1e995ull
#define DIGEST_SEED_B 0x27d4eb2f165667c5ull
#define DIGEST_WORDS 2

/* ---- the process's codec memory ---- */

srv_rdbkey_kit *srv_rdbkey_kit_get(void)
{
    static srv_rdbkey_kit kit;
    static int ready;

    if (!ready) {
        rdb_writer_mem(&kit.w, 1);
        rdb_enc_init(&kit.e);
        ready = 1;
    }
    kit.w.buf.len = 0;
    kit.w.err = 0;
    return &kit;
}

static void trim(rdb_buf *b)
{
    if (b->cap > SRV_RDBKEY_KEEP)
        rdb_buf_free(b);
}

void srv_rdbkey_kit_trim(srv_rdbkey_kit *kit)
{
    trim(&kit->w.buf);
    trim(&kit->w.lzf);
    trim(&kit->e.pack);
    trim(&kit->e.side.buf);
    trim(&kit->e.side.lzf);
    trim(&kit->sc.a);
    trim(&kit->sc.b);
    trim(&kit->sc.blob);
    trim(&kit->digests);
    trim(&kit->e.x.nodes.buf);
    trim(&kit->e.x.nodes.lzf);
    trim(&kit->e.x.pack);
    trim(&kit->e.x.body);
    trim(&kit->e.x.master);
    trim(&kit->sc.x.fv);
    trim(&kit->sc.x.text);
    trim(&kit->sc.x.pel);
    trim(&kit->sc.x.out);
}

/* ---- encoding ---- */

typedef struct enc_ctx {
    rdb_enc *e;
    int rc;
} enc_ctx;

static int on_hash(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                   size_t vn)
{
    enc_ctx *x = ctx;

    return (x->rc = rdb_enc_pair(x->e, f, fn, v, vn)) != 0;
}

static int on_member(void *ctx, const uint8_t *m, size_t mn, const uint8_t *v,
                     size_t vn)
{
    enc_ctx *x = ctx;

    return (x->rc = rdb_enc_elem(x->e, m, mn)) != 0;
}

static int on_list(void *ctx, const uint8_t *p, size_t n)
{
    enc_ctx *x = ctx;

    return (x->rc = rdb_enc_elem(x->e, p, n)) != 0;
}

static int on_scored(void *ctx, const uint8_t *m, size_t mn, double score)
{
    enc_ctx *x = ctx;

    return (x->rc = rdb_enc_scored(x->e, m, mn, score)) != 0;
}

/* The encoder's codes as this module's: errno, or ST_ECORRUPT for what
 * can only be a stored value that does not add up. */
static int enc_code(int rc) { return rc > 0 ? rc : rc ? ST_ECORRUPT : 0; }

static int kind_of(int st_type)
{
    switch (st_type) {
    case ST_TYPE_LIST: return RDB_KIND_LIST;
    case ST_TYPE_SET: return RDB_KIND_SET;
    case ST_TYPE_ZSET: return RDB_KIND_ZSET;
    case ST_TYPE_HASH: return RDB_KIND_HASH;
    default: return RDB_KIND_STRING;
    }
}

/*
 * The bytes of string record r in one piece: the one place this module
 * (DUMP, MIGRATE, the RDB export, SYNC) reads a string's value: a long
 * one kept in spans (st_string.h) is assembled, valid until t ends. 0 or
 * a storage code.
 */
static int string_bytes(struct st_txn *t, const st_rec *r, const uint8_t **p,
                        size_t *n)
{
    return st_string_flat(t, r, p, n);
}

/* ---- streams ---- */

typedef struct xenc_ctx {
    struct st_txn *t;
    const st_obj *o;
    rdb_xenc *x;
    rdb_buf *fv; /* an entry's rdb_str */
    uint64_t gnum;
    int rc; /* the encoder's code, or a storage one (st) */
    int st;
} xenc_ctx;

static rdb_stream_id xid(const st_stream_id *id)
{
    rdb_stream_id r = { id->ms, id->seq };

    return r;
}

static int xe_entry(void *ctx, const st_stream_id *id, const uint8_t *val,
                    size_t len)
{
    xenc_ctx *x = ctx;
    size_t n = st_stream_value_count(val, len), i = 0;
    rdb_stream_id rid = xid(id);
    st_stream_value v;
    rdb_str *fv;

    if (n == 0 || n % 2) {
        x->st = ST_ECORRUPT;
        return 1;
    }
    x->fv->len = 0;
    if (rdb_buf_reserve(x->fv, n * sizeof *fv)) {
        x->rc = ENOMEM;
        return 1;
    }
    fv = (rdb_str *)x->fv->data;
    st_stream_value_init(&v, val, len);
    while (i < n && st_stream_value_next(&v, &fv[i].p, &fv[i].n))
        i++;
    if (i != n) {
        x->st = ST_ECORRUPT;
        return 1;
    }
    return (x->rc = rdb_xenc_entry(x->x, &rid, fv, n / 2)) != 0;
}

static int xe_cpel(void *ctx, const st_stream_id *id, const st_stream_pel *p)
{
    xenc_ctx *x = ctx;
    rdb_stream_id rid = xid(id);

    return (x->rc = rdb_xenc_cpel(x->x, &rid)) != 0;
}

static int xe_gpel(void *ctx, const st_stream_id *id, const st_stream_pel *p)
{
    xenc_ctx *x = ctx;
    rdb_stream_id rid = xid(id);

    return (x->rc = rdb_xenc_gpel(x->x, &rid, p->delivery_time,
                                  p->delivery_count)) != 0;
}

static const st_stream_id XID_MIN = { 0, 0 };
static const st_stream_id XID_MAX = { UINT64_MAX, UINT64_MAX };

static int xe_consumer(void *ctx, const uint8_t *name, size_t len,
                       const st_stream_consumer *cons)
{
    xenc_ctx *x = ctx;
    int rc;

    if ((x->rc = rdb_xenc_consumer(x->x, name, len, cons->seen_time,
                                   cons->pending)))
        return 1;
    rc = st_stream_pels(x->t, x->o, x->gnum, cons->num, &XID_MIN, &XID_MAX, 0,
                        xe_cpel, x);
    if (rc && !x->rc)
        x->st = rc;
    return rc != 0;
}

static int xe_group(void *ctx, const uint8_t *name, size_t len,
                    const st_stream_group *g)
{
    xenc_ctx *x = ctx;
    rdb_stream_id last = xid(&g->last);
    int rc;

    if ((x->rc = rdb_xenc_group(x->x, name, len, &last, g->entries_read,
                                g->pending, g->consumers)))
        return 1;
    x->gnum = g->num;
    rc = st_stream_pels(x->t, x->o, g->num, UINT64_MAX, &XID_MIN, &XID_MAX, 0,
                        xe_gpel, x);
    if (rc == 0)
        rc = st_stream_consumers(x->t, x->o, g->num, xe_consumer, x);
    if (rc && !x->rc && !x->st)
        x->st = rc;
    return rc != 0;
}

/* The walk's outcome: the callbacks' code first, then the walk's. */
static int xe_code(const xenc_ctx *x, int rc)
{
    if (x->rc)
        return enc_code(x->rc);
    if (x->st)
        return x->st;
    return rc;
}

/*
 * Stream o as an RDB object: its entries in id order, its state, and
 * each group with its pending list and consumers. The encoder is told
 * the counts the records keep, and checks them against what the walks
 * find (ST_ECORRUPT when they differ).
 */
static int encode_stream(struct st_txn *t, const st_obj *o, rdb_writer *w,
                         rdb_enc *e, const void *name, size_t nlen)
{
    xenc_ctx x = { .t = t, .o = o, .x = &e->x, .fv = &e->pack };
    st_stream_meta m;
    st_stream_id first = XID_MIN;
    rdb_stream_meta rm;
    int rc;

    if ((rc = st_stream_meta_get(t, o, &m)))
        return rc;
    if ((rc = st_stream_edge(t, o, 0, &first)) && rc != ST_ENOTFOUND)
        return rc;
    if ((rc = enc_code(rdb_xenc_begin(&e->x, w, name, nlen))))
        return rc;
    rc = st_stream_range(t, o, &XID_MIN, &XID_MAX, 0, 0, xe_entry, &x);
    if ((rc = xe_code(&x, rc)))
        return rc;
    rm.length = o->c.card;
    rm.last = xid(&m.last);
    rm.first = xid(&first);
    rm.max_deleted = xid(&m.max_deleted);
    rm.entries_added = m.entries_added;
    rm.groups = m.ngroups;
    if ((rc = enc_code(rdb_xenc_meta(&e->x, &rm))))
        return rc;
    rc = st_stream_groups(t, o, xe_group, &x);
    if ((rc = xe_code(&x, rc)))
        return rc;
    return enc_code(rdb_xenc_end(&e->x));
}

int srv_rdbkey_encode(struct st_txn *t, st_keyref *k, const st_rec *r,
                      rdb_writer *w, rdb_enc *e, const void *name, size_t nlen)
{
    enc_ctx x = { e, 0 };
    st_obj o;
    uint64_t next, visited;
    const uint8_t *sp;
    size_t sn;
    int rc;

    if (r->type == ST_TYPE_STRING) {
        if ((rc = string_bytes(t, r, &sp, &sn)))
            return rc;
        return enc_code(rdb_enc_string(w, name, nlen, sp, sn));
    }
    memset(&o, 0, sizeof o);
    o.k = k;
    o.type = r->type;
    o.exists = 1;
    o.expire_at = r->expire_at;
    st_coll_decode(r, &o.c);
    if (r->type == ST_TYPE_STREAM)
        return encode_stream(t, &o, w, e, name, nlen);
    if ((rc = rdb_enc_begin(e, w, &rdb_limits_default, kind_of(r->type),
                            o.c.card, name, nlen)))
        return enc_code(rc);
    switch (r->type) {
    case ST_TYPE_HASH:
        rc = st_hash_scan(t, &o, 0, SIZE_MAX, on_hash, &x, &next);
        break;
    case ST_TYPE_SET:
        rc = st_set_scan(t, &o, 0, SIZE_MAX, on_member, &x, &next);
        break;
    case ST_TYPE_LIST:
        rc = st_list_range(t, &o, 0, o.c.card, 0, on_list, &x);
        break;
    case ST_TYPE_ZSET: {
        /* Past the listpack limit Redis writes the highest score first. */
        st_zrange zr = { .by = ST_ZBY_RANK,
                         .rev = o.c.card > rdb_limits_default.zset_entries,
                         .start = 0,
                         .count = o.c.card,
                         .offset = 0,
                         .limit = UINT64_MAX };
        rc = st_zset_walk(t, &o, &zr, 0, on_scored, &x, &visited);
        break;
    }
    default: return ST_ECORRUPT;
    }
    if (x.rc)
        return enc_code(x.rc);
    if (rc)
        return rc;
    return enc_code(rdb_enc_end(e));
}

int srv_rdbkey_dump(struct st_txn *t, st_keyref *k, const st_rec *r,
                    rdb_writer *w, rdb_enc *e)
{
    int rc;

    w->buf.len = 0;
    w->err = 0;
    if ((rc = srv_rdbkey_encode(t, k, r, w, e, NULL, 0)))
        return rc;
    return enc_code(rdb_dump_finish(w));
}

/* ---- checking ---- */

typedef struct check_ctx {
    rdb_buf *digests;
    int collect;
    int err;
} check_ctx;

static int add_digest(check_ctx *x, const uint8_t *p, size_t n)
{
    uint64_t d[DIGEST_WORDS] = { st_codec_hash64(p, n, DIGEST_SEED_A),
                                 st_codec_hash64(p, n, DIGEST_SEED_B) };

    if (!x->collect)
        return 0;
    if (rdb_buf_append(x->digests, d, sizeof d)) {
        x->err = ENOMEM;
        return 1;
    }
    return 0;
}

/* Redis 7.0 loads a plain hash of up to hash-max-listpack-entries into a
 * listpack without looking for duplicates; past that it refuses them. */
static int chk_begin(void *ctx, int kind, uint64_t hint)
{
    check_ctx *x = ctx;

    if (kind == RDB_KIND_HASH && hint <= rdb_limits_default.hash_entries)
        x->collect = 0;
    return 0;
}

static int chk_elem(void *ctx, const uint8_t *p, size_t n)
{
    return add_digest(ctx, p, n);
}

static int chk_pair(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                    size_t vn)
{
    return add_digest(ctx, f, fn);
}

static int chk_scored(void *ctx, const uint8_t *m, size_t mn, double s)
{
    return add_digest(ctx, m, mn);
}

static int cmp_digest(const void *a, const void *b)
{
    return memcmp(a, b, DIGEST_WORDS * sizeof(uint64_t));
}

int srv_rdbkey_check(rdb_reader *r, int type, rdb_scratch *sc, rdb_buf *digests)
{
    check_ctx x = { digests,
                    type == RDB_TYPE_SET || type == RDB_TYPE_HASH ||
                        type == RDB_TYPE_ZSET || type == RDB_TYPE_ZSET_2,
                    0 };
    rdb_sink s = { .ctx = &x,
                   .begin = chk_begin,
                   .elem = chk_elem,
                   .pair = chk_pair,
                   .scored = chk_scored };
    size_t size = DIGEST_WORDS * sizeof(uint64_t), n;
    int rc;

    digests->len = 0;
    rc = rdb_obj_decode(r, type, &s, sc);
    if (rc == RDB_ESINK)
        return x.err ? x.err : rc;
    if (rc || !x.collect)
        return rc;
    n = digests->len / size;
    qsort(digests->data, n, size, cmp_digest);
    for (size_t i = 1; i < n; i++)
        if (memcmp(digests->data + (i - 1) * size, digests->data + i * size,
                   size) == 0)
            return rdb_reader_fail(r, RDB_ECORRUPT,
                                   "the same member twice in a %s",
                                   type == RDB_TYPE_SET    ? "set"
                                   : type == RDB_TYPE_HASH ? "hash"
                                                           : "sorted set");
    return 0;
}

/* ---- loading ---- */

void srv_rdbkey_load_init(srv_rdbkey_load *l, struct st_txn *t, st_keyref *k,
                          int64_t now, int64_t expire_at)
{
    memset(l, 0, sizeof *l);
    l->t = t;
    l->k = k;
    l->now = now;
    l->expire_at = expire_at;
}

static int failed(srv_rdbkey_load *l, int rc)
{
    l->err = rc;
    return 1;
}

static int ld_string(void *ctx, const uint8_t *p, size_t n)
{
    srv_rdbkey_load *l = ctx;
    int rc = st_keyspace_string_set(l->t, l->k, p, n, l->expire_at);

    return rc ? failed(l, rc) : 0;
}

static int st_type_of(int kind)
{
    switch (kind) {
    case RDB_KIND_LIST: return ST_TYPE_LIST;
    case RDB_KIND_SET: return ST_TYPE_SET;
    case RDB_KIND_ZSET: return ST_TYPE_ZSET;
    default: return ST_TYPE_HASH;
    }
}

static int ld_begin(void *ctx, int kind, uint64_t hint)
{
    srv_rdbkey_load *l = ctx;
    int rc = st_coll_open(l->t, l->k, st_type_of(kind), l->now, &l->o);

    if (rc != ST_ENOTFOUND)
        return failed(l, rc ? rc : ST_EEXISTS);
    if ((rc = st_coll_create(l->t, &l->o)))
        return failed(l, rc);
    l->opened = 1;
    return 0;
}

/* After an element: in a bulk load, commit every `batch` elements. */
static int element_done(srv_rdbkey_load *l)
{
    int rc;

    l->elems++;
    if (!l->batch || ++l->since_rotate < l->batch)
        return 0;
    l->since_rotate = 0;
    if ((rc = st_coll_save(l->t, &l->o, l->now)) ||
        (rc = l->rotate(l->rotate_ctx, &l->t)))
        return failed(l, rc);
    rc = st_coll_open(l->t, l->k, l->o.type, l->now, &l->o);
    return rc ? failed(l, rc) : 0;
}

static int ld_elem(void *ctx, const uint8_t *p, size_t n)
{
    srv_rdbkey_load *l = ctx;
    int rc, added = 1;

    if (l->o.type == ST_TYPE_LIST)
        rc = st_list_push(l->t, &l->o, 0, p, n);
    else
        rc = st_set_add(l->t, &l->o, p, n, &added);
    if (rc)
        return failed(l, rc);
    l->dup |= !added;
    return element_done(l);
}

/* A field that comes twice keeps its first value: what a lookup in
 * Redis's listpack (which keeps both) finds. */
static int ld_pair(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                   size_t vn)
{
    srv_rdbkey_load *l = ctx;
    int created = 0, rc = st_hash_set(l->t, &l->o, f, fn, v, vn, 1, &created);

    if (rc == ST_EEXISTS) {
        l->dup = 1;
        return 0;
    }
    if (rc)
        return failed(l, rc);
    return element_done(l);
}

static int ld_scored(void *ctx, const uint8_t *m, size_t mn, double score)
{
    srv_rdbkey_load *l = ctx;
    int created, rc = st_zset_add(l->t, &l->o, m, mn, score, &created);

    if (rc)
        return failed(l, rc);
    l->dup |= !created;
    return element_done(l);
}

/* ---- loading a stream ---- */

/* The stream is opened (created) at its first piece: an entry, or the
 * state of an empty one. */
static int xl_open(srv_rdbkey_load *l)
{
    int rc;

    if (l->opened)
        return 0;
    rc = st_coll_open(l->t, l->k, ST_TYPE_STREAM, l->now, &l->o);
    if (rc != ST_ENOTFOUND)
        return failed(l, rc ? rc : ST_EEXISTS);
    if ((rc = st_coll_create(l->t, &l->o)))
        return failed(l, rc);
    l->opened = 1;
    return 0;
}

static void xl_field(void *ctx, size_t i, const uint8_t **p, size_t *len)
{
    const rdb_str *fv = ctx;

    *p = fv[i].p;
    *len = fv[i].n;
}

static st_stream_id sid(const rdb_stream_id *id)
{
    st_stream_id r = { id->ms, id->seq };

    return r;
}

/*
 * Approximate trimming groups entries in nodes of RDB_STREAM_NODE_ENTRIES
 * consecutive ordinals (st_stream_trim), as Redis trims whole listpack
 * nodes. A loaded entry's ordinal keeps it in the node the RDB had it in:
 * each node starts on the next node boundary and its live entries count
 * on from there (a node of more entries than that shares its last
 * ordinal). The stream's next XADD continues the last node where Redis
 * would append to it: after its entries, deleted ones included, and in a
 * new node once it holds RDB_STREAM_NODE_ENTRIES or RDB_STREAM_NODE_BYTES.
 */
static int xl_node(void *ctx, uint64_t live, uint64_t deleted, size_t bytes)
{
    srv_rdbkey_load *l = ctx;
    uint64_t slots = live + deleted;

    l->xnode_base = (l->xnode_end + RDB_STREAM_NODE_ENTRIES - 1) /
                    RDB_STREAM_NODE_ENTRIES * RDB_STREAM_NODE_ENTRIES;
    l->xnode_pos = 0;
    if (slots > RDB_STREAM_NODE_ENTRIES || bytes >= RDB_STREAM_NODE_BYTES)
        slots = RDB_STREAM_NODE_ENTRIES;
    l->xnode_end = l->xnode_base + slots;
    return 0;
}

static int xl_entry(void *ctx, const rdb_stream_id *id, const rdb_str *fv,
                    size_t n)
{
    srv_rdbkey_load *l = ctx;
    st_stream_id e = sid(id);
    uint64_t ord = l->xnode_base + 1 +
                   (l->xnode_pos < RDB_STREAM_NODE_ENTRIES
                        ? l->xnode_pos
                        : RDB_STREAM_NODE_ENTRIES - 1);
    int rc;

    if (xl_open(l))
        return 1;
    l->xnode_pos++;
    if ((rc = st_stream_add(l->t, &l->o, &e, ord, 2 * n, xl_field, (void *)fv)))
        return failed(l, rc);
    return element_done(l);
}

static int xl_meta(void *ctx, const rdb_stream_meta *m)
{
    srv_rdbkey_load *l = ctx;
    st_stream_meta sm;
    int rc;

    if (xl_open(l))
        return 1;
    memset(&sm, 0, sizeof sm);
    sm.last = sid(&m->last);
    sm.max_deleted = sid(&m->max_deleted);
    sm.entries_added = m->entries_added;
    sm.ngroups = m->groups;
    sm.next_group = m->groups;
    sm.last_ordinal = l->xnode_end;
    if ((rc = st_stream_meta_put(l->t, &l->o, &sm)))
        return failed(l, rc);
    return 0;
}

/* Groups are numbered in the order they come, and their consumers
 * likewise; every count is the decoder's, which checks them. */
static int xl_group(void *ctx, const uint8_t *name, size_t len,
                    const rdb_stream_id *last, int64_t entries_read,
                    uint64_t pending, uint64_t consumers)
{
    srv_rdbkey_load *l = ctx;
    st_stream_group g;
    int rc;

    memset(&g, 0, sizeof g);
    g.num = l->xgroup++;
    g.last = sid(last);
    g.entries_read = entries_read;
    g.pending = pending;
    g.consumers = consumers;
    g.next_consumer = consumers;
    l->xconsumer = 0;
    if ((rc = st_stream_group_put(l->t, &l->o, name, len, &g)))
        return failed(l, rc);
    return element_done(l);
}

static int xl_consumer(void *ctx, const uint8_t *name, size_t len,
                       int64_t seen_time, uint64_t pending)
{
    srv_rdbkey_load *l = ctx;
    st_stream_consumer cons = { l->xconsumer++, seen_time, pending };
    int rc;

    if ((rc = st_stream_consumer_put(l->t, &l->o, l->xgroup - 1, name, len,
                                     &cons)))
        return failed(l, rc);
    return element_done(l);
}

static int xl_pel(void *ctx, const rdb_stream_id *id, int64_t delivery_time,
                  uint64_t delivery_count)
{
    srv_rdbkey_load *l = ctx;
    st_stream_pel p = { l->xconsumer - 1, delivery_time, delivery_count };
    st_stream_id e = sid(id);
    int rc;

    if ((rc = st_stream_pel_put(l->t, &l->o, l->xgroup - 1, &e, &p,
                                UINT64_MAX)))
        return failed(l, rc);
    return element_done(l);
}

static const rdb_stream_sink xl_sink = {
    .node = xl_node,
    .entry = xl_entry,
    .meta = xl_meta,
    .group = xl_group,
    .consumer = xl_consumer,
    .pel = xl_pel,
};

const rdb_sink *srv_rdbkey_load_sink(srv_rdbkey_load *l, rdb_sink *s)
{
    memset(s, 0, sizeof *s);
    s->ctx = l;
    s->string = ld_string;
    s->begin = ld_begin;
    s->elem = ld_elem;
    s->pair = ld_pair;
    s->scored = ld_scored;
    s->stream = &xl_sink;
    return s;
}

int srv_rdbkey_load_finish(srv_rdbkey_load *l)
{
    int rc;

    if (!l->opened)
        return 0;
    if ((rc = st_coll_save(l->t, &l->o, l->now)))
        return rc;
    if (l->o.type == ST_TYPE_STREAM)
        st_stream_signal(l->t, &l->o);
    if (l->expire_at)
        return st_keyspace_expire_set(l->t, l->k, l->now, l->expire_at);
    return 0;
}
