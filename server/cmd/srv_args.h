/*
 * srv_args.h - argument parsing the handlers share, with Redis's error
 * texts. Each *_or_reply function has replied the error when it fails.
 */
#ifndef SRV_ARGS_H
#define SRV_ARGS_H

#include <stdint.h>

#include "server/srv_conn.h"

/* argv value that must be an integer: "ERR value is not an integer or out
 * of range" otherwise. 0, or -1 after replying. */
int srv_args_ll_or_reply(srv_conn *c, const srv_slice *a, long long *out);
/* An argument that must fit an int, with Redis's two error texts. */
int srv_args_int_or_reply(srv_conn *c, const srv_slice *a, int *out);

/*
 * Redis's rule for an index range [start, stop] over n elements (negative
 * indexes count from the end; LRANGE, LTRIM, ZRANGE by rank): the clamped
 * inclusive bounds in *first and *last. 1, or 0 when the range is empty.
 */
int srv_args_clamp_range(long long start, long long stop, uint64_t n,
                         uint64_t *first, uint64_t *last);

/* A count that must not be negative (SPOP, LPOP, ZPOPMIN ...): "ERR value
 * is out of range, must be positive" otherwise. 0, or -1 after replying. */
int srv_args_count_or_reply(srv_conn *c, const srv_slice *a, long long *out);

/*
 * SRANDMEMBER / HRANDFIELD / ZRANDMEMBER's count argv[2]: an integer in
 * [-LLONG_MAX, LLONG_MAX], and with WITHVALUES / WITHSCORES (`pairs`) one
 * whose double still fits (within +-LLONG_MAX / 2). 0, or -1 after
 * replying Redis's error.
 */
int srv_args_rand_count_or_reply(srv_conn *c, int pairs, long long *out);

/* "ERR unknown subcommand 'x'. Try CLIENT HELP." for argv[1] of c->cmd
 * (the dispatcher's reply for a container; DEBUG's). */
void srv_args_subcommand_error(srv_conn *c);
/* "ERR unknown subcommand or wrong number of arguments for 'kill'. Try
 * CLIENT HELP.": a subcommand (c->cmd) whose own argument checks failed,
 * as Redis's handlers answer it. */
void srv_args_subcommand_syntax(srv_conn *c);

/* "ERR wrong number of arguments for 'config|set' command", for a
 * subcommand (c->cmd) whose handler checks more than the arity. */
void srv_args_subcommand_arity(srv_conn *c);

/*
 * LMPOP / ZMPOP arguments: "numkeys key [key ...] END [COUNT n]" from
 * argv[base] on (1; 2 for BLMPOP / BZMPOP, after the timeout), END one
 * of `end0` or `end1` (*end gets 0 or 1). Redis's errors; -1 after one.
 */
int srv_args_mpop_or_reply(srv_conn *c, int base, const char *end0,
                           const char *end1, int *numkeys, int *end,
                           long long *count);

/* Units of an expire argument. */
enum srv_expire_unit { SRV_UNIT_S, SRV_UNIT_MS };

/*
 * Turn an expire argument into an absolute ms time: relative to now unless
 * `absolute`. Replies "ERR invalid expire time in '<cmd>' command" (or
 * the not-an-integer error) and returns -1 when it is not valid; with
 * `allow_nonpositive` zero and negative values are accepted (EXPIRE).
 */
int srv_args_expire_or_reply(srv_conn *c, const srv_slice *arg, int unit,
                             int absolute, int allow_nonpositive, int64_t *at);

#endif
