/*
 * bench_resp: RESP2 encoding and in-place reply parsing (see bench_resp.h).
 */
#include "bench/bench_resp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 4096
#define U64_DIGITS_MAX 20
#define DECIMAL 10
#define ASCII_DEL 0x7f
/* "$" + 20 digits + CRLF */
#define BULK_HEADER_MAX (1 + U64_DIGITS_MAX + 2)

void bench_buf_fini(bench_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

int bench_buf_reserve(bench_buf *b, size_t n)
{
    size_t cap;
    char *p;

    if (b->cap - b->len >= n)
        return 0;
    if (b->off > 0 && b->off >= b->len / 2) {
        bench_buf_compact(b);
        if (b->cap - b->len >= n)
            return 0;
    }
    cap = b->cap ? b->cap : BUF_MIN_CAP;
    while (cap - b->len < n)
        cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL)
        return ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

void bench_buf_compact(bench_buf *b)
{
    if (b->off == 0)
        return;
    memmove(b->data, b->data + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
}

static void reserve_or_die(bench_buf *b, size_t n)
{
    if (bench_buf_reserve(b, n) != 0) {
        fprintf(stderr, "larder-bench: out of memory\n");
        abort();
    }
}

/* Append the decimal form of v; returns the digits written. */
static size_t put_u64(char *dst, uint64_t v)
{
    char tmp[U64_DIGITS_MAX];
    size_t n = 0, i;

    do {
        tmp[n++] = (char)('0' + v % DECIMAL);
        v /= DECIMAL;
    } while (v != 0);
    for (i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

static void put_header(bench_buf *b, char type, uint64_t n)
{
    char *p = b->data + b->len;

    *p++ = type;
    p += put_u64(p, n);
    *p++ = '\r';
    *p++ = '\n';
    b->len = (size_t)(p - b->data);
}

void bench_cmd_begin(bench_buf *b, unsigned argc)
{
    reserve_or_die(b, BULK_HEADER_MAX);
    put_header(b, '*', argc);
}

void bench_cmd_arg(bench_buf *b, const void *p, size_t len)
{
    reserve_or_die(b, BULK_HEADER_MAX + len + 2);
    put_header(b, '$', len);
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len++] = '\r';
    b->data[b->len++] = '\n';
}

void bench_cmd_arg2(bench_buf *b, const void *p1, size_t len1, const void *p2,
                    size_t len2)
{
    reserve_or_die(b, BULK_HEADER_MAX + len1 + len2 + 2);
    put_header(b, '$', len1 + len2);
    memcpy(b->data + b->len, p1, len1);
    memcpy(b->data + b->len + len1, p2, len2);
    b->len += len1 + len2;
    b->data[b->len++] = '\r';
    b->data[b->len++] = '\n';
}

void bench_cmd_arg_str(bench_buf *b, const char *s)
{
    bench_cmd_arg(b, s, strlen(s));
}

void bench_cmd_arg_u64(bench_buf *b, uint64_t v)
{
    char tmp[U64_DIGITS_MAX];

    bench_cmd_arg(b, tmp, put_u64(tmp, v));
}

void bench_cmd_arg_i64(bench_buf *b, int64_t v)
{
    char tmp[U64_DIGITS_MAX + 1];
    size_t n = 0;

    if (v < 0) {
        tmp[n++] = '-';
        n += put_u64(tmp + n, (uint64_t)0 - (uint64_t)v);
    } else {
        n = put_u64(tmp, (uint64_t)v);
    }
    bench_cmd_arg(b, tmp, n);
}

void bench_cmd_arg_key(bench_buf *b, const char *prefix, uint64_t index)
{
    size_t plen = strlen(prefix), len = plen + BENCH_KEY_DIGITS, i;
    char *p;

    reserve_or_die(b, BULK_HEADER_MAX + len + 2);
    put_header(b, '$', len);
    p = b->data + b->len;
    memcpy(p, prefix, plen);
    for (i = len; i > plen; i--) {
        p[i - 1] = (char)('0' + index % DECIMAL);
        index /= DECIMAL;
    }
    p[len] = '\r';
    p[len + 1] = '\n';
    b->len += len + 2;
}

void bench_cmd_argv(bench_buf *b, unsigned argc, const char *const *argv)
{
    unsigned i;

    bench_cmd_begin(b, argc);
    for (i = 0; i < argc; i++)
        bench_cmd_arg_str(b, argv[i]);
}

/* Parse a signed decimal in [p, end); 0 or EINVAL. */
static int parse_i64(const char *p, const char *end, int64_t *out)
{
    int neg = 0;
    uint64_t v = 0;

    if (p < end && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    if (p == end)
        return EINVAL;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - DECIMAL) / DECIMAL)
            return EINVAL;
        v = v * DECIMAL + (uint64_t)(*p - '0');
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
        return EINVAL;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/*
 * One item at p[0, len): a whole scalar (status, error, integer, bulk,
 * nil, empty array), or the header line of an array of *children > 0
 * elements.  Returns its bytes (scalar) or the header's bytes (array), 0
 * when more bytes are needed, -1 on a protocol error.  Fills *r with what
 * the item's own bytes say (for an array: type and count only).
 */
static long scan_item(const char *p, size_t len, bench_reply *r,
                      int64_t *children)
{
    const char *nl, *line, *line_end;
    size_t head, limit = len;
    int64_t n;

    *children = 0;
    if (len < 1)
        return 0;
    switch (p[0]) {
    case '+':
    case '-': break;
    case ':':
    case '$':
    case '*':
        if (limit > BENCH_RESP_MAX_NUM_LINE)
            limit = BENCH_RESP_MAX_NUM_LINE;
        break;
    default: return -1; /* not RESP2: garbage, or a RESP3 type */
    }
    nl = memchr(p, '\n', limit);
    if (nl == NULL)
        return limit < len ? -1 : 0;
    if (nl[-1] != '\r') /* nl > p: p[0] is a type byte */
        return -1;
    line = p + 1;
    line_end = nl - 1;
    head = (size_t)(nl + 1 - p);
    memset(r, 0, sizeof(*r));
    switch (p[0]) {
    case '+':
    case '-':
        r->type = p[0] == '+' ? BENCH_REPLY_STATUS : BENCH_REPLY_ERROR;
        r->str = line;
        r->len = (size_t)(line_end - line);
        return (long)head;
    case ':':
        r->type = BENCH_REPLY_INTEGER;
        return parse_i64(line, line_end, &r->integer) == 0 ? (long)head : -1;
    case '$':
        if (parse_i64(line, line_end, &n) != 0 || n < -1 ||
            n > BENCH_RESP_MAX_BULK)
            return -1;
        if (n == -1) {
            r->type = BENCH_REPLY_NIL;
            return (long)head;
        }
        if (len - head < (size_t)n + 2)
            return 0;
        if (p[head + (size_t)n] != '\r' || p[head + (size_t)n + 1] != '\n')
            return -1;
        r->type = BENCH_REPLY_BULK;
        r->str = p + head;
        r->len = (size_t)n;
        return (long)(head + (size_t)n + 2);
    default: /* '*' */
        if (parse_i64(line, line_end, &n) != 0 || n < -1 ||
            n > BENCH_RESP_MAX_COUNT)
            return -1;
        if (n == -1) {
            r->type = BENCH_REPLY_NIL;
            return (long)head;
        }
        r->type = BENCH_REPLY_ARRAY;
        r->integer = n;
        r->elems = p + head;
        *children = n;
        return (long)head;
    }
}

void bench_resp_scan_reset(bench_resp_scan *s)
{
    s->off = 0;
    s->depth = 0;
}

/*
 * Items are scanned one after another, iteratively: an array header
 * opens a level awaiting its count of elements; every whole item counts
 * one element off the innermost open level, and a level that reaches
 * zero is itself a whole item of the level around it.  The reply is whole
 * when no level is open.
 */
long bench_resp_scan_reply(bench_resp_scan *s, const char *p, size_t len,
                           bench_reply *r)
{
    bench_reply item;
    int64_t children;
    size_t total;
    long used;

    if (s->off > len) {
        bench_resp_scan_reset(s); /* the caller broke the contract */
        return -1;
    }
    for (;;) {
        used = scan_item(p + s->off, len - s->off, &item, &children);
        if (used < 0) {
            bench_resp_scan_reset(s);
            return -1;
        }
        if (used == 0)
            return 0;
        s->off += (size_t)used;
        if (children > 0) {
            if (s->depth >= BENCH_RESP_MAX_DEPTH) {
                bench_resp_scan_reset(s);
                return -1;
            }
            s->left[s->depth++] = children;
            continue;
        }
        while (s->depth > 0 && --s->left[s->depth - 1] == 0)
            s->depth--;
        if (s->depth == 0)
            break;
    }
    total = s->off;
    bench_resp_scan_reset(s);
    /* The top item again, for *r: a scalar is whole in p[0, total); an
     * array's header says its count, and its elements are the rest. */
    if (scan_item(p, total, r, &children) <= 0)
        return -1; /* cannot happen: it was scanned above */
    if (r->type == BENCH_REPLY_ARRAY)
        r->elems_len = total - (size_t)(r->elems - p);
    return (long)total;
}

long bench_resp_parse(const char *p, size_t len, bench_reply *r)
{
    bench_resp_scan s;

    bench_resp_scan_reset(&s);
    return bench_resp_scan_reply(&s, p, len, r);
}

void bench_reply_text(const bench_reply *r, char *buf, size_t len)
{
    size_t i, n = r->str != NULL ? r->len : 0;

    if (len == 0)
        return;
    if (n > len - 1)
        n = len - 1;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)r->str[i];

        buf[i] = ch >= ' ' && ch < ASCII_DEL ? (char)ch : '?';
    }
    buf[n] = '\0';
}

int bench_reply_to_i64(const bench_reply *r, int64_t *out)
{
    if (r->type == BENCH_REPLY_INTEGER) {
        *out = r->integer;
        return 0;
    }
    if (r->type != BENCH_REPLY_BULK && r->type != BENCH_REPLY_STATUS)
        return EINVAL;
    return parse_i64(r->str, r->str + r->len, out);
}
