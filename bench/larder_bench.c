/*
 * larder-bench: a multi-client RESP load generator.
 *
 * main() checks the target (connect, AUTH, SELECT), records its INFO
 * server section, preloads or (transfer) initialises the keyspace, runs
 * the workload --repeat times with bench_engine, reads the server's CPU
 * time and (transfer) the balance total around each run, and prints the
 * report.  See --help.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_engine.h"
#include "bench/bench_opts.h"
#include "bench/bench_report.h"
#include "bench/bench_sync.h"
#include "bench/bench_work.h"

#define EXIT_USAGE 1
#define EXIT_CANNOT_RUN 2
#define EXIT_MISMATCH 3
#define ERR_LEN 512
#define NS_PER_S 1e9

/* Server CPU seconds (INFO cpu: used_cpu_sys + used_cpu_user), or -1. */
static double server_cpu(const bench_target *t)
{
    static const char *const argv[] = { "INFO", "cpu" };
    static const char *const keys[] = { "used_cpu_sys:", "used_cpu_user:" };
    bench_sync c;
    bench_reply r;
    double total = 0.0;
    size_t i;
    int found = 0;

    if (bench_sync_open(&c, t) != 0 ||
        bench_sync_command(&c, &r, 2, argv) != 0 ||
        r.type != BENCH_REPLY_BULK) {
        bench_sync_close(&c);
        return -1.0;
    }
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        const char *p = memmem(r.str, r.len, keys[i], strlen(keys[i]));

        if (p != NULL && (p == r.str || p[-1] == '\n')) {
            total += strtod(p + strlen(keys[i]), NULL);
            found++;
        }
    }
    bench_sync_close(&c);
    return found == 2 ? total : -1.0;
}

/* INFO server as a malloc'd string (NULL if the server has none). */
static char *server_info(bench_sync *c)
{
    static const char *const argv[] = { "INFO", "server" };
    bench_reply r;
    char *s;

    if (bench_sync_command(c, &r, 2, argv) != 0 || r.type != BENCH_REPLY_BULK)
        return NULL;
    s = malloc(r.len + 1);
    if (s == NULL)
        return NULL;
    memcpy(s, r.str, r.len);
    s[r.len] = '\0';
    return s;
}

static int transfer_check(const bench_work *w, const bench_target *t,
                          bench_run_extra *x, char *err, size_t errlen)
{
    bench_sync c;
    int rc = bench_sync_open(&c, t);

    if (rc != 0) {
        snprintf(err, errlen, "%s", c.err);
    } else {
        rc = bench_work_transfer_total(w, &c, &x->transfer_total,
                                       &x->transfer_missing, err, errlen);
        x->transfer_checked = rc == 0;
    }
    bench_sync_close(&c);
    return rc;
}

static void progress(const bench_opts *o, const char *fmt, const char *arg)
{
    if (!o->quiet) {
        fprintf(stderr, fmt, arg);
        fflush(stderr);
    }
}

/* One preloading thread: its own connection and a slice of the keys. */
typedef struct preload_job {
    const bench_opts *o;
    const bench_work *w;
    uint64_t begin;
    uint64_t end;
    pthread_t tid;
    int rc;
    char err[ERR_LEN];
} preload_job;

static void *preload_main(void *arg)
{
    preload_job *job = arg;
    bench_sync c;

    job->rc = bench_sync_open(&c, &job->o->target);
    if (job->rc != 0)
        snprintf(job->err, sizeof(job->err), "%s", c.err);
    else
        job->rc = bench_work_preload(job->w, &c, job->begin, job->end, job->err,
                                     sizeof(job->err));
    bench_sync_close(&c);
    return NULL;
}

/* Split the keyspace over --preload-connections threads; returns 0 or the
 * first failure, with its message in err. */
static int preload(const bench_opts *o, const bench_work *w, char *err,
                   size_t errlen)
{
    uint64_t n = o->preload_conns < o->keyspace ? o->preload_conns
                                                : o->keyspace;
    preload_job *jobs = calloc(n, sizeof(*jobs));
    uint64_t i, started = 0;
    int rc = 0;

    if (jobs == NULL) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    for (i = 0; i < n; i++) {
        jobs[i].o = o;
        jobs[i].w = w;
        jobs[i].begin = o->keyspace * i / n;
        jobs[i].end = o->keyspace * (i + 1) / n;
        if (pthread_create(&jobs[i].tid, NULL, preload_main, &jobs[i]) != 0) {
            jobs[i].rc = EAGAIN;
            snprintf(jobs[i].err, sizeof(jobs[i].err),
                     "pthread_create() failed");
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(jobs[i].tid, NULL);
    for (i = 0; i < n && rc == 0; i++) {
        if (jobs[i].rc != 0) {
            rc = jobs[i].rc;
            snprintf(err, errlen, "%s", jobs[i].err);
        }
    }
    free(jobs);
    return rc;
}

/* Connect, record INFO, fill the keyspace.  Returns 0 or non-zero with
 * a message in err. */
static int prepare(const bench_opts *o, const bench_work *w, char **info,
                   char *err, size_t errlen)
{
    bench_sync c;
    int rc = bench_sync_open(&c, &o->target);

    if (rc != 0) {
        snprintf(err, errlen, "%s", c.err);
        bench_sync_close(&c);
        return rc;
    }
    *info = server_info(&c);
    bench_sync_close(&c);
    if (!bench_work_has_preload(w))
        return 0;
    progress(o, "larder-bench: preloading for %s\n",
             bench_workload_name(o->workload));
    return preload(o, w, err, errlen);
}

int main(int argc, char **argv)
{
    bench_opts o;
    bench_work w;
    bench_report rep;
    bench_run *runs;
    bench_run_extra *extra;
    char err[ERR_LEN];
    char *info = NULL;
    unsigned i, done = 0;
    int rc, status = EXIT_SUCCESS;

    /* A server that closes a connection must cost a counted error, not
     * the process: writes then fail with EPIPE instead of raising SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    switch (bench_opts_parse(&o, argc, argv, err, sizeof(err))) {
    case BENCH_OPTS_HELP: return EXIT_SUCCESS;
    case BENCH_OPTS_ERROR:
        fprintf(stderr, "larder-bench: %s\n", err);
        return EXIT_USAGE;
    case BENCH_OPTS_OK:
    default: break;
    }
    if (bench_work_init(&w, &o) != 0) {
        fprintf(stderr, "larder-bench: out of memory\n");
        return EXIT_CANNOT_RUN;
    }
    runs = calloc(o.repeat, sizeof(*runs));
    extra = calloc(o.repeat, sizeof(*extra));
    if (runs == NULL || extra == NULL) {
        fprintf(stderr, "larder-bench: out of memory\n");
        return EXIT_CANNOT_RUN;
    }
    rc = prepare(&o, &w, &info, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "larder-bench: %s\n", err);
        return EXIT_CANNOT_RUN;
    }
    memset(&rep, 0, sizeof(rep));
    rep.opts = &o;
    rep.runs = runs;
    rep.extra = extra;
    rep.info_server = info;
    rep.argc = argc;
    rep.argv = argv;
    rep.transfer_expected = (int64_t)o.keyspace * BENCH_TRANSFER_INITIAL;
    bench_report_gather(&rep);
    for (i = 0; i < o.repeat; i++) {
        double cpu0 = server_cpu(&o.target), cpu1;

        rc = bench_engine_run(&o, &w, i, &runs[i], err, sizeof(err));
        if (rc != 0) {
            fprintf(stderr, "larder-bench: run %u: %s\n", i + 1, err);
            status = EXIT_CANNOT_RUN;
            break;
        }
        cpu1 = server_cpu(&o.target);
        extra[i].server_cpu_s = cpu0 >= 0.0 && cpu1 >= 0.0 ? cpu1 - cpu0 : -1.0;
        if (bench_workload_is_transfer(o.workload) &&
            transfer_check(&w, &o.target, &extra[i], err, sizeof(err)) != 0)
            fprintf(stderr, "larder-bench: balance check: %s\n", err);
        done++;
        rep.n_runs = done;
        if (!o.quiet)
            bench_report_run_line(&rep, i, stderr);
    }
    if (done > 0) {
        if (o.json)
            bench_report_json(&rep, stdout);
        else
            bench_report_table(&rep, stdout);
        fflush(stdout);
    }
    if (status == EXIT_SUCCESS && !bench_report_transfer_ok(&rep)) {
        fprintf(stderr, "larder-bench: transfer total mismatch: "
                        "balances were not conserved\n");
        status = EXIT_MISMATCH;
    }
    for (i = 0; i < done; i++)
        bench_run_fini(&runs[i]);
    free(runs);
    free(extra);
    free(info);
    bench_work_fini(&w);
    return status;
}
