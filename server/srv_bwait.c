/*
 * srv_bwait.c - the broker's waiter registry (see the header).
 *
 * Tables: keys (db + name -> bw_key, present while someone waits on it)
 * and waiters (link + token -> bw_waiter). A waiter has one node per key
 * it waits on; a key's nodes form its FIFO queue (doubly linked, oldest
 * first). A key's grants are found by walking its queue from the head,
 * which stops after as many free waiters as it wants grants, so a grant
 * costs O(waiters ahead that hold grants elsewhere).
 */
#include "server/srv_bwait.h"
#include "server/srv_buf.h"
#include "server/srv_dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DB_BYTES 4
#define WAITER_KEY_BYTES 12 /* u32 link, u64 token */

struct bw_waiter;

typedef struct bw_node {
    struct bw_waiter *waiter;
    struct bw_key *key;
    struct bw_node *prev, *next; /* in key->queue */
} bw_node;

typedef struct bw_key {
    srv_dict_entry *de;
    unsigned db;
    bw_node *head, *tail;
    uint64_t est;     /* elements believed present */
    uint64_t est_txn; /* the transaction that said so */
    uint64_t granted; /* grants outstanding */
} bw_key;

typedef struct bw_waiter {
    srv_dict_entry *de;
    uint32_t link;
    uint64_t token;
    bw_key *grant; /* the key it holds a grant on, or NULL */
    int nkeys;
    bw_node nodes[];
} bw_waiter;

struct srv_bwait {
    srv_dict keys;
    srv_dict waiters;
    srv_bwait_grant_fn *grant;
    void *ctx;
    srv_buf scratch; /* db + name of a lookup */
};

srv_bwait *srv_bwait_create(srv_bwait_grant_fn *grant, void *ctx)
{
    srv_bwait *w = calloc(1, sizeof *w);

    if (w) {
        w->grant = grant;
        w->ctx = ctx;
    }
    return w;
}

static void free_val(srv_dict_entry *de) { free(de->val); }

void srv_bwait_destroy(srv_bwait **wp)
{
    srv_bwait *w = *wp;

    if (!w)
        return;
    srv_dict_clear(&w->keys, free_val);
    srv_dict_clear(&w->waiters, free_val);
    srv_buf_free(&w->scratch);
    free(w);
    *wp = NULL;
}

/* The table key of (db, name) in w->scratch; -1 on ENOMEM. */
static int key_name(srv_bwait *w, unsigned db, const char *name, size_t len)
{
    unsigned char d[DB_BYTES] = { (unsigned char)(db >> 24),
                                  (unsigned char)(db >> 16),
                                  (unsigned char)(db >> 8), (unsigned char)db };

    w->scratch.len = 0;
    if (srv_buf_reserve(&w->scratch, DB_BYTES + len))
        return -1;
    srv_buf_append(&w->scratch, d, DB_BYTES);
    srv_buf_append(&w->scratch, name, len);
    return 0;
}

static bw_key *key_find(srv_bwait *w, unsigned db, const char *name, size_t len)
{
    srv_dict_entry *de;

    if (key_name(w, db, name, len))
        return NULL;
    de = srv_dict_find(&w->keys, w->scratch.data, w->scratch.len,
                       srv_dict_hash(w->scratch.data, w->scratch.len));
    return de ? de->val : NULL;
}

static void waiter_name(unsigned char *out, uint32_t link, uint64_t token)
{
    memcpy(out, &link, sizeof link);
    memcpy(out + sizeof link, &token, sizeof token);
}

static bw_waiter *waiter_find(srv_bwait *w, uint32_t link, uint64_t token)
{
    unsigned char k[WAITER_KEY_BYTES];
    srv_dict_entry *de;

    waiter_name(k, link, token);
    de = srv_dict_find(&w->waiters, k, sizeof k, srv_dict_hash(k, sizeof k));
    return de ? de->val : NULL;
}

/* Give k's grants to its oldest free waiters, as many as it may hold
 * elements. */
static void dispatch(srv_bwait *w, bw_key *k)
{
    for (bw_node *n = k->head; n && k->granted < k->est; n = n->next) {
        bw_waiter *x = n->waiter;
        if (x->grant)
            continue;
        x->grant = k;
        k->granted++;
        w->grant(w->ctx, x->link, x->token, k->de->key + DB_BYTES,
                 k->de->klen - DB_BYTES);
    }
}

/* What a transaction says k holds; an older report than the last is
 * stale. */
static void estimate(bw_key *k, uint64_t n, uint64_t txn)
{
    if (txn >= k->est_txn) {
        k->est = n;
        k->est_txn = txn;
    }
}

/* x gives back the grant it holds (its attempt is over). */
static bw_key *ungrant(bw_waiter *x)
{
    bw_key *k = x->grant;

    if (k) {
        k->granted--;
        x->grant = NULL;
    }
    return k;
}

static void key_drop_if_empty(srv_bwait *w, bw_key *k)
{
    if (k->head)
        return;
    srv_dict_remove(&w->keys, k->de);
    free(k);
}

/* Take x out of every queue and free it; keys it leaves go on granting. */
static void waiter_free(srv_bwait *w, bw_waiter *x)
{
    bw_key *held = ungrant(x);

    for (int i = 0; i < x->nkeys; i++) {
        bw_node *n = &x->nodes[i];
        bw_key *k = n->key;
        if (!k)
            continue; /* a repeated key */
        if (n->prev)
            n->prev->next = n->next;
        else
            k->head = n->next;
        if (n->next)
            n->next->prev = n->prev;
        else
            k->tail = n->prev;
    }
    srv_dict_remove(&w->waiters, x->de);
    if (held && held->head)
        dispatch(w, held);
    for (int i = 0; i < x->nkeys; i++)
        if (x->nodes[i].key)
            key_drop_if_empty(w, x->nodes[i].key);
    free(x);
}

int srv_bwait_add(srv_bwait *w, uint32_t link, uint64_t token, unsigned db,
                  int nkeys, const char *const *keys, const size_t *lens)
{
    unsigned char name[WAITER_KEY_BYTES];
    uint64_t h;
    bw_waiter *x;
    srv_dict_entry *de;

    if (nkeys <= 0)
        return EINVAL;
    waiter_name(name, link, token);
    h = srv_dict_hash(name, sizeof name);
    if (srv_dict_find(&w->waiters, name, sizeof name, h))
        return EEXIST;
    if (!(x = calloc(1, sizeof *x + (size_t)nkeys * sizeof x->nodes[0])))
        return ENOMEM;
    if (!(de = srv_dict_add(&w->waiters, name, sizeof name, h))) {
        free(x);
        return ENOMEM;
    }
    de->val = x;
    x->de = de;
    x->link = link;
    x->token = token;
    x->nkeys = nkeys;
    for (int i = 0; i < nkeys; i++) {
        bw_node *n = &x->nodes[i];
        bw_key *k;
        if (key_name(w, db, keys[i], lens[i]))
            goto nomem;
        h = srv_dict_hash(w->scratch.data, w->scratch.len);
        if (!(de = srv_dict_find(&w->keys, w->scratch.data, w->scratch.len,
                                 h))) {
            if (!(k = calloc(1, sizeof *k)) ||
                !(de = srv_dict_add(&w->keys, w->scratch.data, w->scratch.len,
                                    h))) {
                free(k);
                goto nomem;
            }
            de->val = k;
            k->de = de;
            k->db = db;
        }
        k = de->val;
        if (k->tail && k->tail->waiter == x)
            continue; /* named twice: one place is enough */
        n->waiter = x;
        n->key = k;
        n->prev = k->tail;
        if (k->tail)
            k->tail->next = n;
        else
            k->head = n;
        k->tail = n;
    }
    return 0;
nomem:
    waiter_free(w, x);
    return ENOMEM;
}

void srv_bwait_remove(srv_bwait *w, uint32_t link, uint64_t token)
{
    bw_waiter *x = waiter_find(w, link, token);

    if (x)
        waiter_free(w, x);
}

void srv_bwait_ready(srv_bwait *w, unsigned db, const char *key, size_t len,
                     uint64_t n, uint64_t txn)
{
    bw_key *k = key_find(w, db, key, len);

    if (!k)
        return;
    estimate(k, n, txn);
    dispatch(w, k);
}

void srv_bwait_db_ready(srv_bwait *w, unsigned db, uint64_t txn)
{
    srv_dict_iter it;
    srv_dict_entry *de;

    srv_dict_iter_init(&it, &w->keys);
    while ((de = srv_dict_iter_next(&it))) {
        bw_key *k = de->val;
        if (k->db != db)
            continue;
        if (txn >= k->est_txn) {
            k->est_txn = txn;
            if (k->est == 0)
                k->est = 1;
        }
    }
    /* Grants are given after the walk: a grant changes nothing in the
     * table, but the callback may be the caller's. */
    srv_dict_iter_init(&it, &w->keys);
    while ((de = srv_dict_iter_next(&it)))
        if (((bw_key *)de->val)->db == db)
            dispatch(w, de->val);
}

void srv_bwait_served(srv_bwait *w, uint32_t link, uint64_t token, int done,
                      unsigned db, const char *key, size_t len, uint64_t left,
                      uint64_t txn)
{
    bw_waiter *x = waiter_find(w, link, token);
    bw_key *k = key_find(w, db, key, len), *held = NULL;

    if (k)
        estimate(k, left, txn);
    if (x && done) {
        waiter_free(w, x); /* passes on the grant it held */
        x = NULL;
    } else if (x) {
        held = ungrant(x); /* x still waits on it: it exists */
    }
    if (held && held != k)
        dispatch(w, held);
    /* k may have been freed with x (its last waiter): look it up again. */
    if ((k = key_find(w, db, key, len)))
        dispatch(w, k);
    if (x)
        for (int i = 0; i < x->nkeys; i++)
            if (x->nodes[i].key)
                dispatch(w, x->nodes[i].key);
}

void srv_bwait_drop_link(srv_bwait *w, uint32_t link)
{
    srv_dict_iter it;
    srv_dict_entry *de;
    int again;

    /* Freeing a waiter may free keys and grant (no waiter is freed by a
     * grant), so one waiter is freed per walk step, restarting the walk
     * after each: the table is small next to the cost of a lost link. */
    do {
        again = 0;
        srv_dict_iter_init(&it, &w->waiters);
        while ((de = srv_dict_iter_next(&it))) {
            bw_waiter *x = de->val;
            if (x->link == link) {
                waiter_free(w, x);
                again = 1;
                break;
            }
        }
    } while (again);
}

size_t srv_bwait_waiters(const srv_bwait *w) { return w->waiters.count; }

size_t srv_bwait_keys(const srv_bwait *w) { return w->keys.count; }
