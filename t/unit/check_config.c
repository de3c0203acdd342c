/*
 * check_config: unit tests of the configuration table (server/srv_config.h):
 * defaults, redis.conf-style files (comments, quotes, multi-word bind),
 * errors that name file, line and directive, command-line overrides, sizes
 * with units, CONFIG GET globbing and the runtime-only rule of CONFIG SET;
 * and the live configuration: a change committed by one process reaches
 * another's copy (runtime directives only, log level applied), commit
 * waits for the children that confirm, and gives up on one that does not.
 * Config files are written to a temp dir removed after each test.
 */
#include "t/unit/unit_tmp.h"
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/srv_cfgshm.h"
#include "server/srv_config.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_role.h"

#define KIB 1024LL
#define MIB (1024LL * 1024)
#define GIB (1024LL * 1024 * 1024)
#define MAX_SEEN 512
#define ROOT_SIZE 1024
#define DIR_SIZE 2048
#define LIVE_NSLOTS 6
#define LIVE_NWORKERS (LIVE_NSLOTS - SRV_ROLE_DUTY_SLOTS)
#define LIVE_HZ 10
#define LIVE_TIMEOUT_S 30
#define MS_PER_S 1000
#define NS_PER_MS 1000000
#define POLL_MS 5
#define CFG_NUM_SIZE 32
/* A commit whose workers refresh every POLL_MS returns well within this;
 * one that gives up does after 3 ticks of 1/LIVE_HZ s. */
#define CONFIRM_LIMIT_MS 1000

/*
 * A root temp dir per TCase (unchecked fixture, removed by the runner even
 * when a test dies early) and a fresh dir per test inside it.
 */
static char root[ROOT_SIZE];
static char tmpdir[DIR_SIZE];
static char tmppath[SRV_PATH_MAX];
static int ntmpfiles;

static void root_setup(void)
{
    unit_tmp_make(root, sizeof root, "check_config");
}

static void root_teardown(void) { unit_tmp_remove(root); }

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/t.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    ntmpfiles = 0;
}

static void teardown(void)
{
    char path[SRV_PATH_MAX];

    for (int i = 0; i < ntmpfiles; i++) {
        snprintf(path, sizeof path, "%s/%d.conf", tmpdir, i);
        unlink(path);
    }
    rmdir(tmpdir);
}

/* Write `text` to a fresh file in the temp dir; returns its path. */
static const char *write_conf(const char *text)
{
    FILE *f;

    snprintf(tmppath, sizeof tmppath, "%s/%d.conf", tmpdir, ntmpfiles++);
    f = fopen(tmppath, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    return tmppath;
}

static void load_ok(srv_config *cfg, const char *text)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";

    srv_config_defaults(cfg);
    ck_assert_msg(srv_config_load_file(cfg, write_conf(text), err,
                                       sizeof err) == 0,
                  "load failed: %s", err);
}

/* Load `text`, expect failure, and check the message has each needle. */
static void load_fails(const char *text, const char *const *needles)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";
    srv_config cfg;
    const char *path;

    srv_config_defaults(&cfg);
    path = write_conf(text);
    ck_assert_int_eq(srv_config_load_file(&cfg, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, path) != NULL, "'%s' lacks the path", err);
    for (; *needles; needles++)
        ck_assert_msg(strstr(err, *needles) != NULL, "'%s' lacks '%s'", err,
                      *needles);
}

/* ------------------------------------------------------------------ */
/* defaults and files */

START_TEST(test_defaults)
{
    srv_config cfg;

    memset(&cfg, 0xa5, sizeof cfg);
    srv_config_defaults(&cfg);
    ck_assert_str_eq(cfg.bind, "127.0.0.1");
    ck_assert_int_eq(cfg.port, 6379);
    ck_assert_str_eq(cfg.unixsocket, "");
    ck_assert_int_eq(cfg.unixsocketperm, 0);
    ck_assert_str_eq(cfg.dir, "./var");
    ck_assert_int_eq(cfg.workers, 0);
    ck_assert_int_eq(cfg.databases, 16);
    ck_assert_int_eq(cfg.maxclients, 10000);
    ck_assert_int_eq(cfg.timeout, 0);
    ck_assert_int_eq(cfg.tcp_keepalive, 300);
    ck_assert_int_eq(cfg.tcp_backlog, 511);
    ck_assert_int_eq(cfg.loglevel, SRV_LOG_NOTICE);
    ck_assert_str_eq(cfg.logfile, "");
    ck_assert_str_eq(cfg.pidfile, "");
    ck_assert_int_eq(cfg.proto_max_bulk_len, 512 * MIB);
    ck_assert_int_eq(cfg.client_query_buffer_limit, GIB);
    ck_assert_str_eq(cfg.requirepass, "");
    ck_assert_int_eq(cfg.maxdisk, 64 * GIB);
    ck_assert_int_eq(cfg.sync, SRV_SYNC_EVERYSEC);
    ck_assert_int_eq(cfg.hz, 10);
    ck_assert_str_eq(cfg.config_file, "");
}
END_TEST

/* Set directive `name` to its own table default on a default config. */
static void default_round_trip(const char *name, const char *def)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";
    srv_config a, b;

    srv_config_defaults(&a);
    srv_config_defaults(&b);
    ck_assert_msg(srv_config_set(&b, name, &def, 1, 0, err, sizeof err) == 0,
                  "default of '%s' ('%s') does not parse: %s", name, def, err);
    ck_assert_msg(memcmp(&a, &b, sizeof a) == 0,
                  "'%s %s' differs from the default", name, def);
}

/* A choice directive's default is the first of its "a|b|c". */
static const char *default_word(int kind, const char *def, char *buf,
                                size_t size)
{
    if (kind != SRV_CFG_CHOICE)
        return def;
    snprintf(buf, size, "%.*s", (int)strcspn(def, "|"), def);
    return buf;
}

START_TEST(test_defaults_parse)
{
    char word[SRV_CONFIG_ERR_SIZE];

    /* Every default in the table is a valid value of its directive, and
     * is what srv_config_defaults() applies. */
#define X(n, f, k, d, lo, hi, fl) \
    default_round_trip(n, default_word(k, d, word, sizeof word));
    SRV_CONFIG_DIRECTIVES(X)
#undef X
}
END_TEST

START_TEST(test_file_basic)
{
    srv_config cfg;
    char real[PATH_MAX];

    load_ok(&cfg, "# a comment line\n"
                  "\n"
                  "   # an indented comment\n"
                  "port 7000\n"
                  "  databases   32  \n"
                  "bind 127.0.0.1 ::1\n"
                  "logfile \"/tmp/my log.txt\"\n"
                  "requirepass 'it\\'s'\n"
                  "dir \"/var/lib/lar\\x64er\"\r\n"
                  "loglevel warning\n"
                  "sync always\n"
                  "unixsocketperm 0770\n"
                  "\t\n"
                  "hz 100"); /* no newline at the end */
    ck_assert_int_eq(cfg.port, 7000);
    ck_assert_int_eq(cfg.databases, 32);
    ck_assert_str_eq(cfg.bind, "127.0.0.1 ::1");
    ck_assert_str_eq(cfg.logfile, "/tmp/my log.txt");
    ck_assert_str_eq(cfg.requirepass, "it's");
    ck_assert_str_eq(cfg.dir, "/var/lib/larder");
    ck_assert_int_eq(cfg.loglevel, SRV_LOG_WARNING);
    ck_assert_int_eq(cfg.sync, SRV_SYNC_ALWAYS);
    ck_assert_int_eq(cfg.unixsocketperm, 0770);
    ck_assert_int_eq(cfg.hz, 100);
    /* Untouched directives keep their defaults. */
    ck_assert_int_eq(cfg.maxclients, 10000);
    /* The file is remembered by its absolute path (CONFIG REWRITE). */
    ck_assert_ptr_nonnull(realpath(tmppath, real));
    ck_assert_str_eq(cfg.config_file, real);
}
END_TEST

START_TEST(test_file_names_case_insensitive)
{
    srv_config cfg;

    load_ok(&cfg, "PORT 7001\nMaxClients 5\nSYNC No\n");
    ck_assert_int_eq(cfg.port, 7001);
    ck_assert_int_eq(cfg.maxclients, 5);
    ck_assert_int_eq(cfg.sync, SRV_SYNC_NO);
}
END_TEST

START_TEST(test_file_later_wins_and_alias)
{
    srv_config cfg;

    load_ok(&cfg, "port 1\nport 2\nappendfsync no\n");
    ck_assert_int_eq(cfg.port, 2);
    ck_assert_int_eq(cfg.sync, SRV_SYNC_NO);
    load_ok(&cfg, "sync always\nappendfsync everysec\n");
    ck_assert_int_eq(cfg.sync, SRV_SYNC_EVERYSEC);
}
END_TEST

START_TEST(test_file_empty_string)
{
    srv_config cfg;

    load_ok(&cfg, "requirepass secret\nrequirepass \"\"\nbind \"\"\n");
    ck_assert_str_eq(cfg.requirepass, "");
    ck_assert_str_eq(cfg.bind, "");
}
END_TEST

START_TEST(test_file_errors)
{
    static const char *const unknown[] = { "line 3", "'nosuch'", NULL };
    static const char *const bad_port[] = { "line 2", "'port'", "99999", NULL };
    static const char *const bad_int[] = { "line 1", "'hz'", NULL };
    static const char *const bad_sync[] = { "line 1", "'sync'", "sometimes",
                                            NULL };
    static const char *const bad_level[] = { "line 1", "'loglevel'", NULL };
    static const char *const quotes[] = { "line 2", "quotes", NULL };
    static const char *const two_values[] = { "line 1", "'port'", NULL };
    static const char *const no_value[] = { "line 1", "'port'", NULL };
    static const char *const bad_size[] = { "line 1", "'maxdisk'", NULL };
    static const char *const bad_octal[] = { "line 1", "'unixsocketperm'",
                                             NULL };

    load_fails("port 7000\n# fine\nnosuch 1\n", unknown);
    load_fails("port 7000\nport 99999\n", bad_port);
    load_fails("hz -1\n", bad_int);
    load_fails("sync sometimes\n", bad_sync);
    load_fails("loglevel loud\n", bad_level);
    load_fails("port 1\ndir \"/tmp\n", quotes);
    load_fails("port 1 2\n", two_values);
    load_fails("port\n", no_value);
    load_fails("maxdisk 10zb\n", bad_size);
    load_fails("unixsocketperm 0999\n", bad_octal);
}
END_TEST

START_TEST(test_file_long_lines)
{
    /*
     * A line longer than the reader's buffer (here a long comment) is
     * still one line: its tail must not be read as a directive, and line
     * numbers after it stay right. Redis has no line length limit.
     */
    static const char *const bad_hz[] = { "line 4", "'hz'", NULL };
    size_t n = 70000;
    char *text = malloc(n + 64);
    srv_config cfg;

    ck_assert_ptr_nonnull(text);
    memcpy(text, "# ", 2);
    memset(text + 2, 'x', n - 2);
    strcpy(text + n, "\nport 7002\n");
    load_ok(&cfg, text);
    ck_assert_int_eq(cfg.port, 7002);

    strcpy(text + n, "\nport 7002\n\nhz -1\n");
    load_fails(text, bad_hz);
    free(text);
}
END_TEST

START_TEST(test_file_missing)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";
    char path[SRV_PATH_MAX];
    srv_config cfg;

    srv_config_defaults(&cfg);
    snprintf(path, sizeof path, "%s/absent.conf", tmpdir);
    ck_assert_int_eq(srv_config_load_file(&cfg, path, err, sizeof err), -1);
    ck_assert_msg(strstr(err, path) != NULL, "'%s' lacks the path", err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* command line */

START_TEST(test_args_overrides)
{
    char *argv[] = { "--port",    "7000", "--bind",     "127.0.0.1", "::1",
                     "--maxdisk", "2gb",  "--loglevel", "debug" };
    char err[SRV_CONFIG_ERR_SIZE] = "";
    srv_config cfg;

    load_ok(&cfg, "port 6380\nbind 0.0.0.0\nhz 20\n");
    ck_assert_msg(srv_config_load_args(&cfg, 9, argv, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq(cfg.port, 7000);
    ck_assert_str_eq(cfg.bind, "127.0.0.1 ::1");
    ck_assert_int_eq(cfg.maxdisk, 2 * GIB);
    ck_assert_int_eq(cfg.loglevel, SRV_LOG_DEBUG);
    ck_assert_int_eq(cfg.hz, 20); /* from the file, not overridden */
}
END_TEST

START_TEST(test_args_errors)
{
    char *no_dashes[] = { "port", "7000" };
    char *unknown[] = { "--nosuch", "1" };
    char *no_value[] = { "--port" };
    char *bad[] = { "--port", "7000", "--hz", "x" };
    char *bare[] = { "--" };
    char err[SRV_CONFIG_ERR_SIZE];
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_int_eq(srv_config_load_args(&cfg, 2, no_dashes, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "port"));
    ck_assert_int_eq(srv_config_load_args(&cfg, 2, unknown, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "nosuch"));
    ck_assert_int_eq(srv_config_load_args(&cfg, 1, no_value, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "port"));
    ck_assert_int_eq(srv_config_load_args(&cfg, 4, bad, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "'hz'"));
    ck_assert_int_eq(srv_config_load_args(&cfg, 1, bare, err, sizeof err), -1);
    ck_assert_int_eq(srv_config_load_args(&cfg, 0, NULL, err, sizeof err), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* sizes */

static long long size_of(const char *text)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";
    const char *args[] = { text };
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_msg(srv_config_set(&cfg, "maxdisk", args, 1, 0, err,
                                 sizeof err) == 0,
                  "maxdisk %s: %s", text, err);
    return cfg.maxdisk;
}

static void size_bad(const char *text)
{
    char err[SRV_CONFIG_ERR_SIZE] = "";
    const char *args[] = { text };
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_msg(srv_config_set(&cfg, "maxdisk", args, 1, 0, err,
                                 sizeof err) == -1,
                  "maxdisk '%s' accepted", text);
    ck_assert_int_eq(cfg.maxdisk, 64 * GIB);
    ck_assert_ptr_nonnull(strstr(err, "maxdisk"));
}

START_TEST(test_sizes)
{
    /* 1k = 1000, 1kb = 1024, and so on up (redis.conf's convention). */
    ck_assert_int_eq(size_of("2000k"), 2000 * 1000LL);
    ck_assert_int_eq(size_of("2000kb"), 2000 * KIB);
    ck_assert_int_eq(size_of("3m"), 3 * 1000LL * 1000);
    ck_assert_int_eq(size_of("3mb"), 3 * MIB);
    ck_assert_int_eq(size_of("5g"), 5 * 1000LL * 1000 * 1000);
    ck_assert_int_eq(size_of("5gb"), 5 * GIB);
    ck_assert_int_eq(size_of("5GB"), 5 * GIB);
    ck_assert_int_eq(size_of("5Mb"), 5 * MIB);
    ck_assert_int_eq(size_of("1048576"), MIB);
    ck_assert_int_eq(size_of("8589934591gb"), 8589934591LL * GIB);
}
END_TEST

START_TEST(test_sizes_bad)
{
    size_bad("");
    size_bad("mb");
    size_bad("-1mb");
    size_bad("1tb");
    size_bad("1.5gb");
    size_bad("1 gb");
    size_bad("1kbb");
    size_bad("1000k");        /* below the 1 MiB minimum */
    size_bad("8589934592gb"); /* 2^63: one past the top */
    size_bad("99999999999999999999");
}
END_TEST

/* ------------------------------------------------------------------ */
/* CONFIG GET / SET */

typedef struct seen {
    int n;
    char name[MAX_SEEN][64];
    char value[MAX_SEEN][SRV_PATH_MAX];
} seen;

static void collect(void *ctx, const char *name, const char *value)
{
    seen *s = ctx;

    ck_assert_int_lt(s->n, MAX_SEEN);
    snprintf(s->name[s->n], sizeof s->name[0], "%s", name);
    snprintf(s->value[s->n], sizeof s->value[0], "%s", value);
    s->n++;
}

static seen *get(const srv_config *cfg, const char *pattern)
{
    static seen s;

    memset(&s, 0, sizeof s);
    srv_config_each(cfg, pattern, strlen(pattern), collect, &s);
    return &s;
}

static const char *value_of(const seen *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return s->value[i];
    return NULL;
}

START_TEST(test_config_get)
{
    srv_config cfg;
    seen *s;

    srv_config_defaults(&cfg);
    s = get(&cfg, "port");
    ck_assert_int_eq(s->n, 1);
    ck_assert_str_eq(s->name[0], "port");
    ck_assert_str_eq(s->value[0], "6379");

    s = get(&cfg, "PORT");
    ck_assert_int_eq(s->n, 1);

    s = get(&cfg, "nosuch");
    ck_assert_int_eq(s->n, 0);

    /* Glob over names; aliases are listed too, as Redis lists them. */
    s = get(&cfg, "*max*");
    ck_assert_str_eq(value_of(s, "hll-sparse-max-bytes"), "3000");
    ck_assert_str_eq(value_of(s, "acllog-max-len"), "128");
    ck_assert_str_eq(value_of(s, "maxclients"), "10000");
    ck_assert_str_eq(value_of(s, "proto-max-bulk-len"), "536870912");
    ck_assert_str_eq(value_of(s, "maxdisk"), "68719476736");
    ck_assert_str_eq(value_of(s, "hash-max-listpack-entries"), "512");
    ck_assert_str_eq(value_of(s, "hash-max-ziplist-entries"), "512");
    ck_assert_str_eq(value_of(s, "maxmemory-clients"), "0");
    ck_assert_ptr_null(value_of(s, "port"));

    s = get(&cfg, "*");
    ck_assert_str_eq(value_of(s, "appendfsync"), "everysec");
    ck_assert_str_eq(value_of(s, "appendonly"), "yes");
    ck_assert_str_eq(value_of(s, "sync"), "everysec");
    ck_assert_str_eq(value_of(s, "loglevel"), "notice");
    ck_assert_str_eq(value_of(s, "bind"), "127.0.0.1");
    ck_assert_str_eq(value_of(s, "unixsocket"), "");
    ck_assert_ptr_nonnull(value_of(s, "hz"));
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++)
            ck_assert_str_ne(s->name[i], s->name[j]);

    s = get(&cfg, "appendfsync");
    ck_assert_int_eq(s->n, 1);
    ck_assert_str_eq(s->value[0], "everysec");

    s = get(&cfg, "tcp-*");
    ck_assert_int_eq(s->n, 2);
    s = get(&cfg, "h?");
    ck_assert_int_eq(s->n, 1);
    ck_assert_str_eq(s->value[0], "10");
}
END_TEST

START_TEST(test_config_get_formats)
{
    srv_config cfg;

    load_ok(&cfg, "unixsocketperm 700\nbind 127.0.0.1 ::1\nsync no\n"
                  "loglevel verbose\n");
    ck_assert_str_eq(get(&cfg, "unixsocketperm")->value[0], "700");
    ck_assert_str_eq(get(&cfg, "bind")->value[0], "127.0.0.1 ::1");
    ck_assert_str_eq(get(&cfg, "sync")->value[0], "no");
    ck_assert_str_eq(get(&cfg, "loglevel")->value[0], "verbose");
}
END_TEST

START_TEST(test_config_set_runtime)
{
    char err[SRV_CONFIG_ERR_SIZE];
    const char *v7000[] = { "7000" };
    const char *v5[] = { "5" };
    const char *vbad[] = { "lots" };
    const char *v2mb[] = { "2mb" };
    srv_config cfg;

    srv_config_defaults(&cfg);
    /* CONFIG SET (runtime) refuses directives that need a restart... */
    ck_assert_int_eq(srv_config_set(&cfg, "port", v7000, 1, 1, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "port"));
    ck_assert_int_eq(cfg.port, 6379);
    ck_assert_int_eq(srv_config_set(&cfg, "databases", v5, 1, 1, err,
                                    sizeof err),
                     -1);
    ck_assert_int_eq(cfg.databases, 16);
    /* ...which the file and command line may set. */
    ck_assert_int_eq(srv_config_set(&cfg, "port", v7000, 1, 0, err, sizeof err),
                     0);
    ck_assert_int_eq(cfg.port, 7000);
    /* Runtime directives work either way. */
    ck_assert_int_eq(srv_config_set(&cfg, "maxclients", v5, 1, 1, err,
                                    sizeof err),
                     0);
    ck_assert_int_eq(cfg.maxclients, 5);
    ck_assert_int_eq(srv_config_set(&cfg, "proto-max-bulk-len", v2mb, 1, 1, err,
                                    sizeof err),
                     0);
    ck_assert_int_eq(cfg.proto_max_bulk_len, 2 * MIB);
    /* A bad value leaves the old one. */
    ck_assert_int_eq(srv_config_set(&cfg, "maxclients", vbad, 1, 1, err,
                                    sizeof err),
                     -1);
    ck_assert_int_eq(cfg.maxclients, 5);
    ck_assert_int_eq(srv_config_set(&cfg, "nosuch", v5, 1, 1, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "nosuch"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* CONFIG SET of pairs, and CONFIG REWRITE */

static int set_pairs(srv_config *cfg, const char *const *words, int n,
                     char *err, size_t errlen)
{
    srv_slice pairs[CFG_NUM_SIZE];

    for (int i = 0; i < n; i++)
        pairs[i] = (srv_slice){ (char *)words[i], strlen(words[i]) };
    return srv_config_set_pairs(cfg, pairs, n / 2, err, errlen);
}

START_TEST(test_set_pairs)
{
    static const char *const ok[] = { "maxclients", "7",    "slave-priority",
                                      "9",          "save", "900 1 300 10",
                                      "appendonly", "no" };
    static const char *const dup[] = { "hz", "20", "HZ", "30" };
    static const char *const imm[] = { "hz", "20", "port", "1" };
    static const char *const prot[] = { "dir", "/tmp" };
    static const char *const unknown[] = { "nosuch", "1" };
    static const char *const bad[] = { "maxclients", "x" };
    char err[SRV_CONFIG_ERR_SIZE * 2], v[SRV_PATH_MAX];
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_int_eq(set_pairs(&cfg, ok, 8, err, sizeof err), 0);
    ck_assert_int_eq(cfg.maxclients, 7);
    ck_assert_int_eq(srv_config_get_one(&cfg, "replica-priority", v, sizeof v),
                     0);
    ck_assert_str_eq(v, "9"); /* the alias sets its row */
    ck_assert_str_eq(cfg.save, "900 1 300 10");
    ck_assert_int_eq(cfg.sync, SRV_SYNC_NO); /* appendonly no */
    ck_assert_int_eq(set_pairs(&cfg, dup, 4, err, sizeof err), -1);
    ck_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to "
                          "argument 'HZ') - duplicate parameter");
    ck_assert_int_eq(set_pairs(&cfg, imm, 4, err, sizeof err), -1);
    ck_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to "
                          "argument 'port') - can't set immutable config");
    ck_assert_int_eq(cfg.hz, 10); /* nothing was set before the check */
    ck_assert_int_eq(set_pairs(&cfg, prot, 2, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "can't set protected config"));
    ck_assert_int_eq(set_pairs(&cfg, unknown, 2, err, sizeof err), -1);
    ck_assert_str_eq(err, "ERR Unknown option or number of arguments for "
                          "CONFIG SET - 'nosuch'");
    ck_assert_int_eq(set_pairs(&cfg, bad, 2, err, sizeof err), -1);
    ck_assert_str_eq(err, "ERR CONFIG SET failed (possibly related to "
                          "argument 'maxclients') - argument couldn't be "
                          "parsed into an integer");
}
END_TEST

static void report_diff(void *ctx, const char *name, int runtime)
{
    ck_abort_msg("'%s' differs after the round trip", name);
}

START_TEST(test_rewrite_round_trip)
{
    static const char *const change[] = { "hz",
                                          "25",
                                          "maxmemory-policy",
                                          "allkeys-lru",
                                          "save",
                                          "60 5",
                                          "client-output-buffer-limit",
                                          "pubsub 1mb 2mb 3",
                                          "requirepass",
                                          "with space \"quoted\"",
                                          "lfu-log-factor",
                                          "4" };
    char err[SRV_CONFIG_ERR_SIZE * 2], line[SRV_PATH_MAX];
    const char *path = write_conf("# keep me\nhz 10\n\n# and me\n"
                                  "save 900 1\nsave 300 10\nunknown-x 1\n"
                                  "slave-priority 50\n");
    srv_config cfg, back;
    FILE *f;
    int n = 0;

    srv_config_defaults(&cfg);
    /* unknown-x is kept as it is, though the loader would refuse it:
     * rewrite the config as loaded without it. */
    ck_assert_int_eq(set_pairs(&cfg, change, 12, err, sizeof err), 0);
    ck_assert_int_eq(srv_config_rewrite(&cfg, path, err, sizeof err), 0);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    const char *want[] = { "# keep me",
                           "hz 25",
                           "",
                           "# and me",
                           "save 60 5",
                           "unknown-x 1",
                           "replica-priority 100" };
    while (fgets(line, sizeof line, f) && n < 7) {
        line[strcspn(line, "\n")] = '\0';
        ck_assert_str_eq(line, want[n]);
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, 7);
    /* Drop the unknown line, then the file loads back to the same. */
    const char *again = write_conf("");
    ck_assert_int_eq(srv_config_rewrite(&cfg, again, err, sizeof err), 0);
    srv_config_defaults(&back);
    ck_assert_msg(srv_config_load_file(&back, again, err, sizeof err) == 0,
                  "%s", err);
    memset(back.config_file, 0, sizeof back.config_file);
    memset(cfg.config_file, 0, sizeof cfg.config_file);
    ck_assert_str_eq(back.requirepass, "with space \"quoted\"");
    ck_assert(memcmp(back.client_output_buffer_limit,
                     cfg.client_output_buffer_limit,
                     sizeof cfg.client_output_buffer_limit) == 0);
    srv_config_diff(&back, &cfg, report_diff, NULL);
    ck_assert(memcmp(&back, &cfg, sizeof cfg) == 0);
}
END_TEST

START_TEST(test_config_int_bounds)
{
    char err[SRV_CONFIG_ERR_SIZE];
    const char *lo[] = { "0" }, *hi[] = { "65535" }, *over[] = { "65536" };
    const char *neg[] = { "-1" }, *plus[] = { "+5" }, *lead0[] = { "080" };
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_int_eq(srv_config_set(&cfg, "port", lo, 1, 0, err, sizeof err),
                     0);
    ck_assert_int_eq(srv_config_set(&cfg, "port", hi, 1, 0, err, sizeof err),
                     0);
    ck_assert_int_eq(cfg.port, 65535);
    ck_assert_int_eq(srv_config_set(&cfg, "port", over, 1, 0, err, sizeof err),
                     -1);
    ck_assert_int_eq(srv_config_set(&cfg, "port", neg, 1, 0, err, sizeof err),
                     -1);
    ck_assert_int_eq(srv_config_set(&cfg, "port", plus, 1, 0, err, sizeof err),
                     -1);
    ck_assert_int_eq(srv_config_set(&cfg, "port", lead0, 1, 0, err, sizeof err),
                     -1);
    ck_assert_int_eq(cfg.port, 65535);
}
END_TEST

START_TEST(test_config_text_too_long)
{
    /* A path longer than the field is refused, the old value kept. */
    char err[SRV_CONFIG_ERR_SIZE];
    char *big = malloc(SRV_PATH_MAX + 1);
    const char *args[] = { big };
    const char *words[] = { "127.0.0.1", big };
    srv_config cfg;

    ck_assert_ptr_nonnull(big);
    memset(big, 'd', SRV_PATH_MAX);
    big[SRV_PATH_MAX] = '\0';
    srv_config_defaults(&cfg);
    ck_assert_int_eq(srv_config_set(&cfg, "dir", args, 1, 0, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "'dir'"));
    ck_assert_str_eq(cfg.dir, "./var");
    ck_assert_int_eq(srv_config_set(&cfg, "bind", words, 2, 0, err, sizeof err),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "'bind'"));
    /* A long but reasonable one is fine. */
    big[SRV_PATH_MAX / 2] = '\0';
    ck_assert_int_eq(srv_config_set(&cfg, "dir", args, 1, 0, err, sizeof err),
                     0);
    ck_assert_uint_eq(strlen(cfg.dir), SRV_PATH_MAX / 2);
    free(big);
}
END_TEST

START_TEST(test_storage_directives)
{
    /* Cache, compression and LMDB knobs: defaults, values, limits. */
    static const char *const bad_yesno[] = { "line 1", "'lmdb-writemap'",
                                             NULL };
    static const char *const bad_level[] = { "line 1", "'compress-level'",
                                             NULL };
    static const char *const bad_debug[] = { "line 1", "'enable-debug-command'",
                                             NULL };
    srv_config cfg;

    /* Tunables (thresholds, batch sizes) are set by measurement and
     * checked by test_defaults_parse; these are choices. */
    srv_config_defaults(&cfg);
    ck_assert_int_eq(cfg.lmdb_writemap, 0);
    ck_assert_int_eq(cfg.enable_debug_command, SRV_DEBUG_NO);
    ck_assert_int_eq(cfg.cache_mb, 64); /* DESIGN: on by default */

    load_ok(&cfg, "lmdb-writemap yes\ncompress-level -7\n"
                  "compress-threshold 0\nenable-debug-command local\n"
                  "cache-mb 256\n");
    ck_assert_int_eq(cfg.lmdb_writemap, 1);
    ck_assert_int_eq(cfg.compress_level, -7);
    ck_assert_int_eq(cfg.compress_threshold, 0);
    ck_assert_int_eq(cfg.enable_debug_command, SRV_DEBUG_LOCAL);
    ck_assert_int_eq(cfg.cache_mb, 256);
    ck_assert_str_eq(get(&cfg, "lmdb-writemap")->value[0], "yes");
    ck_assert_str_eq(get(&cfg, "enable-debug-command")->value[0], "local");
    load_ok(&cfg, "lmdb-writemap NO\n");
    ck_assert_int_eq(cfg.lmdb_writemap, 0);
    ck_assert_str_eq(get(&cfg, "lmdb-writemap")->value[0], "no");

    load_fails("lmdb-writemap maybe\n", bad_yesno);
    load_fails("compress-level -8\n", bad_level);
    load_fails("compress-level 20\n", bad_level);
    load_fails("enable-debug-command sometimes\n", bad_debug);
}
END_TEST

START_TEST(test_workers)
{
    srv_config cfg;

    srv_config_defaults(&cfg);
    ck_assert_int_ge(srv_config_workers(&cfg), 1);
    cfg.workers = 3;
    ck_assert_int_eq(srv_config_workers(&cfg), 3);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the live configuration (srv_config_share, _refresh, _begin, _commit) */

static srv_config live_cfg;

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, (long)ms * NS_PER_MS };

    nanosleep(&ts, NULL);
}

/* This (forked) test process as a master with its own copy, published. */
static void live_setup(void)
{
    srv_config_defaults(&live_cfg);
    live_cfg.loglevel = SRV_LOG_WARNING;
    live_cfg.hz = LIVE_HZ;
    srv_her.cfg = &live_cfg;
    srv_her.cfgshm = NULL;
    srv_log_set_level(SRV_LOG_WARNING);
    srv_proc_init(&srv_self, SRV_ROLE_MASTER, -1, 0);
    ck_assert_int_eq(srv_config_share(LIVE_NSLOTS), 0);
    ck_assert_int_eq(srv_config_attach(), 0);
}

static void live_teardown(void) { srv_cfgshm_destroy(&srv_her.cfgshm); }

/* Make this process the tree's `role` (index: worker number), as the
 * master does in a child it forks. */
static void become(enum srv_role role, int index)
{
    srv_proc_init(&srv_self, role, index, LIVE_NWORKERS);
    srv_self.pid = getpid();
}

/* Fork a worker that refreshes every POLL_MS until its copy has
 * maxclients == want (exit 0), or forever if want is 0. The master side
 * registers it as srv_config_track would after a fork. */
static pid_t fork_worker(int index, long long want, int refreshes)
{
    srv_proc p;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        become(SRV_ROLE_WORKER, index);
        for (;;) {
            if (refreshes)
                srv_config_refresh();
            if (want && srv_her.cfg->maxclients == want)
                _exit(0);
            sleep_ms(POLL_MS);
        }
    }
    srv_proc_init(&p, SRV_ROLE_WORKER, index, LIVE_NWORKERS);
    p.pid = pid;
    srv_config_track(&p);
    return pid;
}

static int exit_status(pid_t pid)
{
    int status;

    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Commit maxclients = n (and, with pass, requirepass and loglevel debug). */
static int commit_maxclients(long long n, const char *pass)
{
    static srv_config next;
    char err[SRV_CONFIG_ERR_SIZE], num[CFG_NUM_SIZE];
    const char *v[] = { num };
    const char *pw[] = { pass }, *dbg[] = { "debug" };

    snprintf(num, sizeof num, "%lld", n);
    ck_assert_int_eq(srv_config_begin(&next), 0);
    ck_assert_int_eq(srv_config_set(&next, "maxclients", v, 1, 1, err,
                                    sizeof err),
                     0);
    if (pass) {
        ck_assert_int_eq(srv_config_set(&next, "requirepass", pw, 1, 1, err,
                                        sizeof err),
                         0);
        ck_assert_int_eq(srv_config_set(&next, "loglevel", dbg, 1, 1, err,
                                        sizeof err),
                         0);
        next.port = 1; /* not a runtime directive: never copied */
    }
    return srv_config_commit(&next);
}

START_TEST(test_live_refresh)
{
    pid_t pid;

    live_setup();
    ck_assert_int_eq(srv_config_refresh(), 0); /* nothing published */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        become(SRV_ROLE_WORKER, 1);
        if (commit_maxclients(5, "pw") != 0)
            _exit(1);
        /* The committer applied it to its own copy at once. */
        _exit(srv_her.cfg->maxclients == 5 &&
                      srv_log_get_level() == SRV_LOG_DEBUG
                  ? 0
                  : 2);
    }
    ck_assert_int_eq(exit_status(pid), 0);
    ck_assert_int_eq(live_cfg.maxclients, 10000); /* not yet here */
    ck_assert_int_eq(srv_config_refresh(), 1);
    ck_assert_int_eq(live_cfg.maxclients, 5);
    ck_assert_str_eq(live_cfg.requirepass, "pw");
    ck_assert_int_eq(live_cfg.loglevel, SRV_LOG_DEBUG);
    ck_assert_int_eq(srv_log_get_level(), SRV_LOG_DEBUG);
    ck_assert_int_eq(live_cfg.port, 6379);
    ck_assert_int_eq(live_cfg.hz, LIVE_HZ);
    ck_assert_int_eq(srv_config_refresh(), 0); /* once only */
    live_teardown();
}
END_TEST

/* commit returns once the registered workers have applied the change. */
START_TEST(test_live_commit_waits_for_workers)
{
    pid_t w1, w2;
    int64_t t0;

    live_setup();
    become(SRV_ROLE_WORKER, 0); /* this process commits */
    w1 = fork_worker(1, 0, 1);
    w2 = fork_worker(2, 0, 1);
    t0 = mono_ms();
    ck_assert_int_eq(commit_maxclients(9, NULL), 0);
    ck_assert_int_lt(mono_ms() - t0, CONFIRM_LIMIT_MS);
    ck_assert_int_eq(srv_cfgshm_lagging(srv_her.cfgshm, 1,
                                        srv_cfgshm_seq(srv_her.cfgshm)),
                     0);
    ck_assert_int_eq(srv_cfgshm_lagging(srv_her.cfgshm, 2,
                                        srv_cfgshm_seq(srv_her.cfgshm)),
                     0);
    kill(w1, SIGKILL);
    kill(w2, SIGKILL);
    exit_status(w1);
    exit_status(w2);
    live_teardown();
}
END_TEST

/* A worker that never refreshes is waited for a few ticks only; a dead
 * one and a role that does not confirm are not waited for at all. */
START_TEST(test_live_commit_bounded)
{
    pid_t stuck, dead;
    srv_proc p;
    int64_t t0, took;

    live_setup();
    stuck = fork_worker(0, 0, 0);
    dead = fork_worker(1, 0, 0);
    kill(dead, SIGKILL);
    exit_status(dead); /* reaped; still registered */
    srv_proc_init(&p, SRV_ROLE_REAPER, -1, LIVE_NWORKERS);
    p.pid = stuck; /* alive, never refreshes */
    srv_config_track(&p);
    t0 = mono_ms();
    ck_assert_int_eq(commit_maxclients(11, NULL), 1); /* the stuck one */
    took = mono_ms() - t0;
    ck_assert_int_ge(took, 3 * MS_PER_S / LIVE_HZ);
    ck_assert_int_lt(took, CONFIRM_LIMIT_MS * 2);
    /* Once the master sees it die, it is not waited for any more. */
    kill(stuck, SIGKILL);
    exit_status(stuck);
    srv_proc_init(&p, SRV_ROLE_WORKER, 0, LIVE_NWORKERS);
    srv_config_track(&p); /* pid 0: died */
    t0 = mono_ms();
    ck_assert_int_eq(commit_maxclients(12, NULL), 0);
    ck_assert_int_lt(mono_ms() - t0, CONFIRM_LIMIT_MS);
    live_teardown();
}
END_TEST

/* Two processes committing at once each wait for the other's
 * acknowledgement; neither deadlocks, and neither change is lost. */
START_TEST(test_live_concurrent_commits)
{
    static srv_config next;
    char err[SRV_CONFIG_ERR_SIZE];
    pid_t a, b;

    live_setup();
    a = fork_worker(0, 0, 1); /* registered, refreshing */
    b = fork();
    ck_assert_int_ge(b, 0);
    if (b == 0) {
        const char *v[] = { "33" };
        become(SRV_ROLE_WORKER, 1);
        if (srv_config_begin(&next) ||
            srv_config_set(&next, "timeout", v, 1, 1, err, sizeof err))
            _exit(1);
        _exit(srv_config_commit(&next) == 0 ? 0 : 2);
    }
    {
        srv_proc p;
        srv_proc_init(&p, SRV_ROLE_WORKER, 1, LIVE_NWORKERS);
        p.pid = b;
        srv_config_track(&p);
    }
    become(SRV_ROLE_WORKER, 2);
    ck_assert_int_eq(commit_maxclients(21, NULL), 0);
    ck_assert_int_eq(exit_status(b), 0);
    kill(a, SIGKILL);
    exit_status(a);
    ck_assert_int_eq(srv_config_begin(&next), 0);
    ck_assert_int_eq(next.maxclients, 21);
    ck_assert_int_eq(next.timeout, 33);
    srv_config_abort();
    live_teardown();
}
END_TEST

/* Without a region (an embedded worker) changes go straight to the copy. */
START_TEST(test_live_embedded)
{
    static srv_config next;

    srv_config_defaults(&live_cfg);
    srv_her.cfg = &live_cfg;
    srv_her.cfgshm = NULL;
    ck_assert_int_eq(srv_config_attach(), 0);
    ck_assert_int_eq(srv_config_refresh(), 0);
    ck_assert_int_eq(srv_config_begin(&next), 0);
    next.timeout = 7;
    next.loglevel = SRV_LOG_VERBOSE;
    ck_assert_int_eq(srv_config_commit(&next), 0);
    ck_assert_int_eq(live_cfg.timeout, 7);
    ck_assert_int_eq(srv_log_get_level(), SRV_LOG_VERBOSE);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("file");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_defaults_parse);
    tcase_add_test(tc, test_file_basic);
    tcase_add_test(tc, test_file_names_case_insensitive);
    tcase_add_test(tc, test_file_later_wins_and_alias);
    tcase_add_test(tc, test_file_empty_string);
    tcase_add_test(tc, test_file_errors);
    tcase_add_test(tc, test_file_long_lines);
    tcase_add_test(tc, test_file_missing);
    suite_add_tcase(s, tc);

    tc = tcase_create("args");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_args_overrides);
    tcase_add_test(tc, test_args_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("sizes");
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_sizes_bad);
    suite_add_tcase(s, tc);

    tc = tcase_create("get_set");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_config_get);
    tcase_add_test(tc, test_config_get_formats);
    tcase_add_test(tc, test_config_set_runtime);
    tcase_add_test(tc, test_config_int_bounds);
    tcase_add_test(tc, test_config_text_too_long);
    tcase_add_test(tc, test_storage_directives);
    tcase_add_test(tc, test_workers);
    tcase_add_test(tc, test_set_pairs);
    tcase_add_test(tc, test_rewrite_round_trip);
    suite_add_tcase(s, tc);

    tc = tcase_create("live");
    tcase_set_timeout(tc, LIVE_TIMEOUT_S);
    tcase_add_test(tc, test_live_refresh);
    tcase_add_test(tc, test_live_commit_waits_for_workers);
    tcase_add_test(tc, test_live_commit_bounded);
    tcase_add_test(tc, test_live_concurrent_commits);
    tcase_add_test(tc, test_live_embedded);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
