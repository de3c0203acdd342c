/*
 * bench_report: the table, the JSON object and the facts behind them
 * (see bench_report.h).
 *
 * With --repeat N every run is published, and each headline figure is the
 * median of that figure over the runs (so p99 is the median of the runs'
 * p99s); errors are summed; the time series is that of the run whose
 * throughput is nearest the median.
 */
#include "bench/bench_report.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench/bench_json.h"

#define NS_PER_US 1000.0
#define GIT_HASH_LEN 40
#define CPUINFO_PATH "/proc/cpuinfo"
#define CPUINFO_MODEL "model name"
#define LINE_MAX_LEN 512
#define US_DIGITS 1 /* microsecond figures: 0.1 us resolution is enough */
#define RATE_DIGITS 1
#define SECONDS_DIGITS 3
#define RATIO_DIGITS 4
#define UNKNOWN "unknown"
#define PERCENT_ALL 100.0
#define PASSWORD_EQ "--password="
#define MEDIAN_PCT 50.0
#define P99_PCT 99.0

typedef enum fig {
    FIG_OPS_PER_SEC,
    FIG_P50,
    FIG_P90,
    FIG_P99,
    FIG_P999,
    FIG_MAX,
    FIG_MEAN,
    FIG_DELIVERED_PER_SEC,
    FIG_D_P50,
    FIG_D_P90,
    FIG_D_P99,
    FIG_D_P999,
    FIG_D_MAX,
    FIG_LAG_P50,
    FIG_LAG_P99,
    FIG_LAG_MAX,
    FIG_CLIENT_CPU,
    FIG_SERVER_CPU,
    FIG_COUNT
} fig;

static const char *const fig_names[FIG_COUNT] = {
    "ops_per_sec",  "p50",          "p90",          "p99",
    "p999",         "max",          "mean",         "delivered_per_sec",
    "p50",          "p90",          "p99",          "p999",
    "max",          "send_lag_p50", "send_lag_p99", "send_lag_max",
    "client_cpu_s", "server_cpu_s",
};

static const double fig_quantiles[] = { 50.0, 90.0, 99.0, 99.9 };

static double us(uint64_t ns) { return (double)ns / NS_PER_US; }

/* Percentile q of h in microseconds; NaN (JSON null) when h is empty, so
 * a run without a single success does not report a latency of 0. */
static double pct_us(const bench_hist *h, double q)
{
    if (bench_hist_count(h) == 0)
        return NAN;
    return us(bench_hist_percentile(h, q));
}

static double run_fig(const bench_report *r, unsigned i, fig f)
{
    const bench_run *run = &r->runs[i];
    const bench_hist *lat = run->stats.latency;
    const bench_hist *del = run->stats.delivery;

    switch (f) {
    case FIG_OPS_PER_SEC: return run->ops_per_sec;
    case FIG_P50:
    case FIG_P90:
    case FIG_P99:
    case FIG_P999: return pct_us(lat, fig_quantiles[f - FIG_P50]);
    case FIG_MAX: return pct_us(lat, PERCENT_ALL);
    case FIG_MEAN:
        return bench_hist_count(lat) ? bench_hist_mean(lat) / NS_PER_US : NAN;
    case FIG_DELIVERED_PER_SEC:
        return run->elapsed_s > 0.0
                   ? (double)run->stats.delivered / run->elapsed_s
                   : 0.0;
    case FIG_D_P50:
    case FIG_D_P90:
    case FIG_D_P99:
    case FIG_D_P999: return pct_us(del, fig_quantiles[f - FIG_D_P50]);
    case FIG_D_MAX: return pct_us(del, PERCENT_ALL);
    case FIG_LAG_P50: return pct_us(run->stats.lag, MEDIAN_PCT);
    case FIG_LAG_P99: return pct_us(run->stats.lag, P99_PCT);
    case FIG_LAG_MAX: return pct_us(run->stats.lag, PERCENT_ALL);
    case FIG_CLIENT_CPU: return run->client_cpu_s;
    case FIG_SERVER_CPU:
        return r->extra[i].server_cpu_s < 0.0 ? NAN : r->extra[i].server_cpu_s;
    case FIG_COUNT:
    default: return NAN;
    }
}

/* n events over elapsed seconds as a rate; 0 for an empty window. */
static double per_sec(uint64_t n, double elapsed)
{
    return elapsed > 0.0 ? (double)n / elapsed : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median of figure f over the runs that have it (NaN if none has). */
static double median_fig(const bench_report *r, fig f)
{
    double v[r->n_runs > 0 ? r->n_runs : 1];
    unsigned i, n = 0;

    for (i = 0; i < r->n_runs; i++) {
        double x = run_fig(r, i, f);

        if (!isnan(x))
            v[n++] = x;
    }
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(v[0]), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static double extreme_fig(const bench_report *r, fig f, bool want_max)
{
    double best = run_fig(r, 0, f);
    unsigned i;

    for (i = 1; i < r->n_runs; i++) {
        double v = run_fig(r, i, f);

        if (want_max ? v > best : v < best)
            best = v;
    }
    return best;
}

/* The run whose throughput is nearest the median. */
static unsigned median_run(const bench_report *r)
{
    double m = median_fig(r, FIG_OPS_PER_SEC), best = INFINITY;
    unsigned i, pick = 0;

    for (i = 0; i < r->n_runs; i++) {
        double d = fabs(run_fig(r, i, FIG_OPS_PER_SEC) - m);

        if (d < best) {
            best = d;
            pick = i;
        }
    }
    return pick;
}

static void trim(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

static void gather_git(bench_report *r)
{
    char line[LINE_MAX_LEN];
    FILE *p = popen("git rev-parse HEAD 2>/dev/null", "r");
    size_t i;
    bool ok = false;

    snprintf(r->git_commit, sizeof(r->git_commit), UNKNOWN);
    if (p == NULL)
        return;
    if (fgets(line, sizeof(line), p) != NULL) {
        trim(line);
        ok = strlen(line) == GIT_HASH_LEN;
        for (i = 0; ok && i < GIT_HASH_LEN; i++)
            ok = isxdigit((unsigned char)line[i]) != 0;
    }
    if (pclose(p) == 0 && ok)
        snprintf(r->git_commit, sizeof(r->git_commit), "%s", line);
}

static void gather_cpu(bench_report *r)
{
    char line[LINE_MAX_LEN];
    FILE *f = fopen(CPUINFO_PATH, "r");

    snprintf(r->cpu_model, sizeof(r->cpu_model), UNKNOWN);
    if (f != NULL) {
        while (fgets(line, sizeof(line), f) != NULL) {
            char *colon = strchr(line, ':');

            if (strncmp(line, CPUINFO_MODEL, strlen(CPUINFO_MODEL)) != 0 ||
                colon == NULL)
                continue;
            colon++;
            while (*colon == ' ')
                colon++;
            trim(colon);
            snprintf(r->cpu_model, sizeof(r->cpu_model), "%s", colon);
            break;
        }
        fclose(f);
    }
    r->cores = sysconf(_SC_NPROCESSORS_ONLN);
}

void bench_report_gather(bench_report *r)
{
    struct utsname u;

    gather_git(r);
    gather_cpu(r);
    if (uname(&u) == 0)
        snprintf(r->kernel, sizeof(r->kernel), "%.40s %.60s %.20s", u.sysname,
                 u.release, u.machine);
    else
        snprintf(r->kernel, sizeof(r->kernel), UNKNOWN);
}

static bool run_transfer_ok(const bench_report *r, unsigned i)
{
    const bench_run_extra *x = &r->extra[i];

    return x->transfer_checked && x->transfer_missing == 0 &&
           x->transfer_total == r->transfer_expected;
}

bool bench_report_transfer_ok(const bench_report *r)
{
    unsigned i;

    if (!bench_workload_is_transfer(r->opts->workload))
        return true;
    for (i = 0; i < r->n_runs; i++) {
        if (!run_transfer_ok(r, i))
            return false;
    }
    return true;
}

/* --- JSON ------------------------------------------------------------ */

static void json_settings(const bench_report *r, bench_json *j)
{
    const bench_opts *o = r->opts;
    static const char *const data_names[] = { "random", "text", "repeat" };

    bench_json_object_begin(j, "settings");
    bench_json_str(j, "host", o->target.socket_path ? NULL : o->target.host);
    if (o->target.socket_path)
        bench_json_null(j, "port");
    else
        bench_json_u64(j, "port", (uint64_t)o->target.port);
    bench_json_str(j, "socket", o->target.socket_path);
    bench_json_bool(j, "auth", o->target.password != NULL);
    bench_json_u64(j, "db", (uint64_t)o->target.db);
    bench_json_str(j, "workload", bench_workload_name(o->workload));
    bench_json_u64(j, "connections", o->connections);
    bench_json_u64(j, "threads", o->threads);
    bench_json_u64(j, "pipeline", o->pipeline);
    bench_json_str(j, "loop", o->rate > 0.0 ? "open" : "closed");
    bench_json_double(j, "rate", o->rate, RATE_DIGITS);
    if (o->requests > 0) {
        bench_json_null(j, "duration");
        bench_json_u64(j, "requests", o->requests);
        bench_json_double(j, "timeout", o->timeout_s, SECONDS_DIGITS);
    } else {
        bench_json_double(j, "duration", o->duration_s, SECONDS_DIGITS);
        bench_json_null(j, "requests");
    }
    bench_json_double(j, "warmup", o->warmup_s, SECONDS_DIGITS);
    bench_json_u64(j, "repeat", o->repeat);
    bench_json_u64(j, "seed", o->seed);
    bench_json_u64(j, "keyspace", o->keyspace);
    bench_json_str(j, "dist", o->dist_spec);
    bench_json_u64(j, "seq_start", o->seq_start);
    bench_json_u64(j, "value_size_min", o->value_min);
    bench_json_u64(j, "value_size_max", o->value_max);
    bench_json_str(j, "value_data", data_names[o->value_data]);
    bench_json_bool(j, "preload", o->preload);
    bench_json_u64(j, "preload_ttl_ms", o->preload_ttl_ms);
    bench_json_double(j, "ratio", o->ratio, RATIO_DIGITS);
    bench_json_u64(j, "batch", o->batch);
    bench_json_u64(j, "members", o->members);
    bench_json_u64(j, "range", o->range);
    bench_json_u64(j, "subscribers", o->subscribers);
    bench_json_u64(j, "ttl_ms", o->ttl_ms);
    bench_json_str(j, "command", o->command);
    bench_json_object_end(j);
}

/* The command line, with the AUTH password masked. */
static void json_argv(const bench_report *r, bench_json *j)
{
    int i;

    bench_json_array_begin(j, "argv");
    for (i = 0; i < r->argc; i++) {
        bool secret = i > 0 && (strcmp(r->argv[i - 1], "-a") == 0 ||
                                strcmp(r->argv[i - 1], "--password") == 0);

        if (strncmp(r->argv[i], "-a", 2) == 0 && r->argv[i][2] != '\0')
            bench_json_str(j, NULL, "-a***");
        else if (strncmp(r->argv[i], PASSWORD_EQ, strlen(PASSWORD_EQ)) == 0)
            bench_json_str(j, NULL, PASSWORD_EQ "***");
        else
            bench_json_str(j, NULL, secret ? "***" : r->argv[i]);
    }
    bench_json_array_end(j);
}

/* True when s[0, len) is a plain JSON number (no exponent). */
static bool is_json_number(const char *s, size_t len)
{
    size_t i = 0, digits = 0;

    if (i < len && s[i] == '-')
        i++;
    if (i + 1 < len && s[i] == '0' && isdigit((unsigned char)s[i + 1]))
        return false; /* no leading zeros in JSON */
    while (i < len && isdigit((unsigned char)s[i])) {
        i++;
        digits++;
    }
    if (digits == 0)
        return false;
    if (i < len && s[i] == '.') {
        i++;
        digits = 0;
        while (i < len && isdigit((unsigned char)s[i])) {
            i++;
            digits++;
        }
        if (digits == 0)
            return false;
    }
    return i == len;
}

/* "key:value" lines into an object; numbers stay numbers. */
static void json_info(const char *info, bench_json *j)
{
    const char *p = info;

    bench_json_object_begin(j, "server");
    while (p != NULL && *p != '\0') {
        const char *end = strchr(p, '\n'), *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char key[LINE_MAX_LEN];

        if (len > 0 && p[len - 1] == '\r')
            len--;
        colon = memchr(p, ':', len);
        if (len > 0 && p[0] != '#' && colon != NULL &&
            (size_t)(colon - p) < sizeof(key)) {
            const char *v = colon + 1;
            size_t vlen = len - (size_t)(v - p);

            memcpy(key, p, (size_t)(colon - p));
            key[colon - p] = '\0';
            if (is_json_number(v, vlen))
                bench_json_raw(j, key, v, vlen);
            else
                bench_json_strn(j, key, v, vlen);
        }
        p = end ? end + 1 : NULL;
    }
    bench_json_object_end(j);
}

static void json_errors(const bench_errors *e, bench_json *j)
{
    unsigned i;

    bench_json_object_begin(j, "errors");
    for (i = 0; i < e->n; i++)
        bench_json_u64(j, e->kind[i], e->count[i]);
    if (e->other)
        bench_json_u64(j, "other", e->other);
    bench_json_object_end(j);
    bench_json_object_begin(j, "error_samples");
    for (i = 0; i < e->n; i++) {
        if (e->sample[i][0] != '\0')
            bench_json_str(j, e->kind[i], e->sample[i]);
    }
    bench_json_object_end(j);
}

static void json_series(const bench_run *run, bench_json *j)
{
    size_t i;

    bench_json_array_begin(j, "timeseries");
    for (i = 0; i < run->stats.series_len; i++)
        bench_json_u64(j, NULL, run->stats.series[i]);
    bench_json_array_end(j);
    /* The slowest operation of each second: where a stall happened. */
    bench_json_array_begin(j, "timeseries_max");
    for (i = 0; i < run->stats.series_len; i++)
        bench_json_double(j, NULL, us(run->stats.series_max[i]), US_DIGITS);
    bench_json_array_end(j);
}

static void json_figs(bench_json *j, const bench_report *r, int run, fig from,
                      fig to)
{
    int f;

    for (f = (int)from; f <= (int)to; f++) {
        double v = run < 0 ? median_fig(r, (fig)f)
                           : run_fig(r, (unsigned)run, (fig)f);
        int digits = f == FIG_OPS_PER_SEC || f == FIG_DELIVERED_PER_SEC
                         ? RATE_DIGITS
                     : f >= FIG_CLIENT_CPU ? SECONDS_DIGITS
                                           : US_DIGITS;

        bench_json_double(j, fig_names[f], v, digits);
    }
}

static void json_workload_extras(bench_json *j, const bench_report *r, int run)
{
    const bench_opts *o = r->opts;
    uint64_t oc[BENCH_OUT_COUNT] = { 0 };
    double elapsed = 0.0;
    unsigned i, k;

    for (i = 0; i < r->n_runs; i++) {
        if (run >= 0 && (unsigned)run != i)
            continue;
        for (k = 0; k < BENCH_OUT_COUNT; k++)
            oc[k] += r->runs[i].stats.outcomes[k];
        elapsed += r->runs[i].elapsed_s;
    }
    bench_json_u64(j, "hits", oc[BENCH_OUT_HIT]);
    bench_json_u64(j, "misses", oc[BENCH_OUT_MISS]);
    if (o->workload == BENCH_WL_MSET || o->workload == BENCH_WL_MGET)
        bench_json_double(j, "keys_per_sec",
                          (run < 0
                               ? median_fig(r, FIG_OPS_PER_SEC)
                               : run_fig(r, (unsigned)run, FIG_OPS_PER_SEC)) *
                              o->batch,
                          RATE_DIGITS);
    if (bench_workload_is_transfer(o->workload)) {
        bench_json_object_begin(j, "transfer");
        bench_json_u64(j, "commits", oc[BENCH_OUT_HIT]);
        bench_json_u64(j, "aborts", oc[BENCH_OUT_ABORT]);
        bench_json_u64(j, "declined", oc[BENCH_OUT_DECLINED]);
        bench_json_double(j, "commits_per_sec",
                          per_sec(oc[BENCH_OUT_HIT], elapsed), RATE_DIGITS);
        bench_json_double(j, "aborts_per_sec",
                          per_sec(oc[BENCH_OUT_ABORT], elapsed), RATE_DIGITS);
        bench_json_i64(j, "total_expected", r->transfer_expected);
        if (run >= 0) {
            bench_json_i64(j, "total_after", r->extra[run].transfer_total);
            bench_json_u64(j, "missing_accounts",
                           r->extra[run].transfer_missing);
        }
        if (run >= 0)
            bench_json_str(j, "verify",
                           run_transfer_ok(r, (unsigned)run) ? "pass" : "fail");
        else
            bench_json_str(j, "verify",
                           bench_report_transfer_ok(r) ? "pass" : "fail");
        bench_json_object_end(j);
    }
    if (o->rate > 0.0) {
        /* How late requests left against the schedule: the tool's own
         * share of the latency.  Large values mean the generator, not the
         * server, fell behind. */
        bench_json_object_begin(j, "open_loop");
        json_figs(j, r, run, FIG_LAG_P50, FIG_LAG_MAX);
        bench_json_object_end(j);
    }
    if (o->workload == BENCH_WL_PUBLISH) {
        bench_json_object_begin(j, "pubsub");
        bench_json_u64(j, "subscribers", o->subscribers);
        json_figs(j, r, run, FIG_DELIVERED_PER_SEC, FIG_D_MAX);
        bench_json_object_end(j);
    }
    if (o->workload == BENCH_WL_WAKE || o->workload == BENCH_WL_JOBS) {
        /* Elements handed to blocked clients: jobs/s and push-to-wake
         * latency. */
        bench_json_object_begin(j, "blocking");
        bench_json_u64(j, "waiters", o->subscribers);
        bench_json_str(j, "cross_worker", o->cross_worker ? "yes" : "no");
        json_figs(j, r, run, FIG_DELIVERED_PER_SEC, FIG_D_MAX);
        bench_json_object_end(j);
    }
}

void bench_report_json(const bench_report *r, FILE *f)
{
    bench_json j;
    bench_errors total;
    unsigned i;

    memset(&total, 0, sizeof(total));
    for (i = 0; i < r->n_runs; i++)
        bench_errors_merge(&total, &r->runs[i].stats.errors);
    bench_json_init(&j, f);
    bench_json_object_begin(&j, NULL);
    bench_json_str(&j, "tool", "larder-bench");
    bench_json_u64(&j, "schema", BENCH_JSON_SCHEMA);
    bench_json_str(&j, "git_commit", r->git_commit);
    json_argv(r, &j);
    json_settings(r, &j);
    bench_json_object_begin(&j, "machine");
    bench_json_str(&j, "cpu_model", r->cpu_model);
    bench_json_i64(&j, "cores", r->cores);
    bench_json_str(&j, "kernel", r->kernel);
    bench_json_object_end(&j);
    if (r->info_server != NULL)
        json_info(r->info_server, &j);
    else
        bench_json_null(&j, "server");
    bench_json_str(&j, "latency_unit", "us");
    json_figs(&j, r, -1, FIG_OPS_PER_SEC, FIG_MEAN);
    bench_json_double(&j, "ops_per_sec_min",
                      extreme_fig(r, FIG_OPS_PER_SEC, false), RATE_DIGITS);
    bench_json_double(&j, "ops_per_sec_max",
                      extreme_fig(r, FIG_OPS_PER_SEC, true), RATE_DIGITS);
    json_figs(&j, r, -1, FIG_CLIENT_CPU, FIG_SERVER_CPU);
    json_errors(&total, &j);
    bench_json_u64(&j, "errors_total", bench_errors_total(&total));
    json_workload_extras(&j, r, -1);
    if (r->n_runs > 0)
        json_series(&r->runs[median_run(r)], &j);
    bench_json_array_begin(&j, "runs");
    for (i = 0; i < r->n_runs; i++) {
        const bench_run *run = &r->runs[i];

        bench_json_object_begin(&j, NULL);
        bench_json_u64(&j, "ops", run->stats.ops);
        bench_json_double(&j, "elapsed_s", run->elapsed_s, SECONDS_DIGITS);
        json_figs(&j, r, (int)i, FIG_OPS_PER_SEC, FIG_MEAN);
        json_figs(&j, r, (int)i, FIG_CLIENT_CPU, FIG_SERVER_CPU);
        json_errors(&run->stats.errors, &j);
        json_workload_extras(&j, r, (int)i);
        json_series(run, &j);
        bench_json_object_end(&j);
    }
    bench_json_array_end(&j);
    bench_json_object_end(&j);
}

/* --- table ----------------------------------------------------------- */

static const char *info_field(const char *info, const char *key, char *buf,
                              size_t len)
{
    const char *p = info;
    size_t klen = strlen(key);

    while (p != NULL && *p != '\0') {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            size_t n = strcspn(p + klen + 1, "\r\n");

            snprintf(buf, len, "%.*s", (int)n, p + klen + 1);
            return buf;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

static void table_row(FILE *f, const char *label, const bench_report *r,
                      int run)
{
    fig k;

    fprintf(f, "%-7s", label);
    for (k = FIG_OPS_PER_SEC; k <= FIG_MAX; k++) {
        double v = run < 0 ? median_fig(r, k) : run_fig(r, (unsigned)run, k);

        if (isnan(v))
            fprintf(f, k == FIG_OPS_PER_SEC ? " %12s" : " %10s", "-");
        else
            fprintf(f, k == FIG_OPS_PER_SEC ? " %12.1f" : " %10.1f", v);
    }
    if (run >= 0)
        fprintf(f, " %8llu",
                (unsigned long long)bench_errors_total(
                    &r->runs[run].stats.errors));
    fputc('\n', f);
}

void bench_report_table(const bench_report *r, FILE *f)
{
    const bench_opts *o = r->opts;
    char ver[LINE_MAX_LEN], load[LINE_MAX_LEN], where[LINE_MAX_LEN];
    char values[LINE_MAX_LEN];
    const char *version = NULL;
    bench_errors total;
    uint64_t oc[BENCH_OUT_COUNT] = { 0 };
    unsigned i, k;

    if (r->info_server != NULL) {
        version = info_field(r->info_server, "larder_version", ver,
                             sizeof(ver));
        if (version == NULL)
            version = info_field(r->info_server, "redis_version", ver,
                                 sizeof(ver));
    }
    if (o->requests > 0)
        snprintf(load, sizeof(load), "%llu requests",
                 (unsigned long long)o->requests);
    else
        snprintf(load, sizeof(load), "%gs", o->duration_s);
    if (o->target.socket_path != NULL)
        snprintf(where, sizeof(where), "%s", o->target.socket_path);
    else
        snprintf(where, sizeof(where), "%s:%d", o->target.host, o->target.port);
    fprintf(f, "larder-bench %s -> %s (server %s)\n",
            bench_workload_name(o->workload), where,
            version ? version : UNKNOWN);
    fprintf(f, "  %u connections / %u threads, pipeline %u, %s loop",
            o->connections, o->threads, o->pipeline,
            o->rate > 0.0 ? "open" : "closed");
    if (o->rate > 0.0)
        fprintf(f, " at %.0f ops/s", o->rate);
    fprintf(f, ", %s after %gs warm-up, x%u\n", load, o->warmup_s, o->repeat);
    if (o->value_min == o->value_max)
        snprintf(values, sizeof(values), "%llu B",
                 (unsigned long long)o->value_min);
    else
        snprintf(values, sizeof(values), "%llu-%llu B",
                 (unsigned long long)o->value_min,
                 (unsigned long long)o->value_max);
    fprintf(f, "  keyspace %llu %s, values %s, %s, %ld cores\n",
            (unsigned long long)o->keyspace, o->dist_spec, values, r->cpu_model,
            r->cores);
    fprintf(f, "\n%-7s %12s %10s %10s %10s %10s %10s %8s\n", "run", "ops/s",
            "p50 us", "p90 us", "p99 us", "p99.9 us", "max us", "errors");
    for (i = 0; i < r->n_runs; i++) {
        char label[16];

        snprintf(label, sizeof(label), "%u", i + 1);
        table_row(f, label, r, (int)i);
    }
    if (r->n_runs > 1)
        table_row(f, "median", r, -1);
    memset(&total, 0, sizeof(total));
    for (i = 0; i < r->n_runs; i++) {
        bench_errors_merge(&total, &r->runs[i].stats.errors);
        for (k = 0; k < BENCH_OUT_COUNT; k++)
            oc[k] += r->runs[i].stats.outcomes[k];
    }
    if (bench_errors_total(&total) > 0) {
        fprintf(f, "\nerrors:");
        for (i = 0; i < total.n; i++)
            fprintf(f, " %s=%llu", total.kind[i],
                    (unsigned long long)total.count[i]);
        if (total.other)
            fprintf(f, " other=%llu", (unsigned long long)total.other);
        fputc('\n', f);
        for (i = 0; i < total.n; i++) {
            if (total.sample[i][0] != '\0')
                fprintf(f, "  first %s: %s\n", total.kind[i], total.sample[i]);
        }
    }
    if (oc[BENCH_OUT_MISS] > 0)
        fprintf(f, "\nhits %llu, misses %llu\n",
                (unsigned long long)oc[BENCH_OUT_HIT],
                (unsigned long long)oc[BENCH_OUT_MISS]);
    if (bench_workload_is_transfer(o->workload)) {
        double elapsed = 0.0;

        for (i = 0; i < r->n_runs; i++)
            elapsed += r->runs[i].elapsed_s;
        fprintf(f,
                "\ntransfer: %.1f commits/s, %llu commits, %llu aborts, "
                "%llu declined; total balance %s (expected %lld)\n",
                per_sec(oc[BENCH_OUT_HIT], elapsed),
                (unsigned long long)oc[BENCH_OUT_HIT],
                (unsigned long long)oc[BENCH_OUT_ABORT],
                (unsigned long long)oc[BENCH_OUT_DECLINED],
                bench_report_transfer_ok(r) ? "PASS" : "FAIL",
                (long long)r->transfer_expected);
    }
    if (o->workload == BENCH_WL_PUBLISH)
        fprintf(f,
                "\npubsub: %u subscribers, %.1f messages/s delivered, "
                "delivery p50 %.1f p99 %.1f p99.9 %.1f max %.1f us\n",
                o->subscribers, median_fig(r, FIG_DELIVERED_PER_SEC),
                median_fig(r, FIG_D_P50), median_fig(r, FIG_D_P99),
                median_fig(r, FIG_D_P999), median_fig(r, FIG_D_MAX));
    if (o->workload == BENCH_WL_WAKE || o->workload == BENCH_WL_JOBS)
        fprintf(f,
                "\nblocking: %u waiters%s, %.1f elements/s delivered, "
                "push-to-wake p50 %.1f p99 %.1f p99.9 %.1f max %.1f us\n",
                o->subscribers, o->cross_worker ? " (other worker)" : "",
                median_fig(r, FIG_DELIVERED_PER_SEC), median_fig(r, FIG_D_P50),
                median_fig(r, FIG_D_P99), median_fig(r, FIG_D_P999),
                median_fig(r, FIG_D_MAX));
    if (o->rate > 0.0)
        fprintf(f,
                "\nopen loop: requests left %.1f us late at p50, %.1f at "
                "p99, %.1f at most (the tool's own lag)\n",
                median_fig(r, FIG_LAG_P50), median_fig(r, FIG_LAG_P99),
                median_fig(r, FIG_LAG_MAX));
    fprintf(f, "\nclient CPU %.2fs", median_fig(r, FIG_CLIENT_CPU));
    if (!isnan(median_fig(r, FIG_SERVER_CPU)))
        fprintf(f, ", server CPU %.2fs", median_fig(r, FIG_SERVER_CPU));
    fprintf(f, " per run (median); git %s\n", r->git_commit);
}

void bench_report_run_line(const bench_report *r, unsigned i, FILE *f)
{
    fprintf(f,
            "larder-bench: run %u/%u: %.1f ops/s, p50 %.1f p99 %.1f "
            "p99.9 %.1f max %.1f us, %llu errors\n",
            i + 1, r->opts->repeat, run_fig(r, i, FIG_OPS_PER_SEC),
            run_fig(r, i, FIG_P50), run_fig(r, i, FIG_P99),
            run_fig(r, i, FIG_P999), run_fig(r, i, FIG_MAX),
            (unsigned long long)bench_errors_total(&r->runs[i].stats.errors));
}
