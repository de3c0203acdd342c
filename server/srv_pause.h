/*
 * srv_pause.h - CLIENT PAUSE and UNPAUSE for every worker's clients. The
 * pause (its end and its mode) is shared memory (srv_stats), so a command
 * on any worker sees it at once; each worker holds its clients' commands
 * that the pause covers before they run (the service's `hold`) and runs
 * them when the pause ends, times out or is lifted (told through the
 * broker, srv_ask.h). As Redis: WRITE holds the commands that write or
 * may publish (and EXEC of such a queue), ALL holds every command; active
 * expiry waits too. Everything runs on the worker's thread.
 */
#ifndef SRV_PAUSE_H
#define SRV_PAUSE_H

#include <stdint.h>

#include "server/srv_conn.h"
#include "server/srv_worker.h"

/* Pause modes (srv_stats.pause_mode), least restrictive first. */
#define SRV_PAUSE_OFF 0
#define SRV_PAUSE_WRITE 1
#define SRV_PAUSE_ALL 2

/*
 * CLIENT PAUSE for `ms` ms in `mode`: a pause already in place keeps the
 * later end and the stricter mode, as Redis. Every worker is told; c's
 * reply (OK) comes once they all have been.
 */
void srv_pause_clients(srv_conn *c, int64_t ms, int mode);

/* CLIENT UNPAUSE: lift the pause; held commands run. Replies OK. */
void srv_pause_lift(srv_conn *c);

/* 1 while a pause is in place (the reaper's active expiry waits). Any
 * process. */
int srv_pause_active(int64_t now_ms);

/* The worker service: holds paused commands, wakes them. */
extern const srv_service srv_pause_service;

#endif
