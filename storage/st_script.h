/*
 * st_script.h - what scripting keeps in LMDB, in two named databases of
 * its own: the script cache (script bodies by their SHA1, shared by every
 * worker; volatile as Redis's: emptied when the server starts) and the
 * function libraries (code by library name; persistent, as Redis keeps
 * them in its RDB). Every change of the libraries bumps a generation
 * number, so a process that compiled them notices another's change.
 * Records returned borrow LMDB's memory until the transaction ends or
 * writes.
 */
#ifndef ST_SCRIPT_H
#define ST_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_env.h"

/* A script's key: its SHA1 as 40 lower-case hex digits. */
#define ST_SCRIPT_SHA_LEN 40
/* Longest library name (an LMDB key). */
#define ST_FUNC_NAME_MAX 256

/* The body of script `sha`: 0, or ST_ENOTFOUND. Any transaction. */
int st_script_get(st_txn *t, const char *sha, const uint8_t **body,
                  size_t *len);

/* Store (or keep) the body of script `sha`. Write transaction. */
int st_script_put(st_txn *t, const char *sha, const void *body, size_t len);

/* Forget every script. Write transaction. */
int st_script_flush(st_txn *t);

/* Scripts in the cache. */
int st_script_count(st_txn *t, uint64_t *n);

/* The code of library `name`: 0, or ST_ENOTFOUND. */
int st_func_get(st_txn *t, const char *name, size_t nlen, const uint8_t **code,
                size_t *clen);

/* Create or replace library `name` (bumps the generation). Write txn. */
int st_func_put(st_txn *t, const char *name, size_t nlen, const void *code,
                size_t clen);

/* Delete library `name`: 0 or ST_ENOTFOUND (bumps the generation). */
int st_func_delete(st_txn *t, const char *name, size_t nlen);

/* Delete every library (bumps the generation). Write transaction. */
int st_func_flush(st_txn *t);

/* Called per library in name order; non-zero stops st_func_each. */
typedef int (*st_func_fn)(void *ctx, const char *name, size_t nlen,
                          const uint8_t *code, size_t clen);

/* Visit every library in name order; returns fn's non-zero or 0. */
int st_func_each(st_txn *t, st_func_fn fn, void *ctx);

/* The libraries' generation (0 before the first change). */
int st_func_generation(st_txn *t, uint64_t *gen);

#endif
