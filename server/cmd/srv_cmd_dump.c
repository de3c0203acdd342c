/*
 * srv_cmd_dump.c - DUMP and RESTORE: a key's value as a Redis 7.0 DUMP
 * payload (the RDB object, RDB version 10, CRC64) and back, so values
 * move between larder and redis-server in both directions.
 *
 * RESTORE checks the whole payload before it writes anything (a first
 * decode into no storage, duplicates of the plain encodings included),
 * so a bad payload leaves the keyspace untouched, also inside EXEC. As
 * in Redis, the value is read from the payload with its trailer (an
 * object that runs into the version and CRC bytes is taken as it reads).
 * IDLETIME and FREQ are checked as Redis checks them; larder keeps no
 * per-key LRU/LFU state to put them in.
 */
#include "rdb/rdb_err.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_heritage.h"
#include "server/srv_notify.h"
#include "server/srv_rdbkey.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define FREQ_MAX 255

void srv_cmd_dump(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    srv_rdbkey_kit *kit;
    st_keyref k;
    st_rec r;
    int rc;

    if (!t)
        return;
    srv_key_ref(c, 1, &k);
    if ((rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &r)) == ST_ENOTFOUND) {
        srv_reply_null(c);
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    kit = srv_rdbkey_kit_get();
    rc = srv_rdbkey_dump(t, &k, &r, &kit->w, &kit->e);
    if (rc == 0)
        srv_reply_bulk(c, kit->w.buf.data, kit->w.buf.len);
    else if (rc == ENOMEM)
        srv_reply_error(c, "ERR out of memory serializing the value");
    else
        srv_txn_error(c, rc);
    srv_rdbkey_kit_trim(kit);
}

/* RESTORE's options after argv[3]. */
typedef struct restore_opts {
    int replace, absttl;
    long long idle, freq; /* -1: not given */
} restore_opts;

static int restore_options_or_reply(srv_conn *c, restore_opts *o)
{
    o->replace = o->absttl = 0;
    o->idle = o->freq = -1;
    for (int j = 4; j < c->argc; j++) {
        const srv_slice *a = &c->argv[j];
        int more = c->argc - j - 1;
        if (srv_util_streq(a->ptr, a->len, "replace")) {
            o->replace = 1;
        } else if (srv_util_streq(a->ptr, a->len, "absttl")) {
            o->absttl = 1;
        } else if (srv_util_streq(a->ptr, a->len, "idletime") && more >= 1 &&
                   o->freq == -1) {
            if (srv_args_ll_or_reply(c, &c->argv[++j], &o->idle))
                return -1;
            if (o->idle < 0) {
                srv_reply_error(c, "ERR Invalid IDLETIME value, must be >= 0");
                return -1;
            }
        } else if (srv_util_streq(a->ptr, a->len, "freq") && more >= 1 &&
                   o->idle == -1) {
            if (srv_args_ll_or_reply(c, &c->argv[++j], &o->freq))
                return -1;
            if (o->freq < 0 || o->freq > FREQ_MAX) {
                srv_reply_error(c, "ERR Invalid FREQ value, must be >= 0 "
                                   "and <= 255");
                return -1;
            }
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    return 0;
}

/*
 * The payload argv[3] checked whole: 0 with *type, or -1 after replying
 * Redis's error (or larder's for the types it cannot hold yet).
 */
static int payload_or_reply(srv_conn *c, srv_rdbkey_kit *kit, int *type)
{
    const srv_slice *p = &c->argv[3];
    rdb_reader r;
    int rc;

    if (rdb_dump_verify((const uint8_t *)p->ptr, p->len) ||
        p->len < RDB_DUMP_TRAILER + 1) {
        srv_reply_error(c, "ERR DUMP payload version or checksum are wrong");
        return -1;
    }
    *type = (uint8_t)p->ptr[0];
    if (rdb_obj_is_stream(*type)) {
        srv_reply_error(c, "ERR DUMP payload holds a stream: streams are not "
                           "supported yet");
        return -1;
    }
    rdb_reader_mem(&r, p->ptr + 1, p->len - 1,
                   (size_t)srv_her.cfg->proto_max_bulk_len);
    rc = srv_rdbkey_check(&r, *type, &kit->sc, &kit->digests);
    if (rc == ENOMEM) {
        srv_reply_error(c, "ERR out of memory reading the payload");
        return -1;
    }
    if (rc) {
        srv_reply_error(c, "ERR Bad data format");
        return -1;
    }
    return 0;
}

/* The expire time RESTORE's ttl names: 0 none, else ms (may be past). */
static int64_t restore_expire(const srv_conn *c, long long ttl, int absttl)
{
    if (ttl == 0)
        return 0;
    if (absttl)
        return ttl;
    /* Redis adds in signed arithmetic that wraps: a huge relative TTL
     * ends up in the past, and the key is not created. */
    return (int64_t)((uint64_t)srv_cmd_now(c) + (uint64_t)ttl);
}

void srv_cmd_restore(srv_conn *c)
{
    struct st_txn *t;
    srv_rdbkey_kit *kit;
    srv_rdbkey_load l;
    restore_opts o;
    rdb_reader r;
    rdb_sink s;
    st_keyref k;
    st_rec old;
    long long ttl;
    int64_t at;
    int type, rc, existed;

    if (restore_options_or_reply(c, &o) || !(t = srv_txn_write_or_reply(c)))
        return;
    srv_key_ref(c, 1, &k);
    rc = st_keyspace_lookup(t, &k, srv_cmd_now(c), &old);
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return;
    }
    existed = rc == 0;
    if (existed && !o.replace) {
        srv_reply_error(c, "BUSYKEY Target key name already exists.");
        return;
    }
    if (srv_args_ll_or_reply(c, &c->argv[2], &ttl))
        return;
    if (ttl < 0) {
        srv_reply_error(c, "ERR Invalid TTL value, must be >= 0");
        return;
    }
    kit = srv_rdbkey_kit_get();
    if (payload_or_reply(c, kit, &type)) {
        srv_rdbkey_kit_trim(kit);
        return;
    }
    if (existed && (rc = st_keyspace_delete(t, &k, srv_cmd_now(c)))) {
        srv_txn_error(c, rc);
        return;
    }
    at = restore_expire(c, ttl, o.absttl);
    if (at && at <= srv_cmd_now(c)) {
        /* Already expired: nothing to create; a replaced key was deleted. */
        if (existed)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", 1);
        srv_reply_ok(c);
        srv_rdbkey_kit_trim(kit);
        return;
    }
    rdb_reader_mem(&r, c->argv[3].ptr + 1, c->argv[3].len - 1,
                   (size_t)srv_her.cfg->proto_max_bulk_len);
    srv_rdbkey_load_init(&l, t, &k, srv_cmd_now(c), at);
    rc = rdb_obj_decode(&r, type, srv_rdbkey_load_sink(&l, &s), &kit->sc);
    if (rc == 0)
        rc = srv_rdbkey_load_finish(&l);
    else
        rc = l.err ? l.err : ST_ECORRUPT; /* checked above: storage failed */
    srv_rdbkey_kit_trim(kit);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_notify_arg(c, SRV_NOTIFY_GENERIC, "restore", 1);
    srv_reply_ok(c);
}
