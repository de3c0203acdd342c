/*
 * srv_syncer.c - the syncer: waits on its eventfd (poked by workers after
 * commits) or its period (1 s under everysec), reads the newest committed
 * transaction id, makes it durable (storage/st_durable.h: pin, flush,
 * record), publishes that id as durable and wakes every worker so replies
 * held for durability (sync always) can leave. Commits that land during a
 * flush are covered by the next one. Under `sync no` it flushes only every
 * SYNC_NO_PERIOD_MS, which keeps a restore point for power cuts, or when a
 * worker pokes (replies held from before a CONFIG SET sync no). Runs as
 * its own process, or as a thread of the reaper.
 */
#include "server/srv_syncer.h"
#include "server/srv_child.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_role.h"
#include "server/srv_stats.h"
#include "server/srv_util.h"
#include "storage/st_durable.h"
#include "storage/st_env.h"
#include "storage/st_err.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

#define US_PER_MS 1000
/* everysec: a flush starts every period (also the idle wake-up). */
#define SYNC_PERIOD_MS 1000
/* sync no: the restore point after a power cut is at most this old. */
#define SYNC_NO_PERIOD_MS 5000

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

    for (int i = 0; i < srv_her.workers_max; i++)
        if (atomic_load(&srv_her.stats->slot[i].pid) &&
            write(srv_her.worker_efd[i], &one, sizeof one) < 0) {
            /* saturated: that worker has a wake-up pending already */
        }
}

/* The durable-snapshot handle, opened (it flushes and records) at the
 * start and again after a failure. */
static st_durable *open_durable(st_env *env, int *failing)
{
    st_durable *d;
    int rc = st_durable_open(env, &d);

    if (rc) {
        if (!*failing)
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                    "can't record the "
                    "durable snapshot: %s",
                    st_strerror(rc));
        *failing = 1;
        return NULL;
    }
    *failing = 0;
    atomic_store(&srv_her.stats->durable_txn, (int64_t)st_durable_txn(d));
    wake_workers(); /* replies held across a syncer restart can leave */
    return d;
}

void srv_syncer_loop(st_env *env, srv_stats_slot *slot)
{
    srv_stats *s = srv_her.stats;
    int64_t next_flush = srv_util_monotonic_ms() + SYNC_PERIOD_MS;
    int64_t next_no_flush = srv_util_monotonic_ms() + SYNC_NO_PERIOD_MS;
    int failing = 0;
    st_durable *d = open_durable(env, &failing);
    uint64_t txn;

    while (!srv_child_stop) {
        struct pollfd pfd = { srv_her.sync_efd, POLLIN, 0 };
        uint64_t pokes;
        st_env_stat st;
        int rc, beat, level = (int)srv_her.cfg->sync;
        unsigned look = SYNC_PERIOD_MS;
        int64_t wait = next_flush - srv_util_monotonic_ms(), now;

        /* As the reaper's thread, the reaper's loop refreshes for both. */
        if (srv_self.role == SRV_ROLE_SYNCER)
            srv_config_refresh();

        /* Between beats the pin may ask for an early flush: look again
         * as soon as it says. */
        if (level != SRV_SYNC_ALWAYS && d)
            st_durable_due(d, &look);
        if ((int64_t)look < wait)
            wait = look;
        /* everysec: flushes start on a fixed 1 s beat, not 1 s after the
         * last one ended, so the loss window stays near a second. */
        poll(&pfd, 1, wait > 0 ? (int)wait : 0);
        now = srv_util_monotonic_ms();
        if ((beat = now >= next_flush)) {
            next_flush += SYNC_PERIOD_MS;
            if (next_flush < now)
                next_flush = now + SYNC_PERIOD_MS;
        }
        if (pfd.revents & POLLIN &&
            read(srv_her.sync_efd, &pokes, sizeof pokes) < 0 && errno != EAGAIN)
            srv_log(SRV_LOG_WARNING, errno, "read() of the sync eventfd");
        if (srv_child_stop || (!d && !(d = open_durable(env, &failing))))
            continue;
        /* always: at once (a worker poked); everysec: on the beat; no:
         * every SYNC_NO_PERIOD_MS, or at once when a worker pokes (replies
         * still held from before a CONFIG SET sync no: nothing else
         * releases them); any level: when the pin says so. */
        if (((level == SRV_SYNC_EVERYSEC && !beat) ||
             (level == SRV_SYNC_NO && now < next_no_flush &&
              !(pfd.revents & POLLIN))) &&
            !st_durable_due(d, &look))
            continue;
        if (st_env_stat_get(env, &st))
            continue;
        atomic_store(&s->committed_txn, (int64_t)st.last_txn);
        if ((int64_t)st.last_txn <= atomic_load(&s->durable_txn))
            continue;
        if (level == SRV_SYNC_NO)
            next_no_flush = now + SYNC_NO_PERIOD_MS;
        int64_t t0 = srv_util_ustime();
        if ((rc = st_durable_flush(d, &txn))) {
            srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                    "flushing the durable "
                    "snapshot failed: %s",
                    st_strerror(rc));
            continue;
        }
        int64_t t1 = srv_util_ustime();
        atomic_store(&s->durable_txn, (int64_t)txn);
        atomic_store(&s->last_sync_ms, t1 / US_PER_MS);
        atomic_store(&s->last_sync_us, t1 - t0);
        SRV_STAT_ADD(slot, syncs, 1);
        wake_workers();
    }
    /* A last flush so a graceful stop loses nothing; the pin stays (the
     * reaper may commit after it, and must not reuse its pages). */
    if (d && st_durable_flush(d, &txn) == 0)
        atomic_store(&s->durable_txn, (int64_t)txn);
    st_durable_close(&d, 1);
}

int srv_syncer_main(void)
{
    srv_stats_slot *slot = srv_stats_slot_of(srv_her.stats, SRV_ROLE_SYNCER,
                                             -1);
    st_env *env;

    if (srv_child_start(slot) || srv_child_env_open(&env))
        return 1;
    srv_syncer_loop(env, slot);
    /* The environment is left open on purpose: closing it would end the
     * durable snapshot's pin (see srv_syncer_loop); the process exit frees
     * it, and the slot stays until the next syncer has recorded its own. */
    return 0;
}

void *srv_syncer_thread(void *arg)
{
    srv_syncer_thread_arg *a = arg;

    srv_syncer_loop(a->env,
                    srv_stats_slot_of(srv_her.stats, SRV_ROLE_SYNCER, -1));
    return NULL;
}
