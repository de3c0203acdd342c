/*
 * bench_stats: the figures one thread collects during a run and one run
 * ends with: operations and their outcomes, latency and pub/sub delivery
 * histograms, errors by kind, and completions per second.  A thread owns
 * its bench_stats; the engine merges them after the threads are joined.
 */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench_hist.h"
#include "bench/bench_work.h"

/* Distinct error kinds kept by name; more are counted as "other". */
#define BENCH_ERR_KINDS 32
#define BENCH_ERR_KIND_LEN 32
/* Bytes kept of the first message of each kind. */
#define BENCH_ERR_SAMPLE_LEN 96

/* Errors by kind: a reply's first word ("ERR", "WRONGTYPE") or one of
 * the tool's own kinds ("conn_refused", "conn_closed", ...), and the
 * first server message of each kind ("ERR unknown command 'WATCH' ..."),
 * so a report can say what failed, not only how often. */
typedef struct bench_errors {
    unsigned n;
    char kind[BENCH_ERR_KINDS][BENCH_ERR_KIND_LEN];
    char sample[BENCH_ERR_KINDS][BENCH_ERR_SAMPLE_LEN]; /* "" if none */
    uint64_t count[BENCH_ERR_KINDS];
    uint64_t other; /* kinds past BENCH_ERR_KINDS */
} bench_errors;

/* Add n errors of kind (len bytes, not NUL-terminated). */
void bench_errors_add(bench_errors *e, const char *kind, size_t len,
                      uint64_t n);

/* As bench_errors_add(), keeping sample (NUL-terminated, truncated) as
 * the kind's message if it has none yet. */
void bench_errors_add_sample(bench_errors *e, const char *kind, size_t len,
                             uint64_t n, const char *sample);

/* Add every count of src into dst. */
void bench_errors_merge(bench_errors *dst, const bench_errors *src);

/* All errors counted. */
uint64_t bench_errors_total(const bench_errors *e);

typedef struct bench_stats {
    uint64_t ops;                       /* non-error completions */
    uint64_t outcomes[BENCH_OUT_COUNT]; /* every completion by outcome */
    bench_hist *latency;                /* ns, of the ops */
    bench_hist *delivery;               /* ns, publish to subscriber */
    bench_hist *lag;                    /* ns, open loop: sent - due */
    uint64_t delivered;                 /* messages subscribers received */
    bench_errors errors;
    uint64_t *series;     /* ops completed in second i */
    uint64_t *series_max; /* ns, their largest latency */
    size_t series_len;
    size_t series_cap;
} bench_stats;

/* Zero *s and allocate its histograms.  Returns 0 or ENOMEM.  Free with
 * bench_stats_fini(), also after a failure. */
int bench_stats_init(bench_stats *s);
void bench_stats_fini(bench_stats *s);

/* Count n completions in second sec of the run, the slowest of which
 * took max_ns.  Returns 0 or ENOMEM. */
int bench_stats_series_add(bench_stats *s, size_t sec, uint64_t n,
                           uint64_t max_ns);

/* Add src into dst.  Returns 0 or ENOMEM. */
int bench_stats_merge(bench_stats *dst, const bench_stats *src);

#endif /* BENCH_STATS_H */
