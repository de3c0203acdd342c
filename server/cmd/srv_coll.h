/*
 * srv_coll.h - what the collection handlers share: argv[i] opened as a
 * collection of one type with its error replies done, the record saved
 * back, and the generic bodies behind the member removal and member
 * lookup commands of hashes, sets and sorted sets.
 */
#ifndef SRV_COLL_H
#define SRV_COLL_H

#include <stddef.h>

#include "server/srv_conn.h"
#include "storage/st_codec.h"

struct st_txn;
struct st_obj;

/*
 * Open argv[i] as a collection of `type` (st_elem.h): 1 found, 0 absent
 * (o is then ready to be created), -1 after an error reply (WRONGTYPE,
 * storage failure).
 */
int srv_coll_open_or_reply(srv_conn *c, struct st_txn *t, int i, int type,
                           st_keyref *k, struct st_obj *o);

/* Write the collection record back (or drop it if emptied): 0, or -1
 * after an error reply. */
int srv_coll_save_or_reply(srv_conn *c, struct st_txn *t, struct st_obj *o);

/* Removes one member of a collection: 0, ST_ENOTFOUND, or an error. */
typedef int srv_coll_remove_fn(struct st_txn *t, struct st_obj *o,
                                 const void *member, size_t len);

/*
 * HDEL, SREM, ZREM: remove members argv[2..] from the collection argv[1]
 * of `type` with `remove`, save it (an emptied one disappears) and reply
 * how many were there.
 */
void srv_coll_remove_members(srv_conn *c, int type,
                             srv_coll_remove_fn *remove);

/* Replies what the collection holds for argv[i]: 0, or a storage error
 * (nothing replied then). */
typedef int srv_coll_reply_fn(srv_conn *c, struct st_txn *t,
                                const struct st_obj *o, int i);

/*
 * HGET/ZSCORE (one member, argv[2]) and HMGET/ZMSCORE (`many`: an array
 * over argv[2..]) on the collection argv[1] of `type`.
 */
void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_coll_reply_fn *reply);

#endif
