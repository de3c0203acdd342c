/*
 * bench_report: what larder-bench publishes after its runs: the human
 * table and the --json object (settings, machine, the server's INFO
 * server section, git commit, the median figures and every run), plus
 * the facts it gathers for them (CPU model, commit).
 */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/bench_engine.h"
#include "bench/bench_opts.h"

/* Version of the JSON layout; bump it when a field changes meaning. */
#define BENCH_JSON_SCHEMA 1

/* Per-run facts gathered outside the engine. */
typedef struct bench_run_extra {
    double server_cpu_s;    /* from INFO cpu; < 0 when unknown */
    bool transfer_checked;  /* transfer: the total was read back */
    int64_t transfer_total; /* ... and was this */
    uint64_t transfer_missing;
} bench_run_extra;

typedef struct bench_report {
    const bench_opts *opts;
    const bench_run *runs;
    const bench_run_extra *extra;
    unsigned n_runs;
    const char *info_server;   /* raw INFO server text, or NULL */
    int argc;                  /* the command line, for the record */
    char *const *argv;         /* (-a PASSWORD is masked when printed) */
    int64_t transfer_expected; /* transfer: the total that must hold */
    char git_commit[64];
    char cpu_model[128];
    long cores;
    char kernel[128];
} bench_report;

/* Fill the machine facts and the git commit ("unknown" without git). */
void bench_report_gather(bench_report *r);

/* True when every run's transfer total matched (or not a transfer). */
bool bench_report_transfer_ok(const bench_report *r);

/* Print the human table. */
void bench_report_table(const bench_report *r, FILE *f);

/* Print the JSON object. */
void bench_report_json(const bench_report *r, FILE *f);

/* One progress line for a finished run (stderr). */
void bench_report_run_line(const bench_report *r, unsigned i, FILE *f);

#endif /* BENCH_REPORT_H */
