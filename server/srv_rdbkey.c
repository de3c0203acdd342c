/*
 * srv_rdbkey.c - a stored key serialised as an RDB object, and an RDB
 * object written into a key (srv_rdbkey.h).
 */
#include "server/srv_rdbkey.h"
#include "rdb/rdb_err.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"
#include "storage/st_list.h"
#include "storage/st_set.h"
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

const rdb_sink *srv_rdbkey_load_sink(srv_rdbkey_load *l, rdb_sink *s)
{
    memset(s, 0, sizeof *s);
    s->ctx = l;
    s->string = ld_string;
    s->begin = ld_begin;
    s->elem = ld_elem;
    s->pair = ld_pair;
    s->scored = ld_scored;
    return s;
}

int srv_rdbkey_load_finish(srv_rdbkey_load *l)
{
    int rc;

    if (!l->opened)
        return 0;
    if ((rc = st_coll_save(l->t, &l->o, l->now)))
        return rc;
    if (l->expire_at)
        return st_keyspace_expire_set(l->t, l->k, l->now, l->expire_at);
    return 0;
}
