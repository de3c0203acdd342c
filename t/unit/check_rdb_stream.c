/*
 * check_rdb_stream: unit tests of streams as RDB objects
 * (rdb/rdb_stream.h): an encoded stream (entries with the node's fields
 * and their own, integers, binary values; its state; groups with pending
 * entries and consumers) decodes to what went in, split into nodes as
 * Redis 7.0 splits them; calls out of order refused; a pending entry with
 * no consumer or two refused; every truncation and random byte mutation
 * of a valid payload fails cleanly (no read out of bounds under ASan).
 */
#include "rdb/rdb_err.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"
#include "rdb/rdb_stream.h"

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 60
#define MAX_STRING (64u << 20)
#define ENTRIES 250
#define MUTATIONS 5000
#define SEED 12345u

/* What the sink saw, as text lines. */
typedef struct seen {
    rdb_buf log;
    uint64_t entries, groups, consumers, pels;
    uint64_t nodes, node_live; /* node calls, and the live they told */
    uint64_t node_entries;     /* entries since the last node call */
    int node_mismatch;         /* a node's entries were not its live */
    rdb_stream_meta meta;
} seen;

static void logf_(seen *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(seen *s, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rdb_buf_append(&s->log, line, (size_t)n);
}

static int on_entry(void *ctx, const rdb_stream_id *id, const rdb_str *fv,
                    size_t n)
{
    seen *s = ctx;

    logf_(s, "E%llu-%llu:", (unsigned long long)id->ms,
          (unsigned long long)id->seq);
    for (size_t i = 0; i < 2 * n; i++) {
        rdb_buf_append(&s->log, fv[i].p, fv[i].n);
        rdb_buf_append(&s->log, "|", 1);
    }
    s->entries++;
    s->node_entries++;
    return 0;
}

static int on_meta(void *ctx, const rdb_stream_meta *m)
{
    seen *s = ctx;

    s->meta = *m;
    return 0;
}

static int on_group(void *ctx, const uint8_t *name, size_t len,
                    const rdb_stream_id *last, int64_t er, uint64_t pending,
                    uint64_t consumers)
{
    seen *s = ctx;

    logf_(s, "G%.*s %llu-%llu %lld %llu %llu;", (int)len, name,
          (unsigned long long)last->ms, (unsigned long long)last->seq,
          (long long)er, (unsigned long long)pending,
          (unsigned long long)consumers);
    s->groups++;
    return 0;
}

static int on_consumer(void *ctx, const uint8_t *name, size_t len,
                       int64_t seen_time, uint64_t pending)
{
    seen *s = ctx;

    logf_(s, "C%.*s %lld %llu;", (int)len, name, (long long)seen_time,
          (unsigned long long)pending);
    s->consumers++;
    return 0;
}

static int on_pel(void *ctx, const rdb_stream_id *id, int64_t t, uint64_t n)
{
    seen *s = ctx;

    logf_(s, "P%llu-%llu %lld %llu;", (unsigned long long)id->ms,
          (unsigned long long)id->seq, (long long)t, (unsigned long long)n);
    s->pels++;
    return 0;
}

/* Each node's live count must be the entries that follow it. */
static int on_node(void *ctx, uint64_t live, uint64_t deleted, size_t bytes)
{
    seen *s = ctx;

    if ((s->nodes && s->node_entries != s->node_live) || bytes == 0 ||
        live + deleted == 0)
        s->node_mismatch = 1;
    s->nodes++;
    s->node_live = live;
    s->node_entries = 0;
    return 0;
}

static const rdb_stream_sink sink = { .entry = on_entry,
                                      .meta = on_meta,
                                      .group = on_group,
                                      .consumer = on_consumer,
                                      .pel = on_pel,
                                      .node = on_node };

/* The i-th entry of the test stream: every seventh has fields of its
 * own, the rest the node's; values are integers, text or binary. */
static size_t entry_of(uint64_t i, rdb_str *fv, char (*buf)[32])
{
    static const uint8_t bin[] = { 0, 0xff, '\r', '\n' };
    size_t n = i % 7 == 0 ? 3 : 2;

    for (size_t j = 0; j < n; j++) {
        snprintf(buf[2 * j], 32, i % 7 == 0 ? "own%zu" : "f%zu", j);
        fv[2 * j].p = (const uint8_t *)buf[2 * j];
        fv[2 * j].n = strlen(buf[2 * j]);
        if (j == 1) {
            fv[2 * j + 1].p = bin;
            fv[2 * j + 1].n = sizeof bin;
            continue;
        }
        snprintf(buf[2 * j + 1], 32, "%lld", (long long)i * 1000003 - 7);
        fv[2 * j + 1].p = (const uint8_t *)buf[2 * j + 1];
        fv[2 * j + 1].n = strlen(buf[2 * j + 1]);
    }
    return n;
}

/* Encode the test stream into w; the expected sink log into want. */
static void encode(rdb_writer *w, seen *want)
{
    rdb_xenc x;
    rdb_str fv[6];
    char buf[6][32];
    rdb_stream_meta m = { ENTRIES,  { ENTRIES + 5, 0 }, { 1, 0 },
                          { 0, 0 }, ENTRIES + 3,        2 };
    rdb_stream_id p1 = { 3, 0 }, p2 = { 9, 0 }, p3 = { 10, 0 },
                  last = { 10, 0 };

    rdb_xenc_init(&x);
    ck_assert_int_eq(rdb_xenc_begin(&x, w, NULL, 0), 0);
    for (uint64_t i = 0; i < ENTRIES; i++) {
        rdb_stream_id id = { i + 1, 0 };
        size_t n = entry_of(i, fv, buf);
        ck_assert_int_eq(rdb_xenc_entry(&x, &id, fv, n), 0);
        on_entry(want, &id, fv, n);
    }
    /* Out of order: refused. */
    ck_assert_int_eq(rdb_xenc_entry(&x, &p1, fv, 1), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_xenc_meta(&x, &m), 0);
    ck_assert_int_eq(rdb_xenc_group(&x, "g1", 2, &last, 10, 3, 2), 0);
    on_group(want, (const uint8_t *)"g1", 2, &last, 10, 3, 2);
    ck_assert_int_eq(rdb_xenc_consumer(&x, "a", 1, 5, 0), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_xenc_gpel(&x, &p1, 100, 1), 0);
    ck_assert_int_eq(rdb_xenc_gpel(&x, &p2, 200, 2), 0);
    ck_assert_int_eq(rdb_xenc_gpel(&x, &p3, 300, 3), 0);
    ck_assert_int_eq(rdb_xenc_consumer(&x, "alice", 5, 1000, 2), 0);
    on_consumer(want, (const uint8_t *)"alice", 5, 1000, 2);
    ck_assert_int_eq(rdb_xenc_cpel(&x, &p1), 0);
    on_pel(want, &p1, 100, 1);
    ck_assert_int_eq(rdb_xenc_cpel(&x, &p3), 0);
    on_pel(want, &p3, 300, 3);
    ck_assert_int_eq(rdb_xenc_consumer(&x, "12345", 5, 2000, 1), 0);
    on_consumer(want, (const uint8_t *)"12345", 5, 2000, 1);
    ck_assert_int_eq(rdb_xenc_cpel(&x, &p2), 0);
    on_pel(want, &p2, 200, 2);
    ck_assert_int_eq(rdb_xenc_end(&x), RDB_ECORRUPT); /* a group short */
    ck_assert_int_eq(rdb_xenc_group(&x, "empty", 5, &last, -1, 0, 0), 0);
    on_group(want, (const uint8_t *)"empty", 5, &last, -1, 0, 0);
    ck_assert_int_eq(rdb_xenc_end(&x), 0);
    want->meta = m;
    rdb_xenc_fini(&x);
}

static int decode(const uint8_t *p, size_t n, seen *got, rdb_reader *r)
{
    rdb_scratch sc;
    rdb_sink s = { .ctx = got, .stream = &sink };
    int rc;

    memset(&sc, 0, sizeof sc);
    rdb_reader_mem(r, p + 1, n - 1, MAX_STRING);
    rc = rdb_obj_decode(r, p[0], &s, &sc);
    rdb_scratch_free(&sc);
    return rc;
}

START_TEST(test_round_trip)
{
    rdb_writer w;
    rdb_reader r;
    seen want, got;

    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    rdb_writer_mem(&w, 1);
    encode(&w, &want);
    ck_assert_uint_eq(w.buf.data[0], RDB_TYPE_STREAM_LISTPACKS_2);
    /* 250 small entries: Redis's 100-entry nodes, so three. */
    ck_assert_uint_eq(w.buf.data[1], 3);
    ck_assert_int_eq(decode(w.buf.data, w.buf.len, &got, &r), 0);
    ck_assert_uint_eq(got.entries, ENTRIES);
    ck_assert_uint_eq(got.nodes, 3);
    ck_assert_uint_eq(got.node_entries, got.node_live);
    ck_assert_int_eq(got.node_mismatch, 0);
    ck_assert_uint_eq(got.groups, 2);
    ck_assert_uint_eq(got.consumers, 2);
    ck_assert_uint_eq(got.pels, 3);
    ck_assert_uint_eq(got.log.len, want.log.len);
    ck_assert(memcmp(got.log.data, want.log.data, got.log.len) == 0);
    ck_assert_uint_eq(got.meta.length, ENTRIES);
    ck_assert_uint_eq(got.meta.last.ms, ENTRIES + 5);
    ck_assert_uint_eq(got.meta.first.ms, 1);
    ck_assert_uint_eq(got.meta.entries_added, ENTRIES + 3);
    ck_assert_uint_eq(got.meta.groups, 2);
    rdb_buf_free(&want.log);
    rdb_buf_free(&got.log);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_empty_and_refusals)
{
    rdb_writer w;
    rdb_reader r;
    rdb_xenc x;
    seen got;
    rdb_stream_meta m;
    uint8_t id[RDB_STREAM_ID_BYTES] = { 0 };

    memset(&got, 0, sizeof got);
    memset(&m, 0, sizeof m);
    rdb_writer_mem(&w, 1);
    rdb_xenc_init(&x);
    /* An empty stream is a value (XGROUP CREATE MKSTREAM). */
    ck_assert_int_eq(rdb_xenc_begin(&x, &w, NULL, 0), 0);
    m.length = 1;
    ck_assert_int_eq(rdb_xenc_meta(&x, &m), RDB_ECORRUPT);
    m.length = 0;
    ck_assert_int_eq(rdb_xenc_meta(&x, &m), 0);
    ck_assert_int_eq(rdb_xenc_end(&x), 0);
    ck_assert_int_eq(decode(w.buf.data, w.buf.len, &got, &r), 0);
    ck_assert_uint_eq(got.entries, 0);
    /* A group whose pending entry has no consumer. */
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_STREAM_LISTPACKS_2);
    for (int i = 0; i < 9; i++)
        rdb_put_len(&w, 0); /* nodes, length, last, first, maxdel, added */
    rdb_put_len(&w, 1);     /* groups */
    rdb_put_string(&w, "g", 1);
    rdb_put_len(&w, 0);
    rdb_put_len(&w, 0);
    rdb_put_len(&w, 0); /* entries_read */
    rdb_put_len(&w, 1); /* pending */
    rdb_put(&w, id, sizeof id);
    rdb_put_le64(&w, 0);
    rdb_put_len(&w, 1);
    size_t consumers_at = w.buf.len;
    rdb_put_len(&w, 0); /* consumers */
    ck_assert_int_eq(decode(w.buf.data, w.buf.len, &got, &r), RDB_ECORRUPT);
    ck_assert(strstr(r.why, "without a consumer") != NULL);
    /* Owned twice. */
    w.buf.len = consumers_at;
    rdb_put_len(&w, 2);
    for (int c = 0; c < 2; c++) {
        rdb_put_string(&w, c ? "b" : "a", 1);
        rdb_put_le64(&w, 0);
        rdb_put_len(&w, 1);
        rdb_put(&w, id, sizeof id);
    }
    ck_assert_int_eq(decode(w.buf.data, w.buf.len, &got, &r), RDB_ECORRUPT);
    ck_assert(strstr(r.why, "owned twice") != NULL);
    rdb_buf_free(&got.log);
    rdb_xenc_fini(&x);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_truncations_and_mutations)
{
    rdb_writer w;
    rdb_reader r;
    seen want, got;
    uint8_t *p;
    unsigned seed = SEED;

    memset(&want, 0, sizeof want);
    memset(&got, 0, sizeof got);
    rdb_writer_mem(&w, 0);
    encode(&w, &want);
    for (size_t n = 1; n < w.buf.len; n++) {
        p = malloc(n);
        memcpy(p, w.buf.data, n);
        got.log.len = 0;
        ck_assert_int_ne(decode(p, n, &got, &r), 0);
        free(p);
    }
    p = malloc(w.buf.len);
    for (int i = 0; i < MUTATIONS; i++) {
        memcpy(p, w.buf.data, w.buf.len);
        for (int k = 0; k < 3; k++)
            p[1 + (size_t)rand_r(&seed) % (w.buf.len - 1)] = (uint8_t)rand_r(
                &seed);
        got.log.len = 0;
        (void)decode(p, w.buf.len, &got, &r); /* any code; no crash */
    }
    free(p);
    rdb_buf_free(&want.log);
    rdb_buf_free(&got.log);
    rdb_writer_fini(&w);
}
END_TEST

static Suite *rdb_stream_suite(void)
{
    Suite *s = suite_create("rdb_stream");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_empty_and_refusals);
    suite_add_tcase(s, tc);
    tc = tcase_create("robustness");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_truncations_and_mutations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rdb_stream_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
