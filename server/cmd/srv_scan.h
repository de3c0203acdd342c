/*
 * srv_scan.h - the SCAN family (SCAN, HSCAN, SSCAN, ZSCAN): arguments,
 * the MATCH filter, the reply, and the body HSCAN, SSCAN and ZSCAN share.
 */
#ifndef SRV_SCAN_H
#define SRV_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"

struct st_txn;
struct st_obj;

/* Arguments of SCAN, HSCAN, SSCAN and ZSCAN. */
typedef struct srv_scan_args {
    uint64_t cursor;
    long long count;
    const srv_slice *match; /* NULL: everything ("*" too) */
    const srv_slice *type;  /* SCAN's TYPE, NULL if not given */
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

/* Whether `name` passes a MATCH pattern (`match` as srv_scan_args has
 * it: NULL matches everything). */
int srv_scan_match(const srv_slice *match, const void *name, size_t len);

/*
 * Complete a SCAN-family reply: `mark` is where srv_reply_defer() left
 * room before the `n` elements appended since; fills in the head with the
 * next cursor.
 */
void srv_scan_reply_finish(srv_conn *c, size_t mark, uint64_t next,
                           long long n);

/*
 * The per-type step of HSCAN, SSCAN and ZSCAN: reply the elements of o
 * from a->cursor on (about a->count of them) that pass a->match, count
 * the reply's elements in *n and set *next. 0, or a storage error.
 */
typedef int srv_scan_step_fn(srv_conn *c, struct st_txn *t,
                             const struct st_obj *o, const srv_scan_args *a,
                             uint64_t *next, long long *n);

/*
 * HSCAN, SSCAN, ZSCAN: "key cursor [MATCH pattern] [COUNT n]" on the
 * collection argv[1] of `type` (an absent one scans as empty), one step
 * of `step`, replied as [next cursor, elements].
 */
void srv_scan_collection(srv_conn *c, int type, srv_scan_step_fn *step);

#endif
