/* cachesim.c — hit ratios of the cache's eviction policies, measured on
 * the real shm_cache code in-process.
 *
 * Workload: N keys with equal-size values; accesses draw a key from a
 * Zipf(s) distribution over a fixed random permutation of the keys, and
 * every E accesses a full scan reads all N keys once in key order. Each
 * access is a get; a miss fills the value, as a worker does after reading
 * LMDB. The cache is sized at a percentage of the working set (N entries'
 * slab footprint). Prints one row per (policy, size).
 *
 *   tools/cachesim [--keys N] [--ops M] [--scan-every E] [--zipf S]
 *                  [--vlen B] [--sizes 10,50] [--stripes K] [--seed X]
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_cache.h"

#define SIM_KEYS_DEFAULT 200000
#define SIM_OPS_DEFAULT 4000000
#define SIM_SCAN_EVERY_DEFAULT 500000
#define SIM_ZIPF_DEFAULT 0.99
#define SIM_VLEN_DEFAULT 100
#define SIM_MAX_SIZES 8
#define SIM_KEY_MAX 32
#define SIM_WARMUP_DIV 10 /* first ops/10 accesses are not counted */
#define SIM_PCT 100.0
#define SIM_MIB (1024.0 * 1024.0)
#define SIM_TWO_POW_53 9007199254740992.0 /* doubles hold 53-bit ints */
#define SIM_FOOTPRINT_BUDGET (1024 * 1024)

typedef struct sim_opts {
    unsigned keys;
    unsigned long ops;
    unsigned long scan_every; /* 0 = no scans */
    double zipf;
    size_t vlen;
    unsigned nsizes;
    double sizes[SIM_MAX_SIZES]; /* percent of the working set */
    unsigned stripes;
    uint64_t seed;
} sim_opts;

typedef struct sim_result {
    unsigned long hits, gets;   /* counted accesses */
    unsigned long zhits, zgets; /* Zipf accesses only */
    unsigned long shits, sgets; /* scan accesses only */
    unsigned long refused;
} sim_result;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t g_rng;

static double rand01(void)
{
    g_rng += UINT64_C(0x9e3779b97f4a7c15);
    return (double)(mix64(g_rng) >> 11) / SIM_TWO_POW_53;
}

/* cdf[i] = P(rank <= i) for Zipf(s) over n ranks. */
static double *zipf_cdf(unsigned n, double s)
{
    double *cdf = malloc(sizeof(double) * n);
    double sum = 0;
    unsigned i;

    if (cdf == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        sum += 1.0 / pow((double)(i + 1), s);
        cdf[i] = sum;
    }
    for (i = 0; i < n; i++)
        cdf[i] /= sum;
    return cdf;
}

static unsigned zipf_draw(const double *cdf, unsigned n)
{
    double u = rand01();
    unsigned lo = 0, hi = n - 1;

    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t key_of(unsigned id, char *buf)
{
    return (size_t)snprintf(buf, SIM_KEY_MAX, "key:%08u", id);
}

/* One access: get; on a miss, fill as a reader that just read LMDB. */
static int access_key(shm_cache_t *c, unsigned id, const char *val, size_t vlen,
                      char *out_buf, sim_result *r)
{
    char key[SIM_KEY_MAX];
    size_t klen = key_of(id, key);
    uint64_t h = mix64(id + UINT64_C(0x1234567));
    shm_cache_value_t out;
    shm_cache_entry_t e;

    memset(&out, 0, sizeof(out));
    out.buf = out_buf;
    out.cap = vlen;
    if (shm_cache_get(c, key, klen, h, 0, &out) == 0)
        return 1;
    memset(&e, 0, sizeof(e));
    e.key = key;
    e.klen = klen;
    e.hash = h;
    e.val = val;
    e.vlen = vlen;
    e.version = 1;
    if (shm_cache_fill(c, &e, 1) == SHM_ESTALE)
        r->refused++;
    return 0;
}

/* Bytes one entry occupies in the slab (its chunk). */
static size_t entry_footprint(const sim_opts *o, const char *val)
{
    shm_cache_opts_t co;
    shm_cache_t *c = NULL;
    shm_cache_stats_t st;
    char buf[SIM_KEY_MAX];
    sim_result r;

    memset(&co, 0, sizeof(co));
    co.budget_bytes = SIM_FOOTPRINT_BUDGET;
    co.nstripes = 1;
    if (shm_cache_create(&co, &c) != 0)
        return 0;
    memset(&r, 0, sizeof(r));
    access_key(c, 0, val, o->vlen, buf, &r);
    shm_cache_stats(c, &st);
    shm_cache_destroy(&c);
    return st.bytes_used;
}

static int run(const sim_opts *o, shm_cache_policy_t pol, size_t budget,
               const double *cdf, const unsigned *perm, const char *val,
               sim_result *r)
{
    shm_cache_opts_t co;
    shm_cache_t *c = NULL;
    char *buf = malloc(o->vlen + 1);
    unsigned long op, warm = o->ops / SIM_WARMUP_DIV;
    int rc;

    memset(r, 0, sizeof(*r));
    memset(&co, 0, sizeof(co));
    co.budget_bytes = budget;
    co.nstripes = o->stripes;
    co.policy = pol;
    if (buf == NULL)
        return ENOMEM;
    rc = shm_cache_create(&co, &c);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    g_rng = o->seed; /* same access sequence for every policy */
    for (op = 0; op < o->ops; op++) {
        int hit;
        if (o->scan_every != 0 && op > 0 && op % o->scan_every == 0) {
            unsigned id;
            for (id = 0; id < o->keys; id++) {
                hit = access_key(c, id, val, o->vlen, buf, r);
                if (op >= warm) {
                    r->gets++;
                    r->sgets++;
                    r->hits += (unsigned long)hit;
                    r->shits += (unsigned long)hit;
                }
            }
        }
        hit = access_key(c, perm[zipf_draw(cdf, o->keys)], val, o->vlen, buf,
                         r);
        if (op >= warm) {
            r->gets++;
            r->zgets++;
            r->hits += (unsigned long)hit;
            r->zhits += (unsigned long)hit;
        }
    }
    shm_cache_destroy(&c);
    free(buf);
    return 0;
}

static double pct(unsigned long a, unsigned long b)
{
    return b == 0 ? 0 : SIM_PCT * (double)a / (double)b;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: cachesim [--keys N] [--ops M] [--scan-every E] "
            "[--zipf S] [--vlen B] [--sizes P,P..] [--stripes K] [--seed X]\n");
}

static int parse(int argc, char **argv, sim_opts *o)
{
    static const struct option lo[] = {
        { "keys", required_argument, NULL, 'k' },
        { "ops", required_argument, NULL, 'o' },
        { "scan-every", required_argument, NULL, 'e' },
        { "zipf", required_argument, NULL, 'z' },
        { "vlen", required_argument, NULL, 'v' },
        { "sizes", required_argument, NULL, 's' },
        { "stripes", required_argument, NULL, 't' },
        { "seed", required_argument, NULL, 'r' },
        { NULL, 0, NULL, 0 }
    };
    int ch;

    memset(o, 0, sizeof(*o));
    o->keys = SIM_KEYS_DEFAULT;
    o->ops = SIM_OPS_DEFAULT;
    o->scan_every = SIM_SCAN_EVERY_DEFAULT;
    o->zipf = SIM_ZIPF_DEFAULT;
    o->vlen = SIM_VLEN_DEFAULT;
    o->nsizes = 2;
    o->sizes[0] = 10;
    o->sizes[1] = 50;
    o->seed = 1;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        char *p, *tok;
        switch (ch) {
        case 'k': o->keys = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'o': o->ops = strtoul(optarg, NULL, 10); break;
        case 'e': o->scan_every = strtoul(optarg, NULL, 10); break;
        case 'z': o->zipf = strtod(optarg, NULL); break;
        case 'v': o->vlen = strtoul(optarg, NULL, 10); break;
        case 's':
            o->nsizes = 0;
            for (tok = strtok_r(optarg, ",", &p);
                 tok != NULL && o->nsizes < SIM_MAX_SIZES;
                 tok = strtok_r(NULL, ",", &p))
                o->sizes[o->nsizes++] = strtod(tok, NULL);
            break;
        case 't': o->stripes = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'r': o->seed = strtoull(optarg, NULL, 10); break;
        default: usage(); return -1;
        }
    }
    if (o->keys < 2 || o->ops == 0 || o->nsizes == 0) {
        usage();
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const shm_cache_policy_t pols[] = { SHM_POLICY_LRU,
                                               SHM_POLICY_SLRU };
    sim_opts o;
    double *cdf;
    unsigned *perm;
    char *val;
    size_t foot;
    unsigned i, si, pi;

    if (parse(argc, argv, &o) != 0)
        return 2;
    cdf = zipf_cdf(o.keys, o.zipf);
    perm = malloc(sizeof(unsigned) * o.keys);
    val = malloc(o.vlen + 1);
    if (cdf == NULL || perm == NULL || val == NULL) {
        fprintf(stderr, "cachesim: out of memory\n");
        return 1;
    }
    memset(val, 'v', o.vlen);
    /* hot ranks land on scattered key ids, not on the scan's first keys */
    g_rng = o.seed ^ UINT64_C(0xabcdef);
    for (i = 0; i < o.keys; i++)
        perm[i] = i;
    for (i = o.keys - 1; i > 0; i--) {
        unsigned j = (unsigned)(rand01() * (i + 1));
        unsigned t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    foot = entry_footprint(&o, val);
    printf("# keys=%u ops=%lu scan_every=%lu zipf=%.2f vlen=%zu "
           "entry=%zuB working_set=%.1fMiB\n",
           o.keys, o.ops, o.scan_every, o.zipf, o.vlen, foot,
           (double)foot * o.keys / SIM_MIB);
    printf("| policy | cache %% of WS | stripes | hit %% all | hit %% zipf "
           "| hit %% scan |\n|---|---|---|---|---|---|\n");
    for (si = 0; si < o.nsizes; si++) {
        size_t budget = (size_t)((double)foot * o.keys * o.sizes[si] / SIM_PCT);
        for (pi = 0; pi < sizeof(pols) / sizeof(pols[0]); pi++) {
            sim_result r;
            shm_cache_opts_t co;
            shm_cache_t *probe = NULL;
            shm_cache_stats_t st;
            int rc = run(&o, pols[pi], budget, cdf, perm, val, &r);
            if (rc != 0) {
                fprintf(stderr, "cachesim: %s\n", shm_strerror(rc));
                return 1;
            }
            memset(&co, 0, sizeof(co));
            co.budget_bytes = budget;
            co.nstripes = o.stripes;
            shm_cache_create(&co, &probe);
            shm_cache_stats(probe, &st);
            shm_cache_destroy(&probe);
            printf("| %s | %.0f | %u | %.2f | %.2f | %.2f |\n",
                   shm_cache_policy_name(pols[pi]), o.sizes[si], st.nstripes,
                   pct(r.hits, r.gets), pct(r.zhits, r.zgets),
                   pct(r.shits, r.sgets));
            fflush(stdout);
        }
    }
    free(cdf);
    free(perm);
    free(val);
    return 0;
}
