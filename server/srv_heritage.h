/*
 * srv_heritage.h - everything a child process inherits from the master
 * across fork: the listening sockets, the shared regions (the published
 * configuration among them; the statistics regions srv_cmdstats,
 * srv_slowlog and srv_latency keep their own pointer, inherited the same
 * way) and the master's copy of the configuration,
 * which each process then keeps current (srv_config_refresh). Nothing else
 * crosses fork (LMDB in particular is opened anew).
 */
#ifndef SRV_HERITAGE_H
#define SRV_HERITAGE_H

#include <stdint.h>
#include <sys/types.h>

#include "server/srv_config.h"
#include "server/srv_stats.h"
#include "storage/st_env.h"

#define SRV_MAX_BINDS 16
#define SRV_BROKER_NAME_MAX 64
#define SRV_VERSION "0.1.0"
/* The Redis version whose behaviour larder implements. */
#define SRV_REDIS_VERSION "7.0.15"

typedef struct srv_heritage {
    srv_config *cfg;           /* this process's copy (srv_config.h) */
    struct srv_cfgshm *cfgshm; /* the published one; NULL when embedded */
    int nworkers;    /* workers at start (the pool's size: srv_stats) */
    int workers_max; /* slots for workers in every region (workers-max) */
    int ntcp;        /* TCP listeners per worker */
    int *tcp_fds;    /* workers_max * ntcp, SO_REUSEPORT groups; -1: none
                      * (a worker holds only its own) */
    int unix_fd;     /* shared by all workers; -1 if none */
    srv_stats *stats;
    struct shm_cache *cache; /* shared cache; NULL when cache-mb is 0 */
    struct srv_scriptshm_sh *scripts; /* scripting region (srv_scriptshm.h);
                                       * NULL when embedded */
    struct shm_clock *clock;          /* keys' last-access clock (OBJECT
                                       * IDLETIME) */
    int sync_efd;                     /* eventfd: workers poke the syncer */
    int *worker_efd; /* eventfd per worker: the syncer wakes it */
    int broker_fd;   /* pub/sub broker's listening socket */
    char broker_name[SRV_BROKER_NAME_MAX]; /* its abstract address */
    struct srv_aclshm *aclshm;       /* the users in force (srv_aclshm.h) */
    int ntls;                        /* TLS listeners per worker (tls-port) */
    int *tls_fds;                    /* workers_max * ntls, as tcp_fds */
    const struct srv_transport *tls; /* TLS connections' (srv_conn.h) */
    pid_t master_pid;
    int64_t start_ms;
    char executable[SRV_PATH_MAX];
    char boot_id[ST_BOOT_ID_MAX]; /* "": no durable record (embedded) */
} srv_heritage;

/* The process's heritage (set by the master before forking). */
extern srv_heritage srv_her;

/*
 * Open this process's LMDB environment with the options the heritage's
 * configuration gives (`nosync`: commits are not flushed, the syncer
 * does it). st_env_open's codes.
 */
int srv_heritage_env_open(int nosync, st_env **env);

/*
 * The master's storage step at boot (storage/st_durable.h): learn the
 * boot id ($LARDER_BOOT_ID overrides the kernel's, so tests can play a
 * reboot), restore the durable snapshot if the page cache was lost since
 * the last flush, open and check the environment, record it, close it.
 * Logs what it found. 0 or a storage code.
 */
int srv_heritage_boot(void);

#endif
