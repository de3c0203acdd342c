/*
 * srv_reaper.c - the reaper process. Every 1/hz s: apply configuration
 * changes (srv_config_refresh, for the syncer thread too); expire due keys
 * oldest first, each batch of at most `reaper-batch` keys its own short write
 * transaction, until none is due or the tick's time budget is spent (so
 * mass expiry never holds the write lock long); free detached collections
 * in a bounded chunk; once a second (or at once when the master saw a
 * child die), mdb_reader_check. Everything is counted for INFO. With
 * `syncer-thread yes` the syncer runs as a thread of this process.
 */
#include "server/srv_reaper.h"
#include "server/srv_child.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_keys.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_pause.h"
#include "server/srv_role.h"
#include "server/srv_stats.h"
#include "server/srv_syncer.h"
#include "server/srv_util.h"
#include "storage/st_coll.h"
#include "storage/st_env.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define MS_PER_S 1000
#define NS_PER_MS 1000000
/* Share of each reaper tick that expiry may use. */
#define REAPER_BUDGET_SHARE 10
/* Elements of deleted collections freed per tick, in one transaction. */
#define LAZYFREE_CHUNK 10000

static volatile sig_atomic_t check_readers;

/* The master saw a child die: its reader slot may pin a snapshot and make
 * the file grow, so clear it at once rather than within the second. */
static void on_child_died(int sig) { check_readers = 1; }

static void sleep_ms(int64_t ms)
{
    struct timespec ts = { ms / MS_PER_S, (ms % MS_PER_S) * NS_PER_MS };

    while (!srv_child_stop && !check_readers && nanosleep(&ts, &ts) &&
           errno == EINTR)
        ;
}

/* Expire due keys within the tick's budget; returns how many. */
static size_t expire_tick(st_env *env, int64_t budget_ms)
{
    int64_t start = srv_util_monotonic_ms();
    size_t total = 0, n;
    uint64_t version;
    int rc;

    /* While we expire, workers leave the expired keys they read to us
     * instead of queueing for the write lock on their read path. */
    atomic_store(&srv_her.stats->reaper_expiring, 1);
    do {
        rc = st_keyspace_expire_due(env, srv_util_mstime(),
                                    (size_t)srv_her.cfg->reaper_batch, &n,
                                    &version);
        if (rc) {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                    "active expiry failed: %s", st_strerror(rc));
            break;
        }
        total += n;
    } while (!srv_child_stop && n == (size_t)srv_her.cfg->reaper_batch &&
             srv_util_monotonic_ms() - start < budget_ms);
    /* A full last batch means more are due: the next tick goes on. */
    if (rc || n < (size_t)srv_her.cfg->reaper_batch)
        atomic_store(&srv_her.stats->reaper_expiring, 0);
    return total;
}

int srv_reaper_main(void)
{
    srv_stats_slot *slot = srv_stats_slot_of(srv_her.stats, SRV_ROLE_REAPER,
                                             -1);
    int64_t tick_ms = MS_PER_S / srv_her.cfg->hz;
    int64_t last_check = 0;
    st_env *env;

    if (srv_child_start(slot) || srv_child_env_open(&env))
        return 1;
    /* Its expiries are "expired" keyspace events: sent to the broker. */
    srv_link_open_plain(SRV_LINK_NOT_A_WORKER);
    srv_keys_observe(env);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child_died;
    sigaction(SIGUSR1, &sa, NULL);
    srv_syncer_thread_arg targ = { env };
    pthread_t syncer;
    int threaded = srv_her.cfg->syncer_thread &&
                   pthread_create(&syncer, NULL, srv_syncer_thread, &targ) == 0;
    if (srv_her.cfg->syncer_thread && !threaded)
        srv_log(SRV_LOG_WARNING, 0, "can't start the syncer thread");
    srv_log(SRV_LOG_VERBOSE, 0, "reaping every %lld ms", (long long)tick_ms);
    while (!srv_child_stop) {
        int64_t t0 = srv_util_monotonic_ms(), u0 = srv_util_ustime();
        size_t freed, n;
        uint64_t pending;
        int rc, dead;

        srv_config_refresh();
        srv_link_pump();
        /* As Redis, keys do not expire while clients are paused. */
        n = srv_pause_active(srv_util_mstime())
                ? 0
                : expire_tick(env, tick_ms / REAPER_BUDGET_SHARE);
        if (n) {
            SRV_STAT_ADD(slot, expired_keys, (int64_t)n);
            srv_log(SRV_LOG_DEBUG, 0, "expired %zu keys", n);
        }
        if ((rc = st_coll_free_chunk(env, LAZYFREE_CHUNK, &freed, &pending)))
            srv_log(SRV_LOG_WARNING, 0, "lazy free failed: %s",
                    st_strerror(rc));
        else
            atomic_store(&srv_her.stats->lazyfree_pending, (int64_t)pending);
        if (check_readers || t0 - last_check >= MS_PER_S) {
            check_readers = 0;
            last_check = t0;
            if (st_env_reader_check(env, &dead) == 0 && dead)
                srv_log(SRV_LOG_NOTICE, 0, "cleared %d stale reader slots",
                        dead);
        }
        int64_t spent = srv_util_monotonic_ms() - t0;
        SRV_STAT_ADD(slot, ticks, 1);
        SRV_STAT_ADD(slot, busy_us, srv_util_ustime() - u0);
        if (spent < tick_ms && !(freed && pending))
            sleep_ms(tick_ms - spent);
    }
    if (threaded)
        pthread_join(syncer, NULL);
    srv_keys_unobserve(env);
    srv_link_close_plain();
    st_env_close(&env);
    return 0;
}
