/*
 * st_durable.c - the durable snapshot: pin, flush, record, restore (the
 * design is in st_durable.h), and the two checks the rest of the layer
 * makes against it (the first-write gate and the reader-check guard).
 */
#include "storage/st_durable.h"
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_internal.h"
#include "storage/st_metapage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
#define REC_MAGIC "LRDDUR01"
#define REC_MAGIC_LEN 8
#define REC_VERSION 1u
/* The two record slots sit a page apart, so one never shares a sector
 * (or a page written back) with the other. */
#define REC_SLOT_BYTES 4096
#define REC_SLOTS 2
#define HASH_SEED_REC 0x6c61726465722d72ull  /* "larder-r" */
#define HASH_SEED_ROOT 0x6c61726465722d70ull /* "larder-p" */
#define GATE_POLL_NS 1000000L
#define NS_PER_MS 1000000
#define MS_PER_S 1000
#define FILE_MODE 0600
/* LMDB's freelist database (its handle is always 0). */
#define FREE_DBI 0

/* One record slot; host byte order (the file never leaves the machine
 * whose LMDB file it describes). */
typedef struct st_durable_rec {
    char magic[REC_MAGIC_LEN];
    uint32_t version;
    uint32_t psize;      /* LMDB page size */
    uint64_t seq;        /* the slot is seq % REC_SLOTS */
    uint64_t txnid;      /* the durable snapshot */
    uint64_t root_hash;  /* its main database's root page */
    int32_t pid;         /* the process whose reader pins txnid */
    uint32_t live_pages; /* pages txnid's snapshot uses (its file less its
                          * freelist; 0 in records of older builds) */
    char boot_id[ST_BOOT_ID_MAX];
    uint8_t meta[ST_METAPAGE_BYTES]; /* its meta page as LMDB wrote it */
    uint64_t check;                  /* st_codec_hash64 of everything above */
} st_durable_rec;

_Static_assert(sizeof(st_durable_rec) <= REC_SLOT_BYTES,
               "a record fits its slot");

struct st_durable {
    st_env *env;
    int fd;            /* the record file */
    int datafd;        /* LMDB's descriptor of data.mdb */
    int dirfd_pending; /* the record file is new: flush the dir */
    unsigned psize;
    uint8_t *page;  /* psize bytes: a root page being hashed */
    MDB_txn *pin;   /* the read transaction on the durable snapshot */
    MDB_txn *spare; /* a reset read transaction, renewed next */
    uint64_t pin_txn;
    uint64_t pin_last_pg; /* the pinned snapshot's last page */
    uint64_t bound_pg;    /* st_durable_bound_pages of the pinned one */
    uint64_t seq;         /* of the last record written */
};

const char *st_durable_state_name(int state)
{
    switch (state) {
    case ST_DURABLE_FRESH: return "fresh";
    case ST_DURABLE_SAME_BOOT: return "same-boot";
    case ST_DURABLE_CLEAN: return "clean";
    case ST_DURABLE_RESTORED: return "restored";
    case ST_DURABLE_MISMATCH: return "mismatch";
    default: break;
    }
    return "unknown";
}

int st_durable_boot_id(char *buf, size_t size)
{
    int fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (size == 0)
        return EINVAL;
    if (fd < 0)
        return errno;
    n = read(fd, buf, size - 1);
    if (n < 0) {
        int e = errno;
        close(fd);
        return e;
    }
    close(fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return n > 0 ? 0 : EINVAL;
}

/* ---- the record file ---- */

static int path_in(char *out, size_t size, const char *dir, const char *name)
{
    return (size_t)snprintf(out, size, "%s/%s", dir, name) >= size
               ? ENAMETOOLONG
               : 0;
}

static uint64_t rec_sum(const st_durable_rec *r)
{
    return st_codec_hash64(r, offsetof(st_durable_rec, check), HASH_SEED_REC);
}

static int rec_valid(const st_durable_rec *r)
{
    return memcmp(r->magic, REC_MAGIC, REC_MAGIC_LEN) == 0 &&
           r->version == REC_VERSION && r->check == rec_sum(r) &&
           memchr(r->boot_id, '\0', sizeof r->boot_id) != NULL;
}

/* The newest valid slot into *best: 0, ST_ENOTFOUND, or an errno. */
static int rec_load(int fd, st_durable_rec *best)
{
    int found = 0;

    for (int i = 0; i < REC_SLOTS; i++) {
        st_durable_rec r;
        ssize_t n = pread(fd, &r, sizeof r, (off_t)i * REC_SLOT_BYTES);

        if (n < 0)
            return errno;
        if ((size_t)n != sizeof r || !rec_valid(&r))
            continue;
        if (!found || r.seq > best->seq)
            *best = r;
        found = 1;
    }
    return found ? 0 : ST_ENOTFOUND;
}

/* Load the record of the directory `dir`: 0, ST_ENOTFOUND, or an errno. */
static int rec_load_dir(const char *dir, st_durable_rec *best)
{
    char path[PATH_MAX];
    int fd, rc;

    if ((rc = path_in(path, sizeof path, dir, ST_DURABLE_FILE)))
        return rc;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno == ENOENT ? ST_ENOTFOUND : errno;
    rc = rec_load(fd, best);
    close(fd);
    return rc;
}

static int write_all(int fd, const void *buf, size_t len, off_t at)
{
    const uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        p += n;
        len -= (size_t)n;
        at += n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len, off_t at)
{
    uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = pread(fd, p, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return ST_ECORRUPT;
        p += n;
        len -= (size_t)n;
        at += n;
    }
    return 0;
}

/* Hash of page pgno of the data file (psize bytes into page). */
static int page_hash(int fd, unsigned psize, uint64_t pgno, uint8_t *page,
                     uint64_t *out)
{
    int rc;

    if (pgno == ST_METAPAGE_NO_ROOT) {
        *out = 0;
        return 0;
    }
    if ((rc = read_all(fd, page, psize, (off_t)(pgno * psize))))
        return rc;
    *out = st_codec_hash64(page, psize, HASH_SEED_ROOT);
    return 0;
}

static int fsync_dir(const char *dir);

/* ---- pin, flush, record ---- */

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * MS_PER_S + (uint64_t)ts.tv_nsec / NS_PER_MS;
}

/* A read transaction that is done with: keep one for renewal. */
static void park(st_durable *d, MDB_txn *r)
{
    if (!d->spare) {
        mdb_txn_reset(r);
        d->spare = r;
    } else {
        mdb_txn_abort(r);
    }
}

static int begin_read(st_durable *d, MDB_txn **out)
{
    int rc;

    if (d->spare) {
        MDB_txn *r = d->spare;
        d->spare = NULL;
        if ((rc = mdb_txn_renew(r)) == 0) {
            *out = r;
            return 0;
        }
        mdb_txn_abort(r);
    }
    return mdb_txn_begin(d->env->env, NULL, MDB_RDONLY, out);
}

/*
 * Pin the newest snapshot and copy its meta page. LMDB's write lock is
 * held meanwhile: no commit can rewrite that meta page (commit T+2 would)
 * while it is read, and the read transaction begun under it sees exactly
 * the snapshot whose meta page is read.
 */
static int pin_newest(st_durable *d, MDB_txn **pin, st_durable_rec *rec)
{
    MDB_txn *w, *r = NULL;
    st_metapage m;
    uint64_t txn;
    int rc;

    if ((rc = mdb_txn_begin(d->env->env, NULL, 0, &w)))
        return st_err_map(rc);
    if ((rc = begin_read(d, &r))) {
        mdb_txn_abort(w);
        return st_err_map(rc);
    }
    txn = (uint64_t)mdb_txn_id(r);
    rc = st_metapage_read(d->datafd, d->psize, (int)(txn & 1), &m);
    if (rc == 0 && (st_metapage_check(&m) || st_metapage_txnid(&m) != txn ||
                    st_metapage_psize(&m) != d->psize))
        rc = ST_ECORRUPT;
    mdb_txn_abort(w);
    /* r keeps the root page from reuse: hashed outside the lock. */
    if (rc == 0)
        rc = page_hash(d->datafd, d->psize, st_metapage_main_root(&m), d->page,
                       &rec->root_hash);
    if (rc) {
        park(d, r);
        return rc;
    }
    rec->txnid = txn;
    memcpy(rec->meta, m.b, sizeof rec->meta);
    *pin = r;
    return 0;
}

/*
 * Pages on the freelist of txn's snapshot (LMDB's database 0: a record per
 * freeing transaction, keyed by its id, holding an ID list whose first word
 * is its length). *since gets those freed by transactions from `from` on
 * (none of them is reused while a snapshot older than `from` is held);
 * with `whole`, *total gets every record's, else the scan stops at `from`.
 */
static int free_pages(MDB_txn *txn, uint64_t from, int whole, uint64_t *since,
                      uint64_t *total)
{
    MDB_cursor *c;
    MDB_val k, v;
    int rc, op = MDB_LAST;

    *since = *total = 0;
    if ((rc = mdb_cursor_open(txn, FREE_DBI, &c)))
        return st_err_map(rc);
    while ((rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
        size_t id, n;

        op = MDB_PREV;
        if (k.mv_size != sizeof id || v.mv_size < sizeof n)
            continue;
        memcpy(&id, k.mv_data, sizeof id);
        memcpy(&n, v.mv_data, sizeof n);
        if (id < from && !whole)
            break;
        *total += n;
        if (id >= from)
            *since += n;
    }
    mdb_cursor_close(c);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : st_err_map(rc);
}

uint64_t st_durable_bound_pages(uint64_t live_pages, unsigned psize)
{
    return live_pages * ST_DURABLE_ROOM_LIVE + ST_DURABLE_ROOM_BYTES / psize;
}

static int rec_write(st_durable *d, st_durable_rec *rec)
{
    int rc;

    memcpy(rec->magic, REC_MAGIC, REC_MAGIC_LEN);
    rec->version = REC_VERSION;
    rec->psize = d->psize;
    rec->seq = d->seq + 1;
    rec->pid = (int32_t)getpid();
    snprintf(rec->boot_id, sizeof rec->boot_id, "%s", d->env->boot_id);
    rec->check = rec_sum(rec);
    if ((rc = write_all(d->fd, rec, sizeof *rec,
                        (off_t)(rec->seq % REC_SLOTS) * REC_SLOT_BYTES)))
        return rc;
    if (fdatasync(d->fd))
        return errno;
    if (d->dirfd_pending) {
        if ((rc = fsync_dir(d->env->dir)))
            return rc;
        d->dirfd_pending = 0;
    }
    d->seq = rec->seq;
    return 0;
}

/* The cycle of st_durable_flush; `force` records even when nothing new. */
static int flush(st_durable *d, int force, uint64_t *txnid)
{
    st_metapage m;
    st_durable_rec rec;
    MDB_txn *r = NULL;
    uint64_t since, total, live;
    int rc;

    memset(&rec, 0, sizeof rec);
    if ((rc = pin_newest(d, &r, &rec)))
        return rc;
    if (!force && d->pin && rec.txnid == d->pin_txn) {
        park(d, r);
        *txnid = d->pin_txn;
        return 0;
    }
    memcpy(m.b, rec.meta, sizeof m.b);
    if ((rc = free_pages(r, UINT64_MAX, 1, &since, &total))) {
        park(d, r);
        return rc;
    }
    live = st_metapage_last_pg(&m) + 1;
    live = live > total ? live - total : 1;
    rec.live_pages = live > UINT32_MAX ? UINT32_MAX : (uint32_t)live;
    if ((rc = st_err_map(mdb_env_sync(d->env->env, 1))) ||
        (rc = rec_write(d, &rec))) {
        park(d, r);
        return rc;
    }
    /* Only now may the previous durable snapshot's pages be reused. */
    if (d->pin)
        park(d, d->pin);
    d->pin = r;
    d->pin_txn = rec.txnid;
    d->pin_last_pg = st_metapage_last_pg(&m);
    d->bound_pg = st_durable_bound_pages(rec.live_pages, d->psize);
    *txnid = rec.txnid;
    return 0;
}

int st_durable_flush(st_durable *d, uint64_t *txnid)
{
    return flush(d, 0, txnid);
}

uint64_t st_durable_txn(const st_durable *d) { return d->pin_txn; }

/* In the map's last part, where the pin's pages are all there is to reuse? */
static int in_last_part(const MDB_envinfo *info, unsigned psize)
{
    uint64_t map_pages = psize ? info->me_mapsize / psize : 0;

    return map_pages && (uint64_t)info->me_last_pgno >=
                            map_pages - map_pages / ST_DURABLE_MAP_PART;
}

/* Past the bound and grown since the pin: the file grows no further
 * until the pin moves (commits wait, see st_durable_pressure). */
static int past_bound(uint64_t last_pg, uint64_t pin_last_pg, uint64_t bound)
{
    return last_pg > pin_last_pg && last_pg >= bound;
}

int st_durable_due(st_durable *d, unsigned *poll_ms)
{
    MDB_envinfo info;
    MDB_txn *r;
    uint64_t since, total;
    int full;

    *poll_ms = ST_DURABLE_POLL_MS;
    if (mdb_env_info(d->env->env, &info))
        return 0;
    full = in_last_part(&info, d->psize);
    if (full)
        *poll_ms = ST_DURABLE_FULL_POLL_MS;
    if ((uint64_t)info.me_last_txnid <= d->pin_txn)
        return 0;
    if (full ||
        (uint64_t)info.me_last_txnid >= d->pin_txn + ST_DURABLE_EARLY_COMMITS ||
        past_bound(info.me_last_pgno, d->pin_last_pg, d->bound_pg) ||
        ((uint64_t)info.me_last_pgno > d->pin_last_pg &&
         ((uint64_t)info.me_last_pgno - d->pin_last_pg) * d->psize >
             ST_DURABLE_EARLY_BYTES))
        return 1;
    /* What the commits since the pin freed, they allocated about as much
     * again from pages the pin keeps from reuse: flush by that volume. */
    if (begin_read(d, &r))
        return 0;
    if (free_pages(r, d->pin_txn, 0, &since, &total))
        since = 0;
    park(d, r);
    return since * d->psize > ST_DURABLE_EARLY_BYTES;
}

int st_durable_open(st_env *env, st_durable **out)
{
    char path[PATH_MAX];
    st_durable_rec last;
    st_durable *d;
    MDB_stat ms;
    uint64_t txn;
    int rc;

    if (!env->boot_id[0])
        return EINVAL;
    if (!(d = calloc(1, sizeof *d)))
        return ENOMEM;
    d->env = env;
    d->fd = -1;
    if ((rc = st_err_map(mdb_env_get_fd(env->env, &d->datafd))) ||
        (rc = st_err_map(mdb_env_stat(env->env, &ms))))
        goto fail;
    d->psize = ms.ms_psize;
    if (!(d->page = malloc(d->psize))) {
        rc = ENOMEM;
        goto fail;
    }
    if ((rc = path_in(path, sizeof path, env->dir, ST_DURABLE_FILE)))
        goto fail;
    if ((d->fd = open(path, O_RDWR | O_CLOEXEC)) < 0 && errno == ENOENT) {
        d->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, FILE_MODE);
        d->dirfd_pending = 1;
    }
    if (d->fd < 0) {
        rc = errno;
        goto fail;
    }
    rc = rec_load(d->fd, &last);
    if (rc == 0)
        d->seq = last.seq;
    else if (rc != ST_ENOTFOUND)
        goto fail;
    /* Recorded now, with this process as the pinner (the first-write gate
     * and the reader-check guard look for it). */
    if ((rc = flush(d, 1, &txn)))
        goto fail;
    *out = d;
    return 0;
fail:
    st_durable_close(&d, 0);
    return rc;
}

void st_durable_close(st_durable **dp, int keep_pin)
{
    st_durable *d = *dp;

    if (!d)
        return;
    if (d->spare)
        mdb_txn_abort(d->spare);
    /* keep_pin: the transaction is dropped unended on purpose; its slot is
     * freed with the environment (or the process). */
    if (d->pin && !keep_pin)
        mdb_txn_abort(d->pin);
    if (d->fd >= 0)
        close(d->fd);
    free(d->page);
    free(d);
    *dp = NULL;
}

/* ---- boot ---- */

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

    if (fd < 0)
        return errno;
    rc = fsync(fd) ? errno : 0;
    close(fd);
    return rc;
}

/* Remove a leftover of an interrupted creation (ENOENT is fine). */
static int remove_new_dir(const char *tmp)
{
    char path[PATH_MAX];
    const char *const names[] = { "data.mdb", "lock.mdb" };

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int rc = path_in(path, sizeof path, tmp, names[i]);
        if (rc)
            return rc;
        if (unlink(path) && errno != ENOENT)
            return errno;
    }
    return rmdir(tmp) && errno != ENOENT ? errno : 0;
}

/*
 * A new environment appears whole or not at all: LMDB writes its first
 * meta pages unflushed, so one created in place and cut short by a power
 * cut does not open. It is made in ST_DURABLE_NEW_DIR, flushed, and
 * renamed into place.
 */
static int create_whole(const st_env_opts *opts)
{
    char tmp[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    st_env_opts o = *opts;
    st_env *env;
    int rc;

    if ((rc = path_in(tmp, sizeof tmp, opts->dir, ST_DURABLE_NEW_DIR)) ||
        (rc = path_in(from, sizeof from, tmp, "data.mdb")) ||
        (rc = path_in(to, sizeof to, opts->dir, "data.mdb")))
        return rc;
    if (mkdir(opts->dir, ST_DURABLE_DIR_MODE) && errno != EEXIST)
        return errno;
    if ((rc = remove_new_dir(tmp)))
        return rc;
    o.dir = tmp;
    o.nosync = 0;
    o.boot_id = NULL;
    if ((rc = st_env_open(&o, &env)))
        return rc;
    rc = st_env_sync(env);
    st_env_close(&env);
    if (rc == 0 && rename(from, to))
        rc = errno;
    if (rc == 0)
        rc = fsync_dir(opts->dir);
    if (rc == 0)
        rc = remove_new_dir(tmp);
    return rc;
}

/*
 * Another boot's record against data.mdb: restore its meta page unless the
 * file already opens that snapshot or the record is not this file's.
 */
static int restore(const char *dir, const st_durable_rec *rec,
                   st_durable_report *out)
{
    char path[PATH_MAX];
    st_metapage disk[ST_METAPAGE_SLOTS], want, other;
    int ok[ST_METAPAGE_SLOTS], slot = (int)(rec->txnid & 1), fd, rc, any = 0;
    uint64_t newest = 0, hash;
    uint8_t *page = NULL;
    struct stat st;

    if ((rc = path_in(path, sizeof path, dir, "data.mdb")))
        return rc;
    if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        if (errno != ENOENT)
            return errno;
        out->state = ST_DURABLE_FRESH; /* the file it described is gone */
        return 0;
    }
    memcpy(want.b, rec->meta, sizeof want.b);
    for (int i = 0; i < ST_METAPAGE_SLOTS; i++) {
        ok[i] = st_metapage_read(fd, rec->psize, i, &disk[i]) == 0 &&
                st_metapage_check(&disk[i]) == 0;
        if (ok[i] && (!any || st_metapage_txnid(&disk[i]) > newest))
            newest = st_metapage_txnid(&disk[i]);
        any |= ok[i];
    }
    out->newest_txn = newest;
    out->state = ST_DURABLE_MISMATCH;
    rc = 0;
    if (st_metapage_check(&want) || st_metapage_txnid(&want) != rec->txnid ||
        st_metapage_psize(&want) != rec->psize)
        goto done;
    if (ok[slot] && memcmp(disk[slot].b, want.b, sizeof want.b) == 0 &&
        ok[!slot] && st_metapage_txnid(&disk[!slot]) < rec->txnid) {
        out->state = ST_DURABLE_CLEAN;
        goto done;
    }
    /* Is the record this file's? Its snapshot was flushed before the
     * record was written, and pinned until a newer one was recorded: the
     * file is at least that long, holds a meta page at least that new, and
     * that snapshot's main root page is the one recorded. */
    if (!any || newest < rec->txnid || fstat(fd, &st) ||
        (uint64_t)st.st_size < (st_metapage_last_pg(&want) + 1) * rec->psize)
        goto done;
    if (!(page = malloc(rec->psize))) {
        rc = ENOMEM;
        goto done;
    }
    if (page_hash(fd, rec->psize, st_metapage_main_root(&want), page, &hash) ||
        hash != rec->root_hash)
        goto done;
    other = want;
    st_metapage_relabel(&other, !slot, rec->txnid ? rec->txnid - 1 : 0);
    if ((rc = st_metapage_write(fd, rec->psize, slot, &want)) ||
        (rc = st_metapage_write(fd, rec->psize, !slot, &other)))
        goto done;
    if (fdatasync(fd)) {
        rc = errno;
        goto done;
    }
    out->state = ST_DURABLE_RESTORED;
done:
    free(page);
    close(fd);
    return rc;
}

int st_durable_boot(const st_env_opts *opts, st_durable_report *out)
{
    char data[PATH_MAX];
    struct stat st;
    st_durable_rec rec;
    st_env_opts o = *opts;
    st_durable *d;
    st_env *env;
    int rc;

    memset(out, 0, sizeof *out);
    if (!opts->boot_id || !opts->boot_id[0])
        return EINVAL;
    rc = rec_load_dir(opts->dir, &rec);
    if (rc && rc != ST_ENOTFOUND)
        return rc;
    out->state = ST_DURABLE_FRESH;
    if (rc == 0) {
        out->recorded_txn = rec.txnid;
        out->state = ST_DURABLE_SAME_BOOT;
        if (strcmp(rec.boot_id, opts->boot_id) != 0 &&
            (rc = restore(opts->dir, &rec, out)))
            return rc;
    }
    if ((rc = path_in(data, sizeof data, opts->dir, "data.mdb")))
        return rc;
    if (stat(data, &st)) {
        if (errno != ENOENT || (rc = create_whole(opts)))
            return rc ? rc : errno;
    }
    o.nosync = 0;
    if ((rc = st_env_open(&o, &env)))
        return rc;
    if ((rc = st_durable_open(env, &d)) == 0) {
        out->open_txn = st_durable_txn(d);
        st_durable_close(&d, 0);
    }
    st_env_close(&env);
    return rc;
}

/* ---- what the rest of the layer asks ---- */

typedef struct pin_scan {
    pid_t pid;
    uint64_t max_txn;
    int found;
} pin_scan;

/* mdb_reader_list's lines: "%10d %zx %zu" or "%10d %zx -", and headers. */
static int scan_reader(const char *line, void *arg)
{
    pin_scan *s = arg;
    unsigned long long txn;
    size_t tid;
    int pid;

    if (sscanf(line, "%d %zx %llu", &pid, &tid, &txn) == 3 &&
        (pid_t)pid == s->pid && txn <= s->max_txn)
        s->found = 1;
    return 0;
}

/* Is pid alive? As mdb_reader_check decides: it holds the byte at
 * offset pid of the lock file (LMDB locks it for as long as the process
 * has the environment open). */
static int pinner_alive(st_env *env, pid_t pid)
{
    struct flock fl;

    if (pid == getpid())
        return 1;
    if (env->lockfd < 0)
        return 0;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = pid;
    fl.l_len = 1;
    if (fcntl(env->lockfd, F_GETLK, &fl))
        return 0;
    return fl.l_type != F_UNLCK;
}

/*
 * Does the recorded pinner hold a reader slot on a snapshot no newer than
 * the recorded one (the first-write gate: this boot's record, the pin in
 * place, its holder alive or not)? A flush that swaps pins while the slots
 * are listed can hide them: the gate asks again.
 */
static int pinned(st_env *env)
{
    st_durable_rec rec;
    pin_scan s;

    if (rec_load_dir(env->dir, &rec) || strcmp(rec.boot_id, env->boot_id) != 0)
        return 0;
    s.pid = (pid_t)rec.pid;
    s.max_txn = rec.txnid;
    s.found = 0;
    return mdb_reader_list(env->env, scan_reader, &s) >= 0 && s.found;
}

int st_durable_gate(st_env *env)
{
    uint64_t deadline = now_ms() +
                        (env->gate == ST_GATE_WAIT ? ST_DURABLE_GATE_MS : 0);

    for (;;) {
        if (pinned(env)) {
            env->gate = ST_GATE_OPEN;
            return 0;
        }
        if (now_ms() >= deadline) {
            env->gate = ST_GATE_FAILED;
            return ST_ENOPIN;
        }
        struct timespec ts = { 0, GATE_POLL_NS };
        nanosleep(&ts, NULL);
    }
}

/*
 * The reader-check guard: is the recorded pinner alive, and holding some
 * snapshot? (While it lives, the syncer always holds its pin; which
 * snapshot it is does not matter here, and comparing it with the record
 * would race with the flush that replaces both.)
 */
int st_durable_pin_live(st_env *env)
{
    st_durable_rec rec;
    pin_scan s;

    if (rec_load_dir(env->dir, &rec) || !pinner_alive(env, (pid_t)rec.pid))
        return 0;
    s.pid = (pid_t)rec.pid;
    s.max_txn = UINT64_MAX;
    s.found = 0;
    return mdb_reader_list(env->env, scan_reader, &s) >= 0 && s.found;
}

/* Does the pinner still hold a snapshot older than its record's? */
static int older_pin_held(st_env *env, const st_durable_rec *rec)
{
    pin_scan s = { (pid_t)rec->pid, rec->txnid ? rec->txnid - 1 : 0, 0 };

    if (!rec->txnid || mdb_reader_list(env->env, scan_reader, &s) < 0)
        return 0;
    return s.found;
}

/* The record says where the durable snapshot ends: cache it, and the
 * file's bound. A record of an older build (no live count) bounds the
 * growth past its snapshot to ST_DURABLE_ROOM_BYTES. */
static void pin_room(st_env *env, const st_durable_rec *rec)
{
    st_metapage m;

    memcpy(m.b, rec->meta, sizeof m.b);
    env->psize = rec->psize;
    env->pin_txn = rec->txnid;
    env->pin_last_pg = st_metapage_last_pg(&m);
    env->pin_bound_pg = rec->live_pages
                            ? st_durable_bound_pages(rec->live_pages,
                                                     rec->psize)
                            : env->pin_last_pg +
                                  ST_DURABLE_ROOM_BYTES / rec->psize;
}

/*
 * Is the pin overdue? When the file has grown since the pinned snapshot
 * and reached its bound, yes. In the map's last part, as soon as it is not
 * on the newest commit: there, only what the commits since the pin freed
 * is left to reuse, and LMDB reuses it only once no reader is older.
 */
static int overdue(const st_env *env, const MDB_envinfo *info)
{
    if (in_last_part(info, env->psize))
        return env->pin_txn < (uint64_t)info->me_last_txnid;
    return past_bound(info->me_last_pgno, env->pin_last_pg, env->pin_bound_pg);
}

void st_durable_pressure(st_env *env)
{
    MDB_envinfo info;
    st_durable_rec rec;
    uint64_t deadline = 0;

    if (mdb_env_info(env->env, &info) || !overdue(env, &info))
        return;
    for (;;) {
        if (rec_load_dir(env->dir, &rec) || rec.psize == 0)
            return;
        pin_room(env, &rec);
        if (rec.seq == env->pressure_gave_up)
            return;
        /* Moved, and the previous pin released too (the syncer ends it
         * just after writing the record): then the pages are free. */
        if (!overdue(env, &info) && !older_pin_held(env, &rec))
            return;
        if (!deadline)
            deadline = now_ms() + ST_DURABLE_PRESSURE_MS;
        else if (now_ms() >= deadline) {
            env->pressure_gave_up = rec.seq;
            return;
        }
        struct timespec ts = { 0, GATE_POLL_NS };
        nanosleep(&ts, NULL);
    }
}
