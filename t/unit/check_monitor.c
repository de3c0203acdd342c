/*
 * check_monitor: unit tests of the shared statistics regions: the command
 * statistics (server/srv_cmdstats.h: histogram buckets and percentiles,
 * sums over slots, error codes, reset, a writer per slot in another
 * process), the slow log ring (server/srv_slowlog.h: order, cuts,
 * max-len, reset, the walk under concurrent adds, a writer killed holding
 * the lock) and the latency monitor (server/srv_latency.h: one sample a
 * second, max, reset).
 */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/srv_cmdstats.h"
#include "server/srv_latency.h"
#include "server/srv_slowlog.h"

#define NSLOTS 3
#define NCMDS 8
#define US 1000
#define MS (1000 * US)
#define CHILD_ADDS 10000
#define TIMEOUT_S 30

/* ---- command statistics ---- */

START_TEST(test_buckets)
{
    /* Bounds grow, and every duration falls in a bucket whose bound is
     * above it and within an eighth of it. */
    for (unsigned i = 1; i < SRV_HIST_BUCKETS; i++)
        ck_assert_uint_gt(srv_cmdstats_bucket_ns(i),
                          srv_cmdstats_bucket_ns(i - 1));
    srv_cmdstats *s = srv_cmdstats_create(NSLOTS, NCMDS);
    ck_assert_ptr_nonnull(s);
    srv_cmdstats_use(0);
    uint64_t samples[] = { 0, 500, 1024, 1500, 5 * US, 37 * US, MS, 77 * MS };
    for (size_t k = 0; k < sizeof samples / sizeof samples[0]; k++) {
        srv_cmdstat_sum sum;
        srv_cmdstats_reset(s);
        srv_cmdstats_call(1, (int64_t)samples[k], 0);
        srv_cmdstats_sum(s, 1, &sum);
        uint64_t p = srv_cmdstats_percentile_ns(&sum, 50);
        ck_assert_uint_gt(p, samples[k]);
        if (samples[k] >= 1024)
            ck_assert_uint_le(p, samples[k] + samples[k] / 8 + 1);
    }
    srv_cmdstats_destroy(&s);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(test_percentiles_and_sums)
{
    srv_cmdstats *s = srv_cmdstats_create(NSLOTS, NCMDS);
    srv_cmdstat_sum sum;

    /* 90 fast calls in slot 0, 10 slow ones in slot 2. */
    srv_cmdstats_use(0);
    for (int i = 0; i < 90; i++)
        srv_cmdstats_call(3, 2 * US, 0);
    srv_cmdstats_use(2);
    for (int i = 0; i < 10; i++)
        srv_cmdstats_call(3, 10 * MS, i < 4);
    srv_cmdstats_rejected(3);
    srv_cmdstats_sum(s, 3, &sum);
    ck_assert_uint_eq(sum.calls, 100);
    ck_assert_uint_eq(sum.failed, 4);
    ck_assert_uint_eq(sum.rejected, 1);
    ck_assert_uint_eq(sum.ns, 90ull * 2 * US + 10ull * 10 * MS);
    ck_assert_uint_lt(srv_cmdstats_percentile_ns(&sum, 50), 3 * US);
    ck_assert_uint_lt(srv_cmdstats_percentile_ns(&sum, 90), 3 * US);
    ck_assert_uint_gt(srv_cmdstats_percentile_ns(&sum, 99), 10 * MS);
    ck_assert_uint_gt(srv_cmdstats_percentile_ns(&sum, 100), 10 * MS);
    /* Out of range: counts nothing. */
    srv_cmdstats_call(NCMDS, 1, 0);
    srv_cmdstats_use(NSLOTS);
    srv_cmdstats_call(3, 1, 0);
    srv_cmdstats_sum(s, 3, &sum);
    ck_assert_uint_eq(sum.calls, 100);
    srv_cmdstats_reset(s);
    srv_cmdstats_sum(s, 3, &sum);
    ck_assert_uint_eq(sum.calls, 0);
    ck_assert_uint_eq(srv_cmdstats_percentile_ns(&sum, 50), 0);
    srv_cmdstats_destroy(&s);
}
END_TEST

typedef struct seen {
    char code[NSLOTS * SRV_ERRSTATS_MAX][SRV_ERRCODE_MAX];
    uint64_t count[NSLOTS * SRV_ERRSTATS_MAX];
    int n;
} seen;

static void collect(void *arg, const char *code, uint64_t count)
{
    seen *x = arg;

    snprintf(x->code[x->n], SRV_ERRCODE_MAX, "%s", code);
    x->count[x->n++] = count;
}

START_TEST(test_errors)
{
    srv_cmdstats *s = srv_cmdstats_create(NSLOTS, NCMDS);
    static seen x;
    uint64_t before = srv_cmdstats_errors();

    srv_cmdstats_use(0);
    srv_cmdstats_error("ERR syntax error");
    srv_cmdstats_error("WRONGTYPE Operation against a key");
    srv_cmdstats_error("ERR other");
    srv_cmdstats_use(1);
    srv_cmdstats_error("WRONGTYPE again");
    srv_cmdstats_error("NOAUTH Authentication required.");
    ck_assert_uint_eq(srv_cmdstats_errors() - before, 5);
    ck_assert_uint_eq(srv_cmdstats_total_errors(s), 5);
    memset(&x, 0, sizeof x);
    ck_assert_int_eq(srv_cmdstats_each_error(s, collect, &x), 3);
    ck_assert_str_eq(x.code[0], "ERR");
    ck_assert_uint_eq(x.count[0], 2);
    ck_assert_str_eq(x.code[1], "WRONGTYPE");
    ck_assert_uint_eq(x.count[1], 2); /* summed over slots 0 and 1 */
    ck_assert_str_eq(x.code[2], "NOAUTH");
    /* A code longer than a record's room is cut, not overflowed. */
    char long_code[SRV_ERRCODE_MAX * 2];
    memset(long_code, 'Z', sizeof long_code - 1);
    long_code[sizeof long_code - 1] = '\0';
    srv_cmdstats_error(long_code);
    /* More distinct codes than records: counted in the total only. */
    for (int i = 0; i < SRV_ERRSTATS_MAX + 5; i++) {
        char code[SRV_ERRCODE_MAX];
        snprintf(code, sizeof code, "E%d x", i);
        srv_cmdstats_error(code);
    }
    ck_assert_uint_eq(srv_cmdstats_total_errors(s),
                      5 + 1 + SRV_ERRSTATS_MAX + 5);
    srv_cmdstats_reset(s);
    ck_assert_uint_eq(srv_cmdstats_total_errors(s), 0);
    memset(&x, 0, sizeof x);
    ck_assert_int_eq(srv_cmdstats_each_error(s, collect, &x), 0);
    srv_cmdstats_destroy(&s);
}
END_TEST

START_TEST(test_writer_in_another_process)
{
    srv_cmdstats *s = srv_cmdstats_create(NSLOTS, NCMDS);
    srv_cmdstat_sum sum;
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        srv_cmdstats_use(1);
        for (int i = 0; i < CHILD_ADDS; i++)
            srv_cmdstats_call(2, US, 0);
        _exit(0);
    }
    srv_cmdstats_use(0);
    for (int i = 0; i < CHILD_ADDS; i++)
        srv_cmdstats_call(2, US, 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    srv_cmdstats_sum(s, 2, &sum);
    ck_assert_uint_eq(sum.calls, 2 * CHILD_ADDS);
    srv_cmdstats_destroy(&s);
}
END_TEST

/* ---- slow log ---- */

static void add(const char *a, const char *b, long long max_len)
{
    srv_slice argv[2] = { { (char *)a, strlen(a) }, { (char *)b, strlen(b) } };

    srv_slowlog_add(argv, 2, 1700000000, 42, "127.0.0.1:1", "me", max_len);
}

START_TEST(test_slowlog_order_and_len)
{
    srv_slowlog *l = srv_slowlog_create();
    static srv_slowlog_entry e;
    uint64_t cursor = UINT64_MAX;
    char num[16];

    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(srv_slowlog_len(128), 0);
    ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 0);
    for (int i = 0; i < 5; i++) {
        snprintf(num, sizeof num, "%d", i);
        add("SET", num, 128);
    }
    ck_assert_int_eq(srv_slowlog_len(128), 5);
    for (int i = 4; i >= 0; i--) {
        ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 1);
        ck_assert_uint_eq(e.id, (uint64_t)i);
        ck_assert_int_eq(e.argc, 2);
        snprintf(num, sizeof num, "%d", i);
        ck_assert_int_eq((int)e.argv[1].len, (int)strlen(num));
        ck_assert(memcmp(e.argv[1].ptr, num, strlen(num)) == 0);
        ck_assert_str_eq(e.addr, "127.0.0.1:1");
        ck_assert_str_eq(e.name, "me");
        ck_assert_int_eq(e.duration_us, 42);
    }
    ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 0);
    /* max-len trims for good; reset empties, ids go on. */
    ck_assert_int_eq(srv_slowlog_len(2), 2);
    ck_assert_int_eq(srv_slowlog_len(128), 2);
    srv_slowlog_reset();
    ck_assert_int_eq(srv_slowlog_len(128), 0);
    add("GET", "x", 128);
    cursor = UINT64_MAX;
    ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 1);
    ck_assert_uint_eq(e.id, 5);
    /* 0 keeps nothing. */
    add("GET", "y", 0);
    ck_assert_int_eq(srv_slowlog_len(128), 1);
    srv_slowlog_destroy(&l);
    ck_assert_ptr_null(l);
}
END_TEST

START_TEST(test_slowlog_cuts)
{
    srv_slowlog *l = srv_slowlog_create();
    static srv_slowlog_entry e;
    static srv_slice argv[SRV_SLOWLOG_ARGS + 10];
    static char big[SRV_SLOWLOG_ARG_BYTES + 100];
    uint64_t cursor = UINT64_MAX;

    memset(big, 'x', sizeof big);
    for (int i = 0; i < SRV_SLOWLOG_ARGS + 10; i++)
        argv[i] = (srv_slice){ big, sizeof big };
    srv_slowlog_add(argv, SRV_SLOWLOG_ARGS + 10, 1, 1, "a", "", 128);
    ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 1);
    ck_assert_int_eq(e.argc, SRV_SLOWLOG_ARGS);
    ck_assert_int_eq((int)e.argv[0].len,
                     SRV_SLOWLOG_ARG_BYTES +
                         (int)strlen("... (100 more bytes)"));
    ck_assert(memcmp(e.argv[0].ptr + SRV_SLOWLOG_ARG_BYTES,
                     "... (100 more bytes)", 20) == 0);
    const srv_slice *last = &e.argv[SRV_SLOWLOG_ARGS - 1];
    ck_assert_int_eq((int)last->len, (int)strlen("... (11 more arguments)"));
    ck_assert(memcmp(last->ptr, "... (11 more arguments)", last->len) == 0);
    /* The ring keeps at most its capacity. */
    for (int i = 0; i < SRV_SLOWLOG_CAP + 10; i++)
        add("PING", "x", 1 << 20);
    ck_assert_int_eq(srv_slowlog_len(1 << 20), SRV_SLOWLOG_CAP);
    srv_slowlog_destroy(&l);
}
END_TEST

START_TEST(test_slowlog_writer_killed)
{
    /* A writer killed at any point leaves a log the next one can use. */
    srv_slowlog *l = srv_slowlog_create();
    static srv_slowlog_entry e;

    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            for (;;)
                add("SET", "k", 128);
        }
        usleep(1000 * (round % 5 + 1));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    add("GET", "after", 128);
    uint64_t cursor = UINT64_MAX;
    ck_assert_int_eq(srv_slowlog_next(&cursor, 128, &e), 1);
    ck_assert(e.argc == 2 && memcmp(e.argv[1].ptr, "after", 5) == 0);
    ck_assert_int_le(srv_slowlog_len(128), 128);
    srv_slowlog_destroy(&l);
}
END_TEST

/* ---- latency monitor ---- */

START_TEST(test_latency_events)
{
    srv_latency *l = srv_latency_create();
    static srv_latency_event e;
    const char *names[] = { "command" };
    size_t lens[] = { 7 };

    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(srv_latency_event_at(0, &e), 0);
    srv_latency_add("command", 100, 20);
    srv_latency_add("command", 100, 50); /* same second: its highest */
    srv_latency_add("command", 100, 30);
    srv_latency_add("command", 101, 10);
    srv_latency_add("fast-command", 101, 7);
    ck_assert_int_eq(srv_latency_event_at(0, &e), 1);
    ck_assert_str_eq(e.name, "command");
    ck_assert_int_eq(e.nsamples, 2);
    ck_assert_int_eq(e.samples[0].time_s, 100);
    ck_assert_uint_eq(e.samples[0].latency_ms, 50);
    ck_assert_uint_eq(e.latest_ms, 10);
    ck_assert_int_eq(e.latest_s, 101);
    ck_assert_uint_eq(e.max_ms, 50);
    ck_assert_int_eq(srv_latency_event_at(1, &e), 1);
    ck_assert_str_eq(e.name, "fast-command");
    ck_assert_int_eq(srv_latency_event_at(2, &e), 0);
    /* The ring keeps the newest SRV_LATENCY_SAMPLES seconds. */
    for (int t = 0; t < SRV_LATENCY_SAMPLES + 20; t++)
        srv_latency_add("expire-cycle", 1000 + t, (uint32_t)t);
    ck_assert_int_eq(srv_latency_event_at(2, &e), 1);
    ck_assert_int_eq(e.nsamples, SRV_LATENCY_SAMPLES);
    ck_assert_int_eq(e.samples[0].time_s, 1020);
    ck_assert_int_eq(srv_latency_reset(names, lens, 1), 1);
    ck_assert_int_eq(srv_latency_event_at(0, &e), 1);
    ck_assert_str_eq(e.name, "fast-command");
    ck_assert_int_eq(srv_latency_reset(NULL, NULL, 0), 2);
    ck_assert_int_eq(srv_latency_event_at(0, &e), 0);
    srv_latency_destroy(&l);
    ck_assert_ptr_null(l);
}
END_TEST

static Suite *monitor_suite(void)
{
    Suite *s = suite_create("monitor");
    TCase *tc = tcase_create("cmdstats");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_buckets);
    tcase_add_test(tc, test_percentiles_and_sums);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_writer_in_another_process);
    suite_add_tcase(s, tc);
    tc = tcase_create("slowlog");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_slowlog_order_and_len);
    tcase_add_test(tc, test_slowlog_cuts);
    tcase_add_test(tc, test_slowlog_writer_killed);
    suite_add_tcase(s, tc);
    tc = tcase_create("latency");
    tcase_add_test(tc, test_latency_events);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(monitor_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
