/*
 * check_st_stream: unit tests of stream storage (storage/st_stream.h):
 * entries appended, read by range both ways with inclusive bounds and a
 * count, deleted and trimmed (MAXLEN, MINID, LIMIT) against an array
 * model; an empty stream keeps its key; the stream state; groups,
 * consumers and pending entries (per group and per consumer, moved
 * between consumers, a group destroyed with all of it); group and
 * consumer names of 0 to 100,000 bytes, found, listed in byte order and
 * deleted; values larger
 * than a page; DEL through the garbage list freeing entries and groups;
 * COPY and RENAME of a stream; TYPE code. Fresh temp-dir environment per
 * test.
 */
#include "t/unit/unit_st.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_stream.h"
#include "storage/st_txn.h"

#define NOW UNIT_ST_NOW
#define TIMEOUT_S 60
#define MANY 3000
#define BIG_VALUE (64 * 1024) /* many LMDB pages */
#define FREE_CHUNK 100
#define NFIELDS 2
#define PEL_N 40
#define SEQ_STEP 3 /* entries share a ms: ids (ms, seq) in steps */

static st_txn *t;

static void txn_setup(void) { t = unit_st_wbegin(); }

static void txn_teardown(void)
{
    if (t)
        st_txn_abort(&t);
}

/* Fields of a test entry: "f<i>", the value given. */
struct fields {
    const char *v[NFIELDS * 2];
    size_t len[NFIELDS * 2];
};

static void field_of(void *ctx, size_t i, const uint8_t **p, size_t *len)
{
    struct fields *f = ctx;

    *p = (const uint8_t *)f->v[i];
    *len = f->len[i];
}

static st_stream_id id_of(uint64_t i)
{
    st_stream_id id = { 1000 + i / SEQ_STEP, i % SEQ_STEP };
    return id;
}

static void open_stream(const char *name, st_keyref *k, st_obj *o, int create)
{
    st_codec_keyref_init(k, 0, name, strlen(name));
    int rc = st_coll_open(t, k, ST_TYPE_STREAM, NOW, o);
    if (create && rc == ST_ENOTFOUND)
        ck_assert_int_eq(st_coll_create(t, o), 0);
    else
        ck_assert_int_eq(rc, 0);
}

/* Append entry i of the test's numbering with value "v<i>". */
static void add_entry(st_obj *o, uint64_t i)
{
    char val[32];
    struct fields f = { { "a", val, "b", "" }, { 1, 0, 1, 0 } };
    st_stream_id id = id_of(i);

    f.len[1] = (size_t)snprintf(val, sizeof val, "v%llu",
                                (unsigned long long)i);
    ck_assert_int_eq(st_stream_add(t, o, &id, i + 1, NFIELDS * 2, field_of, &f),
                     0);
}

struct collect {
    st_stream_id ids[MANY];
    size_t n;
};

static int collect_fn(void *ctx, const st_stream_id *id, const uint8_t *val,
                      size_t len)
{
    struct collect *c = ctx;
    st_stream_value v;
    const uint8_t *p;
    size_t l, strings = 0;
    char want[32];

    ck_assert_uint_eq(st_stream_value_count(val, len), NFIELDS * 2);
    st_stream_value_init(&v, val, len);
    while (st_stream_value_next(&v, &p, &l)) {
        if (strings == 1) {
            uint64_t i = (id->ms - 1000) * SEQ_STEP + id->seq;
            snprintf(want, sizeof want, "v%llu", (unsigned long long)i);
            ck_assert_uint_eq(l, strlen(want));
            ck_assert(memcmp(p, want, l) == 0);
        }
        strings++;
    }
    ck_assert_uint_eq(strings, NFIELDS * 2);
    ck_assert_uint_lt(c->n, MANY);
    c->ids[c->n++] = *id;
    return 0;
}

START_TEST(append_range_both_ways)
{
    st_keyref k;
    st_obj o;
    struct collect c = { .n = 0 };
    st_stream_id lo = id_of(100), hi = id_of(199), first, last;
    const st_stream_id zero = { 0, 0 }, top = { UINT64_MAX, UINT64_MAX };
    st_stream_id gap = { id_of(MANY - 1).ms + 1, 0 };

    open_stream("s", &k, &o, 1);
    for (uint64_t i = 0; i < MANY; i++)
        add_entry(&o, i);
    ck_assert_uint_eq(o.c.card, MANY);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    /* Another stream around it: walks stay inside their own id. */
    {
        st_keyref k2;
        st_obj o2;
        open_stream("other", &k2, &o2, 1);
        add_entry(&o2, 0);
        ck_assert_int_eq(st_coll_save(t, &o2, NOW), 0);
    }
    open_stream("s", &k, &o, 0);
    ck_assert_uint_eq(o.c.card, MANY);

    ck_assert_int_eq(st_stream_range(t, &o, &lo, &hi, 0, 0, collect_fn, &c), 0);
    ck_assert_uint_eq(c.n, 100);
    for (size_t i = 0; i < c.n; i++)
        ck_assert_int_eq(
            st_stream_id_cmp(&c.ids[i], &(st_stream_id){ id_of(100 + i).ms,
                                                         id_of(100 + i).seq }),
            0);
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &lo, &hi, 1, 10, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 10);
    ck_assert_int_eq(st_stream_id_cmp(&c.ids[0], &hi), 0);
    ck_assert_int_eq(st_stream_id_cmp(&c.ids[9],
                                      &(st_stream_id){ id_of(190).ms,
                                                       id_of(190).seq }),
                     0);
    /* The whole stream, both ways; reverse from past the end. */
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &top, 1, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, MANY);
    ck_assert_int_eq(st_stream_id_cmp(&c.ids[MANY - 1],
                                      &(st_stream_id){ id_of(0).ms,
                                                       id_of(0).seq }),
                     0);
    /* A reversed range whose end falls between entries. */
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &gap, 1, 1, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 1);
    ck_assert_int_eq(st_stream_id_cmp(&c.ids[0],
                                      &(st_stream_id){ id_of(MANY - 1).ms,
                                                       id_of(MANY - 1).seq }),
                     0);
    /* Empty ranges. */
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &hi, &lo, 0, 0, collect_fn, &c), 0);
    ck_assert_int_eq(st_stream_range(t, &o, &gap, &top, 0, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 0);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &first), 0);
    ck_assert_int_eq(st_stream_edge(t, &o, 1, &last), 0);
    ck_assert_int_eq(st_stream_id_cmp(&first, &(st_stream_id){ id_of(0).ms,
                                                               id_of(0).seq }),
                     0);
    ck_assert_int_eq(st_stream_id_cmp(&last,
                                      &(st_stream_id){ id_of(MANY - 1).ms,
                                                       id_of(MANY - 1).seq }),
                     0);
}
END_TEST

START_TEST(delete_and_trim_match_model)
{
    st_keyref k;
    st_obj o;
    struct collect c = { .n = 0 };
    const st_stream_id zero = { 0, 0 }, top = { UINT64_MAX, UINT64_MAX };
    st_stream_id id, minid = id_of(500);
    uint64_t deleted;
    const uint8_t *val;
    size_t len;

    open_stream("s", &k, &o, 1);
    for (uint64_t i = 0; i < 1000; i++)
        add_entry(&o, i);
    /* Delete every entry with i % 7 == 0. */
    for (uint64_t i = 0; i < 1000; i += 7) {
        id = id_of(i);
        ck_assert_int_eq(st_stream_del(t, &o, &id), 0);
        ck_assert_int_eq(st_stream_del(t, &o, &id), ST_ENOTFOUND);
        ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), ST_ENOTFOUND);
    }
    ck_assert_uint_eq(o.c.card, 1000 - 143);
    id = id_of(1);
    ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), 0);
    ck_assert_uint_eq(st_stream_value_count(val, len), NFIELDS * 2);
    /* MINID with a LIMIT, then without one. */
    ck_assert_int_eq(st_stream_trim(t, &o, 1, 0, &minid, 0, 10, &deleted), 0);
    ck_assert_uint_eq(deleted, 10);
    ck_assert_int_eq(st_stream_trim(t, &o, 1, 0, &minid, 0, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 500 - 72 - 10); /* 72 multiples of 7 below 500 */
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), 0);
    ck_assert_int_eq(st_stream_id_cmp(&id, &(st_stream_id){ id_of(500).ms,
                                                            id_of(500).seq }),
                     0);
    /* MAXLEN keeps the newest. */
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 100, NULL, 0, 0, &deleted), 0);
    ck_assert_uint_eq(o.c.card, 100);
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &top, 0, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 100);
    ck_assert_int_eq(st_stream_id_cmp(&c.ids[99],
                                      &(st_stream_id){ id_of(999).ms,
                                                       id_of(999).seq }),
                     0);
    for (size_t i = 1; i < c.n; i++)
        ck_assert_int_lt(st_stream_id_cmp(&c.ids[i - 1], &c.ids[i]), 0);
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 100, NULL, 0, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 0);
    /* Emptied, the stream keeps its key. */
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 0, NULL, 0, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 100);
    ck_assert_uint_eq(o.c.card, 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_STREAM, NOW, &o), 0);
    ck_assert_uint_eq(o.c.card, 0);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), ST_ENOTFOUND);
}
END_TEST

/* `~`: whole nodes of consecutive ordinals only, within the limit. */
START_TEST(approximate_trim_by_nodes)
{
    st_keyref k;
    st_obj o;
    st_stream_id minid = id_of(250), id;
    uint64_t deleted;

    open_stream("s", &k, &o, 1);
    for (uint64_t i = 0; i < 1000; i++)
        add_entry(&o, i);
    ck_assert_int_eq(st_stream_trim(t, &o, 1, 0, &minid, 100, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 200);
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 250, NULL, 100, 150, &deleted),
                     0);
    ck_assert_uint_eq(deleted, 100);
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 250, NULL, 100, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 400);
    ck_assert_uint_eq(o.c.card, 300);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), 0);
    ck_assert_uint_eq(id.ms, id_of(700).ms);
    ck_assert_uint_eq(id.seq, id_of(700).seq);
    /* A node thinned by deletes counts its live entries. */
    for (uint64_t i = 700; i < 750; i++) {
        id = id_of(i);
        ck_assert_int_eq(st_stream_del(t, &o, &id), 0);
    }
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 200, NULL, 100, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 50);
    ck_assert_uint_eq(o.c.card, 200);
}
END_TEST

/* Free every detached collection; returns the elements freed. */
static size_t free_all(void)
{
    size_t freed, total = 0;
    uint64_t pending = 1;
    int rounds = 0;

    while (pending) {
        ck_assert_int_eq(st_coll_free_chunk(unit_st_env, FREE_CHUNK, &freed,
                                            &pending),
                         0);
        total += freed;
        ck_assert_int_lt(rounds++, MANY);
    }
    return total;
}

/*
 * A trim of more than a thousand entries moves the stream's floor and
 * leaves the entries to the freer: every read skips them at once, COPY
 * does not carry them, the freer deletes exactly them (in chunks, in
 * other transactions), and an entry added below the floor survives.
 */
START_TEST(big_trim_hands_head_to_freer)
{
    st_keyref k, k2;
    st_obj o, o2;
    struct collect c = { .n = 0 };
    const st_stream_id zero = { 0, 0 }, top = { UINT64_MAX, UINT64_MAX };
    st_stream_id id, minid = id_of(2500);
    uint64_t deleted;
    const uint8_t *val;
    size_t len;

    open_stream("s", &k, &o, 1);
    for (uint64_t i = 0; i < MANY; i++)
        add_entry(&o, i);
    id = id_of(5);
    ck_assert_int_eq(st_stream_del(t, &o, &id), 0);
    /* Exact MAXLEN: 2999 live, keep 1000. */
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 1000, NULL, 0, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, MANY - 1 - 1000);
    ck_assert_uint_eq(o.c.card, 1000);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), 0);
    ck_assert_uint_eq(id.ms, id_of(2000).ms);
    ck_assert_uint_eq(id.seq, id_of(2000).seq);
    id = id_of(1999);
    ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), ST_ENOTFOUND);
    ck_assert_int_eq(st_stream_del(t, &o, &id), ST_ENOTFOUND);
    ck_assert_uint_eq(o.c.card, 1000);
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &top, 0, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 1000);
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &top, 1, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 1000);
    ck_assert_uint_eq(c.ids[999].ms, id_of(2000).ms);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    /* The copy holds the live entries only. */
    st_codec_keyref_init(&k2, 0, "copy", 4);
    ck_assert_int_eq(st_keyspace_copy(t, &k, &k2, NOW, 0), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    ck_assert_uint_eq(free_all(), MANY - 1 - 1000);

    t = unit_st_wbegin();
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_STREAM, NOW, &o), 0);
    ck_assert_uint_eq(o.c.card, 1000);
    c.n = 0;
    ck_assert_int_eq(st_stream_range(t, &o, &zero, &top, 0, 0, collect_fn, &c),
                     0);
    ck_assert_uint_eq(c.n, 1000);
    /* A second big trim replaces the first hand-off: MINID by nodes of
     * 100 ordinals (entry i has ordinal i + 1). */
    for (uint64_t i = MANY; i < 2 * MANY; i++)
        add_entry(&o, i);
    ck_assert_int_eq(st_stream_trim(t, &o, 1, 0, &minid, 100, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 500); /* 2000..2499 */
    minid = id_of(5500);
    ck_assert_int_eq(st_stream_trim(t, &o, 1, 0, &minid, 100, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 3000); /* 2500..5499 */
    ck_assert_uint_eq(o.c.card, 500);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), 0);
    ck_assert_uint_eq(id.ms, id_of(5500).ms);
    ck_assert_uint_eq(id.seq, id_of(5500).seq);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_coll_open(t, &k2, ST_TYPE_STREAM, NOW, &o2), 0);
    ck_assert_uint_eq(o2.c.card, 1000);
    /* Deleting the copy frees its 1000 entries: nothing dead came along. */
    ck_assert_int_eq(st_keyspace_delete(t, &k2, NOW), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    ck_assert_uint_eq(free_all(), 3000 + 1000);

    /* Emptied by a big trim, then an id below the floor is added. */
    t = unit_st_wbegin();
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_STREAM, NOW, &o), 0);
    for (uint64_t i = 2 * MANY; i < 2 * MANY + 1200; i++)
        add_entry(&o, i);
    ck_assert_int_eq(st_stream_trim(t, &o, 0, 0, NULL, 0, 0, &deleted), 0);
    ck_assert_uint_eq(deleted, 1700);
    ck_assert_uint_eq(o.c.card, 0);
    ck_assert_int_eq(st_stream_edge(t, &o, 0, &id), ST_ENOTFOUND);
    {
        struct fields f = { { "a", "v0", "b", "" }, { 1, 2, 1, 0 } };
        id = id_of(2 * MANY + 100);
        ck_assert_int_eq(st_stream_add(t, &o, &id, 1, NFIELDS * 2, field_of,
                                       &f),
                         0);
    }
    ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    /* Those at and above it went at the add (with the entry it replaced);
     * the freer takes 5500 .. 2 * MANY + 99. */
    ck_assert_uint_eq(free_all(), 600);
    t = unit_st_rbegin();
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_STREAM, NOW, &o), 0);
    ck_assert_uint_eq(o.c.card, 1);
    ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), 0);
    ck_assert_int_eq(st_stream_edge(t, &o, 1, &id), 0);
    ck_assert_uint_eq(id.ms, id_of(2 * MANY + 100).ms);
}
END_TEST

/*
 * The stream state written once per transaction: what a put leaves is
 * what a get in the same transaction sees, another stream's put writes
 * the first one's back, the commit writes the last, an abort drops it,
 * and COPY in the same transaction copies the newest state.
 */
START_TEST(meta_written_back_at_commit)
{
    st_keyref ka, kb, kc;
    st_obj a, b, cp;
    st_stream_meta ma = { .entries_added = 7, .last = { 5, 1 } },
                   mb = { .entries_added = 9, .ngroups = 2 }, got;

    open_stream("a", &ka, &a, 1);
    open_stream("b", &kb, &b, 1);
    ck_assert_int_eq(st_stream_meta_put(t, &a, &ma), 0);
    ck_assert_int_eq(st_stream_meta_get(t, &a, &got), 0);
    ck_assert(memcmp(&got, &ma, sizeof got) == 0);
    ck_assert_int_eq(st_stream_meta_put(t, &b, &mb), 0);
    ck_assert_int_eq(st_stream_meta_get(t, &a, &got), 0);
    ck_assert(memcmp(&got, &ma, sizeof got) == 0);
    ma.entries_added = 8;
    ck_assert_int_eq(st_stream_meta_put(t, &a, &ma), 0);
    ck_assert_int_eq(st_coll_save(t, &a, NOW), 0);
    ck_assert_int_eq(st_coll_save(t, &b, NOW), 0);
    st_codec_keyref_init(&kc, 0, "c", 1);
    ck_assert_int_eq(st_keyspace_copy(t, &ka, &kc, NOW, 0), 0);
    ck_assert_int_eq(st_coll_open(t, &kc, ST_TYPE_STREAM, NOW, &cp), 0);
    ck_assert_int_eq(st_stream_meta_get(t, &cp, &got), 0);
    ck_assert_uint_eq(got.entries_added, 8);
    ck_assert_int_eq(st_txn_commit(&t), 0);

    t = unit_st_wbegin();
    open_stream("a", &ka, &a, 0);
    open_stream("b", &kb, &b, 0);
    ck_assert_int_eq(st_stream_meta_get(t, &a, &got), 0);
    ck_assert(memcmp(&got, &ma, sizeof got) == 0);
    ck_assert_int_eq(st_stream_meta_get(t, &b, &got), 0);
    ck_assert(memcmp(&got, &mb, sizeof got) == 0);
    ma.entries_added = 100;
    ck_assert_int_eq(st_stream_meta_put(t, &a, &ma), 0);
    st_txn_abort(&t);

    t = unit_st_rbegin();
    open_stream("a", &ka, &a, 0);
    ck_assert_int_eq(st_stream_meta_get(t, &a, &got), 0);
    ck_assert_uint_eq(got.entries_added, 8);
    open_stream("c", &kc, &cp, 0);
    ck_assert_int_eq(st_stream_meta_get(t, &cp, &got), 0);
    ck_assert_uint_eq(got.entries_added, 8);
}
END_TEST

/*
 * MAXLEN trims without a LIMIT count from the tail when they keep fewer
 * than they take: the same entries go as when counted from the head (a
 * LIMIT too large to matter takes that path), by nodes of 100 or 7 and
 * exactly, over a stream thinned at random.
 */
START_TEST(trim_from_tail_matches_head)
{
    static const uint64_t nodes[] = { 0, 7, 100 };
    static const uint64_t maxlens[] = { 0, 1, 6, 7, 8, 99, 100, 101, 450 };
    unsigned seed = 4242;

    for (size_t ni = 0; ni < sizeof nodes / sizeof nodes[0]; ni++) {
        for (size_t mi = 0; mi < sizeof maxlens / sizeof maxlens[0]; mi++) {
            st_keyref ka, kb;
            st_obj a, b;
            st_stream_id ea, eb;
            uint64_t da, db;
            char na[16], nb[16];
            snprintf(na, sizeof na, "a%zu.%zu", ni, mi);
            snprintf(nb, sizeof nb, "b%zu.%zu", ni, mi);
            open_stream(na, &ka, &a, 1);
            open_stream(nb, &kb, &b, 1);
            for (uint64_t i = 0; i < MANY / 3; i++) {
                add_entry(&a, i);
                add_entry(&b, i);
            }
            for (int d = 0; d < 200; d++) {
                st_stream_id id = id_of((uint64_t)rand_r(&seed) % (MANY / 3));
                int ra = st_stream_del(t, &a, &id);
                ck_assert_int_eq(st_stream_del(t, &b, &id), ra);
            }
            ck_assert_int_eq(st_stream_trim(t, &a, 0, maxlens[mi], NULL,
                                            nodes[ni], 0, &da),
                             0);
            ck_assert_int_eq(st_stream_trim(t, &b, 0, maxlens[mi], NULL,
                                            nodes[ni], UINT64_MAX, &db),
                             0);
            ck_assert_uint_eq(da, db);
            ck_assert_uint_eq(a.c.card, b.c.card);
            ck_assert_int_eq(st_stream_edge(t, &a, 0, &ea),
                             st_stream_edge(t, &b, 0, &eb));
            if (a.c.card)
                ck_assert_int_eq(st_stream_id_cmp(&ea, &eb), 0);
            if (!nodes[ni])
                ck_assert_uint_eq(a.c.card, maxlens[mi]);
        }
    }
}
END_TEST

START_TEST(meta_and_big_values)
{
    st_keyref k;
    st_obj o;
    st_stream_meta m = { 0 }, back;
    char *big = malloc(BIG_VALUE);
    struct fields f = { { "f", big, "g", "x" }, { 1, BIG_VALUE, 1, 1 } };
    st_stream_id id = { 5, 0 };
    const uint8_t *val, *p;
    size_t len, l;
    st_stream_value v;

    ck_assert_ptr_nonnull(big);
    memset(big, 'z', BIG_VALUE);
    open_stream("s", &k, &o, 1);
    ck_assert_int_eq(st_stream_meta_get(t, &o, &back), 0);
    ck_assert_uint_eq(back.entries_added, 0);
    m.last = id;
    m.entries_added = 7;
    m.max_deleted.ms = 3;
    ck_assert_int_eq(st_stream_meta_put(t, &o, &m), 0);
    ck_assert_int_eq(st_stream_add(t, &o, &id, 1, 4, field_of, &f), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    open_stream("s", &k, &o, 0);
    ck_assert_int_eq(st_stream_meta_get(t, &o, &back), 0);
    ck_assert(memcmp(&back, &m, sizeof m) == 0);
    ck_assert_int_eq(st_stream_get(t, &o, &id, &val, &len), 0);
    st_stream_value_init(&v, val, len);
    ck_assert(st_stream_value_next(&v, &p, &l));
    ck_assert(st_stream_value_next(&v, &p, &l));
    ck_assert_uint_eq(l, BIG_VALUE);
    ck_assert(memcmp(p, big, BIG_VALUE) == 0);
    free(big);
}
END_TEST

struct pel_seen {
    st_stream_id ids[PEL_N];
    uint64_t cons[PEL_N];
    size_t n;
};

static int pel_fn(void *ctx, const st_stream_id *id, const st_stream_pel *p)
{
    struct pel_seen *s = ctx;

    ck_assert_uint_lt(s->n, PEL_N);
    s->ids[s->n] = *id;
    s->cons[s->n++] = p->consumer;
    return 0;
}

struct names {
    char v[8][16];
    size_t n;
};

static int group_fn(void *ctx, const uint8_t *name, size_t len,
                    const st_stream_group *g)
{
    struct names *s = ctx;

    (void)g;
    ck_assert_uint_lt(len, sizeof s->v[0]);
    memcpy(s->v[s->n], name, len);
    s->v[s->n++][len] = 0;
    return 0;
}

static int consumer_fn(void *ctx, const uint8_t *name, size_t len,
                       const st_stream_consumer *cons)
{
    (void)cons;
    return group_fn(ctx, name, len, NULL);
}

START_TEST(groups_consumers_pel)
{
    st_keyref k;
    st_obj o;
    st_stream_group g = { .num = 1, .entries_read = ST_STREAM_READ_UNKNOWN },
                    g2 = { .num = 2 }, back;
    st_stream_consumer alice = { .num = 0, .seen_time = NOW },
                       bob = { .num = 1, .seen_time = NOW }, cb;
    const st_stream_id zero = { 0, 0 }, top = { UINT64_MAX, UINT64_MAX };
    struct pel_seen s = { .n = 0 };
    struct names names = { .n = 0 };
    const uint8_t *nm;
    size_t nl;

    open_stream("s", &k, &o, 1);
    ck_assert_int_eq(st_stream_group_put(t, &o, "gb", 2, &g2), 0);
    ck_assert_int_eq(st_stream_group_put(t, &o, "ga", 2, &g), 0);
    ck_assert_int_eq(st_stream_group_get(t, &o, "ga", 2, &back), 0);
    ck_assert(memcmp(&back, &g, sizeof g) == 0);
    ck_assert_int_eq(st_stream_group_get(t, &o, "gc", 2, &back), ST_ENOTFOUND);
    ck_assert_int_eq(st_stream_groups(t, &o, group_fn, &names), 0);
    ck_assert_uint_eq(names.n, 2);
    ck_assert_str_eq(names.v[0], "ga");
    ck_assert_str_eq(names.v[1], "gb");

    ck_assert_int_eq(st_stream_consumer_put(t, &o, 1, "bob", 3, &bob), 0);
    ck_assert_int_eq(st_stream_consumer_put(t, &o, 1, "alice", 5, &alice), 0);
    ck_assert_int_eq(st_stream_consumer_put(t, &o, 2, "carol", 5, &alice), 0);
    ck_assert_int_eq(st_stream_consumer_get(t, &o, 1, "bob", 3, &cb), 0);
    ck_assert_uint_eq(cb.num, 1);
    ck_assert_int_eq(st_stream_consumer_name(t, &o, 1, 1, &nm, &nl), 0);
    ck_assert_uint_eq(nl, 3);
    ck_assert(memcmp(nm, "bob", 3) == 0);
    names.n = 0;
    ck_assert_int_eq(st_stream_consumers(t, &o, 1, consumer_fn, &names), 0);
    ck_assert_uint_eq(names.n, 2);
    ck_assert_str_eq(names.v[0], "alice");
    ck_assert_str_eq(names.v[1], "bob");

    /* Even ids pending at alice, odd at bob; one moves to alice. */
    for (uint64_t i = 0; i < PEL_N; i++) {
        st_stream_id id = id_of(i);
        st_stream_pel p = { i % 2, NOW, 1 };
        ck_assert_int_eq(st_stream_pel_put(t, &o, 1, &id, &p, UINT64_MAX), 0);
        ck_assert_int_eq(st_stream_pel_put(t, &o, 2, &id, &p, UINT64_MAX), 0);
    }
    {
        st_stream_id id = id_of(1);
        st_stream_pel p = { 0, NOW, 2 }, got;
        ck_assert_int_eq(st_stream_pel_put(t, &o, 1, &id, &p, 1), 0);
        ck_assert_int_eq(st_stream_pel_get(t, &o, 1, &id, &got), 0);
        ck_assert_uint_eq(got.delivery_count, 2);
    }
    ck_assert_int_eq(st_stream_pels(t, &o, 1, UINT64_MAX, &zero, &top, 0,
                                    pel_fn, &s),
                     0);
    ck_assert_uint_eq(s.n, PEL_N);
    s.n = 0;
    ck_assert_int_eq(st_stream_pels(t, &o, 1, 1, &zero, &top, 0, pel_fn, &s),
                     0);
    ck_assert_uint_eq(s.n, PEL_N / 2 - 1);
    for (size_t i = 0; i < s.n; i++)
        ck_assert_uint_eq(s.cons[i], 1);
    s.n = 0;
    {
        st_stream_id from = id_of(10), to = id_of(20);
        ck_assert_int_eq(st_stream_pels(t, &o, 1, 0, &from, &to, 3, pel_fn, &s),
                         0);
        ck_assert_uint_eq(s.n, 3);
        ck_assert_int_eq(st_stream_id_cmp(&s.ids[0], &from), 0);
        ck_assert_uint_eq(s.ids[2].ms, id_of(14).ms);
        ck_assert_uint_eq(s.ids[2].seq, id_of(14).seq);
    }
    {
        st_stream_id id = id_of(2);
        ck_assert_int_eq(st_stream_pel_del(t, &o, 1, &id, 0), 0);
        ck_assert_int_eq(st_stream_pel_del(t, &o, 1, &id, 0), ST_ENOTFOUND);
    }
    /* Destroying group 1 leaves group 2 whole. */
    ck_assert_int_eq(st_stream_group_del(t, &o, "ga", 2), 0);
    ck_assert_int_eq(st_stream_group_get(t, &o, "ga", 2, &back), ST_ENOTFOUND);
    s.n = 0;
    ck_assert_int_eq(st_stream_pels(t, &o, 1, UINT64_MAX, &zero, &top, 0,
                                    pel_fn, &s),
                     0);
    ck_assert_int_eq(st_stream_pels(t, &o, 1, 1, &zero, &top, 0, pel_fn, &s),
                     0);
    ck_assert_uint_eq(s.n, 0);
    names.n = 0;
    ck_assert_int_eq(st_stream_consumers(t, &o, 1, consumer_fn, &names), 0);
    ck_assert_uint_eq(names.n, 0);
    ck_assert_int_eq(st_stream_pels(t, &o, 2, UINT64_MAX, &zero, &top, 0,
                                    pel_fn, &s),
                     0);
    ck_assert_uint_eq(s.n, PEL_N);
    ck_assert_int_eq(st_stream_consumers(t, &o, 2, consumer_fn, &names), 0);
    ck_assert_uint_eq(names.n, 1);
}
END_TEST

START_TEST(del_copy_rename_and_lazy_free)
{
    st_keyref k, k2, k3;
    st_obj o, o2;
    st_stream_group g = { .num = 0 };
    st_stream_pel p = { 0, NOW, 1 };
    st_stream_id id = id_of(0);
    st_rec r;
    size_t freed, total = 0;
    uint64_t pending = 1;
    int rounds = 0;

    open_stream("s", &k, &o, 1);
    for (uint64_t i = 0; i < MANY; i++)
        add_entry(&o, i);
    ck_assert_int_eq(st_stream_group_put(t, &o, "g", 1, &g), 0);
    ck_assert_int_eq(st_stream_pel_put(t, &o, 0, &id, &p, UINT64_MAX), 0);
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_STREAM);

    /* COPY: the copy has its own entries and groups. */
    st_codec_keyref_init(&k2, 0, "copy", 4);
    ck_assert_int_eq(st_keyspace_copy(t, &k, &k2, NOW, 0), 0);
    ck_assert_int_eq(st_coll_open(t, &k2, ST_TYPE_STREAM, NOW, &o2), 0);
    ck_assert_uint_eq(o2.c.card, MANY);
    ck_assert_uint_ne(o2.c.id, o.c.id);
    ck_assert_int_eq(st_stream_group_get(t, &o2, "g", 1, &g), 0);
    ck_assert_int_eq(st_stream_pel_get(t, &o2, 0, &id, &p), 0);
    /* RENAME keeps it whole. */
    st_codec_keyref_init(&k3, 0, "moved", 5);
    ck_assert_int_eq(st_keyspace_rename(t, &k2, &k3, NOW, 0), 0);
    ck_assert_int_eq(st_coll_open(t, &k3, ST_TYPE_STREAM, NOW, &o2), 0);
    ck_assert_uint_eq(o2.c.card, MANY);
    ck_assert_int_eq(st_stream_del(t, &o2, &id), 0);
    ck_assert_int_eq(st_coll_save(t, &o2, NOW), 0);

    /* DEL is one put into the garbage list; the freer takes it all. */
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(st_txn_commit(&t), 0);
    while (pending) {
        ck_assert_int_eq(st_coll_free_chunk(unit_st_env, FREE_CHUNK, &freed,
                                            &pending),
                         0);
        total += freed;
        ck_assert_int_lt(rounds++, MANY);
    }
    /* Entries, the state-less group record and both PEL keys. */
    ck_assert_uint_eq(total, MANY + 1 + 2);
    t = unit_st_rbegin();
    ck_assert_int_eq(st_coll_open(t, &k3, ST_TYPE_STREAM, NOW, &o2), 0);
    ck_assert_uint_eq(o2.c.card, MANY - 1);
    ck_assert_int_eq(st_stream_group_get(t, &o2, "g", 1, &g), 0);
}
END_TEST

/* Names of the long-name test: `len` bytes of 'n' but the last `tail`
 * bytes, which are `last`. */
struct lname {
    size_t len, tail;
    char last;
};

#define LNAMES 8
#define LNAME_BIG 100000

/* In byte order (a prefix first); ST_STREAM_NAME_INLINE is 400. */
static const struct lname lnames[LNAMES] = {
    { 0, 0, 0 },   { 400, 0, 0 },       { 5000, 4600, 'a' }, { 401, 1, 'b' },
    { 401, 0, 0 }, { LNAME_BIG, 0, 0 }, { 400, 1, 'o' },     { 1, 1, 'z' },
};

static char *lname_make(const struct lname *l)
{
    char *s = malloc(l->len ? l->len : 1);

    ck_assert_ptr_nonnull(s);
    memset(s, 'n', l->len);
    memset(s + l->len - l->tail, l->last, l->tail);
    return s;
}

struct lseen {
    size_t n;
    int bad;
    uint64_t nums[LNAMES];
};

static int lname_fn(struct lseen *w, const uint8_t *name, size_t len,
                    uint64_t num)
{
    char *want;

    ck_assert_uint_lt(w->n, LNAMES);
    want = lname_make(&lnames[w->n]);
    if (len != lnames[w->n].len || memcmp(want, name, len) != 0)
        w->bad = 1;
    free(want);
    w->nums[w->n++] = num;
    return 0;
}

static int lgroup_fn(void *ctx, const uint8_t *name, size_t len,
                     const st_stream_group *g)
{
    return lname_fn(ctx, name, len, g->num);
}

static int lconsumer_fn(void *ctx, const uint8_t *name, size_t len,
                        const st_stream_consumer *cons)
{
    return lname_fn(ctx, name, len, cons->num);
}

START_TEST(long_names_any_length)
{
    st_keyref k;
    st_obj o;
    struct lseen seen = { 0, 0, { 0 } };
    /* Put in an order unlike name order: digest order must not show. */
    static const int put_order[LNAMES] = { 5, 2, 7, 0, 4, 1, 6, 3 };

    open_stream("s", &k, &o, 1);
    for (int i = 0; i < LNAMES; i++) {
        int j = put_order[i];
        char *nm = lname_make(&lnames[j]);
        st_stream_group g = { .num = (uint64_t)j };
        st_stream_consumer cons = { .num = (uint64_t)j, .seen_time = NOW };
        ck_assert_int_eq(st_stream_group_put(t, &o, nm, lnames[j].len, &g), 0);
        ck_assert_int_eq(st_stream_consumer_put(t, &o, 1, nm, lnames[j].len,
                                                &cons),
                         0);
        /* Written twice: the second replaces the first. */
        ck_assert_int_eq(st_stream_group_put(t, &o, nm, lnames[j].len, &g), 0);
        free(nm);
    }
    for (int j = 0; j < LNAMES; j++) {
        char *nm = lname_make(&lnames[j]);
        st_stream_group g;
        st_stream_consumer cons;
        const uint8_t *back;
        size_t blen;
        ck_assert_int_eq(st_stream_group_get(t, &o, nm, lnames[j].len, &g), 0);
        ck_assert_uint_eq(g.num, (uint64_t)j);
        ck_assert_int_eq(st_stream_consumer_get(t, &o, 1, nm, lnames[j].len,
                                                &cons),
                         0);
        ck_assert_uint_eq(cons.num, (uint64_t)j);
        ck_assert_int_eq(st_stream_consumer_name(t, &o, 1, (uint64_t)j, &back,
                                                 &blen),
                         0);
        ck_assert_uint_eq(blen, lnames[j].len);
        ck_assert(memcmp(back, nm, blen) == 0);
        /* One byte more or less is another name. */
        if (lnames[j].len > 1)
            ck_assert_int_eq(st_stream_group_get(t, &o, nm, lnames[j].len - 1,
                                                 &g),
                             j == 4 || j == 3 ? 0 : ST_ENOTFOUND);
        free(nm);
    }
    ck_assert_int_eq(st_stream_groups(t, &o, lgroup_fn, &seen), 0);
    ck_assert_uint_eq(seen.n, LNAMES);
    ck_assert_int_eq(seen.bad, 0);
    for (int j = 0; j < LNAMES; j++)
        ck_assert_uint_eq(seen.nums[j], (uint64_t)j);
    memset(&seen, 0, sizeof seen);
    ck_assert_int_eq(st_stream_consumers(t, &o, 1, lconsumer_fn, &seen), 0);
    ck_assert_uint_eq(seen.n, LNAMES);
    ck_assert_int_eq(seen.bad, 0);

    /* Deleting the long ones leaves the others. */
    for (int j = 2; j <= 5; j++) {
        char *nm = lname_make(&lnames[j]);
        st_stream_group g;
        ck_assert_int_eq(st_stream_consumer_del(t, &o, 1, nm, lnames[j].len,
                                                (uint64_t)j),
                         0);
        ck_assert_int_eq(st_stream_group_del(t, &o, nm, lnames[j].len), 0);
        ck_assert_int_eq(st_stream_group_get(t, &o, nm, lnames[j].len, &g),
                         ST_ENOTFOUND);
        ck_assert_int_eq(st_stream_group_del(t, &o, nm, lnames[j].len),
                         ST_ENOTFOUND);
        free(nm);
    }
    memset(&seen, 0, sizeof seen);
    ck_assert_int_eq(st_stream_consumers(t, &o, 1, lconsumer_fn, &seen), 0);
    ck_assert_uint_eq(seen.n, LNAMES - 4);
    ck_assert_uint_eq(seen.nums[2], 6);
}
END_TEST

static Suite *stream_suite(void)
{
    Suite *s = suite_create("st_stream");
    TCase *tc = tcase_create("core");

    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, append_range_both_ways);
    tcase_add_test(tc, delete_and_trim_match_model);
    tcase_add_test(tc, approximate_trim_by_nodes);
    tcase_add_test(tc, big_trim_hands_head_to_freer);
    tcase_add_test(tc, trim_from_tail_matches_head);
    tcase_add_test(tc, meta_and_big_values);
    tcase_add_test(tc, meta_written_back_at_commit);
    tcase_add_test(tc, groups_consumers_pel);
    tcase_add_test(tc, del_copy_rename_and_lazy_free);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, long_names_any_length);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_add_checked_fixture(tc, txn_setup, txn_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, delete_and_trim_match_model);
    tcase_add_test(tc, del_copy_rename_and_lazy_free);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(stream_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
