/*
 * srv_bwait.c - the broker's waiter registry (see the header).
 *
 * Tables: keys (db + name -> bw_key, present while someone waits on it)
 * and waiters (link + token -> bw_waiter). A waiter has one node per key
 * it waits on; a key's nodes form its FIFO queue (doubly linked, oldest
 * first: by the waiter's order, so a WAIT that overtook an older one on
 * another link still queues behind it; WAITs arrive nearly in order, so
 * the walk back from the tail that places a node is short). A key's grants are
 * found by walking its queue from the head, which stops after as many free
 * waiters as it wants grants, so a grant costs O(waiters ahead that hold grants
 * elsewhere).
 *
 * Readers of a consumer group (XREADGROUP) wait in the group's own queue
 * under the stream's key (a child of the key's entry, which lives while
 * it has waiters or children). An entry is delivered to one reader of a
 * group but to every plain reader and every group, so a key that may hold
 * data lets all its plain waiters try, and one free waiter of each group;
 * what that reader leaves (SERVED) lets the group's next one try.
 */
#include "server/srv_bwait.h"
#include "server/srv_buf.h"
#include "server/srv_dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DB_BYTES 4
/* A table name: tag, db, then the key (plain) or u32 key length, key and
 * group name (a group's queue). */
#define NAME_HDR (1 + DB_BYTES)
#define TAG_PLAIN 'k'
#define TAG_GROUP 'g'
#define KLEN_BYTES 4
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
    uint64_t est;            /* elements believed present */
    uint64_t est_txn;        /* the transaction that said so */
    uint64_t granted;        /* grants outstanding */
    struct bw_key *parent;   /* a group's queue: the key's entry */
    struct bw_key *children; /* the key's groups' queues */
    struct bw_key *sib_prev, *sib_next;
} bw_key;

typedef struct bw_waiter {
    srv_dict_entry *de;
    uint32_t link;
    uint64_t token;
    uint64_t order; /* when it blocked: its place in every queue */
    bw_key *grant;  /* the key it holds a grant on, or NULL */
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

static void put_u32(unsigned char *p, uint64_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The table name of key `name` of db (in group's queue, if group) in
 * w->scratch; -1 on ENOMEM or a key too long to name. */
static int key_name(srv_bwait *w, unsigned db, const char *name, size_t len,
                    const char *group, size_t glen)
{
    unsigned char h[NAME_HDR + KLEN_BYTES];
    size_t nh = NAME_HDR;

    h[0] = group ? TAG_GROUP : TAG_PLAIN;
    put_u32(h + 1, db);
    if (group) {
        if (len > UINT32_MAX)
            return -1;
        put_u32(h + NAME_HDR, len);
        nh += KLEN_BYTES;
    }
    w->scratch.len = 0;
    if (srv_buf_reserve(&w->scratch, nh + len + (group ? glen : 0)))
        return -1;
    srv_buf_append(&w->scratch, h, nh);
    srv_buf_append(&w->scratch, name, len);
    if (group)
        srv_buf_append(&w->scratch, group, glen);
    return 0;
}

static bw_key *key_find(srv_bwait *w, unsigned db, const char *name, size_t len,
                        const char *group, size_t glen)
{
    srv_dict_entry *de;

    if (key_name(w, db, name, len, group, glen))
        return NULL;
    de = srv_dict_find(&w->keys, w->scratch.data, w->scratch.len,
                       srv_dict_hash(w->scratch.data, w->scratch.len));
    return de ? de->val : NULL;
}

/* The entry named in w->scratch, made if new; NULL on ENOMEM. */
static bw_key *key_get(srv_bwait *w, unsigned db)
{
    uint64_t h = srv_dict_hash(w->scratch.data, w->scratch.len);
    srv_dict_entry *de = srv_dict_find(&w->keys, w->scratch.data,
                                       w->scratch.len, h);
    bw_key *k;

    if (de)
        return de->val;
    if (!(k = calloc(1, sizeof *k)) ||
        !(de = srv_dict_add(&w->keys, w->scratch.data, w->scratch.len, h))) {
        free(k);
        return NULL;
    }
    de->val = k;
    k->de = de;
    k->db = db;
    return k;
}

static void key_drop_if_empty(srv_bwait *w, bw_key *k)
{
    bw_key *parent = k->parent;

    if (k->head || k->children)
        return;
    if (parent) {
        if (k->sib_prev)
            k->sib_prev->sib_next = k->sib_next;
        else
            parent->children = k->sib_next;
        if (k->sib_next)
            k->sib_next->sib_prev = k->sib_prev;
    }
    srv_dict_remove(&w->keys, k->de);
    free(k);
    if (parent)
        key_drop_if_empty(w, parent);
}

/* The queue waiters of `group` (NULL: plain readers) of key `name` join,
 * made if new (a group's under the key's entry); NULL on ENOMEM. */
static bw_key *queue_get(srv_bwait *w, unsigned db, const char *name,
                         size_t len, const char *group, size_t glen)
{
    bw_key *parent, *k;

    if (key_name(w, db, name, len, NULL, 0) || !(parent = key_get(w, db)))
        return NULL;
    if (!group)
        return parent;
    if (key_name(w, db, name, len, group, glen) || !(k = key_get(w, db))) {
        key_drop_if_empty(w, parent);
        return NULL;
    }
    if (!k->parent) {
        k->parent = parent;
        k->sib_next = parent->children;
        if (parent->children)
            parent->children->sib_prev = k;
        parent->children = k;
    }
    return k;
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
        const srv_dict_entry *named = k->parent ? k->parent->de : k->de;
        w->grant(w->ctx, x->link, x->token, named->key + NAME_HDR,
                 named->klen - NAME_HDR);
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
                  uint64_t order, const char *group, size_t glen, int nkeys,
                  const char *const *keys, const size_t *lens)
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
    x->order = order;
    x->nkeys = nkeys;
    for (int i = 0; i < nkeys; i++) {
        bw_node *n = &x->nodes[i];
        bw_key *k = queue_get(w, db, keys[i], lens[i], group, glen);
        if (!k)
            goto nomem;
        bw_node *after = k->tail;
        while (after && after->waiter->order > order)
            after = after->prev;
        if (after && after->waiter == x)
            continue; /* named twice: one place is enough */
        n->waiter = x;
        n->key = k;
        n->prev = after;
        n->next = after ? after->next : k->head;
        if (n->next)
            n->next->prev = n;
        else
            k->tail = n;
        if (after)
            after->next = n;
        else
            k->head = n;
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
    bw_key *k = key_find(w, db, key, len, NULL, 0);

    if (!k)
        return;
    estimate(k, n, txn);
    dispatch(w, k);
    /* One reader of each group tries; what it leaves passes on. */
    for (bw_key *g = k->children; g; g = g->sib_next) {
        estimate(g, n ? 1 : 0, txn);
        dispatch(w, g);
    }
}

void srv_bwait_hint(srv_bwait *w, unsigned db, const char *key, size_t len,
                    const char *group, size_t glen, uint64_t n, uint64_t txn)
{
    bw_key *k = key_find(w, db, key, len, group, glen);

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
                      unsigned db, const char *key, size_t len,
                      const char *group, size_t glen, uint64_t left,
                      uint64_t txn)
{
    bw_waiter *x = waiter_find(w, link, token);
    bw_key *k = key_find(w, db, key, len, group, glen), *held = NULL;

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
    if ((k = key_find(w, db, key, len, group, glen)))
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
