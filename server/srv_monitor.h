/*
 * srv_monitor.h - MONITOR across workers: every command any worker runs
 * (but the admin ones, and with AUTH's secrets redacted) becomes one line
 * in Redis's format, +<s>.<us> [<db> <addr>] "arg" ..., sent through the
 * broker to the workers that have MONITOR clients, which append it to
 * their output. Without the broker a worker's own commands reach its own
 * monitors. Each line sent to the broker carries a number from one
 * counter every worker shares (srv_stats.monitor_seq), drawn after its
 * command ran and before its reply can leave; the broker releases lines
 * in that order (srv_morder.h), so a command that finished before another
 * started shows first, whatever workers they and the monitor are on (a
 * line that misses the broker's bound for a gap may come late).
 * Feeding costs one load and a test while nobody monitors.
 */
#ifndef SRV_MONITOR_H
#define SRV_MONITOR_H

#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_worker.h"

/* MONITOR: c receives every command from now on. Replies OK (or the
 * error inside EXEC). */
void srv_monitor_start(srv_conn *c);

/* 1 if c is a MONITOR client (CLIENT LIST's flag O). */
int srv_monitor_is(const srv_conn *c);

/* The line of c's command that just ran (the dispatcher's call). */
void srv_monitor_feed_now(srv_conn *c);

/* Feed c's command if anyone monitors (one load when nobody does). */
static inline void srv_monitor_feed(srv_conn *c)
{
    if (atomic_load_explicit(&srv_her.stats->monitors, memory_order_relaxed))
        srv_monitor_feed_now(c);
}

/* The worker service: joins the link (MONITOR in and out, its interest). */
extern const srv_service srv_monitor_service;

#endif
