/*
 * srv_clients.c - a worker's clients for CLIENT LIST, KILL and UNBLOCK
 * (see the header).
 *
 * A question carries the asking client's id and clock, then the
 * command's filter arguments as fields; the asker checks them (and
 * replies Redis's errors) before asking, and each worker parses them
 * again into a filter for its own clients.
 */
#include "server/srv_clients.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_aclconn.h"
#include "server/srv_block.h"
#include "server/srv_bproto.h"
#include "server/srv_cinfo.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_PER_S 1000
#define LINE_MAX_BYTES 2048
#define FLAGS_MAX 24
#define IDS_MIN 8
#define LINES_MIN 64

/* Client types of TYPE filters (Redis's). */
enum ct_type { CT_ANY = -1, CT_NORMAL, CT_REPLICA, CT_MASTER, CT_PUBSUB };

/* A parsed filter. Strings point into the question (or argv). */
typedef struct ct_filter {
    int old_form; /* CLIENT KILL addr:port */
    int type;     /* enum ct_type */
    uint64_t id;  /* KILL ID, 0: any */
    uint64_t *ids;
    size_t nids;      /* LIST ID ... */
    int have_ids;     /* LIST ID given (maybe none valid) */
    const char *addr; /* or NULL */
    size_t addr_len;
    const char *laddr; /* or NULL */
    size_t laddr_len;
    int skipme;       /* KILL: default yes */
    long long maxage; /* KILL MAXAGE (s), 0: none */
    uint64_t asker;   /* the asking client's id */
    int64_t now_ms;   /* the asking command's clock */
} ct_filter;

/* ---- the line ---- */

static int type_of(const srv_conn *x)
{
    return (x->flags & SRV_CONN_SUBSCRIBED) ? CT_PUBSUB : CT_NORMAL;
}

/* ---- filters ---- */

static int type_by_name(const char *p, size_t n)
{
    if (srv_util_streq(p, n, "normal"))
        return CT_NORMAL;
    if (srv_util_streq(p, n, "slave") || srv_util_streq(p, n, "replica"))
        return CT_REPLICA;
    if (srv_util_streq(p, n, "master"))
        return CT_MASTER;
    if (srv_util_streq(p, n, "pubsub"))
        return CT_PUBSUB;
    return -2;
}

static int str_eq(const char *a, size_t an, const char *b)
{
    return strlen(b) == an && memcmp(a, b, an) == 0;
}

static int matches(const ct_filter *f, const srv_conn *x)
{
    if (f->addr && !str_eq(f->addr, f->addr_len, x->addr))
        return 0;
    if (f->laddr && !str_eq(f->laddr, f->laddr_len, x->laddr))
        return 0;
    if (f->type != CT_ANY && type_of(x) != f->type)
        return 0;
    if (f->id && x->id != f->id)
        return 0;
    if (f->maxage && (f->now_ms - x->created_ms) / MS_PER_S < f->maxage)
        return 0;
    if (f->have_ids) {
        size_t i;
        for (i = 0; i < f->nids && f->ids[i] != x->id; i++)
            ;
        if (i == f->nids)
            return 0;
    }
    return 1;
}

/* An argument of a question or of the command. */
typedef struct ct_arg {
    const char *p;
    size_t n;
} ct_arg;

/*
 * Parse CLIENT KILL's arguments into f; with c, reply Redis's error for
 * a bad one (the asker), else just fail (a worker: cannot happen). 0 or
 * -1.
 */
static int parse_kill(srv_conn *c, const ct_arg *a, int n, ct_filter *f)
{
    f->type = CT_ANY;
    f->skipme = 1;
    if (n == 1) { /* the old form */
        f->old_form = 1;
        f->addr = a[0].p;
        f->addr_len = a[0].n;
        f->skipme = 0;
        return 0;
    }
    for (int i = 0; i < n; i += 2) {
        const ct_arg *o = &a[i], *v = &a[i + 1];
        if (i + 1 >= n)
            goto syntax;
        if (srv_util_streq(o->p, o->n, "id")) {
            long long id;
            if (!srv_util_str2ll(v->p, v->n, &id) || id < 1) {
                if (c)
                    srv_reply_error(c, "ERR client-id should be greater "
                                       "than 0");
                return -1;
            }
            f->id = (uint64_t)id;
        } else if (srv_util_streq(o->p, o->n, "type")) {
            if ((f->type = type_by_name(v->p, v->n)) == -2) {
                if (c)
                    srv_reply_errorf(c, "ERR Unknown client type '%.*s'",
                                     (int)v->n, v->p);
                return -1;
            }
        } else if (srv_util_streq(o->p, o->n, "addr")) {
            f->addr = v->p;
            f->addr_len = v->n;
        } else if (srv_util_streq(o->p, o->n, "laddr")) {
            f->laddr = v->p;
            f->laddr_len = v->n;
        } else if (srv_util_streq(o->p, o->n, "user")) {
            /* One user, "default" (ACL users are another issue's). */
            if (!str_eq(v->p, v->n, "default")) {
                if (c)
                    srv_reply_errorf(c, "ERR No such user '%.*s'", (int)v->n,
                                     v->p);
                return -1;
            }
        } else if (srv_util_streq(o->p, o->n, "skipme")) {
            if (srv_util_streq(v->p, v->n, "yes"))
                f->skipme = 1;
            else if (srv_util_streq(v->p, v->n, "no"))
                f->skipme = 0;
            else
                goto syntax;
        } else if (srv_util_streq(o->p, o->n, "maxage")) {
            long long age;
            if (!srv_util_str2ll(v->p, v->n, &age)) {
                if (c)
                    srv_reply_error(c, "ERR maxage is not an integer or out "
                                       "of range");
                return -1;
            }
            f->maxage = age > 0 ? age : 0;
        } else {
            goto syntax;
        }
    }
    return 0;
syntax:
    if (c)
        srv_reply_error(c, SRV_ERR_SYNTAX);
    return -1;
}

/* CLIENT LIST's arguments: TYPE type | ID id [id ...]. */
static int parse_list(srv_conn *c, const ct_arg *a, int n, ct_filter *f)
{
    f->type = CT_ANY;
    if (n == 0)
        return 0;
    if (n == 2 && srv_util_streq(a[0].p, a[0].n, "type")) {
        if ((f->type = type_by_name(a[1].p, a[1].n)) == -2) {
            if (c)
                srv_reply_errorf(c, "ERR Unknown client type '%.*s'",
                                 (int)a[1].n, a[1].p);
            return -1;
        }
        return 0;
    }
    if (n >= 2 && srv_util_streq(a[0].p, a[0].n, "id")) {
        f->have_ids = 1;
        if (!(f->ids = calloc((size_t)n - 1, sizeof *f->ids))) {
            if (c)
                srv_reply_error(c, "ERR out of memory");
            return -1;
        }
        for (int i = 1; i < n; i++) {
            long long id;
            if (!srv_util_str2ll(a[i].p, a[i].n, &id)) {
                if (c)
                    srv_reply_error(c, "ERR Invalid client ID");
                free(f->ids);
                f->ids = NULL;
                return -1;
            }
            if (id > 0)
                f->ids[f->nids++] = (uint64_t)id;
        }
        return 0;
    }
    if (c)
        srv_reply_error(c, SRV_ERR_SYNTAX);
    return -1;
}

/* The question of c's command: its id, its clock, its arguments from
 * argv[from]. -1 when out of memory. */
static int question(srv_conn *c, int from, srv_buf *q)
{
    q->len = 0;
    if (srv_bproto_put_u64(q, c->id) ||
        srv_bproto_put_u64(q, (uint64_t)c->now_ms))
        return -1;
    for (int i = from; i < c->argc; i++)
        if (srv_bproto_put_field(q, c->argv[i].ptr, c->argv[i].len))
            return -1;
    return 0;
}

/* A question back into the asker, its clock and its arguments (in *a,
 * malloc'd). The number of arguments, or -1. */
static int unpack(const char *q, size_t n, uint64_t *asker, int64_t *now,
                  ct_arg **a)
{
    srv_bframe f = { .body = q, .len = n };
    srv_bcursor cur;
    uint64_t v;
    int cap = 0, na = 0;

    *a = NULL;
    srv_bproto_cursor(&cur, &f);
    if (srv_bproto_get_u64(&cur, asker) || srv_bproto_get_u64(&cur, &v))
        return -1;
    *now = (int64_t)v;
    while (cur.p < cur.end) {
        if (na == cap) {
            int ncap = cap ? cap * 2 : IDS_MIN;
            ct_arg *p = realloc(*a, (size_t)ncap * sizeof *p);
            if (!p)
                goto fail;
            *a = p;
            cap = ncap;
        }
        if (srv_bproto_get_field(&cur, &(*a)[na].p, &(*a)[na].n))
            goto fail;
        na++;
    }
    return na;
fail:
    free(*a);
    *a = NULL;
    return -1;
}

/* ---- this worker's parts ---- */

static srv_worker *cw;

static int list_part(const char *q, size_t n, srv_buf *part)
{
    ct_filter f = { 0 };
    ct_arg *a;
    uint64_t asker;
    int64_t now;
    int na = unpack(q, n, &asker, &now, &a), rc = 0;

    if (na < 0 || parse_list(NULL, a, na, &f)) {
        free(a);
        return na < 0 ? -1 : 0;
    }
    for (srv_conn *x = cw ? cw->clients : NULL; x && !rc; x = x->next)
        if (matches(&f, x))
            rc = srv_cinfo_line(x, srv_aclconn_user_name(x), NULL, part);
    free(f.ids);
    free(a);
    return rc;
}

/* x is killed: closed at the end of this group turn (the asker itself
 * once its reply is written). */
static void kill_one(srv_conn *x, uint64_t asker)
{
    if (x->id == asker) {
        x->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
        return;
    }
    x->flags |= SRV_CONN_CLOSE_ASAP;
    srv_group_join(&x->worker->group, x);
}

static int kill_part(const char *q, size_t n, srv_buf *part)
{
    ct_filter f = { 0 };
    ct_arg *a;
    uint64_t killed = 0;
    int na = unpack(q, n, &f.asker, &f.now_ms, &a);

    if (na < 0)
        return -1;
    if (parse_kill(NULL, a, na, &f) == 0)
        for (srv_conn *x = cw ? cw->clients : NULL; x; x = x->next) {
            if (!matches(&f, x) || (f.skipme && x->id == f.asker) ||
                (x->flags & SRV_CONN_CLOSE_ASAP))
                continue;
            kill_one(x, f.asker);
            killed++;
        }
    free(a);
    return srv_ask_put_count(part, killed);
}

static int unblock_part(const char *q, size_t n, srv_buf *part)
{
    srv_bframe f = { .body = q, .len = n };
    srv_bcursor cur;
    uint64_t id, error;

    srv_bproto_cursor(&cur, &f);
    if (srv_bproto_get_u64(&cur, &id) || srv_bproto_get_u64(&cur, &error))
        return srv_ask_put_count(part, 0);
    return srv_ask_put_count(part, (uint64_t)srv_block_unblock(id, (int)error));
}

static int exists_part(const char *q, size_t n, srv_buf *part)
{
    srv_bframe f = { .body = q, .len = n };
    srv_bcursor cur;
    uint64_t id, found = 0;

    srv_bproto_cursor(&cur, &f);
    if (srv_bproto_get_u64(&cur, &id) == 0)
        for (srv_conn *x = cw ? cw->clients : NULL; x; x = x->next)
            if (x->id == id && !(x->flags & SRV_CONN_CLOSE_ASAP))
                found = 1;
    return srv_ask_put_count(part, found);
}

/* ---- the commands' halves ---- */

static uint64_t line_id(const char *line)
{
    return strtoull(line + strlen("id="), NULL, 10);
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = line_id(*(const char *const *)a);
    uint64_t y = line_id(*(const char *const *)b);

    return x < y ? -1 : x > y;
}

/* The lines of every worker, in client id order (Redis's order). */
static void reply_list(srv_conn *c, const char *ans, size_t len)
{
    const char **lines = NULL;
    size_t n = 0, cap = 0;
    srv_buf out = { NULL, 0, 0 };

    for (const char *p = ans, *end = ans + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : LINES_MIN;
            const char **l = realloc(lines, ncap * sizeof *l);
            if (!l)
                goto nomem;
            lines = l;
            cap = ncap;
        }
        lines[n++] = p;
        p = nl ? nl + 1 : end;
    }
    if (n > 1) /* lines is NULL when no client matched */
        qsort(lines, n, sizeof *lines, by_id);
    for (size_t i = 0; i < n; i++) {
        const char *nl = memchr(lines[i], '\n', (size_t)(ans + len - lines[i]));
        size_t l = nl ? (size_t)(nl - lines[i]) + 1
                      : (size_t)(ans + len - lines[i]);
        if (srv_buf_append(&out, lines[i], l))
            goto nomem;
    }
    srv_reply_verbatim(c, out.data ? out.data : "", out.len);
    free(lines);
    srv_buf_free(&out);
    return;
nomem:
    free(lines);
    srv_buf_free(&out);
    srv_reply_error(c, "ERR out of memory");
}

static void reply_count(srv_conn *c, const char *ans, size_t len)
{
    srv_reply_int(c, (long long)srv_ask_count(ans, len));
}

static void reply_old_kill(srv_conn *c, const char *ans, size_t len)
{
    if (srv_ask_count(ans, len))
        srv_reply_ok(c);
    else
        srv_reply_error(c, "ERR No such client");
}

/* c's arguments from argv[2] as ct_args (in *a, malloc'd); -1 on
 * ENOMEM (replied). */
static int args_of(srv_conn *c, ct_arg **a)
{
    int n = c->argc - 2;

    if (!(*a = calloc(n ? (size_t)n : 1, sizeof **a))) {
        srv_reply_error(c, "ERR out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        (*a)[i].p = c->argv[2 + i].ptr;
        (*a)[i].n = c->argv[2 + i].len;
    }
    return n;
}

static srv_buf qbuf;

/* The parts are registered by the service's start, or here for a worker
 * without services (the embedded one answers its own questions). */
static void ensure(srv_worker *w)
{
    if (cw)
        return;
    cw = w;
    srv_ask_register(SRV_BP_Q_LIST, list_part);
    srv_ask_register(SRV_BP_Q_KILL, kill_part);
    srv_ask_register(SRV_BP_Q_UNBLOCK, unblock_part);
    srv_ask_register(SRV_BP_Q_EXISTS, exists_part);
}

void srv_clients_list(srv_conn *c)
{
    ct_filter f = { 0 };
    ct_arg *a;
    int n;

    ensure(c->worker);
    if ((n = args_of(c, &a)) < 0)
        return;
    if (parse_list(c, a, n, &f) == 0) {
        if (question(c, 2, &qbuf))
            srv_reply_error(c, "ERR out of memory");
        else
            srv_ask(c, SRV_BP_Q_LIST, qbuf.data, qbuf.len, reply_list);
    }
    free(f.ids);
    free(a);
}

void srv_clients_kill(srv_conn *c)
{
    ct_filter f = { 0 };
    ct_arg *a;
    int n;

    ensure(c->worker);
    if ((n = args_of(c, &a)) < 0)
        return;
    if (parse_kill(c, a, n, &f) == 0) {
        if (question(c, 2, &qbuf))
            srv_reply_error(c, "ERR out of memory");
        else
            srv_ask(c, SRV_BP_Q_KILL, qbuf.data, qbuf.len,
                    f.old_form ? reply_old_kill : reply_count);
    }
    free(a);
}

void srv_clients_unblock(srv_conn *c, uint64_t id, int error)
{
    ensure(c->worker);
    qbuf.len = 0;
    if (srv_bproto_put_u64(&qbuf, id) ||
        srv_bproto_put_u64(&qbuf, (uint64_t)error))
        srv_reply_error(c, "ERR out of memory");
    else
        srv_ask(c, SRV_BP_Q_UNBLOCK, qbuf.data, qbuf.len, reply_count);
}

void srv_clients_exists(srv_conn *c, uint64_t id, srv_ask_reply_fn *reply)
{
    ensure(c->worker);
    qbuf.len = 0;
    if (srv_bproto_put_u64(&qbuf, id))
        srv_reply_error(c, "ERR out of memory");
    else
        srv_ask(c, SRV_BP_Q_EXISTS, qbuf.data, qbuf.len, reply);
}

/* ---- the service ---- */

static void service_start(srv_worker *w) { ensure(w); }

static void service_stop(srv_worker *w)
{
    srv_buf_free(&qbuf);
    cw = NULL;
}

const srv_service srv_clients_service = {
    .name = "clients",
    .start = service_start,
    .stop = service_stop,
};
