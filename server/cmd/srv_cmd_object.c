/*
 * srv_cmd_object.c - introspection: OBJECT ENCODING / REFCOUNT /
 * IDLETIME / FREQ / HELP (Redis's answers for the same data:
 * srv_objinfo.h; idle times from the shared access clock), MEMORY USAGE /
 * STATS / DOCTOR / MALLOC-STATS / PURGE / HELP (this worker's allocator,
 * Redis's field names), and LOLWUT.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_objinfo.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define KIB 1024
#define DEFAULT_SAMPLES 5
#define PERCENT 100.0
#define LOLWUT_VERSION_MAX 64
#define LOLWUT_COLS_DEFAULT 66
#define LOLWUT_ROWS_DEFAULT 4
#define LOLWUT_DIM_MAX 1000
#define JAR_WIDTH 7
#define JAR_ROWS 4

static const char ERR_NO_LFU[] =
    "ERR An LFU maxmemory policy is not selected, access frequency not "
    "tracked. Please note that when switching between policies at runtime "
    "LRU and LFU data will take some time to adjust.";

/* argv[2] looked up without counting as an access: 1 found, 0 absent
 * (the null reply sent), -1 after an error reply. */
static int peek_or_null(srv_conn *c, struct st_txn **t, st_keyref *k, st_rec *r)
{
    int rc;

    if (!(*t = srv_txn_read_or_reply(c)))
        return -1;
    srv_key_ref(c, 2, k);
    rc = st_keyspace_peek(*t, k, srv_cmd_now(c), r);
    if (rc == ST_ENOTFOUND) {
        srv_reply_null(c);
        return 0;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    return 1;
}

void srv_cmd_object_encoding(srv_conn *c)
{
    struct st_txn *t;
    const char *name;
    st_keyref k;
    st_rec r;
    int rc;

    if (peek_or_null(c, &t, &k, &r) <= 0)
        return;
    if ((rc = srv_objinfo_encoding(t, &k, &r, srv_cmd_now(c), &name)))
        srv_txn_error(c, rc);
    else
        srv_reply_bulk_cstr(c, name);
}

void srv_cmd_object_refcount(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_rec r;

    if (peek_or_null(c, &t, &k, &r) > 0)
        srv_reply_int(c, srv_objinfo_refcount(t, &r));
}

void srv_cmd_object_idletime(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_rec r;

    if (peek_or_null(c, &t, &k, &r) > 0)
        srv_reply_int(c, (long long)st_keyspace_idle(c->worker->env, &k,
                                                     srv_cmd_now(c)));
}

/* Access frequencies are tracked under an LFU maxmemory policy only,
 * which larder (noeviction) never runs. */
void srv_cmd_object_freq(srv_conn *c)
{
    struct st_txn *t;
    st_keyref k;
    st_rec r;

    if (peek_or_null(c, &t, &k, &r) > 0)
        srv_reply_error(c, ERR_NO_LFU);
}

void srv_cmd_object_help(srv_conn *c)
{
    static const char *const help[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    The encoding Redis would use for the value at <key>.",
        "FREQ <key>",
        "    The logarithmic access frequency of <key> (LFU policies only).",
        "IDLETIME <key>",
        "    Seconds since <key> was last read or written (approximate).",
        "REFCOUNT <key>",
        "    References to the value at <key>.",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* ------------------------------------------------------------------ */
/* MEMORY */

void srv_cmd_memory_usage(srv_conn *c)
{
    long long samples = DEFAULT_SAMPLES;
    struct st_txn *t;
    uint64_t bytes;
    st_keyref k;
    st_rec r;
    int rc;

    for (int j = 3; j < c->argc; j++) {
        if (srv_util_streq(c->argv[j].ptr, c->argv[j].len, "samples") &&
            j + 1 < c->argc) {
            if (srv_args_ll_or_reply(c, &c->argv[j + 1], &samples))
                return;
            if (samples < 0) {
                srv_reply_error(c, SRV_ERR_SYNTAX);
                return;
            }
            j++;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (peek_or_null(c, &t, &k, &r) <= 0)
        return;
    if ((rc = srv_objinfo_memory(t, &k, &r, srv_cmd_now(c), samples, &bytes)))
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, (long long)bytes);
}

/* Resident bytes of this process (/proc/self/statm). */
static long long resident_bytes(void)
{
    long long size = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    if (f) {
        if (fscanf(f, "%lld %lld", &size, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE);
}

typedef struct mem_figures {
    long long peak, allocated, active, resident, rss, keys;
} mem_figures;

static void figures(srv_conn *c, mem_figures *m, uint64_t *db_keys,
                    unsigned ndb)
{
    struct mallinfo2 mi = mallinfo2();
    struct rusage ru;
    struct st_txn *t = srv_txn_read_or_reply(c);

    memset(m, 0, sizeof *m);
    m->allocated = (long long)(mi.uordblks + mi.hblkhd);
    m->active = (long long)(mi.arena + mi.hblkhd);
    m->rss = resident_bytes();
    m->resident = m->rss;
    m->peak = getrusage(RUSAGE_SELF, &ru) == 0 ? (long long)ru.ru_maxrss * KIB
                                               : m->rss;
    for (unsigned db = 0; db < ndb; db++) {
        uint64_t keys = 0, exp = 0;
        if (t)
            st_keyspace_dbsize(t, db, &keys, &exp);
        db_keys[db] = keys;
        m->keys += (long long)keys;
    }
}

static void pair_int(srv_conn *c, const char *name, long long v)
{
    srv_reply_bulk_cstr(c, name);
    srv_reply_int(c, v);
}

static void pair_double(srv_conn *c, const char *name, double v)
{
    srv_reply_bulk_cstr(c, name);
    srv_reply_double(c, v);
}

static double ratio(long long a, long long b) { return b ? (double)a / b : 0; }

/*
 * MEMORY STATS: Redis's fields, for this worker process (its allocator,
 * its resident memory); the data lives in LMDB and the shared cache, so
 * the per-database hash table overheads Redis reports are 0 here.
 */
void srv_cmd_memory_stats(srv_conn *c)
{
    static const char *const zero_fields[] = {
        "replication.backlog", "clients.slaves", "clients.normal",
        "cluster.links",       "aof.buffer",     "lua.caches",
        "functions.caches",
    };
    unsigned ndb = (unsigned)srv_her.cfg->databases, used = 0;
    uint64_t *db_keys = calloc(ndb ? ndb : 1, sizeof *db_keys);
    mem_figures m;

    if (!db_keys) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    figures(c, &m, db_keys, ndb);
    for (unsigned db = 0; db < ndb; db++)
        used += db_keys[db] > 0;
    srv_reply_map(c, 3 + (long long)(sizeof zero_fields / sizeof *zero_fields) +
                         used + 17);
    pair_int(c, "peak.allocated", m.peak);
    pair_int(c, "total.allocated", m.allocated);
    pair_int(c, "startup.allocated", 0);
    for (size_t i = 0; i < sizeof zero_fields / sizeof *zero_fields; i++)
        pair_int(c, zero_fields[i], 0);
    for (unsigned db = 0; db < ndb; db++) {
        char name[SRV_LLSTR_SIZE + 3];
        if (!db_keys[db])
            continue;
        snprintf(name, sizeof name, "db.%u", db);
        srv_reply_bulk_cstr(c, name);
        srv_reply_map(c, 3);
        pair_int(c, "overhead.hashtable.main", 0);
        pair_int(c, "overhead.hashtable.expires", 0);
        pair_int(c, "overhead.hashtable.slot-to-keys", 0);
    }
    pair_int(c, "overhead.total", 0);
    pair_int(c, "keys.count", m.keys);
    pair_int(c, "keys.bytes-per-key", m.keys ? m.allocated / m.keys : 0);
    pair_int(c, "dataset.bytes", m.allocated);
    pair_double(c, "dataset.percentage", m.allocated ? PERCENT : 0);
    pair_double(c, "peak.percentage", PERCENT * ratio(m.allocated, m.peak));
    pair_int(c, "allocator.allocated", m.allocated);
    pair_int(c, "allocator.active", m.active);
    pair_int(c, "allocator.resident", m.resident);
    pair_double(c, "allocator-fragmentation.ratio",
                ratio(m.active, m.allocated));
    pair_int(c, "allocator-fragmentation.bytes", m.active - m.allocated);
    pair_double(c, "allocator-rss.ratio", ratio(m.resident, m.active));
    pair_int(c, "allocator-rss.bytes", m.resident - m.active);
    pair_double(c, "rss-overhead.ratio", ratio(m.rss, m.resident));
    pair_int(c, "rss-overhead.bytes", m.rss - m.resident);
    pair_double(c, "fragmentation", ratio(m.rss, m.allocated));
    pair_int(c, "fragmentation.bytes", m.rss - m.allocated);
    free(db_keys);
}

void srv_cmd_memory_doctor(srv_conn *c)
{
    char text[1024];
    mem_figures m;
    uint64_t keys[1];
    int n;

    figures(c, &m, keys, 0);
    n = snprintf(text, sizeof text,
                 "larder keeps its data on disk (LMDB) and the hottest "
                 "values in a shared cache of %lld MB, so a worker's memory "
                 "does not grow with the data set. This worker holds %lld "
                 "bytes allocated, %lld resident (peak %lld). Nothing to "
                 "report.\n",
                 srv_her.cfg->cache_mb, m.allocated, m.rss, m.peak);
    srv_reply_verbatim(c, text, (size_t)n);
}

/* The allocator's own report (glibc's malloc_info). */
void srv_cmd_memory_malloc_stats(srv_conn *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    if (!f || malloc_info(0, f) != 0) {
        if (f)
            fclose(f);
        free(buf);
        srv_reply_verbatim(c, "Stats not supported for the current allocator",
                           sizeof "Stats not supported for the current "
                                  "allocator" -
                               1);
        return;
    }
    fclose(f);
    srv_reply_verbatim(c, buf, len);
    free(buf);
}

void srv_cmd_memory_purge(srv_conn *c)
{
    malloc_trim(0);
    srv_reply_ok(c);
}

void srv_cmd_memory_help(srv_conn *c)
{
    static const char *const help[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    A short report on this worker's memory.",
        "MALLOC-STATS",
        "    The allocator's internal statistics.",
        "PURGE",
        "    Give freed memory back to the system.",
        "STATS",
        "    Memory figures of this worker, by Redis's names.",
        "USAGE <key> [SAMPLES <count>]",
        "    The bytes Redis would use for <key> and its value, from",
        "    <count> sampled elements of a big collection (0: all; 5 by",
        "    default).",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* ------------------------------------------------------------------ */
/* LOLWUT */

/* Shelves of preserve jars, some full, some not, drawn from a seed. */
static void draw_larder(srv_buf *out, long long cols, long long rows)
{
    long long jars = cols / JAR_WIDTH > 0 ? cols / JAR_WIDTH : 1;
    unsigned x = 2166136261u;
    static const char *const fill[] = { "      ", "      ", "~~~~~~",
                                        "######", "@@@@@@", "::::::" };

    for (long long shelf = 0; shelf < rows; shelf++) {
        int level[LOLWUT_DIM_MAX];
        for (long long j = 0; j < jars; j++) {
            x = x * 16777619u ^ (unsigned)(shelf * 31 + j);
            level[j] = (int)(x % JAR_ROWS);
        }
        for (int line = 0; line < JAR_ROWS + 1; line++) {
            for (long long j = 0; j < jars; j++) {
                const char *cell;
                if (line == 0)
                    cell = " _[]_ ";
                else if (line == JAR_ROWS)
                    cell = "|____|";
                else
                    cell = JAR_ROWS - line <= level[j]
                               ? fill[2 + (int)((x >> (j % 16)) % 4)]
                               : fill[0];
                srv_buf_append(out, line == 0 || line == JAR_ROWS ? " " : "|",
                               1);
                srv_buf_append(out, cell, strlen(cell));
            }
            srv_buf_append(out, "\n", 1);
        }
        for (long long i = 0; i < jars * JAR_WIDTH; i++)
            srv_buf_append(out, "=", 1);
        srv_buf_append(out, "\n", 1);
    }
}

/*
 * LOLWUT [VERSION v] [args]: Redis 7.0 answers its version line; versions
 * 5 and 6 draw (Redis's art there; larder's shelves here, "columns rows"
 * as their arguments).
 */
void srv_cmd_lolwut(srv_conn *c)
{
    char ver[LOLWUT_VERSION_MAX];
    long long v = 0, dims[2] = { LOLWUT_COLS_DEFAULT, LOLWUT_ROWS_DEFAULT };
    int first = 1;

    snprintf(ver, sizeof ver, "%s", SRV_REDIS_VERSION);
    if (c->argc >= 3 &&
        srv_util_streq(c->argv[1].ptr, c->argv[1].len, "version")) {
        if (srv_args_ll_or_reply(c, &c->argv[2], &v))
            return;
        snprintf(ver, sizeof ver, "%u.0.0", (unsigned)v);
        first = 3;
    }
    if ((ver[0] == '5' || ver[0] == '6') && ver[1] == '.' && ver[2] != '9') {
        srv_buf art = { 0 };
        for (int i = first; i < c->argc && i - first < 2; i++) {
            if (srv_args_ll_or_reply(c, &c->argv[i], &dims[i - first])) {
                srv_buf_free(&art);
                return;
            }
            dims[i - first] = dims[i - first] < 1 ? 1
                              : dims[i - first] > LOLWUT_DIM_MAX
                                  ? LOLWUT_DIM_MAX
                                  : dims[i - first];
        }
        draw_larder(&art, dims[0], dims[1]);
        srv_buf_append(&art, "\nA larder, kept in order. Redis ver. ",
                       sizeof "\nA larder, kept in order. Redis ver. " - 1);
        srv_buf_append(&art, SRV_REDIS_VERSION, strlen(SRV_REDIS_VERSION));
        srv_buf_append(&art, "\n", 1);
        srv_reply_verbatim(c, art.data, art.len);
        srv_buf_free(&art);
        return;
    }
    char line[LOLWUT_VERSION_MAX + 16];
    int n = snprintf(line, sizeof line, "Redis ver. %s\n", SRV_REDIS_VERSION);
    srv_reply_verbatim(c, line, (size_t)n);
}
