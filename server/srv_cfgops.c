/*
 * srv_cfgops.c - CONFIG SET, REWRITE and RESETSTAT (see the header).
 */
#include "server/srv_cfgops.h"
#include "server/srv_cmdstats.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_stats.h"
#include "shm/shm_cache.h"
#include "shm/shm_error.h"

#include <stdio.h>
#include <string.h>

#define BYTES_PER_MB (1024 * 1024)

size_t srv_cfgops_cache_budget(const srv_config *cfg)
{
    unsigned long long budget = (unsigned long long)cfg->cache_mb *
                                BYTES_PER_MB;
    unsigned long long cap = (unsigned long long)cfg->maxmemory;

    return (size_t)(cap && cap < budget ? cap : budget);
}

/* The cache budget `next` asks for, if it changed; -1 with the reply in
 * err if it cannot have it. The shared cache is one for all processes,
 * so the process that publishes the change sets it, under the writer
 * lock. */
static int apply_cache(const srv_config *before, const srv_config *next,
                       char *err, size_t errlen)
{
    size_t want = srv_cfgops_cache_budget(next);
    int rc;

    if (want == srv_cfgops_cache_budget(before))
        return 0;
    rc = srv_her.cache ? shm_cache_set_budget(srv_her.cache, want)
                       : (want ? SHM_ERESTART : 0);
    if (rc == SHM_ERESTART) {
        shm_cache_stats_t st;
        shm_cache_stats(srv_her.cache, &st);
        snprintf(err, errlen,
                 "ERR CONFIG SET failed (possibly related to argument "
                 "'%s') - the cache can shrink at run time but grow only "
                 "up to %lld MB (its size at start); restart to grow it",
                 next->cache_mb != before->cache_mb ? "cache-mb" : "maxmemory",
                 (long long)(st.max_bytes / BYTES_PER_MB));
        return -1;
    }
    if (rc) {
        snprintf(err, errlen, "ERR CONFIG SET failed: the cache budget: %s",
                 shm_strerror(rc));
        return -1;
    }
    return 0;
}

int srv_cfgops_set(const srv_slice *pairs, int npairs, char *err, size_t errlen)
{
    /* Big; one CONFIG SET at a time in a process. */
    static srv_config before, next;
    int rc;

    if ((rc = srv_config_begin(&next))) {
        snprintf(err, errlen, "ERR CONFIG SET failed: %s", shm_strerror(rc));
        return -1;
    }
    before = next;
    if (srv_config_set_pairs(&next, pairs, npairs, err, errlen) ||
        apply_cache(&before, &next, err, errlen)) {
        srv_config_abort();
        return -1;
    }
    srv_config_commit(&next);
    return 0;
}

typedef struct reload_ctx {
    char *applied, *restart;
    size_t size;
} reload_ctx;

static void add_name(char *list, size_t size, const char *name)
{
    size_t n = strlen(list);

    snprintf(list + n, size - n, "%s%s", n ? " " : "", name);
}

static void reload_one(void *arg, const char *name, int runtime)
{
    reload_ctx *r = arg;

    /* config_file is no directive; the rest either applies or waits. */
    add_name(runtime ? r->applied : r->restart, r->size, name);
}

int srv_cfgops_reload(const srv_config *fresh, char *applied, char *restart,
                      size_t size, char *err, size_t errlen)
{
    static srv_config before, next;
    reload_ctx r = { applied, restart, size };
    int rc;

    applied[0] = restart[0] = '\0';
    if ((rc = srv_config_begin(&next))) {
        snprintf(err, errlen, "ERR reload failed: %s", shm_strerror(rc));
        return -1;
    }
    before = next;
    srv_config_diff(&before, fresh, reload_one, &r);
    srv_config_copy_runtime(&next, fresh);
    if (apply_cache(&before, &next, err, errlen)) {
        srv_config_abort();
        return -1;
    }
    srv_config_commit(&next);
    return 0;
}

int srv_cfgops_rewrite(char *err, size_t errlen)
{
    char why[SRV_CONFIG_ERR_SIZE];

    srv_config_refresh();
    if (!srv_her.cfg->config_file[0]) {
        snprintf(err, errlen,
                 "ERR The server is running without a config "
                 "file");
        return -1;
    }
    if (srv_config_rewrite(srv_her.cfg, srv_her.cfg->config_file, why,
                           sizeof why)) {
        srv_log(SRV_LOG_WARNING, 0, "CONFIG REWRITE failed: %s", why);
        snprintf(err, errlen, "ERR Rewriting config file: %s", why);
        return -1;
    }
    srv_log(SRV_LOG_NOTICE, 0, "CONFIG REWRITE executed with success.");
    return 0;
}

void srv_cfgops_resetstat(void)
{
    srv_stats *s = srv_her.stats;

    srv_cmdstats_reset(srv_cmdstats_region());
    for (unsigned i = 0; i < s->nslots; i++) {
        atomic_store(&s->slot[i].total_commands, 0);
        atomic_store(&s->slot[i].total_connections, 0);
        atomic_store(&s->slot[i].rejected_connections, 0);
        atomic_store(&s->slot[i].net_input_bytes, 0);
        atomic_store(&s->slot[i].net_output_bytes, 0);
        atomic_store(&s->slot[i].expired_keys, 0);
        atomic_store(&s->slot[i].keyspace_hits, 0);
        atomic_store(&s->slot[i].keyspace_misses, 0);
    }
}

typedef struct get_ctx {
    srv_conn *c;
    srv_buf pairs; /* the name/value replies, collected */
    long long n;
} get_ctx;

static void get_one(void *arg, const char *name, const char *value)
{
    get_ctx *g = arg;
    srv_buf saved = g->c->out;

    /* Encoded into the side buffer by the reply encoder itself. */
    g->c->out = g->pairs;
    srv_reply_bulk_cstr(g->c, name);
    srv_reply_bulk_cstr(g->c, value);
    g->pairs = g->c->out;
    g->c->out = saved;
    g->n++;
}

void srv_cfgops_reply_get(srv_conn *c, const srv_slice *patterns, int npatterns)
{
    get_ctx g = { c, { NULL, 0, 0 }, 0 };

    srv_config_refresh(); /* in case this process's tick is late */
    srv_config_get_many(srv_her.cfg, patterns, npatterns, get_one, &g);
    srv_reply_map(c, g.n);
    srv_reply_raw(c, g.pairs.data, g.pairs.len);
    srv_buf_free(&g.pairs);
}
