/*
 * srv_cmd_conn.c - connection commands: PING ECHO QUIT HELLO AUTH SELECT
 * RESET and CLIENT's own-connection subcommands (the subcommands about
 * every client are srv_cmd_ctl.c's).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_aclconn.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define HELLO_FIELDS 7

static const char ERR_WRONGPASS[] =
    "WRONGPASS invalid username-password pair or user is disabled.";
static const char ERR_NOPASS_AUTH[] =
    "ERR AUTH <password> called without any password configured for the "
    "default user. Are you sure your configuration is correct?";
static const char ERR_BADNAME[] =
    "ERR Client names cannot contain spaces, newlines or special characters.";

void srv_cmd_ping(srv_conn *c)
{
    if (c->argc > 2) {
        srv_reply_error(c, "ERR wrong number of arguments for 'ping' command");
        return;
    }
    if (c->flags & SRV_CONN_SUBSCRIBED && c->resp == 2) {
        /* RESP2 subscribed mode: Redis answers ["pong", argument or ""]. */
        srv_reply_array(c, 2);
        srv_reply_bulk_cstr(c, "pong");
        srv_reply_bulk(c, c->argc == 2 ? c->argv[1].ptr : "",
                       c->argc == 2 ? c->argv[1].len : 0);
        return;
    }
    if (c->argc == 2)
        srv_reply_bulk(c, c->argv[1].ptr, c->argv[1].len);
    else
        srv_reply_simple(c, "PONG");
}

void srv_cmd_echo(srv_conn *c)
{
    srv_reply_bulk(c, c->argv[1].ptr, c->argv[1].len);
}

void srv_cmd_quit(srv_conn *c)
{
    srv_reply_ok(c);
    c->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
}

static int valid_name(const srv_slice *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (s->ptr[i] < '!' || s->ptr[i] > '~')
            return 0;
    return 1;
}

static void set_name(srv_conn *c, const srv_slice *s)
{
    size_t n = s->len < SRV_CONN_NAME_MAX - 1 ? s->len : SRV_CONN_NAME_MAX - 1;

    memcpy(c->name, s->ptr, n);
    c->name[n] = '\0';
}

void srv_cmd_hello(srv_conn *c)
{
    long long ver = 0;
    const srv_slice *user = NULL, *pass = NULL, *name = NULL;

    if (c->argc >= 2) {
        if (!srv_util_str2ll(c->argv[1].ptr, c->argv[1].len, &ver)) {
            srv_reply_error(
                c, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (ver < 2 || ver > 3) {
            srv_reply_error(c, "NOPROTO unsupported protocol version");
            return;
        }
    }
    for (int j = 2; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        const srv_slice *o = &c->argv[j];
        if (srv_util_streq(o->ptr, o->len, "auth") && more >= 2) {
            user = &c->argv[j + 1];
            pass = &c->argv[j + 2];
            j += 2;
        } else if (srv_util_streq(o->ptr, o->len, "setname") && more >= 1) {
            name = &c->argv[++j];
        } else {
            srv_reply_errorf(c, "ERR Syntax error in HELLO option '%.*s'",
                             (int)o->len, o->ptr);
            return;
        }
    }
    if (user && srv_aclconn_authenticate(c, user, pass)) {
        srv_reply_error(c, ERR_WRONGPASS);
        return;
    }
    if (!c->authed) {
        srv_reply_error(c,
                        "NOAUTH HELLO must be called with the client already "
                        "authenticated, otherwise the HELLO AUTH "
                        "<user> <pass> option can be used to authenticate "
                        "the client and select the RESP protocol version "
                        "at the same time");
        return;
    }
    if (name) {
        if (!valid_name(name)) {
            srv_reply_error(c, ERR_BADNAME);
            return;
        }
        set_name(c, name);
    }
    if (ver)
        c->resp = (int)ver;
    srv_reply_map(c, HELLO_FIELDS);
    srv_reply_bulk_cstr(c, "server");
    srv_reply_bulk_cstr(c, "redis");
    srv_reply_bulk_cstr(c, "version");
    srv_reply_bulk_cstr(c, SRV_REDIS_VERSION);
    srv_reply_bulk_cstr(c, "proto");
    srv_reply_int(c, c->resp);
    srv_reply_bulk_cstr(c, "id");
    srv_reply_int(c, (long long)c->id);
    srv_reply_bulk_cstr(c, "mode");
    srv_reply_bulk_cstr(c, "standalone");
    srv_reply_bulk_cstr(c, "role");
    srv_reply_bulk_cstr(c, "master");
    srv_reply_bulk_cstr(c, "modules");
    srv_reply_array(c, 0);
}

void srv_cmd_auth(srv_conn *c)
{
    const srv_slice *user = c->argc == 3 ? &c->argv[1] : NULL;

    if (c->argc > 3) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!user && srv_aclconn_default_nopass()) {
        srv_reply_error(c, ERR_NOPASS_AUTH);
        return;
    }
    if (srv_aclconn_authenticate(c, user, &c->argv[c->argc - 1])) {
        srv_reply_error(c, ERR_WRONGPASS);
        return;
    }
    srv_reply_ok(c);
}

void srv_cmd_select(srv_conn *c)
{
    int db;

    if (srv_args_int_or_reply(c, &c->argv[1], &db))
        return;
    if (db < 0 || db >= srv_her.cfg->databases) {
        srv_reply_error(c, "ERR DB index is out of range");
        return;
    }
    c->db = (unsigned)db;
    srv_reply_ok(c);
}

void srv_cmd_reset(srv_conn *c)
{
    SRV_HOOKS_EACH(&c->hooks, c, reset); /* MULTI, subscriptions */
    c->db = 0;
    c->resp = 2;
    c->name[0] = '\0';
    srv_aclconn_reset(c);
    srv_reply_simple(c, "RESET");
}

void srv_cmd_client_setinfo(srv_conn *c)
{
    const srv_slice *attr = &c->argv[2], *val = &c->argv[3];
    char *field;

    if (srv_util_streq(attr->ptr, attr->len, "lib-name"))
        field = c->lib_name;
    else if (srv_util_streq(attr->ptr, attr->len, "lib-ver"))
        field = c->lib_ver;
    else {
        srv_reply_errorf(c, "ERR Unrecognized option '%.*s'", (int)attr->len,
                         attr->ptr);
        return;
    }
    if (!valid_name(val)) {
        srv_reply_errorf(c,
                         "ERR %s cannot contain spaces, newlines or "
                         "special characters.",
                         field == c->lib_name ? "lib-name" : "lib-ver");
        return;
    }
    size_t n = val->len < SRV_CONN_NAME_MAX - 1 ? val->len
                                                : SRV_CONN_NAME_MAX - 1;
    memcpy(field, val->ptr, n);
    field[n] = '\0';
    srv_reply_ok(c);
}

/* ---- CLIENT: one handler per subcommand (the dispatcher picks it) ---- */

void srv_cmd_client_id(srv_conn *c) { srv_reply_int(c, (long long)c->id); }

void srv_cmd_client_getname(srv_conn *c)
{
    if (c->name[0])
        srv_reply_bulk_cstr(c, c->name);
    else
        srv_reply_null(c);
}

void srv_cmd_client_setname(srv_conn *c)
{
    if (!valid_name(&c->argv[2])) {
        srv_reply_error(c, ERR_BADNAME);
        return;
    }
    set_name(c, &c->argv[2]);
    srv_reply_ok(c);
}

void srv_cmd_client_help(srv_conn *c)
{
    static const char *const help[] = {
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID",
        "    Return the ID of the current connection.",
        "GETNAME",
        "    Return the name of the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>",
        "    Set client library name or version.",
        "INFO",
        "    Return information about the current client connection.",
        "LIST",
        "    Return information about client connections of this worker.",
        "HELP",
        "    Print this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}
