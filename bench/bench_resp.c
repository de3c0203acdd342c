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

static long parse_at(const char *p, size_t len, bench_reply *r, int depth)
{
    const char *nl, *line, *line_end;
    size_t head;
    int64_t n, i;
    bench_reply sub;

    if (depth > BENCH_RESP_MAX_DEPTH)
        return -1;
    if (len < 1)
        return 0;
    nl = memchr(p, '\n', len);
    if (nl == NULL)
        return 0;
    if (nl == p || nl[-1] != '\r')
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
        if (parse_i64(line, line_end, &r->integer) != 0)
            return -1;
        return (long)head;
    case '$':
        if (parse_i64(line, line_end, &n) != 0)
            return -1;
        if (n < 0) {
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
    case '*': {
        size_t off = head;

        if (parse_i64(line, line_end, &n) != 0)
            return -1;
        if (n < 0) {
            r->type = BENCH_REPLY_NIL;
            return (long)head;
        }
        for (i = 0; i < n; i++) {
            long used = parse_at(p + off, len - off, &sub, depth + 1);

            if (used <= 0)
                return used;
            off += (size_t)used;
        }
        r->type = BENCH_REPLY_ARRAY;
        r->integer = n;
        r->elems = p + head;
        r->elems_len = off - head;
        return (long)off;
    }
    default:
        return -1;
    }
}

long bench_resp_parse(const char *p, size_t len, bench_reply *r)
{
    return parse_at(p, len, r, 0);
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
