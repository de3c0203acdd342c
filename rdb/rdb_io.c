/*
 * rdb_io.c - the RDB byte level: buffered reading with offsets and the
 * running CRC64, buffered writing, lengths, strings, doubles.
 */
#include "rdb/rdb_io.h"
#include "rdb/rdb_crc64.h"
#include "rdb/rdb_err.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_MIN 64
#define LEN_TYPE_SHIFT 6
#define LEN_LOW_MASK 0x3f
#define LEN_6BIT_MAX 63u
#define LEN_14BIT_MAX 16383u
#define BYTE_BITS 8
#define TEXT_DOUBLE_MAX 255
#define DOUBLE_BYTES 8

/* ---- buffers ---- */

int rdb_buf_reserve(rdb_buf *b, size_t len)
{
    size_t cap;
    uint8_t *p;

    if (len <= b->cap)
        return 0;
    cap = b->cap ? b->cap : BUF_MIN;
    while (cap < len)
        cap = cap > SIZE_MAX / 2 ? len : cap * 2;
    if (!(p = realloc(b->data, cap)))
        return ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int rdb_buf_append(rdb_buf *b, const void *p, size_t n)
{
    int rc;

    if (n > SIZE_MAX - b->len)
        return ENOMEM;
    if ((rc = rdb_buf_reserve(b, b->len + n)))
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void rdb_buf_free(rdb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- reader ---- */

void rdb_reader_mem(rdb_reader *r, const void *p, size_t n, size_t max_string)
{
    memset(r, 0, sizeof *r);
    r->win = r->p = r->crc_mark = p;
    r->end = r->p + n;
    r->size = n;
    r->max_string = max_string;
    r->fd = -1;
}

static int fd_fill(void *ctx, uint8_t *dst, size_t cap, size_t *got)
{
    rdb_reader *r = ctx;
    ssize_t n;

    do
        n = read(r->fd, dst, cap);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno;
    *got = (size_t)n;
    return 0;
}

int rdb_reader_fd(rdb_reader *r, int fd, size_t window, uint64_t size,
                  size_t max_string)
{
    memset(r, 0, sizeof *r);
    if (!(r->own = malloc(window)))
        return ENOMEM;
    r->own_cap = window;
    r->win = r->p = r->end = r->crc_mark = r->own;
    r->size = size;
    r->max_string = max_string;
    r->fill = fd_fill;
    r->ctx = r;
    r->fd = fd;
    return 0;
}

void rdb_reader_fini(rdb_reader *r)
{
    free(r->own);
    r->own = NULL;
}

uint64_t rdb_reader_offset(const rdb_reader *r)
{
    return r->win_off + (uint64_t)(r->p - r->win);
}

static void fold_crc(rdb_reader *r)
{
    if (r->p > r->crc_mark)
        r->crc = rdb_crc64(r->crc, r->crc_mark, (size_t)(r->p - r->crc_mark));
    r->crc_mark = r->p;
}

uint64_t rdb_reader_crc(rdb_reader *r)
{
    fold_crc(r);
    return r->crc;
}

int rdb_reader_fail(rdb_reader *r, int code, const char *fmt, ...)
{
    va_list ap;

    if (r->err)
        return code;
    r->err = code;
    r->err_off = rdb_reader_offset(r);
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return code;
}

static int truncated(rdb_reader *r, size_t need)
{
    return rdb_reader_fail(r, RDB_ETRUNC,
                           "data ends %zu byte%s short of what it announces",
                           need, need == 1 ? "" : "s");
}

/* Refill the window after the bytes it holds; 0 with at least one new
 * byte, RDB_ETRUNC at the end, or errno. */
static int refill(rdb_reader *r, size_t need)
{
    size_t keep, got = 0;
    int rc;

    if (!r->fill)
        return truncated(r, need);
    fold_crc(r);
    keep = (size_t)(r->end - r->p);
    memmove(r->own, r->p, keep);
    r->win_off += (uint64_t)(r->p - r->win);
    r->win = r->p = r->crc_mark = r->own;
    r->end = r->own + keep;
    if ((rc = r->fill(r->ctx, r->own + keep, r->own_cap - keep, &got)))
        return rdb_reader_fail(r, rc, "read failed: %s", strerror(rc));
    if (got == 0)
        return truncated(r, need);
    r->end += got;
    return 0;
}

int rdb_read(rdb_reader *r, void *dst, size_t n)
{
    uint8_t *out = dst;
    int rc;

    while (n > 0) {
        size_t have = (size_t)(r->end - r->p);
        if (have == 0) {
            /* A long read goes around the window, CRC folded on the way. */
            if (r->fill && n >= r->own_cap) {
                size_t got = 0;
                fold_crc(r);
                if ((rc = r->fill(r->ctx, out, n, &got)))
                    return rdb_reader_fail(r, rc, "read failed: %s",
                                           strerror(rc));
                if (got == 0)
                    return truncated(r, n);
                r->crc = rdb_crc64(r->crc, out, got);
                r->win_off += got;
                out += got;
                n -= got;
                continue;
            }
            if ((rc = refill(r, n)))
                return rc;
            continue;
        }
        size_t take = have < n ? have : n;
        memcpy(out, r->p, take);
        r->p += take;
        out += take;
        n -= take;
    }
    return 0;
}

int rdb_skip(rdb_reader *r, uint64_t n)
{
    int rc;

    while (n > 0) {
        size_t have = (size_t)(r->end - r->p);
        if (have == 0) {
            if ((rc = refill(r, n > SIZE_MAX ? SIZE_MAX : (size_t)n)))
                return rc;
            continue;
        }
        size_t take = have < n ? have : (size_t)n;
        r->p += take;
        n -= take;
    }
    return 0;
}

int rdb_read_u8(rdb_reader *r, uint8_t *v)
{
    int rc;

    if (r->p == r->end && (rc = refill(r, 1)))
        return rc;
    *v = *r->p++;
    return 0;
}

static uint64_t le_value(const uint8_t *b, int bytes)
{
    uint64_t v = 0;

    for (int i = bytes - 1; i >= 0; i--)
        v = (v << BYTE_BITS) | b[i];
    return v;
}

static uint64_t be_value(const uint8_t *b, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v = (v << BYTE_BITS) | b[i];
    return v;
}

int rdb_read_le32(rdb_reader *r, uint32_t *v)
{
    uint8_t b[4];
    int rc = rdb_read(r, b, sizeof b);

    if (rc == 0)
        *v = (uint32_t)le_value(b, sizeof b);
    return rc;
}

int rdb_read_le64(rdb_reader *r, uint64_t *v)
{
    uint8_t b[8];
    int rc = rdb_read(r, b, sizeof b);

    if (rc == 0)
        *v = le_value(b, sizeof b);
    return rc;
}

int rdb_read_len(rdb_reader *r, uint64_t *len, int *enc)
{
    uint8_t b, x[8];
    int rc;

    if (enc)
        *enc = 0;
    if ((rc = rdb_read_u8(r, &b)))
        return rc;
    switch (b >> LEN_TYPE_SHIFT) {
    case RDB_LEN_6BIT: *len = b & LEN_LOW_MASK; return 0;
    case RDB_LEN_14BIT:
        if ((rc = rdb_read_u8(r, &x[0])))
            return rc;
        *len = ((uint64_t)(b & LEN_LOW_MASK) << BYTE_BITS) | x[0];
        return 0;
    case RDB_LEN_ENCVAL:
        if (!enc)
            return rdb_reader_fail(r, RDB_ECORRUPT,
                                   "an encoded value (0x%02x) where a length "
                                   "belongs",
                                   b);
        *enc = 1;
        *len = b & LEN_LOW_MASK;
        return 0;
    default:
        if (b == RDB_LEN_32BIT) {
            if ((rc = rdb_read(r, x, 4)))
                return rc;
            *len = be_value(x, 4);
            return 0;
        }
        if (b == RDB_LEN_64BIT) {
            if ((rc = rdb_read(r, x, 8)))
                return rc;
            *len = be_value(x, 8);
            return 0;
        }
        return rdb_reader_fail(r, RDB_ECORRUPT,
                               "unknown length encoding 0x%02x", b);
    }
}

/* Bytes the stream can still hold, for answering "truncated" before
 * allocating a length read from the input. */
static uint64_t remaining(const rdb_reader *r)
{
    uint64_t off = rdb_reader_offset(r);

    return r->size == UINT64_MAX || off > r->size ? UINT64_MAX : r->size - off;
}

/* Check a length read from the input against the limits. */
static int check_len(rdb_reader *r, uint64_t n, int in_input)
{
    if (n > r->max_string)
        return rdb_reader_fail(r, RDB_ETOOBIG,
                               "a string of %llu bytes is past the limit of "
                               "%zu",
                               (unsigned long long)n, r->max_string);
    if (in_input && n > remaining(r))
        return truncated(r, (size_t)(n - remaining(r)));
    return 0;
}

static int read_int_string(rdb_reader *r, uint64_t which, rdb_buf *scratch,
                           const uint8_t **s, size_t *n)
{
    static const int bytes[] = {
        [RDB_ENC_INT8] = 1, [RDB_ENC_INT16] = 2, [RDB_ENC_INT32] = 4
    };
    uint8_t b[4];
    int64_t v;
    int rc;

    if ((rc = rdb_read(r, b, (size_t)bytes[which])))
        return rc;
    if (which == RDB_ENC_INT8)
        v = (int8_t)b[0];
    else if (which == RDB_ENC_INT16)
        v = (int16_t)le_value(b, 2);
    else
        v = (int32_t)le_value(b, 4);
    if ((rc = rdb_buf_reserve(scratch, RDB_LL_MAX)))
        return rdb_reader_fail(r, rc, "out of memory");
    scratch->len = rdb_ll_to_string(v, (char *)scratch->data);
    *s = scratch->data;
    *n = scratch->len;
    return 0;
}

static int read_lzf_string(rdb_reader *r, rdb_buf *scratch, const uint8_t **s,
                           size_t *n)
{
    uint64_t clen, ulen;
    uint8_t *cbuf;
    int rc;

    if ((rc = rdb_read_len(r, &clen, NULL)) ||
        (rc = rdb_read_len(r, &ulen, NULL)))
        return rc;
    if ((rc = check_len(r, clen, 1)) || (rc = check_len(r, ulen, 0)))
        return rc;
    /* One allocation: the output, then the compressed bytes after it. */
    if ((size_t)ulen > SIZE_MAX - (size_t)clen ||
        (rc = rdb_buf_reserve(scratch, (size_t)ulen + (size_t)clen + 1)))
        return rdb_reader_fail(r, ENOMEM, "out of memory for %llu bytes",
                               (unsigned long long)ulen);
    cbuf = scratch->data + ulen;
    if ((rc = rdb_read(r, cbuf, (size_t)clen)))
        return rc;
    if (rdb_lzf_decompress(cbuf, (size_t)clen, scratch->data, (size_t)ulen))
        return rdb_reader_fail(r, RDB_ECORRUPT,
                               "an LZF string (%llu bytes into %llu) does "
                               "not decompress",
                               (unsigned long long)clen,
                               (unsigned long long)ulen);
    scratch->len = (size_t)ulen;
    *s = scratch->data;
    *n = scratch->len;
    return 0;
}

int rdb_read_string(rdb_reader *r, rdb_buf *scratch, const uint8_t **s,
                    size_t *n)
{
    uint64_t len;
    int enc, rc;

    if ((rc = rdb_read_len(r, &len, &enc)))
        return rc;
    if (enc) {
        if (len <= RDB_ENC_INT32)
            return read_int_string(r, len, scratch, s, n);
        if (len == RDB_ENC_LZF)
            return read_lzf_string(r, scratch, s, n);
        return rdb_reader_fail(r, RDB_ECORRUPT, "unknown string encoding %llu",
                               (unsigned long long)len);
    }
    if ((rc = check_len(r, len, 1)))
        return rc;
    if (!r->fill) {
        /* Memory: borrow the input itself. */
        if ((uint64_t)(r->end - r->p) < len)
            return truncated(r, (size_t)(len - (uint64_t)(r->end - r->p)));
        *s = r->p;
        *n = (size_t)len;
        r->p += len;
        return 0;
    }
    if ((rc = rdb_buf_reserve(scratch, len ? (size_t)len : 1)))
        return rdb_reader_fail(r, rc, "out of memory for %llu bytes",
                               (unsigned long long)len);
    if ((rc = rdb_read(r, scratch->data, (size_t)len)))
        return rc;
    scratch->len = (size_t)len;
    *s = scratch->data;
    *n = scratch->len;
    return 0;
}

int rdb_read_double_bin(rdb_reader *r, double *d)
{
    uint64_t u;
    int rc = rdb_read_le64(r, &u);

    if (rc == 0)
        memcpy(d, &u, sizeof *d);
    return rc;
}

int rdb_read_double_text(rdb_reader *r, double *d)
{
    char text[TEXT_DOUBLE_MAX + 1], *end;
    uint8_t len;
    int rc;

    if ((rc = rdb_read_u8(r, &len)))
        return rc;
    switch (len) {
    case RDB_DOUBLE_NAN: *d = NAN; return 0;
    case RDB_DOUBLE_POSINF: *d = INFINITY; return 0;
    case RDB_DOUBLE_NEGINF: *d = -INFINITY; return 0;
    default: break;
    }
    if ((rc = rdb_read(r, text, len)))
        return rc;
    text[len] = '\0';
    *d = strtod(text, &end);
    if (len == 0 || end != text + len)
        return rdb_reader_fail(r, RDB_ECORRUPT,
                               "a score \"%s\" that is not "
                               "a number",
                               text);
    return 0;
}

/* ---- writer ---- */

void rdb_writer_mem(rdb_writer *w, int compress)
{
    memset(w, 0, sizeof *w);
    w->compress = compress;
    w->fd = -1;
}

static int fd_flush(void *ctx, const uint8_t *p, size_t n)
{
    rdb_writer *w = ctx;

    while (n > 0) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

void rdb_writer_fd(rdb_writer *w, int fd, size_t chunk, int compress)
{
    rdb_writer_mem(w, compress);
    w->fd = fd;
    w->flush = fd_flush;
    w->ctx = w;
    w->flush_at = chunk;
}

int rdb_writer_flush(rdb_writer *w)
{
    int rc;

    if (w->err || !w->flush || w->buf.len == 0)
        return w->err;
    w->crc = rdb_crc64(w->crc, w->buf.data, w->buf.len);
    if ((rc = w->flush(w->ctx, w->buf.data, w->buf.len))) {
        w->err = rc;
        return rc;
    }
    w->flushed += w->buf.len;
    w->buf.len = 0;
    return 0;
}

void rdb_writer_fini(rdb_writer *w)
{
    rdb_buf_free(&w->buf);
    rdb_buf_free(&w->lzf);
    free(w->htab);
    w->htab = NULL;
}

uint64_t rdb_writer_bytes(const rdb_writer *w)
{
    return w->flushed + w->buf.len;
}

uint64_t rdb_writer_crc(rdb_writer *w)
{
    return rdb_crc64(w->crc, w->buf.data, w->buf.len);
}

int rdb_put(rdb_writer *w, const void *p, size_t n)
{
    int rc;

    if (w->err)
        return w->err;
    if ((rc = rdb_buf_append(&w->buf, p, n))) {
        w->err = rc;
        return rc;
    }
    if (w->flush && w->buf.len >= w->flush_at)
        return rdb_writer_flush(w);
    return 0;
}

int rdb_put_u8(rdb_writer *w, uint8_t v) { return rdb_put(w, &v, 1); }

int rdb_put_le64(rdb_writer *w, uint64_t v)
{
    uint8_t b[8];

    for (int i = 0; i < 8; i++, v >>= BYTE_BITS)
        b[i] = (uint8_t)v;
    return rdb_put(w, b, sizeof b);
}

int rdb_put_len(rdb_writer *w, uint64_t len)
{
    uint8_t b[9];
    int n;

    if (len <= LEN_6BIT_MAX) {
        b[0] = (uint8_t)len;
        n = 1;
    } else if (len <= LEN_14BIT_MAX) {
        b[0] = (uint8_t)((RDB_LEN_14BIT << LEN_TYPE_SHIFT) |
                         (len >> BYTE_BITS));
        b[1] = (uint8_t)len;
        n = 2;
    } else if (len <= UINT32_MAX) {
        b[0] = RDB_LEN_32BIT;
        for (int i = 0; i < 4; i++)
            b[1 + i] = (uint8_t)(len >> (BYTE_BITS * (3 - i)));
        n = 5;
    } else {
        b[0] = RDB_LEN_64BIT;
        for (int i = 0; i < 8; i++)
            b[1 + i] = (uint8_t)(len >> (BYTE_BITS * (7 - i)));
        n = 9;
    }
    return rdb_put(w, b, (size_t)n);
}

#define ENC_BYTE(which) \
    ((uint8_t)((RDB_LEN_ENCVAL << LEN_TYPE_SHIFT) | (which)))

/* Integer encoding of a canonical small integer string; 1 if written. */
static int put_int_string(rdb_writer *w, const void *p, size_t n, int *rc)
{
    uint8_t b[5];
    int64_t v;
    int len;

    if (n == 0 || n > RDB_INT_TRY_MAX || !rdb_string_to_ll(p, n, &v))
        return 0;
    if (v >= INT8_MIN && v <= INT8_MAX) {
        b[0] = ENC_BYTE(RDB_ENC_INT8);
        b[1] = (uint8_t)v;
        len = 2;
    } else if (v >= INT16_MIN && v <= INT16_MAX) {
        b[0] = ENC_BYTE(RDB_ENC_INT16);
        b[1] = (uint8_t)v;
        b[2] = (uint8_t)((uint64_t)v >> BYTE_BITS);
        len = 3;
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        b[0] = ENC_BYTE(RDB_ENC_INT32);
        for (int i = 0; i < 4; i++)
            b[1 + i] = (uint8_t)((uint64_t)v >> (BYTE_BITS * i));
        len = 5;
    } else {
        return 0;
    }
    *rc = rdb_put(w, b, (size_t)len);
    return 1;
}

/* LZF form when it saves RDB_LZF_MIN_GAIN bytes; 1 if written. */
static int put_lzf_string(rdb_writer *w, const void *p, size_t n, int *rc)
{
    size_t cap = n - RDB_LZF_MIN_GAIN, clen;

    if (!w->compress || n < RDB_LZF_MIN)
        return 0;
    if (!w->htab && !(w->htab = calloc(RDB_LZF_HTAB, sizeof *w->htab)))
        return 0;
    if (rdb_buf_reserve(&w->lzf, cap))
        return 0;
    if (!(clen = rdb_lzf_compress(p, n, w->lzf.data, cap, w->htab)))
        return 0;
    if ((*rc = rdb_put_u8(w, ENC_BYTE(RDB_ENC_LZF))) ||
        (*rc = rdb_put_len(w, clen)) || (*rc = rdb_put_len(w, n)))
        return 1;
    *rc = rdb_put(w, w->lzf.data, clen);
    return 1;
}

int rdb_put_blob(rdb_writer *w, const void *p, size_t n)
{
    int rc;

    if (put_lzf_string(w, p, n, &rc))
        return rc;
    if ((rc = rdb_put_len(w, n)))
        return rc;
    return rdb_put(w, p, n);
}

int rdb_put_string(rdb_writer *w, const void *p, size_t n)
{
    int rc;

    if (put_int_string(w, p, n, &rc))
        return rc;
    return rdb_put_blob(w, p, n);
}

int rdb_put_double_bin(rdb_writer *w, double d)
{
    uint64_t u;

    memcpy(&u, &d, sizeof u);
    return rdb_put_le64(w, u);
}

/* ---- integers as text ---- */

int rdb_string_to_ll(const uint8_t *s, size_t n, int64_t *v)
{
    uint64_t acc = 0, lim;
    size_t i = 0;
    int neg = 0;

    if (n == 0 || n >= RDB_LL_MAX)
        return 0;
    if (s[0] == '-') {
        neg = 1;
        i = 1;
        if (n == 1)
            return 0;
    }
    if (s[i] == '0')
        return n == 1 ? (*v = 0, 1) : 0; /* "0" only: no "-0", "01" */
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (d > 9 || acc > (lim - d) / 10)
            return 0;
        acc = acc * 10 + d;
    }
    *v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return 1;
}

size_t rdb_ll_to_string(int64_t v, char *buf)
{
    return (size_t)snprintf(buf, RDB_LL_MAX, "%lld", (long long)v);
}
