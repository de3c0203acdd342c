/*
 * check_bench_work: unit tests of larder-bench's blocking workloads
 * (bench/bench_work.h): the options of wake and jobs, what their pushers
 * and waiters send (LPUSH with a send-time stamp, BLPOP on a waiter's own
 * key, BRPOP on the job queue), reading the stamp back out of a BLPOP /
 * BRPOP reply and a published message, and the worker= field of a CLIENT
 * INFO reply that --cross-worker places pushes by.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_opts.h"
#include "bench/bench_resp.h"
#include "bench/bench_work.h"

#define TIMEOUT_S 30
#define ERR_MAX 256
#define MAX_ARGS 16
#define WORD_MAX 256

static bench_opts opts;
static bench_work work;

/* Parse "larder-bench ARGS..." and set up the workload. */
static void setup(const char *const *args, int n)
{
    char *argv[MAX_ARGS];
    char err[ERR_MAX];

    ck_assert_int_lt(n + 1, MAX_ARGS);
    argv[0] = "larder-bench";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    ck_assert_int_eq(bench_opts_parse(&opts, n + 1, argv, err, sizeof err),
                     BENCH_OPTS_OK);
    ck_assert_int_eq(bench_work_init(&work, &opts), 0);
}

static void teardown(void) { bench_work_fini(&work); }

/* The words of the one command in b. */
static int words(const bench_buf *b, char out[][WORD_MAX], int max)
{
    bench_reply r;
    long used = bench_resp_parse(b->data, b->len, &r);
    const char *p;
    int n = 0;

    ck_assert_int_eq(used, (long)b->len);
    ck_assert_int_eq(r.type, BENCH_REPLY_ARRAY);
    p = r.elems;
    for (int i = 0; i < r.integer && n < max; i++) {
        bench_reply e;
        long u = bench_resp_parse(p, r.elems_len - (size_t)(p - r.elems), &e);
        ck_assert_int_gt(u, 0);
        ck_assert_int_eq(e.type, BENCH_REPLY_BULK);
        ck_assert_uint_lt(e.len, WORD_MAX);
        memcpy(out[n], e.str, e.len);
        out[n][e.len] = '\0';
        n++;
        p += u;
    }
    return n;
}

START_TEST(test_options)
{
    char *bad[] = { "larder-bench", "--workload", "wake", "--waiters", "0" };
    char *jobs0[] = { "larder-bench", "--workload", "jobs", "--waiters", "0" };
    char err[ERR_MAX];
    static const char *const ok[] = { "--workload", "wake", "--waiters", "5",
                                      "--cross-worker" };

    ck_assert_int_eq(bench_opts_parse(&opts, 5, bad, err, sizeof err),
                     BENCH_OPTS_ERROR);
    ck_assert(strstr(err, "wake needs --waiters") != NULL);
    ck_assert_int_eq(bench_opts_parse(&opts, 5, jobs0, err, sizeof err),
                     BENCH_OPTS_ERROR);
    setup(ok, 5);
    ck_assert_int_eq(opts.workload, BENCH_WL_WAKE);
    ck_assert_uint_eq(opts.subscribers, 5);
    ck_assert(opts.cross_worker);
    ck_assert(bench_work_listens_again(&work));
    ck_assert(bench_work_has_preload(&work)); /* the clean start */
    teardown();
}
END_TEST

START_TEST(test_wake_commands)
{
    static const char *const args[] = { "--workload",   "wake",
                                        "--waiters",    "4",
                                        "--value-size", "32" };
    bench_work_conn wc;
    bench_buf b = { 0 };
    char w[MAX_ARGS][WORD_MAX];
    uint64_t stamp = 0;
    int n;

    setup(args, 6);
    bench_work_listen(&work, 3, &b);
    n = words(&b, w, MAX_ARGS);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(w[0], "BLPOP");
    ck_assert_str_eq(w[2], "0");
    b.len = 0;
    bench_work_conn_init(&work, &wc, 1);
    wc.target = 3;
    ck_assert_uint_eq(bench_work_start(&work, &wc, &b, 12345678901234ULL), 1);
    n = words(&b, w, MAX_ARGS);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(w[0], "LPUSH");
    /* The push goes to the waiter's own key. */
    b.len = 0;
    bench_work_listen(&work, 3, &b);
    {
        char l[MAX_ARGS][WORD_MAX];
        words(&b, l, MAX_ARGS);
        ck_assert_str_eq(l[1], w[1]);
    }
    ck_assert_uint_eq(strlen(w[2]), 32);
    ck_assert(strncmp(w[2], "00000012345678901234", BENCH_STAMP_DIGITS) == 0);
    /* The BLPOP reply that element makes, and its stamp. */
    {
        char reply[256];
        bench_reply r;
        int len = snprintf(reply, sizeof reply,
                           "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(w[1]),
                           w[1], strlen(w[2]), w[2]);
        ck_assert_int_eq(bench_resp_parse(reply, (size_t)len, &r), len);
        ck_assert_int_eq(bench_work_delivery_stamp(&work, &r, &stamp), 1);
        ck_assert_uint_eq(stamp, 12345678901234ULL);
    }
    free(b.data);
    teardown();
}
END_TEST

START_TEST(test_jobs_commands)
{
    static const char *const args[] = { "--workload", "jobs", "--waiters",
                                        "8" };
    bench_work_conn wc;
    bench_buf b = { 0 };
    char w[MAX_ARGS][WORD_MAX];

    setup(args, 4);
    bench_work_listen(&work, 7, &b);
    ck_assert_int_eq(words(&b, w, MAX_ARGS), 3);
    ck_assert_str_eq(w[0], "BRPOP");
    ck_assert_str_eq(w[1], "jobs");
    b.len = 0;
    bench_work_conn_init(&work, &wc, 2);
    bench_work_start(&work, &wc, &b, 42);
    ck_assert_int_eq(words(&b, w, MAX_ARGS), 3);
    ck_assert_str_eq(w[0], "LPUSH");
    ck_assert_str_eq(w[1], "jobs");
    free(b.data);
    teardown();
}
END_TEST

static int stamp_of_reply(const char *text, uint64_t *stamp)
{
    bench_reply r;
    long used = bench_resp_parse(text, strlen(text), &r);

    ck_assert_int_eq(used, (long)strlen(text));
    return bench_work_delivery_stamp(&work, &r, stamp);
}

START_TEST(test_delivery_stamps)
{
    static const char *const jobs[] = { "--workload", "jobs", "--waiters",
                                        "1" };
    static const char *const pub[] = { "--workload", "publish" };
    uint64_t s = 0;

    setup(jobs, 4);
    ck_assert_int_eq(stamp_of_reply("*2\r\n$4\r\njobs\r\n$20\r\n"
                                    "00000000000000000007\r\n",
                                    &s),
                     1);
    ck_assert_uint_eq(s, 7);
    /* Not a delivery: nil, a short or non-numeric element, other shapes. */
    ck_assert_int_eq(stamp_of_reply("*-1\r\n", &s), 0);
    ck_assert_int_eq(stamp_of_reply("*2\r\n$4\r\njobs\r\n$3\r\n123\r\n", &s),
                     0);
    ck_assert_int_eq(stamp_of_reply("*2\r\n$4\r\njobs\r\n$20\r\n"
                                    "0000000000000000000x\r\n",
                                    &s),
                     0);
    ck_assert_int_eq(stamp_of_reply("*1\r\n$4\r\njobs\r\n", &s), 0);
    ck_assert_int_eq(stamp_of_reply(":1\r\n", &s), 0);
    teardown();
    setup(pub, 2);
    ck_assert(!bench_work_listens_again(&work));
    ck_assert_int_eq(stamp_of_reply("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$20\r\n"
                                    "00000000000000000099\r\n",
                                    &s),
                     1);
    ck_assert_uint_eq(s, 99);
    teardown();
}
END_TEST

static int worker_of(const char *text)
{
    char buf[512];
    bench_reply r;
    int len = snprintf(buf, sizeof buf, "$%zu\r\n%s\r\n", strlen(text), text);

    ck_assert_int_eq(bench_resp_parse(buf, (size_t)len, &r), len);
    return bench_work_client_worker(&r);
}

START_TEST(test_client_worker)
{
    bench_reply r;

    ck_assert_int_eq(worker_of("id=3 addr=1:2 resp=2 worker=12\n"), 12);
    ck_assert_int_eq(worker_of("id=3 worker=0 x=1"), 0);
    ck_assert_int_eq(worker_of("id=3 addr=1:2 resp=2\n"), -1); /* redis */
    ck_assert_int_eq(worker_of("id=3 coworker=4\n"), -1);
    ck_assert_int_eq(worker_of("id=3 worker=\n"), -1);
    ck_assert_int_eq(worker_of("id=3 worker=99999999999\n"), -1);
    ck_assert_int_eq(bench_resp_parse("+OK\r\n", 5, &r), 5);
    ck_assert_int_eq(bench_work_client_worker(&r), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bench_work");
    TCase *tc = tcase_create("blocking");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_options);
    tcase_add_test(tc, test_wake_commands);
    tcase_add_test(tc, test_jobs_commands);
    tcase_add_test(tc, test_delivery_stamps);
    tcase_add_test(tc, test_client_worker);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
