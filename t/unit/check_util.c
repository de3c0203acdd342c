/*
 * check_util: unit tests of the server's pure helpers (server/srv_util.h):
 * Redis's strict integer parsing, float parsing and INCRBYFLOAT formatting,
 * KEYS/SCAN glob matching, clocks and slice comparison.
 */
#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srv_util.h"

#define TIMEOUT_S 10
#define LONG_SUBJECT 100000
#define MS_PER_S 1000
#define US_PER_MS 1000
#define CLOCK_SLACK_MS 5000
#define LONG_NUMBER_DIGITS 300

/* ------------------------------------------------------------------ */
/* integers */

static int s2ll(const char *s, long long *v)
{
    return srv_util_str2ll(s, strlen(s), v);
}

START_TEST(test_str2ll_valid)
{
    long long v;

    ck_assert(s2ll("0", &v));
    ck_assert_int_eq(v, 0);
    ck_assert(s2ll("1", &v));
    ck_assert_int_eq(v, 1);
    ck_assert(s2ll("-1", &v));
    ck_assert_int_eq(v, -1);
    ck_assert(s2ll("1234567890", &v));
    ck_assert_int_eq(v, 1234567890);
    ck_assert(s2ll("9223372036854775807", &v));
    ck_assert(v == LLONG_MAX);
    ck_assert(s2ll("-9223372036854775808", &v));
    ck_assert(v == LLONG_MIN);
    ck_assert(s2ll("-9223372036854775807", &v));
    ck_assert(v == -LLONG_MAX);
}
END_TEST

START_TEST(test_str2ll_strict)
{
    long long v = 42;

    ck_assert(!s2ll("", &v));
    ck_assert(!s2ll("+1", &v));
    ck_assert(!s2ll(" 1", &v));
    ck_assert(!s2ll("1 ", &v));
    ck_assert(!s2ll("01", &v));
    ck_assert(!s2ll("00", &v));
    ck_assert(!s2ll("-0", &v));
    ck_assert(!s2ll("-01", &v));
    ck_assert(!s2ll("-", &v));
    ck_assert(!s2ll("--1", &v));
    ck_assert(!s2ll("1a", &v));
    ck_assert(!s2ll("0x10", &v));
    ck_assert(!s2ll("1.0", &v));
    ck_assert(!s2ll("1e3", &v));
    ck_assert(!s2ll("\t1", &v));
    /* One past each end. */
    ck_assert(!s2ll("9223372036854775808", &v));
    ck_assert(!s2ll("-9223372036854775809", &v));
    ck_assert(!s2ll("18446744073709551615", &v));
    ck_assert(!s2ll("18446744073709551616", &v));
    ck_assert(!s2ll("99999999999999999999", &v));
    ck_assert(!s2ll("-99999999999999999999", &v));
    ck_assert(!s2ll("100000000000000000000000000000", &v));
    /* A failed parse leaves the output alone. */
    ck_assert_int_eq(v, 42);
}
END_TEST

START_TEST(test_str2ll_length_bounded)
{
    long long v;

    /* Exactly len bytes count: no NUL needed, nothing after read. */
    ck_assert(srv_util_str2ll("123abc", 3, &v));
    ck_assert_int_eq(v, 123);
    ck_assert(!srv_util_str2ll("12\0", 3, &v));
    ck_assert(!srv_util_str2ll("5", 0, &v));
    ck_assert(srv_util_str2ll("-77777", 3, &v));
    ck_assert_int_eq(v, -77);
}
END_TEST

static void ll_round_trip(long long v, const char *want)
{
    char buf[SRV_LLSTR_SIZE];
    long long back;
    int n = srv_util_ll2str(buf, v);

    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(n, (int)strlen(want));
    ck_assert(srv_util_str2ll(buf, (size_t)n, &back));
    ck_assert(back == v);
}

START_TEST(test_ll2str)
{
    ll_round_trip(0, "0");
    ll_round_trip(7, "7");
    ll_round_trip(-7, "-7");
    ll_round_trip(10, "10");
    ll_round_trip(-100, "-100");
    ll_round_trip(LLONG_MAX, "9223372036854775807");
    ll_round_trip(LLONG_MIN, "-9223372036854775808");
    ll_round_trip(LLONG_MIN + 1, "-9223372036854775807");
}
END_TEST

/* ------------------------------------------------------------------ */
/* floats */

static int s2ld(const char *s, long double *v)
{
    return srv_util_str2ld(s, strlen(s), v);
}

static int s2d(const char *s, double *v)
{
    return srv_util_str2d(s, strlen(s), v);
}

START_TEST(test_str2ld_valid)
{
    long double v;

    ck_assert(s2ld("1.5", &v));
    ck_assert(v == 1.5L);
    ck_assert(s2ld("-1.5", &v));
    ck_assert(v == -1.5L);
    ck_assert(s2ld("10", &v));
    ck_assert(v == 10.0L);
    ck_assert(s2ld("1e3", &v));
    ck_assert(v == 1000.0L);
    ck_assert(s2ld("5.0e3", &v));
    ck_assert(v == 5000.0L);
    ck_assert(s2ld(".5", &v));
    ck_assert(v == 0.5L);
    ck_assert(s2ld("-0", &v));
    ck_assert(v == 0.0L);
}
END_TEST

START_TEST(test_str2ld_invalid)
{
    long double v;

    ck_assert(!s2ld("", &v));
    ck_assert(!s2ld(" 1", &v));
    ck_assert(!s2ld("1 ", &v));
    ck_assert(!s2ld("\t1", &v));
    ck_assert(!s2ld("1.5x", &v));
    ck_assert(!s2ld("abc", &v));
    ck_assert(!s2ld("nan", &v));
    ck_assert(!s2ld("NaN", &v));
    ck_assert(!s2ld("-nan", &v));
    ck_assert(!srv_util_str2ld("1\0", 2, &v));
    /* Overflow to infinity is not a number. */
    ck_assert(!s2ld("1e999999", &v));
    ck_assert(!s2ld("-1e999999", &v));
}
END_TEST

START_TEST(test_str2ld_underflow)
{
    /*
     * Redis's string2ld rejects a value that underflows to zero (ERANGE
     * with a zero result): INCRBYFLOAT k 1e-99999 is "ERR value is not a
     * valid float" there, not an increment by 0.
     */
    long double v;

    ck_assert(!s2ld("1e-999999", &v));
}
END_TEST

START_TEST(test_str2d)
{
    double v;

    ck_assert(s2d("1.5", &v));
    ck_assert(v == 1.5);
    ck_assert(s2d("-3", &v));
    ck_assert(v == -3.0);
    ck_assert(s2d("1e10", &v));
    ck_assert(v == 1e10);
    /* The header promises inf (ZADD accepts +inf / -inf). */
    ck_assert(s2d("inf", &v));
    ck_assert(isinf(v) && v > 0);
    ck_assert(s2d("+inf", &v));
    ck_assert(isinf(v) && v > 0);
    ck_assert(s2d("-inf", &v));
    ck_assert(isinf(v) && v < 0);

    ck_assert(!s2d("", &v));
    ck_assert(!s2d(" 1", &v));
    ck_assert(!s2d("1 ", &v));
    ck_assert(!s2d("nan", &v));
    ck_assert(!s2d("-nan", &v));
    ck_assert(!s2d("1x", &v));
    ck_assert(!srv_util_str2d("1\0", 2, &v));
}
END_TEST

START_TEST(test_str2d_range)
{
    /*
     * Redis (getDoubleFromObject, string2d) rejects a literal that
     * overflows (ERANGE, HUGE_VAL) or underflows to zero: ZADD z 1e999 m
     * is "ERR value is not a valid float". Only the words inf / +inf /
     * -inf give an infinity.
     */
    double v;
    int over = s2d("1e999", &v), nover = s2d("-1e999", &v);
    int under = s2d("1e-400", &v);

    ck_assert_msg(!over && !nover && !under,
                  "accepted: 1e999 %d, -1e999 %d, 1e-400 %d (want 0 0 0)", over,
                  nover, under);
}
END_TEST

START_TEST(test_str2d_lax)
{
    /*
     * Score range bounds: Redis's zslParseRange calls strtod on the text
     * and only checks that it used it all and that it is not NaN, so
     * "", " 1", 1e400 (inf) and hex floats are bounds, and the text ends
     * at a NUL byte.
     */
    double v;

    ck_assert(srv_util_str2d_lax("", 0, &v) && v == 0);
    ck_assert(srv_util_str2d_lax(" 1", 2, &v) && v == 1);
    ck_assert(srv_util_str2d_lax("\t-2.5", 5, &v) && v == -2.5);
    ck_assert(srv_util_str2d_lax("1e400", 5, &v) && isinf(v) && v > 0);
    ck_assert(srv_util_str2d_lax("-1e400", 6, &v) && isinf(v) && v < 0);
    ck_assert(srv_util_str2d_lax("1e-400", 6, &v) && v == 0);
    ck_assert(srv_util_str2d_lax("0x10", 4, &v) && v == 16);
    ck_assert(srv_util_str2d_lax("-inf", 4, &v) && isinf(v) && v < 0);
    ck_assert(srv_util_str2d_lax("1\0abc", 5, &v) && v == 1);
    ck_assert(!srv_util_str2d_lax("nan", 3, &v));
    ck_assert(!srv_util_str2d_lax("1 ", 2, &v));
    ck_assert(!srv_util_str2d_lax("abc", 3, &v));
    ck_assert(!srv_util_str2d_lax("(1", 2, &v)); /* the caller strips '(' */
}
END_TEST

START_TEST(test_str2d_lax_long)
{
    /* Longer than the stack copy: the heap one gives the same answer. */
    size_t n = SRV_LDSTR_SIZE * 2;
    char *s = malloc(n);
    double v;

    ck_assert_ptr_nonnull(s);
    memset(s, '0', n);
    s[n - 1] = '7';
    ck_assert(srv_util_str2d_lax(s, n, &v) && v == 7);
    s[0] = 'x';
    ck_assert(!srv_util_str2d_lax(s, n, &v));
    free(s);
}
END_TEST

START_TEST(test_str2cursor)
{
    /* SCAN's cursor: strtoul's rules as Redis applies them. */
    uint64_t v;

    ck_assert(srv_util_str2cursor("", 0, &v) && v == 0);
    ck_assert(srv_util_str2cursor("0", 1, &v) && v == 0);
    ck_assert(srv_util_str2cursor("+5", 2, &v) && v == 5);
    ck_assert(srv_util_str2cursor("-1", 2, &v) && v == UINT64_MAX);
    ck_assert(srv_util_str2cursor("18446744073709551615", 20, &v) &&
              v == UINT64_MAX);
    ck_assert(srv_util_str2cursor("0000000000000000000000012", 25, &v) &&
              v == 12);
    ck_assert(srv_util_str2cursor("7\0x", 3, &v) && v == 7);
    ck_assert(!srv_util_str2cursor("18446744073709551616", 20, &v));
    ck_assert(!srv_util_str2cursor(" 1", 2, &v));
    ck_assert(!srv_util_str2cursor("1 ", 2, &v));
    ck_assert(!srv_util_str2cursor("0x1", 3, &v));
    ck_assert(!srv_util_str2cursor("abc", 3, &v));
}
END_TEST

START_TEST(test_long_ld_text)
{
    /*
     * A float written out in full may be long: INCRBYFLOAT stores 1e200 as
     * 201 digits, and the next INCRBYFLOAT must parse it back (Redis
     * accepts up to 5 KiB, MAX_LONG_DOUBLE_CHARS).
     */
    char text[SRV_LDSTR_SIZE];
    long double ld = 1e200L, back;
    int n = srv_util_ld2str(text, sizeof text, ld);

    ck_assert_int_gt(n, 200);
    ck_assert_msg(
        srv_util_str2ld(text, (size_t)n, &back),
        "srv_util_str2ld refused srv_util_ld2str's own %d-byte output", n);
    ck_assert(back == ld);
}
END_TEST

START_TEST(test_long_d_text)
{
    /* strtod has no length limit, nor has Redis's ZADD / ZINCRBY. */
    char digits[LONG_NUMBER_DIGITS + 1];
    double d;

    memset(digits, '0', LONG_NUMBER_DIGITS);
    digits[0] = '1';
    digits[LONG_NUMBER_DIGITS] = '\0';
    ck_assert_msg(s2d(digits, &d), "srv_util_str2d refused a %d-digit number",
                  LONG_NUMBER_DIGITS);
    ck_assert(d == 1e299);
}
END_TEST

static void ld_is(long double v, const char *want)
{
    char buf[SRV_LDSTR_SIZE];
    int n = srv_util_ld2str(buf, sizeof buf, v);

    ck_assert_msg(n > 0, "srv_util_ld2str(%Lg) failed", v);
    ck_assert_str_eq(buf, want);
    ck_assert_int_eq(n, (int)strlen(want));
}

/* x + y the INCRBYFLOAT way: parse both texts, add, print. */
static void incrbyfloat_is(const char *x, const char *y, const char *want)
{
    long double a, b;

    ck_assert(s2ld(x, &a));
    ck_assert(s2ld(y, &b));
    ld_is(a + b, want);
}

START_TEST(test_ld2str)
{
    ld_is(10.5L, "10.5");
    ld_is(5000.0L, "5000");
    ld_is(3.0L, "3");
    ld_is(0.0L, "0");
    ld_is(-0.0L, "0");
    ld_is(-2.5L, "-2.5");
    ld_is(1e20L, "100000000000000000000");
    ld_is(1e-17L, "0.00000000000000001");
    /* Below the 17 printed decimals: zero, and never "-0". */
    ld_is(1e-18L, "0");
    ld_is(-1e-18L, "0");
    /* Redis's documented INCRBYFLOAT examples. */
    incrbyfloat_is("10.50", "0.1", "10.6");
    incrbyfloat_is("5.0e3", "2.0e2", "5200");
    incrbyfloat_is("3", "-3", "0");
    incrbyfloat_is("0.1", "0.2", "0.3");
    incrbyfloat_is("1e-17", "0", "0.00000000000000001");
    incrbyfloat_is("-5", "2.5", "-2.5");
}
END_TEST

START_TEST(test_ld2str_limits)
{
    char buf[SRV_LDSTR_SIZE];
    char tiny[4];

    ck_assert_int_eq(srv_util_ld2str(buf, sizeof buf, INFINITY), 0);
    ck_assert_int_eq(srv_util_ld2str(buf, sizeof buf, -INFINITY), 0);
    ck_assert_int_eq(srv_util_ld2str(buf, sizeof buf, NAN), 0);
    /* Too small a buffer is a failure, not a truncated number. */
    ck_assert_int_eq(srv_util_ld2str(tiny, sizeof tiny, 12345.0L), 0);
    /* The largest long double fits the documented size. */
    ck_assert_int_gt(srv_util_ld2str(buf, sizeof buf, -LDBL_MAX), 0);
}
END_TEST

START_TEST(test_d2str)
{
    char buf[SRV_DSTR_SIZE];

    ck_assert_int_eq(srv_util_d2str(buf, sizeof buf, 1.5), 3);
    ck_assert_str_eq(buf, "1.5");
    srv_util_d2str(buf, sizeof buf, INFINITY);
    ck_assert_str_eq(buf, "inf");
    srv_util_d2str(buf, sizeof buf, -INFINITY);
    ck_assert_str_eq(buf, "-inf");
    srv_util_d2str(buf, sizeof buf, 0.1);
    ck_assert_str_eq(buf, "0.10000000000000001");
    srv_util_d2str(buf, sizeof buf, 3.0);
    ck_assert_str_eq(buf, "3");
    srv_util_d2str(buf, sizeof buf, -DBL_MAX);
    ck_assert_str_eq(buf, "-1.7976931348623157e+308");
}
END_TEST

/* ------------------------------------------------------------------ */
/* glob */

static int gm(const char *pat, const char *str)
{
    return srv_util_glob_match(pat, strlen(pat), str, strlen(str), 0);
}

static int gmi(const char *pat, const char *str)
{
    return srv_util_glob_match(pat, strlen(pat), str, strlen(str), 1);
}

START_TEST(test_glob_literal_and_wildcards)
{
    ck_assert(gm("", ""));
    ck_assert(!gm("", "a"));
    ck_assert(!gm("a", ""));
    ck_assert(gm("hello", "hello"));
    ck_assert(!gm("hello", "hell"));
    ck_assert(!gm("hell", "hello"));
    ck_assert(gm("*", ""));
    ck_assert(gm("*", "anything"));
    ck_assert(gm("**", "x"));
    ck_assert(gm("h*o", "ho"));
    ck_assert(gm("h*o", "hello"));
    ck_assert(!gm("h*o", "hellx"));
    ck_assert(gm("*llo", "hello"));
    ck_assert(gm("he*", "hello"));
    ck_assert(gm("*l*", "hello"));
    ck_assert(gm("h?llo", "hello"));
    ck_assert(gm("h?llo", "hallo"));
    ck_assert(!gm("h?llo", "hllo"));
    ck_assert(!gm("?", ""));
    ck_assert(gm("???", "abc"));
    ck_assert(!gm("???", "ab"));
    ck_assert(gm("a*b*c", "aXbYc"));
    ck_assert(gm("a*b*c", "abbbc"));
    ck_assert(!gm("a*b*c", "aXbY"));
    ck_assert(gm("*a*", "banana"));
    ck_assert(gm("*ana", "banana"));
    ck_assert(gm("user:*:name", "user:1000:name"));
    ck_assert(!gm("user:*:name", "user:1000:names"));
}
END_TEST

START_TEST(test_glob_classes)
{
    ck_assert(gm("h[ae]llo", "hello"));
    ck_assert(gm("h[ae]llo", "hallo"));
    ck_assert(!gm("h[ae]llo", "hillo"));
    ck_assert(gm("h[^e]llo", "hallo"));
    ck_assert(!gm("h[^e]llo", "hello"));
    ck_assert(gm("h[a-c]llo", "hbllo"));
    ck_assert(gm("h[a-c]llo", "hallo"));
    ck_assert(gm("h[a-c]llo", "hcllo"));
    ck_assert(!gm("h[a-c]llo", "hdllo"));
    /* A reversed range means the same range. */
    ck_assert(gm("h[c-a]llo", "hbllo"));
    ck_assert(!gm("h[c-a]llo", "hdllo"));
    ck_assert(gm("[^a-c]", "d"));
    ck_assert(!gm("[^a-c]", "b"));
    ck_assert(gm("[abc][abc]", "ca"));
    ck_assert(gm("[0-9]*", "7up"));
    ck_assert(!gm("[0-9]*", "up7"));
    /* Escapes inside a class. */
    ck_assert(gm("[\\]]", "]"));
    ck_assert(gm("[\\-]", "-"));
    ck_assert(!gm("[\\-]", "a"));
    /* An empty class matches nothing. */
    ck_assert(!gm("[]", "a"));
    /* A class left open runs to the end of the pattern, as in Redis. */
    ck_assert(gm("[ab", "a"));
    ck_assert(!gm("[ab", "c"));
    /* A class matches exactly one character. */
    ck_assert(!gm("[abc]", ""));
    ck_assert(!gm("[abc]", "ab"));
}
END_TEST

START_TEST(test_glob_escapes)
{
    ck_assert(gm("\\*", "*"));
    ck_assert(!gm("\\*", "a"));
    ck_assert(gm("\\?", "?"));
    ck_assert(!gm("\\?", "a"));
    ck_assert(gm("\\[a]", "[a]"));
    ck_assert(!gm("\\[a]", "a"));
    ck_assert(gm("a\\\\b", "a\\b"));
    ck_assert(gm("a\\*b*", "a*bcd"));
    ck_assert(!gm("a\\*b*", "axbcd"));
    /* A trailing backslash matches itself. */
    ck_assert(gm("a\\", "a\\"));
}
END_TEST

START_TEST(test_glob_nocase)
{
    ck_assert(gmi("HeLLo", "hello"));
    ck_assert(gmi("hello", "HELLO"));
    ck_assert(!gm("HeLLo", "hello"));
    ck_assert(gmi("h[A-C]llo", "hbllo"));
    ck_assert(gmi("h[a-c]llo", "HBLLO"));
    ck_assert(gmi("h[^E]llo", "hallo"));
    ck_assert(!gmi("h[^E]llo", "hello"));
    ck_assert(gmi("*MAX*", "maxclients"));
}
END_TEST

START_TEST(test_glob_binary)
{
    /* Patterns and subjects are slices: NUL is an ordinary byte. */
    ck_assert(srv_util_glob_match("a?c", 3, "a\0c", 3, 0));
    ck_assert(srv_util_glob_match("a*", 2, "a\0\0", 3, 0));
    ck_assert(!srv_util_glob_match("a\0", 2, "a", 1, 0));
    ck_assert(srv_util_glob_match("\xff*", 2, "\xff\xfe", 2, 0));
    ck_assert(srv_util_glob_match("[\x80-\xff]", 5, "\xc3", 1, 0));
}
END_TEST

START_TEST(test_glob_pathological)
{
    /* Many stars against a long near-miss must not go exponential. */
    char *s = malloc(LONG_SUBJECT + 1);
    const char *pats[] = {
        "a*a*a*a*b",
        "*a*a*a*a*a*a*a*a*a*a*b",
        "*?*?*?*?*?*?*?*?*b",
        "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    };
    struct timespec t0, t1;

    ck_assert_ptr_nonnull(s);
    memset(s, 'a', LONG_SUBJECT);
    s[LONG_SUBJECT] = '\0';
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        ck_assert(!gm(pats[i], s));
        s[LONG_SUBJECT - 1] = 'b';
        ck_assert(gm(pats[i], s));
        s[LONG_SUBJECT - 1] = 'a';
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Linear-ish work takes milliseconds; give it a generous second. */
    ck_assert_int_lt((t1.tv_sec - t0.tv_sec) * MS_PER_S +
                         (t1.tv_nsec - t0.tv_nsec) / 1000000,
                     MS_PER_S);
    free(s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* misc */

START_TEST(test_clocks)
{
    int64_t ms = srv_util_mstime(), us = srv_util_ustime();
    int64_t wall = (int64_t)time(NULL) * MS_PER_S;
    int64_t m1 = srv_util_monotonic_ms(), m2 = srv_util_monotonic_ms();

    ck_assert(ms > wall - CLOCK_SLACK_MS && ms < wall + CLOCK_SLACK_MS);
    ck_assert(us / US_PER_MS >= ms && us / US_PER_MS < ms + CLOCK_SLACK_MS);
    ck_assert(m2 >= m1);
    ck_assert(m1 > 0);
}
END_TEST

START_TEST(test_streq)
{
    ck_assert(srv_util_streq("GET", 3, "get"));
    ck_assert(srv_util_streq("gEt", 3, "GeT"));
    ck_assert(!srv_util_streq("GETX", 3, "getx"));
    ck_assert(!srv_util_streq("GET", 3, "getx"));
    ck_assert(!srv_util_streq("GETX", 4, "get"));
    ck_assert(srv_util_streq("", 0, ""));
}
END_TEST

static Suite *util_suite(void)
{
    Suite *s = suite_create("util");
    TCase *tc;

    tc = tcase_create("integers");
    tcase_add_test(tc, test_str2ll_valid);
    tcase_add_test(tc, test_str2ll_strict);
    tcase_add_test(tc, test_str2ll_length_bounded);
    tcase_add_test(tc, test_ll2str);
    suite_add_tcase(s, tc);

    tc = tcase_create("floats");
    tcase_add_test(tc, test_str2ld_valid);
    tcase_add_test(tc, test_str2ld_invalid);
    tcase_add_test(tc, test_str2ld_underflow);
    tcase_add_test(tc, test_str2d);
    tcase_add_test(tc, test_str2d_range);
    tcase_add_test(tc, test_str2d_lax);
    tcase_add_test(tc, test_str2d_lax_long);
    tcase_add_test(tc, test_str2cursor);
    tcase_add_test(tc, test_long_ld_text);
    tcase_add_test(tc, test_long_d_text);
    tcase_add_test(tc, test_ld2str);
    tcase_add_test(tc, test_ld2str_limits);
    tcase_add_test(tc, test_d2str);
    suite_add_tcase(s, tc);

    tc = tcase_create("glob");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_glob_literal_and_wildcards);
    tcase_add_test(tc, test_glob_classes);
    tcase_add_test(tc, test_glob_escapes);
    tcase_add_test(tc, test_glob_nocase);
    tcase_add_test(tc, test_glob_binary);
    tcase_add_test(tc, test_glob_pathological);
    suite_add_tcase(s, tc);

    tc = tcase_create("misc");
    tcase_add_test(tc, test_clocks);
    tcase_add_test(tc, test_streq);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(util_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
