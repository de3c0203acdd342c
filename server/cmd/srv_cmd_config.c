/*
 * srv_cmd_config.c - CONFIG GET, SET, REWRITE, RESETSTAT and HELP as Redis
 * 7.0 answers them. The directives are srv_config.h's table; the changes
 * go through srv_cfgops.h, which the master's admin socket shares.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_aclconn.h"
#include "server/srv_cfgops.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <string.h>

#define CONFIG_REPLY_MAX (SRV_CONFIG_ERR_SIZE * 2)

/* CONFIG GET pattern [pattern ...]: each matching name once. */
static void config_get(srv_conn *c)
{
    srv_cfgops_reply_get(c, c->argv + 2, c->argc - 2);
}

/*
 * CONFIG SET name value [name value ...]: all or nothing, as Redis. The
 * pairs are applied to a copy of the published configuration under its
 * writer lock, so concurrent CONFIG SETs in other workers neither tear
 * nor lose each other's changes; the reply comes once every worker has
 * applied the change (srv_cfgops_set).
 */
static void config_set(srv_conn *c)
{
    char err[CONFIG_REPLY_MAX];

    if (c->argc % 2) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (srv_cfgops_set(c->argv + 2, (c->argc - 2) / 2, err, sizeof err)) {
        srv_reply_error(c, err);
        return;
    }
    for (int i = 2; i < c->argc; i += 2)
        if (srv_util_streq(c->argv[i].ptr, c->argv[i].len, "requirepass") &&
            srv_aclconn_set_requirepass(c, srv_her.cfg->requirepass))
            return; /* the default user's password (issue 16) */
    srv_reply_ok(c);
}

static void config_help(srv_conn *c)
{
    static const char *const help[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their "
        "values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

void srv_cmd_config(srv_conn *c)
{
    const srv_slice *sub = &c->argv[1];
    char err[CONFIG_REPLY_MAX];

    if (srv_util_streq(sub->ptr, sub->len, "get")) {
        config_get(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "set")) {
        config_set(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "resetstat")) {
        srv_cfgops_resetstat();
        srv_reply_ok(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "rewrite")) {
        if (srv_cfgops_rewrite(err, sizeof err))
            srv_reply_error(c, err);
        else
            srv_reply_ok(c);
    } else if (srv_util_streq(sub->ptr, sub->len, "help")) {
        config_help(c);
    } else {
        srv_args_subcommand_error(c);
    }
}
