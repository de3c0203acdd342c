/*
 * srv_daemon.h - the master as a daemon: detaching from the terminal
 * (daemonize yes) with the parent waiting until the server is ready, so an
 * init script learns whether it started; the pidfile; telling a
 * supervisor it is ready, reloading or stopping (supervised systemd:
 * sd_notify's protocol over NOTIFY_SOCKET, spoken here; upstart: a
 * SIGSTOP once ready, as Redis does). Only the master calls these, from
 * its main thread.
 */
#ifndef SRV_DAEMON_H
#define SRV_DAEMON_H

#include "server/srv_config.h"

/*
 * daemonize yes: fork; the parent waits for srv_daemon_ready (exits 0) or
 * for the child to die first (exits 1) and never returns; the child
 * leaves the terminal's session and returns 0. -1 with errno if fork or
 * pipe fail.
 */
int srv_daemon_detach(void);

/*
 * Daemonized: standard input, output and error go to /dev/null (as Redis
 * does once daemonized), so the children forked next hold nothing of the
 * terminal or of the pipe an init script reads. Call after the last error
 * that is printed, before the first fork. Nothing if not daemonized.
 */
void srv_daemon_quiet(void);

/*
 * The server serves: release a waiting parent and tell the supervisor
 * (READY=1 and STATUS=`status` under systemd; SIGSTOP under upstart).
 * Call once.
 */
void srv_daemon_ready(const srv_config *cfg, const char *status);

/* The supervision in force: supervised, with auto resolved (systemd if
 * NOTIFY_SOCKET is set, upstart if UPSTART_JOB is, else no). */
int srv_daemon_supervision(const srv_config *cfg);

/*
 * Send `state` ("RELOADING=1", "STOPPING=1\nSTATUS=...") to systemd if it
 * supervises (else nothing). 0, -1 if sending failed (logged).
 */
int srv_daemon_notify(const srv_config *cfg, const char *state);

/* Write the master's pid to cfg->pidfile (nothing if none set); a
 * failure is logged, as Redis does, and returns -1. */
int srv_daemon_pidfile_write(const srv_config *cfg);

/* Remove the pidfile at exit, if it still names this process. */
void srv_daemon_pidfile_remove(const srv_config *cfg);

#endif
