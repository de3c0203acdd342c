/*
 * srv_config_redis.c - the value tables of the enum directives and the
 * checkers of the special ones (srv_config_redis.h): each takes the words
 * CONFIG SET or a config file gives, checks them as Redis 7.0 does (same
 * reasons) and writes the text CONFIG GET answers.
 */
#include "server/srv_config_redis.h"
#include "server/srv_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#define OOMV_COUNT 3
#define OOMV_MIN (-2000)
#define OOMV_MAX 2000
#define PERCENT_MAX 100.0
#define NUM_SIZE 64
#define REPL_BACKLOG_MIN (16 * 1024)

static const srv_cfg_enum_value supervised[] = {
    { "upstart", SRV_SUPERVISED_UPSTART },
    { "systemd", SRV_SUPERVISED_SYSTEMD },
    { "auto", SRV_SUPERVISED_AUTO },
    { "no", SRV_SUPERVISED_NO },
    { NULL, 0 },
};

static const srv_cfg_enum_value facility[] = {
    { "user", LOG_USER },     { "local0", LOG_LOCAL0 },
    { "local1", LOG_LOCAL1 }, { "local2", LOG_LOCAL2 },
    { "local3", LOG_LOCAL3 }, { "local4", LOG_LOCAL4 },
    { "local5", LOG_LOCAL5 }, { "local6", LOG_LOCAL6 },
    { "local7", LOG_LOCAL7 }, { NULL, 0 },
};

static const srv_cfg_enum_value maxmemory_policy[] = {
    { "volatile-lru", 0 },   { "volatile-lfu", 1 }, { "volatile-random", 2 },
    { "volatile-ttl", 3 },   { "allkeys-lru", 4 },  { "allkeys-lfu", 5 },
    { "allkeys-random", 6 }, { "noeviction", 7 },   { NULL, 0 },
};

static const srv_cfg_enum_value repl_diskless_load[] = {
    { "disabled", 0 },
    { "on-empty-db", 1 },
    { "swapdb", 2 },
    { NULL, 0 },
};

static const srv_cfg_enum_value oom_score_adj[] = {
    { "no", 0 },       { "yes", 1 }, { "relative", 1 },
    { "absolute", 2 }, { NULL, 0 },
};

static const srv_cfg_enum_value acl_pubsub[] = {
    { "allchannels", 1 },
    { "resetchannels", 0 },
    { NULL, 0 },
};

static const srv_cfg_enum_value sanitize[] = {
    { "no", 0 },
    { "yes", 1 },
    { "clients", 2 },
    { NULL, 0 },
};

static const srv_cfg_enum_value protected_action[] = {
    { "no", 0 },
    { "yes", 1 },
    { "local", 2 },
    { NULL, 0 },
};

static const srv_cfg_enum_value endpoint[] = {
    { "ip", 0 },
    { "hostname", 1 },
    { "unknown-endpoint", 2 },
    { NULL, 0 },
};

static const srv_cfg_enum_value propagation_error[] = {
    { "ignore", 0 },
    { "panic", 1 },
    { "panic-on-replicas", 2 },
    { NULL, 0 },
};

static const srv_cfg_enum_value *const enum_tables[] = {
    [SRV_ENUM_SUPERVISED] = supervised,
    [SRV_ENUM_FACILITY] = facility,
    [SRV_ENUM_MAXMEMORY_POLICY] = maxmemory_policy,
    [SRV_ENUM_REPL_DISKLESS_LOAD] = repl_diskless_load,
    [SRV_ENUM_OOM_SCORE_ADJ] = oom_score_adj,
    [SRV_ENUM_ACL_PUBSUB] = acl_pubsub,
    [SRV_ENUM_SANITIZE] = sanitize,
    [SRV_ENUM_PROTECTED] = protected_action,
    [SRV_ENUM_ENDPOINT] = endpoint,
    [SRV_ENUM_PROPAGATION_ERROR] = propagation_error,
};

_Static_assert(sizeof enum_tables / sizeof enum_tables[0] == SRV_NENUMS,
               "a table per enum");

const srv_cfg_enum_value *srv_config_enum_table(int id)
{
    return id >= 0 && id < SRV_NENUMS ? enum_tables[id] : NULL;
}

/* ---- helpers ---- */

/* Append word to out (SRV_CFG_TEXT_MAX) after a space unless first. */
static int put_word(char *out, size_t *n, const char *word, char *err,
                    size_t errlen)
{
    size_t len = strlen(word);

    if (*n + len + 2 > SRV_CFG_TEXT_MAX) {
        snprintf(err, errlen, "value too long (at most %d bytes)",
                 SRV_CFG_TEXT_MAX - 1);
        return -1;
    }
    if (*n)
        out[(*n)++] = ' ';
    memcpy(out + *n, word, len + 1);
    *n += len;
    return 0;
}

/* strtoll with nothing after the number, as Redis's save checker. */
static int parse_strtoll(const char *s, long long *v)
{
    char *end;

    errno = 0;
    *v = strtoll(s, &end, 10);
    return *s != '\0' && *end == '\0' && errno == 0;
}

/* ---- save ---- */

static int parse_save(const char *const *w, int n, const char *cur, int replace,
                      char *out, char *err, size_t errlen)
{
    char num[NUM_SIZE];
    size_t len = 0;

    out[0] = '\0';
    if (n == 1 && w[0][0] == '\0')
        return 0;
    if (n % 2) {
        snprintf(err, errlen, "Invalid save parameters");
        return -1;
    }
    if (!replace && cur[0] && put_word(out, &len, cur, err, errlen))
        return -1;
    for (int i = 0; i < n; i++) {
        long long v;
        if (!parse_strtoll(w[i], &v) || (i % 2 == 0 && v < 1) ||
            (i % 2 == 1 && v < 0)) {
            snprintf(err, errlen, "Invalid save parameters");
            return -1;
        }
        snprintf(num, sizeof num, "%lld", v);
        if (put_word(out, &len, num, err, errlen))
            return -1;
    }
    return 0;
}

/* ---- oom-score-adj-values ---- */

static int parse_oomv(const char *const *w, int n, char *out, char *err,
                      size_t errlen)
{
    long long v[OOMV_COUNT];

    if (n != OOMV_COUNT) {
        snprintf(err, errlen, "wrong number of arguments");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!parse_strtoll(w[i], &v[i]) || v[i] < OOMV_MIN || v[i] > OOMV_MAX) {
            snprintf(err, errlen,
                     "Invalid oom-score-adj-values, elements must be "
                     "between %d and %d.",
                     OOMV_MIN, OOMV_MAX);
            return -1;
        }
    snprintf(out, SRV_CFG_TEXT_MAX, "%lld %lld %lld", v[0], v[1], v[2]);
    return 0;
}

/* ---- latency-tracking-info-percentiles ---- */

static int parse_percentiles(const char *const *w, int n, char *out, char *err,
                             size_t errlen)
{
    char num[NUM_SIZE];
    size_t len = 0;

    out[0] = '\0';
    if (n == 1 && w[0][0] == '\0')
        return 0;
    for (int i = 0; i < n; i++) {
        double d;
        if (!srv_util_str2d(w[i], strlen(w[i]), &d)) {
            snprintf(err, errlen,
                     "Invalid latency-tracking-info-percentiles parameters");
            return -1;
        }
        if (d < 0.0 || d > PERCENT_MAX) {
            snprintf(err, errlen,
                     "latency-tracking-info-percentiles parameters should "
                     "sit between [0.0,100.0]");
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        double d;
        srv_util_str2d(w[i], strlen(w[i]), &d);
        int k = snprintf(num, sizeof num, "%f", d);
        while (k > 0 && num[k - 1] == '0')
            num[--k] = '\0';
        if (k > 0 && num[k - 1] == '.')
            num[--k] = '\0';
        if (put_word(out, &len, num, err, errlen))
            return -1;
    }
    return 0;
}

/* ---- shutdown-on-sigint / shutdown-on-sigterm ---- */

static const char *const shutdown_flags[] = { "default", "save", "nosave",
                                              "now", "force" };
#define NSHUTDOWN_FLAGS (sizeof shutdown_flags / sizeof shutdown_flags[0])

static int parse_shutdown(const char *const *w, int n, char *out, char *err,
                          size_t errlen)
{
    unsigned flags = 0;
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        size_t f;
        for (f = 0; f < NSHUTDOWN_FLAGS; f++)
            if (!strcasecmp(w[i], shutdown_flags[f]))
                break;
        if (f == NSHUTDOWN_FLAGS) {
            snprintf(err, errlen,
                     "argument(s) must be one of the following: default, "
                     "save, nosave, now, force");
            return -1;
        }
        flags |= 1u << f;
    }
    if ((flags & (1u << 1)) && (flags & (1u << 2))) {
        snprintf(err, errlen,
                 "shutdown options SAVE and NOSAVE can't be "
                 "used simultaneously");
        return -1;
    }
    out[0] = '\0';
    for (size_t f = 1; f < NSHUTDOWN_FLAGS; f++)
        if (flags & (1u << f))
            put_word(out, &len, shutdown_flags[f], err, errlen);
    if (len == 0)
        snprintf(out, SRV_CFG_TEXT_MAX, "%s", shutdown_flags[0]);
    return 0;
}

/* ---- replicaof ---- */

static int parse_replicaof(const char *const *w, int n, char *out, char *err,
                           size_t errlen)
{
    long long port;

    if (n == 1 && w[0][0] == '\0') {
        out[0] = '\0';
        return 0;
    }
    if (n != 2) {
        snprintf(err, errlen, "wrong number of arguments");
        return -1;
    }
    if (!strcasecmp(w[0], "no") && !strcasecmp(w[1], "one")) {
        out[0] = '\0';
        return 0;
    }
    if (!parse_strtoll(w[1], &port) || port < 0 || port > 65535) {
        snprintf(err, errlen, "Invalid master port");
        return -1;
    }
    snprintf(out, SRV_CFG_TEXT_MAX, "%s %lld", w[0], port);
    return 0;
}

int srv_config_special_parse(int id, const char *const *words, int nwords,
                             const char *cur, int replace, char *out, char *err,
                             size_t errlen)
{
    switch (id) {
    case SRV_SPECIAL_SAVE:
        return parse_save(words, nwords, cur, replace, out, err, errlen);
    case SRV_SPECIAL_OOMV: return parse_oomv(words, nwords, out, err, errlen);
    case SRV_SPECIAL_PERCENTILES:
        return parse_percentiles(words, nwords, out, err, errlen);
    case SRV_SPECIAL_SHUTDOWN:
        return parse_shutdown(words, nwords, out, err, errlen);
    case SRV_SPECIAL_REPLICAOF:
        return parse_replicaof(words, nwords, out, err, errlen);
    default: snprintf(err, errlen, "no checker %d", id); return -1;
    }
}

/* ---- checks of single parameters ---- */

/* proc-title-template's variables (Redis's). */
static const char *const title_vars[] = {
    "{title}",    "{listen-addr}", "{server-mode}", "{port}",
    "{tls-port}", "{unixsocket}",  "{config-file}",
};

static int valid_title(const char *s)
{
    if (!*s)
        return 0;
    while (*s) {
        if (*s == '}')
            return 0;
        if (*s != '{') {
            s++;
            continue;
        }
        size_t i, n = sizeof title_vars / sizeof title_vars[0];
        for (i = 0; i < n; i++)
            if (!strncmp(s, title_vars[i], strlen(title_vars[i])))
                break;
        if (i == n)
            return 0;
        s += strlen(title_vars[i]);
    }
    return 1;
}

int srv_config_redis_check(const char *name, const char *value, char *err,
                           size_t errlen)
{
    if (!strcasecmp(name, "activedefrag") && !strcasecmp(value, "yes")) {
        snprintf(err, errlen,
                 "Active defragmentation cannot be enabled: it requires a "
                 "Redis server compiled with a modified Jemalloc like the "
                 "one shipped by default with the Redis source distribution");
        return -1;
    }
    if (!strcasecmp(name, "cluster-announce-hostname")) {
        for (const char *p = value; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '-' || *p == '.')) {
                snprintf(err, errlen,
                         "Hostnames may only contain "
                         "alphanumeric characters, hyphens or "
                         "dots");
                return -1;
            }
    }
    if (!strcasecmp(name, "proc-title-template") && !valid_title(value)) {
        snprintf(err, errlen,
                 "template format is invalid or contains "
                 "unknown variables");
        return -1;
    }
    return 0;
}

long long srv_config_redis_clamp(const char *name, long long v)
{
    if (!strcasecmp(name, "repl-backlog-size") && v < REPL_BACKLOG_MIN)
        return REPL_BACKLOG_MIN;
    return v;
}
