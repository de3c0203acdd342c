/*
 * srv_cmd_lcs.c - LCS: the longest common subsequence of two strings,
 * its length (LEN), or its matching ranges (IDX, MINMATCHLEN,
 * WITHMATCHLEN). The classic dynamic-programming table, walked back from
 * the end as Redis walks it (so ties pick the same characters and the
 * ranges come out the same); its size is bounded by proto-max-bulk-len,
 * as in Redis. LEN alone needs two rows of the table only.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"

#include <stdlib.h>
#include <string.h>

/* Longest string LCS takes (its lengths are 32-bit in Redis). */
#define LCS_MAX_LEN (UINT32_MAX - 1)

typedef struct lcs_opts {
    int len, idx, withmatchlen;
    long long minmatchlen;
} lcs_opts;

/* argv[i] as a string (an empty one when absent): 0, or -1 after the
 * error reply. */
static int operand(srv_conn *c, struct st_txn *t, int i, const uint8_t **p,
                   size_t *n, int *is_string)
{
    st_keyref k;
    st_rec r;
    int rc;

    srv_key_ref(c, i, &k);
    rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r);
    *p = (const uint8_t *)"";
    *n = 0;
    *is_string = 1;
    if (rc == ST_ENOTFOUND)
        return 0;
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    if (r.type != ST_TYPE_STRING) {
        *is_string = 0;
        return 0;
    }
    if ((rc = st_string_flat(t, &r, p, n))) {
        srv_txn_error(c, rc);
        return -1;
    }
    return 0;
}

/* The length only: two rows of the table. */
static uint32_t lcs_length(const uint8_t *a, uint32_t alen, const uint8_t *b,
                           uint32_t blen, uint32_t *rows)
{
    uint32_t *prev = rows, *cur = rows + blen + 1;

    memset(prev, 0, sizeof *prev * (blen + 1));
    for (uint32_t i = 1; i <= alen; i++) {
        cur[0] = 0;
        for (uint32_t j = 1; j <= blen; j++)
            cur[j] = a[i - 1] == b[j - 1]   ? prev[j - 1] + 1
                     : prev[j] > cur[j - 1] ? prev[j]
                                            : cur[j - 1];
        uint32_t *tmp = prev;
        prev = cur;
        cur = tmp;
    }
    return prev[blen];
}

/* One range of IDX's reply. */
static void reply_range(srv_conn *c, const lcs_opts *o, uint32_t as,
                        uint32_t ae, uint32_t bs, uint32_t be)
{
    srv_reply_array(c, 2 + o->withmatchlen);
    srv_reply_array(c, 2);
    srv_reply_int(c, as);
    srv_reply_int(c, ae);
    srv_reply_array(c, 2);
    srv_reply_int(c, bs);
    srv_reply_int(c, be);
    if (o->withmatchlen)
        srv_reply_int(c, ae - as + 1);
}

/*
 * The full table, then the walk back from (alen, blen): a match is kept
 * (and extends the current range when contiguous), otherwise the walk goes
 * up when LCS(i-1, j) is larger, else left, as Redis's does.
 */
static void lcs_full(srv_conn *c, const lcs_opts *o, const uint8_t *a,
                     uint32_t alen, const uint8_t *b, uint32_t blen,
                     uint32_t *tab)
{
#define T(i, j) tab[(size_t)(j) + (size_t)(i) * (blen + 1)]
    for (uint32_t i = 0; i <= alen; i++)
        for (uint32_t j = 0; j <= blen; j++)
            T(i, j) = i == 0 || j == 0            ? 0
                      : a[i - 1] == b[j - 1]      ? T(i - 1, j - 1) + 1
                      : T(i - 1, j) > T(i, j - 1) ? T(i - 1, j)
                                                  : T(i, j - 1);
    uint32_t n = T(alen, blen), idx = n, i = alen, j = blen;
    uint32_t as = alen, ae = 0, bs = 0, be = 0; /* as == alen: no range */
    uint8_t *res = malloc(n ? n : 1);
    size_t mark = 0;
    long long ranges = 0;

    if (!res) {
        srv_reply_error(c, "ERR Insufficient memory, failed allocating "
                           "transient memory for LCS");
        return;
    }
    if (o->idx) {
        srv_reply_map(c, 2);
        srv_reply_bulk_cstr(c, "matches");
        mark = srv_reply_defer(c);
    }
    while (i > 0 && j > 0) {
        int emit = 0;
        if (a[i - 1] == b[j - 1]) {
            res[idx - 1] = a[i - 1];
            if (as == alen) {
                as = ae = i - 1;
                bs = be = j - 1;
            } else if (as == i && bs == j) {
                as--;
                bs--;
            } else {
                emit = 1;
            }
            if (as == 0 || bs == 0)
                emit = 1;
            idx--;
            i--;
            j--;
        } else {
            if (T(i - 1, j) > T(i, j - 1))
                i--;
            else
                j--;
            if (as != alen)
                emit = 1;
        }
        if (emit) {
            if (o->idx && (o->minmatchlen == 0 ||
                           (long long)(ae - as + 1) >= o->minmatchlen)) {
                reply_range(c, o, as, ae, bs, be);
                ranges++;
            }
            as = alen;
        }
    }
    if (o->idx) {
        srv_reply_defer_array(c, mark, ranges);
        srv_reply_bulk_cstr(c, "len");
        srv_reply_int(c, n);
    } else {
        srv_reply_bulk(c, res, n);
    }
    free(res);
#undef T
}

void srv_cmd_lcs(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    const uint8_t *a, *b;
    size_t alen, blen;
    int sa, sb;
    lcs_opts o = { 0 };

    if (!t || operand(c, t, 1, &a, &alen, &sa) ||
        operand(c, t, 2, &b, &blen, &sb))
        return;
    if (!sa || !sb) {
        srv_reply_error(c, "ERR The specified keys must contain string "
                           "values");
        return;
    }
    for (int j = 3; j < c->argc; j++) {
        const srv_slice *opt = &c->argv[j];
        if (srv_util_streq(opt->ptr, opt->len, "idx"))
            o.idx = 1;
        else if (srv_util_streq(opt->ptr, opt->len, "len"))
            o.len = 1;
        else if (srv_util_streq(opt->ptr, opt->len, "withmatchlen"))
            o.withmatchlen = 1;
        else if (srv_util_streq(opt->ptr, opt->len, "minmatchlen") &&
                 j + 1 < c->argc) {
            if (srv_args_ll_or_reply(c, &c->argv[++j], &o.minmatchlen))
                return;
            if (o.minmatchlen < 0)
                o.minmatchlen = 0;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (o.len && o.idx) {
        srv_reply_error(c, "ERR If you want both the length and indexes, "
                           "please just use IDX.");
        return;
    }
    if (alen >= LCS_MAX_LEN || blen >= LCS_MAX_LEN) {
        srv_reply_error(c, "ERR String too long for LCS");
        return;
    }
    unsigned long long cells = (unsigned long long)(alen + 1) * (blen + 1);
    if (cells * sizeof(uint32_t) >
        (unsigned long long)srv_her.cfg->proto_max_bulk_len) {
        srv_reply_error(c, "ERR Insufficient memory, transient memory for "
                           "LCS exceeds proto-max-bulk-len");
        return;
    }
    /* A copy of each: the table's work may outlive LMDB's pointers. */
    uint32_t *tab = malloc(o.len ? sizeof *tab * 2 * (blen + 1)
                                 : sizeof *tab * (size_t)cells);
    uint8_t *copy = malloc(alen + blen + 1);
    if (!tab || !copy) {
        free(tab);
        free(copy);
        srv_reply_error(c, "ERR Insufficient memory, failed allocating "
                           "transient memory for LCS");
        return;
    }
    memcpy(copy, a, alen);
    memcpy(copy + alen, b, blen);
    if (o.len)
        srv_reply_int(c, lcs_length(copy, (uint32_t)alen, copy + alen,
                                    (uint32_t)blen, tab));
    else
        lcs_full(c, &o, copy, (uint32_t)alen, copy + alen, (uint32_t)blen, tab);
    free(tab);
    free(copy);
}
