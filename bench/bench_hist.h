/*
 * bench_hist: a log-linear latency histogram for larder-bench.
 *
 * Values (nanoseconds, or any unsigned unit) below 2^(SUB_BITS+1) are kept
 * exactly; above that each power of two is split into 2^SUB_BITS equal
 * buckets, so a bucket is at most 1/128 of its value wide and the midpoint a
 * percentile reports is within 0.4% of any value recorded in it (the bound
 * the tool promises is 1%).  The layout is fixed at compile time, so
 * histograms merge by adding counts.  One histogram belongs to one thread;
 * nothing here locks.
 */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stddef.h>
#include <stdint.h>

/* Sub-buckets per power of two are 2^BENCH_HIST_SUB_BITS. */
#define BENCH_HIST_SUB_BITS 7
/* Values at or above 2^BENCH_HIST_MAX_BITS are clamped into the top bucket
 * (2^44 ns is almost five hours); min and max stay exact. */
#define BENCH_HIST_MAX_BITS 44
/* Number of buckets: the exact range 0 .. 2^(SUB_BITS+1)-1, then one row of
 * 2^SUB_BITS buckets per power of two up to 2^MAX_BITS. */
#define BENCH_HIST_BUCKETS \
    ((BENCH_HIST_MAX_BITS - BENCH_HIST_SUB_BITS + 1) << BENCH_HIST_SUB_BITS)
/* Largest relative error of a reported percentile (a fraction). */
#define BENCH_HIST_REL_ERROR (1.0 / (1 << (BENCH_HIST_SUB_BITS + 1)))

typedef struct bench_hist bench_hist;

/*
 * Allocate an empty histogram into *out.
 * Returns 0, or ENOMEM.  The caller owns it and frees it with
 * bench_hist_destroy().
 */
int bench_hist_create(bench_hist **out);

/* Free *h (NULL is fine) and set *h to NULL. */
void bench_hist_destroy(bench_hist **h);

/* Forget every recorded value. */
void bench_hist_reset(bench_hist *h);

/* Record value v once. */
void bench_hist_record(bench_hist *h, uint64_t v);

/* Record value v n times (n may be 0). */
void bench_hist_record_n(bench_hist *h, uint64_t v, uint64_t n);

/* Add every count of src into dst; src is unchanged. */
void bench_hist_merge(bench_hist *dst, const bench_hist *src);

/* Number of values recorded. */
uint64_t bench_hist_count(const bench_hist *h);

/* Smallest and largest value recorded, exact; 0 when empty. */
uint64_t bench_hist_min(const bench_hist *h);
uint64_t bench_hist_max(const bench_hist *h);

/* Arithmetic mean of the recorded values, exact; 0 when empty. */
double bench_hist_mean(const bench_hist *h);

/*
 * The value at percentile q (0 < q <= 100) by nearest rank: the smallest
 * recorded value v such that at least q% of the values are <= v, reported
 * as the midpoint of v's bucket clamped to [min, max], so within
 * BENCH_HIST_REL_ERROR of v.  Returns 0 when the histogram is empty;
 * q <= 0 gives the minimum and q >= 100 the maximum.
 */
uint64_t bench_hist_percentile(const bench_hist *h, double q);

/* Bucket index of v, and the lowest and highest value of bucket i
 * (exposed for the unit test). */
size_t bench_hist_index(uint64_t v);
uint64_t bench_hist_bucket_low(size_t i);
uint64_t bench_hist_bucket_high(size_t i);

#endif /* BENCH_HIST_H */
