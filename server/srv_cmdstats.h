/*
 * srv_cmdstats.h - per-command and per-error statistics of every worker,
 * for INFO commandstats, errorstats and latencystats and for LATENCY
 * HISTOGRAM: one shared anonymous region (Redis keeps these per server;
 * larder sums them over its workers).
 *
 * Who may touch what:
 * - The master creates the region before it forks (srv_cmdstats_create),
 *   with a slot per worker the tree may ever have (workers-max) and a
 *   record per row of the command table. Children inherit it.
 * - A worker writes only its own slot (srv_cmdstats_use picks it, after
 *   fork): relaxed atomic adds, one writer per slot.
 * - Any process reads every slot and sums (a sum is not a snapshot: the
 *   counters of one command may be a call apart).
 * - CONFIG RESETSTAT, from any process, swaps every counter to zero; an
 *   add racing with it lands before or after the reset, never lost half.
 * - A worker that dies leaves its counts; its respawn keeps adding to
 *   them. Nothing in the region needs repair.
 * Error records are claimed by their slot's worker: the code is written
 *   first, then `count` published with a release store; readers load
 *   `count` with acquire before the code.
 */
#ifndef SRV_CMDSTATS_H
#define SRV_CMDSTATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SRV_CMDSTATS_MAGIC 0x534d43524452414cull /* "LARDRCMS" */
#define SRV_CMDSTATS_VERSION 1

/*
 * Latency histogram: bucket 0 holds durations under 2^SRV_HIST_MIN_SHIFT
 * ns (about 1 us); then SRV_HIST_OCTAVES powers of two, each cut into
 * 2^SRV_HIST_SUB_BITS buckets (a bucket spans at most 1/8 of its value);
 * the last bucket takes anything longer.
 */
#define SRV_HIST_MIN_SHIFT 10
#define SRV_HIST_SUB_BITS 3
#define SRV_HIST_OCTAVES 30
#define SRV_HIST_BUCKETS (1 + (SRV_HIST_OCTAVES << SRV_HIST_SUB_BITS))

/* Distinct error codes a worker keeps (Redis keeps 128 for the server). */
#define SRV_ERRSTATS_MAX 128
/* Room for an error code ("WRONGTYPE"), NUL included. */
#define SRV_ERRCODE_MAX 32

/* One command's counters in one worker's slot. */
typedef struct srv_cmdstat_sh {
    _Atomic uint64_t calls;    /* atomic; the slot's worker adds */
    _Atomic uint64_t ns;       /* atomic: time spent, nanoseconds */
    _Atomic uint64_t rejected; /* atomic: refused before it ran */
    _Atomic uint64_t failed;   /* atomic: ran and replied an error */
    _Atomic uint64_t hist[SRV_HIST_BUCKETS]; /* atomic: calls by duration */
} srv_cmdstat_sh;

/* One error code's count in one worker's slot. */
typedef struct srv_errstat_sh {
    char code[SRV_ERRCODE_MAX]; /* written once by the slot's worker,
                                 * before count is first published */
    _Atomic uint64_t count;     /* atomic; 0: record free */
} srv_errstat_sh;

/* The totals of one command over every worker. */
typedef struct srv_cmdstat_sum {
    uint64_t calls, ns, rejected, failed;
    uint64_t hist[SRV_HIST_BUCKETS];
} srv_cmdstat_sum;

typedef struct srv_cmdstats srv_cmdstats;

/*
 * Map a region of `nslots` worker slots for a table of `ncmds` commands.
 * The master, before fork (an embedded worker: for itself). NULL with
 * errno set if mmap fails. It becomes the process's region (and its
 * children's) for the functions below.
 */
srv_cmdstats *srv_cmdstats_create(unsigned nslots, unsigned ncmds);

/* Unmap the region and NULL *s (its creator, once no process uses it). */
void srv_cmdstats_destroy(srv_cmdstats **s);

/* This process's region (NULL if none). */
srv_cmdstats *srv_cmdstats_region(void);

/* This process is the worker of slot `slot`: its counts go there. A
 * worker, after fork, before it serves. An out-of-range slot counts
 * nothing. */
void srv_cmdstats_use(unsigned slot);

/* ---- writers: this process's slot; no-ops without one ---- */

/* Command `cmd` (its index in the command table) ran for `ns`
 * nanoseconds; `failed`: it replied an error. */
void srv_cmdstats_call(unsigned cmd, int64_t ns, int failed);

/* Command `cmd` was refused before it ran (arity, auth, ...). */
void srv_cmdstats_rejected(unsigned cmd);

/*
 * An error reply of `msg` (its first word is its code, as Redis counts
 * "errorstat_WRONGTYPE"). Counted in this process even without a region
 * (srv_cmdstats_errors). Called by the reply layer for every error.
 */
void srv_cmdstats_error(const char *msg);

/* How many error replies this process has sent (monotonic). */
uint64_t srv_cmdstats_errors(void);

/* ---- readers: any process ---- */

/* The sum over every slot of command `cmd`'s counters. */
void srv_cmdstats_sum(const srv_cmdstats *s, unsigned cmd,
                      srv_cmdstat_sum *out);

/* The number of error replies over every slot (total_error_replies). */
uint64_t srv_cmdstats_total_errors(const srv_cmdstats *s);

/*
 * Call fn(ctx, code, count) for each error code counted in any slot, the
 * counts of one code summed; in the order the codes were first seen by
 * slot 0, then slot 1, ... Returns the number of codes.
 */
int srv_cmdstats_each_error(const srv_cmdstats *s,
                            void (*fn)(void *ctx, const char *code,
                                       uint64_t count),
                            void *ctx);

/* The duration in nanoseconds below which `pct` percent of the calls in
 * sum fall (the upper bound of that bucket); 0 without calls. */
uint64_t srv_cmdstats_percentile_ns(const srv_cmdstat_sum *sum, double pct);

/* The upper bound in nanoseconds of histogram bucket `i`. */
uint64_t srv_cmdstats_bucket_ns(unsigned i);

/* CONFIG RESETSTAT: zero every counter of every slot. */
void srv_cmdstats_reset(srv_cmdstats *s);

#endif
