/*
 * st_room.h - file blocks allocated ahead of LMDB's last page, so that an
 * environment opened with MDB_WRITEMAP never touches a page the
 * filesystem has no block for (storage-internal: LMDB types).
 *
 * Why. With MDB_WRITEMAP, LMDB ftruncates data.mdb to the whole map
 * (`maxdisk`): a sparse file. A commit's new pages are written by storing
 * into the map, so the filesystem allocates their blocks at the page
 * fault; when it has none left (ENOSPC, a quota, a full tmpfs) the kernel
 * answers the fault with SIGBUS and the process dies mid-transaction
 * instead of the write failing.
 *
 * The rule. Every page below `end` has a block: the process allocated
 * it with fallocate(2) (mode 0: blocks inside the file's size, the size
 * unchanged), or some process did earlier (every page below a committed
 * last page was inside some writer's room when it was used, and blocks
 * are never punched out; the first open of each process covers the whole
 * file once, in case it was written elsewhere). A write transaction uses
 * pages below the committed end (LMDB's freelist: allocated) or new pages
 * from its next page up. Before every B-tree write (st_mdb_put and its
 * siblings below, which every storage module uses instead of LMDB's) the
 * write is bounded: 2 x (depth + 1) pages of its tree (the path copied, a
 * split at every level, a new root), ST_ROOM_OWN_PAGES of LMDB's own
 * trees, and the overflow pages of a value past half a page. It goes on
 * only if the transaction's next page (read from LMDB's transaction, see
 * st_room.c; checked against the committed end at every begin, and if
 * they ever differ, every charge since the begin is added instead) plus
 * that bound, ST_ROOM_COMMIT_BYTES for the commit's freelist record and,
 * for puts, ST_ROOM_RESERVE_BYTES, is allocated. Otherwise the room grows
 * first: fallocate to the need plus ST_ROOM_STEP_BYTES (or
 * 1/ST_ROOM_STEP_FRACTION of the file), so growth is one syscall every
 * few tens of MiB, made by the process holding LMDB's write lock. When
 * fallocate fails (ENOSPC, EFBIG, EDQUOT) the write is refused with
 * ST_ENOSPACE before LMDB is called: the transaction is intact (the
 * caller aborts it or commits what it has), nothing faults, reads go on.
 * Each process knows only its own growth; the committed end and the
 * first hole past its end (lseek SEEK_HOLE, while growth fails) tell it
 * what others allocated.
 *
 * When the disk is full. Puts stop ST_ROOM_RESERVE_BYTES before the end;
 * deletes (a DEL's writes, the lazy free, a commit's count record: marked
 * `freeing`) may use the reserve, so DEL, expiry and the reaper still
 * run. Freed pages come back through LMDB's freelist once no reader (the
 * durable pin included) can see them: while growth fails, a transaction
 * counts the freelist pages older than the oldest reader and lets
 * single-page writes draw on them, charged at the bound above (so a 10 MB
 * value needs far more freed than its size). Since LMDB reuses a commit's
 * freed pages only after a later commit is pinned, and on a full disk
 * nothing else may commit, the reaper commits a one-record write when the
 * disk is nearly full and the newest commit freed pages
 * (st_room_nudge_due). Growth that failed is retried at most every
 * ST_ROOM_RETRY_MS for as large a need, and after a failed step only in
 * small ones (a failing fallocate can cost as much as a successful one:
 * tmpfs allocates, then gives back).
 *
 * What `ls -l` and `du` show. `ls -l data.mdb`: the map size (maxdisk),
 * as LMDB's ftruncate made it. `du`: the blocks in use, i.e. the high
 * water of the data plus the room ahead of it (at most ST_ROOM_STEP_BYTES
 * or 1/ST_ROOM_STEP_FRACTION more). INFO's lmdb_file_bytes reports the
 * allocated bytes (st_blocks) for a writemap environment.
 *
 * Limits. fallocate promises blocks on filesystems that overwrite in place
 * (ext4, xfs, tmpfs); on copy-on-write ones (btrfs, zfs) an overwrite
 * still needs a new block and can fault. Where fallocate is not supported
 * (EOPNOTSUPP) the room cannot be kept: st_env_room_guarded() says so and
 * the server warns. Without MDB_WRITEMAP none of this runs: LMDB writes
 * with pwrite, which fails with ENOSPC as an error.
 */
#ifndef ST_ROOM_H
#define ST_ROOM_H

#include <lmdb.h>
#include <stdint.h>

#include "storage/st_err.h"

/* Grow the room to the need plus this much, or 1/ST_ROOM_STEP_FRACTION of
 * the file when that is more. */
#define ST_ROOM_STEP_BYTES (64ull << 20)
#define ST_ROOM_STEP_FRACTION 16
/* Puts keep this much of the room for deletes and frees. */
#define ST_ROOM_RESERVE_BYTES (8ull << 20)
/* What a commit may add beyond its writes: LMDB's freelist record of the
 * pages it freed (8 bytes a page: 1 MiB covers 128 Ki freed pages). */
#define ST_ROOM_COMMIT_BYTES (1ull << 20)
/* Pages of LMDB's own trees one write may copy (freelist, database
 * records in the main tree). */
#define ST_ROOM_OWN_PAGES 6
/* After a failed step, grow by this much past the need. */
#define ST_ROOM_TIGHT_BYTES (1ull << 20)
/* While growth fails, retry it at most this often. */
#define ST_ROOM_RETRY_MS 200

/* One process's view of the room of one environment; used by its writer
 * only (a write transaction holds LMDB's write lock). */
typedef struct st_room {
    MDB_env *env;
    int on;          /* writes are accounted against the room */
    int unguarded;   /* writemap, but fallocate is not supported */
    int err;         /* errno of the last failed growth, or 0 */
    int fd;          /* LMDB's descriptor of data.mdb */
    int reuse_known; /* `reuse` was counted in this transaction */
    int probe;       /* LMDB's next page can be read (st_room.c) */
    int full;        /* the last growth failed */
    int freeing;     /* the writes now made free space (a delete, the
                      * lazy free): they may use the reserve; reset
                      * by st_room_begin */
    unsigned psize;
    uint64_t map;       /* the map size: the room's ceiling */
    uint64_t end;       /* every byte below has a block */
    uint64_t base;      /* the committed end when the txn began */
    uint64_t fresh;     /* bytes of single pages the txn was charged */
    uint64_t run;       /* ... and of page runs (overflow values) */
    uint64_t reuse;     /* freelist bytes no reader sees (when full) */
    uint64_t fail_need; /* the end the last failed growth wanted */
    uint64_t nudged;    /* the last transaction st_room_nudge_due asked
                         * for */
    uint64_t retry_at;  /* ms (monotonic): no full step (or, when
                         * `full`, no growth at all) before */
} st_room;

/* At open: take the page size, allocate [0, end + step). Never fails the
 * open: a full disk still serves reads. */
void st_room_open(st_room *r, MDB_env *env);

/* At a write transaction's begin: note the committed end and top the room
 * up if it runs low (failure is left to the writes). */
void st_room_begin(st_room *r, MDB_txn *txn);

/*
 * Account a write of `bytes` (key + value) into `dbi` of txn, or a delete
 * (`del`), growing the room if needed. 0, or ST_ENOSPACE when the room
 * cannot hold it (the write must not be made).
 */
int st_room_take(st_room *r, MDB_txn *txn, MDB_dbi dbi, size_t bytes, int del);

/* Account dropping (emptying) dbi: its pages go to the freelist record. */
int st_room_take_drop(st_room *r, MDB_txn *txn, MDB_dbi dbi);

/* The room of txn's environment (its user context; st_room_open sets it). */
/*
 * Whether the lazy freer should commit a transaction of its own now
 * although it has nothing to free: the disk is nearly full, and the
 * newest commit freed pages, which LMDB reuses only once every reader
 * (the durable pin) has moved past a later commit; when all writes fail
 * for want of room, nothing else commits. The caller records the commit
 * in `nudged`. Reads the freelist only while the disk is nearly full.
 */
int st_room_nudge_due(st_room *r);

/* The meta record such a commit writes (its transaction id). */
#define ST_META_ROOM "room-nudge"

static inline st_room *st_room_of(MDB_txn *txn)
{
    return (st_room *)mdb_env_get_userctx(mdb_txn_env(txn));
}

/* LMDB's write calls, each accounted first when the room is kept. */
static inline int st_mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v,
                             unsigned flags)
{
    st_room *r = st_room_of(txn);
    int rc;

    if (r && r->on &&
        (rc = st_room_take(r, txn, dbi, k->mv_size + v->mv_size, 0)))
        return rc;
    return mdb_put(txn, dbi, k, v, flags);
}

static inline int st_mdb_cursor_put(MDB_cursor *c, MDB_val *k, MDB_val *v,
                                    unsigned flags)
{
    MDB_txn *txn = mdb_cursor_txn(c);
    st_room *r = st_room_of(txn);
    int rc;

    if (r && r->on &&
        (rc = st_room_take(r, txn, mdb_cursor_dbi(c), k->mv_size + v->mv_size,
                           0)))
        return rc;
    return mdb_cursor_put(c, k, v, flags);
}

static inline int st_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    st_room *r = st_room_of(txn);
    int rc;

    if (r && r->on && (rc = st_room_take(r, txn, dbi, 0, 1)))
        return rc;
    return mdb_del(txn, dbi, k, v);
}

static inline int st_mdb_cursor_del(MDB_cursor *c, unsigned flags)
{
    MDB_txn *txn = mdb_cursor_txn(c);
    st_room *r = st_room_of(txn);
    int rc;

    if (r && r->on && (rc = st_room_take(r, txn, mdb_cursor_dbi(c), 0, 1)))
        return rc;
    return mdb_cursor_del(c, flags);
}

static inline int st_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del)
{
    st_room *r = st_room_of(txn);
    int rc;

    if (r && r->on && (rc = st_room_take_drop(r, txn, dbi)))
        return rc;
    return mdb_drop(txn, dbi, del);
}

#endif
