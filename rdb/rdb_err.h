/*
 * rdb_err.h - the result codes of the RDB codec (rdb/).
 *
 * Every fallible rdb_ function returns 0, a positive errno (I/O, ENOMEM)
 * passed through, or one of the negative codes below. A reader that fails
 * also records where and why (rdb_reader's err_off and why, rdb_io.h).
 */
#ifndef RDB_ERR_H
#define RDB_ERR_H

enum rdb_err {
    RDB_OK = 0,
    RDB_ETRUNC = -1,       /* the input ends inside an item */
    RDB_ECORRUPT = -2,     /* bytes that cannot be what they claim to be */
    RDB_EUNSUPPORTED = -3, /* valid RDB, but a kind larder cannot hold yet */
    RDB_EVERSION = -4,     /* an RDB version this codec does not read */
    RDB_ECHECKSUM = -5,    /* the CRC64 trailer does not match */
    RDB_ETOOBIG = -6,      /* a length past the configured limit */
    RDB_ESINK = -7,        /* the caller's sink refused (its own code is
                            * in the sink's context) */
    RDB_EEMPTY = -8,       /* a collection without elements (Redis skips
                            * such keys when loading, refuses them in
                            * RESTORE) */
};

/* A static text for any code rdb_ functions return (errno included). */
const char *rdb_strerror(int err);

#endif
