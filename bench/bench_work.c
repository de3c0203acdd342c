/*
 * bench_work: commands, replies, preload and the transfer workload (see
 * bench_work.h).
 *
 * Transfer, per operation:
 *   phase 1  WATCH a b; GET a; GET b
 *   phase 2  MULTI; SET a (bal_a - x); SET b (bal_b + x); EXEC
 *            (EXEC nil = abort: another client changed a or b)
 *   phase 3  UNWATCH, instead of phase 2 when the balance is short or a
 *            phase-1 reply was an error
 * Writing computed balances with SET, not INCRBY, is deliberate: if WATCH
 * failed to protect the read-modify-write, updates would be lost and the
 * final total would change, which the check after the run catches.
 *
 * transfer-lua and lua-get, per operation:
 *   phase 1  EVALSHA sha 2 a b x  (lua-get: EVALSHA sha 1 key)
 *   phase 2  EVAL body ..., only when phase 1 answered NOSCRIPT
 */
#include "bench/bench_work.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Extra pool bytes so successive values start at different offsets. */
#define POOL_SLACK 4096
/* Preload: commands (or bytes) sent at once, and commands that may await
 * replies. */
#define PRELOAD_CHUNK_CMDS 256
#define PRELOAD_CHUNK_BYTES (256 * 1024)
#define PRELOAD_WINDOW 4096
/* Collection elements per command while preloading. */
#define PRELOAD_ELEMS 1000
/* Accounts per MGET when summing balances. */
#define TRANSFER_MGET_BATCH 1000
/* Bytes of a server error quoted in a message. */
#define ERROR_TEXT_MAX 200
#define DECIMAL 10
#define FIELD_PREFIX "field:"
#define MEMBER_PREFIX "member:"
#define PLACEHOLDER_KEY "__key__"
#define PLACEHOLDER_VALUE "__value__"
#define PLACEHOLDER_MEMBER "__member__"
#define PLACEHOLDER_INDEX "__index__"

/* Fixed words for --value-data text. */
static const char *const text_words[] = {
    "the",   "of",     "and",       "a",      "to",     "in",       "is",
    "you",   "that",   "it",        "he",     "was",    "for",      "on",
    "are",   "as",     "with",      "his",    "they",   "at",       "be",
    "this",  "have",   "from",      "or",     "one",    "had",      "by",
    "word",  "but",    "not",       "what",   "all",    "were",     "we",
    "when",  "your",   "can",       "said",   "there",  "use",      "an",
    "each",  "which",  "she",       "do",     "how",    "their",    "if",
    "will",  "larder", "lightning", "memory", "mapped", "database", "cache",
    "value",
};
#define N_TEXT_WORDS (sizeof(text_words) / sizeof(text_words[0]))

static void fill_pool(bench_work *w, bench_rng *r)
{
    size_t i = 0;

    switch (w->opts->value_data) {
    case BENCH_VALUE_REPEAT: memset(w->pool, 'x', w->pool_len); break;
    case BENCH_VALUE_TEXT:
        while (i < w->pool_len) {
            const char *word = text_words[bench_rng_below(r, N_TEXT_WORDS)];
            size_t n = strlen(word);

            if (n > w->pool_len - i)
                n = w->pool_len - i;
            memcpy(w->pool + i, word, n);
            i += n;
            if (i < w->pool_len)
                w->pool[i++] = ' ';
        }
        break;
    case BENCH_VALUE_RANDOM:
    default:
        for (; i + sizeof(uint64_t) <= w->pool_len; i += sizeof(uint64_t)) {
            uint64_t v = bench_rng_next(r);

            memcpy(w->pool + i, &v, sizeof(v));
        }
        for (; i < w->pool_len; i++)
            w->pool[i] = (char)bench_rng_next(r);
        break;
    }
}

/* Split --command into words (in a private copy). */
static int split_command(bench_work *w, const char *command)
{
    size_t n = strlen(command);
    char *p, *save = NULL, *word;

    w->cmd_text = strdup(command);
    w->cmd_words = calloc(n / 2 + 1, sizeof(*w->cmd_words));
    if (w->cmd_text == NULL || w->cmd_words == NULL)
        return ENOMEM;
    for (p = w->cmd_text; (word = strtok_r(p, " ", &save)) != NULL; p = NULL)
        w->cmd_words[w->cmd_argc++] = word;
    return 0;
}

int bench_work_init(bench_work *w, const bench_opts *o)
{
    bench_rng r;

    memset(w, 0, sizeof(*w));
    w->opts = o;
    w->prefix = bench_workload_prefix(o->workload);
    w->pool_len = (size_t)o->value_max + POOL_SLACK;
    w->pool = malloc(w->pool_len);
    if (w->pool == NULL)
        return ENOMEM;
    if (o->workload == BENCH_WL_COMMAND && split_command(w, o->command) != 0)
        return ENOMEM;
    bench_rng_seed(&r, o->seed, UINT64_MAX);
    fill_pool(w, &r);
    return 0;
}

void bench_work_fini(bench_work *w)
{
    free(w->pool);
    free(w->cmd_text);
    free(w->cmd_words);
    w->pool = w->cmd_text = NULL;
    w->cmd_words = NULL;
}

void bench_work_conn_init(const bench_work *w, bench_work_conn *c,
                          uint64_t stream)
{
    memset(c, 0, sizeof(*c));
    bench_rng_seed(&c->rng, w->opts->seed, stream);
    /* Spread sequential walkers over the keyspace. */
    c->seq = w->opts->seq_start;
    if (w->opts->connections > 0)
        c->seq += stream * (w->opts->keyspace / w->opts->connections);
}

static uint64_t value_size(const bench_work *w, bench_rng *r)
{
    const bench_opts *o = w->opts;

    if (o->value_max == o->value_min)
        return o->value_min;
    return o->value_min + bench_rng_below(r, o->value_max - o->value_min + 1);
}

/* Append a value argument of the configured size. */
static void arg_value(const bench_work *w, bench_rng *r, bench_buf *out)
{
    uint64_t size = value_size(w, r);
    uint64_t off = bench_rng_below(r, w->pool_len - size + 1);

    bench_cmd_arg(out, w->pool + off, size);
}

static uint64_t next_key(const bench_work *w, bench_work_conn *c)
{
    return bench_dist_next(&w->opts->dist, &c->rng, &c->seq);
}

static uint64_t next_member(const bench_work *w, bench_work_conn *c)
{
    return bench_rng_below(&c->rng, w->opts->members);
}

static void cmd_key(bench_buf *out, const char *cmd, unsigned argc,
                    const char *prefix, uint64_t key)
{
    bench_cmd_begin(out, argc);
    bench_cmd_arg_str(out, cmd);
    bench_cmd_arg_key(out, prefix, key);
}

/* A value of the configured size whose head is the send time stamp_ns
 * in BENCH_STAMP_DIGITS digits (a published message, a pushed job). */
static void arg_stamped(const bench_work *w, bench_work_conn *c, bench_buf *out,
                        uint64_t stamp_ns)
{
    char stamp[BENCH_STAMP_DIGITS];
    uint64_t size = value_size(w, &c->rng), v = stamp_ns, pad;
    int i;

    for (i = BENCH_STAMP_DIGITS - 1; i >= 0; i--) {
        stamp[i] = (char)('0' + v % DECIMAL);
        v /= DECIMAL;
    }
    pad = size > BENCH_STAMP_DIGITS ? size - BENCH_STAMP_DIGITS : 0;
    bench_cmd_arg2(out, stamp, sizeof(stamp), w->pool, pad);
}

static void start_publish(const bench_work *w, bench_work_conn *c,
                          bench_buf *out, uint64_t stamp_ns)
{
    bench_cmd_begin(out, 3);
    bench_cmd_arg_str(out, "PUBLISH");
    bench_cmd_arg_str(out, BENCH_CHANNEL);
    arg_stamped(w, c, out, stamp_ns);
}

/* wake: LPUSH wake:<target> stamped; jobs: LPUSH jobs stamped. */
static void start_push(const bench_work *w, bench_work_conn *c, bench_buf *out,
                       uint64_t stamp_ns)
{
    bench_cmd_begin(out, 3);
    bench_cmd_arg_str(out, "LPUSH");
    if (w->opts->workload == BENCH_WL_WAKE)
        bench_cmd_arg_key(out, w->prefix, c->target);
    else
        bench_cmd_arg_str(out, w->prefix);
    arg_stamped(w, c, out, stamp_ns);
}

static unsigned start_transfer(const bench_work *w, bench_work_conn *c,
                               bench_buf *out)
{
    c->acct[0] = next_key(w, c);
    do {
        c->acct[1] = next_key(w, c);
    } while (c->acct[1] == c->acct[0]);
    c->amount = 1 +
                (int64_t)bench_rng_below(&c->rng, BENCH_TRANSFER_MAX_AMOUNT);
    c->phase = 1;
    c->reply_idx = 0;
    c->failed = false;
    bench_cmd_begin(out, 3);
    bench_cmd_arg_str(out, "WATCH");
    bench_cmd_arg_key(out, w->prefix, c->acct[0]);
    bench_cmd_arg_key(out, w->prefix, c->acct[1]);
    cmd_key(out, "GET", 2, w->prefix, c->acct[0]);
    cmd_key(out, "GET", 2, w->prefix, c->acct[1]);
    return 3;
}

/* EVALSHA (or, with `body`, EVAL) of a workload script. */
static void lua_cmd(const bench_work *w, const bench_work_conn *c,
                    bench_buf *out, const char *body)
{
    bool transfer = w->opts->workload == BENCH_WL_TRANSFER_LUA;

    bench_cmd_begin(out, transfer ? 6 : 4);
    bench_cmd_arg_str(out, body ? "EVAL" : "EVALSHA");
    bench_cmd_arg_str(out, body       ? body
                           : transfer ? BENCH_LUA_TRANSFER_SHA
                                      : BENCH_LUA_GET_SHA);
    bench_cmd_arg_str(out, transfer ? "2" : "1");
    bench_cmd_arg_key(out, w->prefix, c->acct[0]);
    if (transfer) {
        bench_cmd_arg_key(out, w->prefix, c->acct[1]);
        bench_cmd_arg_i64(out, c->amount);
    }
}

static unsigned start_lua(const bench_work *w, bench_work_conn *c,
                          bench_buf *out)
{
    if (w->opts->workload == BENCH_WL_TRANSFER_LUA) {
        c->acct[0] = next_key(w, c);
        do {
            c->acct[1] = next_key(w, c);
        } while (c->acct[1] == c->acct[0]);
        c->amount = 1 + (int64_t)bench_rng_below(&c->rng,
                                                 BENCH_TRANSFER_MAX_AMOUNT);
    } else {
        c->acct[0] = next_key(w, c);
    }
    c->phase = 1;
    lua_cmd(w, c, out, NULL);
    return 1;
}

/* --command: the template with its placeholders filled. */
static void start_command(const bench_work *w, bench_work_conn *c,
                          bench_buf *out)
{
    unsigned i;

    bench_cmd_begin(out, w->cmd_argc);
    for (i = 0; i < w->cmd_argc; i++) {
        const char *word = w->cmd_words[i];

        if (strcmp(word, PLACEHOLDER_KEY) == 0)
            bench_cmd_arg_key(out, w->prefix, next_key(w, c));
        else if (strcmp(word, PLACEHOLDER_VALUE) == 0)
            arg_value(w, &c->rng, out);
        else if (strcmp(word, PLACEHOLDER_MEMBER) == 0)
            bench_cmd_arg_key(out, MEMBER_PREFIX, next_member(w, c));
        else if (strcmp(word, PLACEHOLDER_INDEX) == 0)
            bench_cmd_arg_u64(out, next_member(w, c));
        else
            bench_cmd_arg_str(out, word);
    }
}

unsigned bench_work_start(const bench_work *w, bench_work_conn *c,
                          bench_buf *out, uint64_t stamp_ns)
{
    const bench_opts *o = w->opts;
    const char *p = w->prefix;
    unsigned i;

    switch (o->workload) {
    case BENCH_WL_PING:
        bench_cmd_begin(out, 1);
        bench_cmd_arg_str(out, "PING");
        break;
    case BENCH_WL_GET: cmd_key(out, "GET", 2, p, next_key(w, c)); break;
    case BENCH_WL_SET:
        cmd_key(out, "SET", 3, p, next_key(w, c));
        arg_value(w, &c->rng, out);
        break;
    case BENCH_WL_MIXED:
        if (bench_rng_double(&c->rng) < o->ratio) {
            cmd_key(out, "GET", 2, p, next_key(w, c));
        } else {
            cmd_key(out, "SET", 3, p, next_key(w, c));
            arg_value(w, &c->rng, out);
        }
        break;
    case BENCH_WL_INCR: cmd_key(out, "INCR", 2, p, next_key(w, c)); break;
    case BENCH_WL_MSET:
        bench_cmd_begin(out, 1 + 2 * o->batch);
        bench_cmd_arg_str(out, "MSET");
        for (i = 0; i < o->batch; i++) {
            bench_cmd_arg_key(out, p, next_key(w, c));
            arg_value(w, &c->rng, out);
        }
        break;
    case BENCH_WL_MGET:
        bench_cmd_begin(out, 1 + o->batch);
        bench_cmd_arg_str(out, "MGET");
        for (i = 0; i < o->batch; i++)
            bench_cmd_arg_key(out, p, next_key(w, c));
        break;
    case BENCH_WL_HSET:
        cmd_key(out, "HSET", 4, p, next_key(w, c));
        bench_cmd_arg_key(out, FIELD_PREFIX, next_member(w, c));
        arg_value(w, &c->rng, out);
        break;
    case BENCH_WL_HGET:
        cmd_key(out, "HGET", 3, p, next_key(w, c));
        bench_cmd_arg_key(out, FIELD_PREFIX, next_member(w, c));
        break;
    case BENCH_WL_HGETALL: cmd_key(out, "HGETALL", 2, p, next_key(w, c)); break;
    case BENCH_WL_SADD:
        cmd_key(out, "SADD", 3, p, next_key(w, c));
        bench_cmd_arg_key(out, MEMBER_PREFIX, next_member(w, c));
        break;
    case BENCH_WL_SISMEMBER:
        cmd_key(out, "SISMEMBER", 3, p, next_key(w, c));
        bench_cmd_arg_key(out, MEMBER_PREFIX, next_member(w, c));
        break;
    case BENCH_WL_SPOP: cmd_key(out, "SPOP", 2, p, next_key(w, c)); break;
    case BENCH_WL_LPUSH:
        cmd_key(out, "LPUSH", 3, p, next_key(w, c));
        arg_value(w, &c->rng, out);
        break;
    case BENCH_WL_LPOP: cmd_key(out, "LPOP", 2, p, next_key(w, c)); break;
    case BENCH_WL_LRANGE:
    case BENCH_WL_ZRANGE:
        cmd_key(out, o->workload == BENCH_WL_LRANGE ? "LRANGE" : "ZRANGE", 4, p,
                next_key(w, c));
        bench_cmd_arg_str(out, "0");
        bench_cmd_arg_i64(out, (int64_t)o->range - 1);
        break;
    case BENCH_WL_ZADD: {
        uint64_t m = next_member(w, c);

        cmd_key(out, "ZADD", 4, p, next_key(w, c));
        bench_cmd_arg_u64(out, bench_rng_below(&c->rng, o->members));
        bench_cmd_arg_key(out, MEMBER_PREFIX, m);
        break;
    }
    case BENCH_WL_PUBLISH: start_publish(w, c, out, stamp_ns); break;
    case BENCH_WL_WAKE:
    case BENCH_WL_JOBS: start_push(w, c, out, stamp_ns); break;
    case BENCH_WL_EXPIRE:
        if (bench_rng_double(&c->rng) < o->ratio) {
            cmd_key(out, "GET", 2, p, next_key(w, c));
        } else {
            cmd_key(out, "SET", 5, p, next_key(w, c));
            arg_value(w, &c->rng, out);
            bench_cmd_arg_str(out, "PX");
            bench_cmd_arg_u64(out, o->ttl_ms);
        }
        break;
    case BENCH_WL_TRANSFER: return start_transfer(w, c, out);
    case BENCH_WL_TRANSFER_LUA:
    case BENCH_WL_LUA_GET: return start_lua(w, c, out);
    case BENCH_WL_COMMAND: start_command(w, c, out); break;
    case BENCH_WL_COUNT:
    default: abort(); /* the option parser admits no other workload */
    }
    return 1;
}

/* Outcome of a single-command operation from its reply. */
static bench_outcome simple_outcome(const bench_reply *r)
{
    switch (r->type) {
    case BENCH_REPLY_ERROR: return BENCH_OUT_ERROR;
    case BENCH_REPLY_NIL: return BENCH_OUT_MISS;
    case BENCH_REPLY_ARRAY:
        return r->integer == 0 ? BENCH_OUT_MISS : BENCH_OUT_HIT;
    default: return BENCH_OUT_HIT;
    }
}

static void queue_unwatch(bench_work_conn *c, bench_buf *out,
                          bench_outcome outcome, bench_step *step)
{
    static const char *const argv[] = { "UNWATCH" };

    bench_cmd_argv(out, 1, argv);
    c->phase = 3;
    c->reply_idx = 0;
    c->unwatch_outcome = outcome;
    step->next = 1;
}

static void transfer_phase1(const bench_work *w, bench_work_conn *c,
                            const bench_reply *r, bool last, bench_buf *out,
                            bench_step *step)
{
    unsigned idx = c->reply_idx++;

    if (r->type == BENCH_REPLY_ERROR) {
        c->failed = true;
    } else if (idx >= 1) {
        int64_t v = 0;

        /* A missing account holds 0; garbage is an error. */
        if (r->type != BENCH_REPLY_NIL && bench_reply_to_i64(r, &v) != 0)
            c->failed = true;
        c->balance[idx - 1] = v;
    }
    if (!last)
        return;
    if (c->failed) {
        queue_unwatch(c, out, BENCH_OUT_ERROR, step);
        return;
    }
    if (c->balance[0] < c->amount) {
        queue_unwatch(c, out, BENCH_OUT_DECLINED, step);
        return;
    }
    bench_cmd_begin(out, 1);
    bench_cmd_arg_str(out, "MULTI");
    cmd_key(out, "SET", 3, w->prefix, c->acct[0]);
    bench_cmd_arg_i64(out, c->balance[0] - c->amount);
    cmd_key(out, "SET", 3, w->prefix, c->acct[1]);
    bench_cmd_arg_i64(out, c->balance[1] + c->amount);
    bench_cmd_begin(out, 1);
    bench_cmd_arg_str(out, "EXEC");
    c->phase = 2;
    c->reply_idx = 0;
    step->next = 4;
}

static void transfer_reply(const bench_work *w, bench_work_conn *c,
                           const bench_reply *r, bool last, bench_buf *out,
                           bench_step *step)
{
    switch (c->phase) {
    case 1: transfer_phase1(w, c, r, last, out, step); return;
    case 2:
        /* MULTI +OK, SET +QUEUED x2, then EXEC. */
        if (!last)
            return;
        step->done = true;
        if (r->type == BENCH_REPLY_NIL)
            step->outcome = BENCH_OUT_ABORT;
        else if (r->type == BENCH_REPLY_ARRAY)
            step->outcome = BENCH_OUT_HIT;
        else
            step->outcome = BENCH_OUT_ERROR;
        return;
    default:
        if (!last)
            return;
        step->done = true;
        step->outcome = c->unwatch_outcome;
        return;
    }
}

#define NOSCRIPT_PREFIX "NOSCRIPT"

/* transfer-lua and lua-get: NOSCRIPT sends the body once, else done. */
static void lua_reply(const bench_work *w, bench_work_conn *c,
                      const bench_reply *r, bench_buf *out, bench_step *step)
{
    bool transfer = w->opts->workload == BENCH_WL_TRANSFER_LUA;

    if (c->phase == 1 && r->type == BENCH_REPLY_ERROR &&
        r->len >= sizeof NOSCRIPT_PREFIX - 1 &&
        memcmp(r->str, NOSCRIPT_PREFIX, sizeof NOSCRIPT_PREFIX - 1) == 0) {
        lua_cmd(w, c, out, transfer ? BENCH_LUA_TRANSFER : BENCH_LUA_GET);
        c->phase = 2;
        step->next = 1;
        return;
    }
    step->done = true;
    if (!transfer)
        step->outcome = simple_outcome(r);
    else if (r->type == BENCH_REPLY_INTEGER && r->integer == 1)
        step->outcome = BENCH_OUT_HIT;
    else if (r->type == BENCH_REPLY_INTEGER && r->integer == 0)
        step->outcome = BENCH_OUT_DECLINED;
    else
        step->outcome = BENCH_OUT_ERROR;
}

void bench_work_reply(const bench_work *w, bench_work_conn *c,
                      const bench_reply *r, bool last, bench_buf *out,
                      bench_step *step)
{
    memset(step, 0, sizeof(*step));
    if (w->opts->workload == BENCH_WL_TRANSFER) {
        transfer_reply(w, c, r, last, out, step);
        return;
    }
    if (w->opts->workload == BENCH_WL_TRANSFER_LUA ||
        w->opts->workload == BENCH_WL_LUA_GET) {
        lua_reply(w, c, r, out, step);
        return;
    }
    step->done = last;
    step->outcome = simple_outcome(r);
    /* SISMEMBER 0 is a miss; other integers (INCR, SADD ...) are not. */
    if (w->opts->workload == BENCH_WL_SISMEMBER &&
        r->type == BENCH_REPLY_INTEGER && r->integer == 0)
        step->outcome = BENCH_OUT_MISS;
}

/* Parse the i-th element of array reply r into *e; 0 or -1. */
static int array_elem(const bench_reply *r, unsigned i, bench_reply *e)
{
    const char *p = r->elems;
    size_t left = r->elems_len;
    unsigned k;

    if (r->type != BENCH_REPLY_ARRAY || (int64_t)i >= r->integer)
        return -1;
    for (k = 0; k <= i; k++) {
        long used = bench_resp_parse(p, left, e);

        if (used <= 0)
            return -1;
        p += used;
        left -= (size_t)used;
    }
    return 0;
}

static bool elem_is(const bench_reply *r, unsigned i, const char *word)
{
    bench_reply e;
    size_t n = strlen(word);

    return array_elem(r, i, &e) == 0 && e.type == BENCH_REPLY_BULK &&
           e.len == n && strncasecmp(e.str, word, n) == 0;
}

static int stamp_of(const bench_reply *b, uint64_t *stamp_ns);

int bench_work_message_stamp(const bench_reply *r, uint64_t *stamp_ns)
{
    bench_reply payload;

    if (!elem_is(r, 0, "message") || array_elem(r, 2, &payload) != 0)
        return 0;
    return stamp_of(&payload, stamp_ns) == 0;
}

bool bench_work_is_subscribed(const bench_reply *r)
{
    return elem_is(r, 0, "subscribe");
}

void bench_work_listen(const bench_work *w, unsigned listener, bench_buf *out)
{
    switch (w->opts->workload) {
    case BENCH_WL_WAKE:
        cmd_key(out, "BLPOP", 3, w->prefix, listener);
        bench_cmd_arg_str(out, "0");
        break;
    case BENCH_WL_JOBS:
        bench_cmd_begin(out, 3);
        bench_cmd_arg_str(out, "BRPOP");
        bench_cmd_arg_str(out, w->prefix);
        bench_cmd_arg_str(out, "0");
        break;
    default:
        bench_cmd_begin(out, 2);
        bench_cmd_arg_str(out, "SUBSCRIBE");
        bench_cmd_arg_str(out, BENCH_CHANNEL);
        break;
    }
}

bool bench_work_listens_again(const bench_work *w)
{
    return w->opts->workload == BENCH_WL_WAKE ||
           w->opts->workload == BENCH_WL_JOBS;
}

/* The send time at the head of a bulk: 0 or -1. */
static int stamp_of(const bench_reply *b, uint64_t *stamp_ns)
{
    uint64_t v = 0;

    if (b->type != BENCH_REPLY_BULK || b->len < BENCH_STAMP_DIGITS)
        return -1;
    for (size_t i = 0; i < BENCH_STAMP_DIGITS; i++) {
        char ch = b->str[i];

        if (ch < '0' || ch > '9')
            return -1;
        v = v * DECIMAL + (uint64_t)(ch - '0');
    }
    *stamp_ns = v;
    return 0;
}

int bench_work_delivery_stamp(const bench_work *w, const bench_reply *r,
                              uint64_t *stamp_ns)
{
    bench_reply elem;

    if (!bench_work_listens_again(w))
        return bench_work_message_stamp(r, stamp_ns);
    /* [key, element] */
    if (r->type != BENCH_REPLY_ARRAY || r->integer != 2 ||
        array_elem(r, 1, &elem) != 0)
        return 0;
    return stamp_of(&elem, stamp_ns) == 0;
}

int bench_work_client_worker(const bench_reply *r)
{
    static const char field[] = "worker=";
    const size_t flen = sizeof field - 1;

    if (r->type != BENCH_REPLY_BULK)
        return -1;
    for (size_t i = 0; i + flen < r->len; i++) {
        if ((i == 0 || r->str[i - 1] == ' ') &&
            memcmp(r->str + i, field, flen) == 0) {
            int v = 0;
            size_t j = i + flen;
            if (j >= r->len || r->str[j] < '0' || r->str[j] > '9')
                return -1;
            for (; j < r->len && r->str[j] >= '0' && r->str[j] <= '9'; j++)
                if ((v = v * (int)DECIMAL + (r->str[j] - '0')) > INT_MAX / 16)
                    return -1;
            return v;
        }
    }
    return -1;
}

/*
 * A pipelined bulk loader over a bench_sync connection: commands are sent
 * in chunks, and up to PRELOAD_WINDOW of them may await replies, so the
 * server never idles waiting for the next chunk.  Replies to preload
 * commands are a few bytes, so what is unread always fits in the socket
 * buffers and a blocking write cannot deadlock.  The first error reply
 * becomes the message and stops the load.
 */
typedef struct loader {
    bench_sync *c;
    unsigned queued;   /* built, not sent */
    unsigned inflight; /* sent, not answered */
    char *err;
    size_t errlen;
} loader;

/* Read one reply; 0, an errno, or BENCH_EREFUSED for an error reply. */
static int loader_read(loader *l)
{
    bench_reply r;
    int rc = bench_sync_read(l->c, &r);

    if (rc != 0) {
        snprintf(l->err, l->errlen, "read: %s", strerror(rc));
        return rc;
    }
    l->inflight--;
    if (r.type == BENCH_REPLY_ERROR) {
        char text[ERROR_TEXT_MAX];

        bench_reply_text(&r, text, sizeof(text));
        snprintf(l->err, l->errlen, "server error: %s", text);
        return BENCH_EREFUSED;
    }
    return 0;
}

/* Account for one command just built into l->c->out; sends a chunk when
 * enough is queued and reads replies beyond the window. */
static int loader_queued(loader *l, bool last)
{
    int rc;

    l->queued++;
    if (!last && l->queued < PRELOAD_CHUNK_CMDS &&
        bench_buf_pending(&l->c->out) < PRELOAD_CHUNK_BYTES)
        return 0;
    rc = bench_sync_flush(l->c);
    if (rc != 0) {
        snprintf(l->err, l->errlen, "write: %s", strerror(rc));
        return rc;
    }
    l->inflight += l->queued;
    l->queued = 0;
    while (l->inflight > (last ? 0 : PRELOAD_WINDOW)) {
        rc = loader_read(l);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Append one preload command for key k.  A collection of --members
 * elements may take several commands of at most PRELOAD_ELEMS elements:
 * *from is the first element still to add and is advanced past those this
 * command adds (to --members once k is complete). */
static void preload_cmd(const bench_work *w, bench_rng *r, bench_buf *out,
                        uint64_t k, uint64_t *from)
{
    const bench_opts *o = w->opts;
    uint64_t n = o->members - *from, j;
    const char *cmd;
    bool pairs = false, scored = false;

    if (n > PRELOAD_ELEMS)
        n = PRELOAD_ELEMS;
    switch (o->workload) {
    case BENCH_WL_INCR:
        cmd_key(out, "SET", 3, w->prefix, k);
        bench_cmd_arg_str(out, "0");
        *from = o->members;
        return;
    case BENCH_WL_HSET:
    case BENCH_WL_HGET:
    case BENCH_WL_HGETALL:
        cmd = "HSET";
        pairs = true;
        break;
    case BENCH_WL_SADD:
    case BENCH_WL_SISMEMBER:
    case BENCH_WL_SPOP: cmd = "SADD"; break;
    case BENCH_WL_LPUSH:
    case BENCH_WL_LPOP:
    case BENCH_WL_LRANGE: cmd = "RPUSH"; break;
    case BENCH_WL_ZADD:
    case BENCH_WL_ZRANGE:
        cmd = "ZADD";
        scored = true;
        break;
    default:
        cmd_key(out, "SET", o->preload_ttl_ms ? 5 : 3, w->prefix, k);
        arg_value(w, r, out);
        if (o->preload_ttl_ms) {
            bench_cmd_arg_str(out, "PX");
            bench_cmd_arg_u64(out, o->preload_ttl_ms);
        }
        *from = o->members;
        return;
    }
    bench_cmd_begin(out, 2 + (unsigned)n * (pairs || scored ? 2 : 1));
    bench_cmd_arg_str(out, cmd);
    bench_cmd_arg_key(out, w->prefix, k);
    for (j = *from; j < *from + n; j++) {
        if (scored)
            bench_cmd_arg_u64(out, j);
        if (pairs)
            bench_cmd_arg_key(out, FIELD_PREFIX, j);
        if (o->workload == BENCH_WL_LPUSH || o->workload == BENCH_WL_LPOP ||
            o->workload == BENCH_WL_LRANGE || pairs)
            arg_value(w, r, out);
        else
            bench_cmd_arg_key(out, MEMBER_PREFIX, j);
    }
    *from += n;
}

bool bench_work_has_preload(const bench_work *w)
{
    switch (w->opts->workload) {
    case BENCH_WL_PING:
    case BENCH_WL_PUBLISH: return false;
    case BENCH_WL_WAKE:
    case BENCH_WL_JOBS:
    case BENCH_WL_TRANSFER:
    case BENCH_WL_TRANSFER_LUA:
    case BENCH_WL_LUA_GET: return true; /* lua-get: its script at least */
    default: return w->opts->preload;
    }
}

/* Transfer: set accounts [begin, end) to BENCH_TRANSFER_INITIAL. */
static int transfer_init(const bench_work *w, loader *l, uint64_t begin,
                         uint64_t end)
{
    uint64_t k;
    int rc;

    for (k = begin; k < end; k++) {
        cmd_key(&l->c->out, "SET", 3, w->prefix, k);
        bench_cmd_arg_u64(&l->c->out, BENCH_TRANSFER_INITIAL);
        rc = loader_queued(l, k + 1 == end);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int bench_work_preload(const bench_work *w, bench_sync *c, uint64_t begin,
                       uint64_t end, char *err, size_t errlen)
{
    const bench_opts *o = w->opts;
    loader l = { .c = c, .err = err, .errlen = errlen };
    bench_rng r;
    uint64_t k;
    int rc;

    if (!bench_work_has_preload(w) || begin >= end)
        return 0;
    if (o->workload == BENCH_WL_TRANSFER_LUA ||
        o->workload == BENCH_WL_LUA_GET) {
        /* the script cached first, so runs see no NOSCRIPT */
        const char *const argv[] = { "SCRIPT", "LOAD",
                                     o->workload == BENCH_WL_LUA_GET
                                         ? BENCH_LUA_GET
                                         : BENCH_LUA_TRANSFER };
        bench_cmd_argv(&c->out, 3, argv);
        if ((rc = loader_queued(&l, true)) != 0)
            return rc;
        if (o->workload == BENCH_WL_LUA_GET && !o->preload)
            return 0;
    }
    if (bench_workload_is_transfer(o->workload))
        return transfer_init(w, &l, begin, end);
    if (o->workload == BENCH_WL_WAKE || o->workload == BENCH_WL_JOBS) {
        /* A clean start: no element of an earlier run is left waiting.
         * Once, by the first range. */
        if (begin != 0)
            return 0;
        bench_cmd_begin(&c->out, 2 + o->subscribers);
        bench_cmd_arg_str(&c->out, "DEL");
        bench_cmd_arg_str(&c->out, "jobs");
        for (k = 0; k < o->subscribers; k++)
            bench_cmd_arg_key(&c->out, "wake:", k);
        return loader_queued(&l, true);
    }
    /* Values depend on the range's first key, not on the split. */
    bench_rng_seed(&r, o->seed, UINT64_MAX - 1 - begin);
    for (k = begin; k < end; k++) {
        uint64_t from = 0;

        while (from < o->members) {
            preload_cmd(w, &r, &c->out, k, &from);
            rc = loader_queued(&l, k + 1 == end && from >= o->members);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int bench_work_transfer_total(const bench_work *w, bench_sync *c,
                              int64_t *total, uint64_t *missing, char *err,
                              size_t errlen)
{
    uint64_t k = 0, n, i;
    bench_reply r, e;
    int rc;

    *total = 0;
    *missing = 0;
    while (k < w->opts->keyspace) {
        const char *p;
        size_t left;

        n = w->opts->keyspace - k;
        if (n > TRANSFER_MGET_BATCH)
            n = TRANSFER_MGET_BATCH;
        bench_cmd_begin(&c->out, 1 + (unsigned)n);
        bench_cmd_arg_str(&c->out, "MGET");
        for (i = 0; i < n; i++)
            bench_cmd_arg_key(&c->out, w->prefix, k + i);
        rc = bench_sync_flush(c);
        if (rc == 0)
            rc = bench_sync_read(c, &r);
        if (rc != 0) {
            snprintf(err, errlen, "MGET: %s", strerror(rc));
            return rc;
        }
        if (r.type != BENCH_REPLY_ARRAY || (uint64_t)r.integer != n) {
            char text[ERROR_TEXT_MAX];

            bench_reply_text(&r, text, sizeof(text));
            snprintf(err, errlen, "MGET: unexpected reply %s", text);
            return BENCH_EREFUSED;
        }
        p = r.elems;
        left = r.elems_len;
        for (i = 0; i < n; i++) {
            long used = bench_resp_parse(p, left, &e);
            int64_t v;

            if (used <= 0)
                return EPROTO;
            p += used;
            left -= (size_t)used;
            if (e.type == BENCH_REPLY_NIL) {
                (*missing)++;
                continue;
            }
            if (bench_reply_to_i64(&e, &v) != 0) {
                snprintf(err, errlen, "account %llu is not a number",
                         (unsigned long long)(k + i));
                return BENCH_EREFUSED;
            }
            *total += v;
        }
        k += n;
    }
    return 0;
}
