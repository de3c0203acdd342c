/*
 * bench_engine: one measured run of larder-bench.  Starts --threads
 * threads, each with its own libevent base and its share of the
 * connections (no libevent object is ever touched by two threads), drives
 * the closed or open loop, discards the warm-up, and merges the threads'
 * figures into a bench_run when they are joined.
 */
#ifndef BENCH_ENGINE_H
#define BENCH_ENGINE_H

#include <stddef.h>

#include "bench/bench_opts.h"
#include "bench/bench_stats.h"
#include "bench/bench_work.h"

/* The figures of one run. */
typedef struct bench_run {
    bench_stats stats;
    double elapsed_s;    /* the measured window */
    double ops_per_sec;  /* stats.ops / elapsed_s */
    double client_cpu_s; /* user + system CPU of this process in the run */
} bench_run;

/*
 * Run the workload once: connect, warm up, measure, drain, disconnect.
 * run_index varies the random streams between repetitions.  On success
 * returns 0 and *run holds the figures (free with bench_run_fini());
 * otherwise returns an errno or BENCH_ERUN with a message in err.  Call
 * from the main thread only.
 */
int bench_engine_run(const bench_opts *o, const bench_work *w,
                     unsigned run_index, bench_run *run, char *err,
                     size_t errlen);

/* Free a run's figures. */
void bench_run_fini(bench_run *run);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

#endif /* BENCH_ENGINE_H */
