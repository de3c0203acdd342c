/*
 * check_bench_lua.c - larder-bench's scripting workloads (bench_work.h):
 * the scripts' SHA1 constants, the EVALSHA each operation sends, the EVAL
 * retry after NOSCRIPT, and how replies end an operation (transfer-lua:
 * 1 moved, 0 declined, anything else an error; lua-get: hit or miss).
 */
#include "bench/bench_opts.h"
#include "bench/bench_work.h"
#include "server/cmd/srv_sha1.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static bench_opts opts;
static bench_work work;
static bench_work_conn conn;
static bench_buf out;

static void setup_workload(const char *name)
{
    char *argv[] = { "larder-bench", "--workload", (char *)name,
                     "--keyspace",   "100",        NULL };
    char err[256];

    ck_assert_int_eq(bench_opts_parse(&opts, 5, argv, err, sizeof err),
                     BENCH_OPTS_OK);
    ck_assert_int_eq(bench_work_init(&work, &opts), 0);
    bench_work_conn_init(&work, &conn, 1);
    memset(&out, 0, sizeof out);
}

static void teardown_workload(void)
{
    bench_work_fini(&work);
    bench_buf_fini(&out);
}

/* The i-th argument of the command at the start of out. */
static void nth_arg(int i, char *buf, size_t size)
{
    bench_reply r;
    const char *p = out.data + out.off;
    long n;

    /* a command is an array of bulks: parse it as a reply */
    n = bench_resp_parse(p, bench_buf_pending(&out), &r);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(r.type, BENCH_REPLY_ARRAY);
    ck_assert_int_lt(i, r.integer);
    const char *e = r.elems;
    size_t left = r.elems_len;
    for (int j = 0; j <= i; j++) {
        bench_reply a;
        long m = bench_resp_parse(e, left, &a);
        ck_assert_int_gt(m, 0);
        if (j == i) {
            ck_assert_uint_lt(a.len, size);
            memcpy(buf, a.str, a.len);
            buf[a.len] = '\0';
        }
        e += m;
        left -= (size_t)m;
    }
}

static int argc_of_command(void)
{
    bench_reply r;

    ck_assert_int_gt(bench_resp_parse(out.data + out.off,
                                      bench_buf_pending(&out), &r),
                     0);
    return (int)r.integer;
}

static bench_reply integer(int64_t v)
{
    bench_reply r = { .type = BENCH_REPLY_INTEGER, .integer = v };
    return r;
}

static bench_reply error(const char *s)
{
    bench_reply r = { .type = BENCH_REPLY_ERROR, .str = s, .len = strlen(s) };
    return r;
}

START_TEST(sha_constants)
{
    char hex[SRV_SHA1_HEX_LEN + 1];

    srv_sha1_hex(BENCH_LUA_TRANSFER, strlen(BENCH_LUA_TRANSFER), hex);
    ck_assert_str_eq(hex, BENCH_LUA_TRANSFER_SHA);
    srv_sha1_hex(BENCH_LUA_GET, strlen(BENCH_LUA_GET), hex);
    ck_assert_str_eq(hex, BENCH_LUA_GET_SHA);
}
END_TEST

START_TEST(transfer_evalsha)
{
    char a[256];
    bench_step st;
    bench_reply r;

    setup_workload("transfer-lua");
    ck_assert_uint_eq(bench_work_start(&work, &conn, &out, 0), 1);
    ck_assert_int_eq(argc_of_command(), 6);
    nth_arg(0, a, sizeof a);
    ck_assert_str_eq(a, "EVALSHA");
    nth_arg(1, a, sizeof a);
    ck_assert_str_eq(a, BENCH_LUA_TRANSFER_SHA);
    nth_arg(2, a, sizeof a);
    ck_assert_str_eq(a, "2");
    nth_arg(3, a, sizeof a);
    ck_assert_int_eq(strncmp(a, "acct:", 5), 0);
    char b[256];
    nth_arg(4, b, sizeof b);
    ck_assert_str_ne(a, b); /* two different accounts */
    nth_arg(5, a, sizeof a);
    int amount = atoi(a);
    ck_assert_int_ge(amount, 1);
    ck_assert_int_le(amount, BENCH_TRANSFER_MAX_AMOUNT);

    out.len = out.off = 0;
    r = integer(1);
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(st.done);
    ck_assert_int_eq(st.outcome, BENCH_OUT_HIT);

    bench_work_start(&work, &conn, &out, 0);
    out.len = out.off = 0;
    r = integer(0);
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(st.done);
    ck_assert_int_eq(st.outcome, BENCH_OUT_DECLINED);

    bench_work_start(&work, &conn, &out, 0);
    out.len = out.off = 0;
    r = error("ERR disk full");
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(st.done);
    ck_assert_int_eq(st.outcome, BENCH_OUT_ERROR);
    teardown_workload();
}
END_TEST

START_TEST(transfer_noscript_retries_with_eval)
{
    char keys[2][256], a[1024];
    bench_step st;
    bench_reply r;

    setup_workload("transfer-lua");
    bench_work_start(&work, &conn, &out, 0);
    nth_arg(3, keys[0], sizeof keys[0]);
    nth_arg(4, keys[1], sizeof keys[1]);
    out.len = out.off = 0;
    r = error("NOSCRIPT No matching script. Please use EVAL.");
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(!st.done);
    ck_assert_uint_eq(st.next, 1);
    ck_assert_int_eq(argc_of_command(), 6);
    nth_arg(0, a, sizeof a);
    ck_assert_str_eq(a, "EVAL");
    nth_arg(1, a, sizeof a);
    ck_assert_str_eq(a, BENCH_LUA_TRANSFER);
    nth_arg(3, a, sizeof a);
    ck_assert_str_eq(a, keys[0]); /* the same transfer again */
    nth_arg(4, a, sizeof a);
    ck_assert_str_eq(a, keys[1]);
    out.len = out.off = 0;
    /* a second NOSCRIPT (the EVAL's own reply cannot be one) is an error */
    r = error("NOSCRIPT again");
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(st.done);
    ck_assert_int_eq(st.outcome, BENCH_OUT_ERROR);
    teardown_workload();
}
END_TEST

START_TEST(lua_get)
{
    char a[256];
    bench_step st;
    bench_reply r;

    setup_workload("lua-get");
    ck_assert_uint_eq(opts.pipeline, 1);
    bench_work_start(&work, &conn, &out, 0);
    ck_assert_int_eq(argc_of_command(), 4);
    nth_arg(0, a, sizeof a);
    ck_assert_str_eq(a, "EVALSHA");
    nth_arg(1, a, sizeof a);
    ck_assert_str_eq(a, BENCH_LUA_GET_SHA);
    nth_arg(2, a, sizeof a);
    ck_assert_str_eq(a, "1");
    nth_arg(3, a, sizeof a);
    ck_assert_int_eq(strncmp(a, "key:", 4), 0);
    out.len = out.off = 0;
    r = (bench_reply){ .type = BENCH_REPLY_BULK, .str = "v", .len = 1 };
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert(st.done);
    ck_assert_int_eq(st.outcome, BENCH_OUT_HIT);
    bench_work_start(&work, &conn, &out, 0);
    out.len = out.off = 0;
    r = (bench_reply){ .type = BENCH_REPLY_NIL };
    bench_work_reply(&work, &conn, &r, true, &out, &st);
    ck_assert_int_eq(st.outcome, BENCH_OUT_MISS);
    ck_assert(bench_work_has_preload(&work)); /* its SCRIPT LOAD */
    teardown_workload();
}
END_TEST

START_TEST(transfer_lua_is_a_transfer)
{
    setup_workload("transfer-lua");
    ck_assert(bench_workload_is_transfer(opts.workload));
    ck_assert(bench_work_has_preload(&work));
    ck_assert_uint_eq(opts.pipeline, 1);
    teardown_workload();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bench_lua");
    TCase *tc = tcase_create("lua");

    tcase_add_test(tc, sha_constants);
    tcase_add_test(tc, transfer_evalsha);
    tcase_add_test(tc, transfer_noscript_retries_with_eval);
    tcase_add_test(tc, lua_get);
    tcase_add_test(tc, transfer_lua_is_a_transfer);
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
