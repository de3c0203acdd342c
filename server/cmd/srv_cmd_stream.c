/*
 * srv_cmd_stream.c - stream commands on entries: XADD, XLEN, XRANGE and
 * XREVRANGE (one generic), XDEL, XTRIM (sharing XADD's trimming
 * arguments), and XREAD / XREADGROUP (one generic: the argument parser,
 * the choice of what each stream serves, and the reply; the group's side
 * of a delivery is srv_cmd_sgroup.c's srv_sgroup_deliver). Replies,
 * errors and their order are Redis 7.0's.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_sgroup.h"
#include "server/cmd/srv_stream.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_block.h"
#include "server/srv_conn.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_stream.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- XADD and XTRIM's trimming arguments ---- */

enum trim_strategy { TRIM_NONE, TRIM_MAXLEN, TRIM_MINID };

typedef struct trim_args {
    int strategy; /* enum trim_strategy */
    int approx;   /* `~` */
    long long maxlen;
    st_stream_id minid;
    long long limit; /* 0: none */
    int nomkstream;  /* XADD only, as the rest below */
    int id_given;
    int seq_given;
    st_stream_id id;
} trim_args;

static int opt_is(const srv_slice *a, const char *lit)
{
    return srv_util_streq(a->ptr, a->len, lit);
}

static int is_word(const srv_slice *a, const char *w)
{
    return a->len == strlen(w) && memcmp(a->ptr, w, a->len) == 0;
}

/*
 * Parse XADD's (xadd) or XTRIM's options from argv[2], as Redis's
 * streamParseAddOrTrimArgsOrReply: returns XADD's id position (argc when
 * the options ran out), or -1 after replying the error.
 */
static int parse_trim_or_reply(srv_conn *c, trim_args *a, int xadd)
{
    static const char both[] = "ERR syntax error, MAXLEN and MINID options "
                               "at the same time are not compatible";
    int i, limit_given = 0;

    memset(a, 0, sizeof *a);
    for (i = 2; i < c->argc; i++) {
        int more = c->argc - 1 - i;
        const srv_slice *o = &c->argv[i];
        if (xadd && is_word(o, "*")) {
            break;
        } else if ((opt_is(o, "maxlen") || opt_is(o, "minid")) && more) {
            int minid = opt_is(o, "minid");
            if (a->strategy != TRIM_NONE) {
                srv_reply_error(c, both);
                return -1;
            }
            a->approx = 0;
            if (more >= 2 && is_word(&c->argv[i + 1], "~")) {
                a->approx = 1;
                i++;
            } else if (more >= 2 && is_word(&c->argv[i + 1], "=")) {
                i++;
            }
            if (minid) {
                if (srv_stream_id_or_reply(c, &c->argv[i + 1], &a->minid, 0, 1))
                    return -1;
            } else {
                if (srv_args_ll_or_reply(c, &c->argv[i + 1], &a->maxlen))
                    return -1;
                if (a->maxlen < 0) {
                    srv_reply_error(c, "ERR The MAXLEN argument must be >= 0.");
                    return -1;
                }
            }
            i++;
            a->strategy = minid ? TRIM_MINID : TRIM_MAXLEN;
        } else if (opt_is(o, "limit") && more) {
            if (srv_args_ll_or_reply(c, &c->argv[i + 1], &a->limit))
                return -1;
            if (a->limit < 0) {
                srv_reply_error(c, "ERR The LIMIT argument must be >= 0.");
                return -1;
            }
            limit_given = 1;
            i++;
        } else if (xadd && opt_is(o, "nomkstream")) {
            a->nomkstream = 1;
        } else if (xadd) {
            if (srv_stream_parse_id(o, &a->id, 0, 1, &a->seq_given)) {
                srv_reply_error(c, SRV_STREAM_ERR_ID);
                return -1;
            }
            a->id_given = 1;
            break;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    if (a->limit && a->strategy == TRIM_NONE) {
        srv_reply_error(c, "ERR syntax error, LIMIT cannot be used without "
                           "specifying a trimming strategy");
        return -1;
    }
    if (!xadd && a->strategy == TRIM_NONE) {
        srv_reply_error(c, "ERR syntax error, XTRIM must be called with a "
                           "trimming strategy");
        return -1;
    }
    if (limit_given) {
        if (!a->approx) {
            srv_reply_error(c, "ERR syntax error, LIMIT cannot be used "
                               "without the special ~ option");
            return -1;
        }
    } else {
        a->limit = a->approx ? SRV_STREAM_APPROX_LIMIT : 0;
    }
    return i;
}

/* Trim o as `a` says; *deleted gets how many entries went. */
static int trim(struct st_txn *t, st_obj *o, const trim_args *a,
                uint64_t *deleted)
{
    *deleted = 0;
    if (a->strategy == TRIM_NONE)
        return 0;
    return st_stream_trim(t, o, a->strategy == TRIM_MINID, (uint64_t)a->maxlen,
                          &a->minid, a->approx ? SRV_STREAM_NODE_ENTRIES : 0,
                          (uint64_t)a->limit, deleted);
}

/* The fields of an XADD: argv[first + i]. */
struct xadd_fields {
    const srv_slice *argv;
};

static void xadd_field(void *ctx, size_t i, const uint8_t **p, size_t *len)
{
    const struct xadd_fields *f = ctx;

    *p = (const uint8_t *)f->argv[i].ptr;
    *len = f->argv[i].len;
}

/* The id XADD adds, as Redis's streamAppendItem picks it: 0, -1 when it
 * would not be above the last one, or -2 for "ms-*" when ms's sequence is
 * used up (Redis 7.0 reports that as elements too large). */
static int next_id(const srv_conn *c, const trim_args *a,
                   const st_stream_meta *m, st_stream_id *id)
{
    if (a->id_given && a->seq_given) {
        *id = a->id;
    } else if (a->id_given) {
        if (m->last.ms == a->id.ms) {
            if (m->last.seq == UINT64_MAX)
                return -2;
            *id = m->last;
            id->seq++;
        } else {
            *id = a->id;
        }
    } else {
        uint64_t now = (uint64_t)srv_cmd_now(c);
        if (now > m->last.ms) {
            id->ms = now;
            id->seq = 0;
        } else {
            *id = m->last;
            srv_stream_id_incr(id);
        }
    }
    return st_stream_id_cmp(id, &m->last) > 0 ? 0 : -1;
}

void srv_cmd_xadd(srv_conn *c)
{
    struct st_txn *t;
    trim_args a;
    srv_stream s;
    st_stream_id id;
    uint64_t deleted, total = 0, ordinal;
    int idpos, first, rc;

    if ((idpos = parse_trim_or_reply(c, &a, 1)) < 0)
        return;
    first = idpos + 1;
    if (c->argc - first < 2 || (c->argc - first) % 2 == 1) {
        srv_reply_errorf(c, "ERR wrong number of arguments for '%s' command",
                         c->cmd->name);
        return;
    }
    if (a.id_given && a.seq_given && a.id.ms == 0 && a.id.seq == 0) {
        srv_reply_error(c, "ERR The ID specified in XADD must be greater "
                           "than 0-0");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_stream_load_meta_or_reply(c, t, 1, &s)) < 0)
        return;
    if (rc == 0) {
        if (a.nomkstream) {
            srv_reply_null(c);
            return;
        }
        if ((rc = st_coll_create(t, &s.o))) {
            srv_txn_error(c, rc);
            return;
        }
    }
    if (s.m.last.ms == UINT64_MAX && s.m.last.seq == UINT64_MAX) {
        srv_reply_error(c, "ERR The stream has exhausted the last possible "
                           "ID, unable to add more items");
        return;
    }
    if ((rc = next_id(c, &a, &s.m, &id)) == -1) {
        srv_reply_error(c, "ERR The ID specified in XADD is equal or smaller "
                           "than the target stream top item");
        return;
    }
    for (int j = first; j < c->argc; j++)
        total += c->argv[j].len;
    if (rc || total > SRV_STREAM_ENTRY_MAX) {
        srv_reply_error(c, "ERR Elements are too large to be stored");
        return;
    }
    ordinal = st_stream_next_ordinal(&s.m);
    rc = st_stream_add(t, &s.o, &id, ordinal, (size_t)(c->argc - first),
                       xadd_field, &(struct xadd_fields){ &c->argv[first] });
    if (!rc) {
        s.m.last_ordinal = ordinal;
        s.m.entries_added++;
        s.m.last = id;
        rc = trim(t, &s.o, &a, &deleted);
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    if (srv_stream_save_or_reply(c, t, &s.o, &s.m))
        return;
    st_stream_signal(t, &s.o);
    srv_stream_reply_id(c, &id);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xadd", 1);
    if (deleted)
        srv_notify_arg(c, SRV_NOTIFY_STREAM, "xtrim", 1);
}

void srv_cmd_xtrim(srv_conn *c)
{
    struct st_txn *t;
    trim_args a;
    st_keyref k;
    st_obj o;
    uint64_t deleted;
    int rc;

    if (parse_trim_or_reply(c, &a, 0) < 0)
        return;
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_stream_open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    if ((rc = trim(t, &o, &a, &deleted))) {
        srv_txn_error(c, rc);
        return;
    }
    if (deleted) {
        if (srv_coll_save_or_reply(c, t, &o))
            return;
        srv_notify_arg(c, SRV_NOTIFY_STREAM, "xtrim", 1);
    }
    srv_reply_int(c, (long long)deleted);
}

void srv_cmd_xlen(srv_conn *c) { srv_coll_reply_card(c, ST_TYPE_STREAM); }

void srv_cmd_xdel(srv_conn *c)
{
    struct st_txn *t;
    srv_stream s;
    st_stream_id id;
    long long deleted = 0;
    int rc;

    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_stream_load_or_reply(c, t, 1, &s)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    /* Every id is checked before any is deleted, as Redis does. */
    for (int j = 2; j < c->argc; j++)
        if (srv_stream_id_or_reply(c, &c->argv[j], &id, 0, 1))
            return;
    for (int j = 2; j < c->argc; j++) {
        srv_stream_parse_id(&c->argv[j], &id, 0, 1, NULL);
        rc = st_stream_del(t, &s.o, &id);
        if (rc == ST_ENOTFOUND)
            continue;
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        if (st_stream_id_cmp(&id, &s.m.max_deleted) > 0)
            s.m.max_deleted = id;
        deleted++;
    }
    if (deleted) {
        if (srv_stream_save_or_reply(c, t, &s.o, &s.m))
            return;
        srv_notify_arg(c, SRV_NOTIFY_STREAM, "xdel", 1);
    }
    srv_reply_int(c, deleted);
}

/* ---- XRANGE, XREVRANGE ---- */

/* A range bound: "(" makes it exclusive (then strict). 0, or -1 after the
 * error reply. */
static int interval_or_reply(srv_conn *c, const srv_slice *a, st_stream_id *id,
                             uint64_t missing_seq, int *exclusive)
{
    *exclusive = a->len > 1 && a->ptr[0] == '(';
    if (*exclusive) {
        srv_slice rest = { a->ptr + 1, a->len - 1 };
        return srv_stream_id_or_reply(c, &rest, id, missing_seq, 1);
    }
    return srv_stream_id_or_reply(c, a, id, missing_seq, 0);
}

struct range_walk {
    srv_conn *c;
    long long n;
};

static int range_step(void *ctx, const st_stream_id *id, const uint8_t *val,
                      size_t len)
{
    struct range_walk *w = ctx;

    w->n++;
    return srv_stream_reply_entry(w->c, id, val, len);
}

static void range_generic(srv_conn *c, int rev)
{
    const srv_slice *sa = &c->argv[rev ? 3 : 2], *ea = &c->argv[rev ? 2 : 3];
    st_stream_id start, end;
    long long count = -1;
    struct st_txn *t;
    st_keyref k;
    st_obj o;
    int ex, rc;

    if (interval_or_reply(c, sa, &start, 0, &ex))
        return;
    if (ex && srv_stream_id_incr(&start)) {
        srv_reply_error(c, "ERR invalid start ID for the interval");
        return;
    }
    if (interval_or_reply(c, ea, &end, UINT64_MAX, &ex))
        return;
    if (ex && srv_stream_id_decr(&end)) {
        srv_reply_error(c, "ERR invalid end ID for the interval");
        return;
    }
    for (int j = 4; j < c->argc; j++) {
        if (opt_is(&c->argv[j], "count") && c->argc - j - 1 >= 1) {
            if (srv_args_ll_or_reply(c, &c->argv[j + 1], &count))
                return;
            if (count < 0)
                count = 0;
            j++;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (!(t = srv_txn_read_or_reply(c)) ||
        (rc = srv_stream_open_or_reply(c, t, 1, &k, &o)) < 0)
        return;
    if (rc == 0) {
        srv_reply_array(c, 0);
        return;
    }
    if (count == 0) {
        srv_reply_null_array(c);
        return;
    }
    {
        struct range_walk w = { c, 0 };
        size_t mark = srv_reply_defer(c);
        rc = st_stream_range(t, &o, &start, &end, rev,
                             count < 0 ? 0 : (uint64_t)count, range_step, &w);
        if (rc) {
            c->out.len = mark;
            srv_txn_error(c, rc);
            return;
        }
        srv_reply_defer_array(c, mark, w.n);
    }
}

void srv_cmd_xrange(srv_conn *c) { range_generic(c, 0); }
void srv_cmd_xrevrange(srv_conn *c) { range_generic(c, 1); }

/* ---- XREAD, XREADGROUP ---- */

/* XREAD's BLOCK in ms, as Redis 7.0's getTimeoutFromObjectOrReply (which
 * takes any integer that is not negative: one past the clock waits for
 * ever). */
static int block_ms_or_reply(srv_conn *c, const srv_slice *a, long long *ms)
{
    if (!srv_util_str2ll(a->ptr, a->len, ms)) {
        srv_reply_error(c, "ERR timeout is not an integer or out of range");
        return -1;
    }
    if (*ms < 0) {
        srv_reply_error(c, "ERR timeout is negative");
        return -1;
    }
    return 0;
}

int srv_stream_parse_read_or_reply(srv_conn *c, srv_stream_read *r)
{
    int group = c->cmd->name[sizeof "xread" - 1] != '\0';

    memset(r, 0, sizeof *r);
    r->timeout_ms = -1;
    for (int i = 1; i < c->argc; i++) {
        int more = c->argc - i - 1;
        const srv_slice *o = &c->argv[i];
        if (opt_is(o, "block") && more) {
            if (c->flags & SRV_CONN_IN_SCRIPT) {
                /* Redis refuses it outright from a script, rather than
                 * answering as the non-blocking form (as in MULTI). */
                srv_reply_errorf(c,
                                 "ERR %.*s command is not allowed with BLOCK "
                                 "option from scripts",
                                 (int)c->argv[0].len, c->argv[0].ptr);
                return -1;
            }
            i++;
            if (block_ms_or_reply(c, &c->argv[i], &r->timeout_ms))
                return -1;
        } else if (opt_is(o, "count") && more) {
            i++;
            if (srv_args_ll_or_reply(c, &c->argv[i], &r->count))
                return -1;
            if (r->count < 0)
                r->count = 0;
        } else if (opt_is(o, "streams") && more) {
            r->first_key = i + 1;
            r->nkeys = c->argc - r->first_key;
            if (r->nkeys % 2) {
                /* Redis 7.0 names XREAD and '$' for XREADGROUP too. */
                srv_reply_error(c, "ERR Unbalanced XREAD list of streams: "
                                   "for each stream key an ID or '$' must "
                                   "be specified.");
                return -1;
            }
            r->nkeys /= 2;
            break;
        } else if (opt_is(o, "group") && more >= 2) {
            if (!group) {
                srv_reply_error(c, "ERR The GROUP option is only supported "
                                   "by XREADGROUP. You called XREAD "
                                   "instead.");
                return -1;
            }
            r->group = i + 1;
            i += 2;
        } else if (opt_is(o, "noack")) {
            if (!group) {
                srv_reply_error(c, "ERR The NOACK option is only supported "
                                   "by XREADGROUP. You called XREAD "
                                   "instead.");
                return -1;
            }
            r->noack = 1;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    if (r->first_key == 0) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return -1;
    }
    if (group && r->group == 0) {
        srv_reply_error(c, "ERR Missing GROUP option for XREADGROUP");
        return -1;
    }
    return 0;
}

/* What XREAD serves from one stream. */
typedef struct read_one {
    srv_stream s;
    int exists;
    int serve;
    st_stream_id after; /* entries above it */
} read_one;

static void xread_generic(srv_conn *c)
{
    srv_stream_read r;
    struct st_txn *t;
    read_one few[SRV_STREAM_READ_FEW], *v;
    long long served = 0;
    int rc = 0;

    if (srv_stream_parse_read_or_reply(c, &r))
        return;
    if (r.group) {
        srv_sgroup_read(c, &r);
        return;
    }
    if (!(t = srv_txn_read_or_reply(c)))
        return;
    /* The common few streams need no allocation. */
    if (r.nkeys <= SRV_STREAM_READ_FEW) {
        memset(few, 0, sizeof few);
        v = few;
    } else if (!(v = calloc((size_t)r.nkeys, sizeof *v))) {
        srv_txn_error(c, ENOMEM);
        return;
    }
    for (int i = 0; i < r.nkeys && rc == 0; i++) {
        const srv_slice *ida = &c->argv[r.first_key + r.nkeys + i];
        read_one *x = &v[i];
        /* A blocked reader whose key went or changed type waits on, as in
         * Redis 7.0. */
        if (srv_block_is_blocked(c) &&
            !srv_stream_there(c, t, r.first_key + i)) {
            x->exists = 0;
        } else if ((x->exists = srv_stream_load_or_reply(c, t, r.first_key + i,
                                                         &x->s)) < 0) {
            rc = -1;
            break;
        }
        if (is_word(ida, "$")) {
            x->after = x->exists ? x->s.m.last : (st_stream_id){ 0, 0 };
        } else if (is_word(ida, ">")) {
            srv_reply_error(c, "ERR The > ID can be specified only when "
                               "calling XREADGROUP using the GROUP <group> "
                               "<consumer> option.");
            rc = -1;
        } else {
            rc = srv_stream_id_or_reply(c, ida, &x->after, 0, 1);
        }
    }
    for (int i = 0; i < r.nkeys && rc == 0; i++) {
        read_one *x = &v[i];
        st_stream_id last;
        if (!x->exists || !x->s.o.c.card)
            continue;
        if ((rc = st_stream_edge(t, &x->s.o, 1, &last))) {
            srv_txn_error(c, rc);
            break;
        }
        x->serve = st_stream_id_cmp(&last, &x->after) > 0;
        served += x->serve;
    }
    if (rc == 0 && served) {
        const st_stream_id top = { UINT64_MAX, UINT64_MAX };
        if (c->resp == 2)
            srv_reply_array(c, served);
        else
            srv_reply_map(c, served);
        for (int i = 0; i < r.nkeys && rc == 0; i++) {
            read_one *x = &v[i];
            struct range_walk w = { c, 0 };
            size_t mark;
            if (!x->serve)
                continue;
            if (c->resp == 2)
                srv_reply_array(c, 2);
            srv_reply_bulk(c, x->s.k.name, x->s.k.len);
            srv_stream_id_incr(&x->after);
            mark = srv_reply_defer(c);
            rc = st_stream_range(t, &x->s.o, &x->after, &top, 0,
                                 (uint64_t)r.count, range_step, &w);
            if (rc)
                srv_txn_error(c, rc);
            else
                srv_reply_defer_array(c, mark, w.n);
        }
    } else if (rc == 0) {
        st_stream_id *after = malloc((size_t)r.nkeys * sizeof *after);
        if (!after) {
            srv_txn_error(c, ENOMEM);
        } else {
            for (int i = 0; i < r.nkeys; i++)
                after[i] = v[i].after;
            srv_stream_block_or_reply(c, &r, after);
            free(after);
        }
    }
    if (v != few)
        free(v);
}

void srv_cmd_xread(srv_conn *c) { xread_generic(c); }
void srv_cmd_xreadgroup(srv_conn *c) { xread_generic(c); }
