/*
 * rank_micro - storage-level micro-benchmark of the order statistics
 * (storage/st_rank.h), without the server, the protocol or the network:
 * what a set and a zset insert, a rank, an element at a position and a
 * uniform pick cost in CPU at a given size. Used to choose
 * ST_RANK_FANOUT (rebuild with another value to compare).
 *
 *   build/bench/rank-micro DIR N             load N members (if DIR is
 *                                            empty) into set "s" and zset
 *                                            "z", in batches of BATCH
 *   build/bench/rank-micro DIR N OP [OPS]    then OPS (default 20000) of
 *                                            OP: rank seek pick has sadd
 *                                            zadd, BATCH per transaction
 *
 * Prints wall and CPU (user + system) microseconds per insert pair / op;
 * on a shared machine read the CPU figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_set.h"
#include "storage/st_txn.h"
#include "storage/st_zset.h"

#define BATCH 100
#define LOAD_BATCH 10000
#define DEFAULT_OPS 20000
#define MAP_SIZE (16ull << 30)
#define NOW 1700000000000LL
#define NAME_MAX_LEN 48
#define SCORE_STEP 7919 /* scores: a permutation of 0..N-1 */
#define US 1e6

static double wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage u;

    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / US;
}

static int none(void *ctx, const uint8_t *n, size_t l, const uint8_t *v,
                size_t vl)
{
    return 0;
}

static int znone(void *ctx, const uint8_t *n, size_t l, double s) { return 0; }

static int known(const char *op)
{
    static const char *const ops[] = { "rank", "seek", "pick",
                                       "has",  "sadd", "zadd" };

    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

typedef struct bench {
    st_env *env;
    st_txn *t;
    st_keyref ks, kz;
    st_obj s, z;
} bench;

static int begin(bench *b)
{
    int rc = st_txn_begin(b->env, 1, &b->t);

    if (!rc && (rc = st_coll_open(b->t, &b->ks, ST_TYPE_SET, NOW, &b->s)) ==
                   ST_ENOTFOUND)
        rc = st_coll_create(b->t, &b->s);
    if (!rc && (rc = st_coll_open(b->t, &b->kz, ST_TYPE_ZSET, NOW, &b->z)) ==
                   ST_ENOTFOUND)
        rc = st_coll_create(b->t, &b->z);
    return rc;
}

static int commit(bench *b)
{
    int rc = st_coll_save(b->t, &b->s, NOW);

    if (!rc)
        rc = st_coll_save(b->t, &b->z, NOW);
    return rc ? rc : st_txn_commit(&b->t);
}

static int load(bench *b, long n)
{
    char name[NAME_MAX_LEN];
    int created, rc = 0;

    for (long i = 0; i < n && !rc; i += LOAD_BATCH) {
        if ((rc = begin(b)))
            break;
        for (long j = i; j < i + LOAD_BATCH && j < n && !rc; j++) {
            int len = snprintf(name, sizeof name, "m%ld", j);
            if (!(rc = st_set_add(b->t, &b->s, name, (size_t)len, &created)))
                rc = st_zset_add(b->t, &b->z, name, (size_t)len,
                                 (double)(j * SCORE_STEP % n), &created);
        }
        if (!rc)
            rc = commit(b);
    }
    return rc;
}

/* One op of kind `op` on member number r (i: the op's serial number). */
static int one(bench *b, const char *op, long r, long i)
{
    char name[NAME_MAX_LEN];
    int len = snprintf(name, sizeof name, "m%ld", r), created;
    uint64_t rank, n;
    double s;

    if (!strcmp(op, "rank"))
        return st_zset_rank(b->t, &b->z, name, (size_t)len, 0, &rank, &s);
    if (!strcmp(op, "seek")) {
        st_zrange zr;
        memset(&zr, 0, sizeof zr);
        zr.by = ST_ZBY_RANK;
        zr.start = (uint64_t)r;
        zr.count = 1;
        return st_zset_walk(b->t, &b->z, &zr, 0, znone, NULL, &n);
    }
    if (!strcmp(op, "pick"))
        return st_set_sample(b->t, &b->s,
                             (uint64_t)random() << 31 ^ (uint64_t)random(), 1,
                             none, NULL);
    if (!strcmp(op, "has")) {
        int has = st_set_has(b->t, &b->s, name, (size_t)len);
        return has < 0 ? has : 0;
    }
    len = snprintf(name, sizeof name, "n%d_%ld", (int)getpid(), i);
    if (!strcmp(op, "sadd"))
        return st_set_add(b->t, &b->s, name, (size_t)len, &created);
    if (!strcmp(op, "zadd"))
        return st_zset_add(b->t, &b->z, name, (size_t)len,
                           (double)(random() % (r + 1)), &created);
    return ST_ENOTFOUND;
}

int main(int argc, char **argv)
{
    bench b;
    st_env_opts o = { .map_size = MAP_SIZE, .databases = 1, .nosync = 1 };
    long n, ops;
    double w, c;
    int rc = 0;

    if (argc < 3 || (argc > 3 && !known(argv[3]))) {
        fprintf(stderr,
                "usage: %s DIR N [rank|seek|pick|has|sadd|zadd "
                "[OPS]]\n",
                argv[0]);
        return 2;
    }
    memset(&b, 0, sizeof b);
    o.dir = argv[1];
    n = atol(argv[2]);
    ops = argc > 4 ? atol(argv[4]) : DEFAULT_OPS;
    if ((rc = st_env_open(&o, &b.env))) {
        fprintf(stderr, "open %s: %s\n", argv[1], st_strerror(rc));
        return 1;
    }
    st_codec_keyref_init(&b.ks, 0, "s", 1);
    st_codec_keyref_init(&b.kz, 0, "z", 1);
    if ((rc = begin(&b)))
        goto out;
    if (b.s.c.card == 0) {
        st_txn_abort(&b.t);
        w = wall();
        c = cpu();
        if ((rc = load(&b, n)))
            goto out;
        printf("load %ld: %.2f us wall, %.2f us cpu per set+zset insert\n", n,
               (wall() - w) / (double)n * US, (cpu() - c) / (double)n * US);
    } else {
        st_txn_abort(&b.t);
    }
    if (argc < 4)
        goto out;
    srandom(1);
    w = wall();
    c = cpu();
    for (long i = 0; i < ops && !rc; i += BATCH) {
        int write = !strcmp(argv[3], "sadd") || !strcmp(argv[3], "zadd");
        if ((rc = begin(&b)))
            break;
        for (long j = i; j < i + BATCH && !rc; j++)
            rc = one(&b, argv[3], random() % n, j);
        if (rc)
            break;
        if (write)
            rc = commit(&b);
        else
            st_txn_abort(&b.t);
    }
    if (!rc)
        printf("%s: %.2f us wall, %.2f us cpu per op\n", argv[3],
               (wall() - w) / (double)ops * US, (cpu() - c) / (double)ops * US);
out:
    if (b.t)
        st_txn_abort(&b.t);
    if (rc)
        fprintf(stderr, "failed: %s\n", st_strerror(rc));
    st_env_close(&b.env);
    return rc ? 1 : 0;
}
