/*
 * st_room.c - file blocks kept allocated ahead of LMDB's last page for a
 * writemap environment (the argument is in st_room.h).
 */
#include "storage/st_room.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define ST_ROOM_MS_PER_S 1000ull
#define ST_ROOM_NS_PER_MS 1000000ull
/* Depth assumed when LMDB cannot tell (larger than any tree of a map). */
#define ST_ROOM_DEPTH_UNKNOWN 12
/* An overflow value carries one page header more than its bytes. */
#define ST_ROOM_OVERFLOW_EXTRA 1
/* Commits' slacks kept at the end when writes reuse freed pages. */
#define ST_ROOM_FULL_KEEP 2

/*
 * The head of LMDB's private struct MDB_txn, the same in every 0.9
 * release: the transaction's next unallocated page. st_room_begin checks
 * it against the committed end at every write transaction and stops
 * reading it (falls back to counting every write from the end) if the
 * two ever disagree.
 */
typedef struct lmdb_txn_head {
    void *parent;
    void *child;
    size_t next_pgno;
} lmdb_txn_head;

static uint64_t next_pgno(MDB_txn *txn)
{
    return ((const lmdb_txn_head *)(const void *)txn)->next_pgno;
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * ST_ROOM_MS_PER_S +
           (uint64_t)ts.tv_nsec / ST_ROOM_NS_PER_MS;
}

static uint64_t round_page(const st_room *r, uint64_t n)
{
    return (n + r->psize - 1) / r->psize * r->psize;
}

static int alloc_to(st_room *r, uint64_t end)
{
    int rc;

    do
        rc = fallocate(r->fd, 0, (off_t)r->end, (off_t)(end - r->end));
    while (rc < 0 && errno == EINTR);
    if (rc == 0)
        r->end = end;
    return rc < 0 ? errno : 0;
}

/*
 * Make every byte below `need` allocated. Normally up to need plus a step
 * (one syscall every few tens of MiB). Once a step has failed, for
 * ST_ROOM_RETRY_MS only up to need plus ST_ROOM_TIGHT_BYTES (a failing
 * fallocate can cost as much as a successful one: tmpfs allocates, then
 * gives back), and once even that has failed, no syscall for as large a
 * need until the retry time (a smaller one may lie in blocks another
 * process allocated: fallocate of those succeeds at no cost). 0, or the errno
 * of the failure (kept in r->err). A filesystem without fallocate turns the
 * room off.
 */
static int grow(st_room *r, uint64_t need)
{
    uint64_t step, now;
    int rc;

    if (need > r->map)
        need = r->map; /* past it LMDB answers MDB_MAP_FULL itself */
    if (need <= r->end)
        return 0;
    now = r->retry_at ? now_ms() : 0;
    if (r->full && now < r->retry_at && need >= r->fail_need)
        return r->err;
    step = r->end / ST_ROOM_STEP_FRACTION;
    if (step < ST_ROOM_STEP_BYTES)
        step = ST_ROOM_STEP_BYTES;
    rc = ENOSPC;
    if (!r->retry_at || now >= r->retry_at) {
        uint64_t target = round_page(r, need + step);
        rc = alloc_to(r, target < r->map ? target : r->map);
        if (rc == 0) {
            r->retry_at = 0;
            r->full = 0;
            r->err = 0;
            return 0;
        }
        if (rc == EOPNOTSUPP) {
            r->on = 0; /* st_env_room_unguarded() reports it */
            r->unguarded = 1;
            return 0;
        }
        r->retry_at = now_ms() + ST_ROOM_RETRY_MS;
    }
    {
        uint64_t target = round_page(r, need + ST_ROOM_TIGHT_BYTES);
        if ((rc = alloc_to(r, target < r->map ? target : r->map)) == 0 ||
            (rc = alloc_to(r, round_page(r, need))) == 0) {
            r->full = 0;
            return 0;
        }
    }
    r->err = rc;
    r->full = 1;
    r->fail_need = need;
    r->retry_at = now_ms() + ST_ROOM_RETRY_MS;
    return rc;
}

/*
 * Learn blocks allocated past r->end by another process (or an earlier
 * run): the first hole at or after it. A filesystem may report an
 * allocated but unwritten range as a hole (ext4 does); that only makes
 * the room look smaller. One lseek, made while growth fails.
 */
static void discover(st_room *r)
{
    off_t hole = lseek(r->fd, (off_t)r->end, SEEK_HOLE);

    if (hole > 0 && (uint64_t)hole > r->end)
        r->end = (uint64_t)hole / r->psize * r->psize;
    if (r->end > r->map)
        r->end = r->map;
}

void st_room_open(st_room *r, MDB_env *env)
{
    MDB_envinfo info;
    MDB_stat st;
    uint64_t base;

    memset(r, 0, sizeof *r);
    r->env = env;
    mdb_env_set_userctx(env, r); /* st_room_of() finds r */
    if (mdb_env_get_fd(r->env, &r->fd) || mdb_env_info(r->env, &info) ||
        mdb_env_stat(r->env, &st)) {
        r->unguarded = 1;
        return;
    }
    r->psize = st.ms_psize;
    r->map = info.me_mapsize;
    r->on = 1;
    r->probe = 1; /* until st_room_begin finds it wrong */
    /* Pages below the committed end are allocated (st_room.h's rule), but
     * a file written by an older build or another filesystem's copy may
     * hold holes: cover the whole file once. */
    base = ((uint64_t)info.me_last_pgno + 1) * r->psize;
    if (grow(r, base) && r->end < base)
        r->end = base; /* the rule still holds below the end */
    if (r->full)
        discover(r);
}

void st_room_begin(st_room *r, MDB_txn *txn)
{
    MDB_envinfo info;

    r->fresh = r->run = r->reuse = 0;
    r->reuse_known = 0;
    r->freeing = 0;
    if (mdb_env_info(r->env, &info)) {
        r->base = r->map; /* every write then needs the whole map */
        r->probe = 0;
        return;
    }
    r->base = ((uint64_t)info.me_last_pgno + 1) * r->psize;
    if (r->end < r->base)
        r->end = r->base; /* another process grew it: the rule holds */
    if (r->full)
        discover(r);
    if (r->probe && next_pgno(txn) * r->psize != r->base)
        r->probe = 0;
    if (r->end < r->base + ST_ROOM_STEP_BYTES / 2)
        grow(r, r->base + ST_ROOM_STEP_BYTES / 2);
}

/*
 * A cursor on LMDB's freelist (FREE_DBI, 0), in a read transaction of its
 * own: LMDB refuses that cursor in a write transaction. The snapshot is
 * the committed state the caller's write transaction started from
 * (MDB_NOTLS lets a thread hold both). 0 or an LMDB code.
 */
static int freelist_open(st_room *r, MDB_txn **rd, MDB_cursor **c)
{
    int rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, rd);

    if (rc == 0 && (rc = mdb_cursor_open(*rd, 0, c)))
        mdb_txn_abort(*rd);
    return rc;
}

typedef struct oldest_ctx {
    uint64_t oldest;
} oldest_ctx;

/* mdb_reader_list's lines: "pid thread txnid", or "pid thread -". */
static int note_reader(const char *msg, void *arg)
{
    oldest_ctx *o = arg;
    unsigned long long txnid;
    size_t tid;
    int pid;

    if (sscanf(msg, "%d %zx %llu", &pid, &tid, &txnid) == 3 &&
        txnid < o->oldest)
        o->oldest = txnid;
    return 0;
}

/*
 * The bytes of freelist pages no reader can see (LMDB reuses them before
 * growing the file, and they lie below the committed end): the records
 * of transactions older than the oldest reader, as mdb_page_alloc counts.
 */
static uint64_t reusable(st_room *r, MDB_txn *txn)
{
    oldest_ctx o = { mdb_txn_id(txn) - 1 };
    MDB_txn *rd;
    MDB_cursor *c;
    MDB_val k, v;
    uint64_t pages = 0;
    int rc;

    if (mdb_reader_list(r->env, note_reader, &o) || freelist_open(r, &rd, &c))
        return 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        size_t id, n;
        if (k.mv_size != sizeof id || v.mv_size < sizeof n)
            break;
        memcpy(&id, k.mv_data, sizeof id);
        if (id >= o.oldest)
            break;
        memcpy(&n, v.mv_data, sizeof n);
        pages += n;
    }
    mdb_cursor_close(c);
    mdb_txn_abort(rd);
    return pages * r->psize;
}

/*
 * Whether a write that may take `fresh` bytes of single pages and `run`
 * bytes of page runs fits: where the transaction stands (its next page,
 * or the committed end plus everything it was charged) plus the write
 * and the commit's slack, and for a put the reserve, must be allocated.
 * When the room cannot grow, single pages LMDB will take from its
 * freelist count against the reusable pages instead of the reserve.
 */
static int fits(st_room *r, MDB_txn *txn, uint64_t fresh, uint64_t run, int del)
{
    uint64_t at = r->probe ? next_pgno(txn) * r->psize
                           : r->base + r->fresh + r->run;
    uint64_t need = at + fresh + run + ST_ROOM_COMMIT_BYTES;

    del |= r->freeing;
    if (need + (del ? 0 : ST_ROOM_RESERVE_BYTES) <= r->end ||
        grow(r, need + (del ? 0 : ST_ROOM_RESERVE_BYTES)) == 0)
        return 1;
    if (del)
        return 0;
    if (!r->reuse_known) {
        r->reuse = reusable(r, txn);
        r->reuse_known = 1;
    }
    /* Full: single pages come from the freelist; what is left at the end
     * (the deletes may have used most of the reserve) must still hold the
     * runs and this commit and one more. */
    return r->reuse >= r->fresh + fresh &&
           at + run + ST_ROOM_FULL_KEEP * ST_ROOM_COMMIT_BYTES <= r->end;
}

static int charge(st_room *r, MDB_txn *txn, uint64_t fresh, uint64_t run,
                  int del)
{
    if (!fits(r, txn, fresh, run, del))
        return ST_ENOSPACE; /* the write is not made */
    r->fresh += fresh;
    r->run += run;
    return 0;
}

int st_room_take(st_room *r, MDB_txn *txn, MDB_dbi dbi, size_t bytes, int del)
{
    MDB_stat st;
    uint64_t depth = ST_ROOM_DEPTH_UNKNOWN, fresh, run = 0;

    if (mdb_stat(txn, dbi, &st) == 0)
        depth = st.ms_depth;
    /* The path copied, a split at every level and a new root, and LMDB's
     * own trees; a value past half a page goes to overflow pages, a run
     * LMDB may have to take from the end. */
    fresh = (2 * (depth + 1) + ST_ROOM_OWN_PAGES) * r->psize;
    if (bytes > r->psize / 2)
        run = ((uint64_t)bytes + r->psize - 1) / r->psize +
              ST_ROOM_OVERFLOW_EXTRA;
    return charge(r, txn, fresh, run * r->psize, del);
}

int st_room_take_drop(st_room *r, MDB_txn *txn, MDB_dbi dbi)
{
    MDB_stat st;
    uint64_t pages = 0;

    if (mdb_stat(txn, dbi, &st) == 0)
        pages = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
    /* Every page of the tree joins this commit's freelist record. */
    return charge(r, txn, 0, round_page(r, pages * sizeof(uint64_t)), 1);
}

/* The newest freelist record's transaction id, 0 if none. */
static uint64_t newest_freed(st_room *r)
{
    MDB_txn *rd;
    MDB_cursor *c;
    MDB_val k, v;
    size_t id = 0;

    if (freelist_open(r, &rd, &c))
        return 0;
    if (mdb_cursor_get(c, &k, &v, MDB_LAST) == 0 && k.mv_size == sizeof id)
        memcpy(&id, k.mv_data, sizeof id);
    mdb_cursor_close(c);
    mdb_txn_abort(rd);
    return id;
}

int st_room_nudge_due(st_room *r)
{
    struct statvfs fs;
    uint64_t id;

    if (!r->on || fstatvfs(r->fd, &fs) ||
        (uint64_t)fs.f_bavail * fs.f_frsize >= ST_ROOM_STEP_BYTES)
        return 0;
    id = newest_freed(r);
    return id > r->nudged;
}
