/*
 * srv_keys.c - the records of a worker's write transactions (see the
 * header). One transaction's records are kept in a byte buffer reused
 * from one transaction to the next (no allocation per write once it has
 * grown).
 */
#include "server/srv_keys.h"
#include "server/srv_bproto.h"
#include "server/srv_buf.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "storage/st_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUF_KEEP (64 * 1024)

/* A key that came into being: its place in `names`. */
typedef struct created_key {
    unsigned db;
    uint64_t n;
    size_t off, len;
} created_key;

#define CREATED_MIN 16

static struct {
    srv_worker *w;
    st_env_observer obs;
    srv_keys_ready_fn *ready;
    /* the open transaction's keys that came into being */
    created_key *created;
    size_t ncreated, cap;
    srv_buf names;
    int lost; /* out of memory: this transaction's records are partial */
} ks;

static void clear(void)
{
    ks.ncreated = 0;
    ks.names.len = 0;
    ks.lost = 0;
    srv_buf_trim(&ks.names, BUF_KEEP);
}

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
    ks.created[ks.ncreated++] = (created_key){ db, n, ks.names.len - len,
                                               len };
}

static void on_created(void *ctx, unsigned db, const uint8_t *name, size_t len,
                       int type, uint64_t n)
{
    add_created(db, name, len, n ? n : 1);
}

void srv_keys_db_changed(unsigned db)
{
    if (ks.w)
        add_created(db, NULL, 0, 0);
}

/* The broker learns the keys that came into being in `txn`. -1 when the
 * link cannot take the frame. */
static int send_committed(uint64_t txn)
{
    size_t off = srv_link_begin(SRV_BP_COMMITTED, SRV_BP_DONE, txn);

    if (off == (size_t)-1)
        return -1;
    for (size_t i = 0; i < ks.ncreated; i++) {
        const created_key *k = &ks.created[i];
        if (srv_link_u64(off, k->db) || srv_link_u64(off, k->n) ||
            srv_link_field(off, ks.names.data + k->off, k->len))
            return -1;
    }
    srv_link_end(off);
    return 0;
}

static void on_committed(void *ctx, uint64_t txn, int rc)
{
    if (rc == 0 && ks.ncreated) {
        if (ks.lost)
            srv_log(SRV_LOG_WARNING, ENOMEM,
                    "keys that came into being (blocked clients may wait "
                    "for their timeout)");
        if (send_committed(txn) && ks.ready)
            for (size_t i = 0; i < ks.ncreated; i++) {
                const created_key *k = &ks.created[i];
                ks.ready(k->db, (const uint8_t *)ks.names.data + k->off,
                         k->len, k->n, txn);
            }
    }
    clear();
}

static void on_aborted(void *ctx, uint64_t txn) { clear(); }

void srv_keys_on_ready(srv_keys_ready_fn *fn) { ks.ready = fn; }

void srv_keys_want_created(int type)
{
    ks.obs.created_types |= 1u << type;
    if (ks.w)
        st_env_observe(ks.w->env, &ks.obs);
}

static void service_start(srv_worker *w)
{
    ks.w = w;
    ks.obs.created = on_created;
    ks.obs.committed = on_committed;
    ks.obs.aborted = on_aborted;
    st_env_observe(w->env, &ks.obs);
}

static void service_stop(srv_worker *w)
{
    st_env_observe(w->env, NULL);
    ks.w = NULL;
    free(ks.created);
    ks.created = NULL;
    ks.cap = ks.ncreated = 0;
    srv_buf_free(&ks.names);
}

const srv_service srv_keys_service = {
    .name = "keys",
    .start = service_start,
    .stop = service_stop,
};
