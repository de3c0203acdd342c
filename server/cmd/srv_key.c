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

#include <stdlib.h>

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
