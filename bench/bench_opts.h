/*
 * bench_opts: larder-bench's command line: the settings of a run, their
 * defaults, parsing, validation and --help.  Settings are immutable once
 * parsed and shared read-only by every thread.
 */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench_rand.h"
#include "bench/bench_sync.h"

/* X-macro: workload name, the key prefix it uses, one line of help. */
#define BENCH_WORKLOADS(X)                                                   \
    X(PING, "ping", "", "PING (no key)")                                     \
    X(GET, "get", "key:", "GET key")                                         \
    X(SET, "set", "key:", "SET key value")                                   \
    X(MIXED, "mixed", "key:", "GET with probability --ratio, else SET")      \
    X(INCR, "incr", "counter:", "INCR counter")                              \
    X(MSET, "mset", "key:", "MSET of --batch keys")                          \
    X(MGET, "mget", "key:", "MGET of --batch keys")                          \
    X(HSET, "hset", "hash:", "HSET hash field value (field of --members)")   \
    X(HGET, "hget", "hash:", "HGET hash field")                              \
    X(HGETALL, "hgetall", "hash:", "HGETALL hash")                           \
    X(SADD, "sadd", "set:", "SADD set member")                               \
    X(SISMEMBER, "sismember", "set:", "SISMEMBER set member")                \
    X(SPOP, "spop", "set:", "SPOP set")                                      \
    X(LPUSH, "lpush", "list:", "LPUSH list value")                           \
    X(LPOP, "lpop", "list:", "LPOP list")                                    \
    X(LRANGE, "lrange", "list:", "LRANGE list 0 --range-1")                  \
    X(ZADD, "zadd", "zset:", "ZADD zset score member")                       \
    X(ZRANGE, "zrange", "zset:", "ZRANGE zset 0 --range-1")                  \
    X(PUBLISH, "publish", "", "PUBLISH to --subscribers subscribers")        \
    X(WAKE, "wake",                                                          \
      "wake:", "LPUSH to one of --waiters clients blocked in BLPOP")         \
    X(JOBS, "jobs", "jobs",                                                  \
      "LPUSH jobs that --waiters consumers take with BRPOP")                 \
    X(EXPIRE, "expire", "ttl:", "SET key value PX --ttl-ms, GET by --ratio") \
    X(TRANSFER, "transfer",                                                  \
      "acct:", "WATCH/MULTI/EXEC moves between accounts")                    \
    X(TRANSFER_LUA, "transfer-lua",                                          \
      "acct:", "EVALSHA of a script that moves between accounts")            \
    X(LUA_GET, "lua-get", "key:", "EVALSHA of a script that GETs key")       \
    X(COMMAND, "command", "key:", "the --command given, placeholders filled")

typedef enum bench_workload {
#define BENCH_WL_ENUM(id, name, prefix, help) BENCH_WL_##id,
    BENCH_WORKLOADS(BENCH_WL_ENUM)
#undef BENCH_WL_ENUM
        BENCH_WL_COUNT
} bench_workload;

typedef enum bench_value_data {
    BENCH_VALUE_RANDOM, /* uniform random bytes: incompressible */
    BENCH_VALUE_TEXT,   /* words and spaces: compresses like prose */
    BENCH_VALUE_REPEAT  /* one repeated byte, as redis-benchmark sends */
} bench_value_data;

typedef struct bench_opts {
    bench_target target;
    bench_workload workload;
    unsigned connections;
    unsigned threads;
    unsigned pipeline; /* closed loop: requests in flight per conn */
    bool pipeline_given;
    double duration_s; /* measured time, when requests == 0 */
    uint64_t requests; /* measured requests; 0 means use duration */
    double warmup_s;
    double rate; /* open loop: total ops/s; 0 = closed loop */
    uint64_t keyspace;
    bench_dist dist;
    char dist_spec[64];
    uint64_t value_min;
    uint64_t value_max;
    bench_value_data value_data;
    bool json;
    bool preload;
    bool quiet;
    unsigned repeat;
    uint64_t seed;
    double ratio;            /* read share of mixed and expire */
    unsigned batch;          /* keys per MSET/MGET */
    unsigned subscribers;    /* publish; wake, jobs: the waiters */
    bool cross_worker;       /* wake: push only to waiters of another
                              * larder worker (CLIENT INFO's worker=) */
    unsigned members;        /* fields/members per collection */
    unsigned range;          /* elements per LRANGE/ZRANGE */
    unsigned ttl_ms;         /* expire */
    unsigned preload_ttl_ms; /* preload string keys with this PX (0: none) */
    unsigned preload_conns;  /* connections (and threads) that preload */
    uint64_t seq_start;      /* sequential/shuffled: where the walk starts */
    double max_drain_s;      /* how long to wait for replies after the end */
    double timeout_s;        /* --requests: give up after this long */
    const char *command;     /* workload command: the template */
} bench_opts;

/* Outcome of bench_opts_parse(). */
typedef enum bench_opts_rc {
    BENCH_OPTS_OK,
    BENCH_OPTS_HELP, /* --help was printed: exit 0 */
    BENCH_OPTS_ERROR /* a message is in err */
} bench_opts_rc;

/* Parse argv into *o (defaults first).  err gets a message on error. */
bench_opts_rc bench_opts_parse(bench_opts *o, int argc, char **argv, char *err,
                               size_t errlen);

/* Print the --help text. */
void bench_opts_usage(FILE *f);

/* The transfer workloads: accounts preloaded, the total checked after. */
static inline bool bench_workload_is_transfer(bench_workload w)
{
    return w == BENCH_WL_TRANSFER || w == BENCH_WL_TRANSFER_LUA;
}

/* Name of a workload ("get") and the key prefix it uses ("key:"). */
const char *bench_workload_name(bench_workload w);
const char *bench_workload_prefix(bench_workload w);

#endif /* BENCH_OPTS_H */
