/*
 * bench_work: what each larder-bench workload sends and how it reads the
 * replies.  The engine owns sockets, timing and counting; this module
 * owns commands, keys and values, the preload step, and the transfer
 * workload's state machine and balance check.
 *
 * An operation is one or more phases; a phase is commands sent together
 * whose replies arrive in order.  Every workload but transfer is one phase
 * of one command.
 */
#ifndef BENCH_WORK_H
#define BENCH_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/bench_opts.h"
#include "bench/bench_rand.h"
#include "bench/bench_resp.h"
#include "bench/bench_sync.h"

/* The channel of the publish workload. */
#define BENCH_CHANNEL "larder-bench:channel"
/* Every account of the transfer workload starts with this balance. */
#define BENCH_TRANSFER_INITIAL 1000
/* A transfer moves 1 .. this much. */
#define BENCH_TRANSFER_MAX_AMOUNT 100
/*
 * transfer-lua: one EVALSHA per transfer of this script (KEYS: from, to;
 * ARGV: amount): 1 moved, 0 declined (balance short). Like transfer, it
 * writes computed balances with SET, so a lost update would show in the
 * total. lua-get: EVALSHA of a script that GETs its key. On NOSCRIPT a
 * connection sends the body with EVAL once (as client libraries do).
 */
#define BENCH_LUA_TRANSFER                                   \
    "local a = tonumber(redis.call('GET', KEYS[1]) or '0') " \
    "local x = tonumber(ARGV[1]) "                           \
    "if a < x then return 0 end "                            \
    "local b = tonumber(redis.call('GET', KEYS[2]) or '0') " \
    "redis.call('SET', KEYS[1], a - x) "                     \
    "redis.call('SET', KEYS[2], b + x) "                     \
    "return 1"
#define BENCH_LUA_TRANSFER_SHA "a54a14134842f860a376921373375c84873cc060"
#define BENCH_LUA_GET "return redis.call('GET', KEYS[1])"
#define BENCH_LUA_GET_SHA "d3c21d0c2b9ca22f82737626a27bcaf5d288f99f"

/* Digits of the send timestamp (ns) at the head of a published message. */
#define BENCH_STAMP_DIGITS 20

/* Shared, immutable after bench_work_init(): settings and value bytes. */
typedef struct bench_work {
    const bench_opts *opts;
    const char *prefix; /* key prefix of the workload */
    char *pool;         /* value bytes; a value is a slice of it */
    size_t pool_len;
    char *cmd_text;   /* command: a copy of --command, split in place */
    char **cmd_words; /* command: its words */
    unsigned cmd_argc;
} bench_work;

/* How one operation ended. */
typedef enum bench_outcome {
    BENCH_OUT_HIT,      /* success with a value (or no value expected) */
    BENCH_OUT_MISS,     /* success, but a read found nothing (nil/empty) */
    BENCH_OUT_ERROR,    /* the server answered an error */
    BENCH_OUT_ABORT,    /* transfer: EXEC aborted (a WATCHed key changed) */
    BENCH_OUT_DECLINED, /* transfer: not enough balance, nothing moved */
    BENCH_OUT_COUNT
} bench_outcome;

/* Per-connection workload state; owned by the connection's thread. */
typedef struct bench_work_conn {
    bench_rng rng;
    uint64_t seq; /* sequential key counter */
    /* transfer */
    unsigned phase;     /* 1: WATCH/GET/GET, 2: MULTI..EXEC, 3: UNWATCH;
                           lua: 1 EVALSHA, 2 EVAL after NOSCRIPT */
    unsigned reply_idx; /* replies seen in the current phase */
    bool failed;        /* an error reply in this operation */
    bench_outcome unwatch_outcome;
    uint64_t acct[2];
    int64_t balance[2];
    int64_t amount;
    /* wake: the waiter the next push goes to (the engine picks it) */
    unsigned target;
} bench_work_conn;

/* What the engine does after a reply (see bench_work_reply()). */
typedef struct bench_step {
    bool done;             /* the operation is over */
    bench_outcome outcome; /* when done */
    unsigned next;         /* when not done and the phase ended: replies of
                              the next phase, already appended to out */
} bench_step;

/* Build the value pool.  Returns 0 or ENOMEM; free with bench_work_fini(). */
int bench_work_init(bench_work *w, const bench_opts *o);
void bench_work_fini(bench_work *w);

/* Seed a connection's state; stream makes each connection's keys differ. */
void bench_work_conn_init(const bench_work *w, bench_work_conn *c,
                          uint64_t stream);

/*
 * Append the first phase of a new operation to out; returns the number
 * of replies it expects.  stamp_ns is embedded in published messages.
 */
unsigned bench_work_start(const bench_work *w, bench_work_conn *c,
                          bench_buf *out, uint64_t stamp_ns);

/*
 * Feed the next reply of the current phase; last says it ends the phase.
 * Fills *step.  May append the next phase to out.
 */
void bench_work_reply(const bench_work *w, bench_work_conn *c,
                      const bench_reply *r, bool last, bench_buf *out,
                      bench_step *step);

/*
 * If r is a pub/sub "message" push, store its embedded send time in
 * *stamp_ns and return 1; return 0 for any other reply (e.g. the
 * "subscribe" confirmation).
 */
int bench_work_message_stamp(const bench_reply *r, uint64_t *stamp_ns);

/* True when r confirms a SUBSCRIBE. */
bool bench_work_is_subscribed(const bench_reply *r);

/*
 * Append the command listener connection `listener` sends: SUBSCRIBE
 * (publish), BLPOP on its own key (wake), BRPOP on the job queue (jobs),
 * all blocking for ever.
 */
void bench_work_listen(const bench_work *w, unsigned listener, bench_buf *out);

/* True when a listener sends its command again after each element it
 * receives (wake, jobs). */
bool bench_work_listens_again(const bench_work *w);

/*
 * If r hands a listener an element (a published message, a BLPOP or
 * BRPOP reply), store the send time embedded in it in *stamp_ns and
 * return 1; 0 for any other reply.
 */
int bench_work_delivery_stamp(const bench_work *w, const bench_reply *r,
                              uint64_t *stamp_ns);

/* The worker= field of a CLIENT INFO reply (larder's), or -1. */
int bench_work_client_worker(const bench_reply *r);

/*
 * Fill keys [begin, end) of the keyspace for the workload (see --preload)
 * over c, pipelined; transfer sets its accounts.  Several threads may
 * preload disjoint ranges, each over its own connection.  Returns 0, an
 * errno or BENCH_EREFUSED, with a message in err.
 */
int bench_work_preload(const bench_work *w, bench_sync *c, uint64_t begin,
                       uint64_t end, char *err, size_t errlen);

/* True when the workload has something to preload (transfer always). */
bool bench_work_has_preload(const bench_work *w);

/* Transfer: sum of all balances (a missing account counts 0) in *total;
 * *missing gets the number of missing accounts.  Codes as for
 * bench_work_preload(). */
int bench_work_transfer_total(const bench_work *w, bench_sync *c,
                              int64_t *total, uint64_t *missing, char *err,
                              size_t errlen);

#endif /* BENCH_WORK_H */
