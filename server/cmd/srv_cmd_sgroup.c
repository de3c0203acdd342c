/*
 * srv_cmd_sgroup.c - consumer groups: XGROUP (CREATE, SETID, DESTROY,
 * CREATECONSUMER, DELCONSUMER, HELP), XREADGROUP's group side, XACK,
 * XPENDING, XCLAIM, XAUTOCLAIM, XINFO (STREAM [FULL], GROUPS, CONSUMERS,
 * HELP) and XSETID, with Redis 7.0's replies and errors in its order.
 *
 * A command works on one group through a group context: the group record
 * and the consumers it touched, held in memory while the command moves
 * pending entries between them (their pending counts change with every
 * move) and written back once at the end.
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
#include "storage/st_stream.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_CONSUMER UINT64_MAX
/* Pending entries a walk that writes copies at a time. */
#define PEL_CHUNK 256
/* XAUTOCLAIM looks at up to this many PEL entries per entry it may
 * claim (Redis's attempts factor), and its default COUNT. */
#define AUTOCLAIM_ATTEMPTS 10
#define AUTOCLAIM_COUNT 100
#define AUTOCLAIM_COUNT_MAX (LONG_MAX / 16)
/* XINFO STREAM FULL's default COUNT. */
#define INFO_FULL_COUNT 10

static const st_stream_id ID_MIN = { 0, 0 };
static const st_stream_id ID_MAX = { UINT64_MAX, UINT64_MAX };

static int opt_is(const srv_slice *a, const char *lit)
{
    return srv_util_streq(a->ptr, a->len, lit);
}

/* ---- the group context ---- */

typedef struct cons_slot {
    uint64_t num;
    uint8_t *name;
    size_t len;
    st_stream_consumer rec;
    int dirty;
} cons_slot;

typedef struct gctx {
    srv_conn *c;
    struct st_txn *t;
    srv_stream *s;
    const srv_slice *name; /* the group's */
    st_stream_group g;
    int dirty;
    cons_slot *v;
    size_t n, cap;
} gctx;

/* Load group `name` of s: 0, ST_ENOTFOUND or a storage error. */
static int gctx_open(gctx *x, srv_conn *c, struct st_txn *t, srv_stream *s,
                     const srv_slice *name)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->t = t;
    x->s = s;
    x->name = name;
    return st_stream_group_get(t, &s->o, name->ptr, name->len, &x->g);
}

static void gctx_free(gctx *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->v[i].name);
    free(x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

/* Write back what changed: the consumers, then the group. */
static int gctx_flush(gctx *x)
{
    int rc;

    for (size_t i = 0; i < x->n; i++) {
        cons_slot *s = &x->v[i];
        if (!s->dirty)
            continue;
        if ((rc = st_stream_consumer_put(x->t, &x->s->o, x->g.num, s->name,
                                         s->len, &s->rec)))
            return rc;
        s->dirty = 0;
    }
    if (x->dirty) {
        if ((rc = st_stream_group_put(x->t, &x->s->o, x->name->ptr,
                                      x->name->len, &x->g)))
            return rc;
        x->dirty = 0;
    }
    return 0;
}

static cons_slot *slot_add(gctx *x, const void *name, size_t len,
                           const st_stream_consumer *rec, int *rc)
{
    cons_slot *s;

    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 4;
        cons_slot *v = realloc(x->v, cap * sizeof *v);
        if (!v) {
            *rc = ENOMEM;
            return NULL;
        }
        x->v = v;
        x->cap = cap;
    }
    s = &x->v[x->n];
    if (!(s->name = malloc(len ? len : 1))) {
        *rc = ENOMEM;
        return NULL;
    }
    memcpy(s->name, name, len);
    s->len = len;
    s->num = rec->num;
    s->rec = *rec;
    s->dirty = 0;
    x->n++;
    return s;
}

/*
 * The consumer `name`: NULL with *rc ST_ENOTFOUND when absent (and not
 * `create`), else its slot; a created one sets *created, and `refresh`
 * stamps its seen time (Redis's lookups by name do, but XPENDING's).
 */
static cons_slot *cons_find(gctx *x, const void *name, size_t len, int create,
                            int refresh, int *created, int *rc)
{
    st_stream_consumer rec;
    cons_slot *s = NULL;

    *rc = 0;
    if (created)
        *created = 0;
    for (size_t i = 0; i < x->n && !s; i++)
        if (x->v[i].len == len && memcmp(x->v[i].name, name, len) == 0)
            s = &x->v[i];
    if (!s) {
        *rc = st_stream_consumer_get(x->t, &x->s->o, x->g.num, name, len, &rec);
        if (*rc == ST_ENOTFOUND && create) {
            memset(&rec, 0, sizeof rec);
            rec.num = x->g.next_consumer++;
            rec.seen_time = srv_cmd_now(x->c);
            x->g.consumers++;
            x->dirty = 1;
            if (!(s = slot_add(x, name, len, &rec, rc)))
                return NULL;
            s->dirty = 1;
            *rc = 0;
            if (created)
                *created = 1;
            return s;
        }
        if (*rc)
            return NULL;
        if (!(s = slot_add(x, name, len, &rec, rc)))
            return NULL;
    }
    if (refresh) {
        s->rec.seen_time = srv_cmd_now(x->c);
        s->dirty = 1;
    }
    return s;
}

/* The consumer with number cnum (it exists while it owns entries). */
static cons_slot *cons_by_num(gctx *x, uint64_t cnum, int *rc)
{
    const uint8_t *name;
    size_t len;

    for (size_t i = 0; i < x->n; i++)
        if (x->v[i].num == cnum)
            return &x->v[i];
    if ((*rc = st_stream_consumer_name(x->t, &x->s->o, x->g.num, cnum, &name,
                                       &len)))
        return NULL;
    /* The name is borrowed until the next write; cons_find only reads
     * before slot_add copies it. */
    return cons_find(x, name, len, 0, 0, NULL, rc);
}

/*
 * Entry `id` now pending at `to` with *p's time and count: it was pending
 * (at p->consumer) when `had`. Keeps every pending count.
 */
static int pel_assign(gctx *x, const st_stream_id *id, st_stream_pel *p,
                      int had, cons_slot *to)
{
    uint64_t old = had ? p->consumer : NO_CONSUMER;
    int rc = 0;

    if (!had) {
        x->g.pending++;
        x->dirty = 1;
    }
    if (old != to->num) {
        if (old != NO_CONSUMER) {
            cons_slot *from = cons_by_num(x, old, &rc);
            if (!from)
                return rc;
            from->rec.pending--;
            from->dirty = 1;
        }
        to->rec.pending++;
        to->dirty = 1;
    }
    p->consumer = to->num;
    return st_stream_pel_put(x->t, &x->s->o, x->g.num, id, p, old);
}

/* Drop pending entry `id` (pending at p->consumer). */
static int pel_drop(gctx *x, const st_stream_id *id, const st_stream_pel *p)
{
    int rc = st_stream_pel_del(x->t, &x->s->o, x->g.num, id, p->consumer);
    cons_slot *owner;

    if (rc)
        return rc;
    x->g.pending--;
    x->dirty = 1;
    if (p->consumer == NO_CONSUMER)
        return 0;
    if (!(owner = cons_by_num(x, p->consumer, &rc)))
        return rc;
    owner->rec.pending--;
    owner->dirty = 1;
    return 0;
}

/* PEL entries copied out of a walk, for a caller that then writes. */
typedef struct pel_batch {
    st_stream_id id[PEL_CHUNK];
    st_stream_pel p[PEL_CHUNK];
    size_t n;
} pel_batch;

static int batch_step(void *ctx, const st_stream_id *id, const st_stream_pel *p)
{
    pel_batch *b = ctx;

    b->id[b->n] = *id;
    b->p[b->n++] = *p;
    return b->n == PEL_CHUNK;
}

/* Up to PEL_CHUNK pending entries of the group (or of consumer cnum) from
 * `from` on. */
static int pel_batch_get(gctx *x, uint64_t cnum, const st_stream_id *from,
                         pel_batch *b)
{
    b->n = 0;
    return st_stream_pels(x->t, &x->s->o, x->g.num, cnum, from, &ID_MAX,
                          PEL_CHUNK, batch_step, b);
}

/* ---- errors shared by several commands ---- */

static void reply_nogroup(srv_conn *c, const srv_slice *key,
                          const srv_slice *group, const char *tail)
{
    srv_reply_errorf(c, "NOGROUP No such key '%.*s' or consumer group '%.*s'%s",
                     (int)key->len, key->ptr, (int)group->len, group->ptr,
                     tail);
}

/*
 * Load argv[ki] as a stream and its group argv[gi] in `t`: 1 found, 0
 * when the stream or the group is missing (nothing replied), -1 after an
 * error reply.
 */
static int load_group(srv_conn *c, struct st_txn *t, int ki, int gi,
                      srv_stream *s, gctx *x)
{
    int rc = srv_stream_load_or_reply(c, t, ki, s);

    if (rc <= 0)
        return rc;
    rc = gctx_open(x, c, t, s, &c->argv[gi]);
    if (rc == ST_ENOTFOUND)
        return 0;
    if (rc) {
        srv_txn_error(c, rc);
        return -1;
    }
    return 1;
}

/* Flush x and reply a storage error: 0, or -1 after the reply. */
static int flush_or_reply(gctx *x)
{
    int rc = gctx_flush(x);

    if (rc) {
        srv_txn_error(x->c, rc);
        return -1;
    }
    return 0;
}

/* ---- XGROUP ---- */

/* CREATE / SETID's options from argv[5]: 0, or -1 after the reply. */
static int group_opts_or_reply(srv_conn *c, int create, int *mkstream,
                               long long *entries_read)
{
    *mkstream = 0;
    *entries_read = ST_STREAM_READ_UNKNOWN;
    for (int i = 5; i < c->argc;) {
        if (create && opt_is(&c->argv[i], "mkstream")) {
            *mkstream = 1;
            i++;
        } else if (opt_is(&c->argv[i], "entriesread") && i + 1 < c->argc) {
            if (srv_args_ll_or_reply(c, &c->argv[i + 1], entries_read))
                return -1;
            if (*entries_read < 0 && *entries_read != ST_STREAM_READ_UNKNOWN) {
                srv_reply_error(c, "ERR value for ENTRIESREAD must be "
                                   "positive or -1");
                return -1;
            }
            i += 2;
        } else {
            srv_args_subcommand_syntax(c);
            return -1;
        }
    }
    return 0;
}

/*
 * The checks every XGROUP subcommand makes in Redis's order: the stream
 * argv[2] must exist (unless `mkstream`), and with `need_group` its group
 * argv[3]. 1 with the stream (and group, if any: *has_group) loaded, 0
 * when absent under mkstream, -1 after an error reply.
 */
static int xgroup_open(srv_conn *c, struct st_txn *t, int mkstream,
                       int need_group, srv_stream *s, gctx *x, int *has_group)
{
    int rc = srv_stream_load_or_reply(c, t, 2, s);

    *has_group = 0;
    if (rc < 0)
        return -1;
    if (rc == 0) {
        if (mkstream)
            return 0;
        srv_reply_error(c, "ERR The XGROUP subcommand requires the key to "
                           "exist. Note that for CREATE you may want to use "
                           "the MKSTREAM option to create an empty stream "
                           "automatically.");
        return -1;
    }
    rc = gctx_open(x, c, t, s, &c->argv[3]);
    if (rc && rc != ST_ENOTFOUND) {
        srv_txn_error(c, rc);
        return -1;
    }
    *has_group = rc == 0;
    if (!*has_group && need_group) {
        srv_reply_errorf(c,
                         "NOGROUP No such consumer group '%.*s' for key "
                         "name '%.*s'",
                         (int)c->argv[3].len, c->argv[3].ptr,
                         (int)c->argv[2].len, c->argv[2].ptr);
        return -1;
    }
    return 1;
}

void srv_cmd_xgroup_create(srv_conn *c)
{
    struct st_txn *t;
    long long entries_read;
    int mkstream, has, rc;
    srv_stream s;
    gctx x;
    st_stream_id id;

    if (group_opts_or_reply(c, 1, &mkstream, &entries_read) ||
        !(t = srv_txn_write_or_reply(c)))
        return;
    if ((rc = xgroup_open(c, t, mkstream, 0, &s, &x, &has)) < 0)
        return;
    if (c->argc > 8) {
        srv_args_subcommand_syntax(c);
        return;
    }
    if (srv_util_streq(c->argv[4].ptr, c->argv[4].len, "$"))
        id = rc ? s.m.last : ID_MIN;
    else if (srv_stream_id_or_reply(c, &c->argv[4], &id, 0, 1))
        return;
    if (rc == 0) {
        int err = st_coll_create(t, &s.o);
        if (!err)
            err = gctx_open(&x, c, t, &s, &c->argv[3]);
        if (err && err != ST_ENOTFOUND) {
            srv_txn_error(c, err);
            return;
        }
    } else if (has) {
        srv_reply_error(c, "BUSYGROUP Consumer Group name already exists");
        return;
    }
    memset(&x.g, 0, sizeof x.g);
    x.g.num = s.m.next_group++;
    x.g.last = id;
    x.g.entries_read = entries_read;
    x.dirty = 1;
    s.m.ngroups++;
    if (flush_or_reply(&x) || srv_stream_save_or_reply(c, t, &s.o, &s.m))
        return;
    srv_reply_ok(c);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-create", 2);
}

void srv_cmd_xgroup_setid(srv_conn *c)
{
    struct st_txn *t;
    long long entries_read;
    int mkstream, has;
    srv_stream s;
    gctx x;
    st_stream_id id;

    if (group_opts_or_reply(c, 0, &mkstream, &entries_read) ||
        !(t = srv_txn_write_or_reply(c)) ||
        xgroup_open(c, t, 0, 1, &s, &x, &has) < 0)
        return;
    if (c->argc != 5 && c->argc != 7) {
        srv_args_subcommand_syntax(c);
        return;
    }
    if (srv_util_streq(c->argv[4].ptr, c->argv[4].len, "$"))
        id = s.m.last;
    else if (srv_stream_id_or_reply(c, &c->argv[4], &id, 0, 0))
        return;
    x.g.last = id;
    x.g.entries_read = entries_read;
    x.dirty = 1;
    if (flush_or_reply(&x))
        return;
    srv_reply_ok(c);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-setid", 2);
}

void srv_cmd_xgroup_destroy(srv_conn *c)
{
    struct st_txn *t;
    int has, rc;
    srv_stream s;
    gctx x;

    if (!(t = srv_txn_write_or_reply(c)) ||
        xgroup_open(c, t, 0, 0, &s, &x, &has) < 0)
        return;
    if (!has) {
        srv_reply_int(c, 0);
        return;
    }
    if ((rc = st_stream_group_del(t, &s.o, c->argv[3].ptr, c->argv[3].len))) {
        srv_txn_error(c, rc);
        return;
    }
    s.m.ngroups--;
    if (srv_stream_save_or_reply(c, t, &s.o, &s.m))
        return;
    st_stream_signal(t, &s.o); /* its blocked readers get NOGROUP */
    srv_reply_int(c, 1);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-destroy", 2);
}

void srv_cmd_xgroup_createconsumer(srv_conn *c)
{
    struct st_txn *t;
    int has, rc, created;
    srv_stream s;
    gctx x;

    if (!(t = srv_txn_write_or_reply(c)) ||
        xgroup_open(c, t, 0, 1, &s, &x, &has) < 0)
        return;
    if (!cons_find(&x, c->argv[4].ptr, c->argv[4].len, 1, 0, &created, &rc) ||
        flush_or_reply(&x)) {
        if (rc)
            srv_txn_error(c, rc);
        gctx_free(&x);
        return;
    }
    gctx_free(&x);
    srv_reply_int(c, created);
    if (created)
        srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-createconsumer", 2);
}

void srv_cmd_xgroup_delconsumer(srv_conn *c)
{
    struct st_txn *t;
    int has, rc = 0;
    srv_stream s;
    gctx x;
    cons_slot *cs;
    long long pending;
    pel_batch *b;

    if (!(t = srv_txn_write_or_reply(c)) ||
        xgroup_open(c, t, 0, 1, &s, &x, &has) < 0)
        return;
    cs = cons_find(&x, c->argv[4].ptr, c->argv[4].len, 0, 0, NULL, &rc);
    if (!cs) {
        gctx_free(&x);
        if (rc == ST_ENOTFOUND)
            srv_reply_int(c, 0);
        else
            srv_txn_error(c, rc);
        return;
    }
    pending = (long long)cs->rec.pending;
    if (!(b = malloc(sizeof *b))) {
        gctx_free(&x);
        srv_txn_error(c, ENOMEM);
        return;
    }
    /* Its pending entries leave the group's PEL too. */
    do {
        rc = pel_batch_get(&x, cs->num, &ID_MIN, b);
        for (size_t i = 0; i < b->n && !rc; i++)
            rc = pel_drop(&x, &b->id[i], &b->p[i]);
    } while (!rc && b->n == PEL_CHUNK);
    free(b);
    if (!rc)
        rc = st_stream_consumer_del(t, &s.o, x.g.num, cs->name, cs->len,
                                    cs->num);
    cs->dirty = 0;
    x.g.consumers--;
    x.dirty = 1;
    if (!rc)
        rc = gctx_flush(&x);
    gctx_free(&x);
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_int(c, pending);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-delconsumer", 2);
}

void srv_cmd_xgroup_help(srv_conn *c)
{
    static const char *const help[] = {
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* ---- XREADGROUP ---- */

/* One stream of an XREADGROUP. */
typedef struct rg_one {
    srv_stream s;
    gctx x;
    int serve, history;
    st_stream_id after;
} rg_one;

/* A '>' delivery: reply each entry and record it in the PEL. */
struct deliver {
    rg_one *one;
    cons_slot *cons;
    int noack;
    long long n;
    int rc;
};

static int deliver_step(void *ctx, const st_stream_id *id, const uint8_t *val,
                        size_t len)
{
    struct deliver *d = ctx;
    gctx *x = &d->one->x;
    st_stream_pel p;
    int had;

    if (st_stream_id_cmp(id, &x->g.last) > 0) {
        srv_stream_group_advance(&d->one->s, &x->g, id);
        x->dirty = 1;
    }
    srv_stream_reply_entry(x->c, id, val, len);
    d->n++;
    if (d->noack)
        return 0;
    d->rc = st_stream_pel_get(x->t, &x->s->o, x->g.num, id, &p);
    if (d->rc && d->rc != ST_ENOTFOUND)
        return 1;
    had = d->rc == 0;
    p.delivery_time = srv_cmd_now(x->c);
    p.delivery_count = 1;
    d->rc = pel_assign(x, id, &p, had, d->cons);
    return d->rc != 0;
}

/* The consumer's history from one->after on: its pending entries, each
 * delivered again (a deleted one as [id, null]). */
static int serve_history(srv_conn *c, rg_one *one, cons_slot *cons,
                         long long count)
{
    gctx *x = &one->x;
    pel_batch *b = malloc(sizeof *b);
    st_stream_id from = one->after;
    long long n = 0;
    size_t mark = srv_reply_defer(c);
    int rc = 0, more = 1;

    if (!b)
        return ENOMEM;
    while (!rc && more && (!count || n < count)) {
        if ((rc = pel_batch_get(x, cons->num, &from, b)))
            break;
        more = b->n == PEL_CHUNK;
        for (size_t i = 0; i < b->n && !rc && (!count || n < count); i++) {
            const uint8_t *val;
            size_t len;
            rc = st_stream_get(x->t, &x->s->o, &b->id[i], &val, &len);
            if (rc == ST_ENOTFOUND) {
                srv_reply_array(c, 2);
                srv_stream_reply_id(c, &b->id[i]);
                srv_reply_null_array(c);
                rc = 0;
            } else if (rc == 0) {
                srv_stream_reply_entry(c, &b->id[i], val, len);
                b->p[i].delivery_time = srv_cmd_now(c);
                b->p[i].delivery_count++;
                rc = pel_assign(x, &b->id[i], &b->p[i], 1, cons);
            }
            n++;
        }
        if (b->n) {
            from = b->id[b->n - 1];
            if (srv_stream_id_incr(&from))
                more = 0;
        }
    }
    free(b);
    if (!rc)
        srv_reply_defer_array(c, mark, n);
    return rc;
}

void srv_sgroup_read(srv_conn *c, const srv_stream_read *r)
{
    const srv_slice *gname = &c->argv[r->group],
                    *cname = &c->argv[r->group + 1];
    struct st_txn *t = srv_txn_write_or_reply(c);
    rg_one few[SRV_STREAM_READ_FEW], *v;
    long long served = 0;
    int rc = 0, nloaded = 0;

    if (!t)
        return;
    if (r->nkeys <= SRV_STREAM_READ_FEW) {
        memset(few, 0, sizeof few);
        v = few;
    } else if (!(v = calloc((size_t)r->nkeys, sizeof *v))) {
        srv_txn_error(c, ENOMEM);
        return;
    }
    for (int i = 0; i < r->nkeys && !rc; i++) {
        const srv_slice *ida = &c->argv[r->first_key + r->nkeys + i];
        const srv_slice *key = &c->argv[r->first_key + i];
        rg_one *one = &v[i];
        int blocked = srv_block_is_blocked(c), found;
        if (blocked && !srv_stream_there(c, t, r->first_key + i)) {
            /* A blocked reader whose stream went (Redis 7.0's words). */
            srv_reply_error(c, "UNBLOCKED the stream key no longer exists");
            rc = -1;
            break;
        }
        if ((found = load_group(c, t, r->first_key + i, r->group, &one->s,
                                &one->x)) < 0) {
            rc = -1;
            break;
        }
        nloaded = i + 1;
        if (found == 0 && blocked) {
            srv_reply_error(c, "NOGROUP the consumer group this client was "
                               "blocked on no longer exists");
            rc = -1;
        } else if (found == 0) {
            reply_nogroup(c, key, gname, " in XREADGROUP with GROUP option");
            rc = -1;
        } else if (srv_util_streq(ida->ptr, ida->len, "$")) {
            srv_reply_error(c, "ERR The $ ID is meaningless in the context of "
                               "XREADGROUP: you want to read the history of "
                               "this consumer by specifying a proper ID, or "
                               "use the > ID to get new messages. The $ ID "
                               "would just return an empty result set.");
            rc = -1;
        } else if (srv_util_streq(ida->ptr, ida->len, ">")) {
            one->after = ID_MAX;
        } else {
            rc = srv_stream_id_or_reply(c, ida, &one->after, 0, 1);
        }
    }
    for (int i = 0; i < r->nkeys && !rc; i++) {
        rg_one *one = &v[i];
        st_stream_id last;
        if (st_stream_id_cmp(&one->after, &ID_MAX) != 0) {
            one->serve = one->history = 1;
        } else if (one->s.o.c.card) {
            if ((rc = st_stream_edge(t, &one->s.o, 1, &last))) {
                srv_txn_error(c, rc);
                break;
            }
            if (st_stream_id_cmp(&last, &one->x.g.last) > 0) {
                one->serve = 1;
                one->after = one->x.g.last;
            }
        }
        served += one->serve;
    }
    if (!rc && served) {
        if (c->resp == 2)
            srv_reply_array(c, served);
        else
            srv_reply_map(c, served);
    }
    for (int i = 0; i < r->nkeys && !rc; i++) {
        rg_one *one = &v[i];
        int created;
        cons_slot *cons;
        /* As Redis, the consumer comes into being when it is served. */
        if (!one->serve)
            continue;
        if (!(cons = cons_find(&one->x, cname->ptr, cname->len, 1, 1, &created,
                               &rc)))
            break;
        if (created)
            srv_notify(c, SRV_NOTIFY_STREAM, "xgroup-createconsumer",
                       one->s.k.name, one->s.k.len);
        {
            if (c->resp == 2)
                srv_reply_array(c, 2);
            srv_reply_bulk(c, one->s.k.name, one->s.k.len);
            srv_stream_id_incr(&one->after);
            if (one->history) {
                rc = serve_history(c, one, cons, r->count);
            } else {
                struct deliver d = { one, cons, r->noack, 0, 0 };
                size_t mark = srv_reply_defer(c);
                rc = st_stream_range(t, &one->s.o, &one->after, &ID_MAX, 0,
                                     (uint64_t)r->count, deliver_step, &d);
                if (!rc)
                    rc = d.rc;
                if (!rc)
                    srv_reply_defer_array(c, mark, d.n);
            }
        }
        if (!rc)
            rc = gctx_flush(&one->x);
        if (rc)
            srv_txn_error(c, rc);
    }
    if (!rc && !served)
        srv_stream_block_or_reply(c, r, NULL);
    for (int i = 0; i < nloaded; i++)
        gctx_free(&v[i].x);
    if (v != few)
        free(v);
}

/* ---- XACK ---- */

void srv_cmd_xack(srv_conn *c)
{
    struct st_txn *t;
    srv_stream s;
    gctx x;
    st_stream_id id;
    st_stream_pel p;
    long long acked = 0;
    int rc;

    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = load_group(c, t, 1, 2, &s, &x)) < 0)
        return;
    if (rc == 0) {
        srv_reply_int(c, 0);
        return;
    }
    for (int j = 3; j < c->argc; j++)
        if (srv_stream_id_or_reply(c, &c->argv[j], &id, 0, 1))
            return;
    rc = 0;
    for (int j = 3; j < c->argc && !rc; j++) {
        srv_stream_parse_id(&c->argv[j], &id, 0, 1, NULL);
        rc = st_stream_pel_get(t, &s.o, x.g.num, &id, &p);
        if (rc == ST_ENOTFOUND) {
            rc = 0;
            continue;
        }
        if (!rc && !(rc = pel_drop(&x, &id, &p)))
            acked++;
    }
    if (!rc)
        rc = gctx_flush(&x);
    gctx_free(&x);
    if (rc)
        srv_txn_error(c, rc);
    else
        srv_reply_int(c, acked);
}

/* ---- XPENDING ---- */

static int pending_summary_step(void *ctx, const uint8_t *name, size_t len,
                                const st_stream_consumer *cons)
{
    long long *n = ((void **)ctx)[1];
    srv_conn *c = ((void **)ctx)[0];

    if (cons->pending == 0)
        return 0;
    srv_reply_array(c, 2);
    srv_reply_bulk(c, name, len);
    srv_reply_bulk_ll(c, (long long)cons->pending);
    (*n)++;
    return 0;
}

struct pending_walk {
    srv_conn *c;
    gctx *x;
    long long count, minidle, n;
    int rc;
};

static int pending_step(void *ctx, const st_stream_id *id,
                        const st_stream_pel *p)
{
    struct pending_walk *w = ctx;
    int64_t now = srv_cmd_now(w->c), idle = now - p->delivery_time;
    const uint8_t *name = (const uint8_t *)"";
    size_t len = 0;

    if (w->minidle && idle < w->minidle)
        return 0;
    if (p->consumer != NO_CONSUMER &&
        (w->rc = st_stream_consumer_name(w->x->t, &w->x->s->o, w->x->g.num,
                                         p->consumer, &name, &len)))
        return 1;
    srv_reply_array(w->c, 4);
    srv_stream_reply_id(w->c, id);
    srv_reply_bulk(w->c, name, len);
    srv_reply_int(w->c, idle < 0 ? 0 : idle);
    srv_reply_int(w->c, (long long)p->delivery_count);
    w->n++;
    return --w->count == 0;
}

/* Parse a range bound as XRANGE does: 0, or -1 after the error reply. */
static int bound_or_reply(srv_conn *c, const srv_slice *a, st_stream_id *id,
                          int end)
{
    int ex = a->len > 1 && a->ptr[0] == '(';
    srv_slice rest = { a->ptr + 1, a->len - 1 };

    if (srv_stream_id_or_reply(c, ex ? &rest : a, id, end ? UINT64_MAX : 0, ex))
        return -1;
    if (ex && (end ? srv_stream_id_decr(id) : srv_stream_id_incr(id))) {
        srv_reply_error(c, end ? "ERR invalid end ID for the interval"
                               : "ERR invalid start ID for the interval");
        return -1;
    }
    return 0;
}

void srv_cmd_xpending(srv_conn *c)
{
    int summary = c->argc == 3, start = 3, rc;
    long long count = 0, minidle = 0;
    st_stream_id from = ID_MIN, to = ID_MAX;
    const srv_slice *cname = NULL;
    struct st_txn *t;
    srv_stream s;
    gctx x;

    if (c->argc != 3 && (c->argc < 6 || c->argc > 9)) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!summary) {
        if (opt_is(&c->argv[3], "idle")) {
            if (srv_args_ll_or_reply(c, &c->argv[4], &minidle))
                return;
            if (c->argc < 8) {
                srv_reply_error(c, SRV_ERR_SYNTAX);
                return;
            }
            start += 2;
        }
        if (srv_args_ll_or_reply(c, &c->argv[start + 2], &count))
            return;
        if (count < 0)
            count = 0;
        if (bound_or_reply(c, &c->argv[start], &from, 0) ||
            bound_or_reply(c, &c->argv[start + 1], &to, 1))
            return;
        if (start + 3 < c->argc)
            cname = &c->argv[start + 3];
    }
    if (!(t = srv_txn_read_or_reply(c)) ||
        (rc = load_group(c, t, 1, 2, &s, &x)) < 0)
        return;
    if (rc == 0) {
        reply_nogroup(c, &c->argv[1], &c->argv[2], "");
        return;
    }
    if (summary) {
        st_stream_id first, last;
        srv_reply_array(c, 4);
        srv_reply_int(c, (long long)x.g.pending);
        if (x.g.pending == 0) {
            srv_reply_null(c);
            srv_reply_null(c);
            srv_reply_null_array(c);
            return;
        }
        {
            pel_batch one;
            one.n = 0;
            rc = st_stream_pels(t, &s.o, x.g.num, NO_CONSUMER, &ID_MIN, &ID_MAX,
                                1, batch_step, &one);
            first = one.n ? one.id[0] : ID_MIN;
        }
        if (!rc)
            rc = st_stream_pel_last(t, &s.o, x.g.num, &last);
        if (rc) {
            srv_txn_error(c, rc);
            return;
        }
        srv_stream_reply_id(c, &first);
        srv_stream_reply_id(c, &last);
        {
            long long n = 0;
            void *ctx[2] = { c, &n };
            size_t mark = srv_reply_defer(c);
            rc = st_stream_consumers(t, &s.o, x.g.num, pending_summary_step,
                                     ctx);
            srv_reply_defer_array(c, mark, n);
        }
        return;
    }
    {
        uint64_t cnum = NO_CONSUMER;
        struct pending_walk w = { c, &x, count, minidle, 0, 0 };
        size_t mark;
        if (cname) {
            st_stream_consumer cons;
            rc = st_stream_consumer_get(t, &s.o, x.g.num, cname->ptr,
                                        cname->len, &cons);
            if (rc == ST_ENOTFOUND) {
                srv_reply_array(c, 0);
                return;
            }
            cnum = cons.num;
        }
        mark = srv_reply_defer(c);
        if (count)
            rc = st_stream_pels(t, &s.o, x.g.num, cnum, &from, &to, 0,
                                pending_step, &w);
        srv_reply_defer_array(c, mark, w.n);
    }
}

/* ---- XCLAIM, XAUTOCLAIM ---- */

/* A claim's integer option, with its own error text. */
static int claim_ll_or_reply(srv_conn *c, const srv_slice *a, long long *out,
                             const char *msg)
{
    if (srv_util_str2ll(a->ptr, a->len, out))
        return 0;
    srv_reply_error(c, msg);
    return -1;
}

/* Reply entry `id` of s for a claim (JUSTID: the id only). */
static void reply_claimed(srv_conn *c, srv_stream *s, struct st_txn *t,
                          const st_stream_id *id, int justid)
{
    const uint8_t *val;
    size_t len;

    if (justid)
        srv_stream_reply_id(c, id);
    else if (st_stream_get(t, &s->o, id, &val, &len) == 0)
        srv_stream_reply_entry(c, id, val, len);
    else
        srv_reply_null(c);
}

void srv_cmd_xclaim(srv_conn *c)
{
    long long minidle, retrycount = -1, deliverytime = -1;
    int force = 0, justid = 0, last_arg, j, rc;
    st_stream_id id, lastid = ID_MIN;
    int64_t now = srv_cmd_now(c);
    struct st_txn *t;
    srv_stream s;
    gctx x;
    cons_slot *cons = NULL;
    long long n = 0;
    size_t mark;

    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = load_group(c, t, 1, 2, &s, &x)) < 0)
        return;
    if (rc == 0) {
        reply_nogroup(c, &c->argv[1], &c->argv[2], "");
        return;
    }
    if (claim_ll_or_reply(c, &c->argv[4], &minidle,
                          "ERR Invalid min-idle-time argument for XCLAIM"))
        return;
    if (minidle < 0)
        minidle = 0;
    for (j = 5; j < c->argc; j++)
        if (srv_stream_parse_id(&c->argv[j], &id, 0, 1, NULL))
            break;
    last_arg = j - 1;
    for (; j < c->argc; j++) {
        int more = c->argc - 1 - j;
        const srv_slice *o = &c->argv[j];
        if (opt_is(o, "force")) {
            force = 1;
        } else if (opt_is(o, "justid")) {
            justid = 1;
        } else if (opt_is(o, "idle") && more) {
            if (claim_ll_or_reply(c, &c->argv[++j], &deliverytime,
                                  "ERR Invalid IDLE option argument for "
                                  "XCLAIM"))
                return;
            /* As Redis's arithmetic, wrapping (the result is checked
             * below). */
            deliverytime = (long long)((uint64_t)now - (uint64_t)deliverytime);
        } else if (opt_is(o, "time") && more) {
            if (claim_ll_or_reply(c, &c->argv[++j], &deliverytime,
                                  "ERR Invalid TIME option argument for "
                                  "XCLAIM"))
                return;
        } else if (opt_is(o, "retrycount") && more) {
            if (claim_ll_or_reply(c, &c->argv[++j], &retrycount,
                                  "ERR Invalid RETRYCOUNT option argument "
                                  "for XCLAIM"))
                return;
        } else if (opt_is(o, "lastid") && more) {
            if (srv_stream_id_or_reply(c, &c->argv[++j], &lastid, 0, 1))
                return;
        } else {
            srv_reply_errorf(c, "ERR Unrecognized XCLAIM option '%.*s'",
                             (int)o->len, o->ptr);
            return;
        }
    }
    if (st_stream_id_cmp(&lastid, &x.g.last) > 0) {
        x.g.last = lastid;
        x.dirty = 1;
    }
    if (deliverytime == -1 || deliverytime < 0 || deliverytime > now)
        deliverytime = now;
    mark = srv_reply_defer(c);
    rc = 0;
    for (j = 5; j <= last_arg && !rc; j++) {
        const uint8_t *val;
        size_t len;
        st_stream_pel p;
        int had;
        srv_stream_parse_id(&c->argv[j], &id, 0, 1, NULL);
        rc = st_stream_pel_get(t, &s.o, x.g.num, &id, &p);
        if (rc && rc != ST_ENOTFOUND)
            break;
        had = rc == 0;
        rc = st_stream_get(t, &s.o, &id, &val, &len);
        if (rc == ST_ENOTFOUND) {
            /* A deleted entry leaves the PEL. */
            rc = had ? pel_drop(&x, &id, &p) : 0;
            continue;
        }
        if (rc)
            break;
        if (!had && !force)
            continue;
        if (!had) {
            p.consumer = NO_CONSUMER;
            p.delivery_time = now;
            p.delivery_count = 1;
        } else if (minidle && now - p.delivery_time < minidle) {
            continue;
        }
        if (!cons) {
            int created;
            cons = cons_find(&x, c->argv[3].ptr, c->argv[3].len, 1, 1, &created,
                             &rc);
            if (!cons)
                break;
            if (created)
                srv_notify_arg(c, SRV_NOTIFY_STREAM, "xgroup-createconsumer",
                               1);
        }
        p.delivery_time = deliverytime;
        if (retrycount >= 0)
            p.delivery_count = (uint64_t)retrycount;
        else if (!justid)
            p.delivery_count++;
        if ((rc = pel_assign(&x, &id, &p, had, cons)))
            break;
        reply_claimed(c, &s, t, &id, justid);
        n++;
    }
    if (!rc)
        rc = gctx_flush(&x);
    gctx_free(&x);
    if (rc) {
        c->out.len = mark;
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_defer_array(c, mark, n);
}

/* Ids gathered by XAUTOCLAIM, replied after the walk. */
typedef struct id_list {
    st_stream_id *v;
    size_t n, cap;
} id_list;

static int id_list_add(id_list *l, const st_stream_id *id)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        st_stream_id *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *id;
    return 0;
}

void srv_cmd_xautoclaim(srv_conn *c)
{
    long long minidle, count = AUTOCLAIM_COUNT, attempts;
    int justid = 0, rc, eof = 0;
    st_stream_id from, next = ID_MIN;
    int64_t now = srv_cmd_now(c);
    id_list claimed = { 0 }, deleted = { 0 };
    struct st_txn *t;
    srv_stream s;
    gctx x;
    cons_slot *cons = NULL;
    pel_batch *b;

    if (claim_ll_or_reply(c, &c->argv[4], &minidle,
                          "ERR Invalid min-idle-time argument for "
                          "XAUTOCLAIM"))
        return;
    if (minidle < 0)
        minidle = 0;
    if (bound_or_reply(c, &c->argv[5], &from, 0))
        return;
    for (int j = 6; j < c->argc; j++) {
        if (opt_is(&c->argv[j], "count") && c->argc - 1 - j > 0) {
            if (!srv_util_str2ll(c->argv[j + 1].ptr, c->argv[j + 1].len,
                                 &count) ||
                count < 1 || count > AUTOCLAIM_COUNT_MAX) {
                srv_reply_error(c, "ERR COUNT must be > 0");
                return;
            }
            j++;
        } else if (opt_is(&c->argv[j], "justid")) {
            justid = 1;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = load_group(c, t, 1, 2, &s, &x)) < 0)
        return;
    if (rc == 0) {
        reply_nogroup(c, &c->argv[1], &c->argv[2], "");
        return;
    }
    if (!(b = malloc(sizeof *b))) {
        srv_txn_error(c, ENOMEM);
        return;
    }
    attempts = count * AUTOCLAIM_ATTEMPTS;
    rc = 0;
    while (!rc && !eof) {
        size_t i;
        if ((rc = pel_batch_get(&x, NO_CONSUMER, &from, b)))
            break;
        for (i = 0; i < b->n && !rc; i++) {
            const uint8_t *val;
            size_t len;
            st_stream_id *id = &b->id[i];
            if (!attempts || !count)
                break;
            attempts--;
            rc = st_stream_get(t, &s.o, id, &val, &len);
            if (rc == ST_ENOTFOUND) {
                if (!(rc = pel_drop(&x, id, &b->p[i])))
                    rc = id_list_add(&deleted, id);
                count--;
                continue;
            }
            if (rc)
                break;
            if (minidle && now - b->p[i].delivery_time < minidle)
                continue;
            if (!cons) {
                int created;
                cons = cons_find(&x, c->argv[3].ptr, c->argv[3].len, 1, 1,
                                 &created, &rc);
                if (!cons)
                    break;
                if (created)
                    srv_notify_arg(c, SRV_NOTIFY_STREAM,
                                   "xgroup-createconsumer", 1);
            }
            b->p[i].delivery_time = now;
            if (!justid)
                b->p[i].delivery_count++;
            if (!(rc = pel_assign(&x, id, &b->p[i], 1, cons)))
                rc = id_list_add(&claimed, id);
            count--;
        }
        if (rc)
            break;
        if (i < b->n) {
            /* Stopped by the limits: the cursor is the next entry. */
            next = b->id[i];
            break;
        }
        if (b->n < PEL_CHUNK) {
            eof = 1;
        } else {
            from = b->id[b->n - 1];
            if (srv_stream_id_incr(&from))
                eof = 1;
        }
        if (!eof && (!attempts || !count)) {
            /* The limits ran out at a chunk's end: peek at the next. */
            if (!(rc = pel_batch_get(&x, NO_CONSUMER, &from, b)) && b->n)
                next = b->id[0];
            break;
        }
    }
    free(b);
    if (!rc)
        rc = gctx_flush(&x);
    gctx_free(&x);
    if (!rc) {
        srv_reply_array(c, 3);
        srv_stream_reply_id(c, &next);
        srv_reply_array(c, (long long)claimed.n);
        for (size_t i = 0; i < claimed.n; i++)
            reply_claimed(c, &s, t, &claimed.v[i], justid);
        srv_reply_array(c, (long long)deleted.n);
        for (size_t i = 0; i < deleted.n; i++)
            srv_stream_reply_id(c, &deleted.v[i]);
    } else {
        srv_txn_error(c, rc);
    }
    free(claimed.v);
    free(deleted.v);
}

/* ---- XINFO ---- */

/* argv[2] as a stream for XINFO: 1, or -1 after "no such key" or
 * another error. */
static int info_stream_or_reply(srv_conn *c, struct st_txn **t, srv_stream *s)
{
    int rc;

    if (!(*t = srv_txn_read_or_reply(c)) ||
        (rc = srv_stream_load_or_reply(c, *t, 2, s)) < 0)
        return -1;
    if (rc == 0) {
        srv_reply_error(c, SRV_ERR_NO_KEY);
        return -1;
    }
    return 1;
}

struct info_walk {
    srv_conn *c;
    srv_stream *s;
    struct st_txn *t;
    long long full_count; /* FULL: its COUNT (0 all); -1 not FULL */
    long long n;
    int rc;
};

static void reply_key(srv_conn *c, const char *k) { srv_reply_bulk_cstr(c, k); }

static int info_group_step(void *ctx, const uint8_t *name, size_t len,
                           const st_stream_group *g)
{
    struct info_walk *w = ctx;
    srv_conn *c = w->c;

    srv_reply_map(c, 6);
    reply_key(c, "name");
    srv_reply_bulk(c, name, len);
    reply_key(c, "consumers");
    srv_reply_int(c, (long long)g->consumers);
    reply_key(c, "pending");
    srv_reply_int(c, (long long)g->pending);
    reply_key(c, "last-delivered-id");
    srv_stream_reply_id(c, &g->last);
    reply_key(c, "entries-read");
    if (g->entries_read != ST_STREAM_READ_UNKNOWN)
        srv_reply_int(c, g->entries_read);
    else
        srv_reply_null(c);
    reply_key(c, "lag");
    srv_stream_reply_lag(c, w->s, g);
    w->n++;
    return 0;
}

void srv_cmd_xinfo_groups(srv_conn *c)
{
    struct st_txn *t;
    srv_stream s;
    struct info_walk w = { c, &s, NULL, -1, 0, 0 };
    int rc;

    if (info_stream_or_reply(c, &t, &s) < 0)
        return;
    w.t = t;
    srv_reply_array(c, (long long)s.m.ngroups);
    if ((rc = st_stream_groups(t, &s.o, info_group_step, &w)))
        srv_txn_error(c, rc);
}

static int info_consumer_step(void *ctx, const uint8_t *name, size_t len,
                              const st_stream_consumer *cons)
{
    struct info_walk *w = ctx;
    srv_conn *c = w->c;
    int64_t idle = srv_cmd_now(c) - cons->seen_time;

    srv_reply_map(c, 3);
    reply_key(c, "name");
    srv_reply_bulk(c, name, len);
    reply_key(c, "pending");
    srv_reply_int(c, (long long)cons->pending);
    reply_key(c, "idle");
    srv_reply_int(c, idle < 0 ? 0 : idle);
    w->n++;
    return 0;
}

void srv_cmd_xinfo_consumers(srv_conn *c)
{
    struct st_txn *t;
    srv_stream s;
    gctx x;
    struct info_walk w = { c, &s, NULL, -1, 0, 0 };
    int rc;

    if (info_stream_or_reply(c, &t, &s) < 0)
        return;
    rc = gctx_open(&x, c, t, &s, &c->argv[3]);
    if (rc == ST_ENOTFOUND) {
        srv_reply_errorf(c,
                         "NOGROUP No such consumer group '%.*s' for key "
                         "name '%.*s'",
                         (int)c->argv[3].len, c->argv[3].ptr,
                         (int)c->argv[2].len, c->argv[2].ptr);
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_array(c, (long long)x.g.consumers);
    if ((rc = st_stream_consumers(t, &s.o, x.g.num, info_consumer_step, &w)))
        srv_txn_error(c, rc);
}

/* FULL's pending entries of a group ([id, consumer, time, count]) or of
 * a consumer ([id, time, count]). */
struct full_pel {
    srv_conn *c;
    struct st_txn *t;
    const st_obj *o;
    uint64_t gnum;
    int with_consumer;
    long long n;
    int rc;
};

static int full_pel_step(void *ctx, const st_stream_id *id,
                         const st_stream_pel *p)
{
    struct full_pel *w = ctx;

    srv_reply_array(w->c, w->with_consumer ? 4 : 3);
    srv_stream_reply_id(w->c, id);
    if (w->with_consumer) {
        const uint8_t *name = (const uint8_t *)"";
        size_t len = 0;
        if (p->consumer != NO_CONSUMER &&
            (w->rc = st_stream_consumer_name(w->t, w->o, w->gnum, p->consumer,
                                             &name, &len)))
            return 1;
        srv_reply_bulk(w->c, name, len);
    }
    srv_reply_int(w->c, p->delivery_time);
    srv_reply_int(w->c, (long long)p->delivery_count);
    w->n++;
    return 0;
}

static int reply_full_pel(struct info_walk *w, uint64_t gnum, uint64_t cnum)
{
    struct full_pel f = {
        w->c, w->t, &w->s->o, gnum, cnum == NO_CONSUMER, 0, 0
    };
    size_t mark = srv_reply_defer(w->c);
    int rc = st_stream_pels(w->t, &w->s->o, gnum, cnum, &ID_MIN, &ID_MAX,
                            (uint64_t)w->full_count, full_pel_step, &f);

    srv_reply_defer_array(w->c, mark, f.n);
    return rc ? rc : f.rc;
}

struct full_consumers {
    struct info_walk *w;
    uint64_t gnum;
    int rc;
};

static int full_consumer_step(void *ctx, const uint8_t *name, size_t len,
                              const st_stream_consumer *cons)
{
    struct full_consumers *f = ctx;
    srv_conn *c = f->w->c;

    srv_reply_map(c, 4);
    reply_key(c, "name");
    srv_reply_bulk(c, name, len);
    reply_key(c, "seen-time");
    srv_reply_int(c, cons->seen_time);
    reply_key(c, "pel-count");
    srv_reply_int(c, (long long)cons->pending);
    reply_key(c, "pending");
    f->rc = reply_full_pel(f->w, f->gnum, cons->num);
    return f->rc != 0;
}

static int full_group_step(void *ctx, const uint8_t *name, size_t len,
                           const st_stream_group *g)
{
    struct info_walk *w = ctx;
    srv_conn *c = w->c;
    struct full_consumers fc = { w, g->num, 0 };
    int rc;

    srv_reply_map(c, 7);
    reply_key(c, "name");
    srv_reply_bulk(c, name, len);
    reply_key(c, "last-delivered-id");
    srv_stream_reply_id(c, &g->last);
    reply_key(c, "entries-read");
    if (g->entries_read != ST_STREAM_READ_UNKNOWN)
        srv_reply_int(c, g->entries_read);
    else
        srv_reply_null(c);
    reply_key(c, "lag");
    srv_stream_reply_lag(c, w->s, g);
    reply_key(c, "pel-count");
    srv_reply_int(c, (long long)g->pending);
    reply_key(c, "pending");
    if ((rc = reply_full_pel(w, g->num, NO_CONSUMER))) {
        w->rc = rc;
        return 1;
    }
    reply_key(c, "consumers");
    srv_reply_array(c, (long long)g->consumers);
    rc = st_stream_consumers(w->t, &w->s->o, g->num, full_consumer_step, &fc);
    w->rc = rc ? rc : fc.rc;
    return w->rc != 0;
}

static int count_entries(void *ctx, const st_stream_id *id, const uint8_t *val,
                         size_t len)
{
    struct info_walk *w = ctx;

    w->n++;
    return srv_stream_reply_entry(w->c, id, val, len);
}

void srv_cmd_xinfo_stream(srv_conn *c)
{
    long long count = INFO_FULL_COUNT;
    int full = c->argc > 3, rc;
    uint64_t nodes;
    struct st_txn *t;
    srv_stream s;
    struct info_walk w = { c, &s, NULL, -1, 0, 0 };

    if (info_stream_or_reply(c, &t, &s) < 0)
        return;
    if (full) {
        if (!opt_is(&c->argv[3], "full") ||
            (c->argc > 4 && (c->argc != 6 || !opt_is(&c->argv[4], "count")))) {
            srv_args_subcommand_syntax(c);
            return;
        }
        if (c->argc == 6) {
            if (srv_args_ll_or_reply(c, &c->argv[5], &count))
                return;
            if (count < 0) /* Redis 7.0: the default again */
                count = INFO_FULL_COUNT;
        }
    }
    w.t = t;
    w.full_count = count;
    /* Redis's macro nodes and radix-tree nodes: larder has neither, so
     * it reports the node count trimming works with. */
    nodes = (s.o.c.card + SRV_STREAM_NODE_ENTRIES - 1) /
            SRV_STREAM_NODE_ENTRIES;
    srv_reply_map(c, full ? 9 : 10);
    reply_key(c, "length");
    srv_reply_int(c, (long long)s.o.c.card);
    reply_key(c, "radix-tree-keys");
    srv_reply_int(c, (long long)nodes);
    reply_key(c, "radix-tree-nodes");
    srv_reply_int(c, (long long)nodes + 1);
    reply_key(c, "last-generated-id");
    srv_stream_reply_id(c, &s.m.last);
    reply_key(c, "max-deleted-entry-id");
    srv_stream_reply_id(c, &s.m.max_deleted);
    reply_key(c, "entries-added");
    srv_reply_int(c, (long long)s.m.entries_added);
    reply_key(c, "recorded-first-entry-id");
    srv_stream_reply_id(c, &s.first);
    if (!full) {
        reply_key(c, "groups");
        srv_reply_int(c, (long long)s.m.ngroups);
        for (int last = 0; last < 2; last++) {
            st_stream_id id;
            const uint8_t *val;
            size_t len;
            reply_key(c, last ? "last-entry" : "first-entry");
            rc = st_stream_edge(t, &s.o, last, &id);
            if (!rc)
                rc = st_stream_get(t, &s.o, &id, &val, &len);
            if (rc == ST_ENOTFOUND) {
                srv_reply_null(c);
            } else if (rc) {
                srv_txn_error(c, rc);
                return;
            } else {
                srv_stream_reply_entry(c, &id, val, len);
            }
        }
        return;
    }
    reply_key(c, "entries");
    {
        size_t mark = srv_reply_defer(c);
        rc = st_stream_range(t, &s.o, &ID_MIN, &ID_MAX, 0, (uint64_t)count,
                             count_entries, &w);
        srv_reply_defer_array(c, mark, w.n);
    }
    reply_key(c, "groups");
    srv_reply_array(c, (long long)s.m.ngroups);
    if (!rc)
        rc = st_stream_groups(t, &s.o, full_group_step, &w);
    if (rc || w.rc)
        srv_txn_error(c, rc ? rc : w.rc);
}

void srv_cmd_xinfo_help(srv_conn *c)
{
    static const char *const help[] = {
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* ---- XSETID ---- */

void srv_cmd_xsetid(srv_conn *c)
{
    st_stream_id id, maxdel = ID_MIN, top;
    long long added = -1;
    struct st_txn *t;
    srv_stream s;
    int rc;

    if (srv_stream_id_or_reply(c, &c->argv[2], &id, 0, 1))
        return;
    for (int i = 3; i < c->argc; i += 2) {
        int more = c->argc - 1 - i;
        if (opt_is(&c->argv[i], "entriesadded") && more) {
            if (srv_args_ll_or_reply(c, &c->argv[i + 1], &added))
                return;
            if (added < 0) {
                srv_reply_error(c, "ERR entries_added must be positive");
                return;
            }
        } else if (opt_is(&c->argv[i], "maxdeletedid") && more) {
            if (srv_stream_id_or_reply(c, &c->argv[i + 1], &maxdel, 0, 1))
                return;
            if (st_stream_id_cmp(&id, &maxdel) < 0) {
                srv_reply_error(c, "ERR The ID specified in XSETID is "
                                   "smaller than the provided "
                                   "max_deleted_entry_id");
                return;
            }
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return;
        }
    }
    if (!(t = srv_txn_write_or_reply(c)) ||
        (rc = srv_stream_load_or_reply(c, t, 1, &s)) < 0)
        return;
    if (rc == 0) {
        srv_reply_error(c, SRV_ERR_NO_KEY);
        return;
    }
    /* Redis 7.0 does not compare id with the recorded max_deleted. */
    if (s.o.c.card) {
        if ((rc = st_stream_edge(t, &s.o, 1, &top))) {
            srv_txn_error(c, rc);
            return;
        }
        if (st_stream_id_cmp(&id, &top) < 0) {
            srv_reply_error(c, "ERR The ID specified in XSETID is smaller "
                               "than the target stream top item");
            return;
        }
        if (added != -1 && s.o.c.card > (uint64_t)added) {
            srv_reply_error(c, "ERR The entries_added specified in XSETID is "
                               "smaller than the target stream length");
            return;
        }
    }
    s.m.last = id;
    if (added != -1)
        s.m.entries_added = (uint64_t)added;
    if (maxdel.ms || maxdel.seq)
        s.m.max_deleted = maxdel;
    /* The state only: Redis 7.0's XSETID leaves WATCH untouched. */
    if ((rc = st_stream_meta_put(t, &s.o, &s.m))) {
        srv_txn_error(c, rc);
        return;
    }
    srv_reply_ok(c);
    srv_notify_arg(c, SRV_NOTIFY_STREAM, "xsetid", 1);
}
