/*
 * check_reply: unit tests of the reply builder (server/srv_reply.h) on a
 * bare connection (no worker): every reply kind in RESP2 and in RESP3 -
 * simple strings, errors, integers, bulk strings, the null forms,
 * arrays, maps, sets, doubles and verbatim text - byte for byte as Redis
 * 7.0 writes them; doubles as Redis prints them (%.17g, inf, -inf);
 * integers at the ends of long long; error texts with CR or LF made
 * safe; deferred headers (alone, nested, after a big body); and a reply
 * that cannot be allocated leaving nothing half-written; the
 * connection's reply limit (out_limit) and the up-front room check.
 */
#include "server/srv_buf.h"
#include "server/srv_conn.h"
#include "server/srv_reply.h"

#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 30
#define SHOW_MAX 512
#define BIG_BODY (1024 * 1024) /* bytes: the buffer grows many times */
#define MANY_ITEMS 20000       /* elements behind one deferred head */
#define LONG_ARG 5000          /* longer than the formatter's stack buffer */
#define REPLY_LIMIT 4000       /* out_limit of the limit tests (5 | it) */

static srv_conn conn;
static srv_conn *c = &conn;

static void setup(void)
{
    memset(&conn, 0, sizeof conn);
    conn.resp = 2;
}

static void teardown(void) { srv_buf_free(&conn.out); }

/* p[0..n) with CR, LF and other unprintable bytes escaped. */
static const char *show(const char *p, size_t n, char *buf)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 5 < SHOW_MAX; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\r')
            o += (size_t)snprintf(buf + o, SHOW_MAX - o, "\\r");
        else if (ch == '\n')
            o += (size_t)snprintf(buf + o, SHOW_MAX - o, "\\n");
        else if (ch < ' ' || ch > '~')
            o += (size_t)snprintf(buf + o, SHOW_MAX - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    buf[o] = '\0';
    return buf;
}

/* The output is exactly want[0..n); then it is emptied. */
static void expect_out(const char *want, size_t n, int line)
{
    static char got_s[SHOW_MAX], want_s[SHOW_MAX];

    ck_assert_msg(c->out.len == n &&
                      (n == 0 || memcmp(c->out.data, want, n) == 0),
                  "line %d (RESP%d)\n  got:  %s\n  want: %s", line, c->resp,
                  show(c->out.data, c->out.len, got_s), show(want, n, want_s));
    c->out.len = 0;
}

/* EXPECT("...") with a string literal: NUL bytes inside count. */
#define EXPECT(lit) expect_out((lit), sizeof(lit) - 1, __LINE__)

/* ------------------------------------------------------------------ */
/* kinds whose bytes do not depend on the protocol */

START_TEST(test_simple_and_raw)
{
    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        srv_reply_ok(c);
        EXPECT("+OK\r\n");
        srv_reply_simple(c, "PONG");
        EXPECT("+PONG\r\n");
        srv_reply_simple(c, "");
        EXPECT("+\r\n");
        srv_reply_raw(c, "*1\r\n:1\r\n", 8);
        EXPECT("*1\r\n:1\r\n");
        srv_reply_raw(c, "", 0);
        EXPECT("");
    }
}
END_TEST

START_TEST(test_integers)
{
    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        srv_reply_int(c, 0);
        EXPECT(":0\r\n");
        srv_reply_int(c, -1);
        EXPECT(":-1\r\n");
        srv_reply_int(c, 42);
        EXPECT(":42\r\n");
        srv_reply_int(c, LLONG_MAX);
        EXPECT(":9223372036854775807\r\n");
        srv_reply_int(c, LLONG_MIN);
        EXPECT(":-9223372036854775808\r\n");
    }
}
END_TEST

START_TEST(test_bulk_strings)
{
    static const char binary[] = "a\r\n\0b";

    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        srv_reply_bulk(c, "hello", 5);
        EXPECT("$5\r\nhello\r\n");
        srv_reply_bulk(c, "", 0);
        EXPECT("$0\r\n\r\n");
        srv_reply_bulk(c, binary, sizeof binary - 1);
        EXPECT("$5\r\na\r\n\0b\r\n");
        srv_reply_bulk_cstr(c, "v");
        EXPECT("$1\r\nv\r\n");
        srv_reply_bulk_ll(c, 0);
        EXPECT("$1\r\n0\r\n");
        srv_reply_bulk_ll(c, -12);
        EXPECT("$3\r\n-12\r\n");
        srv_reply_bulk_ll(c, LLONG_MIN);
        EXPECT("$20\r\n-9223372036854775808\r\n");
        srv_reply_bulk_ll(c, LLONG_MAX);
        EXPECT("$19\r\n9223372036854775807\r\n");
    }
}
END_TEST

START_TEST(test_big_bulk)
{
    static const char head[] = "$1048576\r\n";
    char *v = malloc(BIG_BODY);
    size_t hl = sizeof head - 1;

    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < BIG_BODY; i++)
        v[i] = (char)('a' + i % 26);
    srv_reply_bulk(c, v, BIG_BODY);
    ck_assert_uint_eq(c->out.len, hl + BIG_BODY + 2);
    ck_assert_int_eq(memcmp(c->out.data, head, hl), 0);
    ck_assert_int_eq(memcmp(c->out.data + hl, v, BIG_BODY), 0);
    ck_assert_int_eq(memcmp(c->out.data + hl + BIG_BODY, "\r\n", 2), 0);
    ck_assert_uint_eq(c->flags & SRV_CONN_CLOSE_ASAP, 0);
    free(v);
}
END_TEST

START_TEST(test_arrays)
{
    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        srv_reply_array(c, 0);
        EXPECT("*0\r\n");
        srv_reply_array(c, 2);
        srv_reply_bulk(c, "a", 1);
        srv_reply_int(c, 1);
        EXPECT("*2\r\n$1\r\na\r\n:1\r\n");
        srv_reply_array(c, 1LL << 40);
        EXPECT("*1099511627776\r\n");
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* kinds whose shape depends on the protocol */

START_TEST(test_null_forms)
{
    srv_reply_null(c);
    EXPECT("$-1\r\n");
    srv_reply_null_array(c);
    EXPECT("*-1\r\n");
    c->resp = 3;
    srv_reply_null(c);
    EXPECT("_\r\n");
    srv_reply_null_array(c);
    EXPECT("_\r\n");
}
END_TEST

START_TEST(test_maps_and_sets)
{
    /* HGETALL h of one field: an array of 2n in RESP2, %n in RESP3. */
    srv_reply_map(c, 1);
    srv_reply_bulk_cstr(c, "f");
    srv_reply_bulk_cstr(c, "v");
    EXPECT("*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    srv_reply_map(c, 0);
    EXPECT("*0\r\n");
    srv_reply_map(c, 3);
    EXPECT("*6\r\n");
    srv_reply_set(c, 2);
    EXPECT("*2\r\n");
    srv_reply_set(c, 0);
    EXPECT("*0\r\n");

    c->resp = 3;
    srv_reply_map(c, 1);
    srv_reply_bulk_cstr(c, "f");
    srv_reply_bulk_cstr(c, "v");
    EXPECT("%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
    srv_reply_map(c, 0);
    EXPECT("%0\r\n");
    srv_reply_map(c, 3);
    EXPECT("%3\r\n");
    srv_reply_set(c, 2);
    EXPECT("~2\r\n");
    srv_reply_set(c, 0);
    EXPECT("~0\r\n");
}
END_TEST

START_TEST(test_verbatim)
{
    /* INFO keyspace: a bulk string in RESP2, =len\r\ntxt:... in RESP3. */
    static const char info[] = "# Keyspace\r\ndb0:keys=1\r\n";
    size_t n = sizeof info - 1;

    srv_reply_verbatim(c, info, n);
    EXPECT("$24\r\n# Keyspace\r\ndb0:keys=1\r\n\r\n");
    srv_reply_verbatim(c, "", 0);
    EXPECT("$0\r\n\r\n");
    c->resp = 3;
    srv_reply_verbatim(c, info, n);
    EXPECT("=28\r\ntxt:# Keyspace\r\ndb0:keys=1\r\n\r\n");
    srv_reply_verbatim(c, "", 0);
    EXPECT("=4\r\ntxt:\r\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* doubles, as Redis 7.0 prints them (ZSCORE, ZINCRBY ...) */

START_TEST(test_doubles_resp2)
{
    /* A bulk string of %.17g; infinities by name. */
    srv_reply_double(c, 1.5);
    EXPECT("$3\r\n1.5\r\n");
    srv_reply_double(c, -2.5);
    EXPECT("$4\r\n-2.5\r\n");
    srv_reply_double(c, 1.1);
    EXPECT("$18\r\n1.1000000000000001\r\n");
    srv_reply_double(c, 0.1);
    EXPECT("$19\r\n0.10000000000000001\r\n");
    srv_reply_double(c, 3.0);
    EXPECT("$1\r\n3\r\n");
    srv_reply_double(c, 0.0);
    EXPECT("$1\r\n0\r\n");
    srv_reply_double(c, -0.0);
    EXPECT("$2\r\n-0\r\n");
    srv_reply_double(c, 1e17);
    EXPECT("$5\r\n1e+17\r\n");
    srv_reply_double(c, 123456789012345678.0);
    EXPECT("$22\r\n1.2345678901234568e+17\r\n");
    srv_reply_double(c, 1e-300);
    EXPECT("$6\r\n1e-300\r\n");
    srv_reply_double(c, 5e-324); /* the smallest subnormal */
    EXPECT("$23\r\n4.9406564584124654e-324\r\n");
    srv_reply_double(c, DBL_MAX);
    EXPECT("$23\r\n1.7976931348623157e+308\r\n");
    srv_reply_double(c, INFINITY);
    EXPECT("$3\r\ninf\r\n");
    srv_reply_double(c, -INFINITY);
    EXPECT("$4\r\n-inf\r\n");
    srv_reply_double(c, NAN);
    EXPECT("$3\r\nnan\r\n");
}
END_TEST

START_TEST(test_doubles_resp3)
{
    c->resp = 3;
    srv_reply_double(c, 1.5);
    EXPECT(",1.5\r\n");
    srv_reply_double(c, -2.5);
    EXPECT(",-2.5\r\n");
    srv_reply_double(c, 1.1);
    EXPECT(",1.1000000000000001\r\n");
    srv_reply_double(c, 3.0);
    EXPECT(",3\r\n");
    srv_reply_double(c, 0.0);
    EXPECT(",0\r\n");
    srv_reply_double(c, 1e17);
    EXPECT(",1e+17\r\n");
    srv_reply_double(c, DBL_MAX);
    EXPECT(",1.7976931348623157e+308\r\n");
    srv_reply_double(c, INFINITY);
    EXPECT(",inf\r\n");
    srv_reply_double(c, -INFINITY);
    EXPECT(",-inf\r\n");
    srv_reply_double(c, NAN);
    EXPECT(",nan\r\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors */

START_TEST(test_errors)
{
    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        srv_reply_error(c, "ERR something");
        EXPECT("-ERR something\r\n");
        srv_reply_errorf(c,
                         "ERR unknown command '%s', with args beginning "
                         "with: %s",
                         "foo", "'a' ");
        EXPECT("-ERR unknown command 'foo', with args beginning with: "
               "'a' \r\n");
        srv_reply_errorf(c, "ERR %d of %lld", 3, LLONG_MIN);
        EXPECT("-ERR 3 of -9223372036854775808\r\n");
    }
}
END_TEST

START_TEST(test_error_sanitised)
{
    /* CR and LF would end the line early: each becomes one space. */
    srv_reply_error(c, "ERR bad\r\nline");
    EXPECT("-ERR bad  line\r\n");
    srv_reply_error(c, "ERR a\nb\rc\n");
    EXPECT("-ERR a b c \r\n");
    srv_reply_errorf(c, "ERR arg '%s'", "x\r\ny");
    EXPECT("-ERR arg 'x  y'\r\n");
}
END_TEST

START_TEST(test_error_long)
{
    /* A formatted error longer than the stack buffer is kept whole (as
     * Redis formats its errors: NOGROUP names a long group in full), and
     * is still one line. */
    char *arg = malloc(LONG_ARG + 1);
    const char *p = NULL;

    ck_assert_ptr_nonnull(arg);
    memset(arg, 'x', LONG_ARG);
    arg[LONG_ARG] = '\0';
    srv_reply_errorf(c, "ERR unknown '%s'", arg);
    ck_assert_uint_eq(c->out.len, 1 + strlen("ERR unknown ''") + LONG_ARG + 2);
    ck_assert_int_eq(memcmp(c->out.data, "-ERR unknown 'xxx", 17), 0);
    ck_assert_int_eq(memcmp(c->out.data + c->out.len - 2, "\r\n", 2), 0);
    p = memchr(c->out.data, '\r', c->out.len);
    ck_assert_ptr_eq(p, c->out.data + c->out.len - 2);
    ck_assert_ptr_null(memchr(c->out.data, '\n', c->out.len - 1));
    free(arg);
}
END_TEST

START_TEST(test_canned_errors)
{
    /* Redis 7.0's exact texts. */
    ck_assert_str_eq(SRV_ERR_SYNTAX, "ERR syntax error");
    ck_assert_str_eq(SRV_ERR_NOT_INT,
                     "ERR value is not an integer or out of range");
    ck_assert_str_eq(SRV_ERR_NOT_FLOAT, "ERR value is not a valid float");
    ck_assert_str_eq(SRV_ERR_WRONGTYPE, "WRONGTYPE Operation against a key "
                                        "holding the wrong kind of value");
    ck_assert_str_eq(SRV_ERR_NO_KEY, "ERR no such key");
    ck_assert_str_eq(SRV_ERR_OVERFLOW,
                     "ERR increment or decrement would overflow");
    srv_reply_error(c, SRV_ERR_WRONGTYPE);
    EXPECT("-WRONGTYPE Operation against a key holding the wrong kind of "
           "value\r\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* deferred headers (KEYS, SCAN) */

START_TEST(test_defer_array)
{
    size_t mark;

    srv_reply_simple(c, "before"); /* earlier output stays */
    mark = srv_reply_defer(c);
    srv_reply_bulk(c, "a", 1);
    srv_reply_bulk(c, "bc", 2);
    srv_reply_int(c, 7);
    srv_reply_defer_array(c, mark, 3);
    EXPECT("+before\r\n*3\r\n$1\r\na\r\n$2\r\nbc\r\n:7\r\n");

    mark = srv_reply_defer(c);
    srv_reply_defer_array(c, mark, 0);
    EXPECT("*0\r\n");
    mark = srv_reply_defer(c);
    srv_reply_defer_array(c, mark, LLONG_MAX);
    EXPECT("*9223372036854775807\r\n");
}
END_TEST

START_TEST(test_defer_nested)
{
    size_t outer, inner;

    outer = srv_reply_defer(c);
    srv_reply_bulk(c, "a", 1);
    inner = srv_reply_defer(c);
    srv_reply_bulk(c, "b", 1);
    srv_reply_bulk(c, "c", 1);
    srv_reply_defer_array(c, inner, 2);
    srv_reply_defer_array(c, outer, 2);
    EXPECT("*2\r\n$1\r\na\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n");

    /* A RESP3 map head given as text. */
    c->resp = 3;
    outer = srv_reply_defer(c);
    srv_reply_bulk(c, "f", 1);
    srv_reply_double(c, 2.5);
    srv_reply_defer_fill(c, outer, "%1\r\n", 4);
    EXPECT("%1\r\n$1\r\nf\r\n,2.5\r\n");
}
END_TEST

START_TEST(test_defer_big_body)
{
    /* The buffer moves while the body grows: the mark is an offset. */
    char want[32];
    size_t mark, at, wl;

    srv_reply_int(c, 1);
    mark = srv_reply_defer(c);
    for (int i = 0; i < MANY_ITEMS; i++)
        srv_reply_bulk_ll(c, i);
    srv_reply_defer_array(c, mark, MANY_ITEMS);
    ck_assert_int_eq(memcmp(c->out.data, ":1\r\n*20000\r\n$1\r\n0\r\n", 19), 0);
    wl = (size_t)snprintf(want, sizeof want, "$5\r\n%d\r\n", MANY_ITEMS - 1);
    ck_assert_uint_ge(c->out.len, wl);
    at = c->out.len - wl;
    ck_assert_int_eq(memcmp(c->out.data + at, want, wl), 0);
    /* ":1\r\n" + "*20000\r\n" + the bulks of 0 .. 19999 */
    {
        size_t body = 0;
        for (int i = 0; i < MANY_ITEMS; i++) {
            int digits = snprintf(want, sizeof want, "%d", i);
            body += (size_t)snprintf(want, sizeof want, "$%d\r\n", digits) +
                    (size_t)digits + 2;
        }
        ck_assert_uint_eq(c->out.len, 4 + 8 + body);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* out of memory: never half a reply */

START_TEST(test_out_of_memory)
{
    size_t before;

    srv_reply_ok(c);
    before = c->out.len;
    /* A bulk no buffer can hold: refused before anything is appended. */
    srv_reply_bulk(c, "", SIZE_MAX / 2);
    ck_assert_uint_eq(c->out.len, before);
    ck_assert_uint_ne(c->flags & SRV_CONN_CLOSE_ASAP, 0);
    /* The connection is to be dropped: later replies append nothing. */
    srv_reply_int(c, 1);
    srv_reply_bulk(c, "v", 1);
    srv_reply_error(c, "ERR x");
    srv_reply_double(c, 1.5);
    srv_reply_null(c);
    srv_reply_verbatim(c, "t", 1);
    ck_assert_uint_eq(c->out.len, before);
    EXPECT("+OK\r\n");
}
END_TEST

START_TEST(test_close_asap_appends_nothing)
{
    size_t mark;

    for (int resp = 2; resp <= 3; resp++) {
        c->resp = resp;
        c->flags = SRV_CONN_CLOSE_ASAP;
        srv_reply_ok(c);
        srv_reply_simple(c, "x");
        srv_reply_error(c, "ERR x");
        srv_reply_errorf(c, "ERR %d", 1);
        srv_reply_int(c, 1);
        srv_reply_bulk(c, "x", 1);
        srv_reply_bulk_cstr(c, "x");
        srv_reply_bulk_ll(c, 1);
        srv_reply_null(c);
        srv_reply_null_array(c);
        srv_reply_array(c, 1);
        srv_reply_map(c, 1);
        srv_reply_set(c, 1);
        srv_reply_double(c, 1.0);
        srv_reply_verbatim(c, "x", 1);
        mark = srv_reply_defer(c);
        srv_reply_defer_array(c, mark, 1);
        EXPECT("");
    }
}
END_TEST

START_TEST(test_reply_limit)
{
    /* A reply that would take the buffer past out_limit appends nothing
     * and marks the connection to be dropped, as over the limit. */
    char big[REPLY_LIMIT];

    memset(big, 'v', sizeof big);
    c->out_limit = REPLY_LIMIT;
    srv_reply_bulk(c, "ab", 2);
    ck_assert_uint_eq(c->flags, 0);
    srv_reply_bulk(c, big, sizeof big);
    ck_assert_uint_eq(c->flags, SRV_CONN_CLOSE_ASAP | SRV_CONN_OVER_LIMIT);
    EXPECT("$2\r\nab\r\n");
    srv_reply_ok(c);
    EXPECT("");

    /* Up to the limit exactly is fine; one byte more is not. */
    c->flags = 0;
    for (size_t i = 0; i < REPLY_LIMIT / 5; i++)
        srv_reply_ok(c);
    ck_assert_uint_eq(c->flags, 0);
    srv_reply_raw(c, "x", 1);
    ck_assert_uint_eq(c->flags, SRV_CONN_CLOSE_ASAP | SRV_CONN_OVER_LIMIT);
    ck_assert_uint_eq(c->out.len, REPLY_LIMIT);
    c->out.len = 0;
}
END_TEST

START_TEST(test_reply_room)
{
    /* A reply whose least size is known up front is refused before any
     * of it is built; with no limit, nothing is refused. */
    ck_assert_int_eq(srv_reply_room_or_drop(c, ULLONG_MAX, 1), 0);
    ck_assert_uint_eq(c->flags, 0);
    c->out_limit = REPLY_LIMIT;
    ck_assert_int_eq(srv_reply_room_or_drop(c, REPLY_LIMIT / SRV_REPLY_BULK_MIN,
                                            SRV_REPLY_BULK_MIN),
                     0);
    ck_assert_uint_eq(c->flags, 0);
    srv_reply_ok(c);
    ck_assert_int_eq(srv_reply_room_or_drop(c, REPLY_LIMIT / SRV_REPLY_BULK_MIN,
                                            SRV_REPLY_BULK_MIN),
                     -1);
    ck_assert_uint_eq(c->flags, SRV_CONN_CLOSE_ASAP | SRV_CONN_OVER_LIMIT);
    ck_assert(srv_reply_dropped(c));
    c->flags = 0;
    ck_assert_int_eq(srv_reply_room_or_drop(c, ULLONG_MAX / 2, 12), -1);
    c->out.len = 0;
}
END_TEST

static Suite *reply_suite(void)
{
    Suite *s = suite_create("srv_reply");
    TCase *tc;

    tc = tcase_create("kinds");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_simple_and_raw);
    tcase_add_test(tc, test_integers);
    tcase_add_test(tc, test_bulk_strings);
    tcase_add_test(tc, test_big_bulk);
    tcase_add_test(tc, test_arrays);
    tcase_add_test(tc, test_null_forms);
    tcase_add_test(tc, test_maps_and_sets);
    tcase_add_test(tc, test_verbatim);
    suite_add_tcase(s, tc);

    tc = tcase_create("doubles");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_doubles_resp2);
    tcase_add_test(tc, test_doubles_resp3);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_error_sanitised);
    tcase_add_test(tc, test_error_long);
    tcase_add_test(tc, test_canned_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("deferred");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_defer_array);
    tcase_add_test(tc, test_defer_nested);
    tcase_add_test(tc, test_defer_big_body);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_out_of_memory);
    tcase_add_test(tc, test_close_asap_appends_nothing);
    tcase_add_test(tc, test_reply_limit);
    tcase_add_test(tc, test_reply_room);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reply_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
