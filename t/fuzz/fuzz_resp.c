/*
 * fuzz_resp: libFuzzer target for the RESP request parser (srv_resp_parse) and
 * the inline splitter (srv_resp_split_args).
 *
 * Input layout: the first byte picks how the rest arrives, the rest is the
 * byte stream a client sent.
 *   bits 0-2  0: all at once; k > 0: chunks of 1 .. 2^(k-1) bytes
 *   bit 3     a tiny proto-max-bulk-len (exercises "invalid bulk length")
 *   bits 4-7  seed of the chunk-size generator
 * The stream is fed like a worker does (append, parse until MORE, consume
 * each finished command), into a buffer reallocated to its exact length
 * before every call so AddressSanitizer sees any read past it. Checked:
 * argv slices lie inside the buffer (multibulk) or the inline side buffer,
 * consumed <= len, need > len on MORE, errors carry "Protocol error: ",
 * and the commands and final error equal those of a whole-buffer parse.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_resp.h"

#define MODE_CHUNK_MASK 0x07u
#define MODE_SMALL_BULK 0x08u
#define MODE_SEED_SHIFT 4
#define SMALL_MAX_BULK 16
#define BIG_MAX_BULK (512LL * 1024 * 1024)
#define SPLIT_MAXARGS 64
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define ERROR_PREFIX "Protocol error: "
#define ERROR_SIZE 128

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a connection saw, folded into a hash (order-sensitive). */
typedef struct outcome {
    uint64_t hash;
    size_t commands;
    int rc;                 /* final: MORE, ERROR or NOMEM */
    char error[ERROR_SIZE]; /* a copy: the parser's text may be reused */
} outcome;

static void fold(uint64_t *h, const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) {
        *h ^= b[i];
        *h *= FNV_PRIME;
    }
}

static void check(int ok)
{
    if (!ok)
        abort();
}

static void check_done(const srv_parser *p, const char *buf, size_t len)
{
    check(p->consumed > 0 && p->consumed <= len);
    check(p->argc >= 0 && p->argc <= p->argv_cap);
    for (int i = 0; i < p->argc; i++) {
        const char *a = p->argv[i].ptr;
        size_t n = p->argv[i].len;
        int in_buf = a >= buf && n <= p->consumed &&
                     (size_t)(a - buf) <= p->consumed - n;
        int in_inl = p->inl && a >= p->inl && n < p->inl_cap &&
                     (size_t)(a - p->inl) < p->inl_cap - n;
        check(in_buf || in_inl);
        if (in_inl && !in_buf)
            check(a[n] == '\0');
    }
}

typedef struct feeder {
    uint32_t state;
    unsigned max; /* 0: everything at once */
} feeder;

static size_t next_chunk(feeder *f, size_t left)
{
    size_t n;

    if (f->max == 0)
        return left;
    /* xorshift32 */
    f->state ^= f->state << 13;
    f->state ^= f->state >> 17;
    f->state ^= f->state << 5;
    n = 1 + f->state % f->max;
    return n < left ? n : left;
}

static void run(const uint8_t *in, size_t size, feeder *f, long long max_bulk,
                outcome *out)
{
    srv_parser p;
    char *buf = NULL;
    size_t len = 0, at = 0;

    memset(out, 0, sizeof *out);
    out->hash = FNV_OFFSET;
    out->rc = SRV_PARSE_MORE;
    srv_resp_parser_init(&p, max_bulk);
    while (at < size && out->rc == SRV_PARSE_MORE) {
        size_t n = next_chunk(f, size - at);
        /* A fresh allocation of exactly len bytes: over-reads are caught. */
        char *nb = malloc(len + n);
        check(nb != NULL);
        if (len)
            memcpy(nb, buf, len);
        memcpy(nb + len, in + at, n);
        free(buf);
        buf = nb;
        len += n;
        at += n;
        for (;;) {
            int rc = srv_resp_parse(&p, buf, len);
            if (rc == SRV_PARSE_MORE) {
                check(p.need == 0 || p.need > len);
                break;
            }
            if (rc != SRV_PARSE_DONE) {
                check(rc == SRV_PARSE_ERROR || rc == SRV_PARSE_NOMEM);
                if (rc == SRV_PARSE_ERROR)
                    check(p.error != NULL &&
                          strncmp(p.error, ERROR_PREFIX,
                                  sizeof ERROR_PREFIX - 1) == 0);
                out->rc = rc;
                if (p.error) {
                    size_t elen = strlen(p.error);
                    check(elen < sizeof out->error);
                    memcpy(out->error, p.error, elen + 1);
                }
                break;
            }
            check_done(&p, buf, len);
            fold(&out->hash, &p.argc, sizeof p.argc);
            for (int i = 0; i < p.argc; i++) {
                fold(&out->hash, &p.argv[i].len, sizeof p.argv[i].len);
                fold(&out->hash, p.argv[i].ptr, p.argv[i].len);
            }
            out->commands++;
            memmove(buf, buf + p.consumed, len - p.consumed);
            len -= p.consumed;
            srv_resp_parser_reset(&p);
            if (len == 0)
                break;
        }
    }
    srv_resp_parser_fini(&p);
    free(buf);
}

/* Split the stream's first line as the inline protocol would. */
static void fuzz_split(const uint8_t *in, size_t size)
{
    const uint8_t *nl = memchr(in, '\n', size);
    size_t len = nl ? (size_t)(nl - in) : size;
    char *line = malloc(len ? len : 1);
    char *out = malloc(len + 1);
    srv_slice argv[SPLIT_MAXARGS];
    int argc;

    check(line && out);
    memcpy(line, in, len);
    argc = srv_resp_split_args(line, len, out, argv, SPLIT_MAXARGS);
    check(argc >= SRV_SPLIT_ETOOMANY && argc <= SPLIT_MAXARGS);
    for (int i = 0; i < argc; i++) {
        check(argv[i].ptr >= out && argv[i].len <= len &&
              (size_t)(argv[i].ptr - out) + argv[i].len <= len);
        check(argv[i].ptr[argv[i].len] == '\0');
    }
    free(line);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    outcome chunked, whole;
    feeder f, all = { 0, 0 };
    long long max_bulk;
    unsigned k;

    if (size < 1)
        return 0;
    k = data[0] & MODE_CHUNK_MASK;
    f.max = k ? 1u << (k - 1) : 0;
    f.state = 0x9e3779b9u ^ ((uint32_t)(data[0] >> MODE_SEED_SHIFT) << 8) ^
              (uint32_t)size;
    max_bulk = (data[0] & MODE_SMALL_BULK) ? SMALL_MAX_BULK : BIG_MAX_BULK;
    data++;
    size--;

    run(data, size, &f, max_bulk, &chunked);
    /*
     * However the bytes arrive, the same commands come out. (Only below
     * the inline limit: past it, whether a line is "too big" depends on
     * how much of it had arrived when the parser looked, as in Redis.)
     */
    if (size <= SRV_PROTO_INLINE_MAX) {
        run(data, size, &all, max_bulk, &whole);
        check(chunked.hash == whole.hash);
        check(chunked.commands == whole.commands);
        check(chunked.rc == whole.rc);
        check(strcmp(chunked.error, whole.error) == 0);
    }
    fuzz_split(data, size);
    return 0;
}
