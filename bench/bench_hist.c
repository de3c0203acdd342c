/*
 * bench_hist: log-linear histogram (see bench_hist.h for the error bound).
 *
 * Bucket i < 2^(S+1) holds exactly the value i.  Above, a value whose top
 * set bit is m is shifted right by m - S, which leaves a mantissa in
 * [2^S, 2^(S+1)); the bucket is shift * 2^S + mantissa, so the rows of
 * consecutive powers of two follow each other with no gap.
 */
#include "bench/bench_hist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SUB_COUNT ((uint64_t)1 << BENCH_HIST_SUB_BITS)
#define EXACT_LIMIT (SUB_COUNT << 1)
#define PERCENT_ALL 100.0

struct bench_hist {
    uint64_t count;
    uint64_t min;
    uint64_t max;
    long double sum; /* for the mean; long double keeps ns sums exact */
    uint64_t buckets[BENCH_HIST_BUCKETS];
};

int bench_hist_create(bench_hist **out)
{
    bench_hist *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return ENOMEM;
    *out = h;
    return 0;
}

void bench_hist_destroy(bench_hist **h)
{
    if (h == NULL || *h == NULL)
        return;
    free(*h);
    *h = NULL;
}

void bench_hist_reset(bench_hist *h) { memset(h, 0, sizeof(*h)); }

size_t bench_hist_index(uint64_t v)
{
    unsigned top, shift;

    if (v < EXACT_LIMIT)
        return (size_t)v;
    top = 63u - (unsigned)__builtin_clzll(v);
    if (top >= BENCH_HIST_MAX_BITS)
        return BENCH_HIST_BUCKETS - 1;
    shift = top - BENCH_HIST_SUB_BITS;
    return (size_t)(((uint64_t)shift << BENCH_HIST_SUB_BITS) + (v >> shift));
}

uint64_t bench_hist_bucket_low(size_t i)
{
    unsigned shift;
    uint64_t mantissa;

    if (i < EXACT_LIMIT)
        return i;
    shift = (unsigned)(i >> BENCH_HIST_SUB_BITS) - 1;
    mantissa = i - ((uint64_t)shift << BENCH_HIST_SUB_BITS);
    return mantissa << shift;
}

uint64_t bench_hist_bucket_high(size_t i)
{
    unsigned shift;

    if (i < EXACT_LIMIT)
        return i;
    shift = (unsigned)(i >> BENCH_HIST_SUB_BITS) - 1;
    return bench_hist_bucket_low(i) + (((uint64_t)1 << shift) - 1);
}

void bench_hist_record_n(bench_hist *h, uint64_t v, uint64_t n)
{
    if (n == 0)
        return;
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count += n;
    h->sum += (long double)v * (long double)n;
    h->buckets[bench_hist_index(v)] += n;
}

void bench_hist_record(bench_hist *h, uint64_t v)
{
    bench_hist_record_n(h, v, 1);
}

void bench_hist_merge(bench_hist *dst, const bench_hist *src)
{
    size_t i;

    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->sum += src->sum;
    for (i = 0; i < BENCH_HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
}

uint64_t bench_hist_count(const bench_hist *h) { return h->count; }

uint64_t bench_hist_min(const bench_hist *h) { return h->min; }

uint64_t bench_hist_max(const bench_hist *h) { return h->max; }

double bench_hist_mean(const bench_hist *h)
{
    if (h->count == 0)
        return 0.0;
    return (double)(h->sum / (long double)h->count);
}

uint64_t bench_hist_percentile(const bench_hist *h, double q)
{
    uint64_t rank, seen = 0, low, high, mid;
    size_t i;
    double exact;

    if (h->count == 0)
        return 0;
    if (q <= 0.0)
        return h->min;
    if (q >= PERCENT_ALL)
        return h->max;
    /* Nearest rank: ceil(q/100 * count), at least 1. */
    exact = q / PERCENT_ALL * (double)h->count;
    rank = (uint64_t)exact;
    if ((double)rank < exact)
        rank++;
    if (rank == 0)
        rank = 1;
    for (i = 0; i < BENCH_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            break;
    }
    if (i == BENCH_HIST_BUCKETS)
        return h->max;
    low = bench_hist_bucket_low(i);
    high = bench_hist_bucket_high(i);
    mid = low + (high - low) / 2;
    if (mid < h->min)
        mid = h->min;
    if (mid > h->max)
        mid = h->max;
    return mid;
}
