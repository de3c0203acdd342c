/*
 * bench_rand: random numbers and key choice for larder-bench.
 *
 * A small fast generator (xoshiro256**, seeded through splitmix64), one per
 * connection so nothing is shared between threads, and the key
 * distributions: sequential, uniform, Zipf(alpha) by rejection-inversion
 * (O(1) memory and time for any keyspace) and a hot set.  Zipf and hot-set
 * ranks are spread over the keyspace by a fixed bijection, so the popular
 * keys are not neighbours in an ordered store; "shuffled" walks the keys
 * in that bijection's order (each key once per lap, as inserts into an
 * ordered store arrive when keys are random).
 */
#ifndef BENCH_RAND_H
#define BENCH_RAND_H

#include <stdbool.h>
#include <stdint.h>

typedef struct bench_rng {
    uint64_t s[4];
} bench_rng;

/* Seed *r from seed and a stream number (e.g. the connection index). */
void bench_rng_seed(bench_rng *r, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
uint64_t bench_rng_next(bench_rng *r);

/* Uniform integer in [0, n); n > 0. */
uint64_t bench_rng_below(bench_rng *r, uint64_t n);

/* Uniform double in [0, 1). */
double bench_rng_double(bench_rng *r);

typedef enum bench_dist_kind {
    BENCH_DIST_SEQUENTIAL,
    BENCH_DIST_SHUFFLED, /* sequential through the bijection: every key
                            once per lap, neighbours far apart */
    BENCH_DIST_UNIFORM,
    BENCH_DIST_ZIPF,
    BENCH_DIST_HOT
} bench_dist_kind;

/* A key distribution over [0, keyspace); immutable after init, so threads
 * share one. */
typedef struct bench_dist {
    bench_dist_kind kind;
    uint64_t keyspace;
    double alpha;        /* zipf */
    double hot_fraction; /* hot: share of keys that are hot, (0, 1] */
    double hot_share;    /* hot: share of requests they get, [0, 1] */
    uint64_t hot_keys;   /* hot: number of hot keys, >= 1 */
    uint64_t scramble;   /* multiplier coprime with keyspace */
    /* rejection-inversion constants (zipf) */
    double h_x1;
    double h_n;
    double s_bound;
} bench_dist;

/*
 * Parse a --dist spec ("sequential", "shuffled", "uniform", "zipf:ALPHA",
 * "hot:PCT:SHARE") for a keyspace of n keys into *d.
 * Returns 0, or EINVAL for a malformed spec or an out-of-range parameter.
 */
int bench_dist_parse(bench_dist *d, const char *spec, uint64_t n);

/* Set *d to Zipf(alpha) over n keys; alpha > 0.  Returns 0 or EINVAL. */
int bench_dist_init_zipf(bench_dist *d, uint64_t n, double alpha);

/*
 * Draw a key index in [0, keyspace).  *seq is the caller's sequence
 * counter, used (and advanced) only by the sequential and shuffled
 * distributions.
 */
uint64_t bench_dist_next(const bench_dist *d, bench_rng *r, uint64_t *seq);

/* Zipf rank in [1, keyspace] before scrambling (for the unit test and
 * bench_dist_next). */
uint64_t bench_dist_zipf_rank(const bench_dist *d, bench_rng *r);

/* Write the spec of *d in canonical form ("zipf:0.99") into buf. */
void bench_dist_format(const bench_dist *d, char *buf, unsigned len);

#endif /* BENCH_RAND_H */
