/*
 * srv_aclset.h - a set of ACL users (srv_acl.h): kept in name order (ACL
 * LIST's), each with an identity no other user of the set's history had
 * (what sessions hold on to across changes), and its text forms: the
 * aclfile's (ACL SAVE, ACL LOAD and its errors) and the exact one the
 * shared region carries (srv_aclshm.h). No globals, no I/O. Any process,
 * one thread per set.
 */
#ifndef SRV_ACLSET_H
#define SRV_ACLSET_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_acl.h"
#include "server/srv_buf.h"

typedef struct srv_aclset srv_aclset;

/* A set holding only the default user ("on nopass ~* &* +@all"), with
 * identities starting at 1. NULL when out of memory. */
srv_aclset *srv_aclset_create(void);

void srv_aclset_destroy(srv_aclset **s);

/* A copy of s (users, identities and the next identity). */
srv_aclset *srv_aclset_copy(const srv_aclset *s);

/* Number of users and the i-th in name order (ACL LIST's order). */
int srv_aclset_count(const srv_aclset *s);
srv_acl_user *srv_aclset_at(const srv_aclset *s, int i);

/* The user named name[0..len), or NULL. */
srv_acl_user *srv_aclset_find(const srv_aclset *s, const char *name,
                              size_t len);

/* The user whose identity is id, or NULL. */
srv_acl_user *srv_aclset_find_id(const srv_aclset *s, uint64_t id);

/* The default user (always there). */
srv_acl_user *srv_aclset_default(const srv_aclset *s);

/*
 * Put u into s, which takes it: it replaces the user of the same name
 * (keeping that user's identity, unless `fresh`) or is added with a new
 * identity. 0 or ENOMEM (u is then freed).
 */
int srv_aclset_put(srv_aclset *s, srv_acl_user *u, int fresh);

/* Remove and free the user named name[0..len): 1 if it was there. */
int srv_aclset_remove(srv_aclset *s, const char *name, size_t len);

/* ---- text ---- */

/*
 * Append the aclfile's text of s to *out: "user NAME DESCRIPTION\n" per
 * user, in name order (ACL SAVE). With `ids`, a line of the next identity
 * first, each user's identity before its line, and read-write key
 * patterns as "%RW~pat" (so "~*" always means allkeys): the form the
 * shared region carries, which reads back exactly. 0 or ENOMEM.
 */
int srv_aclset_write(const srv_aclset *s, int ids, srv_buf *out);

/*
 * Parse text[0..len) as srv_aclset_write's form with identities (the
 * shared region's): a new set into *out. 0, ENOMEM or SRV_ACL_ESYNTAX.
 */
int srv_aclset_read(const char *text, size_t len, srv_aclset **out);

/*
 * Parse an aclfile's text as ACL LOAD does: every line empty or "user
 * NAME RULES...", each user once; the default user is made if the file
 * does not name it. Every user gets a new identity from `next_id` on but
 * the default, which keeps `default_id`. On success *out is the new set
 * and 0 is returned; on errors -1, with Redis's one-line description of
 * every problem in *err (its file name `fname`), and *out NULL. ENOMEM.
 */
int srv_aclset_load(const char *text, size_t len, const char *fname,
                    uint64_t default_id, uint64_t next_id, int allchannels,
                    srv_aclset **out, srv_buf *err);

/* The identity the next new user of s gets, and setting it (a loaded set
 * continues from its predecessor's). */
uint64_t srv_aclset_next_id(const srv_aclset *s);
void srv_aclset_set_next_id(srv_aclset *s, uint64_t id);

#endif
