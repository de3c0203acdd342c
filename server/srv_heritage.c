/*
 * srv_heritage.c - the heritage every process starts from, and the one
 * place that turns it into LMDB options (the master's boot check, every
 * worker and background child open their environment through it).
 */
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "storage/st_durable.h"
#include "storage/st_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fixed id when the kernel's cannot be read: nothing is ever restored. */
#define SRV_BOOT_ID_UNKNOWN "unknown-boot"

srv_heritage srv_her;

int srv_heritage_env_open(int nosync, st_env **env)
{
    st_env_opts o = {
        .dir = srv_her.cfg->dir,
        .map_size = (uint64_t)srv_her.cfg->maxdisk,
        .databases = (unsigned)srv_her.cfg->databases,
        .nosync = nosync,
        .writemap = (int)srv_her.cfg->lmdb_writemap,
        .cache = srv_her.cache,
        .clock = srv_her.clock,
        .compress_threshold = (size_t)srv_her.cfg->compress_threshold,
        .compress_level = (int)srv_her.cfg->compress_level,
        .boot_id = srv_her.boot_id,
    };

    int rc = st_env_open(&o, env);

    if (rc == 0 && o.writemap && st_env_room_unguarded(*env))
        srv_log(SRV_LOG_WARNING, 0,
                "fallocate() is not supported on %s's filesystem: with "
                "lmdb-writemap yes a full disk can kill the process (SIGBUS)",
                o.dir);
    return rc;
}

int srv_heritage_boot(void)
{
    const char *forced = getenv("LARDER_BOOT_ID");
    st_durable_report r;
    int rc;

    if (forced && forced[0]) {
        snprintf(srv_her.boot_id, sizeof srv_her.boot_id, "%s", forced);
    } else if ((rc = st_durable_boot_id(srv_her.boot_id,
                                        sizeof srv_her.boot_id))) {
        srv_log(SRV_LOG_WARNING, rc,
                "can't read the boot id: a power cut "
                "will not be told from a restart");
        snprintf(srv_her.boot_id, sizeof srv_her.boot_id, "%s",
                 SRV_BOOT_ID_UNKNOWN);
    }
    st_env_opts o = {
        .dir = srv_her.cfg->dir,
        .map_size = (uint64_t)srv_her.cfg->maxdisk,
        .databases = (unsigned)srv_her.cfg->databases,
        .writemap = (int)srv_her.cfg->lmdb_writemap,
        .boot_id = srv_her.boot_id,
    };
    if ((rc = st_durable_boot(&o, &r)))
        return rc;
    if (r.state == ST_DURABLE_RESTORED)
        srv_log(SRV_LOG_WARNING, 0,
                "the page cache was lost since the last "
                "flush (power cut or reboot): restored the durable snapshot, "
                "transaction %llu (data.mdb's newest meta page named %llu)",
                (unsigned long long)r.recorded_txn,
                (unsigned long long)r.newest_txn);
    else if (r.state == ST_DURABLE_MISMATCH)
        srv_log(SRV_LOG_WARNING, 0,
                "%s does not describe this data.mdb "
                "(transaction %llu; the file's newest is %llu): opened as it "
                "is",
                ST_DURABLE_FILE, (unsigned long long)r.recorded_txn,
                (unsigned long long)r.newest_txn);
    else
        srv_log(SRV_LOG_VERBOSE, 0, "durable record: %s",
                st_durable_state_name(r.state));
    return 0;
}
