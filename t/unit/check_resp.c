/*
 * check_resp: unit tests of the RESP request parser (server/srv_resp.h).
 *
 * A pipelined buffer must give the same commands however the bytes arrive
 * (whole, one at a time, split at every position or every pair of
 * positions); a big bulk reports how many bytes it needs; malformed input
 * fails with Redis's exact error text; srv_resp_split_args follows Redis's
 * inline quoting rules.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_resp.h"

#define MAX_BULK (512LL * 1024 * 1024)
#define SMALL_MAX_BULK 100
#define TRANSCRIPT_SIZE 8192
#define BIG_BULK 100000
#define MANY_ARGS 1000
#define SPLIT_MAXARGS 16
#define TIMEOUT_S 20
#define PAIR_WINDOW 48

/*
 * What a connection saw: every finished command as "argc:[len]arg...;" and
 * the error text if one ended the stream. Binary-safe because every
 * argument is prefixed with its length.
 */
typedef struct transcript {
    char text[TRANSCRIPT_SIZE];
    size_t len;
    int commands;
    int final_rc; /* MORE, or ERROR/NOMEM */
    char error[128];
} transcript;

static void t_append(transcript *t, const void *p, size_t n)
{
    ck_assert_uint_lt(t->len + n, sizeof t->text);
    memcpy(t->text + t->len, p, n);
    t->len += n;
}

static void t_record(transcript *t, const srv_parser *p)
{
    char num[32];

    snprintf(num, sizeof num, "%d:", p->argc);
    t_append(t, num, strlen(num));
    for (int i = 0; i < p->argc; i++) {
        snprintf(num, sizeof num, "[%zu]", p->argv[i].len);
        t_append(t, num, strlen(num));
        t_append(t, p->argv[i].ptr, p->argv[i].len);
    }
    t_append(t, ";", 1);
    t->commands++;
}

/*
 * A connection's read buffer and parser. feed() appends bytes and runs the
 * parser the way a worker does: on DONE consume and reset, on MORE wait.
 */
typedef struct conn {
    srv_parser p;
    char *buf;
    size_t len, cap;
    int dead;
    transcript t;
} conn;

static void conn_init(conn *c, size_t cap, long long max_bulk)
{
    memset(c, 0, sizeof *c);
    srv_resp_parser_init(&c->p, max_bulk);
    c->buf = malloc(cap ? cap : 1);
    ck_assert_ptr_nonnull(c->buf);
    c->cap = cap;
    c->t.final_rc = SRV_PARSE_MORE;
}

static void conn_fini(conn *c)
{
    srv_resp_parser_fini(&c->p);
    free(c->buf);
}

static void check_argv_in(const srv_parser *p, const char *lo, size_t n)
{
    for (int i = 0; i < p->argc; i++) {
        const char *a = p->argv[i].ptr;
        int in_buf = a >= lo && a + p->argv[i].len <= lo + n;
        int in_inl = p->inl && a >= p->inl &&
                     a + p->argv[i].len <= p->inl + p->inl_cap;
        ck_assert_msg(in_buf || in_inl, "argv[%d] outside both buffers", i);
    }
}

static void feed(conn *c, const char *bytes, size_t n)
{
    if (c->dead)
        return;
    ck_assert_uint_le(c->len + n, c->cap);
    memcpy(c->buf + c->len, bytes, n);
    c->len += n;
    for (;;) {
        int rc = srv_resp_parse(&c->p, c->buf, c->len);
        if (rc == SRV_PARSE_MORE) {
            /* need, when set, is more than what is there. */
            if (c->p.need)
                ck_assert_uint_gt(c->p.need, c->len);
            return;
        }
        if (rc != SRV_PARSE_DONE) {
            c->t.final_rc = rc;
            ck_assert_ptr_nonnull(c->p.error);
            snprintf(c->t.error, sizeof c->t.error, "%s", c->p.error);
            c->dead = 1;
            return;
        }
        ck_assert_uint_gt(c->p.consumed, 0);
        ck_assert_uint_le(c->p.consumed, c->len);
        check_argv_in(&c->p, c->buf, c->p.consumed);
        t_record(&c->t, &c->p);
        memmove(c->buf, c->buf + c->p.consumed, c->len - c->p.consumed);
        c->len -= c->p.consumed;
        srv_resp_parser_reset(&c->p);
    }
}

/* Feed `in` cut at the sorted positions cuts[0..ncuts). */
static void run_cuts(transcript *out, const char *in, size_t n,
                     const size_t *cuts, int ncuts)
{
    conn c;
    size_t at = 0;

    conn_init(&c, n, MAX_BULK);
    for (int i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        feed(&c, in + at, end - at);
        at = end;
    }
    *out = c.t;
    conn_fini(&c);
}

static void assert_same(const transcript *a, const transcript *b,
                        const char *what, size_t x, size_t y)
{
    ck_assert_msg(a->len == b->len && memcmp(a->text, b->text, a->len) == 0,
                  "%s (cuts %zu, %zu): transcript differs:\n%.*s\nvs\n%.*s",
                  what, x, y, (int)a->len, a->text, (int)b->len, b->text);
    ck_assert_int_eq(a->final_rc, b->final_rc);
    ck_assert_str_eq(a->error, b->error);
}

/* One whole-buffer parse, the reference the split runs must equal. */
static void run_whole(transcript *out, const char *in, size_t n)
{
    run_cuts(out, in, n, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* core: well-formed requests */

/* Parse one complete request from a writable copy; returns the rc. */
static int parse_one(srv_parser *p, char *buf, size_t len)
{
    srv_resp_parser_init(p, MAX_BULK);
    return srv_resp_parse(p, buf, len);
}

static void assert_arg(const srv_parser *p, int i, const char *want)
{
    ck_assert_int_lt(i, p->argc);
    ck_assert_uint_eq(p->argv[i].len, strlen(want));
    ck_assert_mem_eq(p->argv[i].ptr, want, strlen(want));
}

START_TEST(test_multibulk_simple)
{
    char buf[] = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 3);
    assert_arg(&p, 0, "SET");
    assert_arg(&p, 1, "k");
    assert_arg(&p, 2, "hello");
    ck_assert_uint_eq(p.consumed, sizeof buf - 1);
    /* Arguments are slices of the read buffer, not copies. */
    ck_assert_ptr_eq(p.argv[0].ptr, buf + 8);
    ck_assert_ptr_eq(p.argv[2].ptr,
                     buf + strlen("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\n"));
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_multibulk_binary)
{
    /* A bulk may hold CR, LF and NUL: only the length counts. */
    char buf[] = "*2\r\n$4\r\na\r\nb\r\n$3\r\nx\0y\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 2);
    ck_assert_uint_eq(p.argv[0].len, 4);
    ck_assert_mem_eq(p.argv[0].ptr, "a\r\nb", 4);
    ck_assert_uint_eq(p.argv[1].len, 3);
    ck_assert_mem_eq(p.argv[1].ptr, "x\0y", 3);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_multibulk_empty_arg)
{
    char buf[] = "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 2);
    assert_arg(&p, 1, "");
    ck_assert_uint_eq(p.consumed, sizeof buf - 1);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_multibulk_zero_and_negative)
{
    srv_parser p;
    char zero[] = "*0\r\n";
    char null[] = "*-1\r\n";
    char neg[] = "*-7\r\nPING\r\n";

    /* Redis skips a multibulk of count <= 0: an empty command. */
    ck_assert_int_eq(parse_one(&p, zero, 4), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, 4);
    srv_resp_parser_fini(&p);

    ck_assert_int_eq(parse_one(&p, null, 5), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, 5);
    srv_resp_parser_fini(&p);

    ck_assert_int_eq(parse_one(&p, neg, sizeof neg - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, 5);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_multibulk_many_args)
{
    /* More arguments than the initial argv: it must grow. */
    size_t cap = (size_t)MANY_ARGS * 16 + 32, n = 0;
    char *buf = malloc(cap);
    srv_parser p;

    ck_assert_ptr_nonnull(buf);
    n += (size_t)sprintf(buf + n, "*%d\r\n", MANY_ARGS);
    for (int i = 0; i < MANY_ARGS; i++) {
        char arg[16];
        int alen = sprintf(arg, "%d", i);
        n += (size_t)sprintf(buf + n, "$%d\r\n%s\r\n", alen, arg);
    }
    ck_assert_int_eq(parse_one(&p, buf, n), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, MANY_ARGS);
    for (int i = 0; i < MANY_ARGS; i++) {
        char arg[16];
        sprintf(arg, "%d", i);
        assert_arg(&p, i, arg);
    }
    ck_assert_uint_eq(p.consumed, n);
    srv_resp_parser_fini(&p);
    free(buf);
}
END_TEST

START_TEST(test_multibulk_pipelined_consumed)
{
    /* consumed stops at the end of the first command. */
    char buf[] = "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 1);
    ck_assert_uint_eq(p.consumed, 14);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_inline_simple)
{
    char buf[] = "SET  key\t\"hello world\"   'x'\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 4);
    assert_arg(&p, 0, "SET");
    assert_arg(&p, 1, "key");
    assert_arg(&p, 2, "hello world");
    assert_arg(&p, 3, "x");
    ck_assert_uint_eq(p.consumed, sizeof buf - 1);
    /* Inline arguments are unescaped into the side buffer, NUL-ended. */
    ck_assert_ptr_nonnull(p.inl);
    for (int i = 0; i < p.argc; i++) {
        ck_assert(p.argv[i].ptr >= p.inl &&
                  p.argv[i].ptr + p.argv[i].len < p.inl + p.inl_cap);
        ck_assert_int_eq(p.argv[i].ptr[p.argv[i].len], '\0');
    }
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_inline_lf_only)
{
    char buf[] = "PING\nPING\r\n";
    srv_parser p;

    ck_assert_int_eq(parse_one(&p, buf, sizeof buf - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 1);
    assert_arg(&p, 0, "PING");
    ck_assert_uint_eq(p.consumed, 5);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_inline_empty_lines)
{
    srv_parser p;
    char crlf[] = "\r\n";
    char lf[] = "\n";
    char blanks[] = "   \t \r\n";

    ck_assert_int_eq(parse_one(&p, crlf, 2), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, 2);
    srv_resp_parser_fini(&p);

    ck_assert_int_eq(parse_one(&p, lf, 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, 1);
    srv_resp_parser_fini(&p);

    ck_assert_int_eq(parse_one(&p, blanks, sizeof blanks - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 0);
    ck_assert_uint_eq(p.consumed, sizeof blanks - 1);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_nothing_yet)
{
    srv_parser p;
    char buf[] = "*";

    ck_assert_int_eq(parse_one(&p, buf, 0), SRV_PARSE_MORE);
    ck_assert_int_eq(srv_resp_parse(&p, buf, 1), SRV_PARSE_MORE);
    srv_resp_parser_fini(&p);
}
END_TEST

START_TEST(test_parser_reuse)
{
    /* After reset, the parser handles a request of the other kind. */
    srv_parser p;
    char a[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    char b[] = "GET k2\r\n";
    char c[] = "*1\r\n$4\r\nPING\r\n";

    ck_assert_int_eq(parse_one(&p, a, sizeof a - 1), SRV_PARSE_DONE);
    srv_resp_parser_reset(&p);
    ck_assert_int_eq(srv_resp_parse(&p, b, sizeof b - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 2);
    assert_arg(&p, 1, "k2");
    srv_resp_parser_reset(&p);
    ck_assert_int_eq(srv_resp_parse(&p, c, sizeof c - 1), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 1);
    assert_arg(&p, 0, "PING");
    srv_resp_parser_fini(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* split: partial reads at every position */

/* A pipeline mixing every request shape; ends with a complete command. */
static const char pipeline[] =
    "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n"
    "PING\r\n"
    "\r\n"
    "*0\r\n"
    "*-1\r\n"
    "ECHO \"a b\" 'c\\'d' \"\\x41\\n\"\n"
    "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
    "\n"
    "*1\r\n$20\r\n01234567890123456789\r\n"
    "GET k\r\n"
    "*2\r\n$3\r\nGET\r\n$12\r\n$3\r\n*1\r\nxx\r\n\r\n";

#define PIPELINE_LEN (sizeof pipeline - 1)
#define PIPELINE_COMMANDS 11

START_TEST(test_split_reference)
{
    transcript whole;
    static const char want[] = "3:[3]SET[3]key[5]va\r\nl;"
                               "1:[4]PING;"
                               "0:;"
                               "0:;"
                               "0:;"
                               "4:[4]ECHO[3]a b[3]c'd[2]A\n;"
                               "2:[4]ECHO[0];"
                               "0:;"
                               "1:[20]01234567890123456789;"
                               "2:[3]GET[1]k;"
                               "2:[3]GET[12]$3\r\n*1\r\nxx\r\n;";

    run_whole(&whole, pipeline, PIPELINE_LEN);
    ck_assert_int_eq(whole.final_rc, SRV_PARSE_MORE);
    ck_assert_int_eq(whole.commands, PIPELINE_COMMANDS);
    ck_assert_uint_eq(whole.len, sizeof want - 1);
    ck_assert_mem_eq(whole.text, want, sizeof want - 1);
}
END_TEST

START_TEST(test_split_one_byte_at_a_time)
{
    transcript whole, drip;
    conn c;

    run_whole(&whole, pipeline, PIPELINE_LEN);
    conn_init(&c, PIPELINE_LEN, MAX_BULK);
    for (size_t i = 0; i < PIPELINE_LEN; i++)
        feed(&c, pipeline + i, 1);
    drip = c.t;
    ck_assert_uint_eq(c.len, 0);
    conn_fini(&c);
    assert_same(&whole, &drip, "one byte at a time", 0, 0);
}
END_TEST

START_TEST(test_split_every_position)
{
    transcript whole, part;

    run_whole(&whole, pipeline, PIPELINE_LEN);
    for (size_t i = 1; i < PIPELINE_LEN; i++) {
        run_cuts(&part, pipeline, PIPELINE_LEN, &i, 1);
        assert_same(&whole, &part, "one cut", i, 0);
    }
}
END_TEST

START_TEST(test_split_every_pair)
{
    /*
     * Two cuts inside one command (or two neighbours) are where state
     * carried across reads matters; farther pairs add nothing but time.
     */
    transcript whole, part;
    size_t cuts[2];

    run_whole(&whole, pipeline, PIPELINE_LEN);
    for (size_t i = 1; i < PIPELINE_LEN; i++) {
        for (size_t j = i; j < PIPELINE_LEN && j <= i + PAIR_WINDOW; j++) {
            cuts[0] = i;
            cuts[1] = j;
            run_cuts(&part, pipeline, PIPELINE_LEN, cuts, 2);
            assert_same(&whole, &part, "two cuts", i, j);
        }
    }
}
END_TEST

START_TEST(test_split_error_same_everywhere)
{
    /* An error after good commands is found however the bytes arrive. */
    static const char bad[] =
        "*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$3\r\nGET\r\n:3\r\nabc\r\n";
    transcript whole, part;
    size_t n = sizeof bad - 1;

    run_whole(&whole, bad, n);
    ck_assert_int_eq(whole.final_rc, SRV_PARSE_ERROR);
    ck_assert_int_eq(whole.commands, 2);
    ck_assert_str_eq(whole.error, "Protocol error: expected '$', got ':'");
    for (size_t i = 1; i < n; i++) {
        run_cuts(&part, bad, n, &i, 1);
        assert_same(&whole, &part, "error, one cut", i, 0);
    }
}
END_TEST

START_TEST(test_split_big_bulk_need)
{
    /* A big bulk reports the total it needs as soon as its header is in. */
    size_t hdr, total;
    char *buf = malloc(BIG_BULK + 64);
    srv_parser p;
    int rc;

    ck_assert_ptr_nonnull(buf);
    hdr = (size_t)sprintf(buf, "*2\r\n$3\r\nSET\r\n$%d\r\n", BIG_BULK);
    memset(buf + hdr, 'v', BIG_BULK);
    memcpy(buf + hdr + BIG_BULK, "\r\n", 2);
    total = hdr + BIG_BULK + 2;

    srv_resp_parser_init(&p, MAX_BULK);
    /* Header of the big bulk incomplete: no need known yet. */
    rc = srv_resp_parse(&p, buf, hdr - 2);
    ck_assert_int_eq(rc, SRV_PARSE_MORE);
    ck_assert_uint_eq(p.need, 0);
    rc = srv_resp_parse(&p, buf, hdr);
    ck_assert_int_eq(rc, SRV_PARSE_MORE);
    ck_assert_uint_eq(p.need, total);
    rc = srv_resp_parse(&p, buf, hdr + BIG_BULK / 2);
    ck_assert_int_eq(rc, SRV_PARSE_MORE);
    ck_assert_uint_eq(p.need, total);
    /* Data in but not its CRLF. */
    rc = srv_resp_parse(&p, buf, total - 1);
    ck_assert_int_eq(rc, SRV_PARSE_MORE);
    ck_assert_uint_eq(p.need, total);
    rc = srv_resp_parse(&p, buf, total);
    ck_assert_int_eq(rc, SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 2);
    ck_assert_uint_eq(p.argv[1].len, BIG_BULK);
    ck_assert_ptr_eq(p.argv[1].ptr, buf + hdr);
    ck_assert_uint_eq(p.consumed, total);
    srv_resp_parser_fini(&p);
    free(buf);
}
END_TEST

START_TEST(test_split_buffer_moves)
{
    /*
     * Between calls the caller may move its buffer (it grew): the parser
     * keeps offsets, so argv must point into the latest buffer.
     */
    char first[] = "*2\r\n$3\r\nGET\r\n$5\r\nhe";
    char whole[] = "*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
    char *a = strdup(first), *b = strdup(whole);
    srv_parser p;

    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    srv_resp_parser_init(&p, MAX_BULK);
    ck_assert_int_eq(srv_resp_parse(&p, a, strlen(a)), SRV_PARSE_MORE);
    ck_assert_int_eq(srv_resp_parse(&p, b, strlen(b)), SRV_PARSE_DONE);
    ck_assert_ptr_eq(p.argv[0].ptr, b + 8);
    assert_arg(&p, 1, "hello");
    ck_assert(p.argv[1].ptr >= b && p.argv[1].ptr < b + strlen(b));
    srv_resp_parser_fini(&p);
    free(a);
    free(b);
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors: exact texts */

static void expect_error(const char *in, size_t n, long long max_bulk,
                         const char *want)
{
    srv_parser p;
    char *buf = malloc(n ? n : 1);
    int rc;

    ck_assert_ptr_nonnull(buf);
    memcpy(buf, in, n);
    srv_resp_parser_init(&p, max_bulk);
    rc = srv_resp_parse(&p, buf, n);
    ck_assert_msg(rc == SRV_PARSE_ERROR, "input %.*s: rc %d, want ERROR",
                  (int)(n < 40 ? n : 40), in, rc);
    ck_assert_ptr_nonnull(p.error);
    ck_assert_str_eq(p.error, want);
    srv_resp_parser_fini(&p);
    free(buf);
}

#define EXPECT_ERROR(lit, want) \
    expect_error(lit, sizeof lit - 1, MAX_BULK, want)

START_TEST(test_err_multibulk_length)
{
    const char *want = "Protocol error: invalid multibulk length";

    EXPECT_ERROR("*abc\r\n", want);
    EXPECT_ERROR("*\r\n", want);
    EXPECT_ERROR("*+1\r\n", want);
    EXPECT_ERROR("*01\r\n", want);
    EXPECT_ERROR("* 1\r\n", want);
    EXPECT_ERROR("*1x\r\n", want);
    EXPECT_ERROR("*2147483648\r\n", want);
    EXPECT_ERROR("*99999999999999999999999\r\n", want);
}
END_TEST

START_TEST(test_err_expected_dollar)
{
    EXPECT_ERROR("*1\r\nx3\r\nfoo\r\n",
                 "Protocol error: expected '$', got 'x'");
    EXPECT_ERROR("*2\r\n$3\r\nGET\r\n*1\r\n",
                 "Protocol error: expected '$', got '*'");
    /* The byte right after a bulk's CRLF is the next header. */
    EXPECT_ERROR("*2\r\n$1\r\na\r\n\r\n",
                 "Protocol error: expected '$', got '\r'");
}
END_TEST

START_TEST(test_err_bulk_length)
{
    const char *want = "Protocol error: invalid bulk length";

    EXPECT_ERROR("*1\r\n$-1\r\n", want);
    EXPECT_ERROR("*1\r\n$-5\r\nabc\r\n", want);
    EXPECT_ERROR("*1\r\n$abc\r\n", want);
    EXPECT_ERROR("*1\r\n$\r\n", want);
    EXPECT_ERROR("*1\r\n$+3\r\nabc\r\n", want);
    EXPECT_ERROR("*1\r\n$03\r\nabc\r\n", want);
    EXPECT_ERROR("*1\r\n$3 \r\nabc\r\n", want);
    /* Over proto-max-bulk-len; exactly at it is fine. */
    expect_error("*1\r\n$101\r\n", 10, SMALL_MAX_BULK, want);
    {
        char buf[] = "*1\r\n$100\r\n";
        srv_parser p;
        srv_resp_parser_init(&p, SMALL_MAX_BULK);
        ck_assert_int_eq(srv_resp_parse(&p, buf, sizeof buf - 1),
                         SRV_PARSE_MORE);
        ck_assert_uint_eq(p.need, sizeof buf - 1 + SMALL_MAX_BULK + 2);
        srv_resp_parser_fini(&p);
    }
}
END_TEST

/* A buffer of `n` bytes: `head` then `fill` repeated. */
static char *filled(const char *head, char fill, size_t n)
{
    char *b = malloc(n);
    size_t h = strlen(head);

    ck_assert_ptr_nonnull(b);
    memcpy(b, head, h);
    memset(b + h, fill, n - h);
    return b;
}

START_TEST(test_err_too_big_count_strings)
{
    size_t n = SRV_PROTO_INLINE_MAX + 1;
    char *mb = filled("*", '1', n);
    char *bulk = filled("*1\r\n$", '1', n + 4);
    srv_parser p;

    expect_error(mb, n, MAX_BULK, "Protocol error: too big mbulk count string");
    expect_error(bulk, n + 4, MAX_BULK,
                 "Protocol error: too big bulk count string");
    /* Up to the limit the parser waits for the CR. */
    srv_resp_parser_init(&p, MAX_BULK);
    ck_assert_int_eq(srv_resp_parse(&p, mb, SRV_PROTO_INLINE_MAX),
                     SRV_PARSE_MORE);
    srv_resp_parser_fini(&p);
    free(mb);
    free(bulk);
}
END_TEST

START_TEST(test_err_too_big_inline)
{
    size_t n = SRV_PROTO_INLINE_MAX + 1;
    char *line = filled("GET ", 'k', n);
    srv_parser p;

    expect_error(line, n, MAX_BULK, "Protocol error: too big inline request");
    srv_resp_parser_init(&p, MAX_BULK);
    ck_assert_int_eq(srv_resp_parse(&p, line, SRV_PROTO_INLINE_MAX),
                     SRV_PARSE_MORE);
    srv_resp_parser_fini(&p);
    free(line);
}
END_TEST

START_TEST(test_long_lines_that_arrive_whole)
{
    /*
     * The 64 KiB limits apply to a line still waiting for its end; a
     * longer line that arrives complete in one read is parsed (as Redis).
     */
    size_t n = SRV_PROTO_INLINE_MAX + 100;
    char *line = filled("SET k ", 'v', n);
    srv_parser p;

    line[n - 1] = '\n';
    srv_resp_parser_init(&p, MAX_BULK);
    ck_assert_int_eq(srv_resp_parse(&p, line, n), SRV_PARSE_DONE);
    ck_assert_int_eq(p.argc, 3);
    ck_assert_uint_eq(p.argv[2].len, n - strlen("SET k ") - 1);
    ck_assert_uint_eq(p.consumed, n);
    srv_resp_parser_fini(&p);
    free(line);
}
END_TEST

START_TEST(test_err_unbalanced_quotes)
{
    const char *want = "Protocol error: unbalanced quotes in request";

    EXPECT_ERROR("SET \"a\r\n", want);
    EXPECT_ERROR("SET 'a\r\n", want);
    EXPECT_ERROR("SET \"a\"b\r\n", want);
    EXPECT_ERROR("SET 'a'b c\n", want);
    EXPECT_ERROR("SET \"a\\\"\n", want);
}
END_TEST

START_TEST(test_err_huge_count_cheap)
{
    /* A count near INT_MAX is accepted and costs nothing until args come. */
    char buf[] = "*2147483647\r\n$4\r\nPING\r\n";
    srv_parser p;

    srv_resp_parser_init(&p, MAX_BULK);
    ck_assert_int_eq(srv_resp_parse(&p, buf, sizeof buf - 1), SRV_PARSE_MORE);
    ck_assert_int_le(p.argv_cap, 1 << 16);
    srv_resp_parser_fini(&p);
}
END_TEST

/* ------------------------------------------------------------------ */
/* split_args: inline / config quoting */

typedef struct split_result {
    int argc;
    srv_slice argv[SPLIT_MAXARGS];
    char out[256];
} split_result;

static int split(split_result *r, const char *line)
{
    size_t len = strlen(line);

    ck_assert_uint_lt(len + 1, sizeof r->out);
    r->argc = srv_resp_split_args(line, len, r->out, r->argv, SPLIT_MAXARGS);
    return r->argc;
}

static void assert_split_arg(const split_result *r, int i, const char *want,
                             size_t wlen)
{
    ck_assert_int_lt(i, r->argc);
    ck_assert_uint_eq(r->argv[i].len, wlen);
    ck_assert_mem_eq(r->argv[i].ptr, want, wlen);
    ck_assert_int_eq(r->argv[i].ptr[wlen], '\0');
}

#define ARG(r, i, lit) assert_split_arg(r, i, lit, sizeof lit - 1)

START_TEST(test_split_args_plain)
{
    split_result r;

    ck_assert_int_eq(split(&r, ""), 0);
    ck_assert_int_eq(split(&r, "   \t "), 0);
    ck_assert_int_eq(split(&r, "a"), 1);
    ARG(&r, 0, "a");
    ck_assert_int_eq(split(&r, "  set \t key   value  "), 3);
    ARG(&r, 0, "set");
    ARG(&r, 1, "key");
    ARG(&r, 2, "value");
}
END_TEST

START_TEST(test_split_args_double_quotes)
{
    split_result r;

    ck_assert_int_eq(split(&r, "\"\\x41\\x4A\\x6b\""), 1);
    ARG(&r, 0, "AJk");
    ck_assert_int_eq(split(&r, "\"a\\nb\\r\\t\\b\\a\""), 1);
    ARG(&r, 0, "a\nb\r\t\b\a");
    ck_assert_int_eq(split(&r, "\"\\\"q\\\\\""), 1);
    ARG(&r, 0, "\"q\\");
    /* \x without two hex digits is just an escaped x. */
    ck_assert_int_eq(split(&r, "\"\\xZ1\""), 1);
    ARG(&r, 0, "xZ1");
    ck_assert_int_eq(split(&r, "\"\\x00\""), 1);
    ARG(&r, 0, "\0");
    ck_assert_int_eq(split(&r, "\"hello world\" x"), 2);
    ARG(&r, 0, "hello world");
    ARG(&r, 1, "x");
    /* Single quotes are literal inside double quotes. */
    ck_assert_int_eq(split(&r, "\"it's\""), 1);
    ARG(&r, 0, "it's");
}
END_TEST

START_TEST(test_split_args_single_quotes)
{
    split_result r;

    ck_assert_int_eq(split(&r, "'it\\'s'"), 1);
    ARG(&r, 0, "it's");
    /* Only \' is an escape inside single quotes. */
    ck_assert_int_eq(split(&r, "'a\\nb'"), 1);
    ARG(&r, 0, "a\\nb");
    ck_assert_int_eq(split(&r, "'say \"hi\"'"), 1);
    ARG(&r, 0, "say \"hi\"");
}
END_TEST

START_TEST(test_split_args_empty_quotes)
{
    split_result r;

    ck_assert_int_eq(split(&r, "\"\""), 1);
    ARG(&r, 0, "");
    ck_assert_int_eq(split(&r, "set k \"\""), 3);
    ARG(&r, 2, "");
    ck_assert_int_eq(split(&r, "'' ''"), 2);
    ARG(&r, 0, "");
    ARG(&r, 1, "");
}
END_TEST

START_TEST(test_split_args_errors)
{
    split_result r;

    /* A closing quote followed by anything but a space is an error. */
    ck_assert_int_eq(split(&r, "\"a\"b"), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "'a'b"), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "\"a\"\"b\""), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "\"abc"), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "'abc"), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "\"abc\\\""), SRV_SPLIT_EQUOTES);
    ck_assert_int_eq(split(&r, "\"abc\\"), SRV_SPLIT_EQUOTES);
    /* A closing quote followed by a tab is fine. */
    ck_assert_int_eq(split(&r, "\"a\"\tb"), 2);
}
END_TEST

START_TEST(test_split_args_midword_quotes)
{
    /*
     * Redis's sdssplitargs opens a quoted section wherever a quote appears
     * in a word, not only at its start: `a"b c"` is one argument `ab c`,
     * `k'x y'` is `kx y`, and `a"b"c` is an error (closing quote followed
     * by a non-space).
     */
    split_result r;

    ck_assert_int_eq(split(&r, "set a\"b c\" v"), 3);
    ARG(&r, 1, "ab c");
    ck_assert_int_eq(split(&r, "k'x y'"), 1);
    ARG(&r, 0, "kx y");
    ck_assert_int_eq(split(&r, "a\"b\"c"), SRV_SPLIT_EQUOTES);
}
END_TEST

START_TEST(test_split_args_too_many)
{
    srv_slice argv[2];
    char out[32];
    const char *three = "a b c";

    ck_assert_int_eq(srv_resp_split_args(three, strlen(three), out, argv, 2),
                     SRV_SPLIT_ETOOMANY);
    ck_assert_int_eq(srv_resp_split_args("a b ", 4, out, argv, 2), 2);
}
END_TEST

START_TEST(test_split_args_len_bounded)
{
    /* Only len bytes are read: what follows is not part of the line. */
    split_result r;
    const char *line = "get key trailing";

    r.argc = srv_resp_split_args(line, 7, r.out, r.argv, SPLIT_MAXARGS);
    ck_assert_int_eq(r.argc, 2);
    ARG(&r, 1, "key");
}
END_TEST

/* --- look-ahead (srv_resp_peek) ------------------------------------ */

#define PEEK_MAX 2

START_TEST(test_peek_pipeline)
{
    char in[] = "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n"
                "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n"
                "*2\r\n$3\r\nGET\r\n$3\r\nba";
    size_t len = sizeof in - 1, pos = 0, used;
    srv_slice argv[PEEK_MAX];
    long long argc = -1;
    srv_parser p;

    /* each complete command: the same length and arguments as the parser */
    for (int i = 0; i < 2; i++) {
        char *buf = in + pos;
        used = srv_resp_peek(buf, len - pos, argv, PEEK_MAX, &argc);
        ck_assert_int_eq(parse_one(&p, buf, len - pos), SRV_PARSE_DONE);
        ck_assert_uint_eq(used, p.consumed);
        ck_assert_int_eq(argc, p.argc);
        for (int j = 0; j < PEEK_MAX; j++) {
            ck_assert_ptr_eq(argv[j].ptr, p.argv[j].ptr);
            ck_assert_uint_eq(argv[j].len, p.argv[j].len);
        }
        srv_resp_parser_fini(&p);
        pos += used;
    }
    /* the incomplete tail, and every prefix of a complete command */
    ck_assert_uint_eq(srv_resp_peek(in + pos, len - pos, argv, PEEK_MAX, &argc),
                      0);
    for (size_t cut = 0; cut < 22; cut++)
        ck_assert_uint_eq(srv_resp_peek(in, cut, argv, PEEK_MAX, &argc), 0);
    ck_assert_uint_eq(srv_resp_peek(in, 22, argv, PEEK_MAX, &argc), 22);
}
END_TEST

/* Anything but a well-formed complete multibulk is left to srv_resp_parse. */
START_TEST(test_peek_declines)
{
    static const char *const bad[] = {
        "GET foo\r\n",
        "*0\r\n",
        "*-1\r\n",
        "*1\r\n+3\r\nfoo\r\n",
        "*1\r\n$-1\r\n",
        "*1\r\n$3\r\nfooXY",
        "*\r\n",
        "*1\n$3\r\nfoo\r\n",
        "*1\r\n$99999999999999999999999\r\nfoo\r\n",
        "*99999999999999999999999\r\n$3\r\nfoo\r\n",
    };
    srv_slice argv[PEEK_MAX];
    long long argc;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(srv_resp_peek(bad[i], strlen(bad[i]), argv, PEEK_MAX,
                                    &argc) == 0,
                      "peeked: %s", bad[i]);
}
END_TEST

static Suite *resp_suite(void)
{
    Suite *s = suite_create("resp");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_test(tc, test_multibulk_simple);
    tcase_add_test(tc, test_multibulk_binary);
    tcase_add_test(tc, test_multibulk_empty_arg);
    tcase_add_test(tc, test_multibulk_zero_and_negative);
    tcase_add_test(tc, test_multibulk_many_args);
    tcase_add_test(tc, test_multibulk_pipelined_consumed);
    tcase_add_test(tc, test_inline_simple);
    tcase_add_test(tc, test_inline_lf_only);
    tcase_add_test(tc, test_inline_empty_lines);
    tcase_add_test(tc, test_nothing_yet);
    tcase_add_test(tc, test_parser_reuse);
    suite_add_tcase(s, tc);

    tc = tcase_create("split");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_split_reference);
    tcase_add_test(tc, test_split_one_byte_at_a_time);
    tcase_add_test(tc, test_split_every_position);
    tcase_add_test(tc, test_split_every_pair);
    tcase_add_test(tc, test_split_error_same_everywhere);
    tcase_add_test(tc, test_split_big_bulk_need);
    tcase_add_test(tc, test_split_buffer_moves);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_err_multibulk_length);
    tcase_add_test(tc, test_err_expected_dollar);
    tcase_add_test(tc, test_err_bulk_length);
    tcase_add_test(tc, test_err_too_big_count_strings);
    tcase_add_test(tc, test_err_too_big_inline);
    tcase_add_test(tc, test_long_lines_that_arrive_whole);
    tcase_add_test(tc, test_err_unbalanced_quotes);
    tcase_add_test(tc, test_err_huge_count_cheap);
    suite_add_tcase(s, tc);

    tc = tcase_create("peek");
    tcase_add_test(tc, test_peek_pipeline);
    tcase_add_test(tc, test_peek_declines);
    suite_add_tcase(s, tc);

    tc = tcase_create("split_args");
    tcase_add_test(tc, test_split_args_plain);
    tcase_add_test(tc, test_split_args_double_quotes);
    tcase_add_test(tc, test_split_args_single_quotes);
    tcase_add_test(tc, test_split_args_empty_quotes);
    tcase_add_test(tc, test_split_args_errors);
    tcase_add_test(tc, test_split_args_midword_quotes);
    tcase_add_test(tc, test_split_args_too_many);
    tcase_add_test(tc, test_split_args_len_bounded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(resp_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
