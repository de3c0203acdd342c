/*
 * check_morder: unit tests of the broker's reorder buffer for MONITOR
 * lines (server/srv_morder.h): lines leave in increasing number whatever
 * order they came in, never in the round that read them; a gap is waited
 * for its bound and then skipped, only to lines of an earlier round; a
 * skipped line that comes late leaves as it comes; a gap is timed from
 * when it was first known, not again after each skip; over its bytes the
 * buffer lets the oldest go in order; a restarted broker's first number;
 * and a randomized run in which every line comes within the bound and
 * all leave in order.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_morder.h"

#define TIMEOUT_S 60
#define MAX_OUT 4096
#define GAP_MS 100
#define BIG (1 << 20)
#define LINE_MAX 32
#define MODEL_LINES 3000
#define MODEL_SPREAD 40
#define MODEL_ROUNDS_PER_MS 4
#define MODEL_BATCH 8

static uint64_t out[MAX_OUT];
static int nout;

static void on_emit(void *ctx, uint64_t seq, const char *line, size_t len)
{
    char want[LINE_MAX];

    ck_assert_int_lt(nout, MAX_OUT);
    snprintf(want, sizeof want, "line %llu", (unsigned long long)seq);
    ck_assert_uint_eq(len, strlen(want));
    ck_assert(memcmp(line, want, len) == 0);
    out[nout++] = seq;
}

static srv_morder *fresh(uint64_t next, size_t max_bytes)
{
    srv_morder *m = srv_morder_create(next, GAP_MS, max_bytes, on_emit, NULL);

    ck_assert_ptr_nonnull(m);
    nout = 0;
    return m;
}

/* Add line `seq` ("line <seq>"), read in `round` at `now`. */
static void add(srv_morder *m, uint64_t seq, uint64_t round, int64_t now)
{
    char line[LINE_MAX];
    int n = snprintf(line, sizeof line, "line %llu", (unsigned long long)seq);

    ck_assert_int_eq(srv_morder_add(m, seq, round, now, line, (size_t)n), 0);
}

/* The lines emitted so far are exactly want[0..n). */
static void emitted(const uint64_t *want, int n)
{
    ck_assert_int_eq(nout, n);
    for (int i = 0; i < n; i++)
        ck_assert_uint_eq(out[i], want[i]);
}

START_TEST(test_in_order_after_one_round)
{
    srv_morder *m = fresh(5, BIG);
    static const uint64_t want[] = { 5, 6, 7 };

    add(m, 5, 1, 0);
    add(m, 6, 1, 0);
    add(m, 7, 1, 0);
    ck_assert_int_eq(srv_morder_release(m, 1, 0), 0); /* not this round */
    emitted(NULL, 0);
    ck_assert_int_eq(srv_morder_release(m, 2, 0), -1);
    emitted(want, 3);
    ck_assert_uint_eq(srv_morder_next(m), 8);
    ck_assert_uint_eq(srv_morder_held(m), 0);
    srv_morder_destroy(&m);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(test_out_of_order_within_a_round)
{
    srv_morder *m = fresh(0, BIG);
    static const uint64_t want[] = { 0, 1, 2, 3, 4 };

    add(m, 3, 1, 0);
    add(m, 1, 1, 0);
    add(m, 4, 1, 0);
    add(m, 0, 1, 0);
    add(m, 2, 1, 0);
    srv_morder_release(m, 2, 0);
    emitted(want, 5);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_contiguous_run_stops_at_this_round)
{
    srv_morder *m = fresh(0, BIG);
    static const uint64_t want[] = { 0, 1, 2 };

    add(m, 0, 1, 0);
    add(m, 1, 1, 0);
    add(m, 2, 2, 0); /* read by round 2's sweep */
    ck_assert_int_eq(srv_morder_release(m, 2, 0), 0);
    emitted(want, 2);
    ck_assert_int_eq(srv_morder_release(m, 3, 0), -1);
    emitted(want, 3);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_gap_filled_within_its_bound)
{
    srv_morder *m = fresh(5, BIG);
    static const uint64_t want[] = { 5, 6, 7 };

    add(m, 6, 1, 0);
    add(m, 7, 1, 0);
    ck_assert_int_eq(srv_morder_release(m, 2, 10), GAP_MS - 10);
    emitted(NULL, 0);
    add(m, 5, 2, 20);
    ck_assert_int_eq(srv_morder_release(m, 2, 20), 0);
    emitted(NULL, 0);
    ck_assert_int_eq(srv_morder_release(m, 3, 30), -1);
    emitted(want, 3);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_gap_skipped_then_late_line)
{
    srv_morder *m = fresh(5, BIG);
    static const uint64_t want[] = { 6, 7, 5, 8 };

    add(m, 6, 1, 0);
    add(m, 7, 1, 0);
    ck_assert_int_gt(srv_morder_release(m, 2, GAP_MS - 1), 0);
    emitted(NULL, 0);
    ck_assert_int_eq(srv_morder_release(m, 3, GAP_MS), -1);
    emitted(want, 2);
    ck_assert_uint_eq(srv_morder_next(m), 8);
    /* 5 was skipped: it leaves as it comes (after a round), 8 after it */
    add(m, 5, 4, GAP_MS + 1);
    add(m, 8, 4, GAP_MS + 1);
    ck_assert_int_eq(srv_morder_release(m, 4, GAP_MS + 1), 0);
    ck_assert_int_eq(srv_morder_release(m, 5, GAP_MS + 1), -1);
    emitted(want, 4);
    ck_assert_uint_eq(srv_morder_next(m), 9);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_skip_only_to_an_earlier_round)
{
    srv_morder *m = fresh(5, BIG);
    static const uint64_t want[] = { 6 };

    /* Its gap is long expired, but it was read by this round's sweep:
     * a line before it may have been written since that link was read. */
    add(m, 6, 3, 0);
    ck_assert_int_eq(srv_morder_release(m, 3, 10 * GAP_MS), 0);
    emitted(NULL, 0);
    ck_assert_int_eq(srv_morder_release(m, 4, 10 * GAP_MS), -1);
    emitted(want, 1);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_gap_timed_from_when_it_was_known)
{
    srv_morder *m = fresh(0, BIG);
    static const uint64_t want[] = { 2, 4, 6 };

    /* 0, 3 and 5 never come (a killed worker's): 2, 4 and 6 came at 0. */
    add(m, 2, 1, 0);
    add(m, 4, 1, 0);
    add(m, 6, 1, 0);
    ck_assert_int_eq(srv_morder_release(m, 2, 0), GAP_MS);
    /* One wait for all three gaps, not one each. */
    ck_assert_int_eq(srv_morder_release(m, 3, GAP_MS), -1);
    emitted(want, 3);
    /* A line coming later than the gap was known waits no longer. */
    nout = 0;
    add(m, 9, 4, 2 * GAP_MS);
    ck_assert_int_eq(srv_morder_release(m, 5, 2 * GAP_MS), GAP_MS);
    add(m, 8, 5, 2 * GAP_MS + GAP_MS / 2); /* a newer first line */
    ck_assert_int_eq(srv_morder_release(m, 6, 3 * GAP_MS), -1);
    static const uint64_t later[] = { 8, 9 };
    emitted(later, 2);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_overflow_releases_the_oldest_in_order)
{
    /* "line 1" .. "line 9": 6 bytes each; room for three */
    srv_morder *m = fresh(0, 18);
    static const uint64_t want[] = { 2, 3, 4, 5, 6 };

    add(m, 3, 1, 0);
    add(m, 2, 1, 0);
    add(m, 4, 1, 0);
    emitted(NULL, 0);
    add(m, 6, 1, 0); /* over: 2 goes */
    emitted(want, 1);
    add(m, 5, 1, 0); /* over: 3 goes */
    emitted(want, 2);
    ck_assert_uint_eq(srv_morder_held(m), 3);
    ck_assert_uint_eq(srv_morder_next(m), 4);
    ck_assert_int_eq(srv_morder_release(m, 2, 0), -1); /* no gap left */
    emitted(want, 5);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_restart_starts_at_the_counter)
{
    /* A broker started when the counter stood at 100: lines numbered
     * before it are late (their gaps were the old broker's), lines from
     * 100 on are ordered. */
    srv_morder *m = fresh(100, BIG);
    static const uint64_t want[] = { 98, 99, 100, 101 };

    add(m, 99, 1, 0);
    add(m, 101, 1, 0);
    add(m, 98, 1, 0);
    ck_assert_int_eq(srv_morder_release(m, 2, 0), GAP_MS);
    emitted(want, 2);
    add(m, 100, 2, 1);
    ck_assert_int_eq(srv_morder_release(m, 3, 1), -1);
    emitted(want, 4);
    srv_morder_destroy(&m);
}
END_TEST

START_TEST(test_destroy_drops_what_it_holds)
{
    srv_morder *m = fresh(0, BIG);

    add(m, 1, 1, 0);
    add(m, 2, 1, 0);
    srv_morder_destroy(&m);
    ck_assert_ptr_null(m);
    emitted(NULL, 0);
    srv_morder_destroy(&m); /* NULL: nothing */
}
END_TEST

/* A line of the model and when it comes (its number, late by a bit). */
typedef struct model_line {
    uint64_t seq;
    long key;
} model_line;

static int by_key(const void *a, const void *b)
{
    const model_line *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Lines 0..MODEL_LINES-1 each come up to MODEL_SPREAD places after their
 * turn, a few a round and a few rounds a millisecond: well within the
 * bound, so every one leaves, in order. */
START_TEST(test_model_all_in_order)
{
    srv_morder *m = fresh(0, BIG);
    static model_line lines[MODEL_LINES];
    uint64_t round = 1;
    int64_t now = 0;
    int i = 0;

    srandom(11);
    for (int k = 0; k < MODEL_LINES; k++)
        lines[k] = (model_line){ (uint64_t)k, k + random() % MODEL_SPREAD };
    qsort(lines, MODEL_LINES, sizeof lines[0], by_key);
    while (i < MODEL_LINES) {
        for (int b = (int)(random() % MODEL_BATCH); b > 0 && i < MODEL_LINES;
             b--, i++)
            add(m, lines[i].seq, round, now);
        srv_morder_release(m, ++round, now);
        if (round % MODEL_ROUNDS_PER_MS == 0)
            now++;
    }
    ck_assert_int_eq(srv_morder_release(m, ++round, now), -1);
    ck_assert_int_eq(nout, MODEL_LINES);
    for (int k = 0; k < MODEL_LINES; k++)
        ck_assert_uint_eq(out[k], (uint64_t)k);
    srv_morder_destroy(&m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("morder");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_in_order_after_one_round);
    tcase_add_test(tc, test_out_of_order_within_a_round);
    tcase_add_test(tc, test_contiguous_run_stops_at_this_round);
    tcase_add_test(tc, test_gap_filled_within_its_bound);
    tcase_add_test(tc, test_gap_skipped_then_late_line);
    tcase_add_test(tc, test_skip_only_to_an_earlier_round);
    tcase_add_test(tc, test_gap_timed_from_when_it_was_known);
    tcase_add_test(tc, test_restart_starts_at_the_counter);
    tcase_add_test(tc, test_destroy_drops_what_it_holds);
    suite_add_tcase(s, tc);
    tc = tcase_create("limits");
    tcase_add_test(tc, test_overflow_releases_the_oldest_in_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("model");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_all_in_order);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
