/*
 * srv_cmd_db.c - commands between databases: MOVE (a key to another
 * database, with its TTL, in one transaction) and SWAPDB (two databases
 * exchange their contents: one write to the database map, st_dbmap.h,
 * atomic for every worker, whatever the databases hold).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_heritage.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_dbmap.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <limits.h>

static const char ERR_DB_RANGE[] = "ERR DB index is out of range";

void srv_cmd_move(srv_conn *c)
{
    struct st_txn *t;
    st_keyref src, dst;
    int db, rc;

    if (srv_args_int_or_reply(c, &c->argv[2], &db))
        return;
    if (db < 0 || db >= srv_her.cfg->databases) {
        srv_reply_error(c, ERR_DB_RANGE);
        return;
    }
    if ((unsigned)db == c->db) {
        srv_reply_error(c, "ERR source and destination objects are the same");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    srv_key_ref(c, 1, &src);
    st_codec_keyref_init(&dst, (unsigned)db, c->argv[1].ptr, c->argv[1].len);
    /* A rename across databases: the value and TTL move as they are. */
    rc = st_keyspace_rename(t, &src, &dst, srv_cmd_now(c), 1);
    if (rc == ST_ENOTFOUND || rc == ST_EEXISTS)
        srv_reply_int(c, 0);
    else if (rc)
        srv_txn_error(c, rc);
    else {
        srv_notify_arg(c, SRV_NOTIFY_GENERIC, "move_from", 1);
        srv_notify_db(c, (unsigned)db, SRV_NOTIFY_GENERIC, "move_to",
                      c->argv[1].ptr, c->argv[1].len);
        srv_reply_int(c, 1);
    }
}

/* A database index argument of SWAPDB: any failure is `msg`. */
static int index_or_reply(srv_conn *c, const srv_slice *a, const char *msg,
                          int *out)
{
    long long v;

    if (!srv_util_str2ll(a->ptr, a->len, &v) || v < INT_MIN || v > INT_MAX) {
        srv_reply_error(c, msg);
        return -1;
    }
    *out = (int)v;
    return 0;
}

void srv_cmd_swapdb(srv_conn *c)
{
    struct st_txn *t;
    int a, b, rc;

    if (index_or_reply(c, &c->argv[1], "ERR invalid first DB index", &a) ||
        index_or_reply(c, &c->argv[2], "ERR invalid second DB index", &b))
        return;
    if (a < 0 || a >= srv_her.cfg->databases || b < 0 ||
        b >= srv_her.cfg->databases) {
        srv_reply_error(c, ERR_DB_RANGE);
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    if ((rc = st_dbmap_swap(t, (unsigned)a, (unsigned)b))) {
        srv_txn_error(c, rc);
        return;
    }
    /*
     * WATCH sees the swap by itself: a watched key compares its stored
     * database and swap count at EXEC (srv_multi.c). Clients blocked on
     * keys of a or b try again (as Redis re-checks them after a swap: a
     * list that now exists in the waiter's database serves it). MOVE
     * needs nothing: its destination key comes into being through
     * st_keyspace_rename, which storage reports as created.
     */
    /* No keyspace event: Redis 7.0's SWAPDB emits none. */
    srv_block_db_changed(c, (unsigned)a);
    if (b != a)
        srv_block_db_changed(c, (unsigned)b);
    srv_reply_ok(c);
}
