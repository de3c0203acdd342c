/*
 * srv_rdbfile.h - the keyspace and whole RDB files: every database
 * written as one RDB stream from one read snapshot (the export, and
 * SYNC's snapshot for redis-cli --rdb), and an RDB loaded into the data
 * directory (the import).
 *
 * The import writes into the hidden database numbers (st_dbmap.h:
 * databases + i for database i) in transactions of bounded size, checking
 * everything as it reads (the whole file's CRC is known only at its
 * end), and only when the file has been read to its checksum does one
 * small transaction swap every hidden number with its visible one. Before
 * that switch no client sees a byte of it; a bad file, a crash or a kill
 * leaves the keyspace as it was (what was staged is emptied then, or by
 * the next import). After it, the data directory holds exactly the
 * file's keys, as redis-server would after loading it; the old keys are
 * emptied from the hidden numbers in bounded chunks.
 *
 * The import needs the data directory to itself (the shared cache of a
 * running server would not see its writes): the caller makes sure no
 * server has it open (srv_rdbtool.c).
 */
#ifndef SRV_RDBFILE_H
#define SRV_RDBFILE_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_io.h"
#include "storage/st_codec.h"

struct st_env;

/* Keys (or elements) one import transaction holds at most. */
#define SRV_RDBFILE_BATCH 20000

typedef struct srv_rdbfile_stats {
    uint64_t keys; /* written (exported or imported) */
    uint64_t by_type[ST_TYPE_STREAM + 1];
    uint64_t expires;  /* of which with a TTL */
    uint64_t expired;  /* already expired: left out */
    uint64_t empty;    /* empty collections: left out */
    uint64_t dbs;      /* databases holding keys */
    uint64_t replaced; /* keys the import's switch replaced */
    int version;       /* the file's RDB version */
} srv_rdbfile_stats;

/*
 * Write every database of env as an RDB of version RDB_VERSION through
 * w (header, auxiliary fields, the keys of each database with their
 * expiry, EOF and CRC64), all from one read transaction taken at `now`;
 * keys already expired at `now` are left out. The caller's process may
 * have no other transaction of env open. 0, or a storage code or errno
 * (the writer's).
 */
int srv_rdbfile_write(struct st_env *env, int64_t now, rdb_writer *w,
                      srv_rdbfile_stats *st);

/* Told of the import's progress every SRV_RDBFILE_BATCH keys or so:
 * `offset` bytes of a file of `size` bytes read. */
typedef void srv_rdbfile_progress_fn(void *ctx, const srv_rdbfile_stats *st,
                                     uint64_t offset, uint64_t size);

/*
 * Import the RDB that r reads into env, as above, at `now`: keys expired
 * by then are left out (as redis-server does when it loads as a master).
 * 0, with *st filled; otherwise nothing visible changed and `err` says
 * why in a sentence ("offset 1234: key \"x\" (db 0): ..." for a bad
 * file). The caller's process may have no transaction of env open.
 */
int srv_rdbfile_import(struct st_env *env, rdb_reader *r, int64_t now,
                       srv_rdbfile_stats *st, srv_rdbfile_progress_fn *fn,
                       void *ctx, char *err, size_t errlen);

#endif
