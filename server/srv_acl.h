/*
 * srv_acl.h - Redis 7.0's ACL rules as data: users (on/off, hashed
 * passwords, flags) with selectors (allowed commands and first
 * arguments, key patterns with read/write permissions, channel
 * patterns), the rules' text both ways (ACL SETUSER's operations in, ACL
 * LIST's and the aclfile's description out), the aclfile's parse, and the
 * permission check of one command line. No globals, no I/O, no shared
 * memory: sets of users and their text are srv_aclset.h's, the set every
 * worker applies live srv_aclconn.h's and its published copy
 * srv_aclshm.h's. Any process, one thread per object.
 */
#ifndef SRV_ACL_H
#define SRV_ACL_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_buf.h"
#include "server/srv_resp.h"

struct srv_command;

/* Bits of a selector's command map: one per row of the command table, the
 * last one reserved (set only by +@all: "future commands"). */
#define SRV_ACL_CMD_BITS 1024
/* The hex text of a password's SHA-256, without its NUL. */
#define SRV_ACL_HASH_LEN 64

/* The outcome of a check, Redis's ACL_* codes (their order picks which
 * denial of several selectors is reported). */
enum srv_acl_verdict {
    SRV_ACL_OK = 0,
    SRV_ACL_DENIED_CMD = 1,
    SRV_ACL_DENIED_KEY = 2,
    SRV_ACL_DENIED_AUTH = 3,
    SRV_ACL_DENIED_CHANNEL = 4,
};

/* Errors of a rule (Redis's errno meanings, texts by srv_acl_strerror). */
enum srv_acl_err {
    SRV_ACL_ESYNTAX = -1,       /* EINVAL */
    SRV_ACL_EUNKNOWN = -2,      /* ENOENT: command or category */
    SRV_ACL_EKEYAFTERALL = -3,  /* EEXIST */
    SRV_ACL_ECHANAFTERALL = -4, /* EISDIR */
    SRV_ACL_ENOSUCHPASS = -5,   /* ENODEV */
    SRV_ACL_EBADHASH = -6,      /* EBADMSG */
    SRV_ACL_EDUPUSER = -7,      /* EALREADY */
    SRV_ACL_ESUBFIRSTARG = -8,  /* ECHILD */
    SRV_ACL_ENOMEM = -9,
};

/* Redis's ACL SETUSER text of a rule error (errors of the same kind as
 * Redis's share its words). */
const char *srv_acl_strerror(int err);

typedef struct srv_acl_user srv_acl_user;

/* ---- users ---- */

/*
 * A new user named name[0..len) as ACL SETUSER makes it: off, no password,
 * no command, no key, and every channel if `allchannels` (the
 * acl-pubsub-default of the moment) else none. Not in any set. NULL when
 * out of memory. The caller owns it (srv_acl_user_destroy).
 */
srv_acl_user *srv_acl_user_create(const char *name, size_t len,
                                  int allchannels);

/* A copy of u (name, id and rules); NULL when out of memory. */
srv_acl_user *srv_acl_user_copy(const srv_acl_user *u);

/* Free *u (may be NULL) and NULL it. */
void srv_acl_user_destroy(srv_acl_user **u);

/*
 * Apply one rule op[0..len) to u, as ACL SETUSER does: on off nopass
 * resetpass >pass <pass #hash !hash reset [skip-]sanitize-payload
 * (selector) clearselectors, and the selector rules (allcommands
 * nocommands +cmd -cmd +cmd|sub +cmd|firstarg +@cat -@cat ~pat %R~pat
 * %W~pat %RW~pat allkeys resetkeys &pat allchannels resetchannels) on
 * its root selector. An empty rule does nothing. `allchannels` is the
 * acl-pubsub-default for what the rule creates (a selector, "reset").
 * Returns 0, or a srv_acl_err with u unchanged by this rule (except
 * ENOMEM, which may leave it half applied: apply to a copy).
 */
int srv_acl_user_apply(srv_acl_user *u, const char *op, size_t len,
                       int allchannels);

/* The user's name (NUL-terminated; *len its length, NULL allowed). */
const char *srv_acl_user_name(const srv_acl_user *u, size_t *len);

/* The user's identity: unique among every user a set has held, kept
 * across changes of its rules (0 until a set gives it one); and setting
 * it (srv_aclset.h's). */
uint64_t srv_acl_user_id(const srv_acl_user *u);
void srv_acl_user_set_id(srv_acl_user *u, uint64_t id);

/* 1 if the user is on. */
int srv_acl_user_enabled(const srv_acl_user *u);

/* 1 if the user has nopass (any password works). */
int srv_acl_user_nopass(const srv_acl_user *u);

/* 1 if password[0..len) opens u: u is on and has nopass or the
 * password's hash (compared in constant time). */
int srv_acl_user_check_password(const srv_acl_user *u, const char *password,
                                size_t len);

/*
 * Append ACL LIST's description of u (its flags, #hashes, root rules,
 * then each selector in parentheses; without "user NAME ") to *out. With
 * `exact`, read-write key patterns are "%RW~pat" rather than "~pat", so
 * that the text always gives u back ("~*" would read back as allkeys:
 * Redis's "~* ~a" describes a user it cannot make). 0 or ENOMEM.
 */
int srv_acl_user_describe(const srv_acl_user *u, int exact, srv_buf *out);

/* 1 if u may run anything on any key and channel (the root selector has
 * every command, key and channel): the check then has nothing to do. */
int srv_acl_user_unrestricted(const srv_acl_user *u);

/* ---- what ACL GETUSER shows ---- */

/* Number of u's flags (on/off, nopass, [skip-]sanitize-payload) and the
 * i-th's name. */
int srv_acl_user_nflags(const srv_acl_user *u);
const char *srv_acl_user_flag(const srv_acl_user *u, int i);

/* Number of u's password hashes and the i-th (SRV_ACL_HASH_LEN chars). */
int srv_acl_user_npasswords(const srv_acl_user *u);
const char *srv_acl_user_password(const srv_acl_user *u, int i);

/* Number of u's selectors, the root (0) included. */
int srv_acl_user_nselectors(const srv_acl_user *u);

/* Append selector i's commands ("+@all -@dangerous"), keys ("~a %R~b")
 * and channels ("&c") as ACL GETUSER shows them. 0 or ENOMEM. */
int srv_acl_user_selector_text(const srv_acl_user *u, int i, int which,
                               srv_buf *out);
enum { SRV_ACL_TEXT_COMMANDS, SRV_ACL_TEXT_KEYS, SRV_ACL_TEXT_CHANNELS };

/* ---- the check ---- */

/*
 * May u run cmd (the subcommand's row when there is one) on the command
 * line argv[0..argc)? Checks each selector as Redis does: the command
 * (its bit, or an allowed first argument), every key its key specs find
 * against the key patterns with the access the spec needs, the channels of
 * PUBLISH, SPUBLISH, SUBSCRIBE, SSUBSCRIBE and PSUBSCRIBE (PSUBSCRIBE's
 * literally). Returns SRV_ACL_OK if one selector allows all, else the
 * denial Redis reports, with *errpos the argv index of the key or channel
 * denied.
 */
int srv_acl_check(const srv_acl_user *u, const struct srv_command *cmd,
                  int argc, const srv_slice *argv, int *errpos);

/* 1 if u may subscribe to the channel (pattern: literally) */
int srv_acl_check_channel(const srv_acl_user *u, const char *ch, size_t len,
                          int pattern);

/* 1 if every channel of `old`'s selectors is one of `now`'s, or `now`
 * has every channel: sessions of the user keep their subscriptions. */
int srv_acl_channels_kept(const srv_acl_user *old, const srv_acl_user *now);

/* ---- categories and passwords ---- */

/* Number of ACL categories, the i-th's name, and the A_* flag of a name
 * (any case; 0 if unknown). */
int srv_acl_ncategories(void);
const char *srv_acl_category_name(int i);
unsigned srv_acl_category_flag(const char *name, size_t len);

/* The hex SHA-256 of data[0..len) into hex (SRV_ACL_HASH_LEN + 1 bytes). */
void srv_acl_hash_password(const char *data, size_t len, char *hex);

/*
 * Split an ACL SETUSER argument list (or an aclfile line's words) into
 * rules, merging a selector spread over several words ("(+get" "~k)")
 * into one: rules[i] points into `joined`, a buffer the caller frees.
 * Returns the number of rules, or -1 with *bad the index of the word
 * that opens an unmatched parenthesis, or -2 when out of memory.
 */
int srv_acl_merge_selectors(const srv_slice *words, int n, srv_slice *rules,
                            srv_buf *joined, int *bad);

/* 1 if s[0..len) has a space or a NUL (invalid in names and patterns). */
int srv_acl_has_spaces(const char *s, size_t len);

#endif
