/*
 * srv_log.c - timestamped, role-tagged, rate-limited log lines, in
 * Redis's format ("4711:W 01 Dec 2026 15:20:55.618 * text": pid, role
 * letter, time, level mark), to the log file and, with syslog-enabled,
 * to syslog.
 */
#include "server/srv_log.h"
#include "server/srv_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 1024
#define LOG_RATE_SLOTS 16
#define LOG_RATE_WINDOW_MS 1000
#define LOG_FILE_MODE 0644

static int log_fd = STDERR_FILENO;
/* Atomic: the reaper's syncer thread logs while the reaper applies a new
 * level (srv_config_refresh). */
static _Atomic int log_level = SRV_LOG_NOTICE;
static char log_letter = 'M';
static int log_syslog;

/* The role letters of Redis's log lines: M for the master (as Redis), C
 * for a child that only copies (the backup, as Redis's RDB child), and
 * larder's own for the rest. */
static const struct {
    const char *role;
    char letter;
} letters[] = {
    { "master", 'M' }, { "worker", 'W' }, { "reaper", 'R' },
    { "syncer", 'Y' }, { "broker", 'B' }, { "backup", 'C' },
};

static const int syslog_levels[] = { LOG_DEBUG, LOG_INFO, LOG_NOTICE,
                                     LOG_WARNING };

static const char *const level_names[] = { "debug", "verbose", "notice",
                                           "warning" };
static const char level_marks[] = { '.', '-', '*', '#' };

/* Rate limiting: the same message (same call site and same text) within
 * the window is counted, not written; different texts (another pid,
 * another key) always get through. */
static struct {
    const char *fmt;
    uint64_t text_hash;
    int64_t window_start;
    unsigned suppressed;
} rate[LOG_RATE_SLOTS];

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int srv_log_level_parse(const char *name)
{
    for (int i = 0; i <= SRV_LOG_WARNING; i++)
        if (strcasecmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

const char *srv_log_level_name(int level) { return level_names[level]; }

int srv_log_open(const char *path)
{
    int fd;

    if (!path || !*path) {
        log_fd = STDERR_FILENO;
        return 0;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, LOG_FILE_MODE);
    if (fd < 0)
        return errno;
    if (log_fd != STDERR_FILENO)
        close(log_fd);
    log_fd = fd;
    return 0;
}

int srv_log_fd(void) { return log_fd; }

void srv_log_set_level(int level)
{
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

int srv_log_get_level(void)
{
    return atomic_load_explicit(&log_level, memory_order_relaxed);
}

void srv_log_syslog(const char *ident, int facility)
{
    /* ident must outlive the log: it is a field of the configuration. */
    openlog(ident, LOG_PID | LOG_NDELAY | LOG_NOWAIT, facility);
    log_syslog = 1;
}

void srv_log_set_role(const char *role, int index)
{
    /* The index is not in Redis's format: the master logs which pid each
     * worker is when it starts it. */
    log_letter = '?';
    for (size_t i = 0; i < sizeof letters / sizeof letters[0]; i++)
        if (!strcmp(letters[i].role, role))
            log_letter = letters[i].letter;
}

/* 1 if this line should be written; *suppressed gets the skipped count. */
static int rate_allow(const char *fmt, uint64_t th, unsigned *suppressed)
{
    int64_t now = srv_util_monotonic_ms();
    unsigned slot = (unsigned)(((uintptr_t)fmt >> 4) % LOG_RATE_SLOTS);
    int same = rate[slot].fmt == fmt && rate[slot].text_hash == th;

    *suppressed = 0;
    if (same && now - rate[slot].window_start < LOG_RATE_WINDOW_MS) {
        rate[slot].suppressed++;
        return 0;
    }
    if (same)
        *suppressed = rate[slot].suppressed;
    rate[slot].fmt = fmt;
    rate[slot].text_hash = th;
    rate[slot].window_start = now;
    rate[slot].suppressed = 0;
    return 1;
}

/* Append to buf[*n..size) what snprintf would, never past the end. */
static void put(char *buf, size_t size, size_t *n, int wrote)
{
    if (wrote > 0)
        *n += (size_t)wrote;
    if (*n >= size)
        *n = size - 1;
}

void srv_log(int level, int err, const char *fmt, ...)
{
    char msg[LOG_LINE_MAX], line[LOG_LINE_MAX];
    unsigned suppressed;
    struct timespec ts;
    struct tm tm;
    va_list ap;
    size_t m = 0, n = 0;
    int saved = errno;

    if (level < srv_log_get_level()) {
        errno = saved;
        return;
    }
    va_start(ap, fmt);
    put(msg, sizeof msg, &m, vsnprintf(msg, sizeof msg, fmt, ap));
    va_end(ap);
    if (err)
        put(msg, sizeof msg, &m,
            snprintf(msg + m, sizeof msg - m, ": %s", strerror(err)));
    if (!rate_allow(fmt, text_hash(msg, m), &suppressed)) {
        errno = saved;
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    put(line, sizeof line, &n,
        snprintf(line, sizeof line, "%d:%c ", (int)getpid(), log_letter));
    n += strftime(line + n, sizeof line - n, "%d %b %Y %H:%M:%S", &tm);
    put(line, sizeof line, &n,
        snprintf(line + n, sizeof line - n, ".%03d %c ",
                 (int)(ts.tv_nsec / 1000000), level_marks[level]));
    size_t text = n;
    put(line, sizeof line, &n, snprintf(line + n, sizeof line - n, "%s", msg));
    if (suppressed)
        put(line, sizeof line, &n,
            snprintf(line + n, sizeof line - n, " (%u like it suppressed)",
                     suppressed));
    if (log_syslog)
        syslog(syslog_levels[level], "%s", line + text);
    line[n++] = '\n';
    if (write(log_fd, line, n) < 0) {
        /* nowhere left to report it */
    }
    errno = saved;
}
