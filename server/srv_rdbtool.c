/*
 * srv_rdbtool.c - the --import-rdb and --export-rdb modes (srv_rdbtool.h):
 * arguments, the data directory's exclusivity, progress and summaries
 * around srv_rdbfile's import and export.
 */
#include "server/srv_rdbtool.h"
#include "rdb/rdb_io.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_rdbfile.h"
#include "server/srv_util.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_WINDOW (4u << 20)
#define WRITE_CHUNK (1u << 20)
#define PROGRESS_TTY_MS 250
#define PROGRESS_LOG_MS 5000
#define MS_PER_S 1000.0
#define BYTES_PER_MB (1024.0 * 1024.0)
#define PERCENT 100.0
#define LMDB_LOCK_FILE "/lock.mdb"
#define TMP_SUFFIX ".tmp"
#define ERR_TEXT 1024

static const char *const type_names[] = {
    [ST_TYPE_STRING] = "strings", [ST_TYPE_LIST] = "lists",
    [ST_TYPE_SET] = "sets",       [ST_TYPE_ZSET] = "sorted sets",
    [ST_TYPE_HASH] = "hashes",    [ST_TYPE_STREAM] = "streams",
};

int srv_rdbtool_take_args(int *argc, char **argv, const char **path)
{
    int mode = SRV_RDBTOOL_NONE, out = 1;

    *path = NULL;
    for (int i = 1; i < *argc; i++) {
        int m = !strcmp(argv[i], "--import-rdb")   ? SRV_RDBTOOL_IMPORT
                : !strcmp(argv[i], "--export-rdb") ? SRV_RDBTOOL_EXPORT
                                                   : SRV_RDBTOOL_NONE;
        if (m == SRV_RDBTOOL_NONE) {
            argv[out++] = argv[i];
            continue;
        }
        if (mode != SRV_RDBTOOL_NONE) {
            *path = "give only one of --import-rdb and --export-rdb";
            return -1;
        }
        if (i + 1 >= *argc || !strncmp(argv[i + 1], "--", 2)) {
            *path = "--import-rdb and --export-rdb need a file name";
            return -1;
        }
        mode = m;
        *path = argv[++i];
    }
    *argc = out;
    argv[out] = NULL;
    return mode;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "larder-server: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

/*
 * Does another process have the LMDB environment of `dir` open? LMDB
 * keeps a shared lock on the first byte of its lock file for as long as
 * a process has the environment open; *pid gets one holder.
 */
static int dir_in_use(const char *dir, pid_t *pid)
{
    char path[PATH_MAX];
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1
    };
    int fd, busy = 0;

    if ((size_t)snprintf(path, sizeof path, "%s%s", dir, LMDB_LOCK_FILE) >=
        sizeof path)
        return 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK) {
        busy = 1;
        *pid = fl.l_pid;
    }
    close(fd);
    return busy;
}

static int open_env(st_env **env)
{
    int rc = srv_heritage_env_open(1, env);

    if (rc)
        fail("can't open the database in '%s': %s", srv_her.cfg->dir,
             rc > 0 ? strerror(rc) : st_strerror(rc));
    return rc;
}

static void by_type(const srv_rdbfile_stats *st, char *out, size_t cap)
{
    size_t o = 0;

    out[0] = '\0';
    for (int t = ST_TYPE_STRING; t <= ST_TYPE_STREAM && o < cap; t++)
        if (st->by_type[t])
            o += (size_t)snprintf(out + o, cap - o, "%s%s %" PRIu64,
                                  o ? ", " : "", type_names[t], st->by_type[t]);
}

/* ---- import ---- */

typedef struct progress {
    int tty;
    int64_t start, last;
    int shown;
} progress;

static void show_progress(void *ctx, const srv_rdbfile_stats *st,
                          uint64_t offset, uint64_t size)
{
    progress *p = ctx;
    int64_t now = srv_util_monotonic_ms();

    if (now - p->last < (p->tty ? PROGRESS_TTY_MS : PROGRESS_LOG_MS))
        return;
    p->last = now;
    p->shown = 1;
    fprintf(stderr, "%s  %" PRIu64 " keys, %.1f of %.1f MB (%.0f%%)%s",
            p->tty ? "\r" : "", st->keys, (double)offset / BYTES_PER_MB,
            (double)size / BYTES_PER_MB,
            size ? PERCENT * (double)offset / (double)size : PERCENT,
            p->tty ? "" : "\n");
    fflush(stderr);
}

static int run_import(const char *path)
{
    st_env *env = NULL;
    rdb_reader r;
    srv_rdbfile_stats st;
    progress p = { .tty = isatty(STDERR_FILENO) };
    char err[ERR_TEXT], types[ERR_TEXT];
    struct stat sb;
    pid_t holder;
    int fd, rc;

    if (dir_in_use(srv_her.cfg->dir, &holder)) {
        fail("the data directory '%s' is in use by process %d (a running "
             "larder-server?): stop it before importing",
             srv_her.cfg->dir, (int)holder);
        return 1;
    }
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb)) {
        fail("can't open '%s': %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (open_env(&env)) {
        close(fd);
        return 1;
    }
    if ((rc = rdb_reader_fd(&r, fd, READ_WINDOW, (uint64_t)sb.st_size,
                            (size_t)srv_her.cfg->proto_max_bulk_len))) {
        fail("out of memory");
        goto out;
    }
    fprintf(stderr, "larder-server: importing '%s' (%.1f MB) into '%s'\n", path,
            (double)sb.st_size / BYTES_PER_MB, srv_her.cfg->dir);
    p.start = p.last = srv_util_monotonic_ms();
    rc = srv_rdbfile_import(env, &r, srv_util_mstime(), &st, show_progress, &p,
                            err, sizeof err);
    if (p.shown && p.tty)
        fprintf(stderr, "\n");
    if (rc == 0 && (rc = st_env_sync(env)))
        snprintf(err, sizeof err, "flushing: %s", strerror(rc));
    rdb_reader_fini(&r);
    if (rc) {
        fail("%s: %s; nothing was imported", path, err);
        goto out;
    }
    double secs = (double)(srv_util_monotonic_ms() - p.start) / MS_PER_S;
    if (secs <= 0)
        secs = 1.0 / MS_PER_S;
    by_type(&st, types, sizeof types);
    fprintf(stderr,
            "larder-server: imported %" PRIu64 " keys (%s) into %" PRIu64
            " database%s from '%s' (RDB version %d, %.1f MB) in %.2f s: "
            "%.0f keys/s, %.1f MB/s; %" PRIu64 " with a TTL; left out %" PRIu64
            " already expired and %" PRIu64 " empty; replaced %" PRIu64
            " keys that were there\n",
            st.keys, st.keys ? types : "none", st.dbs, st.dbs == 1 ? "" : "s",
            path, st.version, (double)sb.st_size / BYTES_PER_MB, secs,
            (double)st.keys / secs, (double)sb.st_size / BYTES_PER_MB / secs,
            st.expires, st.expired, st.empty, st.replaced);
out:
    st_env_close(&env);
    close(fd);
    return rc ? 1 : 0;
}

/* ---- export ---- */

static int run_export(const char *path)
{
    char tmp[PATH_MAX], types[ERR_TEXT];
    st_env *env = NULL;
    rdb_writer w;
    srv_rdbfile_stats st;
    int64_t start = srv_util_monotonic_ms();
    int fd, rc;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s%s", path, TMP_SUFFIX) >=
        sizeof tmp) {
        fail("'%s': file name too long", path);
        return 1;
    }
    if (open_env(&env))
        return 1;
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        fail("can't create '%s': %s", tmp, strerror(errno));
        st_env_close(&env);
        return 1;
    }
    rdb_writer_fd(&w, fd, WRITE_CHUNK, 1);
    rc = srv_rdbfile_write(env, srv_util_mstime(), &w, &st);
    uint64_t bytes = rdb_writer_bytes(&w);
    rdb_writer_fini(&w);
    st_env_close(&env);
    if (rc == 0 && fsync(fd))
        rc = errno;
    if (close(fd) && rc == 0)
        rc = errno;
    if (rc == 0 && rename(tmp, path))
        rc = errno;
    if (rc) {
        unlink(tmp);
        fail("exporting to '%s': %s", path,
             rc > 0 ? strerror(rc) : st_strerror(rc));
        return 1;
    }
    double secs = (double)(srv_util_monotonic_ms() - start) / MS_PER_S;
    by_type(&st, types, sizeof types);
    fprintf(stderr,
            "larder-server: exported %" PRIu64 " keys (%s) from %" PRIu64
            " database%s to '%s' (RDB version 10, %.1f MB) in %.2f s; "
            "%" PRIu64 " with a TTL\n",
            st.keys, st.keys ? types : "none", st.dbs, st.dbs == 1 ? "" : "s",
            path, (double)bytes / BYTES_PER_MB, secs, st.expires);
    return 0;
}

int srv_rdbtool_run(int mode, const char *path)
{
    return mode == SRV_RDBTOOL_IMPORT ? run_import(path) : run_export(path);
}
