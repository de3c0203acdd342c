/*
 * st_bulk.c - support for long bulk passes over the keyspace.
 */
#include "storage/st_bulk.h"
#include "storage/st_internal.h"

void st_bulk_values_release(st_txn *t) { st_txn_arena_reset(t); }
