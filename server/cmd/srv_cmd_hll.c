/*
 * srv_cmd_hll.c - HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG
 * PFSELFTEST. An HLL is a string in Redis's HLL format (srv_hll.h): each
 * command copies the value into a working buffer, changes it there and
 * stores it back whole (an HLL is at most ~16 KB), keeping its TTL. A
 * single-key PFCOUNT stores the cardinality it computed in the value's
 * header, as Redis does, so the bytes stay Redis's.
 */
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_hll.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"

#include <stdio.h>
#include <string.h>

static const char ERR_NOT_HLL[] =
    "WRONGTYPE Key is not a valid HyperLogLog string value.";
static const char ERR_CORRUPT[] = "INVALIDOBJ Corrupted HLL object detected";
/* PFDEBUG DECODE's longest text: "v:32,4 " per register at worst. */
#define DECODE_MAX (SRV_HLL_REGISTERS * 8)

/* An HLL held in a worker buffer while a command changes it. */
typedef struct hll_val {
    uint8_t *buf;
    size_t len;
    int found;         /* the key existed */
    int64_t expire_at; /* its TTL, kept by the store */
} hll_val;

static size_t sparse_max(void)
{
    long long m = srv_her.cfg->hll_sparse_max_bytes;

    /* No sparse value outgrows the buffer (one byte per register). */
    return m < 0 || (unsigned long long)m > SRV_HLL_BUF_MAX - SRV_HLL_HDR_SIZE
               ? SRV_HLL_BUF_MAX - SRV_HLL_HDR_SIZE
               : (size_t)m;
}

/*
 * Open argv[i] as an HLL: 1 found (bytes in *p, *len, and *r), 0 absent,
 * -1 after replying WRONGTYPE (not a string, or not an HLL) or an error.
 */
static int open_hll(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                    st_rec *r, const uint8_t **p, size_t *len)
{
    int rc;

    srv_key_ref(c, i, k);
    if ((rc = srv_key_lookup_string(c, t, k, r)) <= 0)
        return rc;
    if ((rc = st_string_flat(t, r, p, len))) {
        srv_txn_error(c, rc);
        return -1;
    }
    if (!srv_hll_valid(*p, *len)) {
        srv_reply_error(c, ERR_NOT_HLL);
        return -1;
    }
    return 1;
}

/* argv[i] copied into a working buffer (an empty HLL when absent). */
static int load_hll(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                    hll_val *h)
{
    const uint8_t *p = NULL;
    size_t len = 0;
    st_rec r;
    int rc = open_hll(c, t, i, k, &r, &p, &len);

    if (rc < 0)
        return -1;
    h->found = rc;
    h->expire_at = rc ? r.expire_at : 0;
    if (!(h->buf = (uint8_t *)srv_key_scratch(len > SRV_HLL_BUF_MAX
                                                  ? len + SRV_HLL_BUF_MAX
                                                  : SRV_HLL_BUF_MAX))) {
        srv_reply_error(c, "ERR out of memory");
        return -1;
    }
    if (rc) {
        memcpy(h->buf, p, len);
        h->len = len;
    } else {
        h->len = srv_hll_init(h->buf);
    }
    return 0;
}

/* Write the working buffer back (raw, as Redis leaves an HLL). */
static int store_hll(srv_conn *c, struct st_txn *t, st_keyref *k,
                     const hll_val *h)
{
    int rc = st_string_set(t, k, h->buf, h->len, h->expire_at,
                           ST_STRING_ENC_RAW);

    if (rc)
        srv_txn_error(c, rc);
    return rc ? -1 : 0;
}

void srv_cmd_pfadd(srv_conn *c)
{
    struct st_txn *t = srv_txn_write_or_reply(c);
    st_keyref k;
    hll_val h;
    int updated = 0;

    if (!t || load_hll(c, t, 1, &k, &h))
        return;
    updated = !h.found;
    for (int j = 2; j < c->argc; j++) {
        int rc = srv_hll_add(h.buf, &h.len, sparse_max(), c->argv[j].ptr,
                             c->argv[j].len);
        if (rc < 0) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
        updated += rc;
    }
    if (updated) {
        srv_hll_invalidate(h.buf);
        if (store_hll(c, t, &k, &h))
            return;
        srv_notify_arg(c, SRV_NOTIFY_STRING, "pfadd", 1);
    }
    srv_reply_int(c, updated ? 1 : 0);
}

/* PFCOUNT of one key: the cached cardinality, or computed and cached. */
static void pfcount_one(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    const uint8_t *p;
    uint64_t card;
    size_t len;
    st_keyref k;
    st_rec r;
    hll_val h;
    int rc;

    if (!t || (rc = open_hll(c, t, 1, &k, &r, &p, &len)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    if (srv_hll_cached(p, &card)) {
        srv_reply_int(c, (long long)card);
        return;
    }
    /* Stale: compute it and keep it in the value, in a write. */
    if (!(t = srv_txn_write_or_reply(c)) || load_hll(c, t, 1, &k, &h))
        return;
    if (!h.found) { /* gone since the read */
        srv_reply_int(c, 0);
        return;
    }
    if (!srv_hll_cached(h.buf, &card)) {
        if (srv_hll_count(h.buf, h.len, &card)) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
        srv_hll_set_cached(h.buf, card);
        if (store_hll(c, t, &k, &h))
            return;
    }
    srv_reply_int(c, (long long)card);
}

void srv_cmd_pfcount(srv_conn *c)
{
    uint8_t max[SRV_HLL_REGISTERS];
    struct st_txn *t;

    if (c->argc == 2) {
        pfcount_one(c);
        return;
    }
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    memset(max, 0, sizeof max);
    for (int j = 1; j < c->argc; j++) {
        const uint8_t *p;
        size_t len;
        st_keyref k;
        st_rec r;
        int rc = open_hll(c, t, j, &k, &r, &p, &len);
        if (rc < 0)
            return;
        if (rc && srv_hll_merge(max, p, len)) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
    }
    srv_reply_int(c, (long long)srv_hll_count_registers(max));
}

void srv_cmd_pfmerge(srv_conn *c)
{
    uint8_t max[SRV_HLL_REGISTERS];
    struct st_txn *t = srv_txn_write_or_reply(c);
    int dense = 0;
    st_keyref k;
    hll_val h;

    if (!t)
        return;
    memset(max, 0, sizeof max);
    /* Every key, the destination too, is merged into max. */
    for (int j = 1; j < c->argc; j++) {
        const uint8_t *p;
        size_t len;
        st_rec r;
        int rc = open_hll(c, t, j, &k, &r, &p, &len);
        if (rc < 0)
            return;
        if (rc == 0)
            continue;
        dense |= srv_hll_encoding(p) == SRV_HLL_DENSE;
        if (srv_hll_merge(max, p, len)) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
    }
    if (load_hll(c, t, 1, &k, &h))
        return;
    if (dense && srv_hll_to_dense(h.buf, &h.len) < 0) {
        srv_reply_error(c, ERR_CORRUPT);
        return;
    }
    for (long j = 0; j < SRV_HLL_REGISTERS; j++)
        if (max[j] && srv_hll_set(h.buf, &h.len, sparse_max(), j, max[j]) < 0) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
    srv_hll_invalidate(h.buf);
    if (store_hll(c, t, &k, &h))
        return;
    srv_notify_arg(c, SRV_NOTIFY_STRING, "pfadd", 1); /* as Redis names it */
    srv_reply_ok(c);
}

void srv_cmd_pfdebug(srv_conn *c)
{
    static char decoded[DECODE_MAX];
    const srv_slice *sub = &c->argv[1];
    struct st_txn *t = srv_txn_write_or_reply(c);
    uint8_t regs[SRV_HLL_REGISTERS];
    st_keyref k;
    hll_val h;

    if (!t)
        return;
    srv_key_ref(c, 2, &k);
    {
        st_rec r;
        if (st_keyspace_lookup(t, &k, srv_cmd_now(c), &r) == ST_ENOTFOUND) {
            srv_reply_error(c, "ERR The specified key does not exist");
            return;
        }
    }
    if (load_hll(c, t, 2, &k, &h))
        return;
    if (srv_util_streq(sub->ptr, sub->len, "getreg") ||
        srv_util_streq(sub->ptr, sub->len, "todense")) {
        int conv = srv_hll_to_dense(h.buf, &h.len);
        if (conv < 0) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
        if (conv && store_hll(c, t, &k, &h))
            return;
        if (sub->ptr[0] == 't' || sub->ptr[0] == 'T') {
            srv_reply_int(c, conv);
            return;
        }
        srv_hll_registers(h.buf, h.len, regs);
        srv_reply_array(c, SRV_HLL_REGISTERS);
        for (int j = 0; j < SRV_HLL_REGISTERS; j++)
            srv_reply_int(c, regs[j]);
    } else if (srv_util_streq(sub->ptr, sub->len, "decode")) {
        long n;
        if (srv_hll_encoding(h.buf) != SRV_HLL_SPARSE) {
            srv_reply_error(c, "ERR HLL encoding is not sparse");
            return;
        }
        n = srv_hll_decode(h.buf, h.len, decoded, sizeof decoded);
        if (n < 0) {
            srv_reply_error(c, ERR_CORRUPT);
            return;
        }
        srv_reply_bulk(c, decoded, (size_t)n);
    } else if (srv_util_streq(sub->ptr, sub->len, "encoding")) {
        srv_reply_simple(c, srv_hll_encoding(h.buf) == SRV_HLL_DENSE
                                ? "dense"
                                : "sparse");
    } else {
        srv_reply_errorf(c, "ERR Unknown PFDEBUG subcommand '%.*s'",
                         (int)sub->len, sub->ptr);
    }
}

void srv_cmd_pfselftest(srv_conn *c)
{
    char err[256];

    if (srv_hll_selftest(err, sizeof err))
        srv_reply_error(c, err);
    else
        srv_reply_ok(c);
}
