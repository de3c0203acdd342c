/*
 * st_metapage.c - LMDB meta pages read and written by offset (see the
 * header for the format and why this layer touches it).
 */
#include "storage/st_metapage.h"
#include "storage/st_err.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* MDB_page: mp_pgno (8), mp_pad (2), mp_flags (2), mp_lower, mp_upper. */
#define PG_PGNO 0
#define PG_FLAGS 10
#define PG_HDR 16
#define P_META 0x08
/* MDB_meta, after the page header: magic, version, address, mapsize,
 * two MDB_db of 48 bytes (free, main), last page, txnid. MDB_db: pad
 * (the free db's holds the page size), flags, depth, branch, leaf and
 * overflow page counts, entries, root. */
#define MT_MAGIC (PG_HDR + 0)
#define MT_VERSION (PG_HDR + 4)
#define MT_DB_FREE (PG_HDR + 24)
#define MT_DB_MAIN (PG_HDR + 72)
#define DB_PAD 0
#define DB_ROOT 40
#define MT_LAST_PG (PG_HDR + 120)
#define MT_TXNID (PG_HDR + 128)
#define LMDB_MAGIC 0xBEEFC0DEu
#define LMDB_DATA_VERSION 1u
#define PSIZE_MIN 512u
#define PSIZE_MAX 65536u
#define P_INVALID UINT64_MAX

static uint64_t get64(const st_metapage *m, size_t off)
{
    uint64_t v;

    memcpy(&v, m->b + off, sizeof v);
    return v;
}

static uint32_t get32(const st_metapage *m, size_t off)
{
    uint32_t v;

    memcpy(&v, m->b + off, sizeof v);
    return v;
}

static uint16_t get16(const st_metapage *m, size_t off)
{
    uint16_t v;

    memcpy(&v, m->b + off, sizeof v);
    return v;
}

static void put64(st_metapage *m, size_t off, uint64_t v)
{
    memcpy(m->b + off, &v, sizeof v);
}

int st_metapage_read(int fd, unsigned psize, int slot, st_metapage *out)
{
    off_t at = (off_t)slot * psize;
    size_t got = 0;

    while (got < sizeof out->b) {
        ssize_t n = pread(fd, out->b + got, sizeof out->b - got,
                          at + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            return ST_ECORRUPT;
        got += (size_t)n;
    }
    return 0;
}

int st_metapage_write(int fd, unsigned psize, int slot, const st_metapage *m)
{
    off_t at = (off_t)slot * psize;
    size_t put = 0;

    while (put < sizeof m->b) {
        ssize_t n = pwrite(fd, m->b + put, sizeof m->b - put, at + (off_t)put);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        put += (size_t)n;
    }
    return 0;
}

int st_metapage_check(const st_metapage *m)
{
    unsigned ps = st_metapage_psize(m);

    if (!(get16(m, PG_FLAGS) & P_META) || get32(m, MT_MAGIC) != LMDB_MAGIC ||
        get32(m, MT_VERSION) != LMDB_DATA_VERSION || ps < PSIZE_MIN ||
        ps > PSIZE_MAX || (ps & (ps - 1)))
        return ST_ECORRUPT;
    return 0;
}

uint64_t st_metapage_txnid(const st_metapage *m) { return get64(m, MT_TXNID); }

unsigned st_metapage_psize(const st_metapage *m)
{
    return get32(m, MT_DB_FREE + DB_PAD);
}

uint64_t st_metapage_last_pg(const st_metapage *m)
{
    return get64(m, MT_LAST_PG);
}

uint64_t st_metapage_main_root(const st_metapage *m)
{
    uint64_t root = get64(m, MT_DB_MAIN + DB_ROOT);

    return root == P_INVALID ? ST_METAPAGE_NO_ROOT : root;
}

void st_metapage_relabel(st_metapage *m, int slot, uint64_t txnid)
{
    put64(m, PG_PGNO, (uint64_t)slot);
    put64(m, MT_TXNID, txnid);
}
