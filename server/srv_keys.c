/*
 * srv_keys.c - the records of a worker's write transactions (see the
 * header). One transaction's records are kept in buffers reused from one
 * transaction to the next (no allocation per write once they have
 * grown).
 *
 * Ordered records (keyspace events, keys tracking clients must forget)
 * are encoded as the body of the TXN frame while they are recorded:
 * per record, u64 (db | flags << 32), field event, field key. Keys that
 * came into being are kept apart for the COMMITTED frame.
 */
#include "server/srv_keys.h"
#include "server/srv_bproto.h"
#include "server/srv_buf.h"
#include "server/srv_heritage.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_notify.h"
#include "server/srv_pubsub.h"
#include "storage/st_codec.h"
#include "storage/st_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_KEEP (64 * 1024)
#define CREATED_MIN 16
#define DB_FLAGS_SHIFT 32
/* How long the write lock may wait for the broker to take a TXN frame
 * before the transaction commits anyway (see the header). */
#define TXN_FLUSH_MS 100
/* Room for "__keyspace@<db>__:" and "__keyevent@<db>__:". */
#define CHANNEL_HEAD_MAX 40

/* A key that came into being: its place in `names`. */
typedef struct created_key {
    unsigned db;
    uint64_t n;
    size_t off, len;
} created_key;

static struct {
    srv_worker *w;
    int on; /* observing an environment (a worker's or the reaper's) */
    st_env_observer obs;
    srv_keys_ready_fn *ready;
    srv_keys_committing_fn *committing;
    srv_keys_inval_fn *inval;
    unsigned wanted; /* created types the blocking commands want */
    /* the open transaction's keys that came into being */
    created_key *created;
    size_t ncreated, cap;
    srv_buf names;
    /* its ordered records: the TXN frame's body */
    srv_buf ordered;
    size_t nordered;
    int txn_sent; /* its TXN frame is in the broker's socket */
    int lost;     /* out of memory: this transaction's records are partial */
    srv_buf channel;
} ks;

static void clear(void)
{
    ks.ncreated = 0;
    ks.names.len = 0;
    ks.ordered.len = 0;
    ks.nordered = 0;
    ks.txn_sent = 0;
    ks.lost = 0;
    srv_buf_trim(&ks.names, BUF_KEEP);
    srv_buf_trim(&ks.ordered, BUF_KEEP);
}

/* ---- records ---- */

/* Record a key that came into being (n 0 and no name: the database). */
static void add_created(unsigned db, const uint8_t *name, size_t len,
                        uint64_t n)
{
    if (ks.ncreated == ks.cap) {
        size_t cap = ks.cap ? ks.cap * 2 : CREATED_MIN;
        created_key *p = realloc(ks.created, cap * sizeof *p);
        if (!p) {
            ks.lost = 1;
            return;
        }
        ks.created = p;
        ks.cap = cap;
    }
    if (srv_buf_append(&ks.names, name, len)) {
        ks.lost = 1;
        return;
    }
    ks.created[ks.ncreated++] = (created_key){ db, n, ks.names.len - len, len };
}

/* An ordered record: keyspace event `event` of `key` (flags: which of
 * the two messages go out, and whether tracking clients forget the key,
 * written by client `writer`). */
void srv_keys_record(unsigned db, unsigned flags, const char *event,
                     const void *key, size_t len, uint64_t writer)
{
    size_t mark = ks.ordered.len;

    if (!ks.on || !flags)
        return;
    if (srv_bproto_put_u64(&ks.ordered,
                           db | (uint64_t)flags << DB_FLAGS_SHIFT) ||
        srv_bproto_put_field(&ks.ordered, event, strlen(event)) ||
        srv_bproto_put_field(&ks.ordered, key, len) ||
        srv_bproto_put_u64(&ks.ordered, writer)) {
        ks.ordered.len = mark;
        ks.lost = 1;
        return;
    }
    ks.nordered++;
}

void srv_keys_db_changed(unsigned db)
{
    if (ks.on)
        add_created(db, NULL, 0, 0);
}

/* ---- storage's observer ---- */

static void on_created(void *ctx, unsigned db, const uint8_t *name, size_t len,
                       int type, uint64_t n, int fresh)
{
    if (ks.wanted & (1u << type))
        add_created(db, name, len, n ? n : 1);
    if (fresh && (srv_her.cfg->notify_keyspace_events & SRV_NOTIFY_NEW))
        srv_keys_record(db,
                        (unsigned)(srv_her.cfg->notify_keyspace_events &
                                   (SRV_NOTIFY_KEYSPACE | SRV_NOTIFY_KEYEVENT)),
                        "new", name, len, 0);
}

static void on_expired(void *ctx, unsigned db, const uint8_t *name, size_t len)
{
    srv_keys_record(db, srv_notify_wanted(SRV_NOTIFY_EXPIRED), "expired", name,
                    len, 0);
}

/* Before the commit, with the write lock held: the ordered records (and
 * the registrations of the clients the transaction blocked) go to the
 * broker and are written out, so that any transaction committing after
 * this one writes its own after them (see the header). */
static void on_committing(void *ctx, uint64_t txn)
{
    int put = ks.committing && ks.committing();

    if (ks.nordered && srv_link_put(SRV_BP_TXN, 0, txn, ks.ordered.data,
                                    ks.ordered.len, NULL, 0) == 0)
        put = ks.txn_sent = 1;
    if (put && srv_link_flush_wait(TXN_FLUSH_MS))
        srv_log(SRV_LOG_VERBOSE, 0,
                "committing before the broker took the "
                "keyspace events or registrations");
}

/* The broker learns the outcome of `txn` (and, committed, the keys that
 * came into being). -1 when the link cannot take the frame. */
static int send_committed(uint64_t txn, int ok)
{
    size_t off = srv_link_begin(SRV_BP_COMMITTED,
                                ok ? SRV_BP_DONE : SRV_BP_STILL, txn);

    if (off == (size_t)-1)
        return -1;
    for (size_t i = 0; ok && i < ks.ncreated; i++) {
        const created_key *k = &ks.created[i];
        if (srv_link_u64(off, k->db) || srv_link_u64(off, k->n) ||
            srv_link_field(off, ks.names.data + k->off, k->len))
            return -1;
    }
    srv_link_end(off);
    return 0;
}

static unsigned flags_of_record(uint64_t v)
{
    return (unsigned)(v >> DB_FLAGS_SHIFT);
}

/* Publish the records to this worker's subscribers and tracking clients
 * (no broker). */
static void publish_local(const char *p, const char *end)
{
    srv_bframe f = { .body = p, .len = (uint64_t)(end - p) };
    srv_bcursor cur;
    uint64_t v, writer;
    const char *event, *key;
    size_t elen, klen;

    srv_bproto_cursor(&cur, &f);
    while (cur.p < cur.end) {
        char head[CHANNEL_HEAD_MAX];
        unsigned db, flags;
        int n;
        if (srv_bproto_get_u64(&cur, &v) ||
            srv_bproto_get_field(&cur, &event, &elen) ||
            srv_bproto_get_field(&cur, &key, &klen) ||
            srv_bproto_get_u64(&cur, &writer))
            return;
        db = (unsigned)(v & UINT32_MAX);
        flags = flags_of_record(v);
        if ((flags & SRV_NOTIFY_INVALIDATE) && ks.inval)
            ks.inval(writer, (flags & SRV_NOTIFY_FLUSH) != 0, key, klen);
        if (flags & SRV_NOTIFY_KEYSPACE) {
            n = snprintf(head, sizeof head, "__keyspace@%u__:", db);
            ks.channel.len = 0;
            if (srv_buf_append(&ks.channel, head, (size_t)n) == 0 &&
                srv_buf_append(&ks.channel, key, klen) == 0)
                srv_pubsub_deliver(ks.channel.data, ks.channel.len, event,
                                   elen);
        }
        if (flags & SRV_NOTIFY_KEYEVENT) {
            n = snprintf(head, sizeof head, "__keyevent@%u__:", db);
            ks.channel.len = 0;
            if (srv_buf_append(&ks.channel, head, (size_t)n) == 0 &&
                srv_buf_append(&ks.channel, event, elen) == 0)
                srv_pubsub_deliver(ks.channel.data, ks.channel.len, key, klen);
        }
    }
}

/*
 * Does anyone wait for keys to come into being? Read after the commit: a
 * waiter counts itself in key_waiters before its own commit, registration
 * and check, so when the count read here (after this commit, with a
 * full fence between) is 0, the waiter's check snapshot is newer than this
 * commit and sees the keys (the store-load pairs of both sides are
 * fenced, srv_block.c). While nobody blocks, a push, a stream entry or a
 * SWAPDB costs no frame and no broker wake-up (measured: the broker took
 * 7.5% of the server's CPU under XADD -P16 with no reader).
 */
static int anyone_waits(void)
{
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load(&srv_her.stats->key_waiters) > 0;
}

static void on_committed(void *ctx, uint64_t txn, int rc)
{
    int told = 0;

    if (ks.ncreated && !anyone_waits())
        ks.ncreated = 0;

    if (ks.lost)
        srv_log(SRV_LOG_WARNING, ENOMEM,
                "records of a transaction (keyspace events or wake-ups may "
                "be missing)");
    if (ks.txn_sent || (rc == 0 && ks.ncreated))
        told = send_committed(txn, rc == 0) == 0;
    if (rc == 0 && !told) {
        /* No broker: this worker's own subscribers and waiters. */
        if (ks.nordered)
            publish_local(ks.ordered.data, ks.ordered.data + ks.ordered.len);
        for (size_t i = 0; ks.ready && i < ks.ncreated; i++) {
            const created_key *k = &ks.created[i];
            ks.ready(k->db, (const uint8_t *)ks.names.data + k->off, k->len,
                     k->n, txn);
        }
    }
    clear();
}

static void on_aborted(void *ctx, uint64_t txn) { clear(); }

/* ---- set-up ---- */

void srv_keys_on_ready(srv_keys_ready_fn *fn) { ks.ready = fn; }

void srv_keys_on_committing(srv_keys_committing_fn *fn) { ks.committing = fn; }

void srv_keys_on_inval(srv_keys_inval_fn *fn) { ks.inval = fn; }

void srv_keys_flushed(srv_conn *c)
{
    if (atomic_load_explicit(&srv_her.stats->trackers, memory_order_relaxed))
        srv_keys_record(c->db, SRV_NOTIFY_INVALIDATE | SRV_NOTIFY_FLUSH, "", "",
                        0, c->id);
}

void srv_keys_want_created(int type) { ks.wanted |= 1u << type; }

void srv_keys_observe(st_env *env)
{
    ks.on = 1;
    ks.obs.created = on_created;
    ks.obs.expired = on_expired;
    ks.obs.committing = on_committing;
    ks.obs.committed = on_committed;
    ks.obs.aborted = on_aborted;
    /* Every type: any new key may be a "new" event. */
    ks.obs.created_types = ~0u;
    st_env_observe(env, &ks.obs);
}

void srv_keys_unobserve(st_env *env)
{
    st_env_observe(env, NULL);
    ks.on = 0;
}

static void service_start(srv_worker *w)
{
    ks.w = w;
    srv_keys_observe(w->env);
}

static void service_stop(srv_worker *w)
{
    srv_keys_unobserve(w->env);
    ks.w = NULL;
    free(ks.created);
    ks.created = NULL;
    ks.cap = ks.ncreated = 0;
    srv_buf_free(&ks.names);
    srv_buf_free(&ks.ordered);
    srv_buf_free(&ks.channel);
}

const srv_service srv_keys_service = {
    .name = "keys",
    .start = service_start,
    .stop = service_stop,
};
