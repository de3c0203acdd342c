/*
 * srv_scan.h - the SCAN family (SCAN, HSCAN, SSCAN, ZSCAN): arguments,
 * the MATCH filter and the reply.
 */
#ifndef SRV_SCAN_H
#define SRV_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"

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

#endif
