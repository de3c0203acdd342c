/*
 * srv_embed.c - the embedded worker (see the header).
 */
#include "server/srv_embed.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static srv_worker worker;
static int opened;

int srv_embed_open(const char *dir)
{
    static srv_config cfg;

    srv_config_defaults(&cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "%s", dir);
    cfg.sync = SRV_SYNC_NO;
    cfg.workers = 1;
    srv_her.cfg = &cfg;
    srv_her.nworkers = 1;
    srv_her.workers_max = 1;
    srv_her.unix_fd = -1;
    srv_her.sync_efd = -1;
    srv_her.master_pid = 0; /* no master to signal */
    srv_her.start_ms = srv_util_mstime();
    if (!srv_her.stats && !(srv_her.stats = srv_stats_create(1)))
        return -1;
    /* No services: without a broker, pub/sub is worker-local. */
    if (srv_worker_open(&worker, 0, NULL)) {
        srv_stats_destroy(&srv_her.stats);
        return -1;
    }
    opened = 1;
    return 0;
}

srv_conn *srv_embed_conn(void)
{
    /* A pollable descriptor that never becomes readable. */
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    srv_conn *c;

    if (fd < 0)
        return NULL;
    if (!(c = srv_conn_create(&worker, fd, 1))) {
        close(fd);
        return NULL;
    }
    event_del(c->ev_read);
    atomic_fetch_add(&srv_her.stats->clients, 1);
    return c;
}

int srv_embed_feed(srv_conn *c, const void *data, size_t len)
{
    srv_group *g = &c->worker->group;

    if (srv_buf_append(&c->in, data, len)) {
        srv_conn_close(c);
        return -1;
    }
    srv_conn_run_input(c);
    /* The worker's turn would write the replies to sockets: commit only. */
    srv_group_settle(g);
    srv_group_leave(g, c);
    g->nconns = 0;
    if (c->flags & (SRV_CONN_CLOSE_ASAP | SRV_CONN_CLOSE_AFTER_REPLY)) {
        srv_conn_close(c);
        return -1;
    }
    return 0;
}

void srv_embed_close(void)
{
    if (!opened)
        return;
    srv_worker_close(&worker);
    srv_stats_destroy(&srv_her.stats);
    opened = 0;
}
