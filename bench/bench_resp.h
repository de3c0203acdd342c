/*
 * bench_resp: RESP2 for larder-bench: a growable byte buffer, command
 * encoding straight into it, and a reply parser that works in place on a
 * contiguous read buffer (no copies, no allocation).
 */
#ifndef BENCH_RESP_H
#define BENCH_RESP_H

#include <stddef.h>
#include <stdint.h>

/* A byte buffer: bytes [off, len) are pending; owned by one thread. */
typedef struct bench_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t off;
} bench_buf;

/* Release the buffer's memory and zero it. */
void bench_buf_fini(bench_buf *b);

/* Make room for n more bytes after len.  Returns 0 or ENOMEM. */
int bench_buf_reserve(bench_buf *b, size_t n);

/* Drop the consumed prefix [0, off) by moving the rest to the front. */
void bench_buf_compact(bench_buf *b);

/* Pending bytes. */
static inline size_t bench_buf_pending(const bench_buf *b)
{
    return b->len - b->off;
}

/*
 * Command encoding.  A command is "*argc" then argc bulk arguments; the
 * caller must append exactly argc arguments after bench_cmd_begin().
 * These functions abort the program on ENOMEM: a load generator that
 * cannot allocate a few bytes has nothing sensible left to do.
 */
void bench_cmd_begin(bench_buf *b, unsigned argc);
void bench_cmd_arg(bench_buf *b, const void *p, size_t len);
/* One argument made of two byte ranges back to back. */
void bench_cmd_arg2(bench_buf *b, const void *p1, size_t len1, const void *p2,
                    size_t len2);
void bench_cmd_arg_str(bench_buf *b, const char *s);
void bench_cmd_arg_u64(bench_buf *b, uint64_t v);
void bench_cmd_arg_i64(bench_buf *b, int64_t v);
/* A key: prefix then the index zero-padded to BENCH_KEY_DIGITS digits. */
void bench_cmd_arg_key(bench_buf *b, const char *prefix, uint64_t index);
/* Encode a whole command from a NUL-terminated argv. */
void bench_cmd_argv(bench_buf *b, unsigned argc, const char *const *argv);

/* Keys look like redis-benchmark's "key:000000012345". */
#define BENCH_KEY_DIGITS 12

typedef enum bench_reply_type {
    BENCH_REPLY_STATUS,  /* +OK */
    BENCH_REPLY_ERROR,   /* -ERR ... */
    BENCH_REPLY_INTEGER, /* :1 */
    BENCH_REPLY_BULK,    /* $3 foo */
    BENCH_REPLY_NIL,     /* $-1 or *-1 */
    BENCH_REPLY_ARRAY    /* *N ... */
} bench_reply_type;

/* One parsed reply; str and elems point into the parsed buffer and live
 * as long as those bytes do. */
typedef struct bench_reply {
    bench_reply_type type;
    int64_t integer; /* INTEGER; the count for ARRAY */
    const char *str; /* STATUS, ERROR, BULK: the text, not terminated */
    size_t len;
    const char *elems; /* ARRAY: the first element's bytes */
    size_t elems_len;  /* ARRAY: bytes of all elements */
} bench_reply;

/* Nesting deeper than this is a protocol error. */
#define BENCH_RESP_MAX_DEPTH 16
/* Bytes of a "$N", "*N" or ":N" line, CRLF included: 20 digits and a
 * sign fit with room to spare.  A longer line is a protocol error, so
 * garbage fails at once instead of waiting for a newline forever. */
#define BENCH_RESP_MAX_NUM_LINE 32
/* Largest bulk length and array count accepted; beyond them a reply could
 * never arrive whole, so they are protocol errors too. */
#define BENCH_RESP_MAX_BULK ((int64_t)1 << 32)
#define BENCH_RESP_MAX_COUNT ((int64_t)1 << 32)

/*
 * Where the scan of a partly received reply stopped, so the next call
 * resumes there instead of parsing the reply's beginning again: a reply of
 * N bytes costs O(N) however many reads bring it (an HGETALL of a million
 * fields arrives in hundreds of reads).  Offsets count from the reply's
 * first byte, so the bytes may move between calls (buffer compaction) as
 * long as they do not change.  One per connection; no sharing.
 */
typedef struct bench_resp_scan {
    size_t off;     /* bytes of whole items scanned so far */
    unsigned depth; /* arrays opened and not yet complete */
    int64_t left[BENCH_RESP_MAX_DEPTH]; /* elements each still awaits */
} bench_resp_scan;

/* Forget any partial reply: the next call starts a new one. */
void bench_resp_scan_reset(bench_resp_scan *s);

/*
 * Scan one reply starting at p[0]; p[0, len) holds every byte received of
 * it so far (and maybe of later replies).  Returns the bytes the reply
 * spans (> 0) with *r filled and *s reset, 0 if the reply is not yet
 * whole (*s remembers how far it got: call again with the same start and
 * more bytes), or -1 on a protocol error (*s reset).  Never reads past
 * p[len - 1].
 */
long bench_resp_scan_reply(bench_resp_scan *s, const char *p, size_t len,
                           bench_reply *r);

/*
 * Parse one reply from p[0, len) from scratch.  Returns the bytes it spans
 * (> 0), 0 if the buffer does not yet hold a whole reply, or -1 on a
 * protocol error.  Elements of an array are parsed with further calls on
 * r->elems.  RESP2 only: RESP3 type bytes are protocol errors.
 */
long bench_resp_parse(const char *p, size_t len, bench_reply *r);

/* Copy r->str into buf (NUL-terminated, truncated to len - 1) with every
 * byte that is not printable ASCII replaced by '?', for messages. */
void bench_reply_text(const bench_reply *r, char *buf, size_t len);

/* Parse r->str as a signed decimal; 0 or EINVAL. */
int bench_reply_to_i64(const bench_reply *r, int64_t *out);

#endif /* BENCH_RESP_H */
