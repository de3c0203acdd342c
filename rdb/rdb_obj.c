/*
 * rdb_obj.c - decoding RDB objects of every encoding into a sink, and
 * encoding values as Redis 7.0 does.
 *
 * Decoding reads a plain encoding (string, list, set, zset, zset2,
 * hash) element by element straight from the reader, and a compact one
 * (zipmap, ziplist, intset, listpack, quicklist nodes) as one blob walked
 * with rdb_pack. A collection's `begin` is sent with its first element,
 * so an empty one (RDB_EEMPTY) never begins.
 */
#include "rdb/rdb_obj.h"
#include "rdb/rdb_crc64.h"
#include "rdb/rdb_err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCORE_TEXT_MAX 128
#define BYTE_BITS 8
/* Doubles whose integer value prints exactly (Redis's d2string range). */
#define EXACT_INT_MIN (-4503599627370495.0)
#define EXACT_INT_MAX 4503599627370496.0
#define SCORE_BUF 32
/* What Redis 7.0 adds to an element's length to estimate its listpack
 * entry when it decides whether a quicklist node takes it. */
#define RDB_QL_OVERHEAD 8

const rdb_limits rdb_limits_default = {
    .hash_entries = 512,
    .hash_value = 64,
    .zset_entries = 128,
    .zset_value = 64,
    .set_intset = 512,
    .list_node_bytes = 8192,
};

int rdb_obj_is_stream(int type)
{
    return type == RDB_TYPE_STREAM_LISTPACKS ||
           type == RDB_TYPE_STREAM_LISTPACKS_2 ||
           type == RDB_TYPE_STREAM_LISTPACKS_3;
}

int rdb_obj_kind(int type, const char **what)
{
    *what = NULL;
    switch (type) {
    case RDB_TYPE_STRING: return RDB_KIND_STRING;
    case RDB_TYPE_LIST:
    case RDB_TYPE_LIST_ZIPLIST:
    case RDB_TYPE_LIST_QUICKLIST:
    case RDB_TYPE_LIST_QUICKLIST_2: return RDB_KIND_LIST;
    case RDB_TYPE_SET:
    case RDB_TYPE_SET_INTSET:
    case RDB_TYPE_SET_LISTPACK: return RDB_KIND_SET;
    case RDB_TYPE_ZSET:
    case RDB_TYPE_ZSET_2:
    case RDB_TYPE_ZSET_ZIPLIST:
    case RDB_TYPE_ZSET_LISTPACK: return RDB_KIND_ZSET;
    case RDB_TYPE_HASH:
    case RDB_TYPE_HASH_ZIPMAP:
    case RDB_TYPE_HASH_ZIPLIST:
    case RDB_TYPE_HASH_LISTPACK: return RDB_KIND_HASH;
    case RDB_TYPE_MODULE_PRE_GA:
    case RDB_TYPE_MODULE_2: *what = "module value"; return RDB_EUNSUPPORTED;
    default:
        if (rdb_obj_is_stream(type)) {
            *what = "stream";
            return RDB_EUNSUPPORTED;
        }
        return RDB_ECORRUPT;
    }
}

void rdb_scratch_free(rdb_scratch *sc)
{
    rdb_buf_free(&sc->a);
    rdb_buf_free(&sc->b);
    rdb_buf_free(&sc->blob);
}

/* ---- decoding ---- */

typedef struct dec {
    rdb_reader *r;
    const rdb_sink *s;
    rdb_scratch *sc;
    int kind;
    uint64_t hint;
    int hint_set; /* the hint is settled (quicklists: unknown) */
    int begun;
    uint64_t n; /* elements passed on */
} dec;

static int refused(dec *d)
{
    return rdb_reader_fail(d->r, RDB_ESINK, "the value was refused");
}

static int begin_once(dec *d)
{
    if (d->begun)
        return 0;
    d->begun = 1;
    if (d->s->begin && d->s->begin(d->s->ctx, d->kind, d->hint))
        return refused(d);
    return 0;
}

static int emit_elem(dec *d, const uint8_t *p, size_t n)
{
    int rc;

    if ((rc = begin_once(d)))
        return rc;
    d->n++;
    if (d->s->elem && d->s->elem(d->s->ctx, p, n))
        return refused(d);
    return 0;
}

static int emit_pair(dec *d, const uint8_t *f, size_t fn, const uint8_t *v,
                     size_t vn)
{
    int rc;

    if ((rc = begin_once(d)))
        return rc;
    d->n++;
    if (d->s->pair && d->s->pair(d->s->ctx, f, fn, v, vn))
        return refused(d);
    return 0;
}

static int emit_scored(dec *d, const uint8_t *m, size_t mn, double score)
{
    int rc;

    if (isnan(score))
        return rdb_reader_fail(d->r, RDB_ECORRUPT,
                               "a sorted set member with a NaN score");
    if ((rc = begin_once(d)))
        return rc;
    d->n++;
    if (d->s->scored && d->s->scored(d->s->ctx, m, mn, score))
        return refused(d);
    return 0;
}

static int finish(dec *d)
{
    if (d->n == 0)
        return rdb_reader_fail(d->r, RDB_EEMPTY, "an empty %s",
                               d->kind == RDB_KIND_LIST   ? "list"
                               : d->kind == RDB_KIND_SET  ? "set"
                               : d->kind == RDB_KIND_ZSET ? "sorted set"
                                                          : "hash");
    if (d->s->end && d->s->end(d->s->ctx))
        return refused(d);
    return 0;
}

/* An announced count, sanity-checked: every element takes a byte. */
static int read_count(dec *d, uint64_t *n)
{
    int rc = rdb_read_len(d->r, n, NULL);

    if (rc)
        return rc;
    if (d->r->size != UINT64_MAX && *n > d->r->size)
        return rdb_reader_fail(d->r, RDB_ECORRUPT,
                               "a count of %llu elements in %llu bytes",
                               (unsigned long long)*n,
                               (unsigned long long)d->r->size);
    d->hint = *n;
    return 0;
}

static int plain_list_or_set(dec *d)
{
    uint64_t n;
    const uint8_t *p;
    size_t len;
    int rc;

    if ((rc = read_count(d, &n)))
        return rc;
    for (uint64_t i = 0; i < n; i++)
        if ((rc = rdb_read_string(d->r, &d->sc->a, &p, &len)) ||
            (rc = emit_elem(d, p, len)))
            return rc;
    return finish(d);
}

static int plain_zset(dec *d, int binary)
{
    uint64_t n;
    const uint8_t *p;
    size_t len;
    double score;
    int rc;

    if ((rc = read_count(d, &n)))
        return rc;
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = rdb_read_string(d->r, &d->sc->a, &p, &len)))
            return rc;
        rc = binary ? rdb_read_double_bin(d->r, &score)
                    : rdb_read_double_text(d->r, &score);
        if (rc || (rc = emit_scored(d, p, len, score)))
            return rc;
    }
    return finish(d);
}

static int plain_hash(dec *d)
{
    uint64_t n;
    const uint8_t *f, *v;
    size_t fn, vn;
    int rc;

    if ((rc = read_count(d, &n)))
        return rc;
    for (uint64_t i = 0; i < n; i++)
        if ((rc = rdb_read_string(d->r, &d->sc->a, &f, &fn)) ||
            (rc = rdb_read_string(d->r, &d->sc->b, &v, &vn)) ||
            (rc = emit_pair(d, f, fn, v, vn)))
            return rc;
    return finish(d);
}

static int bad_blob(dec *d, const char *what)
{
    return rdb_reader_fail(d->r, RDB_ECORRUPT, "a malformed %s", what);
}

/* A score stored in a ziplist or listpack entry (integer or text). */
static int item_score(const rdb_pack_item *it, double *d)
{
    char buf[SCORE_TEXT_MAX + 1], *end;

    if (it->is_int) {
        *d = (double)it->v;
        return 0;
    }
    if (it->len == 0 || it->len > SCORE_TEXT_MAX)
        return -1;
    memcpy(buf, it->s, it->len);
    buf[it->len] = '\0';
    *d = strtod(buf, &end);
    return end == buf + it->len ? 0 : -1;
}

/*
 * Walk one blob of pack kind `pk`: single elements (lists, sets), or
 * pairs (hashes: field, value; zsets: member, score). `what` names the
 * blob in errors.
 */
static int walk_blob(dec *d, int pk, const uint8_t *blob, size_t len,
                     const char *what)
{
    rdb_pack_iter it;
    rdb_pack_item a, b;
    char ta[RDB_LL_MAX], tb[RDB_LL_MAX];
    const uint8_t *s1, *s2;
    size_t n1, n2;
    int rc, pairs = d->kind == RDB_KIND_HASH || d->kind == RDB_KIND_ZSET;

    if (rdb_pack_open(&it, pk, blob, len))
        return bad_blob(d, what);
    if (!d->hint_set && it.declared != UINT64_MAX)
        d->hint = pairs ? it.declared / 2 : it.declared;
    d->hint_set = 1;
    for (;;) {
        if ((rc = rdb_pack_next(&it, &a)) < 0)
            return bad_blob(d, what);
        if (rc == 0)
            return 0;
        rdb_pack_item_text(&a, ta, &s1, &n1);
        if (!pairs) {
            if ((rc = emit_elem(d, s1, n1)))
                return rc;
            continue;
        }
        if (rdb_pack_next(&it, &b) != 1)
            return bad_blob(d, what);
        if (d->kind == RDB_KIND_HASH) {
            rdb_pack_item_text(&b, tb, &s2, &n2);
            rc = emit_pair(d, s1, n1, s2, n2);
        } else {
            double score;
            if (item_score(&b, &score))
                return rdb_reader_fail(d->r, RDB_ECORRUPT,
                                       "a sorted set score that is not a "
                                       "number in a %s",
                                       what);
            rc = emit_scored(d, s1, n1, score);
        }
        if (rc)
            return rc;
    }
}

static int read_blob(dec *d, const uint8_t **p, size_t *n)
{
    return rdb_read_string(d->r, &d->sc->blob, p, n);
}

static int one_blob(dec *d, int pk, const char *what)
{
    const uint8_t *p;
    size_t n;
    int rc;

    if ((rc = read_blob(d, &p, &n)) || (rc = walk_blob(d, pk, p, n, what)))
        return rc;
    return finish(d);
}

/* Quicklist: nodes of ziplists (v1) or containers of listpacks or plain
 * elements (v2); empty nodes are skipped, as Redis does. */
static int quicklist(dec *d, int v2)
{
    uint64_t nodes, container = RDB_QL_PACKED;
    const uint8_t *p;
    size_t n;
    int rc;

    if ((rc = rdb_read_len(d->r, &nodes, NULL)))
        return rc;
    d->hint = 0;
    d->hint_set = 1;
    for (uint64_t i = 0; i < nodes; i++) {
        if (v2 && (rc = rdb_read_len(d->r, &container, NULL)))
            return rc;
        if (container != RDB_QL_PLAIN && container != RDB_QL_PACKED)
            return rdb_reader_fail(d->r, RDB_ECORRUPT,
                                   "a quicklist node container %llu",
                                   (unsigned long long)container);
        if ((rc = read_blob(d, &p, &n)))
            return rc;
        if (container == RDB_QL_PLAIN)
            rc = emit_elem(d, p, n);
        else
            rc = walk_blob(d, v2 ? RDB_PACK_LISTPACK : RDB_PACK_ZIPLIST, p, n,
                           v2 ? "quicklist listpack" : "quicklist ziplist");
        if (rc)
            return rc;
    }
    return finish(d);
}

int rdb_obj_decode(rdb_reader *r, int type, const rdb_sink *s, rdb_scratch *sc)
{
    const char *what;
    int kind = rdb_obj_kind(type, &what);
    dec d = { .r = r, .s = s, .sc = sc, .kind = kind };
    const uint8_t *p;
    size_t n;
    int rc;

    if (kind == RDB_EUNSUPPORTED)
        return rdb_reader_fail(r, kind, "a %s (type %d)", what, type);
    if (kind < 0)
        return rdb_reader_fail(r, RDB_ECORRUPT, "unknown object type %d", type);
    switch (type) {
    case RDB_TYPE_STRING:
        if ((rc = rdb_read_string(r, &sc->a, &p, &n)))
            return rc;
        if (s->string && s->string(s->ctx, p, n))
            return refused(&d);
        return 0;
    case RDB_TYPE_LIST:
    case RDB_TYPE_SET: return plain_list_or_set(&d);
    case RDB_TYPE_ZSET: return plain_zset(&d, 0);
    case RDB_TYPE_ZSET_2: return plain_zset(&d, 1);
    case RDB_TYPE_HASH: return plain_hash(&d);
    case RDB_TYPE_HASH_ZIPMAP: return one_blob(&d, RDB_PACK_ZIPMAP, "zipmap");
    case RDB_TYPE_LIST_ZIPLIST:
    case RDB_TYPE_ZSET_ZIPLIST:
    case RDB_TYPE_HASH_ZIPLIST:
        return one_blob(&d, RDB_PACK_ZIPLIST, "ziplist");
    case RDB_TYPE_SET_INTSET: return one_blob(&d, RDB_PACK_INTSET, "intset");
    case RDB_TYPE_HASH_LISTPACK:
    case RDB_TYPE_ZSET_LISTPACK:
    case RDB_TYPE_SET_LISTPACK:
        return one_blob(&d, RDB_PACK_LISTPACK, "listpack");
    case RDB_TYPE_LIST_QUICKLIST: return quicklist(&d, 0);
    case RDB_TYPE_LIST_QUICKLIST_2: return quicklist(&d, 1);
    default:
        return rdb_reader_fail(r, RDB_ECORRUPT, "unknown object type %d", type);
    }
}

int rdb_obj_skip(rdb_reader *r, int type, rdb_scratch *sc)
{
    static const rdb_sink none = { 0 };

    return rdb_obj_decode(r, type, &none, sc);
}

/* ---- encoding ---- */

void rdb_enc_init(rdb_enc *e)
{
    memset(e, 0, sizeof *e);
    rdb_writer_mem(&e->side, 1);
}

void rdb_enc_fini(rdb_enc *e)
{
    rdb_buf_free(&e->pack);
    rdb_writer_fini(&e->side);
    free(e->ints);
    e->ints = NULL;
    e->ints_cap = 0;
}

/* The type byte and, in a file, the key name. */
static int head(rdb_writer *w, int type, const void *key, size_t klen)
{
    int rc = rdb_put_u8(w, (uint8_t)type);

    if (rc == 0 && key)
        rc = rdb_put_string(w, key, klen);
    return rc;
}

int rdb_enc_string(rdb_writer *w, const void *key, size_t klen, const void *p,
                   size_t n)
{
    int rc = head(w, RDB_TYPE_STRING, key, klen);

    return rc ? rc : rdb_put_string(w, p, n);
}

/* A score as Redis 7.0 writes it in a listpack (integers as integers). */
static size_t score_text(double d, char *buf)
{
    if (isinf(d))
        return (size_t)snprintf(buf, SCORE_BUF, d > 0 ? "inf" : "-inf");
    if (d == 0)
        return (size_t)snprintf(buf, SCORE_BUF, signbit(d) ? "-0" : "0");
    if (d > EXACT_INT_MIN && d < EXACT_INT_MAX && d == (double)(long long)d)
        return (size_t)snprintf(buf, SCORE_BUF, "%lld", (long long)d);
    return (size_t)snprintf(buf, SCORE_BUF, "%.17g", d);
}

int rdb_enc_begin(rdb_enc *e, rdb_writer *w, const rdb_limits *lim, int kind,
                  uint64_t count, const void *key, size_t klen)
{
    e->w = w;
    e->lim = lim;
    e->key = key;
    e->klen = klen;
    e->kind = kind;
    e->count = count;
    e->added = 0;
    e->generic = 0;
    e->intset = 0;
    e->too_long = 0;
    e->nodes = 0;
    e->pack.len = 0;
    if (count == 0)
        return RDB_EEMPTY;
    switch (kind) {
    case RDB_KIND_LIST:
        e->side.buf.len = 0;
        e->side.compress = w->compress;
        e->side.err = 0;
        return rdb_lp_begin(&e->lp, &e->pack);
    case RDB_KIND_SET:
        if (count <= lim->set_intset) {
            if (e->ints_cap < count) {
                int64_t *p = realloc(e->ints, (size_t)count * sizeof *p);
                if (!p)
                    return ENOMEM;
                e->ints = p;
                e->ints_cap = (size_t)count;
            }
            e->intset = 1;
            return 0;
        }
        e->generic = 1;
        return head(w, RDB_TYPE_SET, key, klen) ? w->err
                                                : rdb_put_len(w, count);
    case RDB_KIND_ZSET:
        if (count <= lim->zset_entries)
            return rdb_lp_begin(&e->lp, &e->pack);
        e->generic = 1;
        return head(w, RDB_TYPE_ZSET_2, key, klen) ? w->err
                                                   : rdb_put_len(w, count);
    case RDB_KIND_HASH:
        if (count <= lim->hash_entries)
            return rdb_lp_begin(&e->lp, &e->pack);
        e->generic = 1;
        return head(w, RDB_TYPE_HASH, key, klen) ? w->err
                                                 : rdb_put_len(w, count);
    default: return EINVAL;
    }
}

/* One quicklist node from the listpack being built. */
static int flush_node(rdb_enc *e)
{
    int rc;

    if ((rc = rdb_lp_end(&e->lp)) ||
        (rc = rdb_put_len(&e->side, RDB_QL_PACKED)) ||
        (rc = rdb_put_blob(&e->side, e->pack.data, e->pack.len)))
        return rc;
    e->nodes++;
    e->pack.len = 0;
    return rdb_lp_begin(&e->lp, &e->pack);
}

static int too_many(rdb_enc *e)
{
    return e->added >= e->count ? RDB_ECORRUPT : 0;
}

int rdb_enc_elem(rdb_enc *e, const void *p, size_t n)
{
    int64_t v;
    int rc;

    if ((rc = too_many(e)))
        return rc;
    if (e->kind == RDB_KIND_LIST) {
        /* Redis's rule: a node takes an element while its bytes plus the
         * element's length plus an overhead estimate stay in the limit. */
        if (e->lp.count > 0 &&
            rdb_lp_bytes(&e->lp) + n + RDB_QL_OVERHEAD >
                e->lim->list_node_bytes &&
            (rc = flush_node(e)))
            return rc;
        e->added++;
        return rdb_lp_add(&e->lp, p, n);
    }
    if (e->kind != RDB_KIND_SET)
        return EINVAL;
    if (e->intset) {
        if (rdb_string_to_ll(p, n, &v)) {
            e->ints[e->added++] = v;
            return 0;
        }
        /* Not all integers: the plain form, with the members so far. */
        char t[RDB_LL_MAX];
        e->intset = 0;
        e->generic = 1;
        if (head(e->w, RDB_TYPE_SET, e->key, e->klen) ||
            rdb_put_len(e->w, e->count))
            return e->w->err;
        for (uint64_t i = 0; i < e->added; i++) {
            size_t tn = rdb_ll_to_string(e->ints[i], t);
            if ((rc = rdb_put_string(e->w, t, tn)))
                return rc;
        }
    }
    e->added++;
    return rdb_put_string(e->w, p, n);
}

/* Past a compact limit: write the plain header and replay the pairs of
 * the listpack built so far. */
static int go_generic(rdb_enc *e, int type)
{
    rdb_pack_iter it;
    rdb_pack_item a, b;
    char ta[RDB_LL_MAX], tb[RDB_LL_MAX];
    const uint8_t *s1, *s2;
    size_t n1, n2;
    int rc;

    if ((rc = rdb_lp_end(&e->lp)))
        return rc;
    e->generic = 1;
    if (head(e->w, type, e->key, e->klen) || rdb_put_len(e->w, e->count))
        return e->w->err;
    if (rdb_pack_open(&it, RDB_PACK_LISTPACK, e->pack.data, e->pack.len))
        return RDB_ECORRUPT;
    while ((rc = rdb_pack_next(&it, &a)) == 1) {
        if (rdb_pack_next(&it, &b) != 1)
            return RDB_ECORRUPT;
        rdb_pack_item_text(&a, ta, &s1, &n1);
        if ((rc = rdb_put_string(e->w, s1, n1)))
            return rc;
        if (e->kind == RDB_KIND_HASH) {
            rdb_pack_item_text(&b, tb, &s2, &n2);
            rc = rdb_put_string(e->w, s2, n2);
        } else {
            double score;
            if (item_score(&b, &score))
                return RDB_ECORRUPT;
            rc = rdb_put_double_bin(e->w, score);
        }
        if (rc)
            return rc;
    }
    return rc < 0 ? rc : 0;
}

int rdb_enc_pair(rdb_enc *e, const void *f, size_t fn, const void *v, size_t vn)
{
    int rc;

    if (e->kind != RDB_KIND_HASH)
        return EINVAL;
    if ((rc = too_many(e)))
        return rc;
    if (!e->generic && (fn > e->lim->hash_value || vn > e->lim->hash_value) &&
        (rc = go_generic(e, RDB_TYPE_HASH)))
        return rc;
    e->added++;
    if (!e->generic)
        return (rc = rdb_lp_add(&e->lp, f, fn)) ? rc
                                                : rdb_lp_add(&e->lp, v, vn);
    return (rc = rdb_put_string(e->w, f, fn)) ? rc
                                              : rdb_put_string(e->w, v, vn);
}

int rdb_enc_scored(rdb_enc *e, const void *m, size_t mn, double score)
{
    char t[SCORE_BUF];
    int rc;

    if (e->kind != RDB_KIND_ZSET)
        return EINVAL;
    if ((rc = too_many(e)))
        return rc;
    /* A member past the value limit: still buffered (there are at most
     * zset_entries), written in the plain form at the end. */
    if (!e->generic && mn > e->lim->zset_value)
        e->too_long = 1;
    e->added++;
    if (!e->generic)
        return (rc = rdb_lp_add(&e->lp, m, mn))
                   ? rc
                   : rdb_lp_add(&e->lp, t, score_text(score, t));
    return (rc = rdb_put_string(e->w, m, mn)) ? rc
                                              : rdb_put_double_bin(e->w, score);
}

/* The buffered sorted set in the plain form, highest score first (the
 * order Redis writes it in). */
static int zset_plain_from_pack(rdb_enc *e)
{
    rdb_pack_iter it;
    rdb_pack_item *items;
    char t[RDB_LL_MAX];
    const uint8_t *s;
    size_t n = 0, len;
    double score;
    int rc;

    if ((rc = rdb_lp_end(&e->lp)))
        return rc;
    if (!(items = malloc(2 * (size_t)e->count * sizeof *items)))
        return ENOMEM;
    rc = rdb_pack_open(&it, RDB_PACK_LISTPACK, e->pack.data, e->pack.len);
    while (rc == 0 && n < 2 * e->count &&
           (rc = rdb_pack_next(&it, &items[n])) == 1) {
        n++;
        rc = 0;
    }
    if (rc < 0 || n != 2 * e->count) {
        free(items);
        return RDB_ECORRUPT;
    }
    if ((rc = head(e->w, RDB_TYPE_ZSET_2, e->key, e->klen)) ||
        (rc = rdb_put_len(e->w, e->count)))
        goto out;
    for (size_t i = n; i >= 2 && rc == 0; i -= 2) {
        rdb_pack_item_text(&items[i - 2], t, &s, &len);
        if (item_score(&items[i - 1], &score)) {
            rc = RDB_ECORRUPT;
            break;
        }
        if ((rc = rdb_put_string(e->w, s, len)) == 0)
            rc = rdb_put_double_bin(e->w, score);
    }
out:
    free(items);
    return rc;
}

static int cmp_ll(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

int rdb_enc_end(rdb_enc *e)
{
    rdb_writer *w = e->w;
    int rc;

    if (e->added != e->count)
        return RDB_ECORRUPT;
    if (e->generic)
        return w->err;
    switch (e->kind) {
    case RDB_KIND_LIST:
        if (e->lp.count > 0 && (rc = flush_node(e)))
            return rc;
        if (e->side.err)
            return e->side.err;
        if ((rc = head(w, RDB_TYPE_LIST_QUICKLIST_2, e->key, e->klen)) ||
            (rc = rdb_put_len(w, e->nodes)))
            return rc;
        return rdb_put(w, e->side.buf.data, e->side.buf.len);
    case RDB_KIND_SET:
        qsort(e->ints, (size_t)e->added, sizeof *e->ints, cmp_ll);
        e->pack.len = 0;
        if ((rc = rdb_intset_build(&e->pack, e->ints, (size_t)e->added)) ||
            (rc = head(w, RDB_TYPE_SET_INTSET, e->key, e->klen)))
            return rc;
        return rdb_put_blob(w, e->pack.data, e->pack.len);
    case RDB_KIND_ZSET:
        if (e->too_long)
            return zset_plain_from_pack(e);
        /* fall through */
    case RDB_KIND_HASH:
        if ((rc = rdb_lp_end(&e->lp)) ||
            (rc = head(w,
                       e->kind == RDB_KIND_ZSET ? RDB_TYPE_ZSET_LISTPACK
                                                : RDB_TYPE_HASH_LISTPACK,
                       e->key, e->klen)))
            return rc;
        return rdb_put_blob(w, e->pack.data, e->pack.len);
    default: return EINVAL;
    }
}

/* ---- DUMP payload frame ---- */

int rdb_dump_finish(rdb_writer *w)
{
    uint8_t ver[2] = { RDB_VERSION & 0xff, (RDB_VERSION >> BYTE_BITS) & 0xff };
    int rc = rdb_put(w, ver, sizeof ver);

    return rc ? rc : rdb_put_le64(w, rdb_writer_crc(w));
}

int rdb_dump_verify(const uint8_t *p, size_t n)
{
    const uint8_t *t;
    uint64_t crc = 0;
    unsigned ver;

    if (n < RDB_DUMP_TRAILER)
        return RDB_ETRUNC;
    t = p + n - RDB_DUMP_TRAILER;
    ver = (unsigned)t[0] | ((unsigned)t[1] << BYTE_BITS);
    if (ver > RDB_VERSION)
        return RDB_EVERSION;
    for (int i = 7; i >= 0; i--)
        crc = (crc << BYTE_BITS) | t[2 + i];
    return rdb_crc64(0, p, n - 8) == crc ? 0 : RDB_ECHECKSUM;
}
