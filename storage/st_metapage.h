/*
 * st_metapage.h - what this layer knows of LMDB's on-disk meta pages, and
 * the few reads and writes of them that the durable-snapshot scheme
 * (st_durable.h) needs. Internal to storage/.
 *
 * LMDB (0.9, data format version 1) starts data.mdb with two meta pages,
 * page 0 and page 1. Each holds a page header and an MDB_meta: the roots of
 * the free-page and main databases, the last page in use and the id of the
 * transaction that wrote it. A commit of transaction T rewrites meta page
 * T & 1 in place, so the two pages alternate; an opener takes the one
 * with the higher id. The offsets below are that format (mdb.c's MDB_page
 * and MDB_meta on a 64-bit build); st_metapage_check refuses any page that
 * does not carry its markers, and t/unit/check_st_durable.c pins them
 * against the installed liblmdb.
 */
#ifndef ST_METAPAGE_H
#define ST_METAPAGE_H

#include <stddef.h>
#include <stdint.h>

#define ST_METAPAGE_SLOTS 2
/* Page header (16 bytes) + MDB_meta (136): all a meta page holds. */
#define ST_METAPAGE_BYTES 152

typedef struct st_metapage {
    uint8_t b[ST_METAPAGE_BYTES];
} st_metapage;

/*
 * Read meta page `slot` (0 or 1) of the data file open on fd, whose page
 * size is psize (st_metapage_psize of slot 0 gives it; slot 0 can be read
 * with any psize). 0, an errno, or ST_ECORRUPT for a short file.
 */
int st_metapage_read(int fd, unsigned psize, int slot, st_metapage *out);

/* Write *m as meta page `slot`; only the bytes LMDB's meta uses. */
int st_metapage_write(int fd, unsigned psize, int slot, const st_metapage *m);

/*
 * 0 if *m is a meta page of a format this layer knows (the meta flag,
 * LMDB's magic, data version 1, a sane page size), else ST_ECORRUPT.
 */
int st_metapage_check(const st_metapage *m);

uint64_t st_metapage_txnid(const st_metapage *m);
unsigned st_metapage_psize(const st_metapage *m);
uint64_t st_metapage_last_pg(const st_metapage *m);
/* The main database's root page; ST_METAPAGE_NO_ROOT when it is empty. */
uint64_t st_metapage_main_root(const st_metapage *m);
#define ST_METAPAGE_NO_ROOT UINT64_MAX

/* Make *m meta page `slot` naming transaction `txnid` (same trees). */
void st_metapage_relabel(st_metapage *m, int slot, uint64_t txnid);

#endif
