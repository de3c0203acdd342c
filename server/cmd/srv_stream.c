/*
 * srv_stream.c - stream ids, entry replies, opening and saving streams,
 * and consumer-group lag, shared by the stream handlers.
 */
#include "server/cmd/srv_stream.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char SRV_STREAM_ERR_ID[] =
    "ERR Invalid stream ID specified as stream command argument";

/*
 * Redis's string2ull: a strict long long that is not negative, else
 * whatever strtoull takes whole (leading blanks and '+' included).
 */
static int str2ull(const char *s, uint64_t *out)
{
    long long ll;
    unsigned long long v;
    char *end = NULL;

    if (srv_util_str2ll(s, strlen(s), &ll)) {
        if (ll < 0)
            return 0;
        *out = (uint64_t)ll;
        return 1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno == EINVAL || errno == ERANGE || !(*s != '\0' && *end == '\0'))
        return 0;
    *out = v;
    return 1;
}

int srv_stream_parse_id(const srv_slice *a, st_stream_id *id,
                        uint64_t missing_seq, int strict, int *seq_given)
{
    char buf[SRV_STREAM_ID_ARG_MAX + 1], *dash;
    uint64_t ms, seq;

    /* As Redis, on a C string: a NUL inside ends the id there. */
    if (a->len > SRV_STREAM_ID_ARG_MAX)
        return -1;
    memcpy(buf, a->ptr, a->len);
    buf[a->len] = '\0';
    if (strict && (buf[0] == '-' || buf[0] == '+') && buf[1] == '\0')
        return -1;
    if (seq_given)
        *seq_given = 1;
    if (buf[0] == '-' && buf[1] == '\0') {
        id->ms = id->seq = 0;
        return 0;
    }
    if (buf[0] == '+' && buf[1] == '\0') {
        id->ms = id->seq = UINT64_MAX;
        return 0;
    }
    if ((dash = strchr(buf, '-')))
        *dash = '\0';
    if (!str2ull(buf, &ms))
        return -1;
    if (!dash) {
        seq = missing_seq;
    } else if (seq_given && strcmp(dash + 1, "*") == 0) {
        seq = 0;
        *seq_given = 0;
    } else if (!str2ull(dash + 1, &seq)) {
        return -1;
    }
    id->ms = ms;
    id->seq = seq;
    return 0;
}

int srv_stream_id_or_reply(srv_conn *c, const srv_slice *a, st_stream_id *id,
                           uint64_t missing_seq, int strict)
{
    if (srv_stream_parse_id(a, id, missing_seq, strict, NULL) == 0)
        return 0;
    srv_reply_error(c, SRV_STREAM_ERR_ID);
    return -1;
}

int srv_stream_id_incr(st_stream_id *id)
{
    if (id->seq != UINT64_MAX) {
        id->seq++;
        return 0;
    }
    if (id->ms == UINT64_MAX)
        return -1;
    id->ms++;
    id->seq = 0;
    return 0;
}

int srv_stream_id_decr(st_stream_id *id)
{
    if (id->seq != 0) {
        id->seq--;
        return 0;
    }
    if (id->ms == 0)
        return -1;
    id->ms--;
    id->seq = UINT64_MAX;
    return 0;
}

/* Decimal digits of v at p (no NUL): their count. */
static size_t u64_format(char *p, uint64_t v)
{
    char tmp[SRV_STREAM_ID_MAX / 2];
    size_t n = 0, len = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        p[len++] = tmp[--n];
    return len;
}

/* Every XADD and every entry of a range reply formats an id: by hand,
 * as snprintf cost an XADD more than its B-tree put (perf, -P16). */
size_t srv_stream_id_format(char *buf, const st_stream_id *id)
{
    size_t n = u64_format(buf, id->ms);

    buf[n++] = '-';
    n += u64_format(buf + n, id->seq);
    buf[n] = '\0';
    return n;
}

void srv_stream_reply_id(srv_conn *c, const st_stream_id *id)
{
    char buf[SRV_STREAM_ID_MAX];

    srv_reply_bulk(c, buf, srv_stream_id_format(buf, id));
}

int srv_stream_reply_entry(void *ctx, const st_stream_id *id,
                           const uint8_t *val, size_t len)
{
    srv_conn *c = ctx;
    st_stream_value v;
    const uint8_t *p;
    size_t n;

    srv_reply_array(c, 2);
    srv_stream_reply_id(c, id);
    srv_reply_array(c, (long long)st_stream_value_count(val, len));
    st_stream_value_init(&v, val, len);
    while (st_stream_value_next(&v, &p, &n))
        srv_reply_bulk(c, p, n);
    return 0;
}

int srv_stream_open_or_reply(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                             st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_STREAM, k, o);
}

int srv_stream_save_or_reply(srv_conn *c, struct st_txn *t, st_obj *o,
                             const st_stream_meta *m)
{
    int rc = st_stream_meta_put(t, o, m);

    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    return srv_coll_save_or_reply(c, t, o);
}

int srv_stream_there(srv_conn *c, struct st_txn *t, int i)
{
    st_keyref k;
    st_obj o;

    srv_key_ref(c, i, &k);
    return st_coll_open(t, &k, ST_TYPE_STREAM, srv_cmd_now(c), &o) == 0;
}

/* srv_stream_load_or_reply, s->first read only `with_first`. */
static int load(srv_conn *c, struct st_txn *t, int i, srv_stream *s,
                int with_first)
{
    int rc = srv_stream_open_or_reply(c, t, i, &s->k, &s->o);

    memset(&s->m, 0, sizeof s->m);
    memset(&s->first, 0, sizeof s->first);
    if (rc <= 0)
        return rc;
    if ((rc = st_stream_meta_get(t, &s->o, &s->m)) ||
        (with_first && s->o.c.card &&
         (rc = st_stream_edge(t, &s->o, 0, &s->first)))) {
        srv_txn_error(c, rc);
        return -1;
    }
    return 1;
}

int srv_stream_load_or_reply(srv_conn *c, struct st_txn *t, int i,
                             srv_stream *s)
{
    return load(c, t, i, s, 1);
}

int srv_stream_load_meta_or_reply(srv_conn *c, struct st_txn *t, int i,
                                  srv_stream *s)
{
    return load(c, t, i, s, 0);
}

static int id_is_zero(const st_stream_id *id)
{
    return id->ms == 0 && id->seq == 0;
}

int64_t srv_stream_entries_upto(const srv_stream *s, const st_stream_id *id)
{
    int cmp_last;

    if (!s->m.entries_added)
        return 0;
    if (!s->o.c.card && st_stream_id_cmp(id, &s->m.last) < 1)
        return (int64_t)s->m.entries_added;
    cmp_last = st_stream_id_cmp(id, &s->m.last);
    if (cmp_last == 0)
        return (int64_t)s->m.entries_added;
    if (cmp_last > 0)
        return ST_STREAM_READ_UNKNOWN;
    if (id_is_zero(&s->m.max_deleted) ||
        st_stream_id_cmp(&s->m.max_deleted, &s->first) < 0) {
        int cmp_first = st_stream_id_cmp(id, &s->first);
        if (cmp_first < 0)
            return (int64_t)(s->m.entries_added - s->o.c.card);
        if (cmp_first == 0)
            return (int64_t)(s->m.entries_added - s->o.c.card + 1);
    }
    return ST_STREAM_READ_UNKNOWN;
}

int srv_stream_range_has_tombstones(const srv_stream *s,
                                    const st_stream_id *start,
                                    const st_stream_id *end)
{
    const st_stream_id lo = { 0, 0 }, hi = { UINT64_MAX, UINT64_MAX };

    if (!s->o.c.card || id_is_zero(&s->m.max_deleted))
        return 0;
    if (st_stream_id_cmp(&s->first, &s->m.max_deleted) > 0)
        return 0;
    return st_stream_id_cmp(start ? start : &lo, &s->m.max_deleted) <= 0 &&
           st_stream_id_cmp(&s->m.max_deleted, end ? end : &hi) <= 0;
}

void srv_stream_reply_lag(srv_conn *c, const srv_stream *s,
                          const st_stream_group *g)
{
    int64_t read;

    if (!s->m.entries_added) {
        srv_reply_int(c, 0);
        return;
    }
    if (g->entries_read != ST_STREAM_READ_UNKNOWN &&
        !srv_stream_range_has_tombstones(s, &g->last, NULL)) {
        srv_reply_int(c, (long long)s->m.entries_added - g->entries_read);
        return;
    }
    read = srv_stream_entries_upto(s, &g->last);
    if (read == ST_STREAM_READ_UNKNOWN)
        srv_reply_null(c);
    else
        srv_reply_int(c, (long long)s->m.entries_added - read);
}

void srv_stream_group_advance(const srv_stream *s, st_stream_group *g,
                              const st_stream_id *id)
{
    if (g->entries_read != ST_STREAM_READ_UNKNOWN &&
        !srv_stream_range_has_tombstones(s, id, NULL))
        g->entries_read++;
    else if (s->m.entries_added)
        g->entries_read = srv_stream_entries_upto(s, id);
    g->last = *id;
}

/* A blocked XREAD or XREADGROUP's check (srv_block_ready_fn): an XREAD
 * reader has something when its stream's last entry is past its id (every
 * reader may read it), a group's reader when it is past the group's last
 * delivered id, or when the stream or the group went (its error is its
 * answer). */
static uint64_t stream_ready(struct st_txn *t, const srv_block_view *v, int key,
                             int64_t now)
{
    const srv_slice *a = &v->argv[key], *gname = &v->argv[v->group];
    st_stream_id after, last;
    st_stream_group g;
    st_keyref k;
    st_obj o;

    st_codec_keyref_init(&k, v->db, a->ptr, a->len);
    if (st_coll_open(t, &k, ST_TYPE_STREAM, now, &o))
        return v->group ? 1 : 0;
    if (v->group) {
        if (st_stream_group_get(t, &o, gname->ptr, gname->len, &g))
            return 1;
        after = g.last;
    } else if (srv_stream_parse_id(&v->argv[key + v->nkeys], &after, 0, 1,
                                   NULL)) {
        return 1; /* cannot be: it was parsed before it blocked */
    }
    if (!o.c.card || st_stream_edge(t, &o, 1, &last) ||
        st_stream_id_cmp(&last, &after) <= 0)
        return 0;
    return v->group ? 1 : ST_STREAM_READERS_ANY;
}

void srv_stream_block_or_reply(srv_conn *c, const srv_stream_read *r,
                               const st_stream_id *after)
{
    int ids = r->first_key + r->nkeys;
    char(*buf)[SRV_STREAM_ID_MAX] = NULL;
    srv_slice *saved = NULL;

    if (r->timeout_ms < 0) {
        srv_reply_null_array(c);
        return;
    }
    if (after) {
        buf = malloc((size_t)r->nkeys * sizeof *buf);
        saved = malloc((size_t)r->nkeys * sizeof *saved);
        if (!buf || !saved) {
            free(buf);
            free(saved);
            srv_txn_error(c, ENOMEM);
            return;
        }
        for (int i = 0; i < r->nkeys; i++) {
            saved[i] = c->argv[ids + i];
            if (saved[i].len == 1 && *(const char *)saved[i].ptr == '$')
                c->argv[ids + i] = (srv_slice){
                    buf[i], srv_stream_id_format(buf[i], &after[i])
                };
        }
    }
    srv_block_or_reply(c, &(srv_block_spec){ .type = ST_TYPE_STREAM,
                                             .first_key = r->first_key,
                                             .nkeys = r->nkeys,
                                             .timeout_ms = r->timeout_ms,
                                             .null_array = 1,
                                             .group = r->group,
                                             .ready = stream_ready });
    if (after)
        for (int i = 0; i < r->nkeys; i++)
            c->argv[ids + i] = saved[i];
    free(buf);
    free(saved);
}
