/*
 * srv_clients.h - the clients of a worker as the server-wide client
 * commands see them: CLIENT LIST's and CLIENT KILL's filters (the line
 * itself is srv_cinfo.h's), and this worker's parts of
 * the questions those commands (and CLIENT UNBLOCK) ask every worker
 * (srv_ask.h): its lines, the clients it killed, the client it
 * unblocked. Runs on the worker's thread.
 */
#ifndef SRV_CLIENTS_H
#define SRV_CLIENTS_H

#include "server/srv_ask.h"
#include "server/srv_buf.h"
#include "server/srv_conn.h"
#include "server/srv_worker.h"

/*
 * CLIENT LIST's arguments (argv[2..]: TYPE type, ID id ...) checked as
 * Redis checks them, then asked of every worker; the reply, in client id
 * order, follows when all have answered.
 */
void srv_clients_list(srv_conn *c);

/*
 * CLIENT KILL's arguments checked as Redis checks them (the old form
 * "addr:port", or the filters ID TYPE USER ADDR LADDR SKIPME and 7.4's
 * MAXAGE), then every worker kills its matching clients (c itself after
 * its reply); the reply is OK or "ERR No such client" (old form) or the
 * number killed.
 */
void srv_clients_kill(srv_conn *c);

/* CLIENT UNBLOCK id, with `error`, on whichever worker the client is:
 * the reply is 1 or 0. */
void srv_clients_unblock(srv_conn *c, uint64_t id, int error);

/* Whether a client with this id exists on some worker (CLIENT TRACKING
 * REDIRECT): `reply` gets the count (srv_ask_count) and replies. */
void srv_clients_exists(srv_conn *c, uint64_t id, srv_ask_reply_fn *reply);

/* The worker service: answers the questions of other workers. */
extern const srv_service srv_clients_service;

#endif
