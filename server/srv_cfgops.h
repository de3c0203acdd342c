/*
 * srv_cfgops.h - CONFIG SET, REWRITE and RESETSTAT as operations any
 * process may run: a worker for the CONFIG command, the master for its
 * admin socket (larderctl config set). They change the published
 * configuration (srv_config.h) and what depends on it outside the
 * configuration itself (the shared cache's budget, the statistics).
 */
#ifndef SRV_CFGOPS_H
#define SRV_CFGOPS_H

#include <stddef.h>

#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_resp.h"

/*
 * The shared cache's byte budget *cfg asks for: cache-mb, capped by
 * maxmemory when that is not 0.
 */
size_t srv_cfgops_cache_budget(const srv_config *cfg);

/*
 * CONFIG SET: apply `npairs` name/value pairs (pairs[2i], pairs[2i+1])
 * all or nothing (srv_config_set_pairs), set the cache budget if it
 * changed, publish and wait until every worker has applied it
 * (srv_config_commit). 0, or -1 with the whole error reply in err
 * (Redis's texts; nothing changed).
 */
int srv_cfgops_set(const srv_slice *pairs, int npairs, char *err,
                   size_t errlen);

/*
 * CONFIG GET's reply to c: a map of every directive matching any of the
 * `npatterns` globs, name and value (srv_config_get_many), from the
 * configuration as published now.
 */
void srv_cfgops_reply_get(srv_conn *c, const srv_slice *patterns,
                          int npatterns);

/*
 * CONFIG REWRITE of this process's configuration into the file it was
 * started with. 0, or -1 with the error reply in err ("ERR The server is
 * running without a config file" as Redis, or the failure).
 */
int srv_cfgops_rewrite(char *err, size_t errlen);

/*
 * Reload: apply the runtime directives of `fresh` (the config file read
 * again) that differ from the published ones, as CONFIG SET would (cache
 * budget, then publish and wait for the workers). The names applied and
 * those that differ but need a restart go space separated into applied
 * and restart (`size` bytes each). 0, or -1 with the reason in err.
 */
int srv_cfgops_reload(const srv_config *fresh, char *applied, char *restart,
                      size_t size, char *err, size_t errlen);

/* CONFIG RESETSTAT: zero the counters INFO sums over the processes (and
 * those of the command, error and latency statistics). Any process. */
void srv_cfgops_resetstat(void);

#endif
