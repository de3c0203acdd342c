/*
 * srv_cmd_pubsub.c - pub/sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE
 * PUNSUBSCRIBE SSUBSCRIBE SUNSUBSCRIBE PUBLISH SPUBLISH PUBSUB, with
 * Redis 7's replies (confirmations are pushes in RESP3, arrays in RESP2).
 * The state, delivery and the broker are in srv_pubsub.c.
 *
 * Every one of them is flagged F_BARRIER | F_NOREPLAY: the group is
 * committed before and after it, so a rewind of the group never runs it
 * twice (a second SUBSCRIBE would reply other counts, a second PUBLISH
 * would deliver twice).
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <string.h>

#define SUBCMD_ARG_MAX 128

/* The count a (un)subscribe confirmation shows: shard channels count
 * apart, channels and patterns together (Redis 7.0). */
static long long sub_count(const srv_conn *c, int kind)
{
    if (kind == SRV_PS_SHARD)
        return (long long)srv_pubsub_count(c, SRV_PS_SHARD);
    return (long long)(srv_pubsub_count(c, SRV_PS_CHANNEL) +
                       srv_pubsub_count(c, SRV_PS_PATTERN));
}

/* [what, name or nil, count] */
static void confirm(srv_conn *c, const char *what, const char *name, size_t len,
                    long long count)
{
    srv_pubsub_reply_push(c, 3);
    srv_reply_bulk_cstr(c, what);
    if (name)
        srv_reply_bulk(c, name, len);
    else
        srv_reply_null(c);
    srv_reply_int(c, count);
}

static void subscribe_generic(srv_conn *c, int kind, const char *what)
{
    for (int i = 1; i < c->argc; i++) {
        if (srv_pubsub_subscribe(c, kind, c->argv[i].ptr, c->argv[i].len) < 0)
            return; /* out of memory: closing */
        confirm(c, what, c->argv[i].ptr, c->argv[i].len, sub_count(c, kind));
    }
}

/* What the no-argument form confirms, for its callback. */
static const char *unsub_what;
static int unsub_kind;

static void confirm_one(srv_conn *c, const char *name, size_t len)
{
    confirm(c, unsub_what, name, len, sub_count(c, unsub_kind));
}

static void unsubscribe_generic(srv_conn *c, int kind, const char *what)
{
    if (c->argc == 1) {
        unsub_what = what;
        unsub_kind = kind;
        if (srv_pubsub_unsubscribe_all(c, kind, confirm_one) == 0)
            confirm(c, what, NULL, 0, sub_count(c, kind));
        return;
    }
    for (int i = 1; i < c->argc; i++) {
        srv_pubsub_unsubscribe(c, kind, c->argv[i].ptr, c->argv[i].len);
        confirm(c, what, c->argv[i].ptr, c->argv[i].len, sub_count(c, kind));
    }
}

void srv_cmd_subscribe(srv_conn *c)
{
    subscribe_generic(c, SRV_PS_CHANNEL, "subscribe");
}

void srv_cmd_psubscribe(srv_conn *c)
{
    subscribe_generic(c, SRV_PS_PATTERN, "psubscribe");
}

void srv_cmd_ssubscribe(srv_conn *c)
{
    subscribe_generic(c, SRV_PS_SHARD, "ssubscribe");
}

void srv_cmd_unsubscribe(srv_conn *c)
{
    unsubscribe_generic(c, SRV_PS_CHANNEL, "unsubscribe");
}

void srv_cmd_punsubscribe(srv_conn *c)
{
    unsubscribe_generic(c, SRV_PS_PATTERN, "punsubscribe");
}

void srv_cmd_sunsubscribe(srv_conn *c)
{
    unsubscribe_generic(c, SRV_PS_SHARD, "sunsubscribe");
}

void srv_cmd_publish(srv_conn *c)
{
    srv_pubsub_publish(c, SRV_PS_CHANNEL, &c->argv[1], &c->argv[2]);
}

void srv_cmd_spublish(srv_conn *c)
{
    srv_pubsub_publish(c, SRV_PS_SHARD, &c->argv[1], &c->argv[2]);
}

/* ---- PUBSUB: one handler per subcommand (the dispatcher picks it) ---- */

void srv_cmd_pubsub_help(srv_conn *c)
{
    static const char *const help[] = {
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> "
        "(default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, "
        "excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a "
        "<pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level "
        "channel(s)",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* CHANNELS / SHARDCHANNELS take at most one pattern. */
static void pubsub_channels(srv_conn *c, int kind)
{
    if (c->argc > 3) {
        srv_reply_errorf(c,
                         "ERR unknown subcommand or wrong number of "
                         "arguments for '%.*s'. Try PUBSUB HELP.",
                         (int)(c->argv[1].len < SUBCMD_ARG_MAX
                                   ? c->argv[1].len
                                   : SUBCMD_ARG_MAX),
                         c->argv[1].ptr);
        return;
    }
    srv_pubsub_query(c, SRV_PS_Q_CHANNELS, kind, c->argc - 2, c->argv + 2);
}

void srv_cmd_pubsub_channels(srv_conn *c)
{
    pubsub_channels(c, SRV_PS_CHANNEL);
}

void srv_cmd_pubsub_shardchannels(srv_conn *c)
{
    pubsub_channels(c, SRV_PS_SHARD);
}

void srv_cmd_pubsub_numsub(srv_conn *c)
{
    srv_pubsub_query(c, SRV_PS_Q_NUMSUB, SRV_PS_CHANNEL, c->argc - 2,
                     c->argv + 2);
}

void srv_cmd_pubsub_shardnumsub(srv_conn *c)
{
    srv_pubsub_query(c, SRV_PS_Q_NUMSUB, SRV_PS_SHARD, c->argc - 2,
                     c->argv + 2);
}

void srv_cmd_pubsub_numpat(srv_conn *c)
{
    srv_pubsub_query(c, SRV_PS_Q_NUMPAT, SRV_PS_CHANNEL, 0, NULL);
}
