/*
 * srv_aclconn.h - the ACL in force: the users a process applies (kept in
 * step with the shared region, srv_aclshm.h, before every command), who
 * each connection is authenticated as, the check every command passes
 * and its NOPERM replies, the ACL LOG, changes published to every worker,
 * protected mode at accept, and the closing of sessions whose user went
 * away (ACL DELUSER, ACL LOAD) or lost a channel they listen to.
 *
 * A connection authenticated as another user than "default" carries a
 * session (srv_hooks.h) naming its user by identity; the others are the
 * default user's. Everything runs on the connection's worker thread;
 * srv_aclconn_boot runs in the master before fork.
 */
#ifndef SRV_ACLCONN_H
#define SRV_ACLCONN_H

#include <stddef.h>

#include "server/srv_acl.h"
#include "server/srv_aclset.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_worker.h"

/* Redis's error of a denied protected-mode client. */
extern const char SRV_ACLCONN_DENIED[];

/*
 * The master, before it forks: load the users (the aclfile, or the
 * default user with requirepass as its password) and publish them in a
 * new shared region (srv_her.aclshm). The command table must be
 * initialised. 0, or -1 with the reason in err.
 */
int srv_aclconn_boot(char *err, size_t errlen);

/* A child, after fork: check the inherited region. 0 or
 * srv_aclshm_attach's codes. */
int srv_aclconn_attach(void);

/* 1 if a connection must authenticate before running commands: the
 * default user has a password or is off (checked per command, as Redis:
 * a later nopass opens connections made before). */
int srv_aclconn_auth_required(void);

/*
 * The dispatcher's check of c->cmd on c->argc / c->argv for c's user,
 * after the rules were brought up to date. Returns 0 (allowed), 1 (denied:
 * logged in ACL LOG and the NOPERM error replied), or -1 (c's user was
 * deleted: c is closing, nothing replied).
 */
int srv_aclconn_check_or_reply(srv_conn *c);

/* EXEC's check of one queued command (the rules may have changed since
 * it was queued): 0, or 1 with Redis's NOPERM error replied and logged. */
int srv_aclconn_exec_check_or_reply(srv_conn *c);

/*
 * AUTH / HELLO AUTH: authenticate c as user (NULL: "default") with pass.
 * 0 on success (c is authenticated as that user), -1 if the pair is wrong
 * or the user is off (logged in ACL LOG; nothing replied).
 */
int srv_aclconn_authenticate(srv_conn *c, const srv_slice *user,
                             const srv_slice *pass);

/* 1 if the default user has nopass (AUTH <password> is then an error). */
int srv_aclconn_default_nopass(void);

/* RESET: c becomes the default user's, authenticated if that one needs
 * no password and is on. */
void srv_aclconn_reset(srv_conn *c);

/* The name of the user c is authenticated as (CLIENT LIST's user=, CLIENT
 * KILL USER). Valid until c's next command. */
const char *srv_aclconn_user_name(const srv_conn *c);

/* The users in force, brought up to date (ACL LIST, GETUSER, ...). */
const srv_aclset *srv_aclconn_users(srv_conn *c);

/* The user c runs as. */
const srv_acl_user *srv_aclconn_user(const srv_conn *c);

/*
 * Change the users: `edit` gets a copy of the set in force (brought up
 * to date under the region's lock) to change; if it returns 0 the copy is
 * published to every worker and applied here at once (sessions of users
 * it removed or replaced anew are closed, c itself after its reply).
 * On any other return nothing changes and it is passed back (edit has
 * replied its error). A change too large for the region replies an error
 * and returns 1. Returns 0 when published.
 */
typedef int srv_aclconn_edit_fn(srv_conn *c, srv_aclset *next, void *arg);
int srv_aclconn_change(srv_conn *c, srv_aclconn_edit_fn *edit, void *arg);

/*
 * Log a denial of c's running command in ACL LOG: `reason` a
 * SRV_ACL_DENIED_*, `context` a SRV_ACLSHM_CTX_*, `argpos` the argv index
 * of the key or channel; `user` the user named (AUTH's; NULL: c's) and
 * `object` what was denied (NULL: from reason).
 */
void srv_aclconn_log(srv_conn *c, int reason, int context, int argpos,
                     const srv_slice *user, const srv_slice *object);

/* The region (created in-process when there is no master: the embedded
 * worker). NULL only when out of memory. */
struct srv_aclshm *srv_aclconn_region(void);

/* CONFIG SET requirepass: the default user's passwords become that one
 * (nopass when empty). 0, or 1 with an error replied to c. */
int srv_aclconn_set_requirepass(srv_conn *c, const char *pass);

/* The worker service: protected mode and the start state of accepted
 * connections, closing sessions of deleted users, applying changes made
 * elsewhere within a tick. */
extern const srv_service srv_aclconn_service;

#endif
