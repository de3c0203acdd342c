/*
 * check_bench_hist: unit tests of larder-bench's latency histogram.
 *
 * Percentiles of known data (uniform 1..100000, bimodal, a single value,
 * empty) must come within the histogram's error bound of the exact
 * nearest-rank answer, and merging two histograms must equal recording
 * everything into one.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench/bench_hist.h"

/* The tool promises 1%; the layout should do better than that. */
#define PROMISED_REL_ERROR 0.01
#define UNIFORM_N 100000
#define BIMODAL_LOW 50    /* e.g. a 50 us cache hit */
#define BIMODAL_HIGH 5000 /* e.g. a 5 ms disk read */
#define BIMODAL_LOW_N 9000
#define BIMODAL_HIGH_N 1000
#define SINGLE_VALUE 123456789
#define TIMEOUT_S 30

static const double quantiles[] = { 1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99 };
#define N_QUANTILES (sizeof(quantiles) / sizeof(quantiles[0]))

/* Exact nearest-rank percentile of sorted values. */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double q)
{
    double exact = q / 100.0 * (double)n;
    size_t rank = (size_t)exact;

    if ((double)rank < exact)
        rank++;
    if (rank == 0)
        rank = 1;
    return sorted[rank - 1];
}

static void assert_close(uint64_t got, uint64_t want, double q)
{
    double diff = got > want ? (double)(got - want) : (double)(want - got);

    ck_assert_msg(diff <= (double)want * BENCH_HIST_REL_ERROR + 0.5,
                  "p%g: got %llu, want %llu", q, (unsigned long long)got,
                  (unsigned long long)want);
    ck_assert(diff <= (double)want * PROMISED_REL_ERROR + 0.5);
}

static void check_all_quantiles(const bench_hist *h, const uint64_t *sorted,
                                size_t n)
{
    size_t i;

    for (i = 0; i < N_QUANTILES; i++)
        assert_close(bench_hist_percentile(h, quantiles[i]),
                     exact_percentile(sorted, n, quantiles[i]), quantiles[i]);
}

START_TEST(test_layout)
{
    size_t i;
    uint64_t v;

    /* Buckets tile the value range with no gap and no overlap. */
    ck_assert_uint_eq(bench_hist_bucket_low(0), 0);
    for (i = 1; i < BENCH_HIST_BUCKETS; i++)
        ck_assert_uint_eq(bench_hist_bucket_low(i),
                          bench_hist_bucket_high(i - 1) + 1);
    /* Every value lands in the bucket that claims it, and buckets are
     * narrow enough for the error bound. */
    for (v = 1; v < ((uint64_t)1 << 40); v = v * 3 + 1) {
        size_t b = bench_hist_index(v);
        uint64_t low = bench_hist_bucket_low(b);
        uint64_t high = bench_hist_bucket_high(b);

        ck_assert(low <= v && v <= high);
        ck_assert((double)(high - low) / 2.0 <=
                  (double)low * BENCH_HIST_REL_ERROR);
    }
    ck_assert_uint_eq(bench_hist_index(UINT64_MAX), BENCH_HIST_BUCKETS - 1);
}
END_TEST

START_TEST(test_uniform)
{
    bench_hist *h = NULL;
    uint64_t *sorted = malloc(UNIFORM_N * sizeof(*sorted));
    size_t i;

    ck_assert_ptr_nonnull(sorted);
    ck_assert_int_eq(bench_hist_create(&h), 0);
    /* Record in a scrambled order: the result must not depend on it. */
    for (i = 0; i < UNIFORM_N; i++) {
        sorted[i] = i + 1;
        bench_hist_record(h, (i * 7919) % UNIFORM_N + 1);
    }
    ck_assert_uint_eq(bench_hist_count(h), UNIFORM_N);
    ck_assert_uint_eq(bench_hist_min(h), 1);
    ck_assert_uint_eq(bench_hist_max(h), UNIFORM_N);
    ck_assert_double_eq_tol(bench_hist_mean(h), (UNIFORM_N + 1) / 2.0, 1e-6);
    check_all_quantiles(h, sorted, UNIFORM_N);
    assert_close(bench_hist_percentile(h, 50.0), UNIFORM_N / 2, 50.0);
    ck_assert_uint_eq(bench_hist_percentile(h, 100.0), UNIFORM_N);
    ck_assert_uint_eq(bench_hist_percentile(h, 0.0), 1);
    bench_hist_destroy(&h);
    ck_assert_ptr_null(h);
    free(sorted);
}
END_TEST

START_TEST(test_bimodal)
{
    bench_hist *h = NULL;
    uint64_t sorted[BIMODAL_LOW_N + BIMODAL_HIGH_N];
    size_t i;

    ck_assert_int_eq(bench_hist_create(&h), 0);
    for (i = 0; i < BIMODAL_LOW_N; i++)
        sorted[i] = BIMODAL_LOW;
    for (i = 0; i < BIMODAL_HIGH_N; i++)
        sorted[BIMODAL_LOW_N + i] = BIMODAL_HIGH;
    bench_hist_record_n(h, BIMODAL_HIGH, BIMODAL_HIGH_N);
    bench_hist_record_n(h, BIMODAL_LOW, BIMODAL_LOW_N);
    check_all_quantiles(h, sorted, BIMODAL_LOW_N + BIMODAL_HIGH_N);
    /* The 90th percentile sits exactly on the boundary between modes. */
    ck_assert_uint_eq(bench_hist_percentile(h, 90.0), BIMODAL_LOW);
    ck_assert_uint_eq(bench_hist_percentile(h, 90.01), BIMODAL_HIGH);
    bench_hist_destroy(&h);
}
END_TEST

START_TEST(test_single_and_empty)
{
    bench_hist *h = NULL;
    size_t i;

    ck_assert_int_eq(bench_hist_create(&h), 0);
    ck_assert_uint_eq(bench_hist_count(h), 0);
    ck_assert_uint_eq(bench_hist_percentile(h, 50.0), 0);
    ck_assert_uint_eq(bench_hist_max(h), 0);
    ck_assert_double_eq(bench_hist_mean(h), 0.0);

    bench_hist_record(h, SINGLE_VALUE);
    /* Clamping to [min, max] makes a single value exact. */
    for (i = 0; i < N_QUANTILES; i++)
        ck_assert_uint_eq(bench_hist_percentile(h, quantiles[i]), SINGLE_VALUE);
    bench_hist_reset(h);
    ck_assert_uint_eq(bench_hist_count(h), 0);
    ck_assert_uint_eq(bench_hist_percentile(h, 99.0), 0);
    bench_hist_record(h, 0);
    ck_assert_uint_eq(bench_hist_percentile(h, 99.0), 0);
    bench_hist_destroy(&h);
    bench_hist_destroy(&h); /* NULL is fine */
}
END_TEST

START_TEST(test_merge)
{
    bench_hist *a = NULL, *b = NULL, *all = NULL, *empty = NULL;
    uint64_t *sorted = malloc(UNIFORM_N * sizeof(*sorted));
    size_t i;

    ck_assert_ptr_nonnull(sorted);
    ck_assert_int_eq(bench_hist_create(&a), 0);
    ck_assert_int_eq(bench_hist_create(&b), 0);
    ck_assert_int_eq(bench_hist_create(&all), 0);
    ck_assert_int_eq(bench_hist_create(&empty), 0);
    /* Two threads saw disjoint halves of 1..N, odd and even. */
    for (i = 0; i < UNIFORM_N; i++) {
        uint64_t v = i + 1;

        sorted[i] = v;
        bench_hist_record(v % 2 ? a : b, v);
        bench_hist_record(all, v);
    }
    bench_hist_merge(a, b);
    bench_hist_merge(a, empty);
    ck_assert_uint_eq(bench_hist_count(a), UNIFORM_N);
    ck_assert_uint_eq(bench_hist_min(a), 1);
    ck_assert_uint_eq(bench_hist_max(a), UNIFORM_N);
    for (i = 0; i < N_QUANTILES; i++)
        ck_assert_uint_eq(bench_hist_percentile(a, quantiles[i]),
                          bench_hist_percentile(all, quantiles[i]));
    check_all_quantiles(a, sorted, UNIFORM_N);
    /* Merging into an empty histogram copies. */
    bench_hist_merge(empty, all);
    ck_assert_uint_eq(bench_hist_min(empty), 1);
    ck_assert_uint_eq(bench_hist_percentile(empty, 99.0),
                      bench_hist_percentile(all, 99.0));
    bench_hist_destroy(&a);
    bench_hist_destroy(&b);
    bench_hist_destroy(&all);
    bench_hist_destroy(&empty);
    free(sorted);
}
END_TEST

START_TEST(test_large_values)
{
    bench_hist *h = NULL;
    uint64_t v = (uint64_t)1 << (BENCH_HIST_MAX_BITS + 2);

    ck_assert_int_eq(bench_hist_create(&h), 0);
    bench_hist_record(h, 1000);
    bench_hist_record(h, v); /* clamped into the top bucket */
    ck_assert_uint_eq(bench_hist_max(h), v);
    ck_assert_uint_eq(bench_hist_percentile(h, 100.0), v);
    assert_close(bench_hist_percentile(h, 50.0), 1000, 50.0);
    bench_hist_destroy(&h);
}
END_TEST

static Suite *bench_hist_suite(void)
{
    Suite *s = suite_create("bench_hist");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");

    tcase_set_timeout(core, TIMEOUT_S);
    tcase_add_test(core, test_layout);
    tcase_add_test(core, test_uniform);
    tcase_add_test(core, test_bimodal);
    tcase_add_test(core, test_merge);
    suite_add_tcase(s, core);
    tcase_set_timeout(limits, TIMEOUT_S);
    tcase_add_test(limits, test_single_and_empty);
    tcase_add_test(limits, test_large_values);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bench_hist_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
