/*
 * check_st_rank: unit tests of the order statistics (storage/st_rank.h)
 * through the zset, set and hash calls that use them.
 *
 * Structure: every invariant of the count nodes (st_rank_verify) after
 * seeded random inserts, deletes and score changes, and at the edges -
 * built at ST_RANK_SMALL + 1, dropped at SMALL, a root grown and
 * collapsed, long members cut to node keys, an aborted transaction, a
 * COPY. Answers: ranks from both ends and the element at every rank
 * against a sorted model, ZCOUNT / ZLEXCOUNT against the model, the
 * element at every hash-order position of a set. Randomness: single
 * picks uniform by a chi-square test over a set whose hash gaps are very
 * uneven (the old gap-weighted picker fails it), positive-count samples
 * distinct, uniform per element and not runs of neighbours.
 */
#include "t/unit/unit_st.h"
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_coll.h"
#include "storage/st_elem.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_hash.h"
#include "storage/st_keyspace.h"
#include "storage/st_rank.h"
#include "storage/st_set.h"
#include "storage/st_txn.h"
#include "storage/st_zset.h"

#define NOW UNIT_ST_NOW
#define TIMEOUT_S 120
#define NAME_MAX_LEN 64

#define MODEL_IDS 3000 /* member universe of the random test */
#define MODEL_OPS 12000
#define MODEL_SCORES 400 /* few scores: many ties */
#define MODEL_CHECK_EVERY 1000
#define MODEL_PROBES 60
#define GROW_N 9000 /* ascending inserts: a third level */
#define GROW_VERIFY_EVERY 97
#define EVERY_N 300
#define SET_EVERY_N 15000 /* three levels */
#define LONG_EVERY_N 400
#define COUNT_N 1200
#define COUNT_PROBES 300
#define LEX_N 600
#define LEX_LEN 4
#define LEX_LETTERS 6
#define LONG_N 200
#define LONG_LEN 600
#define LONG_SET_LEN 490 /* inline, but longer than a node suffix */

#define PICK_CLUSTER 150 /* members crowded in a sliver of hashes */
#define PICK_SPREAD 50
#define PICK_N (PICK_CLUSTER + PICK_SPREAD)
#define PICK_SLIVER 1000       /* the cluster's share: 1 / PICK_SLIVER */
#define PICK_CANDIDATES 400000 /* names tried to fill the cluster */
#define PICK_PER_CELL 100
/* chi-square, 199 degrees of freedom, p = 1e-6 (Wilson-Hilferty). */
#define PICK_CHI2_MAX 309.0

#define SAMPLE_N 1000
#define SAMPLE_SMALL_K 10 /* by positions (k < n / ST_RANK_DENSE) */
#define SAMPLE_SMALL_TRIES 2000
#define SAMPLE_BIG_K 200 /* one selection pass */
#define SAMPLE_BIG_TRIES 300
/* chi-square, 999 degrees of freedom, p = 1e-6 (Wilson-Hilferty). */
#define SAMPLE_CHI2_MAX 1226.0
#define SEED_STEP 0x9e3779b97f4a7c15ull

/* Each test runs in a fresh environment (unit_st.h) with this write
 * transaction open. */
static st_txn *t;

static void txn_setup(void) { t = unit_st_wbegin(); }

/* Runs before the environment's teardown (Check: teardowns in reverse). */
static void txn_teardown(void)
{
    if (t)
        st_txn_abort(&t);
}

/* A deterministic stream for the tests (splitmix64). */
static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += SEED_STEP);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void open_new(st_keyref *k, const char *name, int type, st_obj *o)
{
    st_codec_keyref_init(k, 0, name, strlen(name));
    ck_assert_int_eq(st_coll_open(t, k, type, NOW, o), ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_create(t, o), 0);
}

/* Check the count nodes of `o` (db: ST_DBI_ZSCORES, _SETS, _HASHES);
 * returns their number of levels. */
static unsigned verify(const st_obj *o, int db)
{
    st_rank r = { t->txn, t->env->dbi[db], o->c.id };
    unsigned levels = 0;
    int rc = st_rank_verify(&r, o->c.card, &levels);

    ck_assert_msg(rc == 0, "count nodes broken (rc %d) at card %llu", rc,
                  (unsigned long long)o->c.card);
    return levels;
}

/* ---- a zset against a sorted model ---- */

typedef struct zent {
    double score;
    char name[NAME_MAX_LEN];
    size_t len;
} zent;

static int zent_cmp(const void *a, const void *b)
{
    const zent *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c;

    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

typedef struct zmodel {
    double score[MODEL_IDS];
    int alive[MODEL_IDS];
    zent sorted[MODEL_IDS];
    int n;
} zmodel;

static size_t member_name(char *buf, int id)
{
    return (size_t)snprintf(buf, NAME_MAX_LEN, "m%d", id);
}

static void model_sort(zmodel *m)
{
    m->n = 0;
    for (int i = 0; i < MODEL_IDS; i++) {
        if (!m->alive[i])
            continue;
        zent *e = &m->sorted[m->n++];
        e->score = m->score[i];
        e->len = member_name(e->name, i);
    }
    qsort(m->sorted, (size_t)m->n, sizeof m->sorted[0], zent_cmp);
}

static int first_member(void *ctx, const uint8_t *mem, size_t len, double s)
{
    zent *e = ctx;

    ck_assert_uint_lt(len, NAME_MAX_LEN);
    memcpy(e->name, mem, len);
    e->len = len;
    e->score = s;
    return 1;
}

/* The element at rank `rank` (from the top with `rev`) by a rank walk. */
static zent at_rank(st_obj *o, uint64_t rank, int rev)
{
    st_zrange r;
    zent e;
    uint64_t n;

    memset(&r, 0, sizeof r);
    memset(&e, 0, sizeof e);
    r.by = ST_ZBY_RANK;
    r.rev = rev;
    r.start = rank;
    r.count = 1;
    ck_assert_int_eq(st_zset_walk(t, o, &r, 0, first_member, &e, &n), 0);
    ck_assert_uint_eq(n, 1);
    return e;
}

static void check_rank_of(st_obj *o, const zmodel *m, int i)
{
    const zent *e = &m->sorted[i];
    uint64_t rank;
    double s;

    ck_assert_int_eq(st_zset_rank(t, o, e->name, e->len, 0, &rank, &s), 0);
    ck_assert_uint_eq(rank, (uint64_t)i);
    ck_assert(s == e->score);
    ck_assert_int_eq(st_zset_rank(t, o, e->name, e->len, 1, &rank, &s), 0);
    ck_assert_uint_eq(rank, (uint64_t)(m->n - 1 - i));
}

static void check_at_rank(st_obj *o, const zmodel *m, int i)
{
    zent got = at_rank(o, (uint64_t)i, 0);

    ck_assert_int_eq(zent_cmp(&got, &m->sorted[i]), 0);
    got = at_rank(o, (uint64_t)(m->n - 1 - i), 1);
    ck_assert_int_eq(zent_cmp(&got, &m->sorted[i]), 0);
}

START_TEST(zset_random_ops_match_model)
{
    static zmodel m;
    st_keyref k;
    st_obj o;
    char name[NAME_MAX_LEN];
    int created;

    rng_state = 42;
    memset(&m, 0, sizeof m);
    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int op = 1; op <= MODEL_OPS; op++) {
        int id = (int)(rng() % MODEL_IDS);
        size_t len = member_name(name, id);
        /* Mostly adds (new members, or score changes far and near). */
        if (rng() % 10 < 6) {
            double s = m.alive[id] && rng() % 2
                           ? m.score[id] + (double)(rng() % 3)
                           : (double)(rng() % MODEL_SCORES);
            ck_assert_int_eq(st_zset_add(t, &o, name, len, s, &created), 0);
            ck_assert_int_eq(created, !m.alive[id]);
            m.alive[id] = 1;
            m.score[id] = s;
        } else {
            ck_assert_int_eq(st_zset_rem(t, &o, name, len),
                             m.alive[id] ? 0 : ST_ENOTFOUND);
            m.alive[id] = 0;
        }
        if (op % MODEL_CHECK_EVERY)
            continue;
        model_sort(&m);
        ck_assert_uint_eq(o.c.card, (uint64_t)m.n);
        verify(&o, ST_DBI_ZSCORES);
        for (int p = 0; p < MODEL_PROBES && m.n; p++) {
            check_rank_of(&o, &m, (int)(rng() % (uint64_t)m.n));
            check_at_rank(&o, &m, (int)(rng() % (uint64_t)m.n));
        }
    }
    model_sort(&m);
    ck_assert_uint_gt(verify(&o, ST_DBI_ZSCORES), 1);
    for (int i = 0; i < m.n; i++)
        check_rank_of(&o, &m, i);
}
END_TEST

/* Insert ascending to a third level, then delete in random order down
 * to nothing: splits at the right edge, merges, borrows and the root
 * collapsing, checked as they happen. */
START_TEST(zset_levels_grow_and_shrink)
{
    static int order[GROW_N];
    st_keyref k;
    st_obj o;
    char name[NAME_MAX_LEN];
    unsigned levels, most = 0;
    int created;

    rng_state = 7;
    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int i = 0; i < GROW_N; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_zset_add(t, &o, name, len, i, &created), 0);
        if (o.c.card <= ST_RANK_SMALL + 2 || i % GROW_VERIFY_EVERY == 0) {
            levels = verify(&o, ST_DBI_ZSCORES);
            ck_assert_uint_eq(levels == 0, o.c.card <= ST_RANK_SMALL);
        }
        order[i] = i;
    }
    most = verify(&o, ST_DBI_ZSCORES);
    ck_assert_uint_eq(most, 3);
    /* Every rank from both ends, through three levels. */
    for (int i = 0; i < GROW_N; i++) {
        zent got = at_rank(&o, (uint64_t)i, i % 2);
        int want = i % 2 ? GROW_N - 1 - i : i;
        ck_assert(got.score == want);
    }
    for (int i = GROW_N - 1; i > 0; i--) {
        int j = (int)(rng() % (uint64_t)(i + 1)), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (int i = 0; i < GROW_N; i++) {
        size_t len = member_name(name, order[i]);
        uint64_t rank;
        double s;
        ck_assert_int_eq(st_zset_rem(t, &o, name, len), 0);
        if (o.c.card <= ST_RANK_SMALL + 2 || i % GROW_VERIFY_EVERY == 0) {
            levels = verify(&o, ST_DBI_ZSCORES);
            ck_assert_uint_le(levels, most);
            most = levels;
            ck_assert_uint_eq(levels == 0, o.c.card <= ST_RANK_SMALL);
        }
        if (i + 1 < GROW_N && i % GROW_VERIFY_EVERY == 0) {
            /* The rank of a survivor is how many smaller ones survive. */
            int id = order[GROW_N - 1], below = 0;
            for (int j = i + 1; j < GROW_N; j++)
                below += order[j] < id;
            len = member_name(name, id);
            ck_assert_int_eq(st_zset_rank(t, &o, name, len, 0, &rank, &s), 0);
            ck_assert_uint_eq(rank, (uint64_t)below);
        }
    }
    ck_assert_uint_eq(o.c.card, 0);
}
END_TEST

/* The edge of the threshold: built at SMALL + 1, dropped at SMALL, and a
 * score change at SMALL + 1 (dropped and rebuilt within one call). */
START_TEST(threshold_build_and_drop)
{
    st_keyref k, ks;
    st_obj o, so;
    char name[NAME_MAX_LEN];
    int created;
    uint64_t rank;
    double s;

    open_new(&k, "z", ST_TYPE_ZSET, &o);
    open_new(&ks, "s", ST_TYPE_SET, &so);
    for (int i = 0; i < ST_RANK_SMALL; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_zset_add(t, &o, name, len, i, &created), 0);
        ck_assert_int_eq(st_set_add(t, &so, name, len, &created), 0);
    }
    ck_assert_uint_eq(verify(&o, ST_DBI_ZSCORES), 0);
    ck_assert_uint_eq(verify(&so, ST_DBI_SETS), 0);
    size_t len = member_name(name, ST_RANK_SMALL);
    ck_assert_int_eq(st_zset_add(t, &o, name, len, -1, &created), 0);
    ck_assert_int_eq(st_set_add(t, &so, name, len, &created), 0);
    ck_assert_uint_eq(verify(&o, ST_DBI_ZSCORES), 2);
    ck_assert_uint_eq(verify(&so, ST_DBI_SETS), 2);
    /* Move the lowest member to the top and back, at SMALL + 1. */
    for (int round = 0; round < 2; round++) {
        double to = round ? -1 : ST_RANK_SMALL * 2;
        ck_assert_int_eq(st_zset_add(t, &o, name, len, to, &created), 0);
        ck_assert_int_eq(created, 0);
        ck_assert_uint_eq(verify(&o, ST_DBI_ZSCORES), 2);
        ck_assert_int_eq(st_zset_rank(t, &o, name, len, 0, &rank, &s), 0);
        ck_assert_uint_eq(rank, round ? 0 : ST_RANK_SMALL);
    }
    ck_assert_int_eq(st_zset_rem(t, &o, name, len), 0);
    ck_assert_int_eq(st_set_rem(t, &so, name, len), 0);
    ck_assert_uint_eq(verify(&o, ST_DBI_ZSCORES), 0);
    ck_assert_uint_eq(verify(&so, ST_DBI_SETS), 0);
    len = member_name(name, 5);
    ck_assert_int_eq(st_zset_rank(t, &o, name, len, 0, &rank, &s), 0);
    ck_assert_uint_eq(rank, 5);
}
END_TEST

/* ---- every rank, every position ---- */

START_TEST(zset_every_rank)
{
    static zmodel m;
    const int sizes[] = { 10, EVERY_N };
    int created;

    rng_state = 3;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        st_keyref k;
        st_obj o;
        char key[NAME_MAX_LEN], name[NAME_MAX_LEN];
        memset(&m, 0, sizeof m);
        snprintf(key, sizeof key, "z%zu", z);
        open_new(&k, key, ST_TYPE_ZSET, &o);
        for (int i = 0; i < sizes[z]; i++) {
            size_t len = member_name(name, i);
            m.alive[i] = 1;
            m.score[i] = (double)(rng() % (uint64_t)sizes[z]) / 4;
            ck_assert_int_eq(st_zset_add(t, &o, name, len, m.score[i],
                                         &created),
                             0);
        }
        model_sort(&m);
        verify(&o, ST_DBI_ZSCORES);
        for (int i = 0; i < m.n; i++) {
            check_rank_of(&o, &m, i);
            check_at_rank(&o, &m, i);
        }
        ck_assert_int_eq(st_zset_rank(t, &o, "none", 4, 0, &(uint64_t){ 0 },
                                      &(double){ 0 }),
                         ST_ENOTFOUND);
    }
}
END_TEST

/* Names in scan order (samples test). */
typedef struct names {
    char (*v)[NAME_MAX_LEN];
    size_t *len;
    size_t n;
} names;

static int collect_name(void *ctx, const uint8_t *nm, size_t nl,
                        const uint8_t *val, size_t vl)
{
    names *s = ctx;

    ck_assert_uint_lt(nl, NAME_MAX_LEN);
    memcpy(s->v[s->n], nm, nl);
    s->len[s->n++] = nl;
    return 0;
}

/* Scan order against st_elem_at(): the p-th element scanned must be
 * the element at position p. */
typedef struct at_check {
    const st_obj *o;
    uint64_t p;
    const uint8_t *name;
    size_t len;
} at_check;

static int same_name(void *ctx, const uint8_t *nm, size_t nl,
                     const uint8_t *val, size_t vl)
{
    at_check *a = ctx;

    ck_assert_uint_eq(nl, a->len);
    ck_assert_int_eq(memcmp(nm, a->name, nl), 0);
    return 0;
}

static int check_at(void *ctx, const uint8_t *nm, size_t nl, const uint8_t *val,
                    size_t vl)
{
    at_check *a = ctx;

    a->name = nm;
    a->len = nl;
    ck_assert_int_eq(st_elem_at(t, ST_ELEM_SET, &a->o->c, a->p, same_name, a),
                     0);
    a->p++;
    return 0;
}

/* The element at every position of a set is the scan order's, for short
 * names and for names longer than a node key's suffix. */
START_TEST(set_element_at_every_position)
{
    const size_t lens[] = { 8, LONG_SET_LEN };
    const int sizes[] = { SET_EVERY_N, LONG_EVERY_N };
    const unsigned levels[] = { 3, 2 };
    char name[LONG_SET_LEN + 1];
    int created;

    rng_state = 5;
    for (size_t z = 0; z < sizeof lens / sizeof lens[0]; z++) {
        st_keyref k;
        st_obj o;
        at_check a = { &o, 0, NULL, 0 };
        uint64_t next;
        open_new(&k, z ? "long" : "short", ST_TYPE_SET, &o);
        for (int i = 0; i < sizes[z]; i++) {
            for (size_t j = 0; j < lens[z]; j++)
                name[j] = (char)('a' + rng() % 26);
            ck_assert_int_eq(st_set_add(t, &o, name, lens[z], &created), 0);
        }
        ck_assert_uint_eq(verify(&o, ST_DBI_SETS), levels[z]);
        ck_assert_int_eq(st_set_scan(t, &o, 0, SIZE_MAX, check_at, &a, &next),
                         0);
        ck_assert_uint_eq(a.p, o.c.card);
        ck_assert_int_eq(st_elem_at(t, ST_ELEM_SET, &o.c, o.c.card, same_name,
                                    &a),
                         ST_ENOTFOUND);
    }
}
END_TEST

/* Long zset members (digest-form keys, cut node keys), one score and a
 * shared 590-byte prefix, then many scores: ranks still by member. */
START_TEST(zset_long_members)
{
    static zent model[LONG_N];
    static char mem[LONG_N][LONG_LEN];
    st_keyref k;
    st_obj o;
    int created;

    rng_state = 11;
    for (int pass = 0; pass < 2; pass++) {
        char key[NAME_MAX_LEN];
        snprintf(key, sizeof key, "long%d", pass);
        open_new(&k, key, ST_TYPE_ZSET, &o);
        for (int i = 0; i < LONG_N; i++) {
            memset(mem[i], 'x', LONG_LEN);
            snprintf(mem[i] + LONG_LEN - 11, 11, "%010llu",
                     (unsigned long long)(rng() % 10000000000ull));
            double s = pass ? (double)(rng() % 7) : 0;
            ck_assert_int_eq(st_zset_add(t, &o, mem[i], LONG_LEN - 1, s,
                                         &created),
                             0);
            model[i].score = s;
            /* zent holds a short stand-in: the distinct tail decides. */
            memcpy(model[i].name, mem[i] + LONG_LEN - 11, 10);
            model[i].len = 10;
        }
        ck_assert_uint_eq(o.c.card, LONG_N);
        verify(&o, ST_DBI_ZSCORES);
        qsort(model, LONG_N, sizeof model[0], zent_cmp);
        for (int i = 0; i < LONG_N; i++) {
            char full[LONG_LEN];
            uint64_t rank;
            double s;
            memset(full, 'x', LONG_LEN);
            memcpy(full + LONG_LEN - 11, model[i].name, 10);
            ck_assert_int_eq(st_zset_rank(t, &o, full, LONG_LEN - 1, 0, &rank,
                                          &s),
                             0);
            ck_assert_uint_eq(rank, (uint64_t)i);
        }
        for (int i = 0; i < LONG_N; i += 2) {
            ck_assert_int_eq(st_zset_rem(t, &o, mem[i], LONG_LEN - 1), 0);
            verify(&o, ST_DBI_ZSCORES);
        }
    }
}
END_TEST

/* ---- ZCOUNT and ZLEXCOUNT ---- */

static int bytes_cmp(const char *a, size_t al, const st_zlex *b)
{
    size_t n = al < b->len ? al : b->len;
    int c = memcmp(a, b->p, n);

    return c ? c : (al > b->len) - (al < b->len);
}

/* Is member m within lex range r (the model's own comparison)? */
static int lex_in(const char *m, size_t ml, const st_zrange *r)
{
    int lo = r->lmin.kind == ST_ZLEX_MIN ||
             (r->lmin.kind == ST_ZLEX_INCL ? bytes_cmp(m, ml, &r->lmin) >= 0
                                           : bytes_cmp(m, ml, &r->lmin) > 0);
    int hi = r->lmax.kind == ST_ZLEX_MAX ||
             (r->lmax.kind == ST_ZLEX_INCL ? bytes_cmp(m, ml, &r->lmax) <= 0
                                           : bytes_cmp(m, ml, &r->lmax) < 0);

    return lo && hi;
}

START_TEST(zcount_and_zlexcount_match_model)
{
    static double scores[COUNT_N];
    static char lex[LEX_N][LEX_LEN];
    static size_t lexlen[LEX_N];
    st_keyref k, kl;
    st_obj o, ol;
    char name[NAME_MAX_LEN];
    int created;

    rng_state = 13;
    open_new(&k, "zc", ST_TYPE_ZSET, &o);
    for (int i = 0; i < COUNT_N; i++) {
        size_t len = member_name(name, i);
        scores[i] = (double)(rng() % (COUNT_N / 4)) - COUNT_N / 8;
        ck_assert_int_eq(st_zset_add(t, &o, name, len, scores[i], &created), 0);
    }
    for (int p = 0; p < COUNT_PROBES; p++) {
        double lo = (double)(rng() % (COUNT_N / 3)) - COUNT_N / 6;
        double hi = lo + (double)(rng() % (COUNT_N / 4));
        int loex = (int)(rng() % 2), hiex = (int)(rng() % 2);
        uint64_t want = 0, got;
        if (p % 10 == 0)
            lo = -INFINITY;
        if (p % 10 == 1)
            hi = INFINITY;
        for (int i = 0; i < COUNT_N; i++)
            want += (loex ? scores[i] > lo : scores[i] >= lo) &&
                    (hiex ? scores[i] < hi : scores[i] <= hi);
        ck_assert_int_eq(st_zset_count_score(t, &o, lo, loex, hi, hiex, &got),
                         0);
        ck_assert_uint_eq(got, want);
    }
    /* Lex: one score, members of up to LEX_LEN letters from "abcdef". */
    open_new(&kl, "zl", ST_TYPE_ZSET, &ol);
    int nlex = 0;
    for (int i = 0; i < LEX_N; i++) {
        size_t len = 1 + rng() % LEX_LEN;
        for (size_t j = 0; j < len; j++)
            lex[nlex][j] = (char)('a' + rng() % LEX_LETTERS);
        ck_assert_int_eq(st_zset_add(t, &ol, lex[nlex], len, 0, &created), 0);
        if (created)
            lexlen[nlex++] = len;
    }
    ck_assert_uint_eq(ol.c.card, (uint64_t)nlex);
    ck_assert_uint_gt(ol.c.card, ST_RANK_SMALL);
    for (int p = 0; p < COUNT_PROBES; p++) {
        char a[LEX_LEN], b[LEX_LEN];
        size_t al = 1 + rng() % LEX_LEN, bl = 1 + rng() % LEX_LEN;
        st_zrange r;
        uint64_t want = 0, got;
        for (size_t j = 0; j < LEX_LEN; j++) {
            a[j] = (char)('a' + rng() % LEX_LETTERS);
            b[j] = (char)('a' + rng() % LEX_LETTERS);
        }
        memset(&r, 0, sizeof r);
        r.by = ST_ZBY_LEX;
        r.limit = UINT64_MAX;
        r.lmin = (st_zlex){ rng() % 2 ? ST_ZLEX_INCL : ST_ZLEX_EXCL,
                            (const uint8_t *)a, al };
        r.lmax = (st_zlex){ rng() % 2 ? ST_ZLEX_INCL : ST_ZLEX_EXCL,
                            (const uint8_t *)b, bl };
        if (p % 10 == 0)
            r.lmin.kind = ST_ZLEX_MIN;
        if (p % 10 == 1)
            r.lmax.kind = ST_ZLEX_MAX;
        for (int i = 0; i < nlex; i++)
            want += lex_in(lex[i], lexlen[i], &r);
        ck_assert_int_eq(st_zset_count_lex(t, &ol, &r, &got), 0);
        ck_assert_uint_eq(got, want);
    }
}
END_TEST

/* ---- uniformity ---- */

/* The number in a name like "m123" or "u123". */
static int name_number(const char *name, size_t len)
{
    int i = 0;

    ck_assert_uint_gt(len, 1);
    for (size_t j = 1; j < len; j++)
        i = i * 10 + (name[j] - '0');
    return i;
}

/* Hits per cell of the picked elements: cell = map[number in name]. */
typedef struct tally {
    const int *map;
    int map_len;
    uint64_t *hits;
    int cell[SAMPLE_BIG_K];
    int n;
} tally;

static int tally_elem(void *ctx, const uint8_t *nm, size_t nl,
                      const uint8_t *val, size_t vl)
{
    tally *c = ctx;
    int i = name_number((const char *)nm, nl);

    ck_assert_int_lt(i, c->map_len);
    ck_assert_int_lt(c->n, SAMPLE_BIG_K);
    c->hits[c->map[i]]++;
    c->cell[c->n++] = c->map[i];
    return 0;
}

static int tally_z(void *ctx, const uint8_t *m, size_t ml, double s)
{
    return tally_elem(ctx, m, ml, NULL, 0);
}

static double chi2(const uint64_t *hits, int cells, double expect)
{
    double x = 0;

    for (int i = 0; i < cells; i++)
        x += ((double)hits[i] - expect) * ((double)hits[i] - expect) / expect;
    return x;
}

/*
 * Single random picks are uniform: members whose scan hashes crowd into
 * 1/PICK_SLIVER of the hash space next to a few spread ones (a picker
 * that lands on a random hash would almost never return the crowded
 * ones), over a set, a hash and a zset.
 */
START_TEST(single_picks_are_uniform)
{
    static int cell_of[PICK_CANDIDATES];
    static uint64_t hits[PICK_N];
    const uint64_t sliver = (UINT64_MAX >> 1) / PICK_SLIVER;
    int cluster = 0, spread = 0, created;
    st_keyref ks, kh, kz;
    st_obj so, ho, zo;

    open_new(&ks, "s", ST_TYPE_SET, &so);
    open_new(&kh, "h", ST_TYPE_HASH, &ho);
    open_new(&kz, "z", ST_TYPE_ZSET, &zo);
    for (int c = 0; cluster + spread < PICK_N; c++) {
        char nm[NAME_MAX_LEN];
        size_t len = (size_t)snprintf(nm, sizeof nm, "u%d", c);
        int near = st_elem_hash(nm, len) < sliver;
        ck_assert_int_lt(c, PICK_CANDIDATES);
        if (near ? cluster == PICK_CLUSTER : spread == PICK_SPREAD)
            continue;
        cell_of[c] = cluster + spread;
        cluster += near;
        spread += !near;
        ck_assert_int_eq(st_set_add(t, &so, nm, len, &created), 0);
        ck_assert_int_eq(st_hash_set(t, &ho, nm, len, "v", 1, 0, &created), 0);
        ck_assert_int_eq(st_zset_add(t, &zo, nm, len, c, &created), 0);
    }
    for (int kind = 0; kind < 3; kind++) {
        uint64_t draws = (uint64_t)PICK_N * PICK_PER_CELL;
        memset(hits, 0, sizeof hits);
        for (uint64_t d = 0; d < draws; d++) {
            uint64_t seed = d * SEED_STEP + (uint64_t)kind;
            tally c = { cell_of, PICK_CANDIDATES, hits, { 0 }, 0 };
            int rc = kind == 0 ? st_set_sample(t, &so, seed, 1, tally_elem, &c)
                     : kind == 1
                         ? st_hash_sample(t, &ho, seed, 1, tally_elem, &c)
                         : st_zset_sample(t, &zo, seed, 1, tally_z, &c);
            ck_assert_int_eq(rc, 0);
            ck_assert_int_eq(c.n, 1);
        }
        double x = chi2(hits, PICK_N, PICK_PER_CELL);
        ck_assert_msg(x < PICK_CHI2_MAX, "kind %d: chi-square %.1f", kind, x);
    }
}
END_TEST

/*
 * Positive-count samples: distinct members, each member as often as any
 * other over many samples (chi-square), and not runs of hash-order
 * neighbours; by positions (small k) and by one pass (big k).
 */
START_TEST(samples_are_distinct_uniform_not_runs)
{
    static uint64_t hits[SAMPLE_N];
    static int pos_of[SAMPLE_N];
    static char order[SAMPLE_N][NAME_MAX_LEN];
    static size_t olen[SAMPLE_N];
    const int ks[] = { SAMPLE_SMALL_K, SAMPLE_BIG_K };
    const int tries[] = { SAMPLE_SMALL_TRIES, SAMPLE_BIG_TRIES };
    names scan = { order, olen, 0 };
    st_keyref k;
    st_obj o;
    char name[NAME_MAX_LEN];
    uint64_t next;
    int created;

    open_new(&k, "s", ST_TYPE_SET, &o);
    for (int i = 0; i < SAMPLE_N; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_set_add(t, &o, name, len, &created), 0);
    }
    ck_assert_int_eq(st_set_scan(t, &o, 0, SIZE_MAX, collect_name, &scan,
                                 &next),
                     0);
    ck_assert_uint_eq(scan.n, SAMPLE_N);
    for (int p = 0; p < SAMPLE_N; p++)
        pos_of[name_number(order[p], olen[p])] = p;
    for (int v = 0; v < 2; v++) {
        int runs = 0;
        memset(hits, 0, sizeof hits);
        for (int s = 0; s < tries[v]; s++) {
            tally c = { pos_of, SAMPLE_N, hits, { 0 }, 0 };
            int seen[SAMPLE_N] = { 0 }, lo = SAMPLE_N, hi = -1;
            ck_assert_int_eq(st_set_sample(t, &o,
                                           (uint64_t)s * SEED_STEP +
                                               (uint64_t)v,
                                           (size_t)ks[v], tally_elem, &c),
                             0);
            ck_assert_int_eq(c.n, ks[v]);
            for (int j = 0; j < c.n; j++) {
                int p = c.cell[j];
                ck_assert_int_eq(seen[p], 0);
                seen[p] = 1;
                lo = p < lo ? p : lo;
                hi = p > hi ? p : hi;
            }
            runs += hi - lo + 1 == ks[v];
        }
        double x = chi2(hits, SAMPLE_N, (double)tries[v] * ks[v] / SAMPLE_N);
        ck_assert_msg(x < SAMPLE_CHI2_MAX, "k %d: chi-square %.1f", ks[v], x);
        ck_assert_int_le(runs, tries[v] / 100);
    }
}
END_TEST

typedef struct counter {
    uint64_t n;
} counter;

static int count_one(void *ctx, const uint8_t *nm, size_t nl,
                     const uint8_t *val, size_t vl)
{
    ((counter *)ctx)->n++;
    return 0;
}

START_TEST(sample_of_everything)
{
    st_keyref k;
    st_obj o;
    char name[NAME_MAX_LEN];
    int created;
    counter c = { 0 };

    open_new(&k, "s", ST_TYPE_SET, &o);
    ck_assert_int_eq(st_set_sample(t, &o, 1, 5, count_one, &c), ST_ENOTFOUND);
    for (int i = 0; i < SAMPLE_N; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_set_add(t, &o, name, len, &created), 0);
    }
    ck_assert_int_eq(st_set_sample(t, &o, 1, SAMPLE_N * 2, count_one, &c), 0);
    ck_assert_uint_eq(c.n, SAMPLE_N);
}
END_TEST

/* ---- transactions and copies ---- */

START_TEST(abort_and_copy_keep_counts_whole)
{
    st_keyref k, kc;
    st_obj o, oc;
    char name[NAME_MAX_LEN];
    int created;

    open_new(&k, "s", ST_TYPE_SET, &o);
    for (int i = 0; i < SAMPLE_N / 5; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_set_add(t, &o, name, len, &created), 0);
    }
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    /* Grow it in a transaction that is thrown away. */
    ck_assert_int_eq(st_txn_begin(unit_st_env, 1, &t), 0);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_SET, NOW, &o), 0);
    for (int i = SAMPLE_N / 5; i < SAMPLE_N; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_set_add(t, &o, name, len, &created), 0);
    }
    ck_assert_uint_eq(o.c.card, SAMPLE_N);
    verify(&o, ST_DBI_SETS);
    st_txn_abort(&t);
    ck_assert_int_eq(st_txn_begin(unit_st_env, 1, &t), 0);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_SET, NOW, &o), 0);
    ck_assert_uint_eq(o.c.card, SAMPLE_N / 5);
    ck_assert_uint_eq(verify(&o, ST_DBI_SETS), 2);
    /* A copy carries its own counts; changing it leaves the source's. */
    st_codec_keyref_init(&kc, 0, "copy", 4);
    ck_assert_int_eq(st_keyspace_copy(t, &k, &kc, NOW, 0), 0);
    ck_assert_int_eq(st_coll_open(t, &kc, ST_TYPE_SET, NOW, &oc), 0);
    ck_assert_uint_ne(oc.c.id, o.c.id);
    verify(&oc, ST_DBI_SETS);
    for (int i = 0; i < SAMPLE_N / 20; i++) {
        size_t len = member_name(name, i);
        ck_assert_int_eq(st_set_rem(t, &oc, name, len), 0);
    }
    verify(&oc, ST_DBI_SETS);
    verify(&o, ST_DBI_SETS);
}
END_TEST

static Suite *rank_suite(void)
{
    Suite *s = suite_create("st_rank");
    TCase *tc = tcase_create("structure");

    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, zset_random_ops_match_model);
    tcase_add_test(tc, zset_levels_grow_and_shrink);
    tcase_add_test(tc, threshold_build_and_drop);
    tcase_add_test(tc, zset_long_members);
    tcase_add_test(tc, abort_and_copy_keep_counts_whole);
    suite_add_tcase(s, tc);

    tc = tcase_create("answers");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, zset_every_rank);
    tcase_add_test(tc, set_element_at_every_position);
    tcase_add_test(tc, zcount_and_zlexcount_match_model);
    suite_add_tcase(s, tc);

    tc = tcase_create("random");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, single_picks_are_uniform);
    tcase_add_test(tc, samples_are_distinct_uniform_not_runs);
    tcase_add_test(tc, sample_of_everything);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rank_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
