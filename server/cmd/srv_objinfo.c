/*
 * srv_objinfo.c - Redis's view of a key's value (srv_objinfo.h): encoding
 * names by Redis 7.0's rules and limits (the *-max-listpack-* and
 * set-max-intset-entries directives), shared-integer reference counts,
 * and MEMORY USAGE computed over the sizes Redis's structures would take:
 * robj 16 bytes, sds headers by length, listpack entries, intsets, dict
 * tables, quicklist nodes, each allocation rounded to jemalloc's classes.
 */
#include "server/cmd/srv_objinfo.h"
#include "server/srv_heritage.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_list.h"
#include "storage/st_set.h"
#include "storage/st_string.h"
#include "storage/st_zset.h"

#include <stdio.h>
#include <string.h>

/* Redis's object sizes (64-bit build of 7.0). */
#define ROBJ_SIZE 16
#define DICT_ENTRY_SIZE 24
#define DICT_SIZE 56
#define DICT_MIN_SLOTS 4
#define POINTER_SIZE 8
#define QUICKLIST_SIZE 40
#define QUICKLIST_NODE_SIZE 40
#define ZSET_SIZE 16
#define ZSKIPLIST_SIZE 32
#define ZSKIPLIST_MAXLEVEL 32
#define ZSKIPLIST_NODE_BASE 24  /* member, score, backward */
#define ZSKIPLIST_LEVEL_SIZE 16 /* forward, span */
#define INTSET_HEADER 8
#define EMBSTR_MAX 44
#define INT_STR_MAX 20
#define SHARED_INTEGERS 10000
#define SHARED_REFCOUNT 2147483647LL
/* listpack: total bytes u32, count u16, then entries, then 0xff. */
#define LP_HEADER 6
#define LP_END 1
#define LP_STR6_MAX 63
#define LP_STR12_MAX 4095
/* quicklist: bytes a node's listpack may hold for fill -1 .. -5, and the
 * estimate of an entry's overhead it adds when deciding. */
#define QL_SIZE_ESTIMATE_OVERHEAD 8
#define QL_SAFETY_LIMIT 8192
#define QL_FILL_LEVELS 5
static const size_t ql_fill_bytes[QL_FILL_LEVELS] = { 4096, 8192, 16384, 32768,
                                                      65536 };
/* jemalloc: the tiny class, the quantum-spaced classes up to 128, then
 * four classes per doubling. */
#define JE_TINY 8
#define JE_QUANTUM 16
#define JE_QUANTUM_MAX 128
#define JE_CLASSES_PER_DOUBLING_LG 2

uint64_t srv_objinfo_alloc_size(uint64_t n)
{
    if (n <= JE_TINY)
        return JE_TINY;
    if (n <= JE_QUANTUM_MAX)
        return (n + JE_QUANTUM - 1) & ~(uint64_t)(JE_QUANTUM - 1);
    int lg = 63 - __builtin_clzll(n - 1); /* 2^lg < n <= 2^(lg+1) */
    uint64_t step = ((uint64_t)1 << lg) >> JE_CLASSES_PER_DOUBLING_LG;
    return (n + step - 1) / step * step;
}

/* The allocation of an sds string of len bytes made by sdsnewlen. */
static uint64_t sds_alloc(uint64_t len)
{
    uint64_t hdr = len == 0           ? 3
                   : len < 32         ? 1
                   : len < 256        ? 3
                   : len < 65536      ? 5
                   : len < 1ull << 32 ? 9
                                      : 17;
    return srv_objinfo_alloc_size(hdr + len + 1);
}

static int is_int(const uint8_t *p, size_t len, long long *v)
{
    return len <= INT_STR_MAX && srv_util_str2ll((const char *)p, len, v);
}

/* The bytes of one listpack entry (its encoding, data and backlen). */
static uint64_t lp_entry(const uint8_t *p, size_t len)
{
    long long v;
    uint64_t e;

    if (is_int(p, len, &v))
        e = v >= 0 && v <= 127                      ? 1
            : v >= -4096 && v <= 4095               ? 2
            : v >= -32768 && v <= 32767             ? 3
            : v >= -8388608 && v <= 8388607         ? 4
            : v >= -2147483648LL && v <= 2147483647 ? 5
                                                    : 9;
    else
        e = len <= LP_STR6_MAX    ? 1 + len
            : len <= LP_STR12_MAX ? 2 + len
                                  : 5 + len;
    return e + (e <= 127        ? 1
                : e < 16383     ? 2
                : e < 2097151   ? 3
                : e < 268435455 ? 4
                                : 5);
}

/* The text Redis keeps a zset score as in a listpack (d2string). */
static int score_text(double d, char *buf, size_t cap)
{
    const double min = -4503599627370495.0, max = 4503599627370496.0;

    if (d == 0)
        return snprintf(buf, cap, 1.0 / d < 0 ? "-0" : "0");
    if (d > min && d < max && d == (double)(long long)d)
        return snprintf(buf, cap, "%lld", (long long)d);
    return srv_util_d2str(buf, cap, d);
}

static uint64_t dict_slots(uint64_t n)
{
    uint64_t s = DICT_MIN_SLOTS;

    while (s < n)
        s <<= 1;
    return s;
}

/* ------------------------------------------------------------------ */
/* walking a collection */

typedef struct walk {
    long long limit_entries; /* listpack: most entries */
    long long limit_value;   /* listpack: longest element */
    int fits;                /* still within the listpack limits */
    int all_ints;            /* set: every member an integer */
    long long min, max;      /* set: the integers' range */
    uint64_t lp_bytes;       /* the listpack it would be */
    /* sampled big encoding */
    long long samples, seen;
    uint64_t sampled;
} walk;

static void walk_value(walk *w, const uint8_t *p, size_t len)
{
    if ((long long)len > w->limit_value)
        w->fits = 0;
    w->lp_bytes += lp_entry(p, len);
}

static int hash_elem(void *ctx, const uint8_t *f, size_t fl, const uint8_t *v,
                     size_t vl)
{
    walk *w = ctx;

    walk_value(w, f, fl);
    walk_value(w, v, vl);
    if (w->samples == 0 || w->seen < w->samples) {
        w->sampled += DICT_ENTRY_SIZE + sds_alloc(fl) + sds_alloc(vl);
        w->seen++;
    }
    return 0;
}

static int set_elem(void *ctx, const uint8_t *m, size_t ml, const uint8_t *v,
                    size_t vl)
{
    walk *w = ctx;
    long long n;

    (void)v;
    (void)vl;
    if (!is_int(m, ml, &n))
        w->all_ints = 0;
    else {
        w->min = n < w->min ? n : w->min;
        w->max = n > w->max ? n : w->max;
    }
    if (w->samples == 0 || w->seen < w->samples) {
        w->sampled += DICT_ENTRY_SIZE + sds_alloc(ml);
        w->seen++;
    }
    return 0;
}

static int zset_elem(void *ctx, const uint8_t *m, size_t ml, double s)
{
    walk *w = ctx;
    char buf[SRV_DSTR_SIZE];
    int n = score_text(s, buf, sizeof buf);

    walk_value(w, m, ml);
    w->lp_bytes += lp_entry((const uint8_t *)buf, (size_t)n);
    if (w->samples == 0 || w->seen < w->samples) {
        /* a node of one level: the most common */
        w->sampled += sds_alloc(ml) + DICT_ENTRY_SIZE +
                      srv_objinfo_alloc_size(ZSKIPLIST_NODE_BASE +
                                             ZSKIPLIST_LEVEL_SIZE);
        w->seen++;
    }
    return 0;
}

/* The quicklist a list would be: nodes filled in push order. */
typedef struct qlist {
    size_t node_limit;     /* listpack bytes a node may reach */
    long long count_limit; /* or entries, for a positive fill */
    uint64_t nodes;
    uint64_t cur_bytes; /* the last node's listpack */
    long long cur_count;
    long long samples;
    uint64_t sampled, seen;
    uint64_t elems; /* elements walked */
} qlist;

static void ql_close(qlist *q)
{
    if (!q->cur_count)
        return;
    q->nodes++;
    if (q->samples == 0 || (long long)q->seen < q->samples) {
        q->sampled += QUICKLIST_NODE_SIZE +
                      srv_objinfo_alloc_size(q->cur_bytes);
        q->seen++;
    }
    q->cur_bytes = LP_HEADER + LP_END;
    q->cur_count = 0;
}

static int list_elem(void *ctx, const uint8_t *p, size_t len)
{
    qlist *q = ctx;
    uint64_t want = q->cur_bytes + len + QL_SIZE_ESTIMATE_OVERHEAD;
    int fits = q->count_limit
                   ? q->cur_count < q->count_limit && want <= QL_SAFETY_LIMIT
                   : want <= q->node_limit;

    if (q->cur_count && !fits) {
        ql_close(q);
        /* Enough nodes seen: the rest is extrapolated. */
        if (q->samples && (long long)q->seen >= q->samples)
            return 1;
    }
    q->cur_bytes += lp_entry(p, len);
    q->cur_count++;
    q->elems++;
    return 0;
}

/* ------------------------------------------------------------------ */

/* Walk about `count` elements of o (SIZE_MAX: all). */
static int walk_coll(struct st_txn *t, const st_obj *o, size_t count, walk *w)
{
    uint64_t next;

    switch (o->type) {
    case ST_TYPE_HASH: return st_hash_scan(t, o, 0, count, hash_elem, w, &next);
    case ST_TYPE_SET: return st_set_scan(t, o, 0, count, set_elem, w, &next);
    case ST_TYPE_ZSET: return st_zset_scan(t, o, 0, count, zset_elem, w, &next);
    default: return 0;
    }
}

/* Open the collection of `r` (under `k`), then walk it unless it is too
 * big for its compact encoding; then only the first `samples` elements
 * (0: all) are looked at, and with samples < 0 none. */
static int inspect(struct st_txn *t, st_keyref *k, const st_rec *r, int64_t now,
                   long long samples, st_obj *o, walk *w)
{
    const srv_config *cfg = srv_her.cfg;
    long long entries;
    int rc;

    if ((rc = st_coll_open(t, k, r->type, now, o)))
        return rc;
    memset(w, 0, sizeof *w);
    w->fits = 1;
    w->all_ints = 1;
    w->min = INT64_MAX;
    w->max = INT64_MIN;
    w->lp_bytes = LP_HEADER + LP_END;
    switch (r->type) {
    case ST_TYPE_HASH:
        entries = cfg->hash_max_listpack_entries;
        w->limit_value = cfg->hash_max_listpack_value;
        break;
    case ST_TYPE_ZSET:
        entries = cfg->zset_max_listpack_entries;
        w->limit_value = cfg->zset_max_listpack_value;
        break;
    case ST_TYPE_SET:
        entries = cfg->set_max_intset_entries;
        w->limit_value = INT64_MAX;
        break;
    default: return 0;
    }
    w->limit_entries = entries;
    w->samples = samples > 0 ? samples : 0;
    if ((long long)o->c.card > entries) {
        w->fits = 0;
        w->all_ints = 0;
        if (samples < 0)
            return 0;
        return walk_coll(t, o, samples ? (size_t)samples : SIZE_MAX, w);
    }
    return walk_coll(t, o, SIZE_MAX, w);
}

int srv_objinfo_is_intset(struct st_txn *t, const st_obj *o)
{
    walk w;
    uint64_t next;
    int rc;

    if ((long long)o->c.card > srv_her.cfg->set_max_intset_entries)
        return 0;
    memset(&w, 0, sizeof w);
    w.all_ints = 1;
    w.min = INT64_MAX;
    w.max = INT64_MIN;
    w.samples = 1;
    rc = st_set_scan(t, o, 0, SIZE_MAX, set_elem, &w, &next);
    return rc ? rc : w.all_ints;
}

static const char *string_encoding(struct st_txn *t, const st_rec *r)
{
    uint64_t len = st_string_len(r);
    long long v;

    (void)t;
    switch (st_string_enc(r)) {
    case ST_STRING_ENC_RAW: return "raw";
    case ST_STRING_ENC_NOINT: return len <= EMBSTR_MAX ? "embstr" : "raw";
    default:
        if (!st_string_is_chunked(r) && is_int(r->payload, r->payload_len, &v))
            return "int";
        return len <= EMBSTR_MAX ? "embstr" : "raw";
    }
}

int srv_objinfo_encoding(struct st_txn *t, st_keyref *k, const st_rec *r,
                         int64_t now, const char **name)
{
    st_obj o;
    walk w;
    int rc;

    switch (r->type) {
    case ST_TYPE_STRING: *name = string_encoding(t, r); return 0;
    case ST_TYPE_LIST: *name = "quicklist"; return 0;
    case ST_TYPE_STREAM: *name = "stream"; return 0;
    case ST_TYPE_SET:
    case ST_TYPE_HASH:
    case ST_TYPE_ZSET:
        if ((rc = inspect(t, k, r, now, -1, &o, &w)))
            return rc;
        if (r->type == ST_TYPE_SET)
            *name = w.all_ints ? "intset" : "hashtable";
        else if (r->type == ST_TYPE_HASH)
            *name = w.fits ? "listpack" : "hashtable";
        else
            *name = w.fits ? "listpack" : "skiplist";
        return 0;
    default: *name = "unknown"; return 0;
    }
}

long long srv_objinfo_refcount(struct st_txn *t, const st_rec *r)
{
    long long v;

    if (r->type == ST_TYPE_STRING && !strcmp(string_encoding(t, r), "int") &&
        is_int(r->payload, r->payload_len, &v) && v >= 0 && v < SHARED_INTEGERS)
        return SHARED_REFCOUNT;
    return 1;
}

static uint64_t string_memory(struct st_txn *t, const st_rec *r)
{
    const char *enc = string_encoding(t, r);
    uint64_t len = st_string_len(r);

    if (!strcmp(enc, "int"))
        return ROBJ_SIZE;
    if (!strcmp(enc, "embstr"))
        return srv_objinfo_alloc_size(ROBJ_SIZE + 3 + len + 1);
    return ROBJ_SIZE + sds_alloc(len);
}

static uint64_t intset_bytes(const walk *w, uint64_t card)
{
    int width = w->min >= -32768 && w->max <= 32767               ? 2
                : w->min >= -2147483648LL && w->max <= 2147483647 ? 4
                                                                  : 8;
    return srv_objinfo_alloc_size(INTSET_HEADER + card * (uint64_t)width);
}

/* Redis's estimate from the sampled elements' mean. */
static uint64_t extrapolate(uint64_t sampled, uint64_t seen, uint64_t card)
{
    return seen ? (uint64_t)((double)sampled / (double)seen * (double)card) : 0;
}

static int list_memory(struct st_txn *t, const st_obj *o, long long samples,
                       uint64_t *out)
{
    long long fill = srv_her.cfg->list_max_listpack_size;
    qlist q;
    int rc;

    memset(&q, 0, sizeof q);
    q.samples = samples;
    q.cur_bytes = LP_HEADER + LP_END;
    if (fill >= 0)
        q.count_limit = fill ? fill : 1;
    else
        q.node_limit =
            ql_fill_bytes[-fill - 1 < QL_FILL_LEVELS ? -fill - 1 : 1];
    if ((rc = st_list_range(t, o, 0, o->c.card, 0, list_elem, &q)))
        return rc;
    if (q.elems == o->c.card)
        ql_close(&q); /* the last node */
    /* The part not walked fills nodes as the walked part did. */
    if (q.elems < o->c.card && q.elems && q.nodes) {
        uint64_t per_node = q.elems / q.nodes;
        uint64_t rest = o->c.card - q.elems;
        q.nodes += (rest + per_node - 1) / (per_node ? per_node : 1);
    }
    *out = ROBJ_SIZE + QUICKLIST_SIZE + extrapolate(q.sampled, q.seen, q.nodes);
    return 0;
}

int srv_objinfo_memory(struct st_txn *t, st_keyref *k, const st_rec *r,
                       int64_t now, long long samples, uint64_t *bytes)
{
    uint64_t v = 0, card;
    st_obj o;
    walk w;
    int rc = 0;

    switch (r->type) {
    case ST_TYPE_STRING: v = string_memory(t, r); break;
    case ST_TYPE_LIST:
        if ((rc = st_coll_open(t, k, r->type, now, &o)) == 0)
            rc = list_memory(t, &o, samples, &v);
        break;
    case ST_TYPE_SET:
    case ST_TYPE_HASH:
    case ST_TYPE_ZSET:
        if ((rc = inspect(t, k, r, now, samples, &o, &w)))
            break;
        card = o.c.card;
        if (r->type == ST_TYPE_SET && w.all_ints)
            v = ROBJ_SIZE + intset_bytes(&w, card);
        else if (r->type != ST_TYPE_SET && w.fits)
            v = ROBJ_SIZE + srv_objinfo_alloc_size(w.lp_bytes);
        else if (r->type == ST_TYPE_ZSET)
            v = ROBJ_SIZE + ZSET_SIZE + ZSKIPLIST_SIZE + DICT_SIZE +
                POINTER_SIZE * dict_slots(card) +
                srv_objinfo_alloc_size(ZSKIPLIST_NODE_BASE +
                                       ZSKIPLIST_MAXLEVEL *
                                           ZSKIPLIST_LEVEL_SIZE) +
                extrapolate(w.sampled, w.seen, card);
        else
            v = ROBJ_SIZE + DICT_SIZE + POINTER_SIZE * dict_slots(card) +
                extrapolate(w.sampled, w.seen, card);
        break;
    default: v = ROBJ_SIZE;
    }
    if (rc)
        return rc;
    *bytes = v + sds_alloc(k->len) + DICT_ENTRY_SIZE;
    return 0;
}
