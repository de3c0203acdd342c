/*
 * check_rdb_file: unit tests of whole RDB files (rdb/rdb_file.h): a file
 * written with several databases, expiry times, auxiliary fields and
 * every kind reads back key by key through memory and file-descriptor
 * readers; an RDB saved by redis-server 7.0.15 reads; and the failures
 * name their offset and reason: truncation anywhere, a bad checksum, a
 * bad type byte, a bad version or signature, streams (naming the key),
 * functions and module data; a zero checksum means none.
 */
#include "rdb/rdb_err.h"
#include "rdb/rdb_file.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TIMEOUT_S 60
#define MAX_STRING (64u << 20)
#define LOG_MAX (1u << 16)

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

typedef struct log {
    char s[LOG_MAX];
    size_t n;
    int empties;
} log_t;

static void add(log_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add(log_t *l, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    l->n += (size_t)vsnprintf(l->s + l->n, LOG_MAX - l->n, fmt, ap);
    va_end(ap);
}

static int l_string(void *ctx, const uint8_t *p, size_t n)
{
    add(ctx, "=%.*s;", (int)n, (const char *)p);
    return 0;
}
static int l_elem(void *ctx, const uint8_t *p, size_t n)
{
    add(ctx, "%.*s,", (int)n, (const char *)p);
    return 0;
}
static int l_pair(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                  size_t vn)
{
    add(ctx, "%.*s:%.*s,", (int)fn, (const char *)f, (int)vn, (const char *)v);
    return 0;
}
static int l_scored(void *ctx, const uint8_t *m, size_t mn, double s)
{
    add(ctx, "%.*s@%g,", (int)mn, (const char *)m, s);
    return 0;
}
static int l_end(void *ctx)
{
    add(ctx, ";");
    return 0;
}

static rdb_sink obj_sink = { .string = l_string,
                             .elem = l_elem,
                             .pair = l_pair,
                             .scored = l_scored,
                             .end = l_end };

static int f_aux(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v,
                 size_t vn)
{
    if ((kn == 5 && memcmp(k, "ctime", 5) == 0) ||
        (kn == 8 && memcmp(k, "used-mem", 8) == 0))
        return 0; /* change with every save */
    add(ctx, "aux %.*s=%.*s;", (int)kn, (const char *)k, (int)vn,
        (const char *)v);
    return 0;
}
static int f_select(void *ctx, uint64_t db)
{
    add(ctx, "db %llu;", (unsigned long long)db);
    return 0;
}
static int f_key(void *ctx, uint64_t db, const uint8_t *name, size_t n,
                 int type, int64_t expire, const rdb_sink **obj)
{
    add(ctx, "key %.*s t%d e%lld ", (int)n, (const char *)name, type,
        (long long)expire);
    obj_sink.ctx = ctx;
    *obj = &obj_sink;
    return 0;
}
static int f_done(void *ctx, int rc)
{
    if (rc == RDB_EEMPTY)
        ((log_t *)ctx)->empties++;
    return 0;
}

static int read_all(rdb_reader *r, log_t *l, int *version)
{
    rdb_file_sink s = { .ctx = l,
                        .aux = f_aux,
                        .select_db = f_select,
                        .key = f_key,
                        .key_done = f_done };
    rdb_scratch sc = { 0 };
    rdb_buf kb = { 0 };
    int rc = rdb_file_read(r, &s, &sc, &kb, version);

    rdb_scratch_free(&sc);
    rdb_buf_free(&kb);
    return rc;
}

/* A file with two databases, every kind, expiry times. */
static void sample(rdb_writer *w)
{
    rdb_enc e;

    rdb_enc_init(&e);
    rdb_file_write_header(w);
    rdb_file_write_aux(w, "redis-ver", "7.0.15");
    rdb_file_write_select(w, 0, 3, 1);
    rdb_enc_string(w, "s", 1, "v", 1);
    rdb_file_write_expire(w, 4102444800000ll);
    rdb_enc_begin(&e, w, &rdb_limits_default, RDB_KIND_LIST, 2, "l", 1);
    rdb_enc_elem(&e, "a", 1);
    rdb_enc_elem(&e, "b", 1);
    rdb_enc_end(&e);
    rdb_enc_begin(&e, w, &rdb_limits_default, RDB_KIND_SET, 1, "st", 2);
    rdb_enc_elem(&e, "7", 1);
    rdb_enc_end(&e);
    rdb_file_write_select(w, 5, 2, 0);
    rdb_enc_begin(&e, w, &rdb_limits_default, RDB_KIND_ZSET, 1, "z", 1);
    rdb_enc_scored(&e, "m", 1, 2.5);
    rdb_enc_end(&e);
    rdb_enc_begin(&e, w, &rdb_limits_default, RDB_KIND_HASH, 1, "h", 1);
    rdb_enc_pair(&e, "f", 1, "x", 1);
    rdb_enc_end(&e);
    rdb_file_write_end(w);
    rdb_enc_fini(&e);
}

static const char sample_log[] =
    "aux redis-ver=7.0.15;db 0;key s t0 e-1 =v;key l t18 e4102444800000 "
    "a,b,;key st t11 e-1 7,;db 5;key z t17 e-1 m@2.5,;key h t16 e-1 f:x,;";

START_TEST(test_write_then_read)
{
    rdb_writer w;
    rdb_reader r;
    log_t *l = calloc(1, sizeof *l);
    int version = 0;

    rdb_writer_mem(&w, 1);
    sample(&w);
    ck_assert_int_eq(memcmp(w.buf.data, "REDIS0010", 9), 0);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), 0);
    ck_assert_int_eq(version, 10);
    ck_assert_str_eq(l->s, sample_log);
    ck_assert_uint_eq(rdb_reader_offset(&r), w.buf.len);

    /* The same through a file descriptor and a tiny window. */
    char path[] = "/tmp/check_rdb_file.XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    ck_assert_int_eq(write(fd, w.buf.data, w.buf.len), (ssize_t)w.buf.len);
    lseek(fd, 0, SEEK_SET);
    memset(l, 0, sizeof *l);
    ck_assert_int_eq(rdb_reader_fd(&r, fd, 5, w.buf.len, MAX_STRING), 0);
    ck_assert_int_eq(read_all(&r, l, &version), 0);
    ck_assert_str_eq(l->s, sample_log);
    rdb_reader_fini(&r);
    close(fd);
    free(l);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_truncated_everywhere)
{
    rdb_writer w;
    log_t *l = calloc(1, sizeof *l);
    int version;

    rdb_writer_mem(&w, 1);
    sample(&w);
    for (size_t n = 0; n < w.buf.len; n++) {
        rdb_reader r;
        memset(l, 0, sizeof *l);
        rdb_reader_mem(&r, w.buf.data, n, MAX_STRING);
        int rc = read_all(&r, l, &version);
        ck_assert_msg(rc == RDB_ETRUNC || (n < 9 && rc == RDB_ECORRUPT),
                      "cut at %zu: %d", n, rc);
        if (rc == RDB_ETRUNC)
            ck_assert_uint_le(r.err_off, n);
        ck_assert(r.why[0] != '\0');
    }
    free(l);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_checksum)
{
    rdb_writer w;
    rdb_reader r;
    log_t *l = calloc(1, sizeof *l);
    int version;

    rdb_writer_mem(&w, 1);
    sample(&w);
    /* A flipped byte in a value: the trailer no longer matches. */
    uint8_t *v = memmem(w.buf.data, w.buf.len, "\x01v", 2);
    ck_assert_ptr_nonnull(v);
    v[1] = 'w';
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), RDB_ECHECKSUM);
    ck_assert_uint_eq(r.err_off, w.buf.len - 8);
    ck_assert(strstr(r.why, "checksum mismatch") != NULL);
    /* A zero trailer means "no checksum". */
    memset(w.buf.data + w.buf.len - 8, 0, 8);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    memset(l, 0, sizeof *l);
    ck_assert_int_eq(read_all(&r, l, &version), 0);
    free(l);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_bad_type_and_header)
{
    rdb_writer w;
    rdb_reader r;
    log_t *l = calloc(1, sizeof *l);
    int version;

    rdb_writer_mem(&w, 1);
    rdb_file_write_header(&w);
    rdb_put_u8(&w, 30); /* no such type */
    rdb_put_string(&w, "k", 1);
    rdb_file_write_end(&w);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), RDB_ECORRUPT);
    ck_assert_uint_eq(r.err_off, 9); /* the type byte */
    ck_assert_str_eq(r.why, "key \"k\" (db 0): unknown object type 30");

    static const char *const bad[] = { "REDIS0011", "REDIS0004", "REDIX0010",
                                       "REDIS00a0", "RED" };
    static const int codes[] = { RDB_EVERSION, RDB_EVERSION, RDB_ECORRUPT,
                                 RDB_ECORRUPT, RDB_ECORRUPT };
    for (int i = 0; i < 5; i++) {
        rdb_reader_mem(&r, bad[i], strlen(bad[i]), MAX_STRING);
        ck_assert_int_eq(read_all(&r, l, &version), codes[i]);
    }
    ck_assert_uint_eq(r.err_off, 0);
    free(l);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_unsupported_named)
{
    rdb_writer w;
    rdb_reader r;
    log_t *l = calloc(1, sizeof *l);
    int version;

    rdb_writer_mem(&w, 1);
    rdb_file_write_header(&w);
    rdb_file_write_select(&w, 3, 1, 0);
    rdb_put_u8(&w, RDB_TYPE_STREAM_LISTPACKS_2);
    rdb_put_string(&w, "events\n", 7);
    rdb_put_len(&w, 0);
    rdb_file_write_end(&w);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), RDB_EUNSUPPORTED);
    ck_assert_str_eq(r.why, "key \"events\\x0a\" (db 3): a stream (type 19)");

    w.buf.len = 0;
    rdb_file_write_header(&w);
    rdb_put_u8(&w, RDB_OP_FUNCTION2);
    rdb_put_string(&w, "#!lua name=x", 12);
    rdb_file_write_end(&w);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), RDB_EUNSUPPORTED);
    ck_assert_uint_eq(r.err_off, 9);
    ck_assert(strstr(r.why, "function") != NULL);

    w.buf.len = 0;
    rdb_file_write_header(&w);
    rdb_put_u8(&w, RDB_OP_MODULE_AUX);
    rdb_file_write_end(&w);
    rdb_reader_mem(&r, w.buf.data, w.buf.len, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), RDB_EUNSUPPORTED);
    ck_assert(strstr(r.why, "module") != NULL);
    free(l);
    rdb_writer_fini(&w);
}
END_TEST

START_TEST(test_redis_saved_file)
{
    /*
     * redis-server 7.0.15 SAVE of: SET a 1; RPUSH l x y; SELECT 2;
     * SET e v PX 10000000000000 (saved at ms 1796142547056 - 10^13).
     */
    static const char file[] =
        "524544495330303130fa0972656469732d76657206372e302e3135fa0a7265646973"
        "2d62697473c040fa056374696d65c2d3f50e6bfa08757365642d6d656dc2c01a1200"
        "fa08616f662d62617365c000fe00fb020012016c01020d0d00000002008178028179"
        "02ff000161c001fe02fb0101fc70e0e280ba0a00000001650176ff6fca3a71459cb0"
        "6c";
    size_t n;
    uint8_t *p = hex(file, &n);
    rdb_reader r;
    log_t *l = calloc(1, sizeof *l);
    int version;

    rdb_reader_mem(&r, p, n, MAX_STRING);
    ck_assert_int_eq(read_all(&r, l, &version), 0);
    ck_assert_str_eq(l->s,
                     "aux redis-ver=7.0.15;aux redis-bits=64;aux aof-base=0;"
                     "db 0;key l t18 e-1 x,y,;key a t0 e-1 =1;db 2;"
                     "key e t0 e11796142547056 =v;");
    free(p);
    free(l);
}
END_TEST

static Suite *rdb_file_suite(void)
{
    Suite *s = suite_create("rdb_file");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_write_then_read);
    tcase_add_test(tc, test_truncated_everywhere);
    tcase_add_test(tc, test_checksum);
    tcase_add_test(tc, test_bad_type_and_header);
    tcase_add_test(tc, test_unsupported_named);
    tcase_add_test(tc, test_redis_saved_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rdb_file_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
