/*
 * check_st_coll: unit tests of the collection storage (storage/st_elem.h,
 * st_hash.h, st_set.h, st_list.h, st_zset.h).
 *
 * Encodings: the order-preserving score encoding, the biased list
 * sequence, collection-id prefixes. Behaviour against a fresh temp-dir
 * environment per test: records and cardinality, names of 0, 1, 511, 512
 * and 1 MiB bytes, scans and samples, list edits against an array model,
 * zset walks by rank/score/lex both ways with deletes, and lazy freeing
 * of a detached collection.
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
#include "storage/st_list.h"
#include "storage/st_rank.h"
#include "storage/st_set.h"
#include "storage/st_txn.h"
#include "storage/st_zset.h"

#define NOW UNIT_ST_NOW
#define TIMEOUT_S 60
#define MIB (1024 * 1024)
#define MANY 2000
#define MODEL_MAX 64
#define FREE_CHUNK 100
#define SAMPLE_DRAWS 200
#define RANK_N 6000 /* dozens of count nodes */
#define RANK_KEEP 700
#define RANK_PROBES 300
#define RANK_SPREAD 300000 /* RANK_SPREAD * RANK_N fits an int */

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

/* ---- encodings ---- */

START_TEST(score_encoding_orders)
{
    const double v[] = {
        -INFINITY, -1e308, -2.5, -1, -1e-300, 0,     1e-300,
        0.5,       1,      1.1,  2,  1e17,    1e308, INFINITY
    };
    size_t n = sizeof v / sizeof v[0];
    uint8_t a[8], b[8];

    for (size_t i = 0; i < n; i++) {
        ck_assert(st_zset_score_dec(st_zset_score_enc(v[i])) == v[i]);
        if (i + 1 == n)
            break;
        st_codec_put_be64(a, st_zset_score_enc(v[i]));
        st_codec_put_be64(b, st_zset_score_enc(v[i + 1]));
        ck_assert_msg(memcmp(a, b, sizeof a) < 0, "%g < %g", v[i], v[i + 1]);
    }
    /* -0 and 0 encode alike: ties order by member, as Redis compares. */
    ck_assert_uint_eq(st_zset_score_enc(-0.0), st_zset_score_enc(0.0));
}
END_TEST

START_TEST(list_sequence_bias_orders)
{
    const int64_t s[] = { INT64_MIN, -1000000, -2,      -1,       0,
                          1,         2,        1000000, INT64_MAX };
    uint8_t a[ST_LIST_KEY_BYTES], b[ST_LIST_KEY_BYTES];

    for (size_t i = 0; i + 1 < sizeof s / sizeof s[0]; i++) {
        st_list_key(a, 7, s[i]);
        st_list_key(b, 7, s[i + 1]);
        ck_assert(memcmp(a, b, sizeof a) < 0);
        ck_assert(st_list_key_seq(a) == s[i]);
    }
    /* The id prefix dominates: every element of id 7 sorts before id 8. */
    st_list_key(a, 7, INT64_MAX);
    st_list_key(b, 8, INT64_MIN);
    ck_assert(memcmp(a, b, sizeof a) < 0);
}
END_TEST

/* ---- records ---- */

static void open_new(st_keyref *k, const char *name, int type, st_obj *o)
{
    st_codec_keyref_init(k, 0, name, strlen(name));
    ck_assert_int_eq(st_coll_open(t, k, type, NOW, o), ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_create(t, o), 0);
}

START_TEST(record_type_card_and_empty_delete)
{
    st_keyref k;
    st_obj o, o2;
    st_rec r;
    int created;

    open_new(&k, "h", ST_TYPE_HASH, &o);
    ck_assert_int_eq(st_hash_set(t, &o, "f", 1, "v", 1, 0, &created), 0);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(st_hash_set(t, &o, "f", 1, "w", 1, 0, &created), 0);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(st_hash_set(t, &o, "f", 1, "x", 1, 1, &created),
                     ST_EEXISTS);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_HASH);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_SET, NOW, &o2), ST_EWRONGTYPE);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o2), 0);
    ck_assert_uint_eq(o2.c.card, 1);
    ck_assert_uint_eq(o2.c.id, o.c.id);
    /* The TTL survives element writes. */
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + 5000), 0);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o2), 0);
    ck_assert_int_eq(st_hash_set(t, &o2, "g", 1, "v", 1, 0, &created), 0);
    ck_assert_int_eq(st_coll_save(t, &o2, NOW), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(r.expire_at, NOW + 5000);
    /* Emptied: the key disappears. */
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o2), 0);
    ck_assert_int_eq(st_hash_del(t, &o2, "f", 1), 0);
    ck_assert_int_eq(st_hash_del(t, &o2, "f", 1), ST_ENOTFOUND);
    ck_assert_int_eq(st_hash_del(t, &o2, "g", 1), 0);
    ck_assert_int_eq(st_coll_save(t, &o2, NOW), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), ST_ENOTFOUND);
}
END_TEST

START_TEST(names_of_every_length)
{
    const size_t lens[] = {
        0, 1, ST_ELEM_INLINE_MAX, ST_ELEM_INLINE_MAX + 1, 511, 512, 4096, MIB
    };
    size_t n = sizeof lens / sizeof lens[0];
    char *buf = malloc(MIB + 1);
    st_keyref k;
    st_obj o;
    int created;

    ck_assert_ptr_nonnull(buf);
    memset(buf, 'x', MIB);
    open_new(&k, "s", ST_TYPE_SET, &o);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(st_set_add(t, &o, buf, lens[i], &created), 0);
        ck_assert_int_eq(created, 1);
    }
    /* Names sharing a long prefix stay distinct. */
    buf[MIB - 1] = 'y';
    ck_assert_int_eq(st_set_has(t, &o, buf, MIB), 0);
    ck_assert_int_eq(st_set_add(t, &o, buf, MIB, &created), 0);
    ck_assert_int_eq(created, 1);
    buf[MIB - 1] = 'x';
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(st_set_has(t, &o, buf, lens[i]), 1);
    ck_assert_uint_eq(o.c.card, n + 1);
    ck_assert_int_eq(st_set_rem(t, &o, buf, MIB), 0);
    ck_assert_int_eq(st_set_has(t, &o, buf, MIB), 0);
    buf[MIB - 1] = 'y';
    ck_assert_int_eq(st_set_has(t, &o, buf, MIB), 1);
    free(buf);
}
END_TEST

typedef struct counter {
    size_t n;
    size_t bytes;
} counter;

static int count_elem(void *ctx, const uint8_t *name, size_t nlen,
                      const uint8_t *val, size_t vlen)
{
    counter *c = ctx;

    c->n++;
    c->bytes += nlen;
    return 0;
}

START_TEST(scan_and_sample_visit_all)
{
    st_keyref k;
    st_obj o;
    char name[32];
    int created;
    uint64_t cursor = 0, next;
    counter c = { 0, 0 };

    open_new(&k, "h", ST_TYPE_HASH, &o);
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(name, sizeof name, "field:%d", i);
        ck_assert_int_eq(st_hash_set(t, &o, name, (size_t)n, "v", 1, 0,
                                     &created),
                         0);
    }
    do {
        ck_assert_int_eq(st_hash_scan(t, &o, cursor, 10, count_elem, &c, &next),
                         0);
        cursor = next;
    } while (cursor);
    ck_assert_uint_eq(c.n, MANY);
    for (int i = 0; i < SAMPLE_DRAWS; i++) {
        counter s = { 0, 0 };
        ck_assert_int_eq(st_hash_sample(t, &o, (uint64_t)random() * 7919u, MANY,
                                        count_elem, &s),
                         0);
        ck_assert_uint_eq(s.n, MANY); /* distinct, all of them */
    }
}
END_TEST

/* ---- lists against an array model ---- */

typedef struct model {
    int v[MODEL_MAX * 4];
    int n;
} model;

static int collect_list(void *ctx, const uint8_t *val, size_t len)
{
    model *m = ctx;
    int x;

    ck_assert_uint_eq(len, sizeof x);
    memcpy(&x, val, sizeof x);
    m->v[m->n++] = x;
    return 0;
}

static void check_list(const st_obj *o, const model *want)
{
    model got = { { 0 }, 0 };

    ck_assert_uint_eq(o->c.card, (uint64_t)want->n);
    ck_assert_int_eq(st_list_range(t, o, 0, o->c.card, 0, collect_list, &got),
                     0);
    ck_assert_int_eq(got.n, want->n);
    for (int i = 0; i < want->n; i++)
        ck_assert_int_eq(got.v[i], want->v[i]);
}

START_TEST(list_edits_match_model)
{
    st_keyref k;
    st_obj o;
    model m = { { 0 }, 0 };
    long long removed;

    open_new(&k, "l", ST_TYPE_LIST, &o);
    for (int i = 0; i < MODEL_MAX; i++) {
        int x = i % 5, left = i % 2;
        ck_assert_int_eq(st_list_push(t, &o, left, &x, sizeof x), 0);
        if (left) {
            memmove(m.v + 1, m.v, sizeof m.v[0] * (size_t)m.n);
            m.v[0] = x;
        } else {
            m.v[m.n] = x;
        }
        m.n++;
    }
    check_list(&o, &m);
    /* LREM 3 of value 2 from the tail. */
    int two = 2, seen = 0;
    ck_assert_int_eq(st_list_rem(t, &o, -3, &two, sizeof two, &removed), 0);
    ck_assert_int_eq(removed, 3);
    for (int i = m.n - 1; i >= 0 && seen < 3; i--) {
        if (m.v[i] == 2) {
            memmove(m.v + i, m.v + i + 1,
                    sizeof m.v[0] * (size_t)(m.n - i - 1));
            m.n--;
            seen++;
        }
    }
    check_list(&o, &m);
    /* LINSERT near the head and near the tail (both shift directions). */
    int pivot = m.v[1], val = 99;
    ck_assert_int_eq(st_list_insert(t, &o, 1, &pivot, sizeof pivot, &val,
                                    sizeof val),
                     0);
    int at = 0;
    while (m.v[at] != pivot)
        at++;
    memmove(m.v + at + 2, m.v + at + 1, sizeof m.v[0] * (size_t)(m.n - at - 1));
    m.v[at + 1] = val;
    m.n++;
    check_list(&o, &m);
    int missing = 12345;
    ck_assert_int_eq(st_list_insert(t, &o, 0, &missing, sizeof missing, &val,
                                    sizeof val),
                     ST_ENOTFOUND);
    /* Trim to [3, n-4], then pop both ends. */
    ck_assert_int_eq(st_list_trim(t, &o, 3, (uint64_t)m.n - 4), 0);
    memmove(m.v, m.v + 3, sizeof m.v[0] * (size_t)(m.n - 6));
    m.n -= 6;
    check_list(&o, &m);
    ck_assert_int_eq(st_list_pop(t, &o, 1, NULL, NULL), 0);
    ck_assert_int_eq(st_list_pop(t, &o, 0, NULL, NULL), 0);
    memmove(m.v, m.v + 1, sizeof m.v[0] * (size_t)(m.n - 2));
    m.n -= 2;
    check_list(&o, &m);
    const uint8_t *v;
    size_t len;
    ck_assert_int_eq(st_list_get(t, &o, 2, &v, &len), 0);
    ck_assert_int_eq(*(const int *)(const void *)v, m.v[2]);
}
END_TEST

/* ---- zsets ---- */

typedef struct zlist {
    char names[MODEL_MAX][8];
    double scores[MODEL_MAX];
    int n;
} zlist;

static int collect_z(void *ctx, const uint8_t *m, size_t len, double s)
{
    zlist *z = ctx;

    ck_assert(len < sizeof z->names[0]);
    memcpy(z->names[z->n], m, len);
    z->names[z->n][len] = '\0';
    z->scores[z->n++] = s;
    return 0;
}

START_TEST(zset_walks)
{
    st_keyref k;
    st_obj o;
    st_zrange r;
    zlist z;
    uint64_t n, rank;
    double s;
    int created;
    const char *names[] = { "e", "a", "d", "b", "c", "f" };
    const double scores[] = { 2, 1, 2, 1, 1, -INFINITY };

    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(st_zset_add(t, &o, names[i], 1, scores[i], &created),
                         0);
    ck_assert_uint_eq(o.c.card, 6);
    /* By rank: f a b c d e (ties by member). */
    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_RANK;
    r.count = 6;
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_uint_eq(n, 6);
    ck_assert_str_eq(z.names[0], "f");
    ck_assert_str_eq(z.names[1], "a");
    ck_assert_str_eq(z.names[5], "e");
    /* Reverse from rank 4 (from the top): b then a then f. */
    r.rev = 1;
    r.start = 3;
    r.count = 10;
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_int_eq(z.n, 3);
    ck_assert_str_eq(z.names[0], "b");
    ck_assert_str_eq(z.names[2], "f");
    /* By score (1, 2]: d e; reverse [1, +inf] with LIMIT 1 2: d c. */
    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_SCORE;
    r.min = 1;
    r.minex = 1;
    r.max = 2;
    r.limit = UINT64_MAX;
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_int_eq(z.n, 2);
    ck_assert_str_eq(z.names[0], "d");
    r.rev = 1;
    r.minex = 0;
    r.max = INFINITY;
    r.offset = 1;
    r.limit = 2;
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_int_eq(z.n, 2);
    ck_assert_str_eq(z.names[0], "d");
    ck_assert_str_eq(z.names[1], "c");
    /* Ranks from both ends. */
    ck_assert_int_eq(st_zset_rank(t, &o, "c", 1, 0, &rank, &s), 0);
    ck_assert_uint_eq(rank, 3);
    ck_assert(s == 1);
    ck_assert_int_eq(st_zset_rank(t, &o, "c", 1, 1, &rank, &s), 0);
    ck_assert_uint_eq(rank, 2);
    ck_assert_int_eq(st_zset_rank(t, &o, "zz", 2, 0, &rank, &s), ST_ENOTFOUND);
    /* Score change moves the member. */
    ck_assert_int_eq(st_zset_add(t, &o, "f", 1, 3, &created), 0);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(st_zset_rank(t, &o, "f", 1, 0, &rank, &s), 0);
    ck_assert_uint_eq(rank, 5);
    /* Delete the score-1 members by score. */
    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_SCORE;
    r.min = r.max = 1;
    r.limit = UINT64_MAX;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 1, NULL, NULL, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(o.c.card, 3);
    ck_assert_int_eq(st_zset_score(t, &o, "a", 1, &s), ST_ENOTFOUND);
    ck_assert_int_eq(st_zset_score(t, &o, "d", 1, &s), 0);
}
END_TEST

START_TEST(zset_lex_ranges)
{
    st_keyref k;
    st_obj o;
    st_zrange r;
    zlist z;
    uint64_t n;
    int created;
    const char *names[] = { "a", "b", "bb", "c", "d" };

    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(st_zset_add(t, &o, names[i], strlen(names[i]), 0,
                                     &created),
                         0);
    memset(&r, 0, sizeof r);
    r.by = ST_ZBY_LEX;
    r.limit = UINT64_MAX;
    r.lmin = (st_zlex){ ST_ZLEX_EXCL, (const uint8_t *)"b", 1 };
    r.lmax = (st_zlex){ ST_ZLEX_INCL, (const uint8_t *)"c", 1 };
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_int_eq(z.n, 2);
    ck_assert_str_eq(z.names[0], "bb");
    ck_assert_str_eq(z.names[1], "c");
    r.rev = 1;
    r.lmax = (st_zlex){ ST_ZLEX_INCL, (const uint8_t *)"bb", 2 };
    r.lmin = (st_zlex){ ST_ZLEX_MIN, NULL, 0 };
    z.n = 0;
    ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, collect_z, &z, &n), 0);
    ck_assert_int_eq(z.n, 3);
    ck_assert_str_eq(z.names[0], "bb");
    ck_assert_str_eq(z.names[2], "a");
}
END_TEST

/* Ranks and rank windows against a sorted model, across node splits
 * (inserts) and merges (deletes). */
static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

static int first_score(void *ctx, const uint8_t *m, size_t len, double s)
{
    *(double *)ctx = s;
    return 1;
}

START_TEST(zset_ranks_across_nodes)
{
    static int scores[RANK_N], alive[RANK_N];
    st_keyref k;
    st_obj o;
    st_zrange r;
    char name[32];
    int created, n = 0;
    uint64_t rank, got;
    double s;

    srandom(42);
    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int i = 0; i < RANK_N; i++) {
        int len = snprintf(name, sizeof name, "m%d", i);
        scores[i] = (int)(random() % RANK_SPREAD) * RANK_N + i; /* distinct */
        ck_assert_int_eq(st_zset_add(t, &o, name, (size_t)len, scores[i],
                                     &created),
                         0);
    }
    for (int i = 0; i < RANK_N; i++) {
        int len = snprintf(name, sizeof name, "m%d", i);
        if (i % (RANK_N / RANK_KEEP) != 0)
            ck_assert_int_eq(st_zset_rem(t, &o, name, (size_t)len), 0);
        else
            alive[n++] = scores[i];
    }
    ck_assert_uint_eq(o.c.card, (uint64_t)n);
    qsort(alive, (size_t)n, sizeof alive[0], cmp_int);
    for (int p = 0; p < RANK_PROBES; p++) {
        int want = (int)(random() % n);
        int i = alive[want] % RANK_N;
        int len = snprintf(name, sizeof name, "m%d", i);
        ck_assert_int_eq(st_zset_rank(t, &o, name, (size_t)len, 0, &rank, &s),
                         0);
        ck_assert_uint_eq(rank, (uint64_t)want);
        ck_assert_int_eq(st_zset_rank(t, &o, name, (size_t)len, 1, &rank, &s),
                         0);
        ck_assert_uint_eq(rank, (uint64_t)(n - 1 - want));
        memset(&r, 0, sizeof r);
        r.by = ST_ZBY_RANK;
        r.start = (uint64_t)want;
        r.count = 1;
        ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, first_score, &s, &got), 0);
        ck_assert(s == alive[want]);
        r.rev = 1;
        ck_assert_int_eq(st_zset_walk(t, &o, &r, 0, first_score, &s, &got), 0);
        ck_assert(s == alive[n - 1 - want]);
    }
}
END_TEST

/* ---- lazy freeing ---- */

START_TEST(detached_collection_is_freed_in_chunks)
{
    st_keyref k;
    st_obj o;
    char name[32];
    int created, rounds = 0;
    size_t freed, total = 0;
    uint64_t pending = 1;

    open_new(&k, "z", ST_TYPE_ZSET, &o);
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(name, sizeof name, "m%d", i);
        ck_assert_int_eq(st_zset_add(t, &o, name, (size_t)n, i, &created), 0);
    }
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    while (pending) {
        ck_assert_int_eq(st_coll_free_chunk(unit_st_env, FREE_CHUNK, &freed,
                                            &pending),
                         0);
        ck_assert_uint_le(freed, FREE_CHUNK);
        total += freed;
        ck_assert_int_lt(rounds++, MANY);
    }
    /* By member and by score, plus the count nodes: leaves of at least
     * ST_RANK_MIN elements, and fewer nodes above them. */
    ck_assert_uint_ge(total, 2 * MANY);
    ck_assert_uint_le(total, 2 * MANY + 2 * MANY / ST_RANK_MIN);
}
END_TEST

static Suite *coll_suite(void)
{
    Suite *s = suite_create("st_coll");
    TCase *tc = tcase_create("encoding");

    tcase_add_test(tc, score_encoding_orders);
    tcase_add_test(tc, list_sequence_bias_orders);
    suite_add_tcase(s, tc);

    tc = tcase_create("core");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, record_type_card_and_empty_delete);
    tcase_add_test(tc, names_of_every_length);
    tcase_add_test(tc, scan_and_sample_visit_all);
    tcase_add_test(tc, list_edits_match_model);
    tcase_add_test(tc, zset_walks);
    tcase_add_test(tc, zset_lex_ranges);
    tcase_add_test(tc, zset_ranks_across_nodes);
    tcase_add_test(tc, detached_collection_is_freed_in_chunks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(coll_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
