/*
 * srv_hll.c - HyperLogLog in Redis's value format (srv_hll.h): header,
 * dense registers, the sparse run-length opcodes and their in-place
 * update, promotion, merge, the estimator, PFDEBUG's decoding and the
 * self-test.
 */
#include "server/srv_hll.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAGIC "HYLL"
#define MAGIC_LEN 4
#define OFF_ENCODING 4
#define OFF_CARD 8
#define CARD_BYTES 8
#define CARD_STALE 0x80u /* top bit of the last card byte */
#define REG_MAX ((1u << SRV_HLL_BITS) - 1)
#define P_MASK (SRV_HLL_REGISTERS - 1)
#define Q (64 - SRV_HLL_P) /* hash bits that count the zero run */
#define HASH_SEED 0xadc83b19ull
#define ALPHA_INF 0.721347520444481703680 /* 0.5 / ln 2 */
#define HISTO_SIZE 64

/* Sparse opcodes. */
#define OP_KIND_MASK 0xc0u
#define OP_XZERO_BIT 0x40u
#define OP_VAL_BIT 0x80u
#define ZERO_MAX_LEN 64
#define XZERO_MAX_LEN 16384
#define VAL_MAX_VALUE 32
#define VAL_MAX_LEN 4
/* The longest sequence one split writes: XZERO VAL XZERO. */
#define SPLIT_MAX 5
/* How many opcodes from the one before the change the merge looks at. */
#define MERGE_SCAN 5

#define IS_ZERO(p) ((*(p)&OP_KIND_MASK) == 0)
#define IS_XZERO(p) ((*(p)&OP_KIND_MASK) == OP_XZERO_BIT)
#define IS_VAL(p) ((*(p)&OP_VAL_BIT) != 0)
#define ZERO_LEN(p) ((*(p)&0x3f) + 1)
#define XZERO_LEN(p) ((((*(p)&0x3f) << 8) | (p)[1]) + 1)
#define VAL_VALUE(p) (((*(p) >> 2) & 0x1f) + 1)
#define VAL_LEN(p) ((*(p)&0x3) + 1)

static void put_val(uint8_t *p, int value, int len)
{
    *p = (uint8_t)(((value - 1) << 2) | (len - 1) | OP_VAL_BIT);
}

static void put_zero(uint8_t *p, int len) { *p = (uint8_t)(len - 1); }

static void put_xzero(uint8_t *p, int len)
{
    int l = len - 1;

    p[0] = (uint8_t)((l >> 8) | OP_XZERO_BIT);
    p[1] = (uint8_t)(l & 0xff);
}

/* A run of `len` zero registers as one ZERO or XZERO opcode at p;
 * returns its size. */
static int put_zeros(uint8_t *p, int len)
{
    if (len > ZERO_MAX_LEN) {
        put_xzero(p, len);
        return 2;
    }
    put_zero(p, len);
    return 1;
}

/* ------------------------------------------------------------------ */
/* hash */

#define MURMUR_M 0xc6a4a7935bd1e995ull
#define MURMUR_R 47

uint64_t srv_hll_hash(const void *key, size_t n, uint64_t seed)
{
    const uint8_t *d = key, *end = d + (n - (n & 7));
    uint64_t h = seed ^ ((uint64_t)n * MURMUR_M);

    for (; d != end; d += 8) {
        uint64_t k = 0;
        for (int i = 7; i >= 0; i--)
            k = (k << 8) | d[i]; /* little-endian word */
        k *= MURMUR_M;
        k ^= k >> MURMUR_R;
        k *= MURMUR_M;
        h ^= k;
        h *= MURMUR_M;
    }
    if (n & 7) {
        for (int i = (int)(n & 7) - 1; i >= 0; i--)
            h ^= (uint64_t)d[i] << (8 * i);
        h *= MURMUR_M;
    }
    h ^= h >> MURMUR_R;
    h *= MURMUR_M;
    h ^= h >> MURMUR_R;
    return h;
}

/* The register an element lands in and its candidate value (1..Q+1). */
static int pattern(const void *ele, size_t n, long *index)
{
    uint64_t h = srv_hll_hash(ele, n, HASH_SEED);
    int count = 1;

    *index = (long)(h & P_MASK);
    h >>= SRV_HLL_P;
    h |= (uint64_t)1 << Q; /* the run ends at Q + 1 at the latest */
    while (!(h & 1)) {
        count++;
        h >>= 1;
    }
    return count;
}

/* ------------------------------------------------------------------ */
/* header and dense registers */

int srv_hll_valid(const uint8_t *p, size_t len)
{
    if (len < SRV_HLL_HDR_SIZE || memcmp(p, MAGIC, MAGIC_LEN) != 0 ||
        p[OFF_ENCODING] > SRV_HLL_SPARSE)
        return 0;
    return p[OFF_ENCODING] != SRV_HLL_DENSE || len == SRV_HLL_DENSE_SIZE;
}

int srv_hll_encoding(const uint8_t *p) { return p[OFF_ENCODING]; }

size_t srv_hll_init(uint8_t *buf)
{
    memset(buf, 0, SRV_HLL_HDR_SIZE);
    memcpy(buf, MAGIC, MAGIC_LEN);
    buf[OFF_ENCODING] = SRV_HLL_SPARSE;
    put_xzero(buf + SRV_HLL_HDR_SIZE, XZERO_MAX_LEN);
    return SRV_HLL_HDR_SIZE + 2;
}

int srv_hll_cached(const uint8_t *p, uint64_t *card)
{
    uint64_t v = 0;

    if (p[OFF_CARD + CARD_BYTES - 1] & CARD_STALE)
        return 0;
    for (int i = CARD_BYTES - 1; i >= 0; i--)
        v = (v << 8) | p[OFF_CARD + i];
    *card = v;
    return 1;
}

void srv_hll_set_cached(uint8_t *p, uint64_t card)
{
    for (int i = 0; i < CARD_BYTES; i++)
        p[OFF_CARD + i] = (uint8_t)(card >> (8 * i));
}

void srv_hll_invalidate(uint8_t *p)
{
    p[OFF_CARD + CARD_BYTES - 1] |= CARD_STALE;
}

/* Register i of dense registers r (the byte after the last is read as 0). */
static unsigned dense_get(const uint8_t *r, long i)
{
    size_t byte = (size_t)i * SRV_HLL_BITS / 8;
    unsigned fb = (unsigned)((size_t)i * SRV_HLL_BITS & 7);
    unsigned b0 = r[byte];
    unsigned b1 = byte + 1 < SRV_HLL_DENSE_SIZE - SRV_HLL_HDR_SIZE ? r[byte + 1]
                                                                   : 0;

    return ((b0 >> fb) | (b1 << (8 - fb))) & REG_MAX;
}

static void dense_put(uint8_t *r, long i, unsigned v)
{
    size_t byte = (size_t)i * SRV_HLL_BITS / 8;
    unsigned fb = (unsigned)((size_t)i * SRV_HLL_BITS & 7);

    r[byte] = (uint8_t)((r[byte] & ~(REG_MAX << fb)) | (v << fb));
    if (byte + 1 < SRV_HLL_DENSE_SIZE - SRV_HLL_HDR_SIZE)
        r[byte + 1] = (uint8_t)((r[byte + 1] & ~(REG_MAX >> (8 - fb))) |
                                (v >> (8 - fb)));
}

static int dense_set(uint8_t *r, long i, int count)
{
    if ((unsigned)count <= dense_get(r, i))
        return 0;
    dense_put(r, i, (unsigned)count);
    return 1;
}

/* ------------------------------------------------------------------ */
/* sparse */

/*
 * Walk the opcodes of the sparse body [p, end): fn(ctx, value, run) per
 * opcode (value 0 for zero runs). Returns the number of registers covered,
 * or -1 when a run would pass the register count.
 */
static long sparse_walk(const uint8_t *p, const uint8_t *end,
                        void (*fn)(void *, int, int, long), void *ctx)
{
    long idx = 0;

    while (p < end) {
        int value = 0, run;
        if (IS_ZERO(p)) {
            run = ZERO_LEN(p);
            p++;
        } else if (IS_XZERO(p)) {
            if (p + 1 >= end)
                return -1;
            run = XZERO_LEN(p);
            p += 2;
        } else {
            value = VAL_VALUE(p);
            run = VAL_LEN(p);
            p++;
        }
        if (idx + run > SRV_HLL_REGISTERS)
            return -1;
        if (fn)
            fn(ctx, value, run, idx);
        idx += run;
    }
    return idx;
}

static void fill_dense(void *ctx, int value, int run, long idx)
{
    for (int i = 0; value && i < run; i++)
        dense_put(ctx, idx + i, (unsigned)value);
}

int srv_hll_to_dense(uint8_t *buf, size_t *len)
{
    uint8_t regs[SRV_HLL_DENSE_SIZE - SRV_HLL_HDR_SIZE];

    if (buf[OFF_ENCODING] == SRV_HLL_DENSE)
        return 0;
    memset(regs, 0, sizeof regs);
    if (sparse_walk(buf + SRV_HLL_HDR_SIZE, buf + *len, fill_dense, regs) !=
        SRV_HLL_REGISTERS)
        return -1;
    memcpy(buf + SRV_HLL_HDR_SIZE, regs, sizeof regs);
    buf[OFF_ENCODING] = SRV_HLL_DENSE;
    *len = SRV_HLL_DENSE_SIZE;
    return 1;
}

/*
 * After a change at opcode `from` (the one before the change, or the
 * first), join neighbouring VAL opcodes of one value whose runs fit one
 * opcode, looking at MERGE_SCAN opcodes as Redis does.
 */
static void sparse_merge(uint8_t *from, uint8_t **end, size_t *len)
{
    uint8_t *p = from;
    int scan = MERGE_SCAN;

    while (p < *end && scan--) {
        if (IS_XZERO(p)) {
            p += 2;
            continue;
        }
        if (IS_ZERO(p)) {
            p++;
            continue;
        }
        if (p + 1 < *end && IS_VAL(p + 1) && VAL_VALUE(p) == VAL_VALUE(p + 1)) {
            int run = VAL_LEN(p) + VAL_LEN(p + 1);
            if (run <= VAL_MAX_LEN) {
                put_val(p + 1, VAL_VALUE(p), run);
                memmove(p, p + 1, (size_t)(*end - p - 1));
                (*end)--;
                (*len)--;
                continue; /* the joined run may join the next one */
            }
        }
        p++;
    }
}

/* Raise register `index` of a sparse value (see srv_hll_set). */
static int sparse_set(uint8_t *buf, size_t *len, size_t sparse_max, long index,
                      int count)
{
    uint8_t *body = buf + SRV_HLL_HDR_SIZE, *end = buf + *len;
    uint8_t *p = body, *prev = NULL, *next;
    uint8_t seq[SPLIT_MAX], *n = seq;
    long first = 0, span = 0;
    int run, value = 0, oplen = 1;

    if (count > VAL_MAX_VALUE)
        goto promote;
    /* The opcode covering the register. */
    while (p < end) {
        oplen = 1;
        if (IS_ZERO(p))
            span = ZERO_LEN(p);
        else if (IS_VAL(p))
            span = VAL_LEN(p);
        else {
            span = XZERO_LEN(p);
            oplen = 2;
        }
        if (index <= first + span - 1)
            break;
        prev = p;
        p += oplen;
        first += span;
    }
    if (span == 0 || p >= end)
        return -1;
    next = p + oplen < end ? p + oplen : NULL;
    run = (int)span;
    if (IS_VAL(p)) {
        value = VAL_VALUE(p);
        if (value >= count)
            return 0;
        if (run == 1) {
            put_val(p, count, 1);
            goto updated;
        }
    } else if (IS_ZERO(p) && run == 1) {
        put_val(p, count, 1);
        goto updated;
    }
    /* Split the run around the register. */
    {
        long last = first + span - 1;
        if (value == 0) {
            if (index != first)
                n += put_zeros(n, (int)(index - first));
            put_val(n++, count, 1);
            if (index != last)
                n += put_zeros(n, (int)(last - index));
        } else {
            if (index != first)
                put_val(n++, value, (int)(index - first));
            put_val(n++, count, 1);
            if (index != last)
                put_val(n++, value, (int)(last - index));
        }
        long seqlen = n - seq, delta = seqlen - oplen;
        if (delta > 0 && *len + (size_t)delta > sparse_max)
            goto promote;
        if (delta && next)
            memmove(next + delta, next, (size_t)(end - next));
        memcpy(p, seq, (size_t)seqlen);
        end += delta;
        *len = (size_t)((long)*len + delta);
    }
updated:
    sparse_merge(prev ? prev : body, &end, len);
    srv_hll_invalidate(buf);
    return 1;
promote:
    if (srv_hll_to_dense(buf, len) < 0)
        return -1;
    dense_set(buf + SRV_HLL_HDR_SIZE, index, count);
    return 1;
}

int srv_hll_set(uint8_t *buf, size_t *len, size_t sparse_max, long index,
                int count)
{
    if (buf[OFF_ENCODING] == SRV_HLL_DENSE)
        return dense_set(buf + SRV_HLL_HDR_SIZE, index, count);
    return sparse_set(buf, len, sparse_max, index, count);
}

int srv_hll_add(uint8_t *buf, size_t *len, size_t sparse_max, const void *ele,
                size_t n)
{
    long index;
    int count = pattern(ele, n, &index);
    int rc = srv_hll_set(buf, len, sparse_max, index, count);

    if (rc == 1)
        srv_hll_invalidate(buf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* the estimate */

static double sigma(double x)
{
    double y = 1, z = x, prev;

    if (x == 1.)
        return INFINITY;
    do {
        x *= x;
        prev = z;
        z += x * y;
        y += y;
    } while (prev != z);
    return z;
}

static double tau(double x)
{
    double y = 1.0, z = 1 - x, prev;

    if (x == 0. || x == 1.)
        return 0.;
    do {
        x = sqrt(x);
        prev = z;
        y *= 0.5;
        z -= pow(1 - x, 2) * y;
    } while (prev != z);
    return z / 3;
}

/* Ertl, "New cardinality estimation algorithms for HyperLogLog
 * sketches", from the histogram of register values. */
static uint64_t estimate(const int *histo)
{
    double m = SRV_HLL_REGISTERS;
    double z = m * tau((m - histo[Q + 1]) / m);

    for (int j = Q; j >= 1; --j) {
        z += histo[j];
        z *= 0.5;
    }
    z += m * sigma(histo[0] / m);
    return (uint64_t)llroundl(ALPHA_INF * m * m / z);
}

static void histo_run(void *ctx, int value, int run, long idx)
{
    (void)idx;
    ((int *)ctx)[value] += run;
}

int srv_hll_count(const uint8_t *p, size_t len, uint64_t *card)
{
    int histo[HISTO_SIZE] = { 0 };

    if (p[OFF_ENCODING] == SRV_HLL_DENSE) {
        for (long i = 0; i < SRV_HLL_REGISTERS; i++)
            histo[dense_get(p + SRV_HLL_HDR_SIZE, i)]++;
    } else if (sparse_walk(p + SRV_HLL_HDR_SIZE, p + len, histo_run, histo) !=
               SRV_HLL_REGISTERS) {
        return -1;
    }
    *card = estimate(histo);
    return 0;
}

uint64_t srv_hll_count_registers(const uint8_t *max)
{
    int histo[HISTO_SIZE] = { 0 };

    for (long i = 0; i < SRV_HLL_REGISTERS; i++)
        histo[max[i] & (HISTO_SIZE - 1)]++;
    return estimate(histo);
}

static void max_run(void *ctx, int value, int run, long idx)
{
    uint8_t *max = ctx;

    for (int i = 0; value && i < run; i++)
        if (max[idx + i] < value)
            max[idx + i] = (uint8_t)value;
}

int srv_hll_merge(uint8_t *max, const uint8_t *p, size_t len)
{
    if (p[OFF_ENCODING] == SRV_HLL_DENSE) {
        for (long i = 0; i < SRV_HLL_REGISTERS; i++) {
            unsigned v = dense_get(p + SRV_HLL_HDR_SIZE, i);
            if (v > max[i])
                max[i] = (uint8_t)v;
        }
        return 0;
    }
    return sparse_walk(p + SRV_HLL_HDR_SIZE, p + len, max_run, max) ==
                   SRV_HLL_REGISTERS
               ? 0
               : -1;
}

int srv_hll_registers(const uint8_t *p, size_t len, uint8_t *out)
{
    memset(out, 0, SRV_HLL_REGISTERS);
    return srv_hll_merge(out, p, len);
}

long srv_hll_decode(const uint8_t *p, size_t len, char *out, size_t cap)
{
    const uint8_t *q = p + SRV_HLL_HDR_SIZE, *end = p + len;
    size_t n = 0;

    while (q < end) {
        int w;
        size_t room = cap - n;
        if (IS_ZERO(q)) {
            w = snprintf(out + n, room, "z:%d ", ZERO_LEN(q));
            q++;
        } else if (IS_XZERO(q) && q + 1 < end) {
            w = snprintf(out + n, room, "Z:%d ", XZERO_LEN(q));
            q += 2;
        } else if (IS_XZERO(q)) {
            break;
        } else {
            w = snprintf(out + n, room, "v:%d,%d ", VAL_VALUE(q), VAL_LEN(q));
            q++;
        }
        if (w < 0 || (size_t)w >= room)
            return -1;
        n += (size_t)w;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    return (long)n;
}

/* ------------------------------------------------------------------ */
/* self-test */

#define SELFTEST_ELEMENTS 100000
#define SELFTEST_SPARSE_ELEMENTS 2000 /* compared with the dense twin */
#define SELFTEST_CHECK_EVERY 1000
/* Five standard errors of a 16384-register HLL (1.04 / sqrt(m)). */
#define SELFTEST_MAX_ERROR (5 * 1.04 / 128)
#define SELFTEST_SMALL 10

static int selftest_fail(char *err, size_t errlen, const char *what, int i)
{
    snprintf(err, errlen, "TESTFAILED %s after %d elements", what, i);
    return -1;
}

int srv_hll_selftest(char *err, size_t errlen)
{
    static uint8_t sparse[SRV_HLL_BUF_MAX], dense[SRV_HLL_BUF_MAX];
    static uint8_t ra[SRV_HLL_REGISTERS], rb[SRV_HLL_REGISTERS];
    size_t slen = srv_hll_init(sparse), dlen = srv_hll_init(dense);
    char ele[32];

    /* Packing: every register holds every value, neighbours untouched. */
    for (unsigned v = 0; v <= REG_MAX; v++) {
        uint8_t regs[SRV_HLL_DENSE_SIZE - SRV_HLL_HDR_SIZE];
        memset(regs, 0, sizeof regs);
        for (long i = 0; i < SRV_HLL_REGISTERS; i++)
            dense_put(regs, i, (v + (unsigned)i) & REG_MAX);
        for (long i = 0; i < SRV_HLL_REGISTERS; i++)
            if (dense_get(regs, i) != ((v + (unsigned)i) & REG_MAX)) {
                snprintf(err, errlen, "TESTFAILED Register error at index %ld",
                         i);
                return -1;
            }
    }
    srv_hll_to_dense(dense, &dlen);
    for (int i = 1; i <= SELFTEST_ELEMENTS; i++) {
        int n = snprintf(ele, sizeof ele, "selftest:%d", i);
        int twin = i <= SELFTEST_SPARSE_ELEMENTS;
        uint64_t cs, cd;
        if ((twin && srv_hll_add(sparse, &slen, SRV_HLL_BUF_MAX - SPLIT_MAX,
                                 ele, (size_t)n) < 0) ||
            srv_hll_add(dense, &dlen, 0, ele, (size_t)n) < 0)
            return selftest_fail(err, errlen, "corrupt HLL", i);
        if (i % SELFTEST_CHECK_EVERY && i > SELFTEST_SMALL)
            continue;
        if (srv_hll_count(dense, dlen, &cd))
            return selftest_fail(err, errlen, "corrupt HLL", i);
        /* The sparse twin agrees register by register and in its count. */
        if (twin && (srv_hll_registers(sparse, slen, ra) ||
                     srv_hll_registers(dense, dlen, rb) ||
                     memcmp(ra, rb, sizeof ra) != 0 ||
                     srv_hll_count(sparse, slen, &cs) || cs != cd))
            return selftest_fail(err, errlen, "sparse and dense HLLs differ",
                                 i);
        double rel = ((double)cd - i) / i;
        if (fabs(rel) > SELFTEST_MAX_ERROR && i >= SELFTEST_CHECK_EVERY) {
            snprintf(err, errlen,
                     "TESTFAILED Too big error. card:%llu abserr:%f",
                     (unsigned long long)cd, fabs((double)cd - i));
            return -1;
        }
    }
    return 0;
}
