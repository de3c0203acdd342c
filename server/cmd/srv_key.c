/*
 * srv_key.c - naming a key argument in the connection's database, typed
 * lookups of strings with their error replies, the worker's scratch.
 */
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_reply.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"

#include <stdlib.h>
#include <string.h>

/* Zeros streamed for the unwritten parts of a chunked string. */
#define ZERO_PIECE 4096

void srv_key_ref(srv_conn *c, int i, st_keyref *k)
{
    st_codec_keyref_init(k, c->db, c->argv[i].ptr, c->argv[i].len);
}

int srv_key_lookup_string(srv_conn *c, struct st_txn *t, st_keyref *k,
                          st_rec *r)
{
    int rc = st_keyspace_lookup(t, k, srv_cmd_now(c), r);

    if (rc == ST_ENOTFOUND) {
        SRV_STAT_ADD(c->worker->stats, keyspace_misses, 1);
        return 0;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    SRV_STAT_ADD(c->worker->stats, keyspace_hits, 1);
    if (r->type != ST_TYPE_STRING) {
        srv_reply_error(c, SRV_ERR_WRONGTYPE);
        return -1;
    }
    return 1;
}

static int reply_piece(void *ctx, const uint8_t *p, size_t n)
{
    static const uint8_t zero[ZERO_PIECE];
    srv_conn *c = ctx;

    if (p) {
        srv_reply_raw(c, p, n);
        return 0;
    }
    while (n > 0) {
        size_t m = n < sizeof zero ? n : sizeof zero;
        srv_reply_raw(c, zero, m);
        n -= m;
    }
    return 0;
}

int srv_key_reply_string(srv_conn *c, struct st_txn *t, const st_rec *r,
                         uint64_t off, uint64_t len)
{
    uint64_t slen = st_string_len(r);
    size_t mark;
    int rc;

    if (off > slen)
        off = slen;
    if (len > slen - off)
        len = slen - off;
    if (!st_string_is_chunked(r)) {
        srv_reply_bulk(c, r->payload + off, (size_t)len);
        return 0;
    }
    mark = c->out.len;
    srv_reply_bulk_head(c, (size_t)len);
    if ((rc = st_string_read(t, r, off, len, reply_piece, c))) {
        c->out.len = mark; /* no half-written reply */
        srv_txn_error(c, rc);
        return -1;
    }
    srv_reply_raw(c, "\r\n", 2);
    return 0;
}

char *srv_key_scratch(size_t len)
{
    static char *buf;
    static size_t cap;

    if (len > cap) {
        char *p = realloc(buf, len);
        if (!p)
            return NULL;
        buf = p;
        cap = len;
    }
    return buf;
}
