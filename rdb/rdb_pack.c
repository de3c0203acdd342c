/*
 * rdb_pack.c - walking listpacks, ziplists, intsets and zipmaps with
 * every length checked against the blob, and building listpacks and
 * intsets. The layouts, from their format descriptions:
 *
 * listpack: <total u32><count u16> entries <0xff>; an entry is its
 *   encoding and data then "backlen", the size of encoding+data in 1..5
 *   bytes, 7 bits each, most significant first, all but the first with
 *   bit 7 set (so it reads right to left). Encodings: 0xxxxxxx 7-bit
 *   uint; 10xxxxxx string up to 63; 110xxxxx +1 byte 13-bit int;
 *   1110xxxx +1 byte string up to 4095; 0xf0 +u32 string; 0xf1/f2/f3/f4
 *   int 16/24/32/64 (little endian).
 * ziplist: <bytes u32><tail u32><count u16> entries <0xff>; an entry is
 *   the previous entry's size (1 byte, or 0xfe + u32), its encoding
 *   (00 6-bit string length; 01 14-bit big-endian; 0x80 + u32 big-endian;
 *   0xc0 int16, 0xd0 int32, 0xe0 int64, 0xf0 int24, 0xfe int8, 0xf1..0xfd
 *   the values 0..12) and its data.
 * intset: <width u32: 2, 4 or 8><count u32> values, little endian.
 * zipmap: <count u8> then <len>key<len><free>value<free bytes> pairs and
 *   0xff; a len is one byte below 254, or 254 + u32.
 */
#include "rdb/rdb_pack.h"
#include "rdb/rdb_err.h"

#include <errno.h>
#include <string.h>

#define BYTE_BITS 8

/* listpack encodings */
#define LP_7BIT_MASK 0x80
#define LP_6BIT_STR_MASK 0xc0
#define LP_6BIT_STR 0x80
#define LP_13BIT_MASK 0xe0
#define LP_13BIT 0xc0
#define LP_12BIT_STR_MASK 0xf0
#define LP_12BIT_STR 0xe0
#define LP_32BIT_STR 0xf0
#define LP_INT16 0xf1
#define LP_INT24 0xf2
#define LP_INT32 0xf3
#define LP_INT64 0xf4
#define LP_7BIT_MAX 127
#define LP_13BIT_MIN (-4096)
#define LP_13BIT_MAX 4095
#define LP_13BIT_RANGE 8192
#define LP_24BIT_MIN (-8388608)
#define LP_24BIT_MAX 8388607
#define LP_6BIT_STR_MAX 63
#define LP_12BIT_STR_MAX 4095
#define BACKLEN_BITS 7
#define BACKLEN_MORE 0x80
#define BACKLEN_MASK 0x7f
#define BACKLEN_MAX_BYTES 5

/* ziplist encodings */
#define ZL_BIGPREV 0xfe
#define ZL_STR_MASK 0xc0
#define ZL_STR_6 0x00
#define ZL_STR_14 0x40
#define ZL_STR_32 0x80
#define ZL_INT16 0xc0
#define ZL_INT32 0xd0
#define ZL_INT64 0xe0
#define ZL_INT24 0xf0
#define ZL_INT8 0xfe
#define ZL_IMM_MIN 0xf1
#define ZL_IMM_MAX 0xfd
#define ZL_IMM_MASK 0x0f

/* zipmap */
#define ZM_BIGLEN 254
#define ZM_END 255

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = bytes - 1; i >= 0; i--)
        v = (v << BYTE_BITS) | p[i];
    return v;
}

static uint64_t be(const uint8_t *p, int bytes)
{
    uint64_t v = 0;

    for (int i = 0; i < bytes; i++)
        v = (v << BYTE_BITS) | p[i];
    return v;
}

/* A `bytes`-wide little-endian two's complement value. */
static int64_t le_signed(const uint8_t *p, int bytes)
{
    uint64_t v = le(p, bytes);
    int shift = 64 - BYTE_BITS * bytes;

    return shift ? (int64_t)(v << shift) >> shift : (int64_t)v;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= BYTE_BITS)
        p[i] = (uint8_t)v;
}

/* Bytes of the back length of an entry of l bytes, by Redis's
 * thresholds (one byte up to 127, then one more byte from each
 * 2^(7n) - 1 on), which its readers recompute when they skip an entry. */
static size_t backlen_bytes(size_t l)
{
    if (l <= LP_7BIT_MAX)
        return 1;
    for (size_t n = 2; n < BACKLEN_MAX_BYTES; n++)
        if (l < ((size_t)1 << (BACKLEN_BITS * n)) - 1)
            return n;
    return BACKLEN_MAX_BYTES;
}

int rdb_pack_open(rdb_pack_iter *it, int kind, const uint8_t *blob, size_t len)
{
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->blob = blob;
    it->declared = UINT64_MAX;
    switch (kind) {
    case RDB_PACK_LISTPACK:
        if (len < RDB_LP_HEADER + 1 || le(blob, 4) != len ||
            blob[len - 1] != RDB_LP_END)
            return RDB_ECORRUPT;
        if (le(blob + 4, 2) != RDB_LP_COUNT_UNKNOWN)
            it->declared = le(blob + 4, 2);
        it->p = blob + RDB_LP_HEADER;
        it->end = blob + len - 1;
        return 0;
    case RDB_PACK_ZIPLIST:
        if (len < RDB_ZL_HEADER + 1 || le(blob, 4) != len ||
            le(blob + 4, 4) >= len || blob[len - 1] != RDB_ZL_END)
            return RDB_ECORRUPT;
        if (le(blob + 8, 2) != RDB_ZL_COUNT_UNKNOWN)
            it->declared = le(blob + 8, 2);
        it->p = blob + RDB_ZL_HEADER;
        it->end = blob + len - 1;
        return 0;
    case RDB_PACK_INTSET: {
        if (len < RDB_IS_HEADER)
            return RDB_ECORRUPT;
        uint64_t w = le(blob, 4), n = le(blob + 4, 4);
        if ((w != 2 && w != 4 && w != 8) || RDB_IS_HEADER + w * n != len)
            return RDB_ECORRUPT;
        it->width = (unsigned)w;
        it->declared = n;
        it->p = blob + RDB_IS_HEADER;
        it->end = blob + len;
        return 0;
    }
    case RDB_PACK_ZIPMAP:
        if (len < 2 || blob[len - 1] != ZM_END)
            return RDB_ECORRUPT;
        it->p = blob + 1;
        it->end = blob + len - 1;
        return 0;
    default: return RDB_ECORRUPT;
    }
}

/* The end: the terminator is where the entries stop, the count agrees. */
static int at_end(rdb_pack_iter *it)
{
    if (it->declared != UINT64_MAX && it->declared != it->seen)
        return RDB_ECORRUPT;
    return 0;
}

static int lp_next(rdb_pack_iter *it, rdb_pack_item *out)
{
    const uint8_t *p = it->p;
    size_t avail = (size_t)(it->end - p), enc;
    unsigned b;

    if (avail == 0)
        return at_end(it);
    b = p[0];
    memset(out, 0, sizeof *out);
    if (!(b & LP_7BIT_MASK)) {
        out->is_int = 1;
        out->v = b;
        enc = 1;
    } else if ((b & LP_6BIT_STR_MASK) == LP_6BIT_STR) {
        out->len = b & ~LP_6BIT_STR_MASK;
        out->s = p + 1;
        enc = 1 + out->len;
    } else if ((b & LP_13BIT_MASK) == LP_13BIT) {
        if (avail < 2)
            return RDB_ECORRUPT;
        int64_t v = ((int64_t)(b & ~LP_13BIT_MASK) << BYTE_BITS) | p[1];
        out->is_int = 1;
        out->v = v > LP_13BIT_MAX ? v - LP_13BIT_RANGE : v;
        enc = 2;
    } else if ((b & LP_12BIT_STR_MASK) == LP_12BIT_STR) {
        if (avail < 2)
            return RDB_ECORRUPT;
        out->len = ((size_t)(b & ~LP_12BIT_STR_MASK) << BYTE_BITS) | p[1];
        out->s = p + 2;
        enc = 2 + out->len;
    } else {
        int ib = b == LP_INT16   ? 2
                 : b == LP_INT24 ? 3
                 : b == LP_INT32 ? 4
                 : b == LP_INT64 ? 8
                                 : 0;
        if (b == LP_32BIT_STR) {
            if (avail < 5)
                return RDB_ECORRUPT;
            out->len = (size_t)le(p + 1, 4);
            out->s = p + 5;
            if (out->len > avail)
                return RDB_ECORRUPT;
            enc = 5 + out->len;
        } else if (ib) {
            if (avail < (size_t)ib + 1)
                return RDB_ECORRUPT;
            out->is_int = 1;
            out->v = le_signed(p + 1, ib);
            enc = (size_t)ib + 1;
        } else {
            return RDB_ECORRUPT;
        }
    }
    size_t bl = backlen_bytes(enc);
    if (enc > avail || bl > avail - enc)
        return RDB_ECORRUPT;
    /* The back length must say what the entry is. */
    const uint8_t *q = p + enc + bl - 1;
    size_t got = 0;
    for (size_t i = 0; i < bl; i++, q--) {
        got |= (size_t)(*q & BACKLEN_MASK) << (BACKLEN_BITS * i);
        if ((i + 1 < bl) != ((*q & BACKLEN_MORE) != 0))
            return RDB_ECORRUPT;
    }
    if (got != enc)
        return RDB_ECORRUPT;
    it->p = p + enc + bl;
    it->seen++;
    return 1;
}

static int zl_next(rdb_pack_iter *it, rdb_pack_item *out)
{
    const uint8_t *p = it->p;
    size_t avail = (size_t)(it->end - p), prev, head, data;
    unsigned b;

    if (avail == 0)
        return at_end(it);
    if (p[0] == ZL_BIGPREV) {
        if (avail < 5)
            return RDB_ECORRUPT;
        prev = (size_t)le(p + 1, 4);
        head = 5;
    } else if (p[0] == RDB_ZL_END) {
        return RDB_ECORRUPT;
    } else {
        prev = p[0];
        head = 1;
    }
    if (prev != it->prev_size || head >= avail)
        return RDB_ECORRUPT;
    memset(out, 0, sizeof *out);
    b = p[head];
    if ((b & ZL_STR_MASK) == ZL_STR_6) {
        data = b & ~ZL_STR_MASK;
        head += 1;
    } else if ((b & ZL_STR_MASK) == ZL_STR_14) {
        if (avail < head + 2)
            return RDB_ECORRUPT;
        data = ((size_t)(b & ~ZL_STR_MASK) << BYTE_BITS) | p[head + 1];
        head += 2;
    } else if (b == ZL_STR_32) {
        if (avail < head + 5)
            return RDB_ECORRUPT;
        data = (size_t)be(p + head + 1, 4);
        head += 5;
    } else {
        int ib = b == ZL_INT16   ? 2
                 : b == ZL_INT32 ? 4
                 : b == ZL_INT64 ? 8
                 : b == ZL_INT24 ? 3
                 : b == ZL_INT8  ? 1
                                 : 0;
        out->is_int = 1;
        head += 1;
        if (b >= ZL_IMM_MIN && b <= ZL_IMM_MAX) {
            out->v = (int64_t)(b & ZL_IMM_MASK) - 1;
            data = 0;
        } else if (ib) {
            if (avail < head + (size_t)ib)
                return RDB_ECORRUPT;
            out->v = le_signed(p + head, ib);
            data = (size_t)ib;
        } else {
            return RDB_ECORRUPT;
        }
    }
    if (head > avail || data > avail - head)
        return RDB_ECORRUPT;
    if (!out->is_int) {
        out->s = p + head;
        out->len = data;
    }
    it->prev_size = head + data;
    it->p = p + head + data;
    it->seen++;
    return 1;
}

static int is_next(rdb_pack_iter *it, rdb_pack_item *out)
{
    if (it->p == it->end)
        return 0;
    memset(out, 0, sizeof *out);
    out->is_int = 1;
    out->v = le_signed(it->p, (int)it->width);
    it->p += it->width;
    it->seen++;
    return 1;
}

/* A zipmap length at *p; advances it. -1 if corrupt. */
static int zm_len(rdb_pack_iter *it, size_t *len)
{
    size_t avail = (size_t)(it->end - it->p);

    if (avail == 0)
        return -1;
    if (it->p[0] < ZM_BIGLEN) {
        *len = it->p[0];
        it->p += 1;
        return 0;
    }
    if (it->p[0] != ZM_BIGLEN || avail < 5)
        return -1;
    *len = (size_t)le(it->p + 1, 4);
    it->p += 5;
    return 0;
}

static int zm_next(rdb_pack_iter *it, rdb_pack_item *out)
{
    size_t len, free_bytes = 0;

    if (it->p == it->end)
        return it->zm_value ? RDB_ECORRUPT : 0;
    if (zm_len(it, &len))
        return RDB_ECORRUPT;
    if (it->zm_value) {
        if (it->p == it->end)
            return RDB_ECORRUPT;
        free_bytes = *it->p++;
    }
    size_t avail = (size_t)(it->end - it->p);
    if (len > avail || free_bytes > avail - len)
        return RDB_ECORRUPT;
    memset(out, 0, sizeof *out);
    out->s = it->p;
    out->len = len;
    it->p += len + free_bytes;
    it->zm_value = !it->zm_value;
    it->seen++;
    return 1;
}

int rdb_pack_next(rdb_pack_iter *it, rdb_pack_item *out)
{
    switch (it->kind) {
    case RDB_PACK_LISTPACK: return lp_next(it, out);
    case RDB_PACK_ZIPLIST: return zl_next(it, out);
    case RDB_PACK_INTSET: return is_next(it, out);
    case RDB_PACK_ZIPMAP: return zm_next(it, out);
    default: return RDB_ECORRUPT;
    }
}

void rdb_pack_item_text(const rdb_pack_item *it, char *buf, const uint8_t **s,
                        size_t *n)
{
    if (it->is_int) {
        *n = rdb_ll_to_string(it->v, buf);
        *s = (const uint8_t *)buf;
    } else {
        *s = it->s;
        *n = it->len;
    }
}

/* ---- building ---- */

int rdb_lp_begin(rdb_lp *lp, rdb_buf *b)
{
    int rc;

    lp->b = b;
    lp->start = b->len;
    lp->count = 0;
    if ((rc = rdb_buf_reserve(b, b->len + RDB_LP_HEADER)))
        return rc;
    b->len += RDB_LP_HEADER;
    return 0;
}

/* Encoding and data of integer v into e; their size. */
static size_t lp_int_encode(uint8_t *e, int64_t v)
{
    if (v >= 0 && v <= LP_7BIT_MAX) {
        e[0] = (uint8_t)v;
        return 1;
    }
    if (v >= LP_13BIT_MIN && v <= LP_13BIT_MAX) {
        uint64_t u = (uint64_t)(v < 0 ? v + LP_13BIT_RANGE : v);
        e[0] = (uint8_t)(LP_13BIT | (u >> BYTE_BITS));
        e[1] = (uint8_t)u;
        return 2;
    }
    if (v >= INT16_MIN && v <= INT16_MAX) {
        e[0] = LP_INT16;
        put_le(e + 1, (uint64_t)v, 2);
        return 3;
    }
    if (v >= LP_24BIT_MIN && v <= LP_24BIT_MAX) {
        e[0] = LP_INT24;
        put_le(e + 1, (uint64_t)v, 3);
        return 4;
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
        e[0] = LP_INT32;
        put_le(e + 1, (uint64_t)v, 4);
        return 5;
    }
    e[0] = LP_INT64;
    put_le(e + 1, (uint64_t)v, 8);
    return 9;
}

/* Header bytes of a string entry of n bytes into e (may be NULL). */
static size_t lp_str_head(uint8_t *e, size_t n)
{
    if (n <= LP_6BIT_STR_MAX) {
        if (e)
            e[0] = (uint8_t)(LP_6BIT_STR | n);
        return 1;
    }
    if (n <= LP_12BIT_STR_MAX) {
        if (e) {
            e[0] = (uint8_t)(LP_12BIT_STR | (n >> BYTE_BITS));
            e[1] = (uint8_t)n;
        }
        return 2;
    }
    if (e) {
        e[0] = LP_32BIT_STR;
        put_le(e + 1, n, 4);
    }
    return 5;
}

static void put_backlen(uint8_t *p, size_t l, size_t bl)
{
    for (size_t i = 0; i < bl; i++) {
        uint8_t v = (uint8_t)((l >> (BACKLEN_BITS * (bl - 1 - i))) &
                              BACKLEN_MASK);
        p[i] = i == 0 ? v : (uint8_t)(v | BACKLEN_MORE);
    }
}

size_t rdb_lp_entry_size(const void *s, size_t n)
{
    uint8_t e[9];
    int64_t v;
    size_t enc = rdb_string_to_ll(s, n, &v) ? lp_int_encode(e, v)
                                            : lp_str_head(NULL, n) + n;

    return enc + backlen_bytes(enc);
}

int rdb_lp_add_int(rdb_lp *lp, int64_t v)
{
    uint8_t e[9 + BACKLEN_MAX_BYTES];
    size_t enc = lp_int_encode(e, v), bl = backlen_bytes(enc);

    put_backlen(e + enc, enc, bl);
    lp->count++;
    return rdb_buf_append(lp->b, e, enc + bl);
}

int rdb_lp_add(rdb_lp *lp, const void *s, size_t n)
{
    uint8_t head[5], tail[BACKLEN_MAX_BYTES];
    size_t h, enc, bl;
    int64_t v;
    int rc;

    if (rdb_string_to_ll(s, n, &v))
        return rdb_lp_add_int(lp, v);
    h = lp_str_head(head, n);
    enc = h + n;
    bl = backlen_bytes(enc);
    put_backlen(tail, enc, bl);
    if ((rc = rdb_buf_reserve(lp->b, lp->b->len + enc + bl)))
        return rc;
    memcpy(lp->b->data + lp->b->len, head, h);
    if (n)
        memcpy(lp->b->data + lp->b->len + h, s, n);
    memcpy(lp->b->data + lp->b->len + enc, tail, bl);
    lp->b->len += enc + bl;
    lp->count++;
    return 0;
}

size_t rdb_lp_bytes(const rdb_lp *lp) { return lp->b->len - lp->start + 1; }

int rdb_lp_end(rdb_lp *lp)
{
    size_t total = rdb_lp_bytes(lp);
    uint8_t end = RDB_LP_END;
    int rc;

    if (total > UINT32_MAX)
        return RDB_ETOOBIG;
    if ((rc = rdb_buf_append(lp->b, &end, 1)))
        return rc;
    put_le(lp->b->data + lp->start, total, 4);
    put_le(lp->b->data + lp->start + 4,
           lp->count < RDB_LP_COUNT_UNKNOWN ? lp->count : RDB_LP_COUNT_UNKNOWN,
           2);
    return 0;
}

int rdb_intset_build(rdb_buf *b, const int64_t *v, size_t n)
{
    unsigned w = 2;
    int rc;

    for (size_t i = 0; i < n; i++) {
        if (v[i] < INT32_MIN || v[i] > INT32_MAX)
            w = 8;
        else if ((v[i] < INT16_MIN || v[i] > INT16_MAX) && w < 4)
            w = 4;
    }
    if (n > UINT32_MAX)
        return RDB_ETOOBIG;
    if ((rc = rdb_buf_reserve(b, b->len + RDB_IS_HEADER + (size_t)w * n)))
        return rc;
    put_le(b->data + b->len, w, 4);
    put_le(b->data + b->len + 4, n, 4);
    b->len += RDB_IS_HEADER;
    for (size_t i = 0; i < n; i++) {
        put_le(b->data + b->len, (uint64_t)v[i], (int)w);
        b->len += w;
    }
    return 0;
}
