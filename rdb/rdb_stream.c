/*
 * rdb_stream.c - streams in RDB objects (rdb_stream.h).
 *
 * The layout of types 15, 19 and 21: the node count, each node as two
 * strings (its master id, 16 bytes big-endian, and a listpack), the
 * length, the last id (two lengths), for 19 and 21 the first id, the
 * greatest deleted id and entries_added, then the group count and each
 * group: its name, last delivered id, entries_read (19 and 21), its
 * pending list (a count, then raw 16-byte id, 8-byte little-endian
 * delivery time and a length-encoded delivery count each), its consumer
 * count and each consumer: name, seen time (8 bytes; 21 adds an active
 * time), and its pending ids (a count, raw ids).
 *
 * A node's listpack: live count, deleted count, master field count, the
 * master fields, a 0; then per entry its flags, ms and seq differences
 * from the master id, its fields and values (only values when the flags
 * say it has the master's fields), and its item count (for walking
 * backwards).
 */
#include "rdb/rdb_stream.h"
#include "rdb/rdb_err.h"
#include "rdb/rdb_obj.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define FLAG_DELETED 1
#define FLAG_SAMEFIELDS 2
#define BYTE_BITS 8
#define U64_BYTES 8
/* Items of an entry beside its strings: flags, ms and seq differences,
 * the item count; and the field count when it has its own fields. */
#define ENTRY_FIXED_ITEMS 3
/* Smallest bytes a group-wide pending entry takes: id, time, count. */
#define GPEL_MIN_BYTES (RDB_STREAM_ID_BYTES + U64_BYTES + 1)

void rdb_stream_scratch_free(rdb_stream_scratch *sc)
{
    rdb_buf_free(&sc->fv);
    rdb_buf_free(&sc->text);
    rdb_buf_free(&sc->pel);
    rdb_buf_free(&sc->out);
}

static int id_cmp(const rdb_stream_id *a, const rdb_stream_id *b)
{
    if (a->ms != b->ms)
        return a->ms < b->ms ? -1 : 1;
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    return 0;
}

static void id_put(uint8_t *p, const rdb_stream_id *id)
{
    for (int i = 0; i < U64_BYTES; i++) {
        p[i] = (uint8_t)(id->ms >> (BYTE_BITS * (U64_BYTES - 1 - i)));
        p[U64_BYTES + i] = (uint8_t)(id->seq >>
                                     (BYTE_BITS * (U64_BYTES - 1 - i)));
    }
}

static void id_get(const uint8_t *p, rdb_stream_id *id)
{
    id->ms = id->seq = 0;
    for (int i = 0; i < U64_BYTES; i++) {
        id->ms = (id->ms << BYTE_BITS) | p[i];
        id->seq = (id->seq << BYTE_BITS) | p[U64_BYTES + i];
    }
}

/* ---- decoding ---- */

typedef struct xdec {
    rdb_reader *r;
    const rdb_stream_sink *s;
    void *ctx;
    rdb_stream_scratch *sc;
    rdb_buf *str;
    rdb_stream_id prev;
    int any;          /* an entry was seen (prev is set) */
    uint64_t entries; /* live entries seen */
} xdec;

/* A string of an entry being collected: borrowed (off SIZE_MAX) or an
 * integer's text at `off` in the text buffer (which may move). */
typedef struct xstr {
    const uint8_t *p;
    size_t n, off;
} xstr;

static int bad(xdec *d, const char *what)
{
    return rdb_reader_fail(d->r, RDB_ECORRUPT, "a stream with %s", what);
}

static int refused(xdec *d)
{
    return rdb_reader_fail(d->r, RDB_ESINK, "the value was refused");
}

/* The next listpack item, which must be an integer. */
static int next_int(xdec *d, rdb_pack_iter *it, int64_t *v)
{
    rdb_pack_item item;

    if (rdb_pack_next(it, &item) != 1 || !item.is_int)
        return bad(d, "a malformed node");
    *v = item.v;
    return 0;
}

/* The next item appended to the fv buffer as a string. */
static int next_str(xdec *d, rdb_pack_iter *it)
{
    rdb_pack_item item;
    xstr x = { NULL, 0, SIZE_MAX };
    char t[RDB_LL_MAX];

    if (rdb_pack_next(it, &item) != 1)
        return bad(d, "a malformed node");
    if (item.is_int) {
        x.n = rdb_ll_to_string(item.v, t);
        x.off = d->sc->text.len;
        if (rdb_buf_append(&d->sc->text, t, x.n))
            return rdb_reader_fail(d->r, ENOMEM, "out of memory");
    } else {
        x.p = item.s;
        x.n = item.len;
    }
    if (rdb_buf_append(&d->sc->fv, &x, sizeof x))
        return rdb_reader_fail(d->r, ENOMEM, "out of memory");
    return 0;
}

static xstr *fv_at(xdec *d, size_t i) { return (xstr *)d->sc->fv.data + i; }

/* Hand one live entry to the sink: the master's fields at [0, nmaster)
 * when `same`, the entry's strings from `from` on. */
static int emit_entry(xdec *d, const rdb_stream_id *id, int same,
                      size_t nmaster, size_t from)
{
    size_t total = d->sc->fv.len / sizeof(xstr), n;
    rdb_str *out;

    n = same ? 2 * nmaster : total - from;
    d->sc->out.len = 0;
    if (rdb_buf_reserve(&d->sc->out, n * sizeof *out + 1))
        return rdb_reader_fail(d->r, ENOMEM, "out of memory");
    out = (rdb_str *)d->sc->out.data;
    for (size_t i = 0; i < n; i++) {
        /* Same fields: master field i/2, then the entry's value i/2. */
        const xstr *x = same ? fv_at(d, i % 2 ? from + i / 2 : i / 2)
                             : fv_at(d, from + i);
        out[i].p = x->off == SIZE_MAX ? x->p : d->sc->text.data + x->off;
        out[i].n = x->n;
    }
    if (d->any && id_cmp(id, &d->prev) <= 0)
        return bad(d, "entry ids out of order");
    d->prev = *id;
    d->any = 1;
    d->entries++;
    if (d->s && d->s->entry && d->s->entry(d->ctx, id, out, n / 2))
        return refused(d);
    return 0;
}

static int node(xdec *d, const rdb_stream_id *master, const uint8_t *blob,
                size_t len)
{
    rdb_pack_iter it;
    rdb_pack_item item;
    int64_t live = 0, deleted = 0, nmaster = 0, zero = 0, flags = 0, dms = 0,
            dseq = 0, nf = 0, lpcount = 0, total;
    size_t text_master, from;
    int rc;

    if (rdb_pack_open(&it, RDB_PACK_LISTPACK, blob, len))
        return bad(d, "a malformed node");
    if ((rc = next_int(d, &it, &live)) || (rc = next_int(d, &it, &deleted)) ||
        (rc = next_int(d, &it, &nmaster)))
        return rc;
    if (live < 0 || deleted < 0 || nmaster <= 0 || (uint64_t)nmaster > len)
        return bad(d, "a malformed node");
    d->sc->fv.len = 0;
    d->sc->text.len = 0;
    for (int64_t i = 0; i < nmaster; i++)
        if ((rc = next_str(d, &it)))
            return rc;
    if ((rc = next_int(d, &it, &zero)))
        return rc;
    if (zero != 0)
        return bad(d, "a malformed master entry");
    text_master = d->sc->text.len;
    from = (size_t)nmaster;
    total = live + deleted;
    if (d->s && d->s->node &&
        d->s->node(d->ctx, (uint64_t)live, (uint64_t)deleted, len))
        return refused(d);
    for (int64_t e = 0; e < total; e++) {
        rdb_stream_id id;
        int same;
        d->sc->fv.len = from * sizeof(xstr);
        d->sc->text.len = text_master;
        if ((rc = next_int(d, &it, &flags)) || (rc = next_int(d, &it, &dms)) ||
            (rc = next_int(d, &it, &dseq)))
            return rc;
        same = (flags & FLAG_SAMEFIELDS) != 0;
        nf = nmaster;
        if (!same) {
            if ((rc = next_int(d, &it, &nf)))
                return rc;
            if (nf <= 0 || (uint64_t)nf > len)
                return bad(d, "a malformed entry");
        }
        for (int64_t i = 0; i < (same ? nf : 2 * nf); i++)
            if ((rc = next_str(d, &it)))
                return rc;
        if ((rc = next_int(d, &it, &lpcount)))
            return rc;
        if (lpcount != nf + ENTRY_FIXED_ITEMS + (same ? 0 : nf + 1))
            return bad(d, "a malformed entry");
        id.ms = master->ms + (uint64_t)dms;
        id.seq = master->seq + (uint64_t)dseq;
        if (flags & FLAG_DELETED) {
            deleted--;
            continue;
        }
        live--;
        if ((rc = emit_entry(d, &id, same, (size_t)nmaster, from)))
            return rc;
    }
    if (live != 0 || deleted != 0 || rdb_pack_next(&it, &item) != 0)
        return bad(d, "a malformed node");
    return 0;
}

static int read_id(xdec *d, rdb_stream_id *id)
{
    int rc = rdb_read_len(d->r, &id->ms, NULL);

    return rc ? rc : rdb_read_len(d->r, &id->seq, NULL);
}

static int read_raw_id(xdec *d, rdb_stream_id *id)
{
    uint8_t b[RDB_STREAM_ID_BYTES];
    int rc = rdb_read(d->r, b, sizeof b);

    if (rc == 0)
        id_get(b, id);
    return rc;
}

/* A count of items of at least `min` bytes each, checked against what
 * the input can still hold. */
static int read_count(xdec *d, uint64_t *n, uint64_t min)
{
    int rc = rdb_read_len(d->r, n, NULL);

    if (rc)
        return rc;
    if (d->r->size != UINT64_MAX && *n > d->r->size / min)
        return bad(d, "a count past its bytes");
    return 0;
}

/* Redis 7.0's entries_read for a group of a type 15 stream, whose
 * format did not keep it: exact where the stream's state tells it (an
 * id at its last or first entry, or before the first with no deletion
 * inside), unknown otherwise. */
static int64_t estimate_read(const rdb_stream_meta *m, const rdb_stream_id *id)
{
    static const rdb_stream_id zero = { 0, 0 };
    int last = id_cmp(id, &m->last), first;

    if (m->entries_added == 0)
        return 0;
    if (m->length == 0 && last <= 0)
        return (int64_t)m->entries_added;
    if (last == 0)
        return (int64_t)m->entries_added;
    if (last > 0)
        return RDB_STREAM_READ_UNKNOWN;
    first = id_cmp(id, &m->first);
    if (id_cmp(&m->max_deleted, &zero) == 0 ||
        id_cmp(&m->max_deleted, &m->first) < 0) {
        if (first < 0)
            return (int64_t)(m->entries_added - m->length);
        if (first == 0)
            return (int64_t)(m->entries_added - m->length + 1);
    }
    return RDB_STREAM_READ_UNKNOWN;
}

typedef struct gpel {
    rdb_stream_id id;
    int64_t time;
    uint64_t count;
    uint64_t owned;
} gpel;

static int gpel_cmp(const void *a, const void *b)
{
    return id_cmp(&((const gpel *)a)->id, &((const gpel *)b)->id);
}

static int consumer(xdec *d, int type, gpel *pel, size_t npel)
{
    const uint8_t *name;
    size_t nlen;
    uint64_t seen, active, n;
    int rc;

    if ((rc = rdb_read_string(d->r, d->str, &name, &nlen)) ||
        (rc = rdb_read_le64(d->r, &seen)))
        return rc;
    if (type == RDB_TYPE_STREAM_LISTPACKS_3 &&
        (rc = rdb_read_le64(d->r, &active)))
        return rc;
    if ((rc = read_count(d, &n, RDB_STREAM_ID_BYTES)))
        return rc;
    if (d->s && d->s->consumer &&
        d->s->consumer(d->ctx, name, nlen, (int64_t)seen, n))
        return refused(d);
    for (uint64_t i = 0; i < n; i++) {
        gpel key, *p;
        if ((rc = read_raw_id(d, &key.id)))
            return rc;
        p = bsearch(&key, pel, npel, sizeof *pel, gpel_cmp);
        if (!p)
            return bad(d, "a consumer's pending entry not in its group's");
        if (p->owned)
            return bad(d, "a pending entry owned twice");
        p->owned = 1;
        if (d->s && d->s->pel && d->s->pel(d->ctx, &p->id, p->time, p->count))
            return refused(d);
    }
    return 0;
}

static int group(xdec *d, int type, const rdb_stream_meta *m)
{
    const uint8_t *name;
    size_t nlen, npel;
    rdb_stream_id last;
    uint64_t er = (uint64_t)RDB_STREAM_READ_UNKNOWN, n, nc, t;
    gpel *pel;
    int rc;

    if ((rc = rdb_read_string(d->r, d->str, &name, &nlen)) ||
        (rc = read_id(d, &last)))
        return rc;
    if (type == RDB_TYPE_STREAM_LISTPACKS)
        er = (uint64_t)estimate_read(m, &last);
    else if ((rc = rdb_read_len(d->r, &er, NULL)))
        return rc;
    if ((rc = read_count(d, &n, GPEL_MIN_BYTES)))
        return rc;
    d->sc->pel.len = 0;
    if (rdb_buf_reserve(&d->sc->pel, (size_t)n * sizeof(gpel) + 1))
        return rdb_reader_fail(d->r, ENOMEM, "out of memory");
    pel = (gpel *)d->sc->pel.data;
    for (uint64_t i = 0; i < n; i++) {
        if ((rc = read_raw_id(d, &pel[i].id)) ||
            (rc = rdb_read_le64(d->r, &t)) ||
            (rc = rdb_read_len(d->r, &pel[i].count, NULL)))
            return rc;
        pel[i].time = (int64_t)t;
        pel[i].owned = 0;
    }
    npel = (size_t)n;
    qsort(pel, npel, sizeof *pel, gpel_cmp);
    for (size_t i = 1; i < npel; i++)
        if (id_cmp(&pel[i - 1].id, &pel[i].id) == 0)
            return bad(d, "the same pending entry twice in a group");
    if ((rc = read_count(d, &nc, 1)))
        return rc;
    /* The name may sit in d->str, which the consumers reuse: the sink
     * has it before they are read. */
    if (d->s && d->s->group &&
        d->s->group(d->ctx, name, nlen, &last, (int64_t)er, n, nc))
        return refused(d);
    for (uint64_t i = 0; i < nc; i++)
        if ((rc = consumer(d, type, pel, npel)))
            return rc;
    for (size_t i = 0; i < npel; i++)
        if (!pel[i].owned)
            return bad(d, "a pending entry without a consumer");
    return 0;
}

int rdb_stream_decode(rdb_reader *r, int type, const rdb_stream_sink *s,
                      void *ctx, rdb_stream_scratch *sc, rdb_buf *str)
{
    xdec d = { .r = r, .s = s, .ctx = ctx, .sc = sc, .str = str };
    rdb_stream_meta m;
    uint64_t nodes;
    const uint8_t *p;
    size_t n;
    int rc;

    memset(&m, 0, sizeof m);
    if ((rc = read_count(&d, &nodes, 2)))
        return rc;
    for (uint64_t i = 0; i < nodes; i++) {
        rdb_stream_id master;
        if ((rc = rdb_read_string(r, str, &p, &n)))
            return rc;
        if (n != RDB_STREAM_ID_BYTES)
            return bad(&d, "a node key that is not an id");
        id_get(p, &master);
        if ((rc = rdb_read_string(r, &sc->pel, &p, &n)))
            return rc;
        if (n <= RDB_LP_HEADER + 1)
            return bad(&d, "an empty node");
        if ((rc = node(&d, &master, p, n)))
            return rc;
    }
    if ((rc = rdb_read_len(r, &m.length, NULL)) || (rc = read_id(&d, &m.last)))
        return rc;
    if (type == RDB_TYPE_STREAM_LISTPACKS) {
        m.entries_added = m.length;
        /* The first entry's id is the first one decoded. */
        m.first = d.entries ? d.prev : m.first;
    } else if ((rc = read_id(&d, &m.first)) ||
               (rc = read_id(&d, &m.max_deleted)) ||
               (rc = rdb_read_len(r, &m.entries_added, NULL))) {
        return rc;
    }
    if (m.length != d.entries)
        return bad(&d, "a length that is not its entries'");
    if (d.any && id_cmp(&m.last, &d.prev) < 0)
        return bad(&d, "a last id below its entries'");
    if ((rc = read_count(&d, &m.groups, 1)))
        return rc;
    if (s && s->meta && s->meta(ctx, &m))
        return refused(&d);
    for (uint64_t i = 0; i < m.groups; i++)
        if ((rc = group(&d, type, &m)))
            return rc;
    return 0;
}

/* ---- encoding ---- */

enum { XS_IDLE, XS_ENTRIES, XS_GROUPS };

void rdb_xenc_init(rdb_xenc *x)
{
    memset(x, 0, sizeof *x);
    rdb_writer_mem(&x->nodes, 1);
}

void rdb_xenc_fini(rdb_xenc *x)
{
    rdb_writer_fini(&x->nodes);
    rdb_buf_free(&x->pack);
    rdb_buf_free(&x->body);
    rdb_buf_free(&x->master);
}

int rdb_xenc_begin(rdb_xenc *x, rdb_writer *w, const void *key, size_t klen)
{
    x->w = w;
    x->key = key;
    x->klen = klen;
    x->nodes.buf.len = 0;
    x->nodes.err = 0;
    x->nodes.compress = w->compress;
    x->node_entries = x->nnodes = x->entries = 0;
    x->groups_left = x->gpel_left = x->consumers_left = x->cpel_left = 0;
    x->state = XS_ENTRIES;
    return 0;
}

/* The bytes a listpack integer entry takes. */
static size_t int_size(int64_t v)
{
    char t[RDB_LL_MAX];

    return rdb_lp_entry_size(t, rdb_ll_to_string(v, t));
}

/* The i-th master field of the open node. */
static const uint8_t *master_field(const rdb_xenc *x, size_t *pos, size_t *n)
{
    const uint8_t *p = x->master.data + *pos;

    memcpy(n, p, sizeof *n);
    *pos += sizeof *n + *n;
    return p + sizeof *n;
}

/* What the open node's listpack would take now (Redis compares this
 * plus an entry's field and value bytes with the node limit). */
static size_t node_bytes(const rdb_xenc *x)
{
    size_t total = RDB_LP_HEADER + 1 + int_size((int64_t)x->node_entries) +
                   int_size(0) + int_size((int64_t)x->master_fields) +
                   int_size(0) + x->body.len;
    size_t pos = 0, n;

    for (uint64_t i = 0; i < x->master_fields; i++) {
        const uint8_t *f = master_field(x, &pos, &n);
        total += rdb_lp_entry_size(f, n);
    }
    return total;
}

static int flush_node(rdb_xenc *x)
{
    uint8_t key[RDB_STREAM_ID_BYTES];
    rdb_lp lp;
    size_t pos = 0, n;
    int rc;

    if (x->node_entries == 0)
        return 0;
    x->pack.len = 0;
    if ((rc = rdb_lp_begin(&lp, &x->pack)) ||
        (rc = rdb_lp_add_int(&lp, (int64_t)x->node_entries)) ||
        (rc = rdb_lp_add_int(&lp, 0)) ||
        (rc = rdb_lp_add_int(&lp, (int64_t)x->master_fields)))
        return rc;
    for (uint64_t i = 0; i < x->master_fields; i++) {
        const uint8_t *f = master_field(x, &pos, &n);
        if ((rc = rdb_lp_add(&lp, f, n)))
            return rc;
    }
    if ((rc = rdb_lp_add_int(&lp, 0)) ||
        (rc = rdb_buf_append(&x->pack, x->body.data, x->body.len)))
        return rc;
    lp.count += x->body_lp.count;
    if ((rc = rdb_lp_end(&lp)))
        return rc;
    id_put(key, &x->master_id);
    if ((rc = rdb_put_blob(&x->nodes, key, sizeof key)) ||
        (rc = rdb_put_blob(&x->nodes, x->pack.data, x->pack.len)))
        return rc;
    x->nnodes++;
    x->node_entries = 0;
    return 0;
}

static int open_node(rdb_xenc *x, const rdb_stream_id *id, const rdb_str *fv,
                     size_t n)
{
    x->master_id = *id;
    x->master_fields = n;
    x->master.len = 0;
    x->body.len = 0;
    x->body_lp.b = &x->body;
    x->body_lp.start = 0;
    x->body_lp.count = 0;
    for (size_t i = 0; i < n; i++)
        if (rdb_buf_append(&x->master, &fv[2 * i].n, sizeof fv[2 * i].n) ||
            rdb_buf_append(&x->master, fv[2 * i].p, fv[2 * i].n))
            return ENOMEM;
    return 0;
}

static int same_fields(const rdb_xenc *x, const rdb_str *fv, size_t n)
{
    size_t pos = 0, len;

    if (n != x->master_fields)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *f = master_field(x, &pos, &len);
        if (len != fv[2 * i].n || (len && memcmp(f, fv[2 * i].p, len)))
            return 0;
    }
    return 1;
}

int rdb_xenc_entry(rdb_xenc *x, const rdb_stream_id *id, const rdb_str *fv,
                   size_t n)
{
    size_t bytes = 0;
    rdb_lp *lp = &x->body_lp;
    int same, rc;

    if (x->state != XS_ENTRIES || n == 0 ||
        (x->entries && id_cmp(id, &x->prev) <= 0))
        return RDB_ECORRUPT;
    for (size_t i = 0; i < 2 * n; i++)
        bytes += fv[i].n;
    /* Redis 7.0's rule: a new node when this one's bytes plus the
     * entry's strings reach the byte limit, or it holds the most
     * entries. */
    if (x->node_entries &&
        (node_bytes(x) + bytes >= RDB_STREAM_NODE_BYTES ||
         x->node_entries >= RDB_STREAM_NODE_ENTRIES) &&
        (rc = flush_node(x)))
        return rc;
    if (x->node_entries == 0 && (rc = open_node(x, id, fv, n)))
        return rc;
    same = same_fields(x, fv, n);
    if ((rc = rdb_lp_add_int(lp, same ? FLAG_SAMEFIELDS : 0)) ||
        (rc = rdb_lp_add_int(lp, (int64_t)(id->ms - x->master_id.ms))) ||
        (rc = rdb_lp_add_int(lp, (int64_t)(id->seq - x->master_id.seq))))
        return rc;
    if (!same && (rc = rdb_lp_add_int(lp, (int64_t)n)))
        return rc;
    for (size_t i = 0; i < 2 * n; i++) {
        if (same && i % 2 == 0)
            continue;
        if ((rc = rdb_lp_add(lp, fv[i].p, fv[i].n)))
            return rc;
    }
    if ((rc = rdb_lp_add_int(lp, (int64_t)(n + ENTRY_FIXED_ITEMS +
                                           (same ? 0 : n + 1)))))
        return rc;
    x->node_entries++;
    x->entries++;
    x->prev = *id;
    return 0;
}

static int put_id(rdb_writer *w, const rdb_stream_id *id)
{
    int rc = rdb_put_len(w, id->ms);

    return rc ? rc : rdb_put_len(w, id->seq);
}

static int put_raw_id(rdb_writer *w, const rdb_stream_id *id)
{
    uint8_t b[RDB_STREAM_ID_BYTES];

    id_put(b, id);
    return rdb_put(w, b, sizeof b);
}

int rdb_xenc_meta(rdb_xenc *x, const rdb_stream_meta *m)
{
    rdb_writer *w = x->w;
    int rc;

    if (x->state != XS_ENTRIES || m->length != x->entries)
        return RDB_ECORRUPT;
    if ((rc = flush_node(x)))
        return rc;
    if (x->nodes.err)
        return x->nodes.err;
    if ((rc = rdb_put_u8(w, RDB_TYPE_STREAM_LISTPACKS_2)) ||
        (x->key && (rc = rdb_put_string(w, x->key, x->klen))) ||
        (rc = rdb_put_len(w, x->nnodes)) ||
        (rc = rdb_put(w, x->nodes.buf.data, x->nodes.buf.len)) ||
        (rc = rdb_put_len(w, m->length)) || (rc = put_id(w, &m->last)) ||
        (rc = put_id(w, &m->first)) || (rc = put_id(w, &m->max_deleted)) ||
        (rc = rdb_put_len(w, m->entries_added)) ||
        (rc = rdb_put_len(w, m->groups)))
        return rc;
    x->groups_left = m->groups;
    x->state = XS_GROUPS;
    return 0;
}

/* The group or consumer before is complete. */
static int settled(const rdb_xenc *x)
{
    return x->state == XS_GROUPS && x->gpel_left == 0 &&
           x->consumers_left == 0 && x->cpel_left == 0;
}

int rdb_xenc_group(rdb_xenc *x, const void *name, size_t len,
                   const rdb_stream_id *last, int64_t entries_read,
                   uint64_t pending, uint64_t consumers)
{
    rdb_writer *w = x->w;
    int rc;

    if (!settled(x) || x->groups_left == 0)
        return RDB_ECORRUPT;
    if ((rc = rdb_put_string(w, name, len)) || (rc = put_id(w, last)) ||
        (rc = rdb_put_len(w, (uint64_t)entries_read)) ||
        (rc = rdb_put_len(w, pending)))
        return rc;
    x->groups_left--;
    x->gpel_left = pending;
    x->consumers_left = consumers;
    /* The consumer count follows the pending list. */
    return pending ? 0 : rdb_put_len(w, consumers);
}

int rdb_xenc_gpel(rdb_xenc *x, const rdb_stream_id *id, int64_t delivery_time,
                  uint64_t delivery_count)
{
    rdb_writer *w = x->w;
    int rc;

    if (x->state != XS_GROUPS || x->gpel_left == 0)
        return RDB_ECORRUPT;
    if ((rc = put_raw_id(w, id)) ||
        (rc = rdb_put_le64(w, (uint64_t)delivery_time)) ||
        (rc = rdb_put_len(w, delivery_count)))
        return rc;
    return --x->gpel_left ? 0 : rdb_put_len(w, x->consumers_left);
}

int rdb_xenc_consumer(rdb_xenc *x, const void *name, size_t len,
                      int64_t seen_time, uint64_t pending)
{
    rdb_writer *w = x->w;
    int rc;

    if (x->state != XS_GROUPS || x->gpel_left || x->cpel_left ||
        x->consumers_left == 0)
        return RDB_ECORRUPT;
    if ((rc = rdb_put_string(w, name, len)) ||
        (rc = rdb_put_le64(w, (uint64_t)seen_time)) ||
        (rc = rdb_put_len(w, pending)))
        return rc;
    x->consumers_left--;
    x->cpel_left = pending;
    return 0;
}

int rdb_xenc_cpel(rdb_xenc *x, const rdb_stream_id *id)
{
    if (x->state != XS_GROUPS || x->cpel_left == 0)
        return RDB_ECORRUPT;
    x->cpel_left--;
    return put_raw_id(x->w, id);
}

int rdb_xenc_end(rdb_xenc *x)
{
    if (!settled(x) || x->groups_left)
        return RDB_ECORRUPT;
    x->state = XS_IDLE;
    return x->w->err;
}
