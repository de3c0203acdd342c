/*
 * srv_keyspace.h - helpers the command handlers share for reaching keys:
 * naming a key of the connection's database, looking up a string with
 * the WRONGTYPE and error replies done, parsing expire arguments.
 */
#ifndef SRV_KEYSPACE_H
#define SRV_KEYSPACE_H

#include <stdint.h>

#include "server/srv_conn.h"
#include "storage/st_key.h"

struct st_txn;

/* The key argv[i] in the connection's database. */
void srv_key(srv_conn *c, int i, st_keyref *k);

/*
 * Look `k` up expecting a string (or nothing). Returns 1 and fills *r when
 * it is a string, 0 when absent (counts a miss), -1 after replying an
 * error (WRONGTYPE unless `any_type`, storage failure).
 */
int srv_lookup_string(srv_conn *c, struct st_txn *t, st_keyref *k, st_rec *r);

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
typedef int srv_member_remove_fn(struct st_txn *t, struct st_obj *o,
                                 const void *member, size_t len);

/*
 * HDEL, SREM, ZREM: remove members argv[2..] from the collection argv[1]
 * of `type` with `remove`, save it (an emptied one disappears) and reply
 * how many were there.
 */
void srv_coll_remove_members(srv_conn *c, int type,
                             srv_member_remove_fn *remove);

/* Replies what the collection holds for argv[i]: 0, or a storage error
 * (nothing replied then). */
typedef int srv_member_reply_fn(srv_conn *c, struct st_txn *t,
                                const struct st_obj *o, int i);

/*
 * HGET/ZSCORE (one member, argv[2]) and HMGET/ZMSCORE (`many`: an array
 * over argv[2..]) on the collection argv[1] of `type`.
 */
void srv_coll_reply_members(srv_conn *c, int type, int many,
                            srv_member_reply_fn *reply);

/*
 * LMPOP / ZMPOP arguments: "numkeys key [key ...] END [COUNT n]", END one
 * of `end0` or `end1` (*end gets 0 or 1). Redis's errors; -1 after one.
 */
int srv_mpop_args_or_reply(srv_conn *c, const char *end0, const char *end1,
                           int *numkeys, int *end, long long *count);

/* Units of an expire argument. */
enum srv_expire_unit { SRV_UNIT_S, SRV_UNIT_MS };

/*
 * Turn an expire argument into an absolute ms time: relative to now unless
 * `absolute`. Replies "ERR invalid expire time in '<cmd>' command" (or
 * the not-an-integer error) and returns -1 when it is not valid; with
 * `allow_nonpositive` zero and negative values are accepted (EXPIRE).
 */
int srv_parse_expire_or_reply(srv_conn *c, const srv_slice *arg, int unit,
                              int absolute, int allow_nonpositive,
                              int64_t *at);

/* Arguments of SCAN, HSCAN, SSCAN and ZSCAN. */
typedef struct srv_scan_args {
    uint64_t cursor;
    long long count;
    const srv_slice *match;     /* NULL: everything ("*" too) */
    const srv_slice *type;      /* SCAN's TYPE, NULL if not given */
} srv_scan_args;

#define SRV_SCAN_DEFAULT_COUNT 10

/*
 * Parse "<cursor> [MATCH pattern] [COUNT n] [TYPE t]" starting at
 * argv[first] (TYPE only when `allow_type`): Redis's rules and errors
 * ("ERR invalid cursor", syntax error for COUNT < 1 or a stray word).
 * 0, or -1 after replying.
 */
int srv_scan_args_or_reply(srv_conn *c, int first, int allow_type,
                           srv_scan_args *a);

/* Whether `name` passes the MATCH pattern of `a`. */
int srv_scan_match(const srv_scan_args *a, const void *name, size_t len);

/*
 * Complete a SCAN-family reply: `mark` is where srv_reply_defer() left
 * room before the `n` elements appended since; fills in the head with the
 * next cursor.
 */
void srv_scan_reply_finish(srv_conn *c, size_t mark, uint64_t next,
                           long long n);

/* A grow-only scratch buffer of the worker, for copies of old values. */
char *srv_scratch(size_t len);

#endif
