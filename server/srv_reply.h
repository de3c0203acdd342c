/*
 * srv_reply.h - appending RESP2/RESP3 replies to a connection's output
 * buffer. Each function picks the encoding for the connection's protocol
 * (HELLO 2 or 3). Out of memory, or a reply that would take the buffer
 * past the connection's out_limit (client-reply-limit, as Redis's output
 * buffer hard limit), marks the connection to be closed (CLOSE_ASAP;
 * OVER_LIMIT for the limit) and appends nothing more: a reply is never
 * half-written, and loops that emit many elements stop when
 * srv_reply_dropped says so.
 */
#ifndef SRV_REPLY_H
#define SRV_REPLY_H

#include <stddef.h>

#include "server/srv_conn.h"

void srv_reply_raw(srv_conn *c, const void *p, size_t n);
void srv_reply_ok(srv_conn *c);
void srv_reply_simple(srv_conn *c, const char *s);
/* `msg` starts with the error code ("ERR ...", "WRONGTYPE ..."). */
void srv_reply_error(srv_conn *c, const char *msg);
void srv_reply_errorf(srv_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void srv_reply_int(srv_conn *c, long long v);
void srv_reply_bulk(srv_conn *c, const void *p, size_t n);
void srv_reply_bulk_cstr(srv_conn *c, const char *s);
/* The head of a bulk string of n bytes, room reserved for all of it: the
 * caller appends the n bytes (srv_reply_raw) and then "\r\n". For bodies
 * that arrive in pieces (a chunked string). */
void srv_reply_bulk_head(srv_conn *c, size_t n);
void srv_reply_bulk_ll(srv_conn *c, long long v);
/* Null bulk ($-1) / null array (*-1); RESP3: _ for both. */
void srv_reply_null(srv_conn *c);
void srv_reply_null_array(srv_conn *c);
void srv_reply_array(srv_conn *c, long long n);
/* A map of n pairs: %n in RESP3, an array of 2n in RESP2. */
void srv_reply_map(srv_conn *c, long long n);
/* A set: ~n in RESP3, an array in RESP2. */
void srv_reply_set(srv_conn *c, long long n);
/* A double: ,d in RESP3, a bulk string in RESP2. */
void srv_reply_double(srv_conn *c, double d);
/* Verbatim text (INFO): =len\r\ntxt:... in RESP3, bulk in RESP2. */
void srv_reply_verbatim(srv_conn *c, const char *p, size_t n);
/* An array of the n simple strings `lines` (a HELP subcommand's text). */
void srv_reply_lines(srv_conn *c, const char *const *lines, size_t n);

/* Nothing more reaches c: it is being dropped (out of memory, or its
 * replies passed its limit). A loop emitting many elements stops. */
static inline int srv_reply_dropped(const srv_conn *c)
{
    return (c->flags & SRV_CONN_CLOSE_ASAP) != 0;
}

/*
 * Before a reply of `n` elements, each at least `each` bytes, whose size
 * is known up front (SRANDMEMBER's negative count): if it cannot fit the
 * connection's limit, drop the connection now rather than build the part
 * that fits. 0 if it may fit, -1 if c is dropped.
 */
int srv_reply_room_or_drop(srv_conn *c, unsigned long long n, size_t each);

/* Smallest element of a reply: an empty bulk string, "$0\r\n\r\n". */
#define SRV_REPLY_BULK_MIN 6

/* Canned errors shared by many commands. */
extern const char SRV_ERR_SYNTAX[];
extern const char SRV_ERR_NOT_INT[];
extern const char SRV_ERR_NOT_FLOAT[];
extern const char SRV_ERR_WRONGTYPE[];
extern const char SRV_ERR_NO_KEY[];
extern const char SRV_ERR_OVERFLOW[];

/*
 * Replies whose head is known only after their body (KEYS, SCAN): reserve
 * room for the head, append the body, then fill in the head (moving the
 * body once). The head is at most SRV_REPLY_DEFER_MAX bytes.
 */
#define SRV_REPLY_DEFER_MAX 64
size_t srv_reply_defer(srv_conn *c);
void srv_reply_defer_fill(srv_conn *c, size_t mark, const char *prefix,
                          size_t n);
/* Fill the head as an array header of n elements. */
void srv_reply_defer_array(srv_conn *c, size_t mark, long long n);

#endif
