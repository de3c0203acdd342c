/*
 * srv_monitor.c - MONITOR across workers (see the header). The worker's
 * monitors are a list of connections; the broker learns how many there
 * are (INTEREST, absolute) and sends this worker every line of every
 * worker while there are any, in the order of their numbers.
 */
#include "server/srv_monitor.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_bproto.h"
#include "server/srv_buf.h"
#include "server/srv_group.h"
#include "server/srv_hooks.h"
#include "server/srv_link.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MONITORS_MIN 4
#define US_PER_S 1000000
#define LINE_HEAD_MAX 160
#define BUF_KEEP (64 * 1024)

static const char REDACTED[] = "(redacted)";

static struct {
    srv_worker *w;
    srv_conn **mon;
    size_t n, cap;
    srv_buf line;
} mn;

static const srv_hooks monitor_hooks;

int srv_monitor_is(const srv_conn *c)
{
    return srv_hooks_state(&c->hooks, &monitor_hooks) != NULL;
}

static void tell_count(void)
{
    srv_link_put(SRV_BP_INTEREST, SRV_BP_I_MONITOR, mn.n, NULL, 0, NULL, 0);
}

void srv_monitor_start(srv_conn *c)
{
    if (c->flags & SRV_CONN_IN_EXEC) {
        srv_reply_error(c, "ERR MONITOR isn't allowed for DENY BLOCKING "
                           "client");
        return;
    }
    if (srv_monitor_is(c))
        return; /* already: Redis replies nothing */
    if (mn.n == mn.cap) {
        size_t cap = mn.cap ? mn.cap * 2 : MONITORS_MIN;
        srv_conn **m = realloc(mn.mon, cap * sizeof *m);
        if (!m) {
            srv_reply_error(c, "ERR out of memory");
            return;
        }
        mn.mon = m;
        mn.cap = cap;
    }
    if (srv_hooks_attach(&c->hooks, &monitor_hooks, &mn)) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    mn.mon[mn.n++] = c;
    atomic_fetch_add(&srv_her.stats->monitors, 1);
    tell_count();
    srv_reply_ok(c);
}

/* ---- the line ---- */

/* Redis's quoted form of an argument (sdscatrepr). */
static int quote(srv_buf *b, const char *p, size_t n)
{
    char esc[5];

    if (srv_buf_append(b, "\"", 1))
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        const char *s = NULL;
        switch (ch) {
        case '\\': s = "\\\\"; break;
        case '"': s = "\\\""; break;
        case '\n': s = "\\n"; break;
        case '\r': s = "\\r"; break;
        case '\t': s = "\\t"; break;
        case '\a': s = "\\a"; break;
        case '\b': s = "\\b"; break;
        default: break;
        }
        if (!s && !isprint(ch)) {
            snprintf(esc, sizeof esc, "\\x%02x", ch);
            s = esc;
        }
        if (s ? srv_buf_append(b, s, strlen(s)) : srv_buf_append(b, &ch, 1))
            return -1;
    }
    return srv_buf_append(b, "\"", 1);
}

/* Which arguments hide a secret: AUTH's, and HELLO's AUTH pair. */
static int redacted(const srv_conn *c, int i)
{
    const char *name = c->cmd ? c->cmd->name : "";

    if (strcmp(name, "auth") == 0)
        return i >= 1;
    if (strcmp(name, "hello") == 0)
        for (int j = 2; j < i; j++)
            if (srv_util_streq(c->argv[j].ptr, c->argv[j].len, "auth") &&
                (i == j + 1 || i == j + 2))
                return 1;
    return 0;
}

static int build(srv_conn *c, srv_buf *b)
{
    char head[LINE_HEAD_MAX];
    int64_t us = srv_util_ustime();
    int n;

    if (c->flags & SRV_CONN_UNIX)
        n = snprintf(head, sizeof head, "%lld.%06lld [%u unix:%s]",
                     (long long)(us / US_PER_S), (long long)(us % US_PER_S),
                     c->db, srv_her.cfg->unixsocket);
    else
        n = snprintf(head, sizeof head, "%lld.%06lld [%u %s]",
                     (long long)(us / US_PER_S), (long long)(us % US_PER_S),
                     c->db, c->addr);
    b->len = 0;
    if (srv_buf_append(b, head,
                       (size_t)n < sizeof head ? (size_t)n : sizeof head - 1))
        return -1;
    for (int i = 0; i < c->argc; i++) {
        if (srv_buf_append(b, " ", 1))
            return -1;
        if (redacted(c, i) ? quote(b, REDACTED, sizeof REDACTED - 1)
                           : quote(b, c->argv[i].ptr, c->argv[i].len))
            return -1;
    }
    return 0;
}

/* Append one line to this worker's monitors. */
static void deliver(const char *p, size_t n)
{
    for (size_t i = 0; i < mn.n; i++) {
        srv_conn *m = mn.mon[i];
        if (m->flags & SRV_CONN_CLOSE_ASAP)
            continue;
        if (srv_buf_reserve(&m->out, n + 3)) {
            m->flags |= SRV_CONN_CLOSE_ASAP;
            continue;
        }
        srv_reply_raw(m, "+", 1);
        srv_reply_raw(m, p, n);
        srv_reply_raw(m, "\r\n", 2);
        srv_group_wake(&m->worker->group, m, 0);
    }
}

void srv_monitor_feed_now(srv_conn *c)
{
    /* Redis leaves out admin commands and those flagged skip_monitor
     * (EVAL and its kin: their inner commands are what a script does) */
    if (!c->cmd || (c->cmd->flags & (F_ADMIN | F_SKIP_MONITOR)))
        return;
    /* A failed group's commands run again (srv_group.h): the lines its
     * members' commands had shown since their last commit are not shown
     * twice (Redis shows each command once); the lines past them are,
     * such as the rest of a script its first run stopped short of. */
    if (c->mon_skip) {
        c->mon_skip--;
        return;
    }
    c->mon_fed++;
    if (build(c, &mn.line)) {
        srv_log(SRV_LOG_WARNING, ENOMEM, "a MONITOR line");
        return;
    }
    /* The number is drawn after the command ran and before its reply
     * can leave, and only for a line that goes to the broker (a number
     * never sent is a gap its reorder buffer waits for). */
    if (!srv_link_usable() ||
        srv_link_put(SRV_BP_MONITOR, 0,
                     atomic_fetch_add(&srv_her.stats->monitor_seq, 1),
                     mn.line.data, mn.line.len, NULL, 0))
        deliver(mn.line.data, mn.line.len); /* no broker: ours only */
    mn.line.len = 0;
    srv_buf_trim(&mn.line, BUF_KEEP);
}

/* ---- hooks, link, service ---- */

static void on_close(srv_conn *c, void *state)
{
    for (size_t i = 0; i < mn.n; i++)
        if (mn.mon[i] == c) {
            mn.mon[i] = mn.mon[--mn.n];
            atomic_fetch_sub(&srv_her.stats->monitors, 1);
            tell_count();
            break;
        }
}

/* RESET leaves monitor mode. */
static void on_reset(srv_conn *c, void *state) { on_close(c, state); }

static const srv_hooks monitor_hooks = {
    .name = "monitor",
    .reset = on_reset,
    .close = on_close,
};

static int on_frame(const srv_bframe *f)
{
    if (f->type != SRV_BP_MONITOR)
        return -1;
    deliver(f->body, (size_t)f->len);
    return 0;
}

static void on_resend(void)
{
    if (mn.n)
        tell_count();
}

static const int link_types[] = { SRV_BP_MONITOR, 0 };

static const srv_link_feature link_feature = {
    .name = "monitor",
    .types = link_types,
    .resend = on_resend,
    .frame = on_frame,
};

static void service_start(srv_worker *w)
{
    mn.w = w;
    if (srv_link_register(&link_feature))
        srv_log(SRV_LOG_WARNING, 0, "MONITOR could not join the link");
}

static void service_stop(srv_worker *w)
{
    free(mn.mon);
    mn.mon = NULL;
    mn.n = mn.cap = 0;
    srv_buf_free(&mn.line);
    mn.w = NULL;
}

const srv_service srv_monitor_service = {
    .name = "monitor",
    .start = service_start,
    .stop = service_stop,
};
