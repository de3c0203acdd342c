/*
 * check_bproto: unit tests of the worker <-> broker frame codec
 * (server/srv_bproto.h): the header layout, every frame type round trip,
 * body fields, a stream decoded at every split point (and every pair of
 * split points), big frames (8 and 64 MiB), the body limit, and frames
 * that must be refused (as soon as the bad byte has arrived).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_bproto.h"
#include "server/srv_buf.h"

#define TIMEOUT_S 60
#define MIB (1024 * 1024)
#define LIMIT (64 * MIB)
#define BIG_SMALL (8 * MIB)
#define BIG_LARGE (64 * MIB)
#define MAX_FRAMES 32

/* A frame as decoded, with its body copied (buffers move). */
typedef struct got_frame {
    int type, kind;
    uint64_t arg, len;
    char *body;
} got_frame;

static void got_free(got_frame *g, int n)
{
    for (int i = 0; i < n; i++)
        free(g[i].body);
}

/*
 * Decode `stream` fed in pieces ending at the given cut points (sorted,
 * within the stream), the way a reader appends to a buffer and consumes
 * whole frames. Returns the frame count (the caller frees the frames), or
 * a negative decode error (nothing to free).
 */
static int decode_cut(const char *stream, size_t len, const size_t *cuts,
                      int ncuts, got_frame *out)
{
    srv_buf b = { NULL, 0, 0 };
    size_t fed = 0;
    int n = 0, rc = 0;

    for (int piece = 0; piece <= ncuts && rc >= 0; piece++) {
        size_t upto = piece < ncuts ? cuts[piece] : len;
        ck_assert(upto >= fed);
        ck_assert_int_eq(srv_buf_append(&b, stream + fed, upto - fed), 0);
        fed = upto;
        for (;;) {
            srv_bframe f;
            size_t size = 0;
            rc = srv_bproto_decode(b.data ? b.data : "", b.len, LIMIT, &f,
                                   &size);
            if (rc == SRV_BP_MORE) {
                /* What is asked for is never less than what is there. */
                ck_assert(size > b.len);
                break;
            }
            if (rc < 0)
                break;
            ck_assert_int_lt(n, MAX_FRAMES);
            ck_assert_uint_eq(size, SRV_BP_HDR_SIZE + f.len);
            out[n].type = f.type;
            out[n].kind = f.kind;
            out[n].arg = f.arg;
            out[n].len = f.len;
            out[n].body = malloc(f.len + 1);
            memcpy(out[n].body, f.body, f.len);
            n++;
            srv_buf_consume(&b, size);
        }
    }
    if (rc >= 0)
        ck_assert_uint_eq(b.len, 0); /* nothing left over */
    else
        got_free(out, n); /* an error is all the caller gets */
    srv_buf_free(&b);
    return rc < 0 ? rc : n;
}

static void assert_same(const got_frame *a, int na, const got_frame *b, int nb)
{
    ck_assert_int_eq(na, nb);
    for (int i = 0; i < na; i++) {
        ck_assert_int_eq(a[i].type, b[i].type);
        ck_assert_int_eq(a[i].kind, b[i].kind);
        ck_assert(a[i].arg == b[i].arg);
        ck_assert(a[i].len == b[i].len);
        ck_assert(memcmp(a[i].body, b[i].body, a[i].len) == 0);
    }
}

/* A stream of one frame of each type, with awkward bytes in bodies. */
static void build_stream(srv_buf *b, int *nframes)
{
    static const char bin[] = { 'a', '\0', '\r', '\n', 'L', 'B', '\xff' };
    size_t off;

    srv_bproto_put(b, SRV_BP_HELLO, 0, 3, NULL, 0, NULL, 0);
    srv_bproto_put(b, SRV_BP_COUNT, SRV_BP_PATTERN, 7, "news.*", 6, NULL, 0);
    srv_bproto_put(b, SRV_BP_COUNT, SRV_BP_CHANNEL, 0, "", 0, NULL, 0);
    srv_bproto_put(b, SRV_BP_PUBLISH, SRV_BP_CHANNEL, 4, "news", 4, bin,
                   sizeof bin);
    srv_bproto_put(b, SRV_BP_PUBLISH, SRV_BP_SHARD, 0, NULL, 0, NULL, 0);
    off = srv_bproto_begin(b, SRV_BP_NUMSUB, SRV_BP_CHANNEL, 0);
    srv_bproto_put_field(b, "a", 1);
    srv_bproto_put_field(b, bin, sizeof bin);
    srv_bproto_put_field(b, "", 0);
    srv_bproto_end(b, off);
    srv_bproto_put(b, SRV_BP_CHANNELS, SRV_BP_CHANNEL, 1, "n*", 2, NULL, 0);
    srv_bproto_put(b, SRV_BP_CHANNELS, SRV_BP_SHARD, 0, NULL, 0, NULL, 0);
    srv_bproto_put(b, SRV_BP_NUMPAT, 0, 0, NULL, 0, NULL, 0);
    srv_bproto_put(b, SRV_BP_WELCOME, 0, 4711, NULL, 0, NULL, 0);
    srv_bproto_put(b, SRV_BP_DELIVER, SRV_BP_CHANNEL, 2, "ch", 2, "msg", 3);
    srv_bproto_put(b, SRV_BP_PUBCOUNT, 0, UINT64_MAX, NULL, 0, NULL, 0);
    off = srv_bproto_begin(b, SRV_BP_R_NUMSUB, SRV_BP_SHARD, 0);
    srv_bproto_put_field(b, "a", 1);
    srv_bproto_put_u64(b, 2);
    srv_bproto_end(b, off);
    off = srv_bproto_begin(b, SRV_BP_R_CHANNELS, SRV_BP_CHANNEL, 0);
    srv_bproto_put_field(b, "x", 1);
    srv_bproto_put_field(b, "yy", 2);
    srv_bproto_set_arg(b, off, 2);
    srv_bproto_end(b, off);
    srv_bproto_put(b, SRV_BP_R_NUMPAT, 0, 9, NULL, 0, NULL, 0);
    *nframes = 15;
}

/* ------------------------------------------------------------------ */
/* core */

START_TEST(test_header_layout)
{
    srv_buf b = { NULL, 0, 0 };
    static const unsigned char want[] = {
        'L',
        'B',
        SRV_BP_PUBLISH,
        SRV_BP_SHARD,
        0,
        0,
        0,
        0,
        0x02,
        0,
        0,
        0,
        0,
        0,
        0,
        0, /* arg 2, LE */
        0x05,
        0,
        0,
        0,
        0,
        0,
        0,
        0, /* len 5, LE */
        'c',
        'h',
        'x',
        'y',
        'z',
    };

    ck_assert_int_eq(srv_bproto_put(&b, SRV_BP_PUBLISH, SRV_BP_SHARD, 2, "ch",
                                    2, "xyz", 3),
                     0);
    ck_assert_uint_eq(b.len, sizeof want);
    ck_assert(memcmp(b.data, want, sizeof want) == 0);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_round_trip_every_type)
{
    srv_buf b = { NULL, 0, 0 };
    got_frame g[MAX_FRAMES];
    int want, n;

    build_stream(&b, &want);
    n = decode_cut(b.data, b.len, NULL, 0, g);
    ck_assert_int_eq(n, want);
    ck_assert_int_eq(g[0].type, SRV_BP_HELLO);
    ck_assert(g[0].arg == 3);
    ck_assert_int_eq(g[1].kind, SRV_BP_PATTERN);
    ck_assert(g[1].len == 6 && memcmp(g[1].body, "news.*", 6) == 0);
    ck_assert(g[3].arg == 4 && g[3].len == 4 + 7);
    ck_assert(memcmp(g[3].body, "news", 4) == 0);
    ck_assert(g[9].arg == 4711);
    ck_assert(g[11].arg == UINT64_MAX);
    ck_assert_int_eq(g[14].type, SRV_BP_R_NUMPAT);
    got_free(g, n);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_fields)
{
    srv_buf b = { NULL, 0, 0 };
    srv_bframe f;
    srv_bcursor cur;
    const char *p;
    size_t n, size;
    uint64_t v;
    size_t off = srv_bproto_begin(&b, SRV_BP_R_NUMSUB, SRV_BP_CHANNEL, 0);

    ck_assert_uint_eq(off, 0);
    srv_bproto_put_field(&b, "one", 3);
    srv_bproto_put_u64(&b, 1);
    srv_bproto_put_field(&b, "", 0);
    srv_bproto_put_u64(&b, 0x0102030405060708ull);
    srv_bproto_end(&b, off);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size), 0);
    ck_assert_uint_eq(size, b.len);
    srv_bproto_cursor(&cur, &f);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), 0);
    ck_assert(n == 3 && memcmp(p, "one", 3) == 0);
    ck_assert_int_eq(srv_bproto_get_u64(&cur, &v), 0);
    ck_assert(v == 1);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(srv_bproto_get_u64(&cur, &v), 0);
    ck_assert(v == 0x0102030405060708ull);
    /* The end: nothing more to read. */
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), -1);
    ck_assert_int_eq(srv_bproto_get_u64(&cur, &v), -1);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_field_overruns_body)
{
    srv_buf b = { NULL, 0, 0 };
    srv_bframe f;
    srv_bcursor cur;
    const char *p;
    size_t n, size;
    size_t off = srv_bproto_begin(&b, SRV_BP_R_CHANNELS, SRV_BP_CHANNEL, 1);

    srv_bproto_put_u64(&b, 10);   /* a field of 10 bytes ... */
    srv_buf_append(&b, "abc", 3); /* ... of which 3 are there */
    srv_bproto_end(&b, off);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size), 0);
    srv_bproto_cursor(&cur, &f);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), -1);
    ck_assert(cur.p == f.body); /* the cursor did not move */
    /* A length that would wrap around. */
    b.len = off;
    off = srv_bproto_begin(&b, SRV_BP_R_CHANNELS, SRV_BP_CHANNEL, 1);
    srv_bproto_put_u64(&b, UINT64_MAX);
    srv_bproto_end(&b, off);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size), 0);
    srv_bproto_cursor(&cur, &f);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), -1);
    /* Half a length. */
    b.len = off;
    off = srv_bproto_begin(&b, SRV_BP_R_NUMSUB, SRV_BP_CHANNEL, 0);
    srv_buf_append(&b, "\x01\x00\x00", 3);
    srv_bproto_end(&b, off);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size), 0);
    srv_bproto_cursor(&cur, &f);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), -1);
    srv_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* split points */

START_TEST(test_split_every_position)
{
    srv_buf b = { NULL, 0, 0 };
    got_frame ref[MAX_FRAMES], g[MAX_FRAMES];
    int nref, want;

    build_stream(&b, &want);
    nref = decode_cut(b.data, b.len, NULL, 0, ref);
    ck_assert_int_eq(nref, want);
    for (size_t cut = 0; cut <= b.len; cut++) {
        int n = decode_cut(b.data, b.len, &cut, 1, g);
        assert_same(ref, nref, g, n);
        got_free(g, n);
    }
    got_free(ref, nref);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_split_every_pair)
{
    srv_buf b = { NULL, 0, 0 };
    got_frame ref[MAX_FRAMES], g[MAX_FRAMES];
    int nref;

    /* A shorter stream: every pair of cuts is quadratic. */
    srv_bproto_put(&b, SRV_BP_COUNT, SRV_BP_CHANNEL, 2, "abc", 3, NULL, 0);
    srv_bproto_put(&b, SRV_BP_DELIVER, SRV_BP_SHARD, 1, "c", 1, "hello", 5);
    srv_bproto_put(&b, SRV_BP_PUBCOUNT, 0, 5, NULL, 0, NULL, 0);
    nref = decode_cut(b.data, b.len, NULL, 0, ref);
    ck_assert_int_eq(nref, 3);
    for (size_t i = 0; i <= b.len; i++)
        for (size_t j = i; j <= b.len; j++) {
            size_t cuts[2] = { i, j };
            int n = decode_cut(b.data, b.len, cuts, 2, g);
            assert_same(ref, nref, g, n);
            got_free(g, n);
        }
    got_free(ref, nref);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_split_one_byte_at_a_time)
{
    srv_buf b = { NULL, 0, 0 };
    got_frame ref[MAX_FRAMES], g[MAX_FRAMES];
    size_t *cuts;
    int nref, n, want;

    build_stream(&b, &want);
    nref = decode_cut(b.data, b.len, NULL, 0, ref);
    cuts = malloc(b.len * sizeof *cuts);
    for (size_t i = 0; i < b.len; i++)
        cuts[i] = i;
    n = decode_cut(b.data, b.len, cuts, (int)b.len, g);
    assert_same(ref, nref, g, n);
    got_free(g, n);
    got_free(ref, nref);
    free(cuts);
    srv_buf_free(&b);
}
END_TEST

/* With the header in, MORE tells the whole frame's size at once. */
START_TEST(test_more_tells_frame_size)
{
    srv_buf b = { NULL, 0, 0 };
    srv_bframe f;
    size_t size;

    srv_bproto_put(&b, SRV_BP_DELIVER, SRV_BP_CHANNEL, 1, "c", 1, "0123456789",
                   10);
    for (size_t have = 0; have < b.len; have++) {
        ck_assert_int_eq(srv_bproto_decode(b.data, have, LIMIT, &f, &size),
                         SRV_BP_MORE);
        ck_assert_uint_eq(size,
                          have < SRV_BP_HDR_SIZE ? SRV_BP_HDR_SIZE : b.len);
    }
    srv_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* big frames and limits */

static void big_round_trip(size_t msglen)
{
    srv_buf b = { NULL, 0, 0 };
    char *msg = malloc(msglen);
    size_t cuts[3] = { 10, SRV_BP_HDR_SIZE + 1, msglen / 2 };
    got_frame g[MAX_FRAMES];
    int n;

    for (size_t i = 0; i < msglen; i++)
        msg[i] = (char)(i * 2654435761u >> 13);
    ck_assert_int_eq(srv_bproto_put(&b, SRV_BP_PUBLISH, SRV_BP_CHANNEL, 3,
                                    "big", 3, msg, msglen),
                     0);
    srv_bproto_put(&b, SRV_BP_PUBCOUNT, 0, 1, NULL, 0, NULL, 0);
    n = decode_cut(b.data, b.len, cuts, 3, g);
    ck_assert_int_eq(n, 2);
    ck_assert(g[0].len == 3 + msglen);
    ck_assert(memcmp(g[0].body, "big", 3) == 0);
    ck_assert(memcmp(g[0].body + 3, msg, msglen) == 0);
    ck_assert_int_eq(g[1].type, SRV_BP_PUBCOUNT);
    got_free(g, n);
    free(msg);
    srv_buf_free(&b);
}

START_TEST(test_big_8mib) { big_round_trip(BIG_SMALL); }
END_TEST

START_TEST(test_big_64mib_minus_name) { big_round_trip(BIG_LARGE - 3); }
END_TEST

START_TEST(test_body_limit)
{
    srv_buf b = { NULL, 0, 0 };
    srv_bframe f;
    size_t size;
    size_t off = srv_bproto_begin(&b, SRV_BP_R_CHANNELS, SRV_BP_CHANNEL, 0);

    srv_bproto_end(&b, off);
    /* Claim a body of exactly the limit, then one byte more: only the
     * header is needed to tell. */
    b.data[16] = (char)(LIMIT & 0xff);
    b.data[17] = (char)((LIMIT >> 8) & 0xff);
    b.data[18] = (char)((LIMIT >> 16) & 0xff);
    b.data[19] = (char)((LIMIT >> 24) & 0xff);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size),
                     SRV_BP_MORE);
    ck_assert_uint_eq(size, SRV_BP_HDR_SIZE + (size_t)LIMIT);
    b.data[16] = 1;
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, LIMIT, &f, &size),
                     SRV_BP_ETOOBIG);
    /* A length near 2^64 never wraps the size. */
    memset(b.data + 16, 0xff, 8);
    ck_assert_int_eq(srv_bproto_decode(b.data, b.len, UINT64_MAX, &f, &size),
                     SRV_BP_ETOOBIG);
    srv_buf_free(&b);
}
END_TEST

START_TEST(test_max_body)
{
    ck_assert(srv_bproto_max_body(512 * MIB) ==
              2ull * 512 * MIB + SRV_BP_BODY_SLACK);
    ck_assert(srv_bproto_max_body(0) == SRV_BP_BODY_SLACK);
    ck_assert(srv_bproto_max_body(-1) == SRV_BP_BODY_SLACK);
    ck_assert(srv_bproto_max_body(0x7fffffffffffffffll) == UINT64_MAX);
}
END_TEST

/* ------------------------------------------------------------------ */
/* bad frames */

/* Decoding `bad` fails with `code` once `from` bytes are in, and never
 * earlier reports success. */
static void assert_bad(const unsigned char *bad, size_t len, size_t from,
                       int code)
{
    srv_bframe f;
    size_t size;

    for (size_t have = 1; have <= len; have++) {
        int rc = srv_bproto_decode((const char *)bad, have, LIMIT, &f, &size);
        if (have < from)
            ck_assert_int_eq(rc, SRV_BP_MORE);
        else
            ck_assert_int_eq(rc, code);
    }
}

static void header(unsigned char *h, int type, int kind, uint64_t arg,
                   uint64_t len)
{
    memset(h, 0, SRV_BP_HDR_SIZE);
    h[0] = 'L';
    h[1] = 'B';
    h[2] = (unsigned char)type;
    h[3] = (unsigned char)kind;
    for (int i = 0; i < 8; i++) {
        h[8 + i] = (unsigned char)(arg >> (8 * i));
        h[16 + i] = (unsigned char)(len >> (8 * i));
    }
}

START_TEST(test_bad_magic)
{
    unsigned char h[SRV_BP_HDR_SIZE];

    header(h, SRV_BP_HELLO, 0, 0, 0);
    h[0] = '*'; /* a RESP client by mistake */
    assert_bad(h, sizeof h, 1, SRV_BP_EMAGIC);
    header(h, SRV_BP_HELLO, 0, 0, 0);
    h[1] = 'X';
    assert_bad(h, sizeof h, 2, SRV_BP_EMAGIC);
}
END_TEST

START_TEST(test_bad_type_kind_reserved)
{
    unsigned char h[SRV_BP_HDR_SIZE];

    header(h, 0, 0, 0, 0);
    assert_bad(h, sizeof h, 3, SRV_BP_ETYPE);
    header(h, SRV_BP_NTYPES, 0, 0, 0);
    assert_bad(h, sizeof h, 3, SRV_BP_ETYPE);
    header(h, SRV_BP_COUNT, SRV_BP_NKINDS, 1, 1);
    assert_bad(h, sizeof h, 4, SRV_BP_EKIND);
    header(h, SRV_BP_PUBLISH, SRV_BP_PATTERN, 0, 0); /* no pattern PUBLISH */
    assert_bad(h, sizeof h, 4, SRV_BP_EKIND);
    header(h, SRV_BP_HELLO, SRV_BP_SHARD, 0, 0);
    assert_bad(h, sizeof h, 4, SRV_BP_EKIND);
    header(h, SRV_BP_HELLO, 0, 0, 0);
    h[6] = 1;
    assert_bad(h, sizeof h, 7, SRV_BP_ERESERVED);
}
END_TEST

START_TEST(test_bad_arguments)
{
    unsigned char h[SRV_BP_HDR_SIZE];

    header(h, SRV_BP_PUBLISH, SRV_BP_CHANNEL, 6, 5); /* channel > body */
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_DELIVER, SRV_BP_CHANNEL, 1, 0);
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_CHANNELS, SRV_BP_CHANNEL, 2, 0);
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_CHANNELS, SRV_BP_CHANNEL, 0, 3); /* body, no flag */
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_PUBCOUNT, 0, 1, 8); /* no body allowed */
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_HELLO, 0, 1, 1);
    assert_bad(h, sizeof h, SRV_BP_HDR_SIZE, SRV_BP_EARG);
    header(h, SRV_BP_PUBLISH, SRV_BP_CHANNEL, 5, 5); /* empty message: ok */
    ck_assert_int_eq(srv_bproto_decode((const char *)h, sizeof h, LIMIT,
                                       &(srv_bframe){ 0 }, &(size_t){ 0 }),
                     SRV_BP_MORE);
}
END_TEST

/* Good frames before a bad one are all decoded first, whatever the cut. */
START_TEST(test_bad_after_good_every_cut)
{
    srv_buf b = { NULL, 0, 0 };
    got_frame g[MAX_FRAMES];
    unsigned char h[SRV_BP_HDR_SIZE];

    srv_bproto_put(&b, SRV_BP_COUNT, SRV_BP_CHANNEL, 1, "a", 1, NULL, 0);
    srv_bproto_put(&b, SRV_BP_NUMPAT, 0, 0, NULL, 0, NULL, 0);
    header(h, SRV_BP_HELLO, 0, 0, 0);
    h[2] = 200;
    srv_buf_append(&b, h, sizeof h);
    for (size_t cut = 0; cut <= b.len; cut++) {
        int n = decode_cut(b.data, b.len, &cut, 1, g);
        ck_assert_int_eq(n, SRV_BP_ETYPE);
    }
    ck_assert_str_eq(srv_bproto_strerror(SRV_BP_ETYPE), "unknown frame type");
    ck_assert_str_eq(srv_bproto_strerror(SRV_BP_ETOOBIG), "frame body too big");
    srv_buf_free(&b);
}
END_TEST

static Suite *bproto_suite(void)
{
    Suite *s = suite_create("bproto");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_header_layout);
    tcase_add_test(tc, test_round_trip_every_type);
    tcase_add_test(tc, test_fields);
    tcase_add_test(tc, test_field_overruns_body);
    suite_add_tcase(s, tc);

    tc = tcase_create("split");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_split_every_position);
    tcase_add_test(tc, test_split_every_pair);
    tcase_add_test(tc, test_split_one_byte_at_a_time);
    tcase_add_test(tc, test_more_tells_frame_size);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_big_8mib);
    tcase_add_test(tc, test_big_64mib_minus_name);
    tcase_add_test(tc, test_body_limit);
    tcase_add_test(tc, test_max_body);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_bad_type_kind_reserved);
    tcase_add_test(tc, test_bad_arguments);
    tcase_add_test(tc, test_bad_after_good_every_cut);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bproto_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
