/*
 * check_rdb_obj: unit tests of RDB objects and their compact blobs
 * (rdb/rdb_pack.h, rdb/rdb_obj.h): DUMP payloads made by redis-server
 * 7.0.15 for every type decode to their values, and larder's encoder
 * gives Redis's exact bytes for the same values in the same order;
 * hand-built ziplist, zipmap and quicklist (v1) objects of older Redis
 * versions decode; the plain encodings past the compact limits; duplicate
 * and NaN refusals; empty collections; listpack integer and back-length
 * edges; corrupt blobs refused and random mutations of valid payloads
 * never read out of bounds; the DUMP trailer's version and checksum.
 */
#include "rdb/rdb_crc64.h"
#include "rdb/rdb_err.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"
#include "rdb/rdb_pack.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 60
#define MAX_STRING (64u << 20)
#define LOG_MAX (1u << 20)
#define MUTATIONS 20000

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

/* A sink that writes what it is given as text: "S:x", "L[a,b]" ... */
typedef struct rec {
    char log[LOG_MAX];
    size_t len;
    int refuse_at; /* refuse the n-th element (1-based); 0 never */
    int seen;
} rec;

static void out(rec *r, const char *fmt, const void *p, size_t n)
{
    r->len += (size_t)snprintf(r->log + r->len, LOG_MAX - r->len, fmt, (int)n,
                               (const char *)p);
}

static int r_string(void *ctx, const uint8_t *p, size_t n)
{
    out(ctx, "S:%.*s", p, n);
    return 0;
}

static int r_begin(void *ctx, int kind, uint64_t hint)
{
    static const char k[] = "SLSZH";
    rec *r = ctx;

    r->len += (size_t)snprintf(r->log + r->len, LOG_MAX - r->len, "%c%llu[",
                               k[kind], (unsigned long long)hint);
    return 0;
}

static int r_elem(void *ctx, const uint8_t *p, size_t n)
{
    rec *r = ctx;

    if (++r->seen == r->refuse_at)
        return 1;
    out(r, "%.*s,", p, n);
    return 0;
}

static int r_pair(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                  size_t vn)
{
    rec *r = ctx;

    if (++r->seen == r->refuse_at)
        return 1;
    out(r, "%.*s=", f, fn);
    out(r, "%.*s,", v, vn);
    return 0;
}

static int r_scored(void *ctx, const uint8_t *m, size_t mn, double score)
{
    rec *r = ctx;

    if (++r->seen == r->refuse_at)
        return 1;
    out(r, "%.*s", m, mn);
    r->len += (size_t)snprintf(r->log + r->len, LOG_MAX - r->len, "@%.17g,",
                               score);
    return 0;
}

static int r_end(void *ctx)
{
    out(ctx, "%.*s]", "", 0);
    return 0;
}

static rec *rec_new(void) { return calloc(1, sizeof(rec)); }

static const rdb_sink *sink_of(rec *r)
{
    static rdb_sink s = { .string = r_string,
                          .begin = r_begin,
                          .elem = r_elem,
                          .pair = r_pair,
                          .scored = r_scored,
                          .end = r_end };
    s.ctx = r;
    return &s;
}

/* Decode a DUMP payload without checking its trailer. */
static int decode_raw(const uint8_t *p, size_t n, rec *r)
{
    rdb_reader rd;
    rdb_scratch sc = { 0 };
    int rc;

    if (n < 1 + RDB_DUMP_TRAILER)
        return RDB_ETRUNC;
    rdb_reader_mem(&rd, p + 1, n - 1 - RDB_DUMP_TRAILER, MAX_STRING);
    rc = rdb_obj_decode(&rd, p[0], sink_of(r), &sc);
    rdb_scratch_free(&sc);
    return rc;
}

/* Decode a whole DUMP payload, its trailer checked first. */
static int decode_dump(const uint8_t *p, size_t n, rec *r)
{
    int rc = rdb_dump_verify(p, n);

    return rc ? rc : decode_raw(p, n, r);
}

/* DUMP payloads by redis-server 7.0.15 and what they hold. */
static const struct {
    const char *name, *hex, *log;
} redis_dumps[] = {
    { "int", "00c139300a009d94ea2793fc08b9", "S:12345" },
    { "neg", "00c0f90a005e26d130d7a242ab", "S:-7" },
    { "big", "000c3132333435363738393031320a00911001b1d116e7ac",
      "S:123456789012" },
    { "list",
      "1201021c1c000000050081610201018568656c6c6f06f178ec03f270110104ff0a00"
      "cdc03fd17ba9c085",
      "L0[a,1,hello,-5000,70000,]" },
    { "intset",
      "0b18040000000400000090eefeff01000000020000002c0100000a0004e89c076cd6"
      "58d5",
      "S4[-70000,1,2,300,]" },
    { "set", "0202016201610a0075d99d835ef85f65", "S2[b,a,]" },
    { "zset",
      "111a1a0000000600816302dffd02816102010181620283322e3504ff0a00a68a1ab1"
      "a9f2dcc2",
      "Z3[c@-3,a@1,b@2.5,]" },
    { "hash",
      "10151500000004008266310382763103826632037b01ff0a004ac585b69f9c1e83",
      "H2[f1=v1,f2=123,]" },
};

START_TEST(test_redis_dumps_decode)
{
    for (size_t i = 0; i < sizeof redis_dumps / sizeof redis_dumps[0]; i++) {
        size_t n;
        uint8_t *p = hex(redis_dumps[i].hex, &n);
        rec *r = rec_new();
        ck_assert_msg(decode_dump(p, n, r) == 0, "%s", redis_dumps[i].name);
        ck_assert_str_eq(r->log, redis_dumps[i].log);
        free(r);
        free(p);
    }
}
END_TEST

/* Encode the values of a log like the table's and compare bytes. */
static void check_encodes_to(int kind, const char *const *el, size_t n,
                             const char *want_hex)
{
    rdb_writer w;
    rdb_enc e;
    size_t wn;
    uint8_t *want = hex(want_hex, &wn);

    rdb_writer_mem(&w, 1);
    rdb_enc_init(&e);
    if (kind == RDB_KIND_STRING) {
        ck_assert_int_eq(rdb_enc_string(&w, NULL, 0, el[0], strlen(el[0])), 0);
    } else {
        size_t step = kind == RDB_KIND_HASH || kind == RDB_KIND_ZSET ? 2 : 1;
        ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, kind,
                                       n / step, NULL, 0),
                         0);
        for (size_t i = 0; i < n; i += step) {
            if (kind == RDB_KIND_HASH)
                ck_assert_int_eq(rdb_enc_pair(&e, el[i], strlen(el[i]),
                                              el[i + 1], strlen(el[i + 1])),
                                 0);
            else if (kind == RDB_KIND_ZSET)
                ck_assert_int_eq(rdb_enc_scored(&e, el[i], strlen(el[i]),
                                                strtod(el[i + 1], NULL)),
                                 0);
            else
                ck_assert_int_eq(rdb_enc_elem(&e, el[i], strlen(el[i])), 0);
        }
        ck_assert_int_eq(rdb_enc_end(&e), 0);
    }
    ck_assert_int_eq(rdb_dump_finish(&w), 0);
    ck_assert_uint_eq(w.buf.len, wn);
    ck_assert_int_eq(memcmp(w.buf.data, want, wn), 0);
    rdb_enc_fini(&e);
    rdb_writer_fini(&w);
    free(want);
}

START_TEST(test_encoder_matches_redis)
{
    static const char *const s1[] = { "12345" }, *const s2[] = { "-7" },
                             *const s3[] = { "123456789012" };
    static const char *const l[] = { "a", "1", "hello", "-5000", "70000" };
    static const char *const is[] = { "300", "1", "-70000", "2" };
    static const char *const st[] = { "b", "a", "c" };
    static const char *const z[] = { "c", "-3", "a", "1", "b", "2.5" };
    static const char *const h[] = { "f1", "v1", "f2", "123" };

    check_encodes_to(RDB_KIND_STRING, s1, 1, redis_dumps[0].hex);
    check_encodes_to(RDB_KIND_STRING, s2, 1, redis_dumps[1].hex);
    check_encodes_to(RDB_KIND_STRING, s3, 1, redis_dumps[2].hex);
    check_encodes_to(RDB_KIND_LIST, l, 5, redis_dumps[3].hex);
    check_encodes_to(RDB_KIND_SET, is, 4, redis_dumps[4].hex);
    check_encodes_to(RDB_KIND_SET, st, 2, redis_dumps[5].hex);
    check_encodes_to(RDB_KIND_ZSET, z, 6, redis_dumps[6].hex);
    check_encodes_to(RDB_KIND_HASH, h, 4, redis_dumps[7].hex);
    (void)st;
}
END_TEST

/* Round trip n elements of each kind through the encoder and decoder. */
static void round_trip(int kind, size_t n, size_t elen, const char *want_type)
{
    rdb_writer w;
    rdb_enc e;
    rec *want = rec_new(), *got = rec_new();
    char *s = malloc(elen + 32);
    static const char k[] = "SLSZH";

    rdb_writer_mem(&w, 1);
    rdb_enc_init(&e);
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, kind, n, NULL,
                                   0),
                     0);
    want->len = (size_t)snprintf(want->log, LOG_MAX, "%c%zu[", k[kind],
                                 kind == RDB_KIND_LIST ? (size_t)0 : n);
    for (size_t i = 0; i < n; i++) {
        size_t sl = (size_t)snprintf(s, elen + 32, "%zu", i);
        while (sl < elen)
            s[sl++] = 'x';
        s[sl] = '\0';
        if (kind == RDB_KIND_HASH) {
            ck_assert_int_eq(rdb_enc_pair(&e, s, sl, "v", 1), 0);
            out(want, "%.*s=v,", s, sl);
        } else if (kind == RDB_KIND_ZSET) {
            ck_assert_int_eq(rdb_enc_scored(&e, s, sl, (double)i / 4), 0);
            out(want, "%.*s", s, sl);
            want->len += (size_t)snprintf(want->log + want->len,
                                          LOG_MAX - want->len, "@%.17g,",
                                          (double)i / 4);
        } else {
            ck_assert_int_eq(rdb_enc_elem(&e, s, sl), 0);
            out(want, "%.*s,", s, sl);
        }
    }
    ck_assert_int_eq(rdb_enc_end(&e), 0);
    out(want, "%.*s]", "", 0);
    ck_assert_int_eq(w.buf.data[0], want_type[0]);
    ck_assert_int_eq(rdb_dump_finish(&w), 0);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, got), 0);
    /* Sets from an intset come back sorted, and a small sorted set in
     * the plain form highest first: compare lengths then. */
    if (!(kind == RDB_KIND_SET && w.buf.data[0] == RDB_TYPE_SET_INTSET) &&
        !(kind == RDB_KIND_ZSET && w.buf.data[0] == RDB_TYPE_ZSET_2))
        ck_assert_str_eq(got->log, want->log);
    else
        ck_assert_uint_eq(got->len, want->len);
    rdb_enc_fini(&e);
    rdb_writer_fini(&w);
    free(want);
    free(got);
    free(s);
}

START_TEST(test_round_trips_small_and_large)
{
    round_trip(RDB_KIND_LIST, 5, 0, "\x12");
    round_trip(RDB_KIND_LIST, 100000, 3, "\x12"); /* many nodes */
    round_trip(RDB_KIND_LIST, 3, 20000, "\x12");  /* one per node */
    round_trip(RDB_KIND_SET, 512, 0, "\x0b");     /* intset limit */
    round_trip(RDB_KIND_SET, 513, 0, "\x02");
    round_trip(RDB_KIND_SET, 10, 2, "\x02"); /* not integers */
    round_trip(RDB_KIND_HASH, 512, 0, "\x10");
    round_trip(RDB_KIND_HASH, 513, 0, "\x04");
    round_trip(RDB_KIND_HASH, 3, 64, "\x10");
    round_trip(RDB_KIND_HASH, 3, 65, "\x04"); /* value limit */
    round_trip(RDB_KIND_ZSET, 128, 0, "\x11");
    round_trip(RDB_KIND_ZSET, 129, 0, "\x05");
    round_trip(RDB_KIND_ZSET, 5, 65, "\x05");
    round_trip(RDB_KIND_ZSET, 50000, 10, "\x05");
}
END_TEST

START_TEST(test_switch_mid_way)
{
    /* A set that stops being all-integer, a hash whose third value is
     * too long: the plain encoding keeps every element. */
    rdb_writer w;
    rdb_enc e;
    rec *r = rec_new();
    char big[100];

    memset(big, 'y', sizeof big);
    rdb_writer_mem(&w, 1);
    rdb_enc_init(&e);
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_SET, 3,
                                   NULL, 0),
                     0);
    rdb_enc_elem(&e, "5", 1);
    rdb_enc_elem(&e, "-6", 2);
    rdb_enc_elem(&e, "x", 1);
    ck_assert_int_eq(rdb_enc_end(&e), 0);
    rdb_dump_finish(&w);
    ck_assert_int_eq(w.buf.data[0], RDB_TYPE_SET);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "S3[5,-6,x,]");

    w.buf.len = 0;
    r->len = 0;
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_HASH,
                                   3, NULL, 0),
                     0);
    rdb_enc_pair(&e, "a", 1, "1", 1);
    rdb_enc_pair(&e, "b", 1, "-2", 2);
    rdb_enc_pair(&e, "c", 1, big, sizeof big);
    ck_assert_int_eq(rdb_enc_end(&e), 0);
    rdb_dump_finish(&w);
    ck_assert_int_eq(w.buf.data[0], RDB_TYPE_HASH);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert(strncmp(r->log, "H3[a=1,b=-2,c=yyy", 17) == 0);

    w.buf.len = 0;
    r->len = 0;
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_ZSET,
                                   2, NULL, 0),
                     0);
    rdb_enc_scored(&e, "a", 1, 0.1);
    rdb_enc_scored(&e, big, sizeof big, 1e300);
    ck_assert_int_eq(rdb_enc_end(&e), 0);
    rdb_dump_finish(&w);
    ck_assert_int_eq(w.buf.data[0], RDB_TYPE_ZSET_2);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    /* Highest score first, as Redis writes the plain form. */
    ck_assert(strncmp(r->log, "Z2[yyy", 6) == 0);
    ck_assert(
        strstr(r->log, "@1.0000000000000001e+300,a@0.10000000000000001,]") !=
        NULL);
    /* Wrong element counts are the caller's bug, reported. */
    w.buf.len = 0;
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_LIST,
                                   2, NULL, 0),
                     0);
    rdb_enc_elem(&e, "a", 1);
    ck_assert_int_eq(rdb_enc_end(&e), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_LIST,
                                   0, NULL, 0),
                     RDB_EEMPTY);
    rdb_enc_fini(&e);
    rdb_writer_fini(&w);
    free(r);
}
END_TEST

START_TEST(test_scores)
{
    /* Scores through a listpack: integers, fractions, infinities, -0. */
    static const double v[] = { 0.0,
                                -0.0,
                                1.0,
                                -1.0,
                                0.1,
                                1e-300,
                                1e300,
                                INFINITY,
                                -INFINITY,
                                4503599627370495.0,
                                4503599627370496.0,
                                -4503599627370496.0,
                                9007199254740993.0,
                                3.141592653589793 };
    rdb_writer w;
    rdb_enc e;
    size_t n = sizeof v / sizeof v[0];
    double sorted[sizeof v / sizeof v[0]];

    memcpy(sorted, v, sizeof v);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (sorted[j] < sorted[i]) {
                double t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    rdb_writer_mem(&w, 1);
    rdb_enc_init(&e);
    ck_assert_int_eq(rdb_enc_begin(&e, &w, &rdb_limits_default, RDB_KIND_ZSET,
                                   n, NULL, 0),
                     0);
    for (size_t i = 0; i < n; i++) {
        char m[8];
        snprintf(m, sizeof m, "m%zu", i);
        rdb_enc_scored(&e, m, strlen(m), sorted[i]);
    }
    ck_assert_int_eq(rdb_enc_end(&e), 0);
    ck_assert_int_eq(w.buf.data[0], RDB_TYPE_ZSET_LISTPACK);
    rdb_dump_finish(&w);
    rec *r = rec_new();
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    char *p = r->log;
    for (size_t i = 0; i < n; i++) {
        char *at = strchr(p, '@');
        ck_assert_ptr_nonnull(at);
        double d = strtod(at + 1, &p);
        ck_assert(d == sorted[i]);
        ck_assert_int_eq(signbit(d), signbit(sorted[i]));
    }
    free(r);
    rdb_enc_fini(&e);
    rdb_writer_fini(&w);
}
END_TEST

/* Builders of old-format blobs, from the format description. */
static void zl_entry(rdb_buf *b, size_t *prev, const char *s, int is_int,
                     int64_t v)
{
    uint8_t e[16];
    size_t n = 0, len;

    if (*prev < 254) {
        e[n++] = (uint8_t)*prev;
    } else {
        e[n++] = 0xfe;
        for (int i = 0; i < 4; i++)
            e[n++] = (uint8_t)(*prev >> (8 * i));
    }
    if (is_int) {
        if (v >= 0 && v <= 12) {
            e[n++] = (uint8_t)(0xf1 + v);
        } else if (v >= -128 && v <= 127) {
            e[n++] = 0xfe;
            e[n++] = (uint8_t)v;
        } else if (v >= INT16_MIN && v <= INT16_MAX) {
            e[n++] = 0xc0;
            e[n++] = (uint8_t)v;
            e[n++] = (uint8_t)(v >> 8);
        } else if (v >= -8388608 && v <= 8388607) {
            e[n++] = 0xf0;
            for (int i = 0; i < 3; i++)
                e[n++] = (uint8_t)((uint64_t)v >> (8 * i));
        } else if (v >= INT32_MIN && v <= INT32_MAX) {
            e[n++] = 0xd0;
            for (int i = 0; i < 4; i++)
                e[n++] = (uint8_t)((uint64_t)v >> (8 * i));
        } else {
            e[n++] = 0xe0;
            for (int i = 0; i < 8; i++)
                e[n++] = (uint8_t)((uint64_t)v >> (8 * i));
        }
        rdb_buf_append(b, e, n);
        *prev = n;
        return;
    }
    len = strlen(s);
    if (len < 64) {
        e[n++] = (uint8_t)len;
    } else if (len < 16384) {
        e[n++] = (uint8_t)(0x40 | (len >> 8));
        e[n++] = (uint8_t)len;
    } else {
        e[n++] = 0x80;
        for (int i = 3; i >= 0; i--)
            e[n++] = (uint8_t)(len >> (8 * i));
    }
    rdb_buf_append(b, e, n);
    rdb_buf_append(b, s, len);
    *prev = n + len;
}

static void zl_finish(rdb_buf *b, size_t last_off, unsigned count)
{
    uint8_t end = 0xff;

    rdb_buf_append(b, &end, 1);
    for (int i = 0; i < 4; i++) {
        b->data[i] = (uint8_t)(b->len >> (8 * i));
        b->data[4 + i] = (uint8_t)(last_off >> (8 * i));
    }
    b->data[8] = (uint8_t)count;
    b->data[9] = (uint8_t)(count >> 8);
}

/* A DUMP payload of `type` holding the string `blob`. */
static void blob_payload(rdb_writer *w, int type, const rdb_buf *blob)
{
    w->buf.len = 0;
    rdb_put_u8(w, (uint8_t)type);
    rdb_put_blob(w, blob->data, blob->len);
    rdb_dump_finish(w);
}

START_TEST(test_ziplist_objects)
{
    rdb_buf b = { 0 };
    rdb_writer w;
    size_t prev = 0, last = 0;
    char longs[300];
    rec *r = rec_new();

    memset(longs, 'q', sizeof longs - 1);
    longs[sizeof longs - 1] = '\0';
    rdb_writer_mem(&w, 1);
    /* A list ziplist with every integer width and a long string. */
    rdb_buf_reserve(&b, 10);
    b.len = 10;
    static const int64_t ints[] = { 0,        12,          13,
                                    -1,       200,         -30000,
                                    8000000,  -2000000000, 5000000000ll,
                                    INT64_MIN };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        last = b.len;
        zl_entry(&b, &prev, NULL, 1, ints[i]);
    }
    last = b.len;
    zl_entry(&b, &prev, longs, 0, 0); /* a 5-byte prevlen follows */
    last = b.len;
    zl_entry(&b, &prev, "end", 0, 0);
    zl_finish(&b, last, 12);
    blob_payload(&w, RDB_TYPE_LIST_ZIPLIST, &b);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    char want[1024];
    snprintf(want, sizeof want,
             "L12[0,12,13,-1,200,-30000,8000000,-2000000000,5000000000,"
             "-9223372036854775808,%s,end,]",
             longs);
    ck_assert_str_eq(r->log, want);

    /* A hash ziplist and a zset ziplist (scores as ints and strings). */
    b.len = 10;
    prev = 0;
    zl_entry(&b, &prev, "f", 0, 0);
    zl_entry(&b, &prev, "v", 0, 0);
    zl_entry(&b, &prev, "n", 0, 0);
    last = b.len;
    zl_entry(&b, &prev, NULL, 1, 7);
    zl_finish(&b, last, 4);
    blob_payload(&w, RDB_TYPE_HASH_ZIPLIST, &b);
    r->len = 0;
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "H2[f=v,n=7,]");
    blob_payload(&w, RDB_TYPE_ZSET_ZIPLIST, &b);
    r->len = 0;
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ECORRUPT);
    b.len = 10;
    prev = 0;
    zl_entry(&b, &prev, "a", 0, 0);
    zl_entry(&b, &prev, NULL, 1, -3);
    zl_entry(&b, &prev, "b", 0, 0);
    last = b.len;
    zl_entry(&b, &prev, "2.5", 0, 0);
    zl_finish(&b, last, 4);
    blob_payload(&w, RDB_TYPE_ZSET_ZIPLIST, &b);
    r->len = 0;
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "Z2[a@-3,b@2.5,]");

    /* Quicklist v1: nodes of ziplists (an empty node is skipped). */
    rdb_buf one = { 0 }, empty = { 0 };
    rdb_buf_reserve(&one, 10);
    one.len = 10;
    prev = 0;
    zl_entry(&one, &prev, "x", 0, 0);
    zl_finish(&one, 10, 1);
    rdb_buf_reserve(&empty, 10);
    empty.len = 10;
    zl_finish(&empty, 0, 0);
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_LIST_QUICKLIST);
    rdb_put_len(&w, 3);
    rdb_put_blob(&w, one.data, one.len);
    rdb_put_blob(&w, empty.data, empty.len);
    rdb_put_blob(&w, one.data, one.len);
    rdb_dump_finish(&w);
    r->len = 0;
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "L0[x,x,]");
    /* Only empty nodes: an empty key. */
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_LIST_QUICKLIST);
    rdb_put_len(&w, 1);
    rdb_put_blob(&w, empty.data, empty.len);
    rdb_dump_finish(&w);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_EEMPTY);
    /* A wrong prevlen is corrupt. */
    one.data[10] = 5;
    blob_payload(&w, RDB_TYPE_LIST_ZIPLIST, &one);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ECORRUPT);
    rdb_buf_free(&one);
    rdb_buf_free(&empty);
    rdb_buf_free(&b);
    rdb_writer_fini(&w);
    free(r);
}
END_TEST

START_TEST(test_zipmap_object)
{
    /* zmlen, then <len>key<len><free>value<free bytes>, 0xff. */
    static const uint8_t zm[] = { 2, 1,   'a', 2,   1, 'v', 'w', 0,
                                  3, 'b', 'c', 'd', 0, 0,   0xff };
    rdb_buf b = { 0 };
    rdb_writer w;
    rec *r = rec_new();

    rdb_buf_append(&b, zm, sizeof zm);
    rdb_writer_mem(&w, 1);
    blob_payload(&w, RDB_TYPE_HASH_ZIPMAP, &b);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "H0[a=vw,bcd=,]");
    /* A free count running past the end. */
    b.data[4] = 9;
    blob_payload(&w, RDB_TYPE_HASH_ZIPMAP, &b);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ECORRUPT);
    rdb_buf_free(&b);
    rdb_writer_fini(&w);
    free(r);
}
END_TEST

START_TEST(test_plain_objects_and_refusals)
{
    rdb_writer w;
    rec *r = rec_new();

    rdb_writer_mem(&w, 1);
    /* Old text-score zset; a NaN score is refused. */
    rdb_put_u8(&w, RDB_TYPE_ZSET);
    rdb_put_len(&w, 2);
    rdb_put_string(&w, "m", 1);
    rdb_put_u8(&w, 3);
    rdb_put(&w, "0.5", 3);
    rdb_put_string(&w, "n", 1);
    rdb_put_u8(&w, RDB_DOUBLE_NEGINF);
    rdb_dump_finish(&w);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), 0);
    ck_assert_str_eq(r->log, "Z2[m@0.5,n@-inf,]");
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_ZSET_2);
    rdb_put_len(&w, 1);
    rdb_put_string(&w, "m", 1);
    rdb_put_double_bin(&w, NAN);
    rdb_dump_finish(&w);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ECORRUPT);
    /* Empty plain collections. */
    static const int empties[] = { RDB_TYPE_LIST, RDB_TYPE_SET, RDB_TYPE_ZSET,
                                   RDB_TYPE_ZSET_2, RDB_TYPE_HASH };
    for (size_t i = 0; i < 5; i++) {
        w.buf.len = 0;
        rdb_put_u8(&w, (uint8_t)empties[i]);
        rdb_put_len(&w, 0);
        rdb_dump_finish(&w);
        ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_EEMPTY);
    }
    /* A sink's refusal stops the decode. */
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_LIST);
    rdb_put_len(&w, 3);
    rdb_put_string(&w, "a", 1);
    rdb_put_string(&w, "b", 1);
    rdb_put_string(&w, "c", 1);
    rdb_dump_finish(&w);
    r->len = 0;
    r->seen = 0;
    r->refuse_at = 2;
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ESINK);
    ck_assert_str_eq(r->log, "L3[a,");
    /* More elements announced than present. */
    w.buf.len = 0;
    rdb_put_u8(&w, RDB_TYPE_HASH);
    rdb_put_len(&w, 2);
    rdb_put_string(&w, "a", 1);
    rdb_put_string(&w, "b", 1);
    rdb_dump_finish(&w);
    ck_assert_int_eq(decode_dump(w.buf.data, w.buf.len, r), RDB_ETRUNC);
    /* Streams and modules: not supported, named. */
    const char *what;
    ck_assert_int_eq(rdb_obj_kind(RDB_TYPE_STREAM_LISTPACKS_2, &what),
                     RDB_EUNSUPPORTED);
    ck_assert_str_eq(what, "stream");
    ck_assert_int_eq(rdb_obj_kind(RDB_TYPE_MODULE_2, &what), RDB_EUNSUPPORTED);
    ck_assert_int_eq(rdb_obj_kind(8, &what), RDB_ECORRUPT);
    ck_assert_int_eq(rdb_obj_kind(22, &what), RDB_ECORRUPT);
    rdb_writer_fini(&w);
    free(r);
}
END_TEST

START_TEST(test_listpack_edges)
{
    /* Integers at every encoding boundary, strings at every length
     * boundary (back lengths of 1, 2 and 3 bytes): build and walk. */
    static const int64_t ints[] = { 0,
                                    127,
                                    128,
                                    -1,
                                    -4096,
                                    4095,
                                    4096,
                                    -4097,
                                    32767,
                                    -32768,
                                    32768,
                                    8388607,
                                    -8388608,
                                    8388608,
                                    INT32_MAX,
                                    INT32_MIN,
                                    (int64_t)INT32_MAX + 1,
                                    INT64_MAX,
                                    INT64_MIN };
    static const size_t lens[] = { 0,    63,   64,    120,   124,   125,
                                   4095, 4096, 16376, 16377, 16378, 70000 };
    rdb_buf b = { 0 };
    rdb_lp lp;
    rdb_pack_iter it;
    rdb_pack_item item;
    char *s = malloc(70001);

    memset(s, 'z', 70000);
    ck_assert_int_eq(rdb_lp_begin(&lp, &b), 0);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        rdb_lp_add_int(&lp, ints[i]);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t before = b.len;
        rdb_lp_add(&lp, s, lens[i]);
        ck_assert_uint_eq(b.len - before, rdb_lp_entry_size(s, lens[i]));
    }
    ck_assert_int_eq(rdb_lp_end(&lp), 0);
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_LISTPACK, b.data, b.len), 0);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        ck_assert_int_eq(rdb_pack_next(&it, &item), 1);
        ck_assert(item.is_int);
        ck_assert(item.v == ints[i]);
    }
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        ck_assert_int_eq(rdb_pack_next(&it, &item), 1);
        ck_assert(!item.is_int);
        ck_assert_uint_eq(item.len, lens[i]);
    }
    ck_assert_int_eq(rdb_pack_next(&it, &item), 0);
    /* A wrong announced count, a broken back length, no terminator. */
    b.data[4]++;
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_LISTPACK, b.data, b.len), 0);
    int rc;
    while ((rc = rdb_pack_next(&it, &item)) == 1)
        ;
    ck_assert_int_eq(rc, RDB_ECORRUPT);
    b.data[4]--;
    b.data[RDB_LP_HEADER + 1] ^= 0x40; /* backlen of the first entry */
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_LISTPACK, b.data, b.len), 0);
    ck_assert_int_eq(rdb_pack_next(&it, &item), RDB_ECORRUPT);
    b.data[b.len - 1] = 0;
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_LISTPACK, b.data, b.len),
                     RDB_ECORRUPT);
    /* Intsets: widths and a size that disagrees with the count. */
    int64_t v[] = { -5, 3, 70000 };
    b.len = 0;
    rdb_intset_build(&b, v, 3);
    ck_assert_int_eq(b.data[0], 4);
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_INTSET, b.data, b.len), 0);
    b.data[4] = 4;
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_INTSET, b.data, b.len),
                     RDB_ECORRUPT);
    b.data[4] = 3;
    b.data[0] = 3;
    ck_assert_int_eq(rdb_pack_open(&it, RDB_PACK_INTSET, b.data, b.len),
                     RDB_ECORRUPT);
    rdb_buf_free(&b);
    free(s);
}
END_TEST

START_TEST(test_mutations_stay_in_bounds)
{
    /* Flip, truncate and overwrite bytes of valid payloads: the decoder
     * must answer 0 or an error, never crash (decode_raw skips the
     * trailer check so every mutation reaches the decoder). */
    uint64_t x = 2463534242ull;

    for (size_t d = 0; d < sizeof redis_dumps / sizeof redis_dumps[0]; d++) {
        size_t n;
        uint8_t *orig = hex(redis_dumps[d].hex, &n), *p = malloc(n);
        for (int m = 0; m < MUTATIONS / 8; m++) {
            memcpy(p, orig, n);
            memset(p + n - 8, 0, 8);
            for (int k = 0; k < 1 + m % 3; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                size_t at = (size_t)(x % (n - RDB_DUMP_TRAILER));
                p[at] = (uint8_t)(x >> 32);
            }
            size_t len = m % 5 == 0 ? n - (size_t)(x % 4) : n;
            rec *r = rec_new();
            int rc = decode_raw(p, len, r);
            ck_assert(rc == 0 || rc < 0);
            free(r);
        }
        free(p);
        free(orig);
    }
}
END_TEST

START_TEST(test_dump_trailer)
{
    size_t n;
    uint8_t *p = hex(redis_dumps[0].hex, &n);

    ck_assert_int_eq(rdb_dump_verify(p, n), 0);
    p[1] ^= 1;
    ck_assert_int_eq(rdb_dump_verify(p, n), RDB_ECHECKSUM);
    p[1] ^= 1;
    p[n - 10] = 11; /* Redis 7.2's version */
    ck_assert_int_eq(rdb_dump_verify(p, n), RDB_EVERSION);
    p[n - 10] = 9; /* older: accepted */
    uint64_t crc = rdb_crc64(0, p, n - 8);
    for (int i = 0; i < 8; i++)
        p[n - 8 + (size_t)i] = (uint8_t)(crc >> (8 * i));
    ck_assert_int_eq(rdb_dump_verify(p, n), 0);
    memset(p + n - 8, 0, 8); /* a zero CRC is checked too (7.0) */
    ck_assert_int_eq(rdb_dump_verify(p, n), RDB_ECHECKSUM);
    ck_assert_int_eq(rdb_dump_verify(p, 9), RDB_ETRUNC);
    free(p);
}
END_TEST

static Suite *rdb_obj_suite(void)
{
    Suite *s = suite_create("rdb_obj");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_redis_dumps_decode);
    tcase_add_test(tc, test_encoder_matches_redis);
    tcase_add_test(tc, test_round_trips_small_and_large);
    tcase_add_test(tc, test_switch_mid_way);
    tcase_add_test(tc, test_scores);
    tcase_add_test(tc, test_ziplist_objects);
    tcase_add_test(tc, test_zipmap_object);
    tcase_add_test(tc, test_plain_objects_and_refusals);
    tcase_add_test(tc, test_listpack_edges);
    tcase_add_test(tc, test_dump_trailer);
    suite_add_tcase(s, tc);
    tc = tcase_create("robustness");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_mutations_stay_in_bounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rdb_obj_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
