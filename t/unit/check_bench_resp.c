/*
 * check_bench_resp: unit tests of larder-bench's RESP reply parser.
 *
 * Every RESP2 reply type (status, error, integer, bulk, nil, arrays,
 * nested arrays) parses to what it says; a pipelined stream split at every
 * byte, and fed one byte at a time, gives the same replies as the whole
 * stream, with the resumable scanner carrying its progress across reads
 * (and across buffers that moved); malformed input, RESP3 type bytes
 * included (larder-bench speaks RESP2 only), is an error, never a crash or
 * a wait for bytes that cannot fix it; random corruption of a valid stream
 * never reads out of bounds or loops.  Command encoding round-trips.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_resp.h"

#define TIMEOUT_S 60
#define TEXT_MAX 64
#define MAX_REPLIES 64
#define FUZZ_ROUNDS 20000
#define FUZZ_SEED 12345
#define BIG_ARRAY 200000
#define BIG_PIECE 4096

/* A reply flattened for comparison: its type, integer and text. */
typedef struct flat {
    bench_reply_type type;
    int64_t integer;
    char text[TEXT_MAX];
    size_t len;
    long span;
} flat;

static void flatten(const bench_reply *r, long span, flat *f)
{
    memset(f, 0, sizeof(*f));
    f->type = r->type;
    f->integer = r->integer;
    f->span = span;
    if (r->str != NULL) {
        f->len = r->len;
        memcpy(f->text, r->str, r->len < TEXT_MAX ? r->len : TEXT_MAX);
    }
    if (r->type == BENCH_REPLY_ARRAY) {
        f->len = r->elems_len;
        memcpy(f->text, r->elems,
               r->elems_len < TEXT_MAX ? r->elems_len : TEXT_MAX);
    }
}

static void assert_same(const flat *a, const flat *b)
{
    ck_assert_int_eq(a->type, b->type);
    ck_assert_int_eq(a->integer, b->integer);
    ck_assert_uint_eq(a->len, b->len);
    ck_assert_int_eq(a->span, b->span);
    ck_assert_mem_eq(a->text, b->text, a->len < TEXT_MAX ? a->len : TEXT_MAX);
}

/* Parse s whole; it must be exactly one reply of the given type. */
static bench_reply parse_one(const char *s, bench_reply_type type)
{
    bench_reply r;
    long used = bench_resp_parse(s, strlen(s), &r);

    ck_assert_msg(used == (long)strlen(s), "%s: used %ld", s, used);
    ck_assert_int_eq(r.type, type);
    return r;
}

static void assert_text(const bench_reply *r, const char *want, size_t len)
{
    ck_assert_uint_eq(r->len, len);
    ck_assert_mem_eq(r->str, want, len);
}

START_TEST(test_scalars)
{
    bench_reply r;

    r = parse_one("+OK\r\n", BENCH_REPLY_STATUS);
    assert_text(&r, "OK", 2);
    r = parse_one("+\r\n", BENCH_REPLY_STATUS);
    ck_assert_uint_eq(r.len, 0);
    r = parse_one("-ERR unknown command 'MULTI'\r\n", BENCH_REPLY_ERROR);
    assert_text(&r, "ERR unknown command 'MULTI'", 27);
    r = parse_one(":42\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(r.integer, 42);
    r = parse_one(":-7\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(r.integer, -7);
    r = parse_one(":0\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(r.integer, 0);
    r = parse_one(":9223372036854775807\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(r.integer, INT64_MAX);
    r = parse_one(":-9223372036854775808\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(r.integer, INT64_MIN);
    r = parse_one("$3\r\nfoo\r\n", BENCH_REPLY_BULK);
    assert_text(&r, "foo", 3);
    r = parse_one("$0\r\n\r\n", BENCH_REPLY_BULK);
    ck_assert_uint_eq(r.len, 0);
    /* A bulk string may hold CRLF: its length decides, not the bytes. */
    r = parse_one("$4\r\na\r\nb\r\n", BENCH_REPLY_BULK);
    assert_text(&r, "a\r\nb", 4);
    r = parse_one("$-1\r\n", BENCH_REPLY_NIL);
    r = parse_one("*-1\r\n", BENCH_REPLY_NIL);
    r = parse_one("*0\r\n", BENCH_REPLY_ARRAY);
    ck_assert_int_eq(r.integer, 0);
    ck_assert_uint_eq(r.elems_len, 0);
}
END_TEST

START_TEST(test_binary_bulk)
{
    static const char bytes[] = "$5\r\n\0\r\n\xff\n\r\n";
    bench_reply r;
    long used = bench_resp_parse(bytes, sizeof(bytes) - 1, &r);

    ck_assert_int_eq(used, (long)sizeof(bytes) - 1);
    ck_assert_int_eq(r.type, BENCH_REPLY_BULK);
    ck_assert_uint_eq(r.len, 5);
    ck_assert_mem_eq(r.str, "\0\r\n\xff\n", 5);
}
END_TEST

/* The i-th element of an array reply. */
static bench_reply element(const bench_reply *a, int64_t i)
{
    const char *p = a->elems;
    size_t left = a->elems_len;
    bench_reply e;
    int64_t k;

    ck_assert_int_eq(a->type, BENCH_REPLY_ARRAY);
    ck_assert_int_lt(i, a->integer);
    for (k = 0; k <= i; k++) {
        long used = bench_resp_parse(p, left, &e);

        ck_assert_int_gt(used, 0);
        p += used;
        left -= (size_t)used;
    }
    return e;
}

START_TEST(test_arrays)
{
    bench_reply r, e, inner;

    r = parse_one("*4\r\n$3\r\nfoo\r\n:1\r\n$-1\r\n-WRONGTYPE x\r\n",
                  BENCH_REPLY_ARRAY);
    ck_assert_int_eq(r.integer, 4);
    e = element(&r, 0);
    ck_assert_int_eq(e.type, BENCH_REPLY_BULK);
    assert_text(&e, "foo", 3);
    e = element(&r, 1);
    ck_assert_int_eq(e.integer, 1);
    ck_assert_int_eq(element(&r, 2).type, BENCH_REPLY_NIL);
    e = element(&r, 3);
    ck_assert_int_eq(e.type, BENCH_REPLY_ERROR);
    assert_text(&e, "WRONGTYPE x", 11);
    /* elems spans every element and nothing after them. */
    ck_assert_uint_eq(r.elems_len, strlen(r.elems));

    /* Nested: [[1, 2], [], [+x], nil-array] */
    r = parse_one("*4\r\n*2\r\n:1\r\n:2\r\n*0\r\n*1\r\n+x\r\n*-1\r\n",
                  BENCH_REPLY_ARRAY);
    ck_assert_int_eq(r.integer, 4);
    inner = element(&r, 0);
    ck_assert_int_eq(inner.type, BENCH_REPLY_ARRAY);
    ck_assert_int_eq(inner.integer, 2);
    ck_assert_int_eq(element(&inner, 1).integer, 2);
    inner = element(&r, 1);
    ck_assert_int_eq(inner.type, BENCH_REPLY_ARRAY);
    ck_assert_int_eq(inner.integer, 0);
    inner = element(&r, 2);
    e = element(&inner, 0);
    assert_text(&e, "x", 1);
    ck_assert_int_eq(element(&r, 3).type, BENCH_REPLY_NIL);

    /* A pub/sub message as larder-bench's subscribers see it. */
    r = parse_one("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n",
                  BENCH_REPLY_ARRAY);
    e = element(&r, 2);
    assert_text(&e, "hello", 5);
}
END_TEST

/* depth nested one-element arrays around ":1". */
static char *nested(unsigned depth)
{
    char *s = malloc(depth * 4 + 5);
    unsigned i;

    ck_assert_ptr_nonnull(s);
    for (i = 0; i < depth; i++)
        memcpy(s + i * 4, "*1\r\n", 4);
    memcpy(s + depth * 4, ":1\r\n", 5);
    return s;
}

START_TEST(test_depth_limit)
{
    char *ok = nested(BENCH_RESP_MAX_DEPTH);
    char *deep = nested(BENCH_RESP_MAX_DEPTH + 1);
    bench_reply r;

    ck_assert_int_eq(bench_resp_parse(ok, strlen(ok), &r), (long)strlen(ok));
    ck_assert_int_eq(bench_resp_parse(deep, strlen(deep), &r), -1);
    /* Too deep is an error even before the rest has arrived. */
    ck_assert_int_eq(bench_resp_parse(deep, (BENCH_RESP_MAX_DEPTH + 1) * 4, &r),
                     -1);
    free(ok);
    free(deep);
}
END_TEST

/* A pipelined stream holding every kind of reply, and its parts. */
static const char *const stream_parts[] = {
    "+OK\r\n",
    "-ERR no such key\r\n",
    ":12345\r\n",
    ":-1\r\n",
    "$5\r\nhello\r\n",
    "$0\r\n\r\n",
    "$-1\r\n",
    "*-1\r\n",
    "*0\r\n",
    "*3\r\n$3\r\nfoo\r\n:7\r\n$-1\r\n",
    "*2\r\n*2\r\n+a\r\n$2\r\n\r\n\r\n*1\r\n*1\r\n:9\r\n",
    "$11\r\n\r\n$3\r\nfoo\r\n\r\n",
    "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\n1234\r\n",
    "+QUEUED\r\n",
};
#define N_PARTS (sizeof(stream_parts) / sizeof(stream_parts[0]))

static size_t build_stream(char *buf, size_t cap)
{
    size_t i, n = 0;

    for (i = 0; i < N_PARTS; i++) {
        size_t len = strlen(stream_parts[i]);

        ck_assert_uint_le(n + len, cap);
        memcpy(buf + n, stream_parts[i], len);
        n += len;
    }
    return n;
}

/* What each part parses to on its own. */
static void expected_replies(flat *want)
{
    size_t i;

    for (i = 0; i < N_PARTS; i++) {
        bench_reply r;
        long used = bench_resp_parse(stream_parts[i], strlen(stream_parts[i]),
                                     &r);

        ck_assert_int_eq(used, (long)strlen(stream_parts[i]));
        flatten(&r, used, &want[i]);
    }
}

/*
 * A receiver as the engine runs one: bytes arrive in pieces into a
 * buffer, and after each piece every whole reply is taken from it.  Each
 * arrival copies the pending bytes into a fresh allocation, as a
 * compaction or a realloc would move them, so the scanner's offsets are
 * tested, not its pointers.
 */
typedef struct receiver {
    bench_resp_scan scan;
    char *buf;
    size_t len;
    flat got[MAX_REPLIES];
    size_t n_got;
    int error;
} receiver;

static void receive(receiver *rc, const char *bytes, size_t n)
{
    char *moved = malloc(rc->len + n + 1);

    ck_assert_ptr_nonnull(moved);
    if (rc->len > 0)
        memcpy(moved, rc->buf, rc->len);
    memcpy(moved + rc->len, bytes, n);
    free(rc->buf);
    rc->buf = moved;
    rc->len += n;
    for (;;) {
        bench_reply r;
        long used = bench_resp_scan_reply(&rc->scan, rc->buf, rc->len, &r);

        if (used < 0) {
            rc->error = 1;
            return;
        }
        if (used == 0)
            return;
        ck_assert_uint_lt(rc->n_got, MAX_REPLIES);
        ck_assert_uint_le((size_t)used, rc->len);
        flatten(&r, used, &rc->got[rc->n_got++]);
        memmove(rc->buf, rc->buf + used, rc->len - (size_t)used);
        rc->len -= (size_t)used;
    }
}

static void receiver_check(receiver *rc, const flat *want)
{
    size_t i;

    ck_assert_int_eq(rc->error, 0);
    ck_assert_uint_eq(rc->n_got, N_PARTS);
    ck_assert_uint_eq(rc->len, 0);
    for (i = 0; i < N_PARTS; i++)
        assert_same(&rc->got[i], &want[i]);
    free(rc->buf);
}

START_TEST(test_every_split_point)
{
    char stream[1024];
    flat want[N_PARTS];
    size_t len = build_stream(stream, sizeof(stream)), k;

    expected_replies(want);
    for (k = 0; k <= len; k++) {
        receiver rc;

        memset(&rc, 0, sizeof(rc));
        receive(&rc, stream, k);
        receive(&rc, stream + k, len - k);
        receiver_check(&rc, want);
    }
}
END_TEST

START_TEST(test_byte_at_a_time)
{
    char stream[1024];
    flat want[N_PARTS];
    size_t len = build_stream(stream, sizeof(stream)), k;
    receiver rc;

    expected_replies(want);
    memset(&rc, 0, sizeof(rc));
    for (k = 0; k < len; k++)
        receive(&rc, stream + k, 1);
    receiver_check(&rc, want);
}
END_TEST

START_TEST(test_prefixes_are_incomplete)
{
    char stream[1024];
    size_t len = build_stream(stream, sizeof(stream)), k, off = 0, i;

    (void)len;
    /* Every proper prefix of a reply is "not yet", never an error, and
     * never a reply. */
    for (i = 0; i < N_PARTS; i++) {
        size_t plen = strlen(stream_parts[i]);

        for (k = 0; k < plen; k++) {
            bench_reply r;

            ck_assert_msg(bench_resp_parse(stream + off, k, &r) == 0,
                          "part %zu, prefix %zu", i, k);
        }
        off += plen;
    }
}
END_TEST

START_TEST(test_malformed)
{
    static const char *const bad[] = {
        "?\r\n",
        "x",
        " +OK\r\n",
        "\r\n",
        "\n",
        /* RESP3 types: map, set, null, double, boolean, verbatim, push,
         * big number, attribute, blob error */
        "%1\r\n+a\r\n+b\r\n",
        "~1\r\n:1\r\n",
        "_\r\n",
        ",1.5\r\n",
        "#t\r\n",
        "=7\r\ntxt:abc\r\n",
        ">1\r\n+a\r\n",
        "(123\r\n",
        "|1\r\n+a\r\n+b\r\n",
        "!3\r\nerr\r\n",
        /* bare LF, bad numbers, out-of-range lengths */
        "+OK\n",
        ":1\n",
        ":\r\n",
        ":abc\r\n",
        ":1.5\r\n",
        ": 1\r\n",
        ":99999999999999999999\r\n",
        ":9223372036854775808\r\n",
        "$abc\r\n",
        "$-2\r\n",
        "$\r\n",
        "*-2\r\n",
        "*x\r\n",
        "$99999999999\r\n",
        "*99999999999\r\n",
        /* a numeric line that cannot end in time */
        ":1234567890123456789012345678901234567890",
        "$00000000000000000000000000000000000000000",
        /* a bulk whose payload does not end in CRLF */
        "$3\r\nfooXY",
        "$3\r\nfoo\n\r",
        /* garbage inside an array */
        "*2\r\n:1\r\nX\r\n",
        "*1\r\n*1\r\n%0\r\n",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bench_resp_scan s;
        bench_reply r;

        ck_assert_msg(bench_resp_parse(bad[i], strlen(bad[i]), &r) == -1,
                      "case %zu (%s) not rejected", i, bad[i]);
        /* The scanner says the same after a first, shorter look, and
         * forgets the broken reply. */
        bench_resp_scan_reset(&s);
        ck_assert_int_le(bench_resp_scan_reply(&s, bad[i], strlen(bad[i]) / 2,
                                               &r),
                         0);
        ck_assert_int_eq(bench_resp_scan_reply(&s, bad[i], strlen(bad[i]), &r),
                         -1);
        ck_assert_uint_eq(s.off, 0);
        ck_assert_uint_eq(s.depth, 0);
    }
}
END_TEST

START_TEST(test_scan_contract)
{
    bench_resp_scan s;
    bench_reply r;

    /* Fewer bytes than were already scanned: a misuse, reported. */
    bench_resp_scan_reset(&s);
    ck_assert_int_eq(bench_resp_scan_reply(&s, "*2\r\n:1\r\n", 8, &r), 0);
    ck_assert_uint_eq(s.off, 8);
    ck_assert_int_eq(bench_resp_scan_reply(&s, "*2\r\n", 4, &r), -1);
    ck_assert_uint_eq(s.off, 0);
    /* An empty buffer is simply "not yet". */
    ck_assert_int_eq(bench_resp_scan_reply(&s, "", 0, &r), 0);
}
END_TEST

/* A big array arriving in small pieces: each call resumes where the last
 * stopped (the scan's offset keeps up with the bytes), so the whole reply
 * is scanned once, not once per piece. */
START_TEST(test_big_array_resumes)
{
    size_t cap = BIG_ARRAY * 4 + 32, len, fed = 0;
    char *buf = malloc(cap);
    bench_resp_scan s;
    bench_reply r;
    long used = 0;
    size_t i;

    ck_assert_ptr_nonnull(buf);
    len = (size_t)snprintf(buf, cap, "*%d\r\n", BIG_ARRAY);
    for (i = 0; i < BIG_ARRAY; i++) {
        memcpy(buf + len, ":1\r\n", 4);
        len += 4;
    }
    bench_resp_scan_reset(&s);
    while (fed < len) {
        fed += BIG_PIECE;
        if (fed > len)
            fed = len;
        used = bench_resp_scan_reply(&s, buf, fed, &r);
        if (fed < len) {
            ck_assert_int_eq(used, 0);
            /* Whole items only: at most one partial item unscanned. */
            ck_assert_uint_le(fed - s.off, 4);
        }
    }
    ck_assert_int_eq(used, (long)len);
    ck_assert_int_eq(r.type, BENCH_REPLY_ARRAY);
    ck_assert_int_eq(r.integer, BIG_ARRAY);
    ck_assert_uint_eq(r.elems_len, (size_t)BIG_ARRAY * 4);
    free(buf);
}
END_TEST

static uint64_t next_rand(uint64_t *x)
{
    /* xorshift64: deterministic and good enough to pick bytes. */
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Corrupt a valid stream at random: whatever the parser says must be in
 * range, and the scanner fed in two pieces must agree with one look. */
START_TEST(test_random_corruption)
{
    static const char alphabet[] = "+-:$*\r\n0123456789-x%_";
    char stream[1024], copy[1024];
    size_t len = build_stream(stream, sizeof(stream));
    uint64_t x = FUZZ_SEED;
    int round;

    for (round = 0; round < FUZZ_ROUNDS; round++) {
        size_t n = len, edits = 1 + next_rand(&x) % 3, e, off = 0;

        memcpy(copy, stream, len);
        for (e = 0; e < edits; e++)
            copy[next_rand(&x) % n] =
                alphabet[next_rand(&x) % (sizeof(alphabet) - 1)];
        if (next_rand(&x) % 4 == 0)
            n = next_rand(&x) % (len + 1);
        /* Walk the corrupted stream reply by reply. */
        while (off < n) {
            bench_resp_scan s;
            bench_reply r;
            size_t cut = off + next_rand(&x) % (n - off + 1);
            long whole = bench_resp_parse(copy + off, n - off, &r);
            long part;

            ck_assert(whole >= -1 && whole <= (long)(n - off));
            bench_resp_scan_reset(&s);
            part = bench_resp_scan_reply(&s, copy + off, cut - off, &r);
            if (part == 0)
                part = bench_resp_scan_reply(&s, copy + off, n - off, &r);
            ck_assert_int_eq(part, whole);
            if (whole <= 0)
                break;
            off += (size_t)whole;
        }
    }
}
END_TEST

START_TEST(test_reply_helpers)
{
    bench_reply r;
    int64_t v = 0;
    char text[8];

    r = parse_one(":-12\r\n", BENCH_REPLY_INTEGER);
    ck_assert_int_eq(bench_reply_to_i64(&r, &v), 0);
    ck_assert_int_eq(v, -12);
    r = parse_one("$4\r\n1000\r\n", BENCH_REPLY_BULK);
    ck_assert_int_eq(bench_reply_to_i64(&r, &v), 0);
    ck_assert_int_eq(v, 1000);
    r = parse_one("$3\r\n1x0\r\n", BENCH_REPLY_BULK);
    ck_assert_int_ne(bench_reply_to_i64(&r, &v), 0);
    r = parse_one("$-1\r\n", BENCH_REPLY_NIL);
    ck_assert_int_ne(bench_reply_to_i64(&r, &v), 0);
    r = parse_one("-ERR a\tb\r\n", BENCH_REPLY_ERROR);
    bench_reply_text(&r, text, sizeof(text));
    ck_assert_str_eq(text, "ERR a?b");
    r = parse_one("+0123456789\r\n", BENCH_REPLY_STATUS);
    bench_reply_text(&r, text, sizeof(text));
    ck_assert_str_eq(text, "0123456");
}
END_TEST

START_TEST(test_encode_round_trip)
{
    static const char *const argv[] = { "SET", "", "a\r\nb" };
    bench_buf b;
    bench_reply r, e;
    long first, second;

    memset(&b, 0, sizeof(b));
    bench_cmd_argv(&b, 3, argv);
    bench_cmd_begin(&b, 3);
    bench_cmd_arg_key(&b, "key:", 42);
    bench_cmd_arg_i64(&b, INT64_MIN);
    bench_cmd_arg_u64(&b, UINT64_MAX);
    /* A command is an array of bulk strings: the parser reads it back. */
    first = bench_resp_parse(b.data, b.len, &r);
    ck_assert_int_gt(first, 0);
    ck_assert_int_eq(r.integer, 3);
    e = element(&r, 2);
    assert_text(&e, "a\r\nb", 4);
    e = element(&r, 1);
    ck_assert_uint_eq(e.len, 0);
    second = bench_resp_parse(b.data + first, b.len - (size_t)first, &r);
    ck_assert_int_eq(first + second, (long)b.len);
    e = element(&r, 0);
    assert_text(&e, "key:000000000042", 16);
    e = element(&r, 1);
    assert_text(&e, "-9223372036854775808", 20);
    e = element(&r, 2);
    assert_text(&e, "18446744073709551615", 20);
    bench_buf_fini(&b);
}
END_TEST

static Suite *bench_resp_suite(void)
{
    Suite *s = suite_create("bench_resp");
    TCase *core = tcase_create("core");
    TCase *stream = tcase_create("stream");
    TCase *limits = tcase_create("limits");

    tcase_set_timeout(core, TIMEOUT_S);
    tcase_add_test(core, test_scalars);
    tcase_add_test(core, test_binary_bulk);
    tcase_add_test(core, test_arrays);
    tcase_add_test(core, test_reply_helpers);
    tcase_add_test(core, test_encode_round_trip);
    suite_add_tcase(s, core);
    tcase_set_timeout(stream, TIMEOUT_S);
    tcase_add_test(stream, test_every_split_point);
    tcase_add_test(stream, test_byte_at_a_time);
    tcase_add_test(stream, test_prefixes_are_incomplete);
    tcase_add_test(stream, test_big_array_resumes);
    suite_add_tcase(s, stream);
    tcase_set_timeout(limits, TIMEOUT_S);
    tcase_add_test(limits, test_malformed);
    tcase_add_test(limits, test_depth_limit);
    tcase_add_test(limits, test_scan_contract);
    tcase_add_test(limits, test_random_corruption);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bench_resp_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
