/*
 * check_bench_rand.c - larder-bench's random numbers and key choice:
 * determinism per seed and stream, ranges, uniformity, Zipf frequencies
 * against the exact distribution, the rank-scrambling bijection, laps of
 * the sequential and shuffled walks and where they start, hot-set shares,
 * and --dist parsing and formatting.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_rand.h"

#define DRAWS 400000
#define SMALL_N 10
#define BUCKETS 16
#define FREQ_TOLERANCE 0.01   /* absolute, on probabilities */
#define UNIFORM_TOLERANCE 0.1 /* relative, per bucket */
#define SEED 42
#define TIMEOUT_S 60

START_TEST(test_rng_deterministic)
{
    bench_rng a, b, c;

    bench_rng_seed(&a, SEED, 0);
    bench_rng_seed(&b, SEED, 0);
    bench_rng_seed(&c, SEED, 1);
    int same_stream = 1, other_stream_differs = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = bench_rng_next(&a), y = bench_rng_next(&b);
        uint64_t z = bench_rng_next(&c);
        same_stream &= x == y;
        other_stream_differs |= x != z;
    }
    ck_assert_msg(same_stream, "one seed and stream, one sequence");
    ck_assert_msg(other_stream_differs, "another stream, another sequence");
}
END_TEST

START_TEST(test_below_and_double_uniform)
{
    bench_rng r;
    unsigned counts[BUCKETS] = { 0 };

    bench_rng_seed(&r, SEED, 0);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t v = bench_rng_below(&r, BUCKETS);
        double d = bench_rng_double(&r);
        ck_assert_uint_lt(v, BUCKETS);
        ck_assert(d >= 0.0 && d < 1.0);
        counts[v]++;
    }
    for (int i = 0; i < BUCKETS; i++) {
        double want = (double)DRAWS / BUCKETS;
        ck_assert_msg(fabs(counts[i] - want) < want * UNIFORM_TOLERANCE,
                      "bucket %d: %u draws, want about %.0f", i, counts[i],
                      want);
    }
    ck_assert_uint_eq(bench_rng_below(&r, 1), 0);
}
END_TEST

/* Zipf ranks follow k^-alpha / H(n, alpha) within the tolerance. */
static void check_zipf(double alpha)
{
    bench_dist d;
    bench_rng r;
    unsigned counts[SMALL_N + 1] = { 0 };
    double h = 0;

    ck_assert_int_eq(bench_dist_init_zipf(&d, SMALL_N, alpha), 0);
    bench_rng_seed(&r, SEED, 0);
    for (int k = 1; k <= SMALL_N; k++)
        h += pow(k, -alpha);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = bench_dist_zipf_rank(&d, &r);
        ck_assert(k >= 1 && k <= SMALL_N);
        counts[k]++;
    }
    for (int k = 1; k <= SMALL_N; k++) {
        double got = (double)counts[k] / DRAWS, want = pow(k, -alpha) / h;
        ck_assert_msg(fabs(got - want) < FREQ_TOLERANCE,
                      "alpha %.2f rank %d: %.4f, want %.4f", alpha, k, got,
                      want);
    }
}

START_TEST(test_zipf_frequencies)
{
    check_zipf(0.5);
    check_zipf(0.99);
    check_zipf(1.5);
}
END_TEST

START_TEST(test_dist_next_in_range_and_bijective)
{
    static const char *const specs[] = { "uniform", "zipf:0.99", "hot:10:90",
                                         "sequential", "shuffled" };
    const uint64_t n = 1000;

    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        bench_dist d;
        bench_rng r;
        uint64_t seq = 0;
        ck_assert_int_eq(bench_dist_parse(&d, specs[s], n), 0);
        bench_rng_seed(&r, SEED, 0);
        for (int i = 0; i < DRAWS / 10; i++)
            ck_assert_uint_lt(bench_dist_next(&d, &r, &seq), n);
    }
    /* Sequential and shuffled visit every key once per lap. */
    for (size_t s = 3; s < sizeof specs / sizeof specs[0]; s++) {
        bench_dist d;
        bench_rng r;
        uint64_t seq = 0, prev = 0, adjacent = 0;
        char *seen = calloc(n, 1);
        ck_assert_ptr_nonnull(seen);
        ck_assert_int_eq(bench_dist_parse(&d, specs[s], n), 0);
        bench_rng_seed(&r, SEED, 0);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t k = bench_dist_next(&d, &r, &seq);
            seen[k]++;
            adjacent += i > 0 && k == prev + 1;
            prev = k;
        }
        for (uint64_t i = 0; i < n; i++)
            ck_assert_msg(seen[i] == 1,
                          "%s: key %llu seen %d times in one "
                          "lap",
                          specs[s], (unsigned long long)i, seen[i]);
        /* Shuffled: successive keys are not neighbours. */
        if (strcmp(specs[s], "shuffled") == 0)
            ck_assert_uint_eq(adjacent, 0);
        else
            ck_assert_uint_eq(adjacent, n - 1);
        free(seen);
    }
}
END_TEST

START_TEST(test_sequence_start)
{
    /* A walk may start anywhere: two chunks of a lap, each its own
     * counter, draw disjoint keys (larder-bench --seq-start). */
    const uint64_t n = 1000, half = n / 2;
    bench_dist d;
    bench_rng r;
    uint64_t a = 0, b = half;
    char *seen = calloc(n, 1);

    ck_assert_ptr_nonnull(seen);
    ck_assert_int_eq(bench_dist_parse(&d, "shuffled", n), 0);
    bench_rng_seed(&r, SEED, 0);
    for (uint64_t i = 0; i < half; i++) {
        seen[bench_dist_next(&d, &r, &a)]++;
        seen[bench_dist_next(&d, &r, &b)]++;
    }
    for (uint64_t i = 0; i < n; i++)
        ck_assert_int_eq(seen[i], 1);
    free(seen);
}
END_TEST

static int cmp_desc(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

START_TEST(test_hot_set_share)
{
    const uint64_t n = 1000;
    bench_dist d;
    bench_rng r;
    uint64_t seq = 0;
    unsigned *counts = calloc(n, sizeof *counts);
    unsigned long top = 0;

    ck_assert_ptr_nonnull(counts);
    ck_assert_int_eq(bench_dist_parse(&d, "hot:10:90", n), 0);
    bench_rng_seed(&r, SEED, 0);
    for (int i = 0; i < DRAWS; i++)
        counts[bench_dist_next(&d, &r, &seq)]++;
    qsort(counts, n, sizeof *counts, cmp_desc);
    for (uint64_t i = 0; i < n / 10; i++)
        top += counts[i];
    double share = (double)top / DRAWS;
    /* 90% to the hot 10%, plus the cold draws that land on them. */
    ck_assert_msg(share > 0.88 && share < 0.93,
                  "hottest 10%% of keys got %.3f of draws", share);
    free(counts);
}
END_TEST

START_TEST(test_parse_and_format)
{
    bench_dist d;
    char buf[64];

    ck_assert_int_eq(bench_dist_parse(&d, "zipf:0.99", 100), 0);
    bench_dist_format(&d, buf, sizeof buf);
    ck_assert_str_eq(buf, "zipf:0.99");
    ck_assert_int_eq(bench_dist_parse(&d, "uniform", 100), 0);
    bench_dist_format(&d, buf, sizeof buf);
    ck_assert_str_eq(buf, "uniform");
    ck_assert_int_eq(bench_dist_parse(&d, "shuffled", 100), 0);
    bench_dist_format(&d, buf, sizeof buf);
    ck_assert_str_eq(buf, "shuffled");
    ck_assert_int_eq(bench_dist_parse(&d, "bogus", 100), EINVAL);
    ck_assert_int_eq(bench_dist_parse(&d, "zipf:0", 100), EINVAL);
    ck_assert_int_eq(bench_dist_parse(&d, "zipf:abc", 100), EINVAL);
    ck_assert_int_eq(bench_dist_parse(&d, "hot:0:50", 100), EINVAL);
    ck_assert_int_eq(bench_dist_parse(&d, "hot:10:150", 100), EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bench_rand");
    TCase *tc = tcase_create("core");

    /* Hundreds of thousands of draws per test: seconds on a busy machine,
     * past Check's 4 s default. */
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_rng_deterministic);
    tcase_add_test(tc, test_below_and_double_uniform);
    tcase_add_test(tc, test_zipf_frequencies);
    tcase_add_test(tc, test_dist_next_in_range_and_bijective);
    tcase_add_test(tc, test_sequence_start);
    tcase_add_test(tc, test_hot_set_share);
    tcase_add_test(tc, test_parse_and_format);
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
