/*
 * rdb_err.c - texts of the RDB codec's result codes.
 */
#include "rdb/rdb_err.h"

#include <string.h>

const char *rdb_strerror(int err)
{
    switch (err) {
    case RDB_OK: return "ok";
    case RDB_ETRUNC: return "unexpected end of data";
    case RDB_ECORRUPT: return "corrupt data";
    case RDB_EUNSUPPORTED: return "not supported";
    case RDB_EVERSION: return "unsupported RDB version";
    case RDB_ECHECKSUM: return "checksum mismatch";
    case RDB_ETOOBIG: return "length over the limit";
    case RDB_ESINK: return "refused by the receiver";
    case RDB_EEMPTY: return "empty collection";
    default: return err > 0 ? strerror(err) : "unknown RDB error";
    }
}
