/*
 * st_durable.h - power-cut safety for MDB_NOSYNC commits: the syncer's
 * pinned, flushed snapshot, a record of its meta page beside data.mdb, and
 * the restore of that meta page at boot when the page cache was lost.
 *
 * DESIGN. Commits are MDB_NOSYNC: each writes its pages and then its meta
 * page into the page cache, and only the syncer's flush (fdatasync) makes
 * anything durable. The kernel writes dirty pages back in any order, so a
 * power cut leaves the last flushed state plus any subset of the pages
 * written since. Measured before this module (issue 16, t/fault/: 3 runs
 * x 100 such cuts per level, each bad image sorted by whether putting the
 * flushed meta pages back would have saved it): 58% of the cuts under
 * `sync always` and 89% under `everysec` left an image that does not open
 * or lacks acknowledged keys, for three reasons:
 *   1. pages of the flushed snapshot were overwritten (always: 27% of the
 *      cuts, everysec: 77%): LMDB reuses a page once no reader holds a
 *      snapshot older than the transaction that freed it, and the flushed
 *      snapshot is held by no one;
 *   2. else the flushed snapshot's meta page was overwritten (17%, 12%):
 *      commit T rewrites meta page T & 1, so two commits after a flush
 *      replace it;
 *   3. else a newer commit's meta page reached the disk before its pages
 *      did (14%, 0.3%), and LMDB opens the newest meta page it finds.
 * The scheme answers each:
 *   1. Pin. A flush first takes a read transaction on the newest snapshot
 *      S (holding LMDB's write lock for that moment, so S's meta page can
 *      be copied whole), then flushes, then writes the record, and only
 *      then ends the read transaction that pinned the previous durable
 *      snapshot. So at every instant some reader holds a snapshot no newer
 *      than the one the durable record names (a reader protects every
 *      page freed after its snapshot), and none of that snapshot's pages
 *      is rewritten before a newer one is durable and recorded.
 *   2-3. Record. ST_DURABLE_FILE holds two slots written alternately, each
 *      a checksummed copy of S's meta page with S's id, a hash of S's main
 *      root page, this boot's id and the pinning process's pid, flushed
 *      after data.mdb. A torn record fails its checksum and the other slot
 *      (the previous durable snapshot, still pinned until this record is
 *      flushed) is used.
 *   Restore. At boot (st_durable_boot), when the record's boot id is not
 *   this boot's (/proc/sys/kernel/random/boot_id), the page cache was lost:
 *   the recorded meta page is written back into slot S & 1 and a copy
 *   labelled S - 1 into the other slot, and LMDB opens S. When the boot id
 *   is this boot's (a process crash or a restart), the page cache holds
 *   every commit in order and nothing is restored, so kill -9 loses no
 *   commit. A record that does not match data.mdb (the file's newest meta
 *   is older than the record, or S's root page hashes differently: another
 *   file was put in place) is left alone and reported.
 *   Creation. LMDB writes a new file's first meta pages unflushed, so a
 *   new environment is made aside, flushed and renamed into place.
 *   Acknowledgement. The syncer publishes S as durable only after the
 *   record's flush, so `sync always` replies wait for two flushes (data,
 *   then the small record).
 *   Gaps. The pin lives in the syncer's reader slot, so two more rules
 *   keep it across the syncer's life: a process's first write transaction
 *   waits until the record of this boot names a snapshot that its pinning
 *   process holds (st_env_opts.boot_id; the syncer's first flush at boot,
 *   or at once after a restart), and st_env_reader_check leaves dead
 *   readers' slots alone while the recorded pinner is dead, so a crashed
 *   (or stopped) syncer's pin holds until its successor has recorded its
 *   own. Not covered: a power cut within the instant between the reaper
 *   seeing the syncer alive and clearing dead slots, if the syncer dies in
 *   that instant too.
 *   Cost. While S is pinned, no page freed since can be reused, not even
 *   the copies later commits made and dropped again (LMDB reuses by
 *   transaction age, not by liveness): every page a commit allocates is a
 *   fresh one, which the next flush must write (without the pin the same
 *   few pages are rewritten in the page cache and written once), and
 *   data.mdb holds what the commits of about two flushes allocate. So the
 *   pin moves by volume: between `everysec` beats the syncer flushes as
 *   soon as the commits since the pin freed (and so allocated about as
 *   much again) ST_DURABLE_EARLY_BYTES, or after ST_DURABLE_EARLY_COMMITS
 *   commits or that much growth (st_durable_due): the file holds about
 *   twice that past the live data (SET -P16 over 100k keys for 30 s: 110
 *   MiB against 343 MiB when the pin moved only on the beat, after 256
 *   commits or 4 MB of growth, at the same throughput; a 4 MiB volume
 *   made 92 MiB at 0.93x: PERFORMANCE.md, "The durable pin's file
 *   size"). Each record carries its snapshot's live pages (the file less its
 *   freelist), and when the disk cannot keep up, commits wait for the pin
 *   to move once the file has grown past the pinned snapshot and reached
 *   st_durable_bound_pages (ST_DURABLE_ROOM_LIVE x live +
 *   ST_DURABLE_ROOM_BYTES): past it, the file grows by at most what the
 *   workers commit between two flushes.
 * Everything here runs in the master at boot and in the syncer (a process,
 * or a thread of the reaper); the handle is single-threaded.
 */
#ifndef ST_DURABLE_H
#define ST_DURABLE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_env.h"

/* The record, beside data.mdb in the environment's directory. */
#define ST_DURABLE_FILE "data.durable"
/* A new environment is made here (a directory beside data.mdb), flushed,
 * and renamed into place. */
#define ST_DURABLE_NEW_DIR "data.new"
#define ST_DURABLE_DIR_MODE 0700
/* A process's first write waits this long for the pin (ST_ENOPIN after). */
#define ST_DURABLE_GATE_MS 5000
/* Commits wait (up to ST_DURABLE_PRESSURE_MS) while data.mdb has grown
 * past the durable snapshot and reached ST_DURABLE_ROOM_LIVE times its live
 * pages plus ST_DURABLE_ROOM_BYTES (st_durable_bound_pages): the pin's room
 * is bounded even when the disk cannot keep up. */
#define ST_DURABLE_ROOM_BYTES (128u << 20)
#define ST_DURABLE_ROOM_LIVE 2
/* ... and, in the last 1/ST_DURABLE_MAP_PART of the map (maxdisk), while
 * the pin is older than the newest commit: there, the pages it holds are
 * all there is to reuse. */
#define ST_DURABLE_MAP_PART 8
#define ST_DURABLE_PRESSURE_MS 2000

typedef struct st_durable st_durable;

enum st_durable_state {
    ST_DURABLE_FRESH,     /* no record (a new or pre-record directory) */
    ST_DURABLE_SAME_BOOT, /* the record is this boot's: nothing to do */
    ST_DURABLE_CLEAN,     /* another boot; data.mdb opens the recorded
                           * snapshot as it is */
    ST_DURABLE_RESTORED,  /* another boot: the recorded meta restored */
    ST_DURABLE_MISMATCH,  /* another boot; the record is not data.mdb's:
                           * left as it is */
};

typedef struct st_durable_report {
    int state;             /* enum st_durable_state */
    uint64_t recorded_txn; /* the record's snapshot (0: none) */
    uint64_t newest_txn;   /* data.mdb's newest meta page before a
                            * restore (another boot only) */
    uint64_t open_txn;     /* the newest transaction after boot, now
                            * recorded and durable */
} st_durable_report;

/* "fresh", "same-boot", "clean", "restored", "mismatch". */
const char *st_durable_state_name(int state);

/*
 * This boot's id (the kernel's random boot_id), NUL-terminated into buf
 * (at least ST_BOOT_ID_MAX bytes). 0 or an errno.
 */
int st_durable_boot_id(char *buf, size_t size);

/*
 * The master's boot step, before any other process opens the directory:
 * restore the recorded snapshot if the record is another boot's (see the
 * design above), or create the environment whole if there is none (made
 * in ST_DURABLE_NEW_DIR, flushed, renamed into place: a power cut during
 * the creation leaves no data.mdb rather than half of one), open it with
 * opts (flushed commits;
 * opts->boot_id required), flush and record its newest snapshot with this
 * boot's id, close it. *out says what was found and done. 0, EINVAL
 * without a boot id, an errno, or st_env_open's codes.
 */
int st_durable_boot(const st_env_opts *opts, st_durable_report *out);

/*
 * The syncer's handle on env (opened with a boot id): pins the newest
 * snapshot, flushes and records it (so it is durable when this returns).
 * *out owned by the caller until st_durable_close. 0 or an error code.
 */
int st_durable_open(st_env *env, st_durable **out);

/*
 * One flush cycle: pin the newest snapshot, flush data.mdb, write and
 * flush the record, release the previous pin. *txnid gets the snapshot
 * now durable (the previous one, unchanged, when nothing was committed
 * since). On failure the previous durable snapshot stays pinned and
 * recorded. 0, an errno (the flush's), or an error code.
 */
int st_durable_flush(st_durable *d, uint64_t *txnid);

/*
 * Whether the pin costs too much to wait for the next beat (the design's
 * "Cost"): since it was taken, ST_DURABLE_EARLY_COMMITS commits, or
 * ST_DURABLE_EARLY_BYTES of growth or of pages freed (read from LMDB's
 * freelist, newest records only), or growth past the bound, or, in the
 * map's last 1/ST_DURABLE_MAP_PART, any commit. *poll_ms gets how soon to
 * ask again. No system call.
 */
int st_durable_due(st_durable *d, unsigned *poll_ms);
#define ST_DURABLE_EARLY_COMMITS 256
#define ST_DURABLE_EARLY_BYTES (16u << 20)
#define ST_DURABLE_POLL_MS 10
#define ST_DURABLE_FULL_POLL_MS 1

/* The file's bound, in pages, for a snapshot of live_pages pages in use:
 * ST_DURABLE_ROOM_LIVE x live_pages + ST_DURABLE_ROOM_BYTES. */
uint64_t st_durable_bound_pages(uint64_t live_pages, unsigned psize);

/* The snapshot the last successful flush made durable. */
uint64_t st_durable_txn(const st_durable *d);

/*
 * End the handle; NULL *d. keep_pin: leave the pinned snapshot's reader
 * slot taken (until the environment is closed or the process exits, and
 * after that until st_env_reader_check may clear it): the syncer stops so,
 * as writers stopping beside it may still commit after its last flush.
 */
void st_durable_close(st_durable **d, int keep_pin);

#endif
