/*
 * srv_args.c - argument parsing the handlers share, with Redis's error
 * texts: integers, ints, expire times, LMPOP/ZMPOP arguments, and the
 * errors of an unknown subcommand or a subcommand's wrong arity.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define MS_PER_S 1000
#define SUBCMD_NAME_MAX 32
#define SUBCMD_ARG_MAX 128

int srv_args_ll_or_reply(srv_conn *c, const srv_slice *a, long long *out)
{
    if (srv_util_str2ll(a->ptr, a->len, out))
        return 0;
    srv_reply_error(c, SRV_ERR_NOT_INT);
    return -1;
}

int srv_args_clamp_range(long long start, long long stop, uint64_t n,
                         uint64_t *first, uint64_t *last)
{
    long long len = (long long)n;

    if (start < 0)
        start += len;
    if (stop < 0)
        stop += len;
    if (start < 0)
        start = 0;
    if (start > stop || start >= len)
        return 0;
    if (stop >= len)
        stop = len - 1;
    *first = (uint64_t)start;
    *last = (uint64_t)stop;
    return 1;
}

int srv_args_count_or_reply(srv_conn *c, const srv_slice *a, long long *out)
{
    if (srv_util_str2ll(a->ptr, a->len, out) && *out >= 0)
        return 0;
    srv_reply_error(c, "ERR value is out of range, must be positive");
    return -1;
}

int srv_args_rand_count_or_reply(srv_conn *c, int pairs, long long *out)
{
    if (srv_args_ll_or_reply(c, &c->argv[2], out))
        return -1;
    /* Redis's range is [-LLONG_MAX, LLONG_MAX]: -count must not overflow
     * (SRANDMEMBER -2^63 spun here). With pairs, 2 * count must not. */
    if (*out == LLONG_MIN) {
        srv_reply_error(c, "ERR value is out of range, value must between "
                           "-9223372036854775807 and 9223372036854775807");
        return -1;
    }
    if (pairs && (*out < -LLONG_MAX / 2 || *out > LLONG_MAX / 2)) {
        srv_reply_error(c, "ERR value is out of range");
        return -1;
    }
    return 0;
}

void srv_args_subcommand_error(srv_conn *c)
{
    char upper[SUBCMD_NAME_MAX];
    size_t n = strlen(c->cmd->name);

    if (n > sizeof upper - 1)
        n = sizeof upper - 1;
    for (size_t i = 0; i < n; i++)
        upper[i] = (char)toupper((unsigned char)c->cmd->name[i]);
    upper[n] = '\0';
    srv_reply_errorf(c, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                     (int)(c->argv[1].len < SUBCMD_ARG_MAX ? c->argv[1].len
                                                           : SUBCMD_ARG_MAX),
                     c->argv[1].ptr, upper);
}

void srv_args_subcommand_syntax(srv_conn *c)
{
    char upper[SUBCMD_NAME_MAX];
    size_t n = strcspn(c->cmd->name, "|");

    if (n > sizeof upper - 1)
        n = sizeof upper - 1;
    for (size_t i = 0; i < n; i++)
        upper[i] = (char)toupper((unsigned char)c->cmd->name[i]);
    upper[n] = '\0';
    srv_reply_errorf(c,
                     "ERR unknown subcommand or wrong number of arguments "
                     "for '%.*s'. Try %s HELP.",
                     (int)(c->argv[1].len < SUBCMD_ARG_MAX ? c->argv[1].len
                                                           : SUBCMD_ARG_MAX),
                     c->argv[1].ptr, upper);
}

void srv_args_subcommand_arity(srv_conn *c)
{
    srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                     c->cmd->name);
}

int srv_args_int_or_reply(srv_conn *c, const srv_slice *a, int *out)
{
    long long v;

    if (srv_args_ll_or_reply(c, a, &v))
        return -1;
    if (v < INT_MIN || v > INT_MAX) {
        /* Redis's text, its typo included: clients match on it. */
        srv_reply_error(c, "ERR value is out of range, value must between "
                           "-2147483648 and 2147483647");
        return -1;
    }
    *out = (int)v;
    return 0;
}

int srv_args_mpop_or_reply(srv_conn *c, int base, const char *end0,
                           const char *end1, int *numkeys, int *end,
                           long long *count)
{
    long long n;
    int j, seen_count = 0;

    if (!srv_util_str2ll(c->argv[base].ptr, c->argv[base].len, &n) || n <= 0) {
        srv_reply_error(c, "ERR numkeys should be greater than 0");
        return -1;
    }
    /* More keys than arguments (however many) is a syntax error. */
    if (n >= c->argc - base - 1) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    j = base + 1 + (int)n;
    if (srv_util_streq(c->argv[j].ptr, c->argv[j].len, end0))
        *end = 0;
    else if (srv_util_streq(c->argv[j].ptr, c->argv[j].len, end1))
        *end = 1;
    else {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    *count = 1;
    for (j++; j < c->argc; j += 2) {
        if (seen_count || j + 1 >= c->argc ||
            !srv_util_streq(c->argv[j].ptr, c->argv[j].len, "count")) {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
        if (!srv_util_str2ll(c->argv[j + 1].ptr, c->argv[j + 1].len, count) ||
            *count <= 0) {
            srv_reply_error(c, "ERR count should be greater than 0");
            return -1;
        }
        seen_count = 1;
    }
    *numkeys = (int)n;
    return 0;
}

int srv_args_expire_or_reply(srv_conn *c, const srv_slice *arg, int unit,
                             int absolute, int allow_nonpositive, int64_t *at)
{
    long long v;

    if (srv_args_ll_or_reply(c, arg, &v))
        return -1;
    if ((!allow_nonpositive && v <= 0) ||
        (unit == SRV_UNIT_S &&
         (v > LLONG_MAX / MS_PER_S || v < LLONG_MIN / MS_PER_S)))
        goto invalid;
    if (unit == SRV_UNIT_S)
        v *= MS_PER_S;
    if (!absolute) {
        int64_t now = srv_cmd_now(c);
        if (v > LLONG_MAX - now) /* now > 0: no underflow */
            goto invalid;
        v += now;
    }
    *at = v;
    return 0;
invalid:
    srv_reply_errorf(c, "ERR invalid expire time in '%s' command",
                     c->cmd->name);
    return -1;
}
