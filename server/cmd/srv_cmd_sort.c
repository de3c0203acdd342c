/*
 * srv_cmd_sort.c - SORT and SORT_RO: the elements of a list, set or
 * sorted set, weighed by themselves or by the keys and hash fields a BY
 * pattern names, ordered numerically or (ALPHA) as strings, cut by LIMIT,
 * replied or turned by GET patterns, or stored as a list. Redis's rules
 * throughout: a BY without '*' means no sorting, numeric ties fall back
 * to the elements' bytes, ALPHA compares with the locale's collation
 * unless storing, missing weights weigh 0 (or sort first), a set sorted
 * for STORE is sorted by its members; the sort itself is the C library's
 * qsort, as Redis's is, so equal weights keep Redis's order too.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_objinfo.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"
#include "storage/st_list.h"
#include "storage/st_set.h"
#include "storage/st_string.h"
#include "storage/st_zset.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_ELEMS 64
#define FIRST_TEXT 1024
#define HASH_ARROW "->"
#define HASH_ARROW_LEN 2

static const char ERR_SCORES[] =
    "ERR One or more scores can't be converted into double";

/* Bytes kept for the sort: each piece followed by a NUL (strcoll, strtod
 * work on them as Redis's C strings). */
typedef struct text {
    char *p;
    size_t len, cap;
    int oom;
} text;

static size_t text_add(text *t, const void *p, size_t n)
{
    size_t at = t->len;

    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : FIRST_TEXT;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *q = realloc(t->p, cap);
        if (!q) {
            t->oom = 1;
            return 0;
        }
        t->p = q;
        t->cap = cap;
    }
    if (n)
        memcpy(t->p + t->len, p, n);
    t->p[t->len + n] = '\0';
    t->len += n + 1;
    return at;
}

typedef struct elem {
    size_t off, len; /* the element */
    double score;
    size_t cmp_off, cmp_len;
    int has_cmp; /* ALPHA BY: the pattern found a value */
} elem;

typedef struct sorting {
    text txt;
    elem *v;
    size_t n, cap;
    int desc, alpha, bypattern, store;
} sorting;

static int add_elem(void *ctx, const uint8_t *p, size_t len)
{
    sorting *s = ctx;
    size_t off;

    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : FIRST_ELEMS;
        elem *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            s->txt.oom = 1;
            return 1;
        }
        s->v = v;
        s->cap = cap;
    }
    off = text_add(&s->txt, p, len);
    if (s->txt.oom)
        return 1;
    s->v[s->n++] = (elem){ off, len, 0, 0, 0, 0 };
    return 0;
}

static int add_set_member(void *ctx, const uint8_t *m, size_t ml,
                          const uint8_t *v, size_t vl)
{
    (void)v;
    (void)vl;
    return add_elem(ctx, m, ml);
}

static int add_zset_member(void *ctx, const uint8_t *m, size_t ml, double s)
{
    (void)s;
    return add_elem(ctx, m, ml);
}

/* Binary comparison (memcmp, then the shorter first): Redis's
 * compareStringObjects. */
static int cmp_bytes(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);

    return r ? r : al < bl ? -1 : al > bl ? 1 : 0;
}

static int compare(const void *x, const void *y, void *ctx)
{
    const sorting *s = ctx;
    const elem *a = x, *b = y;
    const char *t = s->txt.p;
    int r;

    if (!s->alpha) {
        if (a->score != b->score)
            r = a->score > b->score ? 1 : -1;
        else
            r = cmp_bytes(t + a->off, a->len, t + b->off, b->len);
    } else if (s->bypattern) {
        if (!a->has_cmp || !b->has_cmp)
            r = a->has_cmp == b->has_cmp ? 0 : !a->has_cmp ? -1 : 1;
        else if (s->store)
            r = cmp_bytes(t + a->cmp_off, a->cmp_len, t + b->cmp_off,
                          b->cmp_len);
        else
            r = strcoll(t + a->cmp_off, t + b->cmp_off);
    } else if (s->store) {
        r = cmp_bytes(t + a->off, a->len, t + b->off, b->len);
    } else {
        r = strcoll(t + a->off, t + b->off);
    }
    return s->desc ? -r : r;
}

/*
 * The value a BY or GET pattern names for element e: "#" is e itself;
 * otherwise the first '*' (before any NUL, as Redis reads the pattern as
 * a C string) is replaced by e, and a "->field" after it (not empty)
 * picks a hash field. 1 found (*p, *len valid until the next storage
 * call), 0 none, or an error.
 */
static int pattern_value(srv_conn *c, struct st_txn *t, const srv_slice *pat,
                         const char *e, size_t elen, const uint8_t **p,
                         size_t *len, char **keybuf, size_t *keycap)
{
    const char *s = pat->ptr, *star, *arrow = NULL;
    size_t cstr = strnlen(s, pat->len), fieldlen = 0, pre, post, klen;
    st_keyref k;
    st_rec r;
    int rc;

    if (cstr >= 1 && s[0] == '#' && (cstr == 1)) {
        *p = (const uint8_t *)e;
        *len = elen;
        return 1;
    }
    if (!(star = memchr(s, '*', cstr)))
        return 0;
    for (const char *q = star + 1; q + HASH_ARROW_LEN <= s + cstr; q++)
        if (!memcmp(q, HASH_ARROW, HASH_ARROW_LEN)) {
            arrow = q;
            break;
        }
    if (arrow && arrow + HASH_ARROW_LEN < s + cstr)
        fieldlen = pat->len - (size_t)(arrow - s) - HASH_ARROW_LEN;
    else
        arrow = NULL;
    pre = (size_t)(star - s);
    post = pat->len - pre - 1 - (arrow ? fieldlen + HASH_ARROW_LEN : 0);
    klen = pre + elen + post;
    if (klen > *keycap) {
        char *q = realloc(*keybuf, klen ? klen : 1);
        if (!q)
            return ENOMEM;
        *keybuf = q;
        *keycap = klen;
    }
    memcpy(*keybuf, s, pre);
    memcpy(*keybuf + pre, e, elen);
    memcpy(*keybuf + pre + elen, star + 1, post);
    st_codec_keyref_init(&k, c->db, *keybuf, klen);
    rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
    if (rc == ST_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (arrow) {
        st_obj o;
        if (r.type != ST_TYPE_HASH)
            return 0;
        if ((rc = st_coll_open(t, &k, ST_TYPE_HASH, srv_cmd_now(c), &o)))
            return rc == ST_ENOTFOUND ? 0 : rc;
        rc = st_hash_get(t, &o, arrow + HASH_ARROW_LEN, fieldlen, p, len);
        return rc == ST_ENOTFOUND ? 0 : rc ? rc : 1;
    }
    if (r.type != ST_TYPE_STRING)
        return 0;
    return (rc = st_string_flat(t, &r, p, len)) ? rc : 1;
}

/* A weight as Redis reads it: strtod over the C string, refused when
 * something follows, out of range or NaN. */
static int weight(const char *p, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(p, &end);
    return !(end[0] != '\0' || errno == ERANGE || isnan(*out));
}

typedef struct sort_args {
    int desc, alpha, dontsort;
    long long limit_start, limit_count;
    int by;    /* argv index of the BY pattern, 0: none */
    int store; /* argv index of the STORE key, 0: none */
    int *gets; /* argv indexes of the GET patterns */
    int ngets;
} sort_args;

static int parse_or_reply(srv_conn *c, int readonly, sort_args *a)
{
    a->limit_count = -1;
    for (int j = 2; j < c->argc; j++) {
        const srv_slice *o = &c->argv[j];
        int left = c->argc - j - 1;
        if (srv_util_streq(o->ptr, o->len, "asc"))
            a->desc = 0;
        else if (srv_util_streq(o->ptr, o->len, "desc"))
            a->desc = 1;
        else if (srv_util_streq(o->ptr, o->len, "alpha"))
            a->alpha = 1;
        else if (srv_util_streq(o->ptr, o->len, "limit") && left >= 2) {
            if (srv_args_ll_or_reply(c, &c->argv[j + 1], &a->limit_start) ||
                srv_args_ll_or_reply(c, &c->argv[j + 2], &a->limit_count))
                return -1;
            j += 2;
        } else if (!readonly && srv_util_streq(o->ptr, o->len, "store") &&
                   left >= 1) {
            a->store = ++j;
        } else if (srv_util_streq(o->ptr, o->len, "by") && left >= 1) {
            const srv_slice *p = &c->argv[++j];
            a->by = j;
            a->dontsort = !memchr(p->ptr, '*', strnlen(p->ptr, p->len));
        } else if (srv_util_streq(o->ptr, o->len, "get") && left >= 1) {
            a->gets[a->ngets++] = ++j;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    return 0;
}

/* Sort a set's members as Redis's intset holds them (ascending integers). */
static int by_integer(const void *x, const void *y, void *ctx)
{
    const sorting *s = ctx;
    const elem *a = x, *b = y;
    long long va, vb;

    srv_util_str2ll(s->txt.p + a->off, a->len, &va);
    srv_util_str2ll(s->txt.p + b->off, b->len, &vb);
    return va < vb ? -1 : va > vb;
}

/* Load the elements to sort; *start and *end as Redis computes them. */
static int load(srv_conn *c, struct st_txn *t, st_obj *o, int found,
                const sort_args *a, sorting *s, long long *start,
                long long *end)
{
    long long len = found ? (long long)o->c.card : 0;
    uint64_t next;
    int rc = 0;

    *start = a->limit_start < 0 ? 0 : a->limit_start;
    if (a->limit_count < 0 || a->limit_count > LLONG_MAX - *start)
        *end = len - 1;
    else
        *end = *start + a->limit_count - 1;
    if (*start >= len) {
        *start = len - 1;
        *end = len - 2;
    }
    if (*end >= len)
        *end = len - 1;
    if (!found)
        return 0;
    if (a->dontsort && (o->type == ST_TYPE_LIST || o->type == ST_TYPE_ZSET)) {
        /* The native order, the LIMIT range only. */
        if (*end < *start)
            return 0;
        uint64_t from = (uint64_t)*start, count = (uint64_t)(*end - *start + 1);
        if (o->type == ST_TYPE_LIST)
            rc = st_list_range(t, o, a->desc ? (uint64_t)len - 1 - from : from,
                               count, a->desc, add_elem, s);
        else {
            st_zrange r = {
                .by = ST_ZBY_RANK, .rev = a->desc, .start = from, .count = count
            };
            uint64_t visited;
            rc = st_zset_walk(t, o, &r, 0, add_zset_member, s, &visited);
        }
        *end -= *start;
        *start = 0;
        return rc ? rc : s->txt.oom ? ENOMEM : 0;
    }
    switch (o->type) {
    case ST_TYPE_LIST:
        rc = st_list_range(t, o, 0, (uint64_t)len, 0, add_elem, s);
        break;
    case ST_TYPE_SET:
        rc = st_set_scan(t, o, 0, SIZE_MAX, add_set_member, s, &next);
        if (rc == 0 && !s->txt.oom && srv_objinfo_is_intset(t, o) == 1)
            qsort_r(s->v, s->n, sizeof *s->v, by_integer, s);
        break;
    default: {
        st_zrange r = { .by = ST_ZBY_RANK, .count = (uint64_t)len };
        uint64_t visited;
        rc = st_zset_walk(t, o, &r, 0, add_zset_member, s, &visited);
    }
    }
    return rc ? rc : s->txt.oom ? ENOMEM : 0;
}

/* Weigh every element (BY pattern or itself); *bad when one is not a
 * number (numeric sorting). */
static int weigh(srv_conn *c, struct st_txn *t, const sort_args *a, sorting *s,
                 int *bad, char **keybuf, size_t *keycap)
{
    for (size_t i = 0; i < s->n; i++) {
        elem *e = &s->v[i];
        const uint8_t *p;
        size_t len;
        int rc = 1;
        if (a->by) {
            rc = pattern_value(c, t, &c->argv[a->by], s->txt.p + e->off, e->len,
                               &p, &len, keybuf, keycap);
            if (rc < 0 || rc > 1)
                return rc;
            if (rc == 0)
                continue;
        }
        if (s->alpha) {
            if (a->by) {
                size_t off = text_add(&s->txt, p, len);
                if (s->txt.oom)
                    return ENOMEM;
                e = &s->v[i];
                e->cmp_off = off;
                e->cmp_len = len;
                e->has_cmp = 1;
            }
            continue;
        }
        if (a->by) {
            size_t off = text_add(&s->txt, p, len);
            if (s->txt.oom)
                return ENOMEM;
            if (!weight(s->txt.p + off, &e->score))
                *bad = 1;
            s->txt.len = off; /* only needed while parsed */
        } else if (!weight(s->txt.p + e->off, &e->score)) {
            *bad = 1;
        }
    }
    return 0;
}

/* What one output slot holds: element i, or GET pattern g's value. */
static int output(srv_conn *c, struct st_txn *t, const sort_args *a, sorting *s,
                  size_t i, int g, const uint8_t **p, size_t *len,
                  char **keybuf, size_t *keycap)
{
    const elem *e = &s->v[i];

    if (g < 0) {
        *p = (const uint8_t *)s->txt.p + e->off;
        *len = e->len;
        return 1;
    }
    return pattern_value(c, t, &c->argv[a->gets[g]], s->txt.p + e->off, e->len,
                         p, len, keybuf, keycap);
}

/* STORE: the outputs as a new list at argv[store] (none deletes it), and
 * Redis's event: "sortstore" on a stored list, "del" when an empty result
 * removed the key, none when there was no key. */
static int store_list(srv_conn *c, struct st_txn *t, const sort_args *a,
                      sorting *s, long long start, long long end, char **keybuf,
                      size_t *keycap, long long *n)
{
    text out = { 0 };
    size_t *offs = NULL, nout = 0;
    st_keyref dk;
    st_obj d;
    int rc = 0, existed = 0;

    *n = 0;
    if (end >= start) {
        size_t max = (size_t)(end - start + 1) *
                     (size_t)(a->ngets ? a->ngets : 1);
        if (!(offs = malloc(sizeof *offs * max)))
            return ENOMEM;
        /* Copy every value first: the writes below may move them. */
        for (long long i = start; i <= end && !rc; i++)
            for (int g = a->ngets ? 0 : -1; g < a->ngets && !rc; g++) {
                const uint8_t *p = NULL;
                size_t len = 0;
                rc = output(c, t, a, s, (size_t)i, g, &p, &len, keybuf, keycap);
                if (rc == 0 || rc == 1) {
                    offs[nout++] = text_add(&out, p, rc ? len : 0);
                    rc = out.oom ? ENOMEM : 0;
                }
            }
    }
    srv_key_ref(c, a->store, &dk);
    if (rc == 0) {
        rc = st_keyspace_delete(t, &dk, srv_cmd_now(c));
        existed = rc == 0;
        rc = rc == ST_ENOTFOUND ? 0 : rc;
    }
    if (rc == 0 && nout) {
        rc = st_coll_open(t, &dk, ST_TYPE_LIST, srv_cmd_now(c), &d);
        if (rc == ST_ENOTFOUND)
            rc = st_coll_create(t, &d);
        for (size_t i = 0; i < nout && !rc; i++) {
            size_t next = i + 1 < nout ? offs[i + 1] : out.len;
            rc = st_list_push(t, &d, 0, out.p + offs[i], next - offs[i] - 1);
        }
        if (rc == 0)
            rc = st_coll_save(t, &d, srv_cmd_now(c));
    }
    if (rc == 0 && nout)
        srv_notify_arg(c, SRV_NOTIFY_LIST, "sortstore", a->store);
    else if (rc == 0 && existed)
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", a->store);
    *n = (long long)nout;
    free(offs);
    free(out.p);
    return rc;
}

static void sort_generic(srv_conn *c, int readonly)
{
    static int collation_set;
    sort_args a = { 0 };
    sorting s = { 0 };
    char *keybuf = NULL;
    size_t keycap = 0;
    long long start, end, outlen;
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    int found = 0, bad = 0, rc;

    if (!collation_set) {
        /* Redis collates ALPHA sorts by the environment's locale. */
        setlocale(LC_COLLATE, "");
        collation_set = 1;
    }
    if (!(a.gets = malloc(sizeof *a.gets * (size_t)c->argc))) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    if (parse_or_reply(c, readonly, &a))
        goto out;
    t = a.store ? srv_txn_write_or_reply(c) : srv_txn_read_or_reply(c);
    if (!t)
        goto out;
    srv_key_ref(c, 1, &k);
    {
        st_rec r;
        rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == 0 && r.type != ST_TYPE_LIST && r.type != ST_TYPE_SET &&
            r.type != ST_TYPE_ZSET)
            rc = ST_EWRONGTYPE;
        if (rc == 0)
            rc = st_coll_open(t, &k, r.type, srv_cmd_now(c), &o);
        if (rc && rc != ST_ENOTFOUND) {
            srv_txn_error(c, rc);
            goto out;
        }
        found = rc == 0;
    }
    /* A set's order is its own: to store it (or, in Redis, in a script)
     * the members are sorted instead. */
    if (a.dontsort && found && o.type == ST_TYPE_SET && a.store) {
        a.dontsort = 0;
        a.alpha = 1;
        a.by = 0;
    }
    s.desc = a.desc;
    s.alpha = a.alpha;
    s.bypattern = a.by != 0;
    s.store = a.store != 0;
    if ((rc = load(c, t, &o, found, &a, &s, &start, &end)) ||
        (!a.dontsort && (rc = weigh(c, t, &a, &s, &bad, &keybuf, &keycap)))) {
        srv_txn_error(c, rc);
        goto out;
    }
    if (!a.dontsort && s.n > 1)
        qsort_r(s.v, s.n, sizeof *s.v, compare, &s);
    outlen = end >= start ? (end - start + 1) * (a.ngets ? a.ngets : 1) : 0;
    if (bad) {
        srv_reply_error(c, ERR_SCORES);
        goto out;
    }
    if (a.store) {
        long long n;
        if ((rc = store_list(c, t, &a, &s, start, end, &keybuf, &keycap, &n)))
            srv_txn_error(c, rc);
        else
            srv_reply_int(c, n);
        goto out;
    }
    size_t mark = c->out.len;
    srv_reply_array(c, outlen);
    for (long long i = start; i <= end; i++)
        for (int g = a.ngets ? 0 : -1; g < a.ngets; g++) {
            const uint8_t *p;
            size_t len;
            rc = output(c, t, &a, &s, (size_t)i, g, &p, &len, &keybuf, &keycap);
            if (rc == 1)
                srv_reply_bulk(c, p, len);
            else if (rc == 0)
                srv_reply_null(c);
            else {
                c->out.len = mark;
                srv_txn_error(c, rc);
                goto out;
            }
        }
out:
    free(a.gets);
    free(s.v);
    free(s.txt.p);
    free(keybuf);
}

void srv_cmd_sort(srv_conn *c) { sort_generic(c, 0); }
void srv_cmd_sort_ro(srv_conn *c) { sort_generic(c, 1); }
