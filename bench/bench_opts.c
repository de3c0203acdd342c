/*
 * bench_opts: command-line parsing and --help for larder-bench.
 */
#include "bench/bench_opts.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_HOST "127.0.0.1"
#define DEFAULT_PORT 6379
#define DEFAULT_CONNECTIONS 50
#define DEFAULT_THREADS 1
#define DEFAULT_PIPELINE 1
#define DEFAULT_OPEN_LOOP_INFLIGHT 1024
#define DEFAULT_DURATION_S 10.0
#define DEFAULT_WARMUP_S 1.0
#define DEFAULT_KEYSPACE 100000
#define DEFAULT_VALUE_SIZE 64
#define DEFAULT_REPEAT 1
#define DEFAULT_SEED 42
#define DEFAULT_RATIO 0.8
#define DEFAULT_BATCH 10
#define DEFAULT_SUBSCRIBERS 10
#define DEFAULT_MEMBERS 100
#define DEFAULT_RANGE 100
#define DEFAULT_TTL_MS 100
#define DEFAULT_DRAIN_S 2.0
#define DEFAULT_TIMEOUT_S 600.0
#define DEFAULT_PRELOAD_CONNS 1
#define MAX_PRELOAD_CONNS 64
/* Sanity bounds: past these a typo is more likely than intent. */
#define MAX_CONNECTIONS 100000
#define MAX_THREADS 1024
#define MAX_PIPELINE 1000000
#define MAX_VALUE_SIZE (512ULL * 1024 * 1024)
#define MAX_BATCH 100000
#define MAX_REPEAT 1000
#define MAX_PORT 65535
#define DECIMAL_BASE 10
#define MAX_DB 1000000

static const char *const workload_names[] = {
#define BENCH_WL_NAME(id, name, prefix, help) name,
    BENCH_WORKLOADS(BENCH_WL_NAME)
#undef BENCH_WL_NAME
};

static const char *const workload_prefixes[] = {
#define BENCH_WL_PREFIX(id, name, prefix, help) prefix,
    BENCH_WORKLOADS(BENCH_WL_PREFIX)
#undef BENCH_WL_PREFIX
};

static const char *const workload_help[] = {
#define BENCH_WL_HELP(id, name, prefix, help) help,
    BENCH_WORKLOADS(BENCH_WL_HELP)
#undef BENCH_WL_HELP
};

const char *bench_workload_name(bench_workload w)
{
    return w < BENCH_WL_COUNT ? workload_names[w] : "?";
}

const char *bench_workload_prefix(bench_workload w)
{
    return w < BENCH_WL_COUNT ? workload_prefixes[w] : "";
}

enum {
    OPT_DB = 256,
    OPT_WORKLOAD,
    OPT_CONNECTIONS,
    OPT_THREADS,
    OPT_PIPELINE,
    OPT_DURATION,
    OPT_REQUESTS,
    OPT_WARMUP,
    OPT_RATE,
    OPT_KEYSPACE,
    OPT_DIST,
    OPT_ALPHA,
    OPT_VALUE_SIZE,
    OPT_VALUE_DATA,
    OPT_JSON,
    OPT_PRELOAD,
    OPT_REPEAT,
    OPT_SEED,
    OPT_RATIO,
    OPT_BATCH,
    OPT_SUBSCRIBERS,
    OPT_CROSS_WORKER,
    OPT_MEMBERS,
    OPT_RANGE,
    OPT_TTL_MS,
    OPT_QUIET,
    OPT_TIMEOUT,
    OPT_COMMAND,
    OPT_PRELOAD_TTL,
    OPT_PRELOAD_CONNS,
    OPT_SEQ_START,
    OPT_HELP
};

static const struct option long_options[] = {
    { "host", required_argument, NULL, 'h' },
    { "port", required_argument, NULL, 'p' },
    { "socket", required_argument, NULL, 's' },
    { "password", required_argument, NULL, 'a' },
    { "db", required_argument, NULL, OPT_DB },
    { "workload", required_argument, NULL, OPT_WORKLOAD },
    { "connections", required_argument, NULL, OPT_CONNECTIONS },
    { "threads", required_argument, NULL, OPT_THREADS },
    { "pipeline", required_argument, NULL, OPT_PIPELINE },
    { "duration", required_argument, NULL, OPT_DURATION },
    { "requests", required_argument, NULL, OPT_REQUESTS },
    { "warmup", required_argument, NULL, OPT_WARMUP },
    { "rate", required_argument, NULL, OPT_RATE },
    { "keyspace", required_argument, NULL, OPT_KEYSPACE },
    { "dist", required_argument, NULL, OPT_DIST },
    { "alpha", required_argument, NULL, OPT_ALPHA },
    { "value-size", required_argument, NULL, OPT_VALUE_SIZE },
    { "value-data", required_argument, NULL, OPT_VALUE_DATA },
    { "json", no_argument, NULL, OPT_JSON },
    { "preload", no_argument, NULL, OPT_PRELOAD },
    { "repeat", required_argument, NULL, OPT_REPEAT },
    { "seed", required_argument, NULL, OPT_SEED },
    { "ratio", required_argument, NULL, OPT_RATIO },
    { "batch", required_argument, NULL, OPT_BATCH },
    { "subscribers", required_argument, NULL, OPT_SUBSCRIBERS },
    { "waiters", required_argument, NULL, OPT_SUBSCRIBERS },
    { "cross-worker", no_argument, NULL, OPT_CROSS_WORKER },
    { "members", required_argument, NULL, OPT_MEMBERS },
    { "range", required_argument, NULL, OPT_RANGE },
    { "ttl-ms", required_argument, NULL, OPT_TTL_MS },
    { "quiet", no_argument, NULL, OPT_QUIET },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "command", required_argument, NULL, OPT_COMMAND },
    { "preload-ttl-ms", required_argument, NULL, OPT_PRELOAD_TTL },
    { "preload-connections", required_argument, NULL, OPT_PRELOAD_CONNS },
    { "seq-start", required_argument, NULL, OPT_SEQ_START },
    { "help", no_argument, NULL, OPT_HELP },
    { NULL, 0, NULL, 0 }
};

void bench_opts_usage(FILE *f)
{
    int i;

    fprintf(
        f,
        "Usage: larder-bench [options]\n"
        "A multi-client RESP load generator: runs one workload against any\n"
        "Redis-protocol server and reports throughput, latency percentiles "
        "(us) and\n"
        "errors by kind, as a table or (--json) as one JSON object on stdout.\n"
        "\n"
        "Target:\n"
        "  -h HOST            server host (default " DEFAULT_HOST ")\n"
        "  -p PORT            server port (default %d)\n"
        "  -s SOCKET          Unix socket path (overrides -h/-p)\n"
        "  -a PASSWORD        send AUTH PASSWORD on every connection\n"
        "  --db N             SELECT N on every connection (default 0)\n"
        "\n"
        "Load:\n"
        "  --workload W       what to send (default get); see the list below\n"
        "  --connections N    client connections (default %d)\n"
        "  --threads N        threads the connections are spread over, each "
        "with\n"
        "                     its own event loop (default %d)\n"
        "  --pipeline N       closed loop: requests each connection keeps in "
        "flight\n"
        "                     (default %d); open loop: the cap on requests in "
        "flight\n"
        "                     per connection (default %d), later ones queue "
        "and their\n"
        "                     wait counts as latency\n"
        "  --rate OPS         open loop: send OPS requests/s in total on a "
        "fixed\n"
        "                     schedule, and measure latency from the time each "
        "request\n"
        "                     was due, not sent, so a stall is not hidden (no\n"
        "                     coordinated omission).  Default 0: closed loop\n"
        "  --duration S       measure for S seconds (default %g)\n"
        "  --requests N       measure N requests instead of a duration\n"
        "  --timeout S        with --requests: fail if they take longer "
        "(default %g)\n"
        "  --warmup S         run S seconds first and discard them (default "
        "%g)\n"
        "  --repeat N         run N times; publish each run and the median "
        "(default %d)\n"
        "  --seed N           random seed; same seed, same key sequence "
        "(default %d)\n"
        "\n"
        "Keys and values:\n"
        "  --keyspace N       keys (or collections, or accounts) drawn from "
        "(default %d)\n"
        "  --dist D           key choice: sequential, shuffled (sequential in "
        "a\n"
        "                     scrambled order: each key once per lap), "
        "uniform\n"
        "                     (default), zipf:ALPHA (rank r drawn with weight\n"
        "                     r^-ALPHA), or hot:PCT:SHARE (PCT%% of the keys "
        "get\n"
        "                     SHARE%% of requests).  Zipf and hot ranks are "
        "spread\n"
        "                     over the keyspace.\n"
        "  --seq-start N      sequential and shuffled: the first connection's "
        "walk\n"
        "                     starts at step N (others keyspace/connections "
        "apart),\n"
        "                     so successive runs can insert disjoint keys "
        "(default 0)\n"
        "  --alpha A          shorthand for --dist zipf:A\n"
        "  --value-size N|MIN-MAX  value bytes, fixed or uniform in a range "
        "(default %d)\n"
        "  --value-data K     random (incompressible, default), text "
        "(compressible\n"
        "                     like prose) or repeat (one byte, like "
        "redis-benchmark)\n"
        "  --preload          fill the keyspace before measuring: every key "
        "(or\n"
        "                     collection, with --members elements) exists, so "
        "reads\n"
        "                     hit and set/mset overwrite instead of inserting\n"
        "  --preload-ttl-ms N preload string keys with PX N (implies "
        "--preload), so\n"
        "                     the whole keyspace expires at once during the "
        "run\n"
        "  --preload-connections N  connections (each its own thread) that "
        "share\n"
        "                     the preload (default %d: writes serialize in "
        "both\n"
        "                     redis and LMDB; more helps only a parallel "
        "server)\n"
        "\n"
        "Workload parameters:\n"
        "  --ratio R          read share of mixed and expire, 0..1 (default "
        "%g)\n"
        "  --batch K          keys per MSET/MGET (default %d)\n"
        "  --members N        fields/members/elements per collection: "
        "HSET/SADD/ZADD\n"
        "                     pick among N, --preload puts N in each (default "
        "%d)\n"
        "  --range N          elements per LRANGE/ZRANGE (default %d)\n"
        "  --subscribers N    publish: subscriber connections; the report "
        "adds\n"
        "                     delivered messages/s and delivery latency "
        "(default %d)\n"
        "  --waiters N        wake, jobs: clients blocked in BLPOP / BRPOP "
        "(the same\n"
        "                     setting as --subscribers); the report adds "
        "elements\n"
        "                     delivered/s and push-to-wake latency\n"
        "  --cross-worker     wake, against larder: push only to waiters on "
        "another\n"
        "                     worker than the pusher (CLIENT INFO's "
        "worker=)\n"
        "  --ttl-ms N         expire: PX of each SET (default %d)\n"
        "  --command \"CMD ARGS\"  send this command (implies --workload "
        "command);\n"
        "                     words are split on spaces; __key__, __value__ "
        "and\n"
        "                     __member__ are replaced by a key (--dist), a "
        "value\n"
        "                     (--value-size) and a member (--members) per "
        "request;\n"
        "                     __index__ by a number below --members (a "
        "SETBIT offset)\n"
        "\n"
        "Output:\n"
        "  --json             print one JSON object on stdout (settings, "
        "machine,\n"
        "                     server INFO, git commit, figures, each run)\n"
        "  --quiet            no progress lines on stderr\n"
        "  --help             this text\n"
        "\n"
        "Workloads:\n",
        DEFAULT_PORT, DEFAULT_CONNECTIONS, DEFAULT_THREADS, DEFAULT_PIPELINE,
        DEFAULT_OPEN_LOOP_INFLIGHT, DEFAULT_DURATION_S, DEFAULT_TIMEOUT_S,
        DEFAULT_WARMUP_S, DEFAULT_REPEAT, DEFAULT_SEED, DEFAULT_KEYSPACE,
        DEFAULT_VALUE_SIZE, DEFAULT_PRELOAD_CONNS, DEFAULT_RATIO, DEFAULT_BATCH,
        DEFAULT_MEMBERS, DEFAULT_RANGE, DEFAULT_SUBSCRIBERS, DEFAULT_TTL_MS);
    for (i = 0; i < BENCH_WL_COUNT; i++)
        fprintf(f, "  %-12s %s\n", workload_names[i], workload_help[i]);
    fprintf(
        f,
        "\n"
        "transfer: accounts acct:0..N-1 are set to a known balance first; "
        "each\n"
        "operation WATCHes two accounts, reads both, and moves a random "
        "amount\n"
        "with MULTI/SET/SET/EXEC (declined when the balance is short); the "
        "report\n"
        "gives commits/s and aborts, and checks that the total is unchanged\n"
        "(exit status 3 when it is not).  Each connection runs one transfer at "
        "a\n"
        "time.  transfer-lua does each transfer as one EVALSHA of a script "
        "that\n"
        "checks and moves the balance (EVAL once on NOSCRIPT); lua-get is "
        "EVALSHA\n"
        "of a script returning GET key.\n"
        "\n"
        "Throughput counts successful replies that completed inside the "
        "measured\n"
        "window; error replies are counted by kind (their first word: ERR,\n"
        "WRONGTYPE ...) and connection failures as conn_*, never dropped.\n"
        "Latency percentiles are nearest-rank, within 1%%, in microseconds.\n"
        "Exit status: 0 ok, 1 usage, 2 cannot run, 3 transfer balance "
        "mismatch.\n");
}

/* Parse an unsigned integer in [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (*s == '-' || *s == '\0')
        return EINVAL;
    errno = 0;
    v = strtoull(s, &end, DECIMAL_BASE);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return EINVAL;
    *out = v;
    return 0;
}

static int parse_unsigned(const char *s, uint64_t min, uint64_t max,
                          unsigned *out)
{
    uint64_t v;

    if (parse_u64(s, min, max, &v) != 0)
        return EINVAL;
    *out = (unsigned)v;
    return 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < min ||
        v > max)
        return EINVAL;
    *out = v;
    return 0;
}

static int parse_value_size(bench_opts *o, const char *s)
{
    char buf[64];
    char *dash;

    if (strlen(s) >= sizeof(buf))
        return EINVAL;
    strcpy(buf, s);
    dash = strchr(buf, '-');
    if (dash == NULL) {
        if (parse_u64(buf, 0, MAX_VALUE_SIZE, &o->value_min) != 0)
            return EINVAL;
        o->value_max = o->value_min;
        return 0;
    }
    *dash++ = '\0';
    if (parse_u64(buf, 0, MAX_VALUE_SIZE, &o->value_min) != 0 ||
        parse_u64(dash, 0, MAX_VALUE_SIZE, &o->value_max) != 0 ||
        o->value_min > o->value_max)
        return EINVAL;
    return 0;
}

static int parse_workload(const char *s, bench_workload *w)
{
    int i;

    for (i = 0; i < BENCH_WL_COUNT; i++) {
        if (strcmp(s, workload_names[i]) == 0) {
            *w = (bench_workload)i;
            return 0;
        }
    }
    return EINVAL;
}

static void set_defaults(bench_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->target.host = DEFAULT_HOST;
    o->target.port = DEFAULT_PORT;
    o->workload = BENCH_WL_GET;
    o->connections = DEFAULT_CONNECTIONS;
    o->threads = DEFAULT_THREADS;
    o->pipeline = DEFAULT_PIPELINE;
    o->duration_s = DEFAULT_DURATION_S;
    o->warmup_s = DEFAULT_WARMUP_S;
    o->keyspace = DEFAULT_KEYSPACE;
    strcpy(o->dist_spec, "uniform");
    o->value_min = o->value_max = DEFAULT_VALUE_SIZE;
    o->value_data = BENCH_VALUE_RANDOM;
    o->repeat = DEFAULT_REPEAT;
    o->seed = DEFAULT_SEED;
    o->ratio = DEFAULT_RATIO;
    o->batch = DEFAULT_BATCH;
    o->subscribers = DEFAULT_SUBSCRIBERS;
    o->members = DEFAULT_MEMBERS;
    o->range = DEFAULT_RANGE;
    o->ttl_ms = DEFAULT_TTL_MS;
    o->max_drain_s = DEFAULT_DRAIN_S;
    o->timeout_s = DEFAULT_TIMEOUT_S;
    o->preload_conns = DEFAULT_PRELOAD_CONNS;
}

/* Cross-checks and derived settings once every flag is read. */
static bench_opts_rc finish(bench_opts *o, char *err, size_t errlen)
{
    if (bench_dist_parse(&o->dist, o->dist_spec, o->keyspace) != 0) {
        snprintf(err, errlen,
                 "bad --dist '%s' (sequential, uniform, "
                 "zipf:ALPHA with ALPHA > 0, hot:PCT:SHARE)",
                 o->dist_spec);
        return BENCH_OPTS_ERROR;
    }
    bench_dist_format(&o->dist, o->dist_spec, sizeof(o->dist_spec));
    if (o->threads > o->connections)
        o->threads = o->connections;
    if (o->rate > 0.0 && !o->pipeline_given)
        o->pipeline = DEFAULT_OPEN_LOOP_INFLIGHT;
    if (bench_workload_is_transfer(o->workload)) {
        if (o->keyspace < 2) {
            snprintf(err, errlen, "transfer needs --keyspace >= 2");
            return BENCH_OPTS_ERROR;
        }
        /* Each transfer reads before it writes: one at a time per
         * connection, so concurrency comes from connections. */
        o->pipeline = 1;
    }
    if (o->workload == BENCH_WL_LUA_GET)
        o->pipeline = 1; /* its state keeps the key for a NOSCRIPT retry */
    if (o->workload == BENCH_WL_COMMAND &&
        (o->command == NULL || strspn(o->command, " ") == strlen(o->command))) {
        snprintf(err, errlen, "--workload command needs --command \"CMD ...\"");
        return BENCH_OPTS_ERROR;
    }
    if (o->workload == BENCH_WL_PUBLISH && o->subscribers == 0) {
        snprintf(err, errlen, "publish needs --subscribers >= 1");
        return BENCH_OPTS_ERROR;
    }
    if ((o->workload == BENCH_WL_WAKE || o->workload == BENCH_WL_JOBS) &&
        o->subscribers == 0) {
        snprintf(err, errlen, "%s needs --waiters >= 1",
                 bench_workload_name(o->workload));
        return BENCH_OPTS_ERROR;
    }
    if (o->requests == 0 && !(o->duration_s > 0.0)) {
        snprintf(err, errlen, "--duration must be > 0 (or give --requests)");
        return BENCH_OPTS_ERROR;
    }
    return BENCH_OPTS_OK;
}

bench_opts_rc bench_opts_parse(bench_opts *o, int argc, char **argv, char *err,
                               size_t errlen)
{
    uint64_t u;
    double d;
    int c, bad;

    set_defaults(o);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h:p:s:a:", long_options, NULL)) !=
           -1) {
        bad = 0;
        switch (c) {
        case 'h': o->target.host = optarg; break;
        case 'p':
            bad = parse_u64(optarg, 1, MAX_PORT, &u);
            o->target.port = (int)u;
            break;
        case 's': o->target.socket_path = optarg; break;
        case 'a': o->target.password = optarg; break;
        case OPT_DB:
            bad = parse_u64(optarg, 0, MAX_DB, &u);
            o->target.db = (int)u;
            break;
        case OPT_WORKLOAD: bad = parse_workload(optarg, &o->workload); break;
        case OPT_CONNECTIONS:
            bad = parse_unsigned(optarg, 1, MAX_CONNECTIONS, &o->connections);
            break;
        case OPT_THREADS:
            bad = parse_unsigned(optarg, 1, MAX_THREADS, &o->threads);
            break;
        case OPT_PIPELINE:
            bad = parse_unsigned(optarg, 1, MAX_PIPELINE, &o->pipeline);
            o->pipeline_given = true;
            break;
        case OPT_DURATION:
            bad = parse_double(optarg, 0.0, HUGE_VAL, &o->duration_s);
            break;
        case OPT_REQUESTS:
            bad = parse_u64(optarg, 1, UINT64_MAX, &o->requests);
            break;
        case OPT_WARMUP:
            bad = parse_double(optarg, 0.0, HUGE_VAL, &o->warmup_s);
            break;
        case OPT_RATE:
            bad = parse_double(optarg, 0.0, HUGE_VAL, &o->rate);
            break;
        case OPT_KEYSPACE:
            bad = parse_u64(optarg, 1, UINT64_MAX, &o->keyspace);
            break;
        case OPT_DIST:
            if (strlen(optarg) >= sizeof(o->dist_spec))
                bad = EINVAL;
            else
                strcpy(o->dist_spec, optarg);
            break;
        case OPT_ALPHA:
            bad = parse_double(optarg, 0.0, HUGE_VAL, &d);
            if (!bad)
                snprintf(o->dist_spec, sizeof(o->dist_spec), "zipf:%.17g", d);
            break;
        case OPT_VALUE_SIZE: bad = parse_value_size(o, optarg); break;
        case OPT_VALUE_DATA:
            if (strcmp(optarg, "random") == 0)
                o->value_data = BENCH_VALUE_RANDOM;
            else if (strcmp(optarg, "text") == 0)
                o->value_data = BENCH_VALUE_TEXT;
            else if (strcmp(optarg, "repeat") == 0)
                o->value_data = BENCH_VALUE_REPEAT;
            else
                bad = EINVAL;
            break;
        case OPT_JSON: o->json = true; break;
        case OPT_PRELOAD: o->preload = true; break;
        case OPT_QUIET: o->quiet = true; break;
        case OPT_CROSS_WORKER: o->cross_worker = true; break;
        case OPT_COMMAND:
            o->command = optarg;
            o->workload = BENCH_WL_COMMAND;
            break;
        case OPT_PRELOAD_TTL:
            bad = parse_unsigned(optarg, 1, UINT32_MAX, &o->preload_ttl_ms);
            o->preload = true;
            break;
        case OPT_PRELOAD_CONNS:
            bad = parse_unsigned(optarg, 1, MAX_PRELOAD_CONNS,
                                 &o->preload_conns);
            break;
        case OPT_SEQ_START:
            bad = parse_u64(optarg, 0, UINT64_MAX, &o->seq_start);
            break;
        case OPT_TIMEOUT:
            bad = parse_double(optarg, 0.0, HUGE_VAL, &o->timeout_s);
            if (!bad && !(o->timeout_s > 0.0))
                bad = EINVAL;
            break;
        case OPT_REPEAT:
            bad = parse_unsigned(optarg, 1, MAX_REPEAT, &o->repeat);
            break;
        case OPT_SEED: bad = parse_u64(optarg, 0, UINT64_MAX, &o->seed); break;
        case OPT_RATIO: bad = parse_double(optarg, 0.0, 1.0, &o->ratio); break;
        case OPT_BATCH:
            bad = parse_unsigned(optarg, 1, MAX_BATCH, &o->batch);
            break;
        case OPT_SUBSCRIBERS:
            bad = parse_unsigned(optarg, 0, MAX_CONNECTIONS, &o->subscribers);
            break;
        case OPT_MEMBERS:
            bad = parse_unsigned(optarg, 1, UINT32_MAX, &o->members);
            break;
        case OPT_RANGE:
            bad = parse_unsigned(optarg, 1, UINT32_MAX, &o->range);
            break;
        case OPT_TTL_MS:
            bad = parse_unsigned(optarg, 1, UINT32_MAX, &o->ttl_ms);
            break;
        case OPT_HELP: bench_opts_usage(stdout); return BENCH_OPTS_HELP;
        case ':':
            snprintf(err, errlen, "option %s needs a value", argv[optind - 1]);
            return BENCH_OPTS_ERROR;
        default:
            snprintf(err, errlen, "unknown option %s (see --help)",
                     argv[optind - 1]);
            return BENCH_OPTS_ERROR;
        }
        if (bad) {
            snprintf(err, errlen, "bad value '%s' for %s (see --help)", optarg,
                     argv[optind - 1]);
            return BENCH_OPTS_ERROR;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return BENCH_OPTS_ERROR;
    }
    return finish(o, err, errlen);
}
