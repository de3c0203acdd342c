/*
 * check_rdb_io: unit tests of the RDB byte level (rdb/rdb_crc64.h,
 * rdb/rdb_lzf.h, rdb/rdb_io.h): the CRC64/Jones check value and a DUMP
 * trailer made by redis-server 7.0.15, LZF round trips of many shapes
 * and sizes and its malformed inputs, Redis's LZF bytes decoded, length
 * and string encodings in both directions, readers over memory and file
 * descriptors (windows smaller than the strings), offsets, the CRC of a
 * windowed read, and truncation errors that name their offset.
 */
#include "rdb/rdb_crc64.h"
#include "rdb/rdb_err.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_lzf.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_S 60
#define MAX_STRING (64u << 20)
#define BIG (1u << 20)
#define SMALL_WINDOW 7

static uint8_t *hex(const char *h, size_t *n)
{
    size_t len = strlen(h) / 2;
    uint8_t *p = malloc(len + 1);

    for (size_t i = 0; i < len; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        p[i] = (uint8_t)v;
    }
    *n = len;
    return p;
}

START_TEST(test_crc64_check_value)
{
    ck_assert_uint_eq(rdb_crc64(0, "123456789", 9), 0xe9c6d914c4b8d9caull);
    /* In pieces of every split: the same value. */
    for (size_t cut = 0; cut <= 9; cut++)
        ck_assert_uint_eq(rdb_crc64(rdb_crc64(0, "123456789", cut),
                                    "123456789" + cut, 9 - cut),
                          0xe9c6d914c4b8d9caull);
    ck_assert_uint_eq(rdb_crc64(0, "", 0), 0);
}
END_TEST

START_TEST(test_crc64_redis_dump)
{
    /* DUMP of SET foo bar by redis-server 7.0.15. */
    size_t n;
    uint8_t *p = hex("0003626172"
                     "0a00"
                     "e6be4960ee66fd17",
                     &n);
    uint64_t want = 0;

    for (int i = 7; i >= 0; i--)
        want = (want << 8) | p[n - 8 + (size_t)i];
    ck_assert_uint_eq(rdb_crc64(0, p, n - 8), want);
    free(p);
}
END_TEST

START_TEST(test_crc64_slices_match_bytes)
{
    /* The 8-byte steps agree with byte steps at every alignment. */
    uint8_t buf[257];
    uint64_t whole, bytewise = 0;

    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 37 + 11);
    whole = rdb_crc64(0, buf, sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++)
        bytewise = rdb_crc64(bytewise, buf + i, 1);
    ck_assert_uint_eq(whole, bytewise);
}
END_TEST

static void lzf_round_trip(const uint8_t *in, size_t n, uint32_t *htab)
{
    uint8_t *c = malloc(n + n / 16 + 64), *d = malloc(n ? n : 1);
    size_t cn = rdb_lzf_compress(in, n, c, n + n / 16 + 64, htab);

    if (n > 0)
        ck_assert_uint_gt(cn, 0);
    ck_assert_int_eq(rdb_lzf_decompress(c, cn, d, n), 0);
    ck_assert_int_eq(memcmp(in, d, n), 0);
    /* One byte more or less expected is corrupt. */
    if (n > 0)
        ck_assert_int_eq(rdb_lzf_decompress(c, cn, d, n - 1), RDB_ECORRUPT);
    free(c);
    free(d);
}

START_TEST(test_lzf_round_trips)
{
    uint32_t *htab = calloc(RDB_LZF_HTAB, sizeof *htab);
    uint8_t *buf = calloc(1, BIG);
    uint64_t x = 88172645463325252ull;

    /* Sizes across the literal-run and reference limits, several shapes. */
    for (size_t n = 0; n < 600; n++) {
        for (size_t i = 0; i < n; i++)
            buf[i] = 'a';
        lzf_round_trip(buf, n, htab);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        lzf_round_trip(buf, n, htab);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)("abcabcabd"[i % 9] + (i / 1000));
        lzf_round_trip(buf, n, htab);
    }
    /* Long inputs: repeats further apart than a reference reaches. */
    for (size_t i = 0; i < BIG; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (i / 9000) % 2 ? buf[i % 9000] : (uint8_t)(x % 4 + 'a');
    }
    lzf_round_trip(buf, BIG, htab);
    free(buf);
    free(htab);
}
END_TEST

START_TEST(test_lzf_saves_or_refuses)
{
    uint32_t *htab = calloc(RDB_LZF_HTAB, sizeof *htab);
    uint8_t in[100], out[100];

    memset(in, 'a', sizeof in);
    size_t n = rdb_lzf_compress(in, sizeof in, out, sizeof in - 4, htab);
    ck_assert_uint_gt(n, 0);
    ck_assert_uint_lt(n, 10);
    /* Incompressible input does not fit a smaller output: 0. */
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 151 + 7);
    ck_assert_uint_eq(rdb_lzf_compress(in, sizeof in, out, sizeof in - 4, htab),
                      0);
    free(htab);
}
END_TEST

START_TEST(test_lzf_redis_bytes)
{
    /* The LZF body of SET s "a" * 100 dumped by redis-server 7.0.15. */
    size_t n;
    uint8_t *c = hex("016161e05700016161", &n), out[100];

    ck_assert_int_eq(rdb_lzf_decompress(c, n, out, sizeof out), 0);
    for (size_t i = 0; i < sizeof out; i++)
        ck_assert_int_eq(out[i], 'a');
    free(c);
}
END_TEST

START_TEST(test_lzf_malformed)
{
    uint8_t out[64];
    /* A reference before the start of the output. */
    static const uint8_t back[] = { 0x00, 'a', 0x20, 0x05 };
    /* A literal run longer than the input. */
    static const uint8_t run[] = { 0x05, 'a', 'b' };
    /* A long reference missing its length byte. */
    static const uint8_t cut[] = { 0x00, 'a', 0xe0 };
    /* A reference missing its offset byte. */
    static const uint8_t cut2[] = { 0x00, 'a', 0x20 };

    ck_assert_int_eq(rdb_lzf_decompress(back, sizeof back, out, 4),
                     RDB_ECORRUPT);
    ck_assert_int_eq(rdb_lzf_decompress(run, sizeof run, out, 6), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_lzf_decompress(cut, sizeof cut, out, 20),
                     RDB_ECORRUPT);
    ck_assert_int_eq(rdb_lzf_decompress(cut2, sizeof cut2, out, 4),
                     RDB_ECORRUPT);
    /* Output larger than declared. */
    static const uint8_t lit[] = { 0x03, 'a', 'b', 'c', 'd' };
    ck_assert_int_eq(rdb_lzf_decompress(lit, sizeof lit, out, 3), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_lzf_decompress(lit, sizeof lit, out, 4), 0);
}
END_TEST

/* Write with w, read back with a memory reader. */
static void read_back(rdb_writer *w, rdb_reader *r)
{
    rdb_reader_mem(r, w->buf.data, w->buf.len, MAX_STRING);
}

START_TEST(test_lengths)
{
    static const uint64_t v[] = {
        0, 1, 63, 64, 16383, 16384, 0xffffffffull, 0x100000000ull, UINT64_MAX
    };
    static const size_t bytes[] = { 1, 1, 1, 2, 2, 5, 5, 9, 9 };
    rdb_writer w;
    rdb_reader r;

    rdb_writer_mem(&w, 1);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t before = w.buf.len;
        ck_assert_int_eq(rdb_put_len(&w, v[i]), 0);
        ck_assert_uint_eq(w.buf.len - before, bytes[i]);
    }
    read_back(&w, &r);
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint64_t got;
        ck_assert_int_eq(rdb_read_len(&r, &got, NULL), 0);
        ck_assert_uint_eq(got, v[i]);
    }
    ck_assert_int_eq(rdb_read_len(&r, &(uint64_t){ 0 }, NULL), RDB_ETRUNC);
    ck_assert_uint_eq(r.err_off, w.buf.len);
    rdb_writer_fini(&w);

    /* 0x82..0xbf are no length; an encoded value is none either. */
    uint8_t bad[] = { 0x82, 0xc0, 0x05 };
    rdb_reader_mem(&r, bad, sizeof bad, MAX_STRING);
    ck_assert_int_eq(rdb_read_len(&r, &(uint64_t){ 0 }, NULL), RDB_ECORRUPT);
    ck_assert_uint_eq(r.err_off, 1);
    rdb_reader_mem(&r, bad + 1, 2, MAX_STRING);
    ck_assert_int_eq(rdb_read_len(&r, &(uint64_t){ 0 }, NULL), RDB_ECORRUPT);
}
END_TEST

static void put_get(const char *s, size_t n, int compress, const char *first)
{
    rdb_writer w;
    rdb_reader r;
    rdb_buf sc = { 0 };
    const uint8_t *p;
    size_t got;

    rdb_writer_mem(&w, compress);
    ck_assert_int_eq(rdb_put_string(&w, s, n), 0);
    if (first)
        ck_assert_int_eq(w.buf.data[0], (uint8_t)first[0]);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &got), 0);
    ck_assert_uint_eq(got, n);
    ck_assert_int_eq(memcmp(p, s, n), 0);
    ck_assert_uint_eq(rdb_reader_offset(&r), w.buf.len);
    rdb_buf_free(&sc);
    rdb_writer_fini(&w);
}

START_TEST(test_strings)
{
    char *big = malloc(BIG);

    /* Integers as Redis encodes them (0xc0, 0xc1, 0xc2), the rest raw. */
    put_get("0", 1, 1, "\xc0");
    put_get("-128", 4, 1, "\xc0");
    put_get("127", 3, 1, "\xc0");
    put_get("128", 3, 1, "\xc1");
    put_get("-32768", 6, 1, "\xc1");
    put_get("32768", 5, 1, "\xc2");
    put_get("-2147483648", 11, 1, "\xc2");
    put_get("2147483648", 10, 1, "\x0a"); /* past int32: raw */
    put_get("007", 3, 1, "\x03");         /* not canonical: raw */
    put_get("-0", 2, 1, "\x02");
    put_get("+1", 2, 1, "\x02");
    put_get("", 0, 1, "\x00");
    memset(big, 'x', BIG);
    put_get(big, 20, 1, "\x14"); /* under 21 bytes: raw */
    put_get(big, 21, 1, "\xc3");
    put_get(big, 21, 0, "\x15"); /* compression off */
    put_get(big, BIG, 1, "\xc3");
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < BIG; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        big[i] = (char)x;
    }
    put_get(big, BIG, 1, "\x80"); /* incompressible: raw */
    free(big);
}
END_TEST

START_TEST(test_redis_string_encodings)
{
    /* Values of DUMPs by redis-server 7.0.15 (type byte stripped). */
    static const struct {
        const char *hex, *text;
    } v[] = {
        { "c13930", "12345" },
        { "c0f9", "-7" },
        { "0c313233343536373839303132", "123456789012" },
        { "c3094064016161e057000161610a", NULL },
    };
    rdb_buf sc = { 0 };

    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t n, got;
        uint8_t *p = hex(v[i].hex, &n);
        const uint8_t *s;
        rdb_reader r;
        rdb_reader_mem(&r, p, n, MAX_STRING);
        ck_assert_int_eq(rdb_read_string(&r, &sc, &s, &got), 0);
        if (v[i].text) {
            ck_assert_uint_eq(got, strlen(v[i].text));
            ck_assert_int_eq(memcmp(s, v[i].text, got), 0);
        } else {
            ck_assert_uint_eq(got, 100);
        }
        free(p);
    }
    rdb_buf_free(&sc);
}
END_TEST

START_TEST(test_string_limits)
{
    rdb_writer w;
    rdb_reader r;
    rdb_buf sc = { 0 };
    const uint8_t *p;
    size_t n;

    /* A length past the input: truncated before any allocation. */
    rdb_writer_mem(&w, 0);
    rdb_put_len(&w, 1000);
    rdb_put(&w, "abc", 3);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), RDB_ETRUNC);
    ck_assert(strstr(r.why, "997 bytes short") != NULL);
    /* Past max_string. */
    rdb_reader_mem(&r, w.buf.data, w.buf.len, 100);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), RDB_ETOOBIG);
    /* An LZF string claiming 4 GiB of output is refused by the limit. */
    w.buf.len = 0;
    rdb_put_u8(&w, 0xc3);
    rdb_put_len(&w, 2);
    rdb_put_len(&w, 0xffffffffull);
    rdb_put(&w,
            "\x00"
            "a",
            2);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), RDB_ETOOBIG);
    /* A malformed LZF body. */
    w.buf.len = 0;
    rdb_put_u8(&w, 0xc3);
    rdb_put_len(&w, 2);
    rdb_put_len(&w, 5);
    rdb_put(&w,
            "\x00"
            "a",
            2);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), RDB_ECORRUPT);
    /* Unknown special encoding. */
    w.buf.len = 0;
    rdb_put_u8(&w, 0xc4);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), RDB_ECORRUPT);
    rdb_buf_free(&sc);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_doubles)
{
    rdb_writer w;
    rdb_reader r;
    double d;

    rdb_writer_mem(&w, 0);
    rdb_put_double_bin(&w, -2.5);
    rdb_put_double_bin(&w, INFINITY);
    rdb_put_u8(&w, 3);
    rdb_put(&w, "1.5", 3);
    rdb_put_u8(&w, RDB_DOUBLE_NEGINF);
    rdb_put_u8(&w, RDB_DOUBLE_POSINF);
    rdb_put_u8(&w, RDB_DOUBLE_NAN);
    rdb_put_u8(&w, 3);
    rdb_put(&w, "1.x", 3);
    read_back(&w, &r);
    ck_assert_int_eq(rdb_read_double_bin(&r, &d), 0);
    ck_assert(d == -2.5);
    ck_assert_int_eq(rdb_read_double_bin(&r, &d), 0);
    ck_assert(isinf(d) && d > 0);
    ck_assert_int_eq(rdb_read_double_text(&r, &d), 0);
    ck_assert(d == 1.5);
    ck_assert_int_eq(rdb_read_double_text(&r, &d), 0);
    ck_assert(isinf(d) && d < 0);
    ck_assert_int_eq(rdb_read_double_text(&r, &d), 0);
    ck_assert(isinf(d) && d > 0);
    ck_assert_int_eq(rdb_read_double_text(&r, &d), 0);
    ck_assert(isnan(d));
    ck_assert_int_eq(rdb_read_double_text(&r, &d), RDB_ECORRUPT);
    rdb_writer_fini(&w);
}
END_TEST

/* A temp file holding `n` bytes; its descriptor, positioned at 0. */
static int temp_file(const uint8_t *p, size_t n)
{
    char path[] = "/tmp/check_rdb_io.XXXXXX";
    int fd = mkstemp(path);

    ck_assert_int_ge(fd, 0);
    unlink(path);
    ck_assert_int_eq(write(fd, p, n), (ssize_t)n);
    lseek(fd, 0, SEEK_SET);
    return fd;
}

START_TEST(test_fd_reader_windows)
{
    rdb_writer w;
    char *big = malloc(BIG);
    rdb_buf sc = { 0 };

    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)('a' + i % 23);
    rdb_writer_mem(&w, 1);
    rdb_put_string(&w, "hello", 5);
    rdb_put_string(&w, big, BIG);
    rdb_writer_mem(&(rdb_writer){ 0 }, 0);
    w.compress = 0;
    rdb_put_string(&w, big, 1000);
    rdb_put_len(&w, 123456);
    uint64_t crc = rdb_writer_crc(&w);

    /* Windows of a few bytes up to bigger than the file. */
    size_t windows[] = { SMALL_WINDOW, 64, 4096, 4u << 20 };
    for (size_t wi = 0; wi < 4; wi++) {
        int fd = temp_file(w.buf.data, w.buf.len);
        rdb_reader r;
        const uint8_t *p;
        size_t n;
        uint64_t len;
        ck_assert_int_eq(rdb_reader_fd(&r, fd, windows[wi], w.buf.len,
                                       MAX_STRING),
                         0);
        ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), 0);
        ck_assert_uint_eq(n, 5);
        ck_assert_int_eq(memcmp(p, "hello", 5), 0);
        ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), 0);
        ck_assert_uint_eq(n, BIG);
        ck_assert_int_eq(memcmp(p, big, BIG), 0);
        ck_assert_int_eq(rdb_read_string(&r, &sc, &p, &n), 0);
        ck_assert_uint_eq(n, 1000);
        ck_assert_int_eq(memcmp(p, big, 1000), 0);
        ck_assert_int_eq(rdb_read_len(&r, &len, NULL), 0);
        ck_assert_uint_eq(len, 123456);
        ck_assert_uint_eq(rdb_reader_offset(&r), w.buf.len);
        ck_assert_uint_eq(rdb_reader_crc(&r), crc);
        ck_assert_int_eq(rdb_read_u8(&r, &(uint8_t){ 0 }), RDB_ETRUNC);
        ck_assert_uint_eq(r.err_off, w.buf.len);
        rdb_reader_fini(&r);
        close(fd);
    }
    rdb_buf_free(&sc);
    rdb_writer_fini(&w);
    free(big);
}
END_TEST

START_TEST(test_fd_writer)
{
    char path[] = "/tmp/check_rdb_io.XXXXXX";
    int fd = mkstemp(path);
    rdb_writer w, m;
    uint8_t *back = malloc(BIG * 2);

    unlink(path);
    rdb_writer_fd(&w, fd, 100, 1);
    rdb_writer_mem(&m, 1);
    for (int i = 0; i < 5000; i++) {
        char s[32];
        int n = snprintf(s, sizeof s, "value-%d-%d", i, i * 7);
        rdb_put_string(&w, s, (size_t)n);
        rdb_put_string(&m, s, (size_t)n);
    }
    ck_assert_uint_eq(rdb_writer_bytes(&w), m.buf.len);
    ck_assert_uint_eq(rdb_writer_crc(&w), rdb_writer_crc(&m));
    ck_assert_int_eq(rdb_writer_flush(&w), 0);
    lseek(fd, 0, SEEK_SET);
    ck_assert_int_eq(read(fd, back, BIG * 2), (ssize_t)m.buf.len);
    ck_assert_int_eq(memcmp(back, m.buf.data, m.buf.len), 0);
    rdb_writer_fini(&w);
    rdb_writer_fini(&m);
    close(fd);
    free(back);
}
END_TEST

START_TEST(test_string_to_ll)
{
    int64_t v;

    ck_assert(rdb_string_to_ll((const uint8_t *)"9223372036854775807", 19, &v));
    ck_assert(v == INT64_MAX);
    ck_assert(
        rdb_string_to_ll((const uint8_t *)"-9223372036854775808", 20, &v));
    ck_assert(v == INT64_MIN);
    ck_assert(
        !rdb_string_to_ll((const uint8_t *)"9223372036854775808", 19, &v));
    ck_assert(
        !rdb_string_to_ll((const uint8_t *)"-9223372036854775809", 20, &v));
    ck_assert(!rdb_string_to_ll((const uint8_t *)"-", 1, &v));
    ck_assert(!rdb_string_to_ll((const uint8_t *)"", 0, &v));
    ck_assert(!rdb_string_to_ll((const uint8_t *)"1a", 2, &v));
    ck_assert(!rdb_string_to_ll((const uint8_t *)" 1", 2, &v));
    ck_assert(rdb_string_to_ll((const uint8_t *)"0", 1, &v) && v == 0);
}
END_TEST

static Suite *rdb_io_suite(void)
{
    Suite *s = suite_create("rdb_io");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_crc64_check_value);
    tcase_add_test(tc, test_crc64_redis_dump);
    tcase_add_test(tc, test_crc64_slices_match_bytes);
    tcase_add_test(tc, test_lzf_round_trips);
    tcase_add_test(tc, test_lzf_saves_or_refuses);
    tcase_add_test(tc, test_lzf_redis_bytes);
    tcase_add_test(tc, test_lzf_malformed);
    tcase_add_test(tc, test_lengths);
    tcase_add_test(tc, test_strings);
    tcase_add_test(tc, test_redis_string_encodings);
    tcase_add_test(tc, test_string_limits);
    tcase_add_test(tc, test_doubles);
    tcase_add_test(tc, test_fd_reader_windows);
    tcase_add_test(tc, test_fd_writer);
    tcase_add_test(tc, test_string_to_ll);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rdb_io_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
