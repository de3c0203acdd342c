/*
 * st_err.c - the storage layer's error codes: their texts, and the mapping
 * of LMDB's return codes onto them.
 */
#include "storage/st_err.h"
#include "storage/st_internal.h"

#include <string.h>

const char *st_strerror(int err)
{
    switch (err) {
    case ST_OK: return "success";
    case ST_ENOTFOUND: return "not found";
    case ST_EWRONGTYPE: return "wrong type";
    case ST_EFULL: return "database map is full (maxdisk reached)";
    case ST_ETXNFULL: return "transaction too large";
    case ST_ECORRUPT: return "corrupt record";
    case ST_ESCHEMA: return "unsupported schema version";
    case ST_EEXISTS: return "key exists";
    case ST_ECOLLISION: return "long-name digest slots exhausted";
    case ST_EKEYSIZE: return "LMDB key size limit below 511 bytes";
    case ST_EREADERS: return "no free LMDB reader slot";
    case ST_ELMDB: return "LMDB failure";
    case ST_EBUSY: return "transaction already open";
    case ST_ENOPIN:
        return "no durable snapshot pinned (is the syncer running?)";
    case ST_ENOSPACE: return "no space left for the data file";
    default: break;
    }
    return err > 0 ? strerror(err) : "unknown storage error";
}

/* ST_E* codes are small negatives; LMDB's own sit near -30800. */
#define ST_ERR_FLOOR (-1000)

int st_err_map(int rc)
{
    if (rc < 0 && rc > ST_ERR_FLOOR)
        return rc; /* already a storage code */
    switch (rc) {
    case MDB_SUCCESS: return 0;
    case MDB_NOTFOUND: return ST_ENOTFOUND;
    case MDB_MAP_FULL: return ST_EFULL;
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL: return ST_ETXNFULL;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID: return ST_ECORRUPT;
    case MDB_READERS_FULL: return ST_EREADERS;
    case MDB_KEYEXIST: return ST_EEXISTS;
    default: break;
    }
    return rc > 0 ? rc : ST_ELMDB;
}
