/*
 * srv_heritage.c - the heritage every process starts from, and the one
 * place that turns it into LMDB options (the master's boot check, every
 * worker and background child open their environment through it).
 */
#include "server/srv_heritage.h"

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
    };

    return st_env_open(&o, env);
}
