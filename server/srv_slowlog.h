/*
 * srv_slowlog.h - the slow log of every worker (SLOWLOG GET, LEN, RESET):
 * one shared anonymous ring of the commands that ran at least
 * slowlog-log-slower-than microseconds, newest first, at most
 * slowlog-max-len of them (and at most SRV_SLOWLOG_CAP: a longer setting
 * is accepted and stored, the ring keeps that many).
 *
 * Who may touch what:
 * - The master creates the region before it forks; children inherit it.
 * - Writers (workers, after a slow command) and readers (SLOWLOG in any
 *   worker) take the region's lock (shm_lock: robust, process-shared)
 *   and hold it only to copy an entry in or out: no allocation, no
 *   logging, no system calls under it.
 * - An entry is written with its id 0 first and its id last, so the
 *   entry a writer that died half way left behind is never shown; the
 *   lock's repair needs to do nothing more.
 * Ids count from 0 across workers and are not reused by RESET, as Redis.
 */
#ifndef SRV_SLOWLOG_H
#define SRV_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_resp.h"

#define SRV_SLOWLOG_MAGIC 0x474c574f4c534c4cull /* "LLSLOWLG" */
#define SRV_SLOWLOG_VERSION 1
/* Entries the ring holds at most. */
#define SRV_SLOWLOG_CAP 1024
/* As Redis: at most this many arguments (the last says how many more),
 * each cut at this many bytes (with how many more). */
#define SRV_SLOWLOG_ARGS 32
#define SRV_SLOWLOG_ARG_BYTES 128
#define SRV_SLOWLOG_NAME_MAX 64

typedef struct srv_slowlog srv_slowlog;

/* One entry as SLOWLOG GET shows it; args points into the entry copy. */
typedef struct srv_slowlog_entry {
    uint64_t id;
    int64_t time_s; /* when it ran (seconds since the epoch) */
    int64_t duration_us;
    int argc; /* arguments shown (with the "more" one) */
    srv_slice argv[SRV_SLOWLOG_ARGS];
    char addr[SRV_SLOWLOG_NAME_MAX];
    char name[SRV_SLOWLOG_NAME_MAX];
    char blob[SRV_SLOWLOG_ARGS * (SRV_SLOWLOG_ARG_BYTES + 48)];
} srv_slowlog_entry;

/* Map the ring (the master, before fork); it becomes the process's. NULL
 * with errno set, or a pthread errno in errno when the lock fails. */
srv_slowlog *srv_slowlog_create(void);
void srv_slowlog_destroy(srv_slowlog **s);
srv_slowlog *srv_slowlog_region(void);

/*
 * Log a command of `argc` arguments `argv` that ran at `time_s` (seconds
 * since the epoch) for `duration_us`, sent by client `addr` named `name`,
 * keeping at most `max_len` entries. A no-op without a region or when the
 * lock cannot be had.
 */
void srv_slowlog_add(const srv_slice *argv, int argc, int64_t time_s,
                     int64_t duration_us, const char *addr, const char *name,
                     long long max_len);

/* The number of entries (SLOWLOG LEN), at most `max_len`. */
long long srv_slowlog_len(long long max_len);

/*
 * Walk the entries newest first: start with *cursor = UINT64_MAX; each
 * call copies the newest entry older than *cursor (among the newest
 * `max_len`) into *e and sets *cursor to its id. 1 if there was one, 0
 * if not. Entries logged meanwhile do not disturb the walk.
 */
int srv_slowlog_next(uint64_t *cursor, long long max_len, srv_slowlog_entry *e);

/* Drop every entry (SLOWLOG RESET); ids go on. */
void srv_slowlog_reset(void);

#endif
