/*
 * srv_cmd_bitmap.c - bitmap commands on strings: SETBIT GETBIT BITCOUNT
 * BITPOS BITOP BITFIELD BITFIELD_RO. Bits are numbered from the most
 * significant bit of byte 0. Reads walk the string's pieces
 * (st_string_read), so a chunked string's unwritten spans cost nothing
 * and are never materialized; writes patch the bytes they change
 * (st_string_patch), one span of a long string. BITOP computes its result
 * one span-sized window at a time.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"

#include <stdlib.h>
#include <string.h>

#define BITS_PER_BYTE 8
#define BYTE_MASK 0xffu
#define TOP_BIT 0x80u
#define WORD_BYTES 8
/* BITFIELD: widest field in bytes when not byte-aligned (64 bits + 7). */
#define FIELD_BYTES_MAX 9
#define FIELD_SIGNED_MAX_BITS 64
#define FIELD_UNSIGNED_MAX_BITS 63
/* BITOP works on windows of one span: each write covers a whole span. */
#define BITOP_WINDOW ST_STRING_CHUNK

static const char ERR_OFFSET[] =
    "ERR bit offset is not an integer or out of range";
static const char ERR_BIT_VALUE[] = "ERR bit is not an integer or out of range";
static const char ERR_BIT_ARG[] = "ERR The bit argument must be 1 or 0.";
static const char ERR_FIELD_TYPE[] =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 "
    "is not supported but i64 is.";
static const char ERR_OVERFLOW_TYPE[] = "ERR Invalid OVERFLOW type specified";
static const char ERR_RO_GET_ONLY[] =
    "ERR BITFIELD_RO only supports the GET subcommand";
static const char ERR_NOT_ONE_SOURCE[] =
    "ERR BITOP NOT must be called with a single source key.";

/*
 * A bit offset argument: a non-negative integer whose byte lies within
 * proto-max-bulk-len; with `hash`, "#n" means n * bits (BITFIELD's
 * field-index form; the multiplication wraps as Redis's does). 0, or -1
 * after replying Redis's error.
 */
static int offset_or_reply(srv_conn *c, const srv_slice *a, int hash, int bits,
                           uint64_t *out)
{
    int skip = hash && bits > 0 && a->len > 0 && a->ptr[0] == '#';
    long long v;

    if (!srv_util_str2ll(a->ptr + skip, a->len - (size_t)skip, &v)) {
        srv_reply_error(c, ERR_OFFSET);
        return -1;
    }
    if (skip)
        v = (long long)((unsigned long long)v * (unsigned long long)bits);
    if (v < 0 || (v >> 3) >= srv_her.cfg->proto_max_bulk_len) {
        srv_reply_error(c, ERR_OFFSET);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* Look argv[1] up for a read: 1 a string, 0 absent, -1 after an error
 * reply (WRONGTYPE, storage). */
static int read_string(srv_conn *c, struct st_txn **t, st_keyref *k, st_rec *r)
{
    if (!(*t = srv_txn_read_or_reply(c)))
        return -1;
    srv_key_ref(c, 1, k);
    return srv_key_lookup_string(c, *t, k, r);
}

/* ------------------------------------------------------------------ */
/* SETBIT GETBIT */

struct setbit {
    unsigned mask;
    int on;
    int old;
};

static void setbit_patch(void *ctx, uint8_t *b, size_t len)
{
    struct setbit *s = ctx;

    (void)len;
    s->old = (b[0] & s->mask) != 0;
    b[0] = (uint8_t)(s->on ? (b[0] | s->mask) : (b[0] & ~s->mask));
}

void srv_cmd_setbit(srv_conn *c)
{
    struct setbit s;
    struct st_txn *t;
    uint64_t off, len;
    long long on;
    st_keyref k;
    st_rec r;
    int rc, found;

    if (offset_or_reply(c, &c->argv[2], 0, 0, &off))
        return;
    if (!srv_util_str2ll(c->argv[3].ptr, c->argv[3].len, &on) || (on & ~1)) {
        srv_reply_error(c, ERR_BIT_VALUE);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    srv_key_ref(c, 1, &k);
    if ((found = srv_key_lookup_string(c, t, &k, &r)) < 0)
        return;
    s.mask = TOP_BIT >> (off & 7);
    s.on = (int)on;
    rc = st_string_patch(t, &k, srv_cmd_now(c), off >> 3, 1, setbit_patch, &s,
                         &len);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    /* Redis: an event when the key was created or grown or the bit flipped. */
    if (!found || st_string_len(&r) <= off >> 3 || s.old != s.on)
        srv_notify_arg(c, SRV_NOTIFY_STRING, "setbit", 1);
    srv_reply_int(c, s.old);
}

void srv_cmd_getbit(srv_conn *c)
{
    struct st_txn *t;
    uint64_t off;
    uint8_t byte = 0;
    st_keyref k;
    st_rec r;
    int rc;

    if (offset_or_reply(c, &c->argv[2], 0, 0, &off))
        return;
    if ((rc = read_string(c, &t, &k, &r)) < 0)
        return;
    if (rc == 1 && (rc = st_string_copy_out(t, &r, off >> 3, 1, &byte))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_int(c, (byte & (TOP_BIT >> (off & 7))) != 0);
}

/* ------------------------------------------------------------------ */
/* BITCOUNT BITPOS */

/* Which unit BITCOUNT / BITPOS ranges count in: argv[i] BYTE or BIT. */
static int unit_is_bit_or_reply(srv_conn *c, int i, int *isbit)
{
    if (srv_util_streq(c->argv[i].ptr, c->argv[i].len, "bit"))
        *isbit = 1;
    else if (srv_util_streq(c->argv[i].ptr, c->argv[i].len, "byte"))
        *isbit = 0;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    return 0;
}

/* Clamp [start, end] over `total` units as Redis does (negatives from
 * the end). 1 when the range is not empty. */
static int clamp(long long *start, long long *end, long long total)
{
    if (*start < 0)
        *start += total;
    if (*end < 0)
        *end += total;
    if (*start < 0)
        *start = 0;
    if (*end < 0)
        *end = 0;
    if (*end >= total)
        *end = total - 1;
    return *start <= *end;
}

static int popcount_piece(void *ctx, const uint8_t *p, size_t n)
{
    uint64_t *count = ctx;
    size_t i = 0;

    if (!p)
        return 0;
    for (; i + WORD_BYTES <= n; i += WORD_BYTES) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        *count += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < n; i++)
        *count += (uint64_t)__builtin_popcount(p[i]);
    return 0;
}

/* Set bits of the string of `r` in the bit range [sb, eb]. */
static int count_bits(struct st_txn *t, const st_rec *r, uint64_t sb,
                      uint64_t eb, uint64_t *count)
{
    uint64_t first = sb >> 3, last = eb >> 3;
    uint8_t edge[2];
    int rc;

    *count = 0;
    if ((rc = st_string_read(t, r, first, last - first + 1, popcount_piece,
                             count)))
        return rc;
    /* Take back the bits of the edge bytes outside the range. */
    if ((rc = st_string_copy_out(t, r, first, 1, &edge[0])) ||
        (rc = st_string_copy_out(t, r, last, 1, &edge[1])))
        return rc;
    *count -= (uint64_t)__builtin_popcount(edge[0] & ~(BYTE_MASK >> (sb & 7)));
    *count -= (uint64_t)__builtin_popcount(edge[1] &
                                           (BYTE_MASK >> 1 >> (eb & 7)));
    return 0;
}

void srv_cmd_bitcount(srv_conn *c)
{
    struct st_txn *t;
    long long start = 0, end = -1, total;
    uint64_t count;
    int isbit = 0, rc;
    st_keyref k;
    st_rec r;

    if ((rc = read_string(c, &t, &k, &r)) <= 0) {
        if (rc == 0)
            srv_reply_int(c, 0);
        return;
    }
    total = (long long)st_string_len(&r);
    if (c->argc == 4 || c->argc == 5) {
        if (srv_args_ll_or_reply(c, &c->argv[2], &start) ||
            srv_args_ll_or_reply(c, &c->argv[3], &end))
            return;
        if (c->argc == 5 && unit_is_bit_or_reply(c, 4, &isbit))
            return;
        if (isbit)
            total *= BITS_PER_BYTE;
        if (start < 0 && end < 0 && start > end) {
            srv_reply_int(c, 0);
            return;
        }
    } else if (c->argc != 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!clamp(&start, &end, total)) {
        srv_reply_int(c, 0);
        return;
    }
    if (!isbit) {
        start *= BITS_PER_BYTE;
        end = end * BITS_PER_BYTE + (BITS_PER_BYTE - 1);
    }
    if ((rc = count_bits(t, &r, (uint64_t)start, (uint64_t)end, &count))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_int(c, (long long)count);
}

/* The search of BITPOS: the first bit equal to `bit` in [sb, eb]. */
struct bitpos {
    int bit;
    uint64_t sb, eb;
    uint64_t byte;   /* index of the next byte the walk sees */
    long long found; /* -1 until found */
};

/* The first bit equal to s->bit in byte `v` at index s->byte, bits
 * outside [sb, eb] not counted: its bit index, or -1. */
static long long bit_in_byte(const struct bitpos *s, unsigned v)
{
    uint64_t base = s->byte * BITS_PER_BYTE;
    unsigned want = s->bit ? v : (~v & BYTE_MASK);

    if (base < s->sb)
        want &= BYTE_MASK >> (s->sb - base);
    if (base + BITS_PER_BYTE - 1 > s->eb)
        want &= ~(BYTE_MASK >> 1 >> (s->eb - base)) & BYTE_MASK;
    if (!want)
        return -1;
    return (long long)(base + (unsigned)__builtin_clz(want) -
                       (unsigned)(sizeof(unsigned) * 8 - BITS_PER_BYTE));
}

static int bitpos_piece(void *ctx, const uint8_t *p, size_t n)
{
    struct bitpos *s = ctx;
    /* A word of bytes none of which holds the bit looked for. */
    const uint64_t none = s->bit ? 0 : UINT64_MAX;
    size_t i = 0;

    if (!p) {
        /* Zeros: no 1 here; a 0 at the first bit of the range in it. */
        if (s->bit) {
            s->byte += n;
            return 0;
        }
        s->found = bit_in_byte(s, 0);
        return 1;
    }
    while (i < n) {
        uint64_t w;
        long long b;
        if (i + WORD_BYTES <= n) {
            memcpy(&w, p + i, sizeof w);
            if (w == none) {
                i += WORD_BYTES;
                s->byte += WORD_BYTES;
                continue;
            }
        }
        if ((b = bit_in_byte(s, p[i])) >= 0) {
            s->found = b;
            return 1;
        }
        i++;
        s->byte++;
    }
    return 0;
}

void srv_cmd_bitpos(srv_conn *c)
{
    struct st_txn *t;
    long long bit, start = 0, end, total;
    int isbit = 0, end_given = 0, rc;
    struct bitpos s;
    st_keyref k;
    st_rec r;

    if (srv_args_ll_or_reply(c, &c->argv[2], &bit))
        return;
    if (bit != 0 && bit != 1) {
        srv_reply_error(c, ERR_BIT_ARG);
        return;
    }
    if ((rc = read_string(c, &t, &k, &r)) <= 0) {
        /* Absent: an endless run of zeros. */
        if (rc == 0)
            srv_reply_int(c, bit ? -1 : 0);
        return;
    }
    total = (long long)st_string_len(&r);
    end = total - 1;
    if (c->argc >= 4 && c->argc <= 6) {
        if (srv_args_ll_or_reply(c, &c->argv[3], &start))
            return;
        if (c->argc == 6 && unit_is_bit_or_reply(c, 5, &isbit))
            return;
        if (isbit)
            total *= BITS_PER_BYTE;
        end = total - 1;
        if (c->argc >= 5) {
            if (srv_args_ll_or_reply(c, &c->argv[4], &end))
                return;
            end_given = 1;
        }
    } else if (c->argc != 3) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!clamp(&start, &end, total)) {
        srv_reply_int(c, -1); /* an empty range holds no bit */
        return;
    }
    if (!isbit) {
        start *= BITS_PER_BYTE;
        end = end * BITS_PER_BYTE + (BITS_PER_BYTE - 1);
    }
    s.bit = (int)bit;
    s.sb = (uint64_t)start;
    s.eb = (uint64_t)end;
    s.byte = s.sb >> 3;
    s.found = -1;
    rc = st_string_read(t, &r, s.sb >> 3, (s.eb >> 3) - (s.sb >> 3) + 1,
                        bitpos_piece, &s);
    if (rc && s.found < 0) {
        srv_txn_error(c, rc);
        return;
    }
    /* No clear bit in a range open to the right: the first bit past it
     * (the string is zero-padded); with an explicit end, none. */
    if (s.found < 0 && !bit && !end_given)
        s.found = end + 1;
    srv_reply_int(c, s.found);
}

/* ------------------------------------------------------------------ */
/* BITOP */

enum bitop { BITOP_AND, BITOP_OR, BITOP_XOR, BITOP_NOT };

static void combine(int op, uint8_t *acc, const uint8_t *src, size_t n)
{
    size_t i;

    switch (op) {
    case BITOP_AND:
        for (i = 0; i < n; i++)
            acc[i] &= src[i];
        break;
    case BITOP_OR:
        for (i = 0; i < n; i++)
            acc[i] |= src[i];
        break;
    case BITOP_XOR:
        for (i = 0; i < n; i++)
            acc[i] ^= src[i];
        break;
    default:
        for (i = 0; i < n; i++)
            acc[i] = (uint8_t)~acc[i];
    }
}

static int window_zero(const uint8_t *p, size_t n)
{
    return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * One window [off, off + n) of BITOP's result into acc (src is scratch of
 * the same size): each source looked up again, as the previous window's
 * write may have moved what a lookup returned.
 */
static int bitop_window(srv_conn *c, struct st_txn *t, int op, uint64_t off,
                        size_t n, uint8_t *acc, uint8_t *src)
{
    int rc;

    for (int i = 3; i < c->argc; i++) {
        st_keyref k;
        st_rec r;
        uint8_t *into = i == 3 ? acc : src;
        srv_key_ref(c, i, &k);
        rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == ST_ENOTFOUND)
            memset(into, 0, n);
        else if (rc || (rc = st_string_copy_out(t, &r, off, n, into)))
            return rc;
        if (i > 3)
            combine(op, acc, src, n);
    }
    if (op == BITOP_NOT)
        combine(op, acc, NULL, n);
    return 0;
}

void srv_cmd_bitop(srv_conn *c)
{
    const srv_slice *o = &c->argv[1];
    struct st_txn *t;
    uint64_t maxlen = 0, len;
    uint8_t *acc = NULL, *src;
    int op, dst_is_src = 0, deleted = 0, rc = 0;
    st_keyref dk;

    if (srv_util_streq(o->ptr, o->len, "and"))
        op = BITOP_AND;
    else if (srv_util_streq(o->ptr, o->len, "or"))
        op = BITOP_OR;
    else if (srv_util_streq(o->ptr, o->len, "xor"))
        op = BITOP_XOR;
    else if (srv_util_streq(o->ptr, o->len, "not"))
        op = BITOP_NOT;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (op == BITOP_NOT && c->argc != 4) {
        srv_reply_error(c, ERR_NOT_ONE_SOURCE);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    for (int i = 3; i < c->argc; i++) {
        st_keyref k;
        st_rec r;
        srv_key_ref(c, i, &k);
        rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
        if (rc == ST_ENOTFOUND)
            continue;
        if (rc == 0 && r.type != ST_TYPE_STRING)
            rc = ST_EWRONGTYPE;
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        if (st_string_len(&r) > maxlen)
            maxlen = st_string_len(&r);
        if (c->argv[i].len == c->argv[2].len &&
            memcmp(c->argv[i].ptr, c->argv[2].ptr, c->argv[2].len) == 0)
            dst_is_src = 1;
    }
    rc = 0;
    srv_key_ref(c, 2, &dk);
    /* A fresh result (dst not among the sources) starts from nothing, so
     * its windows of zeros need not be written; dst read as a source is
     * rewritten window by window, each read before it is overwritten. */
    if (!dst_is_src || maxlen == 0) {
        rc = st_keyspace_delete(t, &dk, srv_cmd_now(c));
        if (rc == 0 && maxlen == 0)
            deleted = 1;
        rc = rc == ST_ENOTFOUND ? 0 : rc;
    }
    if (rc == 0 && maxlen > 0) {
        size_t w = maxlen < BITOP_WINDOW ? (size_t)maxlen : BITOP_WINDOW;
        if (!(acc = malloc(2 * w))) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        src = acc + w;
        for (uint64_t off = 0; off < maxlen && rc == 0; off += w) {
            size_t n = maxlen - off < w ? (size_t)(maxlen - off) : w;
            rc = bitop_window(c, t, op, off, n, acc, src);
            if (rc == 0 &&
                (dst_is_src || off + n == maxlen || !window_zero(acc, n)))
                rc = st_string_write(t, &dk, srv_cmd_now(c), off, acc, n,
                                     ST_STRING_ENC_RAW, &len);
        }
        free(acc);
        if (rc == 0 && dst_is_src)
            rc = st_keyspace_expire_set(t, &dk, srv_cmd_now(c), 0);
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    /* Redis: "set" on a result, "del" when an empty one removed the key. */
    if (maxlen > 0)
        srv_notify_arg(c, SRV_NOTIFY_STRING, "set", 2);
    else if (deleted)
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 2);
    srv_reply_int(c, (long long)maxlen);
}

/* ------------------------------------------------------------------ */
/* BITFIELD BITFIELD_RO */

enum bf_opcode { BF_GET, BF_SET, BF_INCRBY };
enum bf_overflow { BF_WRAP, BF_SAT, BF_FAIL };

typedef struct bf_op {
    int opcode;
    int overflow;
    int sign;
    int bits;
    uint64_t offset;
    long long value; /* SET's value, INCRBY's increment */
} bf_op;

/* A field type "i1".."i64" or "u1".."u63". 0, or -1 after the reply. */
static int field_type_or_reply(srv_conn *c, const srv_slice *a, int *sign,
                               int *bits)
{
    long long b;

    if (a->len < 2 || (a->ptr[0] != 'i' && a->ptr[0] != 'u') ||
        !srv_util_str2ll(a->ptr + 1, a->len - 1, &b) || b < 1 ||
        b > (a->ptr[0] == 'i' ? FIELD_SIGNED_MAX_BITS
                              : FIELD_UNSIGNED_MAX_BITS)) {
        srv_reply_error(c, ERR_FIELD_TYPE);
        return -1;
    }
    *sign = a->ptr[0] == 'i';
    *bits = (int)b;
    return 0;
}

/*
 * Parse the BITFIELD subcommands of argv[2..] into ops (argc entries at
 * most). *nops gets their count, *max_bit the highest bit a SET or INCRBY
 * writes (*writes is 0 when none does). 0, or -1 after replying.
 */
static int bf_parse_or_reply(srv_conn *c, bf_op *ops, int *nops, int *writes,
                             uint64_t *max_bit)
{
    int overflow = BF_WRAP, n = 0;

    *writes = 0;
    *max_bit = 0;
    for (int j = 2; j < c->argc; j++) {
        const srv_slice *a = &c->argv[j];
        int rem = c->argc - j - 1;
        bf_op *op = &ops[n];
        if (srv_util_streq(a->ptr, a->len, "get") && rem >= 2)
            op->opcode = BF_GET;
        else if (srv_util_streq(a->ptr, a->len, "set") && rem >= 3)
            op->opcode = BF_SET;
        else if (srv_util_streq(a->ptr, a->len, "incrby") && rem >= 3)
            op->opcode = BF_INCRBY;
        else if (srv_util_streq(a->ptr, a->len, "overflow") && rem >= 1) {
            const srv_slice *w = &c->argv[++j];
            if (srv_util_streq(w->ptr, w->len, "wrap"))
                overflow = BF_WRAP;
            else if (srv_util_streq(w->ptr, w->len, "sat"))
                overflow = BF_SAT;
            else if (srv_util_streq(w->ptr, w->len, "fail"))
                overflow = BF_FAIL;
            else {
                srv_reply_error(c, ERR_OVERFLOW_TYPE);
                return -1;
            }
            continue;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        if (field_type_or_reply(c, &c->argv[j + 1], &op->sign, &op->bits) ||
            offset_or_reply(c, &c->argv[j + 2], 1, op->bits, &op->offset))
            return -1;
        op->overflow = overflow;
        op->value = 0;
        if (op->opcode != BF_GET) {
            uint64_t last = op->offset + (uint64_t)op->bits - 1;
            *writes = 1;
            if (last > *max_bit)
                *max_bit = last;
            if (srv_args_ll_or_reply(c, &c->argv[j + 3], &op->value))
                return -1;
        }
        n++;
        j += op->opcode == BF_GET ? 2 : 3;
    }
    *nops = n;
    return 0;
}

/* The field's bits from `bytes` (which start at the field's byte), as an
 * unsigned number. */
static uint64_t field_get(const uint8_t *bytes, const bf_op *op)
{
    unsigned shift = (unsigned)(op->offset & 7);
    uint64_t v = 0;

    for (int i = 0; i < op->bits; i++) {
        unsigned pos = shift + (unsigned)i;
        v = (v << 1) | ((bytes[pos >> 3] >> (7 - (pos & 7))) & 1u);
    }
    return v;
}

static void field_put(uint8_t *bytes, const bf_op *op, uint64_t v)
{
    unsigned shift = (unsigned)(op->offset & 7);

    for (int i = 0; i < op->bits; i++) {
        unsigned pos = shift + (unsigned)i;
        unsigned bit = (unsigned)(v >> (op->bits - 1 - i)) & 1u;
        uint8_t m = (uint8_t)(TOP_BIT >> (pos & 7));
        bytes[pos >> 3] = (uint8_t)(bit ? bytes[pos >> 3] | m
                                        : bytes[pos >> 3] & ~m);
    }
}

/* Bytes a field covers from its first byte. */
static size_t field_span(const bf_op *op)
{
    return ((op->offset & 7) + (uint64_t)op->bits + 7) / BITS_PER_BYTE;
}

/* A signed field's bits (its low `bits` bits) as the number they stand
 * for: sign-extended. */
static int64_t field_number(const bf_op *op, uint64_t raw)
{
    if (op->bits < FIELD_SIGNED_MAX_BITS && (raw >> (op->bits - 1)) & 1u)
        return (int64_t)(raw | (~(uint64_t)0 << op->bits));
    return (int64_t)raw;
}

/*
 * The value a SET (value `v`, increment 0) or INCRBY (the field's value
 * `v`, increment `incr`) leaves. *overflow is set when Redis calls it an
 * overflow, and *out then holds what WRAP or SAT make of it. The test is
 * Redis's own, limits computed with 64-bit wrap-around: it is exact but
 * for a signed SET far below the minimum, which Redis sees as an overflow
 * upwards (saturating to the maximum); clients may depend on that.
 */
static void field_result_signed(const bf_op *op, int64_t v, int64_t incr,
                                int *overflow, int64_t *out)
{
    int64_t max = op->bits == FIELD_SIGNED_MAX_BITS
                      ? INT64_MAX
                      : (int64_t)(((uint64_t)1 << (op->bits - 1)) - 1);
    int64_t min = -max - 1;
    int64_t maxincr = (int64_t)((uint64_t)max - (uint64_t)v);
    int64_t minincr = (int64_t)((uint64_t)min - (uint64_t)v);
    int wide = op->bits == FIELD_SIGNED_MAX_BITS;

    *overflow = 1;
    if (v > max || (!wide && incr > maxincr) ||
        (v >= 0 && incr > 0 && incr > maxincr)) {
        if (op->overflow == BF_SAT) {
            *out = max;
            return;
        }
    } else if (v < min || (!wide && incr < minincr) ||
               (v < 0 && incr < 0 && incr < minincr)) {
        if (op->overflow == BF_SAT) {
            *out = min;
            return;
        }
    } else {
        *overflow = 0;
    }
    uint64_t sum = (uint64_t)v + (uint64_t)incr;
    if (!wide) {
        uint64_t high = ~(uint64_t)0 << op->bits;
        sum = (sum >> (op->bits - 1)) & 1u ? sum | high : sum & ~high;
    }
    *out = (int64_t)sum;
}

static void field_result_unsigned(const bf_op *op, uint64_t v, int64_t incr,
                                  int *overflow, uint64_t *out)
{
    uint64_t max = ((uint64_t)1 << op->bits) - 1;
    int64_t maxincr = (int64_t)(max - v);
    int64_t minincr = (int64_t)(0 - v);

    *overflow = 1;
    if (v > max || (incr > 0 && incr > maxincr)) {
        if (op->overflow == BF_SAT) {
            *out = max;
            return;
        }
    } else if (incr < 0 && incr < minincr) {
        if (op->overflow == BF_SAT) {
            *out = 0;
            return;
        }
    } else {
        *overflow = 0;
    }
    *out = (v + (uint64_t)incr) & max;
}

/* The field read from the current string (zeros past its end). */
static int bf_read(srv_conn *c, struct st_txn *t, st_keyref *k, const bf_op *op,
                   uint8_t *bytes)
{
    st_rec r;
    int rc = st_keyspace_lookup(t, k, srv_cmd_now(c), &r);

    memset(bytes, 0, FIELD_BYTES_MAX);
    if (rc == ST_ENOTFOUND)
        return 0;
    return rc ? rc
              : st_string_copy_out(t, &r, op->offset >> 3, field_span(op),
                                   bytes);
}

/* Run the parsed ops on argv[1], replying one element each; *wrote counts
 * the SETs and INCRBYs that wrote (an overflow FAIL writes nothing). On a
 * storage error nothing of the reply is left (the caller replies the
 * error). */
static int bf_run(srv_conn *c, struct st_txn *t, st_keyref *k, const bf_op *ops,
                  int nops, int *wrote)
{
    uint8_t bytes[FIELD_BYTES_MAX];
    size_t mark = c->out.len;
    uint64_t len;
    int rc = 0;

    *wrote = 0;
    srv_reply_array(c, nops);
    for (int i = 0; i < nops; i++) {
        const bf_op *op = &ops[i];
        if ((rc = bf_read(c, t, k, op, bytes)))
            break;
        uint64_t raw = field_get(bytes, op), v;
        long long shown_old, shown_new;
        int overflow;
        if (op->sign)
            raw = (uint64_t)(int64_t)field_number(op, raw);
        if (op->opcode == BF_GET) {
            srv_reply_int(c, (long long)raw);
            continue;
        }
        if (op->sign) {
            int64_t nv;
            field_result_signed(op,
                                op->opcode == BF_SET ? op->value : (int64_t)raw,
                                op->opcode == BF_SET ? 0 : op->value, &overflow,
                                &nv);
            v = (uint64_t)nv;
        } else {
            field_result_unsigned(op,
                                  op->opcode == BF_SET ? (uint64_t)op->value
                                                       : raw,
                                  op->opcode == BF_SET ? 0 : op->value,
                                  &overflow, &v);
        }
        shown_old = (long long)raw;
        shown_new = (long long)v;
        if (overflow && op->overflow == BF_FAIL) {
            srv_reply_null(c);
            continue;
        }
        field_put(bytes, op, (uint64_t)v);
        if ((rc = st_string_write(t, k, srv_cmd_now(c), op->offset >> 3, bytes,
                                  field_span(op), ST_STRING_ENC_RAW, &len)))
            break;
        (*wrote)++;
        srv_reply_int(c, op->opcode == BF_SET ? shown_old : shown_new);
    }
    if (rc)
        c->out.len = mark;
    return rc;
}

static void noop_patch(void *ctx, uint8_t *bytes, size_t len)
{
    (void)ctx;
    (void)bytes;
    (void)len;
}

static void bitfield_generic(srv_conn *c, int readonly)
{
    bf_op *ops = malloc(sizeof *ops * (size_t)c->argc);
    struct st_txn *t;
    uint64_t max_bit, len;
    int nops, writes, wrote, rc;
    st_keyref k;
    st_rec r;

    if (!ops) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    if (bf_parse_or_reply(c, ops, &nops, &writes, &max_bit))
        goto out;
    if (writes && readonly) {
        srv_reply_error(c, ERR_RO_GET_ONLY);
        goto out;
    }
    t = writes ? srv_txn_write_or_reply(c) : srv_txn_read_or_reply(c);
    if (!t)
        goto out;
    srv_key_ref(c, 1, &k);
    if ((rc = srv_key_lookup_string(c, t, &k, &r)) < 0)
        goto out;
    /* A write first makes room up to its farthest bit (Redis creates or
     * grows the string even when every write then fails). */
    if (writes && (rc == 0 || st_string_len(&r) <= max_bit >> 3) &&
        (rc = st_string_patch(t, &k, srv_cmd_now(c), max_bit >> 3, 1,
                              noop_patch, NULL, &len))) {
        srv_txn_error(c, rc);
        goto out;
    }
    if ((rc = bf_run(c, t, &k, ops, nops, &wrote)))
        srv_txn_error(c, rc); /* poisons: the group is replayed */
    else if (wrote)           /* Redis: only when a SET or INCRBY wrote */
        srv_notify_arg(c, SRV_NOTIFY_STRING, "setbit", 1);
out:
    free(ops);
}

void srv_cmd_bitfield(srv_conn *c) { bitfield_generic(c, 0); }
void srv_cmd_bitfield_ro(srv_conn *c) { bitfield_generic(c, 1); }
