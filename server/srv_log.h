/*
 * srv_log.h - the server's log: one line per event in Redis's format: pid
 * and role letter (M master, W worker, R reaper, Y syncer, B broker, C
 * backup), time, level mark (. - * #), the message and, when given, the
 * errno text ("4711:W 01 Dec 2026 15:20:55.618 * text"); copied to syslog
 * at its level's priority when srv_log_syslog was called.
 * Any process may log; lines are written with one write() so processes
 * sharing a log file do not interleave within a line.
 */
#ifndef SRV_LOG_H
#define SRV_LOG_H

enum srv_loglevel {
    SRV_LOG_DEBUG,
    SRV_LOG_VERBOSE,
    SRV_LOG_NOTICE,
    SRV_LOG_WARNING,
};

/* Parse "debug|verbose|notice|warning"; -1 if unknown. */
int srv_log_level_parse(const char *name);
const char *srv_log_level_name(int level);

/* Open `path` for appending ("" or NULL: standard error). 0 or errno. */
int srv_log_open(const char *path);

/* The descriptor log lines go to (a child that closes the descriptors it
 * inherited keeps this one). */
int srv_log_fd(void);

/* This process's level: lines below it are not written. Any thread; the
 * process applies CONFIG SET's loglevel through srv_config_refresh. */
void srv_log_set_level(int level);
int srv_log_get_level(void);

/*
 * Send every later line to syslog too, as `ident` (LOG_PID) in `facility`
 * (LOG_LOCAL0...). The master before it forks (children inherit it);
 * ident must stay valid.
 */
void srv_log_syslog(const char *ident, int facility);

/* Name this process in every later line: role "worker" (srv_role_name)
 * and index 2 give "worker#2"; index < 0 gives just the role. The master
 * names each child from its record before the child runs its role. */
void srv_log_set_role(const char *role, int index);

/*
 * Log at `level`; `err` is an errno to append as ": text" (0 for none).
 * A message with the same format logged again within a second is counted
 * instead of written, and the count is reported with the next one written.
 */
void srv_log(int level, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
