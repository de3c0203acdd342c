/*
 * srv_key.h - key arguments as handlers see them: argv[i] named in the
 * connection's database, a string looked up with its WRONGTYPE and error
 * replies done, and the worker's scratch for copies of old values.
 */
#ifndef SRV_KEY_H
#define SRV_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_conn.h"
#include "storage/st_codec.h"

struct st_txn;

/* The key argv[i] in the connection's database. */
void srv_key_ref(srv_conn *c, int i, st_keyref *k);

/*
 * Look `k` up expecting a string (or nothing). Returns 1 and fills *r when
 * it is a string, 0 when absent (counts a miss), -1 after replying an
 * error (WRONGTYPE unless `any_type`, storage failure).
 */
int srv_key_lookup_string(srv_conn *c, struct st_txn *t, st_keyref *k,
                          st_rec *r);

/*
 * Reply bytes [off, off + len) of the string of `r` (clamped to its
 * length; all of it with off 0, len UINT64_MAX) as one bulk string,
 * streaming a chunked string's spans into the output buffer. 0, or -1
 * after replying a storage error instead.
 */
int srv_key_reply_string(srv_conn *c, struct st_txn *t, const st_rec *r,
                         uint64_t off, uint64_t len);

/* A grow-only scratch buffer of the worker, for copies of old values. */
char *srv_key_scratch(size_t len);

#endif
