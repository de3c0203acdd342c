/*
 * srv_config.c - parsing and printing of the directives table, and the
 * process's live copy of the configuration kept in step with the shared
 * region (srv_cfgshm).
 */
#include "server/srv_config.h"
#include "server/srv_cfgshm.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_notify.h"
#include "server/srv_resp.h"
#include "server/srv_util.h"
#include "shm/shm_error.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define CFG_ARGS_MAX 64
#define CFG_VALUE_SIZE 64
#define MS_PER_S 1000
#define NS_PER_US 1000
/* srv_config_commit waits this many of the children's ticks at most, */
#define CONFIRM_TICKS 3
/* looking again every this many microseconds. */
#define CONFIRM_POLL_US 1000

typedef struct directive {
    const char *name;
    size_t offset;
    int kind;
    const char *def;
    long long min, max;
    int flags;
} directive;

#define X(n, f, k, d, lo, hi, fl) \
    { n, offsetof(srv_config, f), k, d, lo, hi, fl },
static const directive directives[] = { SRV_CONFIG_DIRECTIVES(X) };
#undef X
#define NDIRECTIVES (sizeof directives / sizeof directives[0])

static const char *const sync_names[] = { "no", "everysec", "always" };
static const char *const debug_names[] = { "no", "yes", "local" };

static const directive *find(const char *name)
{
    for (size_t i = 0; i < NDIRECTIVES; i++)
        if (strcasecmp(directives[i].name, name) == 0)
            return &directives[i];
    return NULL;
}

static int is_text(int kind)
{
    return kind == SRV_CFG_STRING || kind == SRV_CFG_WORDS;
}

static size_t field_size(const directive *d)
{
    if (d->kind == SRV_CFG_OBUF)
        return sizeof(((srv_config *)0)->client_output_buffer_limit);
    return is_text(d->kind) ? SRV_PATH_MAX : sizeof(long long);
}

static int parse_bytes(const char *s, long long *out);

static const char *const obuf_names[] = { "normal", "slave", "pubsub" };

/*
 * client-output-buffer-limit: "class hard soft seconds" groups (words of
 * one or more arguments); all or nothing, Redis's errors. The classes
 * not named keep their values.
 */
static int set_obuf(long long *limits, const char **args, int nargs, char *err,
                    size_t errlen)
{
    long long next[SRV_OBUF_CLASSES * SRV_OBUF_FIELDS];
    char words[SRV_PATH_MAX], *w[CFG_ARGS_MAX], *save = NULL;
    int n = 0;

    words[0] = '\0';
    for (int i = 0; i < nargs; i++) {
        size_t used = strlen(words);
        snprintf(words + used, sizeof words - used, "%s%s", i ? " " : "",
                 args[i]);
    }
    for (char *t = strtok_r(words, " ", &save); t && n < CFG_ARGS_MAX;
         t = strtok_r(NULL, " ", &save))
        w[n++] = t;
    if (n % (SRV_OBUF_FIELDS + 1)) {
        snprintf(err, errlen,
                 "Wrong number of arguments in buffer limit "
                 "configuration.");
        return -1;
    }
    memcpy(next, limits, sizeof next);
    for (int i = 0; i < n; i += SRV_OBUF_FIELDS + 1) {
        int cls = -1;
        long long hard, soft, secs;
        char *end;
        for (int k = 0; k < SRV_OBUF_CLASSES; k++)
            if (strcasecmp(w[i], obuf_names[k]) == 0)
                cls = k;
        if (strcasecmp(w[i], "replica") == 0)
            cls = SRV_OBUF_REPLICA;
        if (cls < 0) {
            snprintf(err, errlen,
                     "Invalid client class specified in buffer "
                     "limit configuration.");
            return -1;
        }
        errno = 0;
        secs = strtoll(w[i + 3], &end, 10);
        if (!parse_bytes(w[i + 1], &hard) || !parse_bytes(w[i + 2], &soft) ||
            *end || errno || secs < 0) {
            snprintf(err, errlen,
                     "Error in hard, soft or soft_seconds "
                     "setting in buffer limit configuration.");
            return -1;
        }
        next[cls * SRV_OBUF_FIELDS + SRV_OBUF_HARD] = hard;
        next[cls * SRV_OBUF_FIELDS + SRV_OBUF_SOFT] = soft;
        next[cls * SRV_OBUF_FIELDS + SRV_OBUF_SECONDS] = secs;
    }
    memcpy(limits, next, sizeof next);
    return 0;
}

/* Parse "64mb"-style sizes: 1k = 1000, 1kb = 1024, as redis.conf. */
static int parse_bytes(const char *s, long long *out)
{
    char *end;
    long long v, mul = 1;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || errno)
        return 0;
    if (!strcasecmp(end, ""))
        mul = 1;
    else if (!strcasecmp(end, "b"))
        mul = 1;
    else if (!strcasecmp(end, "k"))
        mul = 1000;
    else if (!strcasecmp(end, "kb"))
        mul = 1024;
    else if (!strcasecmp(end, "m"))
        mul = 1000 * 1000;
    else if (!strcasecmp(end, "mb"))
        mul = 1024 * 1024;
    else if (!strcasecmp(end, "g"))
        mul = 1000ll * 1000 * 1000;
    else if (!strcasecmp(end, "gb"))
        mul = 1024ll * 1024 * 1024;
    else
        return 0;
    if (v < 0 || (v && mul > LLONG_MAX / v))
        return 0;
    *out = v * mul;
    return 1;
}

/* The index of `word` (any case) among the '|'-separated `choices`, or
 * -1. */
static long long choice_index(const char *choices, const char *word)
{
    size_t wlen = strlen(word);
    long long i = 0;

    for (const char *p = choices; *p; i++) {
        size_t n = strcspn(p, "|");
        if (n == wlen && strncasecmp(p, word, n) == 0)
            return i;
        p += n + (p[n] == '|');
    }
    return -1;
}

/* The i-th of the '|'-separated `choices` into out. */
static void choice_name(const char *choices, long long i, char *out,
                        size_t size)
{
    const char *p = choices;

    for (; i > 0 && *p; i--)
        p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
    snprintf(out, size, "%.*s", (int)strcspn(p, "|"), p);
}

static int set_value(srv_config *cfg, const directive *d, const char **args,
                     int nargs, char *err, size_t errlen)
{
    char *field = (char *)cfg + d->offset;
    long long *num = (long long *)(void *)field;
    long long v;
    char *end;

    if (nargs < 1 || (nargs > 1 && d->kind != SRV_CFG_WORDS)) {
        snprintf(err, errlen, "'%s' takes %s", d->name,
                 d->kind == SRV_CFG_WORDS ? "one or more values"
                                          : "exactly one value");
        return -1;
    }
    switch (d->kind) {
    case SRV_CFG_INT:
        if (!srv_util_str2ll(args[0], strlen(args[0]), &v) || v < d->min ||
            v > d->max) {
            snprintf(err, errlen,
                     "'%s' must be an integer between %lld and %lld, got '%s'",
                     d->name, d->min, d->max, args[0]);
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_BYTES:
        if (!parse_bytes(args[0], &v) || v < d->min || v > d->max) {
            snprintf(err, errlen,
                     "'%s' must be a size of at least %lld bytes "
                     "(units: k kb m mb g gb), got '%s'",
                     d->name, d->min, args[0]);
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_OCTAL:
        errno = 0;
        v = strtoll(args[0], &end, 8);
        if (*args[0] == '\0' || *end || errno || v < d->min || v > d->max) {
            snprintf(err, errlen, "'%s' must be an octal mode, got '%s'",
                     d->name, args[0]);
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_LOGLEVEL:
        if ((v = srv_log_level_parse(args[0])) < 0) {
            snprintf(err, errlen,
                     "'%s' must be debug, verbose, notice or warning, "
                     "got '%s'",
                     d->name, args[0]);
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_SYNC:
        for (v = 0; v <= SRV_SYNC_ALWAYS; v++)
            if (strcasecmp(args[0], sync_names[v]) == 0) {
                *num = v;
                return 0;
            }
        snprintf(err, errlen, "'%s' must be always, everysec or no, got '%s'",
                 d->name, args[0]);
        return -1;
    case SRV_CFG_DEBUGMODE:
        for (v = SRV_DEBUG_NO; v <= SRV_DEBUG_LOCAL; v++)
            if (strcasecmp(args[0], debug_names[v]) == 0) {
                *num = v;
                return 0;
            }
        snprintf(err, errlen, "'%s' must be no, yes or local, got '%s'",
                 d->name, args[0]);
        return -1;
    case SRV_CFG_CHOICE:
        if ((v = choice_index(d->def, args[0])) < 0) {
            snprintf(err, errlen, "'%s' must be one of %s, got '%s'", d->name,
                     d->def, args[0]);
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_OBUF: return set_obuf(num, args, nargs, err, errlen);
    case SRV_CFG_NOTIFY:
        if (srv_notify_parse(args[0], &v)) {
            snprintf(err, errlen,
                     "Invalid event class character. Use "
                     "'Ag$lshzxeKEtmdn'.");
            return -1;
        }
        *num = v;
        return 0;
    case SRV_CFG_YESNO:
        if (strcasecmp(args[0], "yes") && strcasecmp(args[0], "no")) {
            snprintf(err, errlen, "'%s' must be yes or no, got '%s'", d->name,
                     args[0]);
            return -1;
        }
        *num = strcasecmp(args[0], "yes") == 0;
        return 0;
    default: break;
    }
    /* Text: words joined by single spaces. */
    size_t n = 0;
    for (int i = 0; i < nargs; i++) {
        size_t len = strlen(args[i]);
        if (n + len + 1 >= SRV_PATH_MAX) {
            snprintf(err, errlen, "'%s' value is too long", d->name);
            return -1;
        }
        if (i)
            field[n++] = ' ';
        memcpy(field + n, args[i], len);
        n += len;
    }
    field[n] = '\0';
    return 0;
}

void srv_config_defaults(srv_config *cfg)
{
    char err[SRV_CONFIG_ERR_SIZE];

    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NDIRECTIVES; i++) {
        const char *def = directives[i].def;
        if (is_text(directives[i].kind) && *def == '\0')
            continue;
        if (directives[i].kind == SRV_CFG_CHOICE)
            continue; /* the first choice: 0 */
        set_value(cfg, &directives[i], &def, 1, err, sizeof err);
    }
}

int srv_config_set(srv_config *cfg, const char *name, const char **args,
                   int nargs, int runtime, char *err, size_t errlen)
{
    const directive *d = find(name);

    if (!d) {
        snprintf(err, errlen, "unknown directive '%s'", name);
        return -1;
    }
    if (runtime && !(d->flags & SRV_CFG_RUNTIME)) {
        snprintf(err, errlen, "'%s' can't be set while running", d->name);
        return -1;
    }
    if (is_text(d->kind) && nargs == 1 && *args[0] == '\0') {
        ((char *)cfg + d->offset)[0] = '\0';
        return 0;
    }
    return set_value(cfg, d, args, nargs, err, errlen);
}

int srv_config_load_file(srv_config *cfg, const char *path, char *err,
                         size_t errlen)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, *buf = NULL;
    size_t line_cap = 0, buf_cap = 0;
    ssize_t got;
    srv_slice argv[CFG_ARGS_MAX];
    const char *args[CFG_ARGS_MAX];
    char msg[SRV_CONFIG_ERR_SIZE];
    int lineno = 0, rc = 0;

    if (!f) {
        snprintf(err, errlen, "can't open config file '%s': %s", path,
                 strerror(errno));
        return -1;
    }
    /* getline: a line of any length is one line (Redis has no limit). */
    while (rc == 0 && (got = getline(&line, &line_cap, f)) >= 0) {
        size_t len = (size_t)got;
        int argc;
        lineno++;
        if (len + 1 > buf_cap) {
            char *n = realloc(buf, len + 1);
            if (!n) {
                snprintf(err, errlen, "out of memory reading '%s'", path);
                rc = -1;
                break;
            }
            buf = n;
            buf_cap = len + 1;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\0')
            continue;
        argc = srv_resp_split_args(p, len - (size_t)(p - line), buf, argv,
                                   CFG_ARGS_MAX);
        if (argc < 0) {
            snprintf(err, errlen, "file '%s', line %d: %s", path, lineno,
                     argc == SRV_SPLIT_EQUOTES ? "unbalanced quotes"
                                               : "too many arguments");
            rc = -1;
            break;
        }
        if (argc == 0)
            continue;
        /* The splitter's output is NUL-separated; make C strings. */
        for (int i = 0; i < argc; i++) {
            ((char *)argv[i].ptr)[argv[i].len] = '\0';
            args[i] = argv[i].ptr;
        }
        if (srv_config_set(cfg, args[0], args + 1, argc - 1, 0, msg,
                           sizeof msg)) {
            snprintf(err, errlen, "file '%s', line %d: %s", path, lineno, msg);
            rc = -1;
        }
    }
    free(line);
    free(buf);
    fclose(f);
    if (rc == 0 && !realpath(path, cfg->config_file))
        cfg->config_file[0] = '\0';
    return rc;
}

int srv_config_load_args(srv_config *cfg, int argc, char **argv, char *err,
                         size_t errlen)
{
    char msg[SRV_CONFIG_ERR_SIZE];
    int i = 0;

    while (i < argc) {
        if (strncmp(argv[i], "--", 2) != 0 || argv[i][2] == '\0') {
            snprintf(err, errlen,
                     "command line: expected --directive, got '%s'", argv[i]);
            return -1;
        }
        const char *name = argv[i] + 2;
        int first = ++i;
        while (i < argc && strncmp(argv[i], "--", 2) != 0)
            i++;
        if (srv_config_set(cfg, name, (const char **)argv + first, i - first, 0,
                           msg, sizeof msg)) {
            snprintf(err, errlen, "command line: %s", msg);
            return -1;
        }
    }
    return 0;
}

static void format_value(const srv_config *cfg, const directive *d, char *out,
                         size_t size)
{
    const char *field = (const char *)cfg + d->offset;
    long long v = *(const long long *)(const void *)field;

    switch (d->kind) {
    case SRV_CFG_STRING:
    case SRV_CFG_WORDS: snprintf(out, size, "%s", field); break;
    case SRV_CFG_OCTAL: snprintf(out, size, "%llo", v); break;
    case SRV_CFG_LOGLEVEL:
        snprintf(out, size, "%s", srv_log_level_name((int)v));
        break;
    case SRV_CFG_SYNC: snprintf(out, size, "%s", sync_names[v]); break;
    case SRV_CFG_YESNO: snprintf(out, size, "%s", v ? "yes" : "no"); break;
    case SRV_CFG_DEBUGMODE: snprintf(out, size, "%s", debug_names[v]); break;
    case SRV_CFG_CHOICE: choice_name(d->def, v, out, size); break;
    case SRV_CFG_NOTIFY: srv_notify_format(v, out, size); break;
    case SRV_CFG_OBUF: {
        const long long *l = (const long long *)(const void *)field;
        size_t n = 0;
        for (int k = 0; k < SRV_OBUF_CLASSES && n < size; k++)
            n += (size_t)snprintf(out + n, size - n, "%s%s %lld %lld %lld",
                                  k ? " " : "", obuf_names[k],
                                  l[k * SRV_OBUF_FIELDS + SRV_OBUF_HARD],
                                  l[k * SRV_OBUF_FIELDS + SRV_OBUF_SOFT],
                                  l[k * SRV_OBUF_FIELDS + SRV_OBUF_SECONDS]);
        break;
    }
    default: snprintf(out, size, "%lld", v); break;
    }
}

void srv_config_each(const srv_config *cfg, const char *pattern, size_t plen,
                     void (*fn)(void *ctx, const char *name, const char *value),
                     void *ctx)
{
    char value[SRV_PATH_MAX];

    for (size_t i = 0; i < NDIRECTIVES; i++) {
        const directive *d = &directives[i];
        if (!srv_util_glob_match(pattern, plen, d->name, strlen(d->name), 1))
            continue;
        if ((d->flags & SRV_CFG_ALIAS) &&
            !srv_util_streq(pattern, plen, d->name))
            continue; /* aliases only by exact name */
        format_value(cfg, d, value, sizeof value);
        fn(ctx, d->name, value);
    }
}

int srv_config_workers(const srv_config *cfg)
{
    long n = cfg->workers;

    if (n > 0)
        return (int)n;
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void srv_config_copy_runtime(srv_config *dst, const srv_config *src)
{
    for (size_t i = 0; i < NDIRECTIVES; i++) {
        const directive *d = &directives[i];
        if ((d->flags & SRV_CFG_RUNTIME) && !(d->flags & SRV_CFG_ALIAS))
            memcpy((char *)dst + d->offset, (const char *)src + d->offset,
                   field_size(d));
    }
}

/* ---- the live configuration ---- */

/* The generation *srv_her.cfg holds (inherited across fork: a child starts
 * from the master's copy and the master's generation). */
static uint64_t applied_seq;

int srv_config_share(unsigned nslots)
{
    int rc = srv_cfgshm_create(srv_her.cfg, nslots, &srv_her.cfgshm);

    if (rc == 0)
        applied_seq = srv_cfgshm_seq(srv_her.cfgshm);
    return rc;
}

int srv_config_attach(void)
{
    return srv_her.cfgshm ? srv_cfgshm_attach(srv_her.cfgshm) : 0;
}

void srv_config_track(const srv_proc *p)
{
    if (!srv_her.cfgshm || p->slot < 0 ||
        !(srv_role_flags(p->role) & SRV_ROLE_CONFIRMS))
        return;
    /* The child started from our copy: it has applied applied_seq. */
    srv_cfgshm_expect(srv_her.cfgshm, (unsigned)p->slot, p->pid, applied_seq);
}

int srv_config_refresh(void)
{
    /* Static: a whole srv_config is big for some stacks, and only the
     * process's main thread refreshes. */
    static srv_config fresh;
    srv_cfgshm *h = srv_her.cfgshm;
    uint64_t seq;
    int rc;

    if (!h || srv_cfgshm_seq(h) == applied_seq)
        return 0;
    if ((rc = srv_cfgshm_read(h, &fresh, &seq))) {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                "reading the shared configuration failed: %s",
                shm_strerror(rc));
        return rc;
    }
    srv_config_copy_runtime(srv_her.cfg, &fresh);
    applied_seq = seq;
    srv_log_set_level((int)srv_her.cfg->loglevel);
    if (srv_self.slot >= 0)
        srv_cfgshm_ack(h, (unsigned)srv_self.slot, seq);
    srv_log(SRV_LOG_VERBOSE, 0, "configuration #%llu applied",
            (unsigned long long)(seq / SRV_CFGSHM_SEQ_STEP));
    return 1;
}

int srv_config_begin(srv_config *next)
{
    int rc;

    if (!srv_her.cfgshm) {
        *next = *srv_her.cfg;
        return 0;
    }
    if ((rc = srv_cfgshm_lock(srv_her.cfgshm)))
        return rc;
    srv_cfgshm_current_locked(srv_her.cfgshm, next);
    return 0;
}

void srv_config_abort(void)
{
    if (srv_her.cfgshm)
        srv_cfgshm_unlock(srv_her.cfgshm);
}

/* A registered child lags behind `seq` and is still alive. */
static pid_t lagging(unsigned i, uint64_t seq)
{
    pid_t pid = srv_cfgshm_lagging(srv_her.cfgshm, i, seq);

    if (!pid || (int)i == srv_self.slot)
        return 0;
    if (kill(pid, 0) && errno == ESRCH)
        return 0; /* died; the master will notice */
    return pid;
}

/* Wait until the children that confirm have applied `seq` (bounded). */
static int confirm(uint64_t seq)
{
    int64_t tick_ms = MS_PER_S / srv_her.cfg->hz;
    int64_t start = srv_util_monotonic_ms();
    unsigned n = srv_cfgshm_nacks(srv_her.cfgshm);

    for (;;) {
        int waiting = 0;
        pid_t late = 0;
        for (unsigned i = 0; i < n; i++) {
            pid_t pid = lagging(i, seq);
            if (pid) {
                waiting++;
                late = pid;
            }
        }
        if (!waiting)
            return 0;
        int64_t waited = srv_util_monotonic_ms() - start;
        if (waited >= CONFIRM_TICKS * tick_ms) {
            srv_log(SRV_LOG_NOTICE, 0,
                    "configuration #%llu: %d processes (pid %d among them) "
                    "have not applied it after %lld ms; they will at their "
                    "next tick",
                    (unsigned long long)(seq / SRV_CFGSHM_SEQ_STEP), waiting,
                    (int)late, (long long)waited);
            return waiting;
        }
        struct timespec ts = { 0, CONFIRM_POLL_US * NS_PER_US };
        nanosleep(&ts, NULL);
        /* Apply what others publish meanwhile: two processes committing
         * at once must not wait for each other's acknowledgement. */
        srv_config_refresh();
    }
}

int srv_config_commit(const srv_config *next)
{
    uint64_t seq;

    if (!srv_her.cfgshm) {
        *srv_her.cfg = *next;
        srv_log_set_level((int)srv_her.cfg->loglevel);
        return 0;
    }
    seq = srv_cfgshm_publish_locked(srv_her.cfgshm, next);
    srv_cfgshm_unlock(srv_her.cfgshm);
    srv_config_refresh();
    return confirm(seq);
}
