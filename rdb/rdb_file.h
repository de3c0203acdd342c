/*
 * rdb_file.h - whole RDB files: the "REDIS0010" header, the opcodes
 * between keys (auxiliary fields, database selection and size hints,
 * expiry times, LRU/LFU hints, functions, module data), the keys with
 * their objects (rdb_obj.h) and the EOF opcode with the CRC64 trailer.
 * Reading drives a caller's sink key by key; writing is a few calls
 * around rdb_obj's encoder.
 */
#ifndef RDB_FILE_H
#define RDB_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"

#define RDB_MAGIC "REDIS"
#define RDB_MAGIC_LEN 5
#define RDB_VERSION_DIGITS 4
#define RDB_HEADER_LEN (RDB_MAGIC_LEN + RDB_VERSION_DIGITS)

/* Opcodes. */
#define RDB_OP_FUNCTION2 245
#define RDB_OP_FUNCTION_PRE_GA 246
#define RDB_OP_FREQ 247
#define RDB_OP_IDLE 248
#define RDB_OP_MODULE_AUX 249
#define RDB_OP_AUX 250
#define RDB_OP_RESIZEDB 251
#define RDB_OP_EXPIRETIME_MS 252
#define RDB_OP_EXPIRETIME 253
#define RDB_OP_SELECTDB 254
#define RDB_OP_EOF 255

/* Key names quoted in error texts are cut to this many bytes. */
#define RDB_FILE_NAME_IN_ERRORS 64

/*
 * The reader's callbacks; any may be NULL, any non-zero return stops the
 * read with RDB_ESINK. `key` comes for every key with its database, name
 * (borrowed for the key), type byte and expire time (ms since the epoch,
 * or -1): it sets *obj to the sink for the value (NULL reads past the
 * value, still checking it). `key_done` follows the value with 0, or
 * RDB_EEMPTY for an empty collection (Redis skips such keys).
 */
typedef struct rdb_file_sink {
    void *ctx;
    int (*aux)(void *ctx, const uint8_t *k, size_t kn, const uint8_t *v,
               size_t vn);
    int (*select_db)(void *ctx, uint64_t db);
    int (*resize_db)(void *ctx, uint64_t keys, uint64_t expires);
    int (*key)(void *ctx, uint64_t db, const uint8_t *name, size_t n, int type,
               int64_t expire_ms, const rdb_sink **obj);
    int (*key_done)(void *ctx, int rc);
} rdb_file_sink;

/*
 * Read a whole RDB file from r into s: versions RDB_VERSION_MIN to
 * RDB_VERSION. *version gets the file's. 0, or the first failure with
 * r->err_off and r->why saying where and what (an error inside a key's
 * value names the key): RDB_ECORRUPT, RDB_ETRUNC, RDB_EVERSION,
 * RDB_ECHECKSUM (trailer CRC not 0 and not the file's),
 * RDB_EUNSUPPORTED (streams, modules, functions), RDB_ESINK, errno.
 * `keybuf` holds key names read from a file (memory readers borrow).
 */
int rdb_file_read(rdb_reader *r, const rdb_file_sink *s, rdb_scratch *sc,
                  rdb_buf *keybuf, int *version);

/* "REDIS0010". */
int rdb_file_write_header(rdb_writer *w);
/* An auxiliary field (redis-ver, ctime, ...). */
int rdb_file_write_aux(rdb_writer *w, const char *key, const char *val);
/* SELECTDB db, then RESIZEDB with its key and expiry counts. */
int rdb_file_write_select(rdb_writer *w, uint64_t db, uint64_t keys,
                          uint64_t expires);
/* The expire time of the key that follows (ms since the epoch). */
int rdb_file_write_expire(rdb_writer *w, int64_t ms);
/* EOF, the CRC64 of everything before the trailer, and a flush. */
int rdb_file_write_end(rdb_writer *w);

#endif
