/*
 * fault_shim.c - an LD_PRELOAD library that journals what reaches the
 * files of a data directory (LMDB's data.mdb, and data.durable, the
 * durable-snapshot record of storage/st_durable.h) and when each is made
 * durable, so a checker can rebuild them as a power cut would leave them.
 *
 * Every process of a server tree started with LD_PRELOAD=libfault.so and
 * FAULT_DIR=<dir> FAULT_JOURNAL=<path> appends to one journal file
 * (O_APPEND, exactly one write per record, so the journal's order is one
 * global order across processes):
 *   WRITE       after a write to <dir>/data.mdb returned: offset, bytes
 *   SYNC_BEGIN  before fsync/fdatasync/msync is called on it
 *   SYNC_END    after that call returned (its errno, 0 on success)
 *   TRUNCATE    after ftruncate of the file: the new size
 * Each record's flags carry the file's index (FAULT_F_FILE_SHIFT; 0 is
 * data.mdb, 1 data.durable); a barrier covers its own file only. A write
 * recorded before a SYNC_BEGIN returned before that sync started, so once
 * the matching SYNC_END is there it is on disk; nothing else is known to
 * be. t/fault/powercut.py reads the journal.
 *
 * A rename onto a journaled name (a file made elsewhere, flushed and
 * renamed into place, as storage/st_durable.c creates data.mdb) is
 * journaled as a TRUNCATE to 0 and WRITEs of the whole new content, marked
 * durable (FAULT_F_DSYNC): its writer flushed it before the rename, and the
 * rename itself counts as durable on return (the directory flush that
 * follows it is not journaled).
 *
 * Limits: writes through a shared writable mapping (LMDB's MDB_WRITEMAP)
 * are invisible here; msync is journaled so the checker can refuse such a
 * run. Writes through an O_DSYNC/O_SYNC descriptor are marked (flag
 * FAULT_F_DSYNC): each is durable on return.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define FAULT_MAGIC 0x31544c46u /* "FLT1" */
#define FAULT_MAXFD 4096
#define FAULT_IOV_MAX 1024
/* The journaled files, by index. */
static const char *const fault_names[] = { "data.mdb", "data.durable" };
#define FAULT_NFILES (sizeof fault_names / sizeof fault_names[0])

enum fault_type {
    FAULT_WRITE = 1,
    FAULT_SYNC_BEGIN = 2,
    FAULT_SYNC_END = 3,
    FAULT_TRUNCATE = 4,
};

enum fault_sync_kind {
    FAULT_KIND_FSYNC = 1,
    FAULT_KIND_FDATASYNC = 2,
    FAULT_KIND_MSYNC = 3,
};

#define FAULT_F_DSYNC 1
#define FAULT_F_FILE_SHIFT 8
/* tracked[]: 0 not journaled, else file index + 1, with this bit when the
 * descriptor was opened O_DSYNC/O_SYNC */
#define FAULT_TRACK_DSYNC 0x80

/* One journal record header; WRITE records are followed by len bytes. */
struct fault_rec {
    uint32_t magic;
    uint16_t type;
    uint16_t flags;
    uint32_t pid;
    uint32_t len;
    int64_t off; /* WRITE: file offset; SYNC_*: kind / errno; TRUNCATE: size */
    int64_t mono_ns; /* CLOCK_MONOTONIC */
};

static _Atomic unsigned char tracked[FAULT_MAXFD];
static char targets[FAULT_NFILES][PATH_MAX];
static int enabled;
static int jfd = -1;
static pid_t jpid;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_msync)(void *, size_t, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);

static void *sym(const char *name) { return dlsym(RTLD_NEXT, name); }

/* Resolve the next definitions; called by the constructor and lazily by
 * any wrapper that runs before it (another library's constructor). */
static void resolve(void)
{
    real_open = sym("open");
    real_open64 = sym("open64");
    real_openat = sym("openat");
    real_openat64 = sym("openat64");
    real_close = sym("close");
    real_write = sym("write");
    real_writev = sym("writev");
    real_pwrite = sym("pwrite");
    real_pwrite64 = sym("pwrite64");
    real_pwritev = sym("pwritev");
    real_fsync = sym("fsync");
    real_fdatasync = sym("fdatasync");
    real_msync = sym("msync");
    real_ftruncate = sym("ftruncate");
    real_rename = sym("rename");
    real_renameat = sym("renameat");
}

#define REAL(f) (real_##f ? real_##f : (resolve(), real_##f))

__attribute__((constructor)) static void fault_init(void)
{
    const char *dir = getenv("FAULT_DIR");
    char real[PATH_MAX];

    resolve();
    if (!dir || !getenv("FAULT_JOURNAL") || !realpath(dir, real))
        return;
    for (size_t i = 0; i < FAULT_NFILES; i++)
        if ((size_t)snprintf(targets[i], sizeof targets[i], "%s/%s", real,
                             fault_names[i]) >= sizeof targets[i])
            return;
    enabled = 1;
}

static int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The journal, opened once per process (a forked child opens its own, so a
 * child closing inherited descriptors cannot break it). */
static int journal(void)
{
    pid_t me = getpid();

    if (jfd < 0 || jpid != me) {
        int saved = errno;
        jfd = REAL(open)(getenv("FAULT_JOURNAL"),
                         O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        jpid = me;
        errno = saved;
    }
    return jfd;
}

/* Append one record (header + the bytes of iov) with one writev. */
static void record(uint16_t type, uint16_t flags, int64_t off,
                   const struct iovec *iov, int iovcnt, size_t len)
{
    struct iovec v[FAULT_IOV_MAX + 1];
    struct fault_rec r;
    int fd = journal(), saved = errno, n = 1;

    if (fd < 0)
        return;
    memset(&r, 0, sizeof r);
    r.magic = FAULT_MAGIC;
    r.type = type;
    r.flags = flags;
    r.pid = (uint32_t)getpid();
    r.len = (uint32_t)len;
    r.off = off;
    r.mono_ns = mono_ns();
    v[0].iov_base = &r;
    v[0].iov_len = sizeof r;
    /* Only the first len bytes of iov were written. */
    for (int i = 0; i < iovcnt && len > 0 && n <= FAULT_IOV_MAX; i++) {
        size_t take = iov[i].iov_len < len ? iov[i].iov_len : len;
        v[n].iov_base = iov[i].iov_base;
        v[n].iov_len = take;
        len -= take;
        n++;
    }
    if (REAL(writev)(fd, v, n) < 0) {
        /* the checker notices a short journal */
    }
    errno = saved;
}

/*
 * Writes and flush starts are journaled under one lock shared by every
 * process (flock on the journal): a write is performed and recorded
 * before any flush can record its start, so the journal never shows a
 * write after a flush that in fact covered it (LMDB's meta page is visible
 * to other processes through the map the moment pwrite returns, before
 * the wrapper could record it).
 */
static void jlock(int op)
{
    int fd = journal(), saved = errno;

    if (fd >= 0)
        while (flock(fd, op) < 0 && errno == EINTR)
            ;
    errno = saved;
}

static int is_tracked(int fd)
{
    return enabled && fd >= 0 && fd < FAULT_MAXFD && tracked[fd];
}

/* After a successful open: is fd one of the journaled files? */
static void classify(int fd, int flags)
{
    char link[64], path[PATH_MAX];
    ssize_t n;
    int saved = errno;

    if (!enabled || fd < 0 || fd >= FAULT_MAXFD)
        return;
    tracked[fd] = 0;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof path - 1);
    if (n > 0) {
        path[n] = '\0';
        for (size_t i = 0; i < FAULT_NFILES; i++)
            if (strcmp(path, targets[i]) == 0)
                tracked[fd] = (unsigned char)((i + 1) |
                                              ((flags & (O_DSYNC | O_SYNC))
                                                   ? FAULT_TRACK_DSYNC
                                                   : 0));
    }
    errno = saved;
}

static int opened(int fd, const char *path, int flags)
{
    /* Cheap filter before the readlink: the name must end in one of ours. */
    size_t n = strlen(path);

    if (fd >= 0 && fd < FAULT_MAXFD)
        tracked[fd] = 0;
    for (size_t i = 0; fd >= 0 && i < FAULT_NFILES; i++) {
        size_t t = strlen(fault_names[i]);
        if (n >= t && strcmp(path + n - t, fault_names[i]) == 0) {
            classify(fd, flags);
            break;
        }
    }
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;

    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return opened(REAL(open)(path, flags, mode), path, flags);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;

    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return opened((REAL(open64) ? real_open64 : real_open)(path, flags, mode),
                  path, flags);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;

    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return opened(REAL(openat)(dirfd, path, flags, mode), path, flags);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    mode_t mode;

    va_start(ap, flags);
    mode = mode_arg(flags, ap);
    va_end(ap);
    return opened((REAL(openat64) ? real_openat64 : real_openat)(dirfd, path,
                                                                 flags, mode),
                  path, flags);
}

int close(int fd)
{
    if (fd >= 0 && fd < FAULT_MAXFD)
        tracked[fd] = 0;
    return REAL(close)(fd);
}

/* The file index of a tracked descriptor, in record-flags position. */
static uint16_t fflags(int fd)
{
    return (uint16_t)(((tracked[fd] & ~FAULT_TRACK_DSYNC) - 1)
                      << FAULT_F_FILE_SHIFT);
}

static uint16_t wflags(int fd)
{
    return (uint16_t)(fflags(fd) |
                      ((tracked[fd] & FAULT_TRACK_DSYNC) ? FAULT_F_DSYNC : 0));
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    ssize_t r;

    if (!is_tracked(fd))
        return REAL(pwrite)(fd, buf, len, off);
    jlock(LOCK_EX);
    r = REAL(pwrite)(fd, buf, len, off);
    if (r > 0) {
        struct iovec v = { (void *)buf, (size_t)r };
        record(FAULT_WRITE, wflags(fd), off, &v, 1, (size_t)r);
    }
    jlock(LOCK_UN);
    return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    int tracked_ = is_tracked(fd);
    ssize_t r;

    if (tracked_)
        jlock(LOCK_EX);
    r = (REAL(pwrite64) ? real_pwrite64 : real_pwrite)(fd, buf, len, off);
    if (r > 0 && tracked_) {
        struct iovec v = { (void *)buf, (size_t)r };
        record(FAULT_WRITE, wflags(fd), off, &v, 1, (size_t)r);
    }
    if (tracked_)
        jlock(LOCK_UN);
    return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    ssize_t r;

    if (!is_tracked(fd))
        return REAL(pwritev)(fd, iov, cnt, off);
    jlock(LOCK_EX);
    r = REAL(pwritev)(fd, iov, cnt, off);
    if (r > 0)
        record(FAULT_WRITE, wflags(fd), off, iov, cnt, (size_t)r);
    jlock(LOCK_UN);
    return r;
}

ssize_t write(int fd, const void *buf, size_t len)
{
    off_t off = 0;
    ssize_t r;

    if (!is_tracked(fd))
        return REAL(write)(fd, buf, len);
    jlock(LOCK_EX);
    off = lseek(fd, 0, SEEK_CUR);
    r = REAL(write)(fd, buf, len);
    if (r > 0 && off >= 0) {
        struct iovec v = { (void *)buf, (size_t)r };
        record(FAULT_WRITE, wflags(fd), off, &v, 1, (size_t)r);
    }
    jlock(LOCK_UN);
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    off_t off;
    ssize_t r;

    if (!is_tracked(fd))
        return REAL(writev)(fd, iov, cnt);
    jlock(LOCK_EX);
    off = lseek(fd, 0, SEEK_CUR);
    r = REAL(writev)(fd, iov, cnt);
    if (r > 0 && off >= 0)
        record(FAULT_WRITE, wflags(fd), off, iov, cnt, (size_t)r);
    jlock(LOCK_UN);
    return r;
}

int ftruncate(int fd, off_t len)
{
    int r = REAL(ftruncate)(fd, len);

    if (r == 0 && is_tracked(fd))
        record(FAULT_TRUNCATE, fflags(fd), len, NULL, 0, 0);
    return r;
}

static int barrier(int fd, int kind, int (*fn)(int))
{
    uint16_t ff;
    int r, e;

    if (!is_tracked(fd))
        return fn(fd);
    ff = fflags(fd);
    jlock(LOCK_EX);
    record(FAULT_SYNC_BEGIN, ff, kind, NULL, 0, 0);
    jlock(LOCK_UN);
    r = fn(fd);
    e = errno;
    record(FAULT_SYNC_END, ff, r == 0 ? 0 : (e ? e : EIO), NULL, 0, 0);
    errno = e;
    return r;
}

int fsync(int fd) { return barrier(fd, FAULT_KIND_FSYNC, REAL(fsync)); }

int fdatasync(int fd)
{
    return barrier(fd, FAULT_KIND_FDATASYNC, REAL(fdatasync));
}

int msync(void *addr, size_t len, int flags)
{
    int r, e;

    if (!enabled || !(flags & MS_SYNC))
        return REAL(msync)(addr, len, flags);
    record(FAULT_SYNC_BEGIN, 0, FAULT_KIND_MSYNC, NULL, 0, 0);
    r = REAL(msync)(addr, len, flags);
    e = errno;
    record(FAULT_SYNC_END, 0, r == 0 ? 0 : (e ? e : EIO), NULL, 0, 0);
    errno = e;
    return r;
}

#define FAULT_COPY_CHUNK (1 << 20)

/* After a rename onto `to`: journal the new content if it is ours. */
static void renamed(int dirfd, const char *to)
{
    static char buf[FAULT_COPY_CHUNK];
    char real[PATH_MAX], link[64], dir[PATH_MAX];
    int saved = errno, fd;

    if (!enabled)
        return;
    if (to[0] != '/' && dirfd != AT_FDCWD) {
        ssize_t n;
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        if ((n = readlink(link, dir, sizeof dir - 1)) <= 0)
            return;
        dir[n] = '\0';
        if ((size_t)snprintf(real, sizeof real, "%s/%s", dir, to) >=
            sizeof real)
            return;
        to = real;
    }
    if (!realpath(to, dir)) {
        errno = saved;
        return;
    }
    for (size_t i = 0; i < FAULT_NFILES; i++) {
        uint16_t ff = (uint16_t)(i << FAULT_F_FILE_SHIFT);
        int64_t off = 0;
        ssize_t n;

        if (strcmp(dir, targets[i]) != 0)
            continue;
        if ((fd = REAL(open)(dir, O_RDONLY | O_CLOEXEC)) < 0)
            break;
        jlock(LOCK_EX);
        record(FAULT_TRUNCATE, ff, 0, NULL, 0, 0);
        while ((n = read(fd, buf, sizeof buf)) > 0) {
            struct iovec v = { buf, (size_t)n };
            record(FAULT_WRITE, ff | FAULT_F_DSYNC, off, &v, 1, (size_t)n);
            off += n;
        }
        jlock(LOCK_UN);
        REAL(close)(fd);
        break;
    }
    errno = saved;
}

int rename(const char *from, const char *to)
{
    int r = REAL(rename)(from, to);

    if (r == 0)
        renamed(AT_FDCWD, to);
    return r;
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    int r = REAL(renameat)(fromfd, from, tofd, to);

    if (r == 0)
        renamed(tofd, to);
    return r;
}
