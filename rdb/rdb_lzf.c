/*
 * rdb_lzf.c - an LZF compressor and decompressor written from the format
 * (rdb_lzf.h). The compressor hashes every 3-byte sequence into a table
 * of input positions and takes the candidate when its bytes really match
 * and it lies within reach; it favours speed over the last byte of ratio.
 */
#include "rdb/rdb_lzf.h"
#include "rdb/rdb_err.h"

#include <string.h>

#define LIT_MAX 32 /* literal bytes one control byte covers */
#define MATCH_MIN 3
#define SHORT_LEN_MAX 7    /* length field of a short reference (len - 2) */
#define LONG_EXTRA_MAX 255 /* extra length byte of a long reference */
#define MATCH_MAX (SHORT_LEN_MAX + LONG_EXTRA_MAX + 2)
#define OFF_MAX 8192 /* how far back a reference reaches */
#define OFF_HIGH_SHIFT 8
#define LEN_SHIFT 5
#define CTRL_LIT_LIMIT 32 /* control bytes below this are literal runs */
#define HASH_MUL 2654435761u
#define HASH_BITS 32

static uint32_t hash3(const uint8_t *p)
{
    uint32_t v = ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];

    return (v * HASH_MUL) >> (HASH_BITS - RDB_LZF_HTAB_LOG);
}

/* Emit the literals [from, to) in runs of LIT_MAX; 0, or -1 if no room. */
static int put_literals(const uint8_t *in, size_t from, size_t to, uint8_t *out,
                        size_t cap, size_t *op)
{
    while (from < to) {
        size_t run = to - from < LIT_MAX ? to - from : LIT_MAX;
        if (*op + 1 + run > cap)
            return -1;
        out[(*op)++] = (uint8_t)(run - 1);
        memcpy(out + *op, in + from, run);
        *op += run;
        from += run;
    }
    return 0;
}

size_t rdb_lzf_compress(const void *src, size_t n, void *dst, size_t cap,
                        uint32_t *htab)
{
    const uint8_t *in = src;
    uint8_t *out = dst;
    size_t ip = 0, lit = 0, op = 0;

    if (n > UINT32_MAX)
        return 0;
    while (ip + MATCH_MIN <= n) {
        uint32_t h = hash3(in + ip);
        size_t ref = htab[h];

        htab[h] = (uint32_t)ip;
        if (ref >= ip || ip - ref - 1 >= OFF_MAX ||
            memcmp(in + ref, in + ip, MATCH_MIN) != 0) {
            ip++;
            continue;
        }
        size_t max = n - ip < MATCH_MAX ? n - ip : MATCH_MAX;
        size_t len = MATCH_MIN;
        while (len < max && in[ref + len] == in[ip + len])
            len++;
        if (put_literals(in, lit, ip, out, cap, &op))
            return 0;
        size_t off = ip - ref - 1, l = len - 2;
        if (l < SHORT_LEN_MAX) {
            if (op + 2 > cap)
                return 0;
            out[op++] = (uint8_t)((l << LEN_SHIFT) | (off >> OFF_HIGH_SHIFT));
        } else {
            if (op + 3 > cap)
                return 0;
            out[op++] = (uint8_t)((SHORT_LEN_MAX << LEN_SHIFT) |
                                  (off >> OFF_HIGH_SHIFT));
            out[op++] = (uint8_t)(l - SHORT_LEN_MAX);
        }
        out[op++] = (uint8_t)off;
        /* Remember the positions the match covers, for later matches. */
        for (size_t q = ip + 1; q < ip + len && q + MATCH_MIN <= n; q++)
            htab[hash3(in + q)] = (uint32_t)q;
        ip += len;
        lit = ip;
    }
    if (put_literals(in, lit, n, out, cap, &op))
        return 0;
    return op;
}

int rdb_lzf_decompress(const void *src, size_t n, void *dst, size_t out_len)
{
    const uint8_t *ip = src, *end = ip + n;
    uint8_t *out = dst, *op = out, *out_end = out + out_len;

    while (ip < end) {
        unsigned ctrl = *ip++;
        if (ctrl < CTRL_LIT_LIMIT) {
            size_t run = ctrl + 1;
            if ((size_t)(end - ip) < run || (size_t)(out_end - op) < run)
                return RDB_ECORRUPT;
            memcpy(op, ip, run);
            ip += run;
            op += run;
            continue;
        }
        size_t len = ctrl >> LEN_SHIFT;
        if (len == SHORT_LEN_MAX) {
            if (ip >= end)
                return RDB_ECORRUPT;
            len += *ip++;
        }
        if (ip >= end)
            return RDB_ECORRUPT;
        size_t back = (((size_t)ctrl & 0x1f) << OFF_HIGH_SHIFT) + *ip++ + 1;
        len += 2;
        if (back > (size_t)(op - out) || (size_t)(out_end - op) < len)
            return RDB_ECORRUPT;
        const uint8_t *ref = op - back;
        /* Byte by byte: the source may overlap what is being written. */
        for (size_t i = 0; i < len; i++)
            op[i] = ref[i];
        op += len;
    }
    return op == out_end ? 0 : RDB_ECORRUPT;
}
