/*
 * st_dbmap.h - the database map: which stored database holds each
 * database number clients name. Keys carry their stored database in
 * their LMDB key (st_codec.h); SWAPDB and the RDB import's final switch
 * exchange what two numbers name by changing this map (one small record
 * of the meta database), not by rewriting any key, so they are O(1) and
 * atomic with the transaction that does them, in every process.
 *
 * The map is a permutation: numbers nobody swapped name the stored
 * database of the same number (the record lists only swapped ones, with
 * their swap counts). Every
 * keyspace call resolves its key's number in its own transaction's
 * snapshot (st_dbmap_bind), so a reader sees the map its snapshot holds,
 * and the shared cache, keyed by stored database, needs no invalidation
 * when the map changes: no stored key changed.
 *
 * Numbers from `databases` to 2 * databases - 1 are "hidden": no client
 * can SELECT them; a bulk load fills them and swaps them in (see the
 * staging calls below).
 */
#ifndef ST_DBMAP_H
#define ST_DBMAP_H

#include <stdint.h>

#include "storage/st_codec.h"
#include "storage/st_env.h"

/* The records: the map (in LMDB's unnamed database, see st_dbmap.c) and
 * the hidden numbers a bulk load owns (in the meta database). */
#define ST_DBMAP_META "dbmap"
#define ST_DBMAP_STAGE_META "dbstage"

/* Stored databases an environment of `databases` numbers can use. */
#define ST_DBMAP_SPACE(databases) (2 * (databases))

/*
 * The stored database of number `db` as transaction t sees the map.
 * Loads the map once per transaction (one meta lookup). 0, or
 * ST_ECORRUPT for a map record that cannot be, or ST_ESCHEMA when the
 * map names a stored database this open's `databases` cannot hold.
 */
int st_dbmap_resolve(st_txn *t, unsigned db, unsigned *stored);

/*
 * The inverse: the number that names stored database `stored` as t sees
 * the map. A key known only by its LMDB key (active expiry, FLUSHDB's
 * walk) holds its stored database; anything told to clients about it
 * (keyspace events) names it by this number. 0 or as st_dbmap_resolve.
 */
int st_dbmap_number(st_txn *t, unsigned stored, unsigned *db);

/*
 * How many times a SWAPDB changed what number `db` names, as t sees it
 * (WATCH compares it: a key watched in a swapped database is touched, as
 * Redis has it). 0 or as st_dbmap_resolve.
 */
int st_dbmap_swaps(st_txn *t, unsigned db, uint32_t *swaps);

/*
 * Point k's LMDB key at the stored database of k->db in t (sets
 * k->stored_db and k->enc's database bytes). Cheap when k is already
 * bound to t's current map. The keyspace calls this on every key it is
 * given; callers above storage never need to.
 */
int st_dbmap_bind(st_txn *t, st_keyref *k);

/*
 * SWAPDB: from now on in t (and for everyone once t commits) number a
 * names what b named and the other way round. O(1). Write transaction.
 */
int st_dbmap_swap(st_txn *t, unsigned a, unsigned b);

/*
 * The stored database of `db` by the map the process saw last: for
 * hints that run without a transaction (cache prefetch). May be stale.
 */
unsigned st_dbmap_hint(const st_env *env, unsigned db);

/*
 * Bulk loads. A load owns the hidden numbers [databases, databases + n)
 * while this record says so: st_dbmap_stage_set(t, n) records it (0
 * forgets it), st_dbmap_stage_get reads it. A load fills hidden number
 * databases + i for database i, then swaps them all in one transaction.
 */
int st_dbmap_stage_set(st_txn *t, unsigned n);
int st_dbmap_stage_get(st_txn *t, unsigned *n);

#endif
