/*
 * st_bulk.h - what long bulk passes over the keyspace need beyond the
 * keyspace calls: a read transaction that walks every key (an RDB export,
 * a SYNC snapshot) hands out values whose memory lives until the
 * transaction ends; this lets the walker give it back as it goes.
 */
#ifndef ST_BULK_H
#define ST_BULK_H

#include "storage/st_env.h"

/*
 * Every value the keyspace handed out in transaction t so far (records'
 * payloads from lookups, inflated strings) may be dropped: the caller
 * uses none of them again. Cursors and the transaction itself stay
 * valid. The memory is kept for reuse, bounded by one arena chunk.
 */
void st_bulk_values_release(st_txn *t);

#endif
