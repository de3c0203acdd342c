/*
 * srv_duty.c - the reaper and syncer processes.
 *
 * Reaper, every 1/hz s: expire due keys oldest first, each batch of at
 * most `reaper-batch` keys its own short write transaction, until none is
 * due or the tick's time budget is spent (so mass expiry never holds the
 * write lock long); free detached collections in a bounded chunk; once a
 * second, mdb_reader_check. Everything is counted for INFO.
 *
 * Syncer: waits on its eventfd (poked by workers after commits) or its
 * period (1 s under everysec), reads the newest committed transaction id,
 * flushes the environment, publishes that id as durable and wakes every
 * worker so replies held for durability (sync always) can leave. Commits
 * that land during a flush are covered by the next one.
 */
#include "server/srv_duty.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keys.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define MS_PER_S 1000
#define US_PER_MS 1000
#define NS_PER_MS 1000000
/* Share of each reaper tick that expiry may use. */
#define REAPER_BUDGET_SHARE 10
/* Elements of deleted collections freed per tick, in one transaction. */
#define LAZYFREE_CHUNK 10000
/* everysec: a flush starts every period (also the idle wake-up). */
#define SYNC_PERIOD_MS 1000

/* The reaper's environment, shared with the syncer thread if any. */
typedef struct syncer_thread_arg {
    st_env *env;
} syncer_thread_arg;

static void *syncer_thread(void *arg);

static volatile sig_atomic_t stop;
static volatile sig_atomic_t check_readers;

static void on_term(int sig) { stop = 1; }

/* The master saw a child die: its reader slot may pin a snapshot and make
 * the file grow, so clear it at once rather than within the second. */
static void on_child_died(int sig) { check_readers = 1; }

/* Common start of a duty child: name, parent death, signals, LMDB. */
static int duty_start(const char *role, srv_stats_slot *slot, st_env **env)
{
    struct sigaction sa;
    st_env_opts o = {
        .dir = srv_her.cfg->dir,
        .map_size = (uint64_t)srv_her.cfg->maxdisk,
        .databases = (unsigned)srv_her.cfg->databases,
        .nosync = 1,
        .writemap = (int)srv_her.cfg->lmdb_writemap,
        .cache = srv_her.cache,
        .compress_threshold = (size_t)srv_her.cfg->compress_threshold,
        .compress_level = (int)srv_her.cfg->compress_level,
    };
    int rc;

    srv_log_set_role(role, -1);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != srv_her.master_pid)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    atomic_store(&slot->pid, getpid());
    atomic_store(&slot->started_ms, srv_mstime());
    if ((rc = st_env_open(&o, env))) {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "opening LMDB failed: %s",
                st_strerror(rc));
        return -1;
    }
    return 0;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = { ms / MS_PER_S, (ms % MS_PER_S) * NS_PER_MS };

    while (!stop && !check_readers && nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* Expire due keys within the tick's budget; returns how many. */
static size_t expire_tick(st_env *env, int64_t budget_ms)
{
    int64_t start = srv_monotonic_ms();
    size_t total = 0, n;
    uint64_t version;
    int rc;

    /* While we expire, workers leave the expired keys they read to us
     * instead of queueing for the write lock on their read path. */
    atomic_store(&srv_her.stats->reaper_expiring, 1);
    do {
        rc = st_expire_due(env, srv_mstime(), (size_t)srv_her.cfg->reaper_batch,
                           &n, &version);
        if (rc) {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "active expiry failed: %s",
                    st_strerror(rc));
            break;
        }
        total += n;
    } while (!stop && n == (size_t)srv_her.cfg->reaper_batch &&
             srv_monotonic_ms() - start < budget_ms);
    /* A full last batch means more are due: the next tick goes on. */
    if (rc || n < (size_t)srv_her.cfg->reaper_batch)
        atomic_store(&srv_her.stats->reaper_expiring, 0);
    return total;
}

int srv_reaper_main(void)
{
    srv_stats_slot *slot = &srv_her.stats->slot[srv_her.nworkers + SRV_SLOT_REAPER];
    int64_t tick_ms = MS_PER_S / srv_her.cfg->hz;
    int64_t last_check = 0;
    st_env *env;

    if (duty_start("reaper", slot, &env))
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child_died;
    sigaction(SIGUSR1, &sa, NULL);
    syncer_thread_arg targ = { env };
    pthread_t syncer;
    int threaded = srv_her.cfg->syncer_thread &&
                   pthread_create(&syncer, NULL, syncer_thread, &targ) == 0;
    if (srv_her.cfg->syncer_thread && !threaded)
        srv_log(SRV_LOG_WARNING, 0, "can't start the syncer thread");
    srv_log(SRV_LOG_VERBOSE, 0, "reaping every %lld ms", (long long)tick_ms);
    while (!stop) {
        int64_t t0 = srv_monotonic_ms(), u0 = srv_ustime();
        size_t freed, n;
        uint64_t pending;
        int rc, dead;

        n = expire_tick(env, tick_ms / REAPER_BUDGET_SHARE);
        if (n)
            SRV_STAT_ADD(slot, expired_keys, (int64_t)n);
        if ((rc = st_coll_free_chunk(env, LAZYFREE_CHUNK, &freed, &pending)))
            srv_log(SRV_LOG_WARNING, 0, "lazy free failed: %s", st_strerror(rc));
        else
            atomic_store(&srv_her.stats->lazyfree_pending, (int64_t)pending);
        if (check_readers || t0 - last_check >= MS_PER_S) {
            check_readers = 0;
            last_check = t0;
            if (st_env_reader_check(env, &dead) == 0 && dead)
                srv_log(SRV_LOG_NOTICE, 0, "cleared %d stale reader slots",
                        dead);
        }
        int64_t spent = srv_monotonic_ms() - t0;
        SRV_STAT_ADD(slot, ticks, 1);
        SRV_STAT_ADD(slot, busy_us, srv_ustime() - u0);
        if (spent < tick_ms && !(freed && pending))
            sleep_ms(tick_ms - spent);
    }
    if (threaded)
        pthread_join(syncer, NULL);
    st_env_close(&env);
    return 0;
}

void srv_syncer_poke(void)
{
    uint64_t one = 1;

    if (write(srv_her.sync_efd, &one, sizeof one) < 0) {
        /* the counter is saturated: a flush is pending anyway */
    }
}

static void wake_workers(void)
{
    uint64_t one = 1;

    for (int i = 0; i < srv_her.nworkers; i++)
        if (write(srv_her.worker_efd[i], &one, sizeof one) < 0) {
            /* saturated: that worker has a wake-up pending already */
        }
}

/* The syncer's loop: flush when poked or on the 1 s beat, publish the
 * durable id, wake the workers. Runs in its own process or as a thread
 * of the reaper (`syncer-thread`), on that process's environment. */
static void syncer_loop(st_env *env, srv_stats_slot *slot)
{
    srv_stats *s = srv_her.stats;
    int64_t next_flush = srv_monotonic_ms() + SYNC_PERIOD_MS;

    while (!stop) {
        struct pollfd pfd = { srv_her.sync_efd, POLLIN, 0 };
        uint64_t pokes;
        st_env_stat st;
        int rc;
        int64_t wait = next_flush - srv_monotonic_ms();

        /* everysec: flushes start on a fixed 1 s beat, not 1 s after the
         * last one ended, so the loss window stays near a second. */
        poll(&pfd, 1, wait > 0 ? (int)wait : 0);
        if (srv_monotonic_ms() >= next_flush) {
            next_flush += SYNC_PERIOD_MS;
            if (next_flush < srv_monotonic_ms())
                next_flush = srv_monotonic_ms() + SYNC_PERIOD_MS;
        }
        if (pfd.revents & POLLIN &&
            read(srv_her.sync_efd, &pokes, sizeof pokes) < 0 && errno != EAGAIN)
            srv_log(SRV_LOG_WARNING, errno, "read() of the sync eventfd");
        if (srv_her.cfg->sync == SRV_SYNC_NO || stop)
            continue;
        if (st_env_stat_get(env, &st))
            continue;
        atomic_store(&s->committed_txn, (int64_t)st.last_txn);
        if ((int64_t)st.last_txn <= atomic_load(&s->durable_txn))
            continue;
        int64_t t0 = srv_ustime();
        if ((rc = st_env_sync(env))) {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0, "mdb_env_sync() failed: %s",
                    st_strerror(rc));
            continue;
        }
        int64_t t1 = srv_ustime();
        atomic_store(&s->durable_txn, (int64_t)st.last_txn);
        atomic_store(&s->last_sync_ms, t1 / US_PER_MS);
        atomic_store(&s->last_sync_us, t1 - t0);
        SRV_STAT_ADD(slot, syncs, 1);
        wake_workers();
    }
    /* A last flush so a graceful stop loses nothing. */
    if (srv_her.cfg->sync != SRV_SYNC_NO)
        st_env_sync(env);
}

int srv_syncer_main(void)
{
    srv_stats_slot *slot = &srv_her.stats->slot[srv_her.nworkers + SRV_SLOT_SYNCER];
    st_env *env;

    if (duty_start("syncer", slot, &env))
        return 1;
    syncer_loop(env, slot);
    st_env_close(&env);
    return 0;
}

static void *syncer_thread(void *arg)
{
    syncer_thread_arg *a = arg;

    syncer_loop(a->env, &srv_her.stats->slot[srv_her.nworkers + SRV_SLOT_SYNCER]);
    return NULL;
}
