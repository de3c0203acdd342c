/*
 * srv_cmd_acl.c - the ACL command: CAT DELUSER DRYRUN GENPASS GETUSER
 * HELP LIST LOAD LOG SAVE SETUSER USERS WHOAMI. The rules are
 * srv_acl.h's; the users in force, their changes and the log are
 * srv_aclconn.h's.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_acl.h"
#include "server/srv_aclconn.h"
#include "server/srv_aclset.h"
#include "server/srv_aclshm.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define GENPASS_MAX_BITS 4096
#define GENPASS_DEFAULT_BITS 256
#define BITS_PER_HEX 4
#define LOG_DEFAULT_COUNT 10
#define LOG_FIELDS 7
#define GETUSER_FIELDS 6
#define SELECTOR_FIELDS 3
#define NAME_SHOWN_MAX 128
#define MS_PER_S 1000.0
/* Bytes read at a time from the aclfile. */
#define FILE_CHUNK 4096

static const char ERR_NO_ACLFILE[] =
    "ERR This Redis instance is not configured to use an ACL file. You may "
    "want to specify users via the ACL SETUSER command and then issue a "
    "CONFIG REWRITE (assuming you have a Redis configuration file set) in "
    "order to store users in the Redis configuration.";

/* Redis's reply to a subcommand given the wrong number of arguments by
 * its handler's own rule. */
static void syntax_error(srv_conn *c)
{
    srv_reply_errorf(c,
                     "ERR unknown subcommand or wrong number of arguments "
                     "for '%.*s'. Try ACL HELP.",
                     (int)(c->argv[1].len < NAME_SHOWN_MAX ? c->argv[1].len
                                                           : NAME_SHOWN_MAX),
                     c->argv[1].ptr);
}

static void reply_buf(srv_conn *c, const srv_buf *b)
{
    srv_reply_bulk(c, b->data ? b->data : "", b->len);
}

/* ---- CAT ---- */

void srv_cmd_acl_cat(srv_conn *c)
{
    int n, matched = 0;
    const srv_command *t = srv_cmd_table(&n);
    unsigned cat;

    if (c->argc == 2) {
        srv_reply_array(c, srv_acl_ncategories());
        for (int i = 0; i < srv_acl_ncategories(); i++)
            srv_reply_bulk_cstr(c, srv_acl_category_name(i));
        return;
    }
    if (c->argc != 3) {
        syntax_error(c);
        return;
    }
    if (!(cat = srv_acl_category_flag(c->argv[2].ptr, c->argv[2].len))) {
        srv_reply_errorf(c, "ERR Unknown category '%.*s'",
                         (int)(c->argv[2].len < NAME_SHOWN_MAX
                                   ? c->argv[2].len
                                   : NAME_SHOWN_MAX),
                         c->argv[2].ptr);
        return;
    }
    for (int i = 0; i < n; i++)
        matched += (srv_cmd_categories(&t[i]) & cat) != 0;
    srv_reply_array(c, matched);
    for (int i = 0; i < n; i++)
        if (srv_cmd_categories(&t[i]) & cat)
            srv_reply_bulk_cstr(c, t[i].name);
}

/* ---- SETUSER ---- */

typedef struct setuser {
    const srv_slice *name;
    srv_slice *rules;
    int nrules;
} setuser;

static int edit_setuser(srv_conn *c, srv_aclset *next, void *arg)
{
    setuser *su = arg;
    const srv_acl_user *old = srv_aclset_find(next, su->name->ptr,
                                              su->name->len);
    int allch = (int)srv_her.cfg->acl_pubsub_default;
    srv_acl_user *u = old ? srv_acl_user_copy(old)
                          : srv_acl_user_create(su->name->ptr, su->name->len,
                                                allch);

    if (!u) {
        srv_reply_error(c, "ERR out of memory");
        return 1;
    }
    for (int i = 0; i < su->nrules; i++) {
        int rc = srv_acl_user_apply(u, su->rules[i].ptr, su->rules[i].len,
                                    allch);
        if (rc) {
            srv_reply_errorf(c, "ERR Error in ACL SETUSER modifier '%.*s': %s",
                             (int)su->rules[i].len, su->rules[i].ptr,
                             srv_acl_strerror(rc));
            srv_acl_user_destroy(&u);
            return 1;
        }
    }
    if (srv_aclset_put(next, u, 0)) {
        srv_reply_error(c, "ERR out of memory");
        return 1;
    }
    return 0;
}

void srv_cmd_acl_setuser(srv_conn *c)
{
    const srv_slice *name = &c->argv[2];
    int nwords = c->argc - 3, bad = 0;
    srv_slice *rules = calloc((size_t)nwords + 1, sizeof *rules);
    srv_buf joined = { 0 };
    setuser su = { name, rules, 0 };

    if (!rules) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    if (srv_acl_has_spaces(name->ptr, name->len)) {
        srv_reply_error(
            c, "ERR Usernames can't contain spaces or null characters");
        goto done;
    }
    su.nrules = srv_acl_merge_selectors(c->argv + 3, nwords, rules, &joined,
                                        &bad);
    if (su.nrules == -1) {
        srv_reply_errorf(c,
                         "ERR Unmatched parenthesis in acl selector starting "
                         "at '%.*s'.",
                         (int)c->argv[3 + bad].len, c->argv[3 + bad].ptr);
        goto done;
    }
    if (su.nrules < 0) {
        srv_reply_error(c, "ERR out of memory");
        goto done;
    }
    if (srv_aclconn_change(c, edit_setuser, &su) == 0)
        srv_reply_ok(c);
done:
    srv_buf_free(&joined);
    free(rules);
}

/* ---- DELUSER ---- */

static int edit_deluser(srv_conn *c, srv_aclset *next, void *arg)
{
    int *deleted = arg;

    for (int i = 2; i < c->argc; i++)
        *deleted += srv_aclset_remove(next, c->argv[i].ptr, c->argv[i].len);
    return 0;
}

void srv_cmd_acl_deluser(srv_conn *c)
{
    int deleted = 0;

    for (int i = 2; i < c->argc; i++)
        if (c->argv[i].len == strlen("default") &&
            memcmp(c->argv[i].ptr, "default", c->argv[i].len) == 0) {
            srv_reply_error(c, "ERR The 'default' user cannot be removed");
            return;
        }
    if (srv_aclconn_change(c, edit_deluser, &deleted) == 0)
        srv_reply_int(c, deleted);
}

/* ---- GETUSER ---- */

static void reply_selector(srv_conn *c, const srv_acl_user *u, int i)
{
    static const char *const names[] = { "commands", "keys", "channels" };
    static const int which[] = { SRV_ACL_TEXT_COMMANDS, SRV_ACL_TEXT_KEYS,
                                 SRV_ACL_TEXT_CHANNELS };

    for (int f = 0; f < SELECTOR_FIELDS; f++) {
        srv_buf b = { 0 };
        srv_reply_bulk_cstr(c, names[f]);
        if (srv_acl_user_selector_text(u, i, which[f], &b)) {
            c->flags |= SRV_CONN_CLOSE_ASAP; /* out of memory */
            srv_buf_free(&b);
            return;
        }
        reply_buf(c, &b);
        srv_buf_free(&b);
    }
}

void srv_cmd_acl_getuser(srv_conn *c)
{
    const srv_acl_user *u = srv_aclset_find(srv_aclconn_users(c),
                                            c->argv[2].ptr, c->argv[2].len);
    int n;

    if (!u) {
        srv_reply_null(c);
        return;
    }
    srv_reply_map(c, GETUSER_FIELDS);
    srv_reply_bulk_cstr(c, "flags");
    srv_reply_set(c, n = srv_acl_user_nflags(u));
    for (int i = 0; i < n; i++)
        srv_reply_bulk_cstr(c, srv_acl_user_flag(u, i));
    srv_reply_bulk_cstr(c, "passwords");
    srv_reply_array(c, n = srv_acl_user_npasswords(u));
    for (int i = 0; i < n; i++)
        srv_reply_bulk(c, srv_acl_user_password(u, i), SRV_ACL_HASH_LEN);
    reply_selector(c, u, 0);
    srv_reply_bulk_cstr(c, "selectors");
    srv_reply_array(c, n = srv_acl_user_nselectors(u) - 1);
    for (int i = 1; i <= n; i++) {
        srv_reply_map(c, SELECTOR_FIELDS);
        reply_selector(c, u, i);
    }
}

/* ---- LIST, USERS, WHOAMI ---- */

static void list_users(srv_conn *c, int names_only)
{
    const srv_aclset *s = srv_aclconn_users(c);
    int n = srv_aclset_count(s);

    srv_reply_array(c, n);
    for (int i = 0; i < n; i++) {
        const srv_acl_user *u = srv_aclset_at(s, i);
        size_t len;
        const char *name = srv_acl_user_name(u, &len);
        srv_buf b = { 0 };
        if (names_only) {
            srv_reply_bulk(c, name, len);
            continue;
        }
        if (srv_buf_append(&b, "user ", strlen("user ")) ||
            srv_buf_append(&b, name, len) || srv_buf_append(&b, " ", 1) ||
            srv_acl_user_describe(u, 0, &b))
            c->flags |= SRV_CONN_CLOSE_ASAP; /* out of memory */
        reply_buf(c, &b);
        srv_buf_free(&b);
    }
}

void srv_cmd_acl_list(srv_conn *c) { list_users(c, 0); }

void srv_cmd_acl_users(srv_conn *c) { list_users(c, 1); }

void srv_cmd_acl_whoami(srv_conn *c)
{
    srv_reply_bulk_cstr(c, srv_aclconn_user_name(c));
}

/* ---- GENPASS ---- */

void srv_cmd_acl_genpass(srv_conn *c)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char raw[GENPASS_MAX_BITS / 8];
    char hex[GENPASS_MAX_BITS / BITS_PER_HEX];
    long long bits = GENPASS_DEFAULT_BITS;

    if (c->argc > 3) {
        syntax_error(c);
        return;
    }
    if (c->argc == 3 && srv_args_ll_or_reply(c, &c->argv[2], &bits))
        return;
    if (bits <= 0 || bits > GENPASS_MAX_BITS) {
        srv_reply_errorf(c,
                         "ERR ACL GENPASS argument must be the number of bits "
                         "for the output password, a positive number up to "
                         "%d",
                         GENPASS_MAX_BITS);
        return;
    }
    size_t chars = (size_t)(bits + BITS_PER_HEX - 1) / BITS_PER_HEX;
    size_t got = 0;
    while (got < (chars + 1) / 2) {
        ssize_t r = getrandom(raw + got, (chars + 1) / 2 - got, 0);
        if (r <= 0) {
            srv_reply_error(c, "ERR no random bytes to be had");
            return;
        }
        got += (size_t)r;
    }
    for (size_t i = 0; i < chars; i++)
        hex[i] = digits[i % 2 ? raw[i / 2] & 0xf : raw[i / 2] >> 4];
    srv_reply_bulk(c, hex, chars);
}

/* ---- LOG ---- */

static const char *reason_name(int r)
{
    switch (r) {
    case SRV_ACL_DENIED_CMD: return "command";
    case SRV_ACL_DENIED_KEY: return "key";
    case SRV_ACL_DENIED_CHANNEL: return "channel";
    case SRV_ACL_DENIED_AUTH: return "auth";
    default: return "unknown";
    }
}

static const char *context_name(int ctx)
{
    switch (ctx) {
    case SRV_ACLSHM_CTX_TOPLEVEL: return "toplevel";
    case SRV_ACLSHM_CTX_MULTI: return "multi";
    case SRV_ACLSHM_CTX_LUA: return "lua";
    case SRV_ACLSHM_CTX_MODULE: return "module";
    default: return "unknown";
    }
}

void srv_cmd_acl_log(srv_conn *c)
{
    struct srv_aclshm *h = srv_aclconn_region();
    long long count = LOG_DEFAULT_COUNT;
    srv_aclshm_entry *e;
    int n;

    if (c->argc > 3) {
        syntax_error(c);
        return;
    }
    if (!h) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    if (c->argc == 3) {
        if (srv_util_streq(c->argv[2].ptr, c->argv[2].len, "reset")) {
            srv_aclshm_log_reset(h);
            srv_reply_ok(c);
            return;
        }
        if (srv_args_ll_or_reply(c, &c->argv[2], &count))
            return;
        if (count < 0)
            count = 0;
    }
    if (count > SRV_ACLSHM_LOG_SLOTS)
        count = SRV_ACLSHM_LOG_SLOTS;
    if (!(e = malloc((size_t)(count ? count : 1) * sizeof *e))) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    n = srv_aclshm_log_read(h, e, (int)count);
    if (n < 0)
        n = 0;
    int64_t now = srv_util_mstime();
    srv_reply_array(c, n);
    for (int i = 0; i < n; i++) {
        srv_reply_map(c, LOG_FIELDS);
        srv_reply_bulk_cstr(c, "count");
        srv_reply_int(c, (long long)e[i].count);
        srv_reply_bulk_cstr(c, "reason");
        srv_reply_bulk_cstr(c, reason_name(e[i].reason));
        srv_reply_bulk_cstr(c, "context");
        srv_reply_bulk_cstr(c, context_name(e[i].context));
        srv_reply_bulk_cstr(c, "object");
        srv_reply_bulk(c, e[i].object, e[i].object_len);
        srv_reply_bulk_cstr(c, "username");
        srv_reply_bulk(c, e[i].user, e[i].user_len);
        srv_reply_bulk_cstr(c, "age-seconds");
        srv_reply_double(c, (double)(now - e[i].ctime_ms) / MS_PER_S);
        srv_reply_bulk_cstr(c, "client-info");
        srv_reply_bulk(c, e[i].cinfo, e[i].cinfo_len);
    }
    free(e);
}

/* ---- DRYRUN ---- */

void srv_cmd_acl_dryrun(srv_conn *c)
{
    const srv_acl_user *u = srv_aclset_find(srv_aclconn_users(c),
                                            c->argv[2].ptr, c->argv[2].len);
    const srv_slice *argv = c->argv + 3;
    int argc = c->argc - 3, pos = 0, rc;
    const srv_command *cmd;
    srv_buf b = { 0 };

    if (!u) {
        srv_reply_errorf(c, "ERR User '%.*s' not found", (int)c->argv[2].len,
                         c->argv[2].ptr);
        return;
    }
    cmd = srv_cmd_lookup(argv[0].ptr, argv[0].len);
    if (cmd && cmd->nsubs && argc >= 2)
        cmd = srv_cmd_lookup_sub(cmd, argv[1].ptr, argv[1].len);
    if (!cmd) {
        srv_reply_errorf(c, "ERR Command '%.*s' not found", (int)argv[0].len,
                         argv[0].ptr);
        return;
    }
    if ((cmd->arity > 0 && cmd->arity != argc) ||
        (cmd->arity < 0 && argc < -cmd->arity)) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         cmd->name);
        return;
    }
    rc = srv_acl_user_unrestricted(u) ? SRV_ACL_OK
                                      : srv_acl_check(u, cmd, argc, argv, &pos);
    if (rc == SRV_ACL_OK) {
        srv_reply_ok(c);
        return;
    }
    const char *what = rc == SRV_ACL_DENIED_CMD   ? "run the '"
                       : rc == SRV_ACL_DENIED_KEY ? "access the '"
                                                  : "access the '";
    const char *tail = rc == SRV_ACL_DENIED_CMD   ? "' command"
                       : rc == SRV_ACL_DENIED_KEY ? "' key"
                                                  : "' channel";
    if (srv_buf_append(&b, "This user has no permissions to ",
                       strlen("This user has no permissions to ")) ||
        srv_buf_append(&b, what, strlen(what)) ||
        (rc == SRV_ACL_DENIED_CMD
             ? srv_buf_append(&b, cmd->name, strlen(cmd->name))
             : srv_buf_append(&b, argv[pos].ptr, argv[pos].len)) ||
        srv_buf_append(&b, tail, strlen(tail)))
        c->flags |= SRV_CONN_CLOSE_ASAP; /* out of memory */
    reply_buf(c, &b);
    srv_buf_free(&b);
}

/* ---- LOAD, SAVE ---- */

static int read_file(const char *path, srv_buf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return errno;
    do {
        if (srv_buf_reserve(out, FILE_CHUNK)) {
            close(fd);
            return ENOMEM;
        }
        n = read(fd, out->data + out->len, FILE_CHUNK);
        if (n > 0)
            out->len += (size_t)n;
    } while (n > 0 || (n < 0 && errno == EINTR));
    int e = n < 0 ? errno : 0;
    close(fd);
    return e;
}

typedef struct load {
    const srv_buf *text;
} load;

/*
 * Every user is replaced by the file's, under the region's lock: the
 * loaded users continue the identities of the set in force, so none is
 * mistaken for a user created meanwhile; the default user keeps its own
 * (its sessions go on, as in Redis, where it is copied over in place).
 */
static int edit_load(srv_conn *c, srv_aclset *next, void *arg)
{
    load *l = arg;
    srv_aclset *loaded = NULL;
    srv_buf errs = { 0 };
    int rc, n;

    rc = srv_aclset_load(l->text->data ? l->text->data : "", l->text->len,
                         srv_her.cfg->aclfile,
                         srv_acl_user_id(srv_aclset_default(next)),
                         srv_aclset_next_id(next),
                         (int)srv_her.cfg->acl_pubsub_default, &loaded, &errs);
    if (rc) {
        if (rc == -1)
            srv_reply_errorf(c, "ERR %.*s", (int)errs.len, errs.data);
        else
            srv_reply_error(c, "ERR out of memory");
        srv_buf_free(&errs);
        return 1;
    }
    while (srv_aclset_count(next) > 0) {
        size_t len;
        const char *name = srv_acl_user_name(srv_aclset_at(next, 0), &len);
        srv_aclset_remove(next, name, len);
    }
    srv_aclset_set_next_id(next, srv_aclset_next_id(loaded));
    n = srv_aclset_count(loaded);
    for (int i = 0; i < n && rc == 0; i++) {
        srv_acl_user *u = srv_acl_user_copy(srv_aclset_at(loaded, i));
        if (!u || srv_aclset_put(next, u, 0)) {
            srv_reply_error(c, "ERR out of memory");
            rc = 1;
        }
    }
    srv_aclset_destroy(&loaded);
    return rc;
}

void srv_cmd_acl_load(srv_conn *c)
{
    const char *path = srv_her.cfg->aclfile;
    srv_buf text = { 0 };
    load l = { &text };
    int rc;

    if (!path[0]) {
        srv_reply_error(c, ERR_NO_ACLFILE);
        return;
    }
    if ((rc = read_file(path, &text))) {
        srv_reply_errorf(c, "ERR Error loading ACLs, opening file '%s': %s",
                         path, strerror(rc));
    } else if (srv_aclconn_change(c, edit_load, &l) == 0) {
        srv_reply_ok(c);
    }
    srv_buf_free(&text);
}

void srv_cmd_acl_save(srv_conn *c)
{
    const char *path = srv_her.cfg->aclfile;
    char tmp[SRV_PATH_MAX + SRV_LLSTR_SIZE * 2 + 8];
    srv_buf text = { 0 };
    int fd = -1, ok = 0;

    if (!path[0]) {
        srv_reply_error(c, ERR_NO_ACLFILE);
        return;
    }
    if (srv_aclset_write(srv_aclconn_users(c), 0, &text))
        goto done;
    snprintf(tmp, sizeof tmp, "%s.tmp-%d-%lld", path, (int)getpid(),
             (long long)srv_util_mstime());
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        srv_log(SRV_LOG_WARNING, errno, "Opening temp ACL file for ACL SAVE");
        goto done;
    }
    if (write(fd, text.data ? text.data : "", text.len) != (ssize_t)text.len) {
        srv_log(SRV_LOG_WARNING, errno, "Writing ACL file for ACL SAVE");
        goto done;
    }
    if (fsync(fd)) {
        srv_log(SRV_LOG_WARNING, errno, "fsync() of the ACL file");
        goto done;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path)) {
        srv_log(SRV_LOG_WARNING, errno, "Renaming ACL file for ACL SAVE");
        goto done;
    }
    ok = 1;
done:
    if (fd >= 0)
        close(fd);
    if (!ok)
        unlink(tmp);
    srv_buf_free(&text);
    if (ok)
        srv_reply_ok(c);
    else
        srv_reply_error(c, "ERR There was an error trying to save the ACLs. "
                           "Please check the server logs for more "
                           "information");
}

/* ---- HELP ---- */

void srv_cmd_acl_help(srv_conn *c)
{
    static const char *const help[] = {
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command "
        "categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without "
        "executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` "
        "argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}
