/*
 * st_txn.h - transactions over an environment. Each process has at most
 * one read and one write transaction open at a time (they live in the
 * environment and are reused: a read transaction is parked and renewed,
 * not begun anew). Every storage call takes the caller's transaction.
 */
#ifndef ST_TXN_H
#define ST_TXN_H

#include <stdint.h>

#include "storage/st_env.h"

/*
 * Begin the process's read (write = 0) or write (write = 1) transaction.
 * A write transaction waits for other processes' writers, and in a server
 * environment (st_env_opts.boot_id with nosync) for the durable snapshot's
 * pin: at the process's first write until the syncer has recorded it
 * (ST_ENOPIN after ST_DURABLE_GATE_MS), and briefly whenever data.mdb has
 * outgrown the pinned snapshot (st_durable.h). *out points into the
 * environment; it stays valid until commit or abort. ST_EBUSY if the same
 * kind is already open.
 */
int st_txn_begin(st_env *env, int write, st_txn **out);

/*
 * Run the write-backs a module deferred to the commit (a stream's state,
 * st_stream.c) now: before code that reads those keys raw (COPY's deep
 * copy) and by st_txn_commit. 0 or the write's error. Write transaction.
 */
int st_txn_settle(st_txn *t);

/*
 * Commit (a read transaction is just released). Key-count changes recorded
 * during the transaction are applied first. NULLs *t whatever the result;
 * on failure nothing of the transaction is visible.
 */
int st_txn_commit(st_txn **t);

/* Drop everything the transaction wrote; NULLs *t. */
void st_txn_abort(st_txn **t);

int st_txn_is_write(const st_txn *t);

/*
 * The version writes of this transaction stamp (its LMDB transaction id);
 * for a read transaction, the id of the snapshot it sees.
 */
uint64_t st_txn_version(const st_txn *t);

#endif
