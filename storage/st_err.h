/*
 * st_err.h - the storage layer's result codes.
 *
 * Every fallible st_ function returns 0 on success, a positive errno passed
 * through from the system or LMDB's own positive codes mapped to the
 * negative codes below, never a bare LMDB MDB_* value.
 */
#ifndef ST_ERR_H
#define ST_ERR_H

enum st_err {
    ST_OK = 0,
    ST_ENOTFOUND = -1,  /* the key (or element) does not exist */
    ST_EWRONGTYPE = -2, /* the key holds another type */
    ST_EFULL = -3,      /* the map is full (maxdisk reached) */
    ST_ETXNFULL = -4,   /* the write transaction grew too large */
    ST_ECORRUPT = -5,   /* a record failed to decode */
    ST_ESCHEMA = -6,    /* the environment has an unknown schema version */
    ST_EEXISTS = -7,    /* the key exists (NX-style conditions) */
    ST_ECOLLISION = -8, /* a long-name digest slot table is exhausted */
    ST_EKEYSIZE = -9,   /* this LMDB build's key limit is too small */
    ST_EREADERS = -10,  /* no reader slot left */
    ST_ELMDB = -11,     /* any other LMDB failure */
    ST_EBUSY = -12,     /* a transaction is already open on this handle */
    ST_ENOPIN = -13,    /* no durable snapshot is pinned (no syncer) */
    ST_ENOSPACE = -14,  /* the data file's filesystem has no block left
                         * for the write (writemap: st_room.h) */
};

/* A static, human-readable text for any code st_ functions return. */
const char *st_strerror(int err);

#endif
