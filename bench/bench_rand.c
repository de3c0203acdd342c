/*
 * bench_rand: generator and key distributions (see bench_rand.h).
 *
 * Zipf sampling is rejection-inversion (W. Hormann and G. Derflinger,
 * "Rejection-inversion to generate variates from monotone discrete
 * distributions", 1996): invert the integral of the continuous density
 * x^-alpha over [1.5, n+0.5], round to the nearest integer, and accept
 * with a cheap test that is almost always true.  It is exact, needs no
 * table, and costs the same for 10 keys or 10^9.
 */
#include "bench/bench_rand.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPLITMIX_GAMMA 0x9E3779B97F4A7C15ULL
#define SPLITMIX_MUL1 0xBF58476D1CE4E5B9ULL
#define SPLITMIX_MUL2 0x94D049BB133111EBULL
#define STREAM_MUL 0xD1342543DE82EF95ULL
#define DOUBLE_MANTISSA_BITS 53
/* Odd, prime multiplier for the rank -> key bijection (Knuth's). */
#define SCRAMBLE_BASE 2654435761ULL
/* Series cut-over for the helper functions below. */
#define SMALL_ARG 1e-8
#define PERCENT 100.0

/* The shift and multiplier constants in splitmix64() and bench_rng_next()
 * are those of the published algorithms (Vigna), not tunables. */
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += SPLITMIX_GAMMA);

    z = (z ^ (z >> 30)) * SPLITMIX_MUL1;
    z = (z ^ (z >> 27)) * SPLITMIX_MUL2;
    return z ^ (z >> 31);
}

void bench_rng_seed(bench_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * STREAM_MUL);
    int i;

    for (i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

uint64_t bench_rng_next(bench_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t bench_rng_below(bench_rng *r, uint64_t n)
{
    /* Multiply-shift: the bias is below 2^-64 * n, invisible here. */
    return (uint64_t)(((unsigned __int128)bench_rng_next(r) * n) >> 64);
}

double bench_rng_double(bench_rng *r)
{
    return (double)(bench_rng_next(r) >> (64 - DOUBLE_MANTISSA_BITS)) *
           (1.0 / (double)(1ULL << DOUBLE_MANTISSA_BITS));
}

/* log1p(x)/x, continuous at 0. */
static double helper1(double x)
{
    if (fabs(x) > SMALL_ARG)
        return log1p(x) / x;
    return 1.0 - x * (0.5 - x / 3.0);
}

/* expm1(x)/x, continuous at 0. */
static double helper2(double x)
{
    if (fabs(x) > SMALL_ARG)
        return expm1(x) / x;
    return 1.0 + x * 0.5 * (1.0 + x / 3.0);
}

/* Integral of x^-alpha from 1 to x, shifted (the constant cancels). */
static double h_integral(const bench_dist *d, double x)
{
    double lx = log(x);

    return helper2((1.0 - d->alpha) * lx) * lx;
}

static double h(const bench_dist *d, double x)
{
    return exp(-d->alpha * log(x));
}

static double h_integral_inverse(const bench_dist *d, double x)
{
    double t = x * (1.0 - d->alpha);

    if (t < -1.0)
        t = -1.0; /* rounding guard: the true argument is never below -1 */
    return exp(helper1(t) * x);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static void init_scramble(bench_dist *d)
{
    uint64_t m;

    if (d->keyspace <= 1) {
        d->scramble = 0;
        return;
    }
    m = SCRAMBLE_BASE % d->keyspace;
    if (m == 0)
        m = 1;
    while (gcd(m, d->keyspace) != 1)
        m++;
    d->scramble = m;
}

static uint64_t scramble(const bench_dist *d, uint64_t i)
{
    if (d->keyspace <= 1)
        return 0;
    return (uint64_t)(((unsigned __int128)i * d->scramble) % d->keyspace);
}

int bench_dist_init_zipf(bench_dist *d, uint64_t n, double alpha)
{
    if (n == 0 || !(alpha > 0.0) || !isfinite(alpha))
        return EINVAL;
    memset(d, 0, sizeof(*d));
    d->kind = BENCH_DIST_ZIPF;
    d->keyspace = n;
    d->alpha = alpha;
    d->h_x1 = h_integral(d, 1.5) - 1.0;
    d->h_n = h_integral(d, (double)n + 0.5);
    d->s_bound = 2.0 - h_integral_inverse(d, h_integral(d, 2.5) - h(d, 2.0));
    init_scramble(d);
    return 0;
}

uint64_t bench_dist_zipf_rank(const bench_dist *d, bench_rng *r)
{
    for (;;) {
        double u = d->h_n + bench_rng_double(r) * (d->h_x1 - d->h_n);
        double x = h_integral_inverse(d, u);
        double kd = floor(x + 0.5);
        uint64_t k;

        if (kd < 1.0)
            kd = 1.0;
        else if (kd > (double)d->keyspace)
            kd = (double)d->keyspace;
        k = (uint64_t)kd;
        if (kd - x <= d->s_bound || u >= h_integral(d, kd + 0.5) - h(d, kd))
            return k;
    }
}

uint64_t bench_dist_next(const bench_dist *d, bench_rng *r, uint64_t *seq)
{
    uint64_t i;

    switch (d->kind) {
    case BENCH_DIST_SEQUENTIAL: return (*seq)++ % d->keyspace;
    case BENCH_DIST_SHUFFLED: return scramble(d, (*seq)++ % d->keyspace);
    case BENCH_DIST_ZIPF: return scramble(d, bench_dist_zipf_rank(d, r) - 1);
    case BENCH_DIST_HOT:
        if (d->hot_keys >= d->keyspace || bench_rng_double(r) < d->hot_share)
            i = bench_rng_below(r, d->hot_keys);
        else
            i = d->hot_keys + bench_rng_below(r, d->keyspace - d->hot_keys);
        return scramble(d, i);
    case BENCH_DIST_UNIFORM:
    default: return bench_rng_below(r, d->keyspace);
    }
}

/* Parse a whole double from s; 0 or EINVAL. */
static int parse_double(const char *s, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(*out))
        return EINVAL;
    return 0;
}

int bench_dist_parse(bench_dist *d, const char *spec, uint64_t n)
{
    char buf[64];
    char *colon, *colon2;
    double a, b;

    if (n == 0 || strlen(spec) >= sizeof(buf))
        return EINVAL;
    strcpy(buf, spec);
    memset(d, 0, sizeof(*d));
    d->keyspace = n;
    if (strcmp(buf, "uniform") == 0) {
        d->kind = BENCH_DIST_UNIFORM;
        return 0;
    }
    if (strcmp(buf, "sequential") == 0) {
        d->kind = BENCH_DIST_SEQUENTIAL;
        return 0;
    }
    if (strcmp(buf, "shuffled") == 0) {
        d->kind = BENCH_DIST_SHUFFLED;
        init_scramble(d);
        return 0;
    }
    colon = strchr(buf, ':');
    if (colon == NULL)
        return EINVAL;
    *colon++ = '\0';
    if (strcmp(buf, "zipf") == 0) {
        if (parse_double(colon, &a) != 0)
            return EINVAL;
        return bench_dist_init_zipf(d, n, a);
    }
    if (strcmp(buf, "hot") != 0)
        return EINVAL;
    colon2 = strchr(colon, ':');
    if (colon2 == NULL)
        return EINVAL;
    *colon2++ = '\0';
    if (parse_double(colon, &a) != 0 || parse_double(colon2, &b) != 0)
        return EINVAL;
    if (!(a > 0.0 && a <= PERCENT) || !(b >= 0.0 && b <= PERCENT))
        return EINVAL;
    d->kind = BENCH_DIST_HOT;
    d->hot_fraction = a / PERCENT;
    d->hot_share = b / PERCENT;
    d->hot_keys = (uint64_t)llround((double)n * d->hot_fraction);
    if (d->hot_keys < 1)
        d->hot_keys = 1;
    if (d->hot_keys > n)
        d->hot_keys = n;
    init_scramble(d);
    return 0;
}

void bench_dist_format(const bench_dist *d, char *buf, unsigned len)
{
    switch (d->kind) {
    case BENCH_DIST_SEQUENTIAL: snprintf(buf, len, "sequential"); break;
    case BENCH_DIST_SHUFFLED: snprintf(buf, len, "shuffled"); break;
    case BENCH_DIST_ZIPF: snprintf(buf, len, "zipf:%g", d->alpha); break;
    case BENCH_DIST_HOT:
        snprintf(buf, len, "hot:%g:%g", d->hot_fraction * PERCENT,
                 d->hot_share * PERCENT);
        break;
    case BENCH_DIST_UNIFORM:
    default: snprintf(buf, len, "uniform"); break;
    }
}
