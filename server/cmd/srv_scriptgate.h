/*
 * srv_scriptgate.h - the scripting write gate as a writer meets it.
 *
 * Every worker holds the gate (a robust mutex in the scripting region,
 * srv_scriptshm.h) while its group's write transaction is open, taken
 * before LMDB's write lock. A writing script on another worker holds it
 * for the script's whole run; a writer behind it waits up to
 * busy-reply-threshold from the script's start and then answers BUSY,
 * instead of waiting on LMDB's lock with no way to answer. Its own module
 * so the transaction helpers (srv_txn) reach it without the scripting
 * engine (srv_script), which itself runs commands through them.
 */
#ifndef SRV_SCRIPTGATE_H
#define SRV_SCRIPTGATE_H

#include "server/srv_conn.h"

/* Redis's BUSY errors while a script (or a function) runs. */
extern const char SRV_SCRIPTGATE_BUSY_EVAL[];
extern const char SRV_SCRIPTGATE_BUSY_FUNCTION[];

/*
 * Before the group's write transaction begins for c: take the write gate,
 * released when the transaction ends (srv_group_on_wtxn_end). 0 to go on
 * (the gate held, or no scripting region), -1 after replying BUSY.
 */
int srv_scriptgate_enter_or_reply(srv_conn *c);

#endif
