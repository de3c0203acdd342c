/*
 * st_list.c - list elements by sequence, kept dense between head and tail.
 */
#include "storage/st_list.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_BIAS 0x8000000000000000ull

#define LISTS(t) ((t)->env->dbi[ST_DBI_LISTS])

void st_list_key(uint8_t *buf, uint64_t id, int64_t seq)
{
    st_codec_put_be64(buf, id);
    st_codec_put_be64(buf + ST_COLL_ID_BYTES, (uint64_t)seq ^ SEQ_BIAS);
}

int64_t st_list_key_seq(const uint8_t *buf)
{
    return (int64_t)(st_codec_get_be64(buf + ST_COLL_ID_BYTES) ^ SEQ_BIAS);
}

static int put_seq(st_txn *t, uint64_t id, int64_t seq, const void *val,
                   size_t len)
{
    uint8_t buf[ST_LIST_KEY_BYTES];
    MDB_val k = { sizeof buf, buf }, v = { len, (void *)val };

    st_list_key(buf, id, seq);
    return st_err_map(st_mdb_put(t->txn, LISTS(t), &k, &v, 0));
}

static int get_seq(st_txn *t, uint64_t id, int64_t seq, const uint8_t **val,
                   size_t *len)
{
    uint8_t buf[ST_LIST_KEY_BYTES];
    MDB_val k = { sizeof buf, buf }, v;
    int rc;

    st_list_key(buf, id, seq);
    if ((rc = mdb_get(t->txn, LISTS(t), &k, &v)))
        return rc == MDB_NOTFOUND ? ST_ECORRUPT : st_err_map(rc);
    *val = v.mv_data;
    *len = v.mv_size;
    return 0;
}

static int del_seq(st_txn *t, uint64_t id, int64_t seq)
{
    uint8_t buf[ST_LIST_KEY_BYTES];
    MDB_val k = { sizeof buf, buf };

    st_list_key(buf, id, seq);
    return st_err_map(st_mdb_del(t->txn, LISTS(t), &k, NULL));
}

int st_list_push(st_txn *t, st_obj *o, int left, const void *val, size_t len)
{
    int64_t seq = left ? o->c.head - 1 : o->c.tail;
    int rc;

    if (o->c.card == 0)
        o->c.head = o->c.tail = seq = 0;
    if ((rc = put_seq(t, o->c.id, seq, val, len)))
        return rc;
    if (o->c.card == 0)
        o->c.tail = 1;
    else if (left)
        o->c.head--;
    else
        o->c.tail++;
    o->c.card++;
    return 0;
}

int st_list_pop(st_txn *t, st_obj *o, int left, st_list_fn fn, void *ctx)
{
    int64_t seq;
    const uint8_t *v;
    size_t len;
    int rc;

    if (o->c.card == 0)
        return ST_ENOTFOUND;
    seq = left ? o->c.head : o->c.tail - 1;
    if ((rc = get_seq(t, o->c.id, seq, &v, &len)))
        return rc;
    if (fn)
        fn(ctx, v, len);
    if ((rc = del_seq(t, o->c.id, seq)))
        return rc;
    if (left)
        o->c.head++;
    else
        o->c.tail--;
    o->c.card--;
    return 0;
}

int st_list_get(st_txn *t, const st_obj *o, uint64_t i, const uint8_t **val,
                size_t *len)
{
    if (i >= o->c.card)
        return ST_ENOTFOUND;
    return get_seq(t, o->c.id, o->c.head + (int64_t)i, val, len);
}

int st_list_set(st_txn *t, st_obj *o, uint64_t i, const void *val, size_t len)
{
    if (i >= o->c.card)
        return ST_ENOTFOUND;
    return put_seq(t, o->c.id, o->c.head + (int64_t)i, val, len);
}

int st_list_range(st_txn *t, const st_obj *o, uint64_t start, uint64_t count,
                  int rev, st_list_fn fn, void *ctx)
{
    uint8_t buf[ST_LIST_KEY_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof buf, buf }, v;
    int rc;

    if (start >= o->c.card || count == 0)
        return 0;
    if ((rc = mdb_cursor_open(t->txn, LISTS(t), &cur)))
        return st_err_map(rc);
    st_list_key(buf, o->c.id, o->c.head + (int64_t)start);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY); rc == 0 && count;
         rc = mdb_cursor_get(cur, &k, &v, rev ? MDB_PREV : MDB_NEXT)) {
        if (k.mv_size != ST_LIST_KEY_BYTES ||
            st_codec_get_be64(k.mv_data) != o->c.id)
            break;
        count--;
        if (fn(ctx, v.mv_data, v.mv_size))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

int st_list_trim(st_txn *t, st_obj *o, uint64_t start, uint64_t stop)
{
    int rc;

    for (uint64_t i = 0; i < start; i++)
        if ((rc = del_seq(t, o->c.id, o->c.head + (int64_t)i)))
            return rc;
    for (uint64_t i = stop + 1; i < o->c.card; i++)
        if ((rc = del_seq(t, o->c.id, o->c.head + (int64_t)i)))
            return rc;
    o->c.tail = o->c.head + (int64_t)stop + 1;
    o->c.head += (int64_t)start;
    o->c.card = stop - start + 1;
    return 0;
}

/* A grow-only copy buffer: values are copied out before writes that may
 * move the page they live in. */
typedef struct copybuf {
    uint8_t *p;
    size_t cap;
} copybuf;

static int copy_in(copybuf *b, const uint8_t *src, size_t len)
{
    if (len > b->cap) {
        uint8_t *p = realloc(b->p, len);
        if (!p)
            return ENOMEM;
        b->p = p;
        b->cap = len;
    }
    if (len)
        memcpy(b->p, src, len);
    return 0;
}

/* Move the element at sequence `from` to sequence `to`. */
static int move_seq(st_txn *t, uint64_t id, int64_t from, int64_t to,
                    copybuf *b)
{
    const uint8_t *v;
    size_t len;
    int rc;

    if ((rc = get_seq(t, id, from, &v, &len)) || (rc = copy_in(b, v, len)))
        return rc;
    return put_seq(t, id, to, b->p, len);
}

static int equals(const uint8_t *v, size_t vl, const void *x, size_t xl)
{
    return vl == xl && (xl == 0 || memcmp(v, x, xl) == 0);
}

int st_list_rem(st_txn *t, st_obj *o, long long count, const void *val,
                size_t len, long long *removed)
{
    int64_t n = (int64_t)o->c.card, w = 0;
    int back = count < 0;
    unsigned long long limit = back ? 0ull - (unsigned long long)count
                                    : (unsigned long long)count;
    copybuf b = { NULL, 0 };
    int rc = 0;

    *removed = 0;
    /* Walk from one end; survivors slide towards that end over the gaps. */
    for (int64_t r = 0; r < n; r++) {
        int64_t rs = back ? o->c.tail - 1 - r : o->c.head + r;
        int64_t ws = back ? o->c.tail - 1 - w : o->c.head + w;
        const uint8_t *v;
        size_t vl;
        if ((rc = get_seq(t, o->c.id, rs, &v, &vl)))
            break;
        if (equals(v, vl, val, len) &&
            (limit == 0 || (unsigned long long)*removed < limit)) {
            (*removed)++;
            continue;
        }
        if (rs != ws && (rc = move_seq(t, o->c.id, rs, ws, &b)))
            break;
        w++;
    }
    for (int64_t i = w; i < n && !rc; i++)
        rc = del_seq(t, o->c.id, back ? o->c.tail - 1 - i : o->c.head + i);
    free(b.p);
    if (rc)
        return rc;
    if (back)
        o->c.head = o->c.tail - w;
    else
        o->c.tail = o->c.head + w;
    o->c.card = (uint64_t)w;
    return 0;
}

/* Index of the first element equal to `x`, or -1. */
static int find_first(st_txn *t, const st_obj *o, const void *x, size_t xl,
                      int64_t *at)
{
    uint8_t buf[ST_LIST_KEY_BYTES];
    MDB_cursor *cur;
    MDB_val k = { sizeof buf, buf }, v;
    int64_t i = 0;
    int rc;

    *at = -1;
    if ((rc = mdb_cursor_open(t->txn, LISTS(t), &cur)))
        return st_err_map(rc);
    st_list_key(buf, o->c.id, o->c.head);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
         rc == 0 && (uint64_t)i < o->c.card;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), i++) {
        if (equals(v.mv_data, v.mv_size, x, xl)) {
            *at = i;
            break;
        }
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

int st_list_insert(st_txn *t, st_obj *o, int after, const void *pivot,
                   size_t plen, const void *val, size_t len)
{
    copybuf b = { NULL, 0 };
    int64_t p, i, n = (int64_t)o->c.card;
    int rc;

    if ((rc = find_first(t, o, pivot, plen, &p)))
        return rc;
    if (p < 0)
        return ST_ENOTFOUND;
    i = after ? p + 1 : p; /* the new element's index */
    if (i < n / 2) {
        /* Slide [0, i) one step towards the head. */
        for (int64_t j = 0; j < i && !rc; j++)
            rc = move_seq(t, o->c.id, o->c.head + j, o->c.head + j - 1, &b);
        if (!rc) {
            o->c.head--;
            rc = put_seq(t, o->c.id, o->c.head + i, val, len);
        }
    } else {
        /* Slide [i, n) one step towards the tail. */
        for (int64_t j = n - 1; j >= i && !rc; j--)
            rc = move_seq(t, o->c.id, o->c.head + j, o->c.head + j + 1, &b);
        if (!rc) {
            o->c.tail++;
            rc = put_seq(t, o->c.id, o->c.head + i, val, len);
        }
    }
    free(b.p);
    if (rc == 0)
        o->c.card++;
    return rc;
}
