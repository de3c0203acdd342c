/*
 * srv_aclconn.c - the ACL in force (see srv_aclconn.h).
 *
 * Each process holds its own parsed copy of the users (`live`) and the
 * generation of the region it came from. Before every command the
 * dispatcher's check compares that generation with the region's (one
 * atomic load); a worker behind re-reads the text under the region's
 * lock, parses it, and re-links its sessions to the new users by
 * identity: a session whose user is gone (deleted, or replaced by ACL
 * LOAD) is closed, as is one subscribed to a channel its user may no
 * longer listen to. A writer changes a copy under the same lock and
 * publishes it, so two changes on two workers never lose each other.
 */
#include "server/srv_aclconn.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_aclshm.h"
#include "server/srv_cinfo.h"
#include "server/srv_group.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"
#include "server/srv_pubsub.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "shm/shm_error.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CLIENT_INFO_MAX 1024 /* ACL LOG keeps this much of client-info */
#define MS_PER_S 1000
#define US_PER_MS 1000
/* Bytes read at a time from an aclfile. */
#define FILE_CHUNK 4096

const char SRV_ACLCONN_DENIED[] =
    "DENIED Redis is running in protected mode because protected mode is "
    "enabled and no password is set for the default user. In this mode "
    "connections are only accepted from the loopback interface. If you want "
    "to connect from external computers to Redis you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the "
    "command 'CONFIG SET protected-mode no' from the loopback interface by "
    "connecting to Redis from the same host the server is running, however "
    "MAKE SURE Redis is not publicly accessible from internet if you do so. "
    "Use CONFIG REWRITE to make this change permanent. 2) Alternatively you "
    "can just disable the protected mode by editing the Redis configuration "
    "file, and setting the protected mode option to 'no', and then "
    "restarting the server. 3) If you started the server manually just for "
    "testing, restart it with the '--protected-mode no' option. 4) Setup a "
    "an authentication password for the default user. NOTE: You only need "
    "to do one of the above things in order for the server to start "
    "accepting connections from the outside.";

/* The process's users and the generation they are. */
static srv_aclset *live;
static srv_acl_user *live_default;
static uint64_t applied;
/* The default user may run anything: its sessions need no check. */
static int default_open;

/* A connection authenticated as another user than the default. */
typedef struct session {
    uint64_t uid;       /* the user's identity */
    srv_acl_user *user; /* in `live` when gen is `applied` */
    uint64_t gen;       /* the generation `user` was found in */
    int dead;           /* its user went away: closing */
} session;

static void on_close(srv_conn *c, void *state) { free(state); }

static void on_reset(srv_conn *c, void *state)
{
    session *s = state;

    if (!s->dead) {
        s->user = live_default;
        s->uid = srv_acl_user_id(live_default);
        s->gen = applied;
    }
}

static const srv_hooks session_hooks = {
    .name = "acl",
    .reset = on_reset,
    .close = on_close,
};

static session *session_of(const srv_conn *c)
{
    return c->hooks.n ? srv_hooks_state(&c->hooks, &session_hooks) : NULL;
}

/* ---- the set in force ---- */

/* The worker whose sessions follow the set (NULL: none, the master). */
static srv_worker *serving;
static struct event *kill_ev;

static void kill_session(srv_conn *x, session *s, srv_conn *self)
{
    s->dead = 1;
    x->authed = 0;
    if (x == self) {
        x->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
    } else if (kill_ev) {
        event_active(kill_ev, EV_TIMEOUT, 0);
    }
}

/* The channels x listens to that u may not: any? */
typedef struct chan_check {
    const srv_acl_user *u;
    int denied;
} chan_check;

static int check_one_channel(void *arg, const char *ch, size_t len, int pattern)
{
    chan_check *k = arg;

    if (!srv_acl_check_channel(k->u, ch, len, pattern))
        k->denied = 1;
    return k->denied;
}

/*
 * Make `next` (generation seq) the set in force and re-link the sessions
 * of this worker's connections; the one running a command is `self`.
 */
static void adopt(srv_aclset *next, uint64_t seq, srv_conn *self)
{
    srv_aclset *old = live;

    srv_worker *w = serving ? serving : self ? self->worker : NULL;
    uint64_t before = applied;

    live = next;
    live_default = srv_aclset_default(next);
    default_open = srv_acl_user_unrestricted(live_default);
    applied = seq;
    for (srv_conn *x = w ? w->clients : NULL; x; x = x->next) {
        session *s = session_of(x);
        srv_acl_user *u;
        if (!s || s->dead)
            continue;
        if (!(u = srv_aclset_find_id(next, s->uid))) {
            kill_session(x, s, self);
            continue;
        }
        if ((x->flags & SRV_CONN_SUBSCRIBED) &&
            (s->gen != before || !srv_acl_channels_kept(s->user, u))) {
            chan_check k = { u, 0 };
            srv_pubsub_each_subscription(x, check_one_channel, &k);
            if (k.denied) {
                kill_session(x, s, self);
                continue;
            }
        }
        s->user = u;
        s->gen = seq;
    }
    /* The default user's sessions have no session: default keeps its
     * identity, so they follow it without one. */
    srv_aclset_destroy(&old);
}

struct srv_aclshm *srv_aclconn_region(void)
{
    if (!srv_her.aclshm) {
        srv_aclset *s = srv_aclset_create();
        srv_buf text = { 0 };
        if (!s || srv_aclset_write(s, 1, &text) ||
            srv_aclshm_create(text.data, text.len, &srv_her.aclshm)) {
            srv_aclset_destroy(&s);
            srv_buf_free(&text);
            return NULL;
        }
        srv_buf_free(&text);
        srv_aclset_destroy(&live);
        live = s;
        live_default = srv_aclset_default(s);
        default_open = srv_acl_user_unrestricted(live_default);
        applied = srv_aclshm_seq(srv_her.aclshm);
    }
    return srv_her.aclshm;
}

/* Read the region's text (the caller holds its lock) into a set. */
static int read_locked(struct srv_aclshm *h, srv_aclset **out, uint64_t *seq)
{
    size_t len;
    const char *text = srv_aclshm_text_locked(h, &len, seq);

    return srv_aclset_read(text, len, out);
}

/* Bring the set in force up to date; self is the connection running. */
static void refresh(srv_conn *self)
{
    struct srv_aclshm *h = srv_aclconn_region();
    srv_aclset *next;
    uint64_t seq;
    int rc;

    if (!h || srv_aclshm_seq(h) == applied)
        return;
    if ((rc = srv_aclshm_lock(h))) {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                "locking the ACL region failed: %s", shm_strerror(rc));
        return;
    }
    rc = read_locked(h, &next, &seq);
    srv_aclshm_unlock(h);
    if (rc) {
        srv_log(SRV_LOG_WARNING, rc > 0 ? rc : 0,
                "the published ACL rules are unreadable (%d); keeping the "
                "previous ones",
                rc);
        return;
    }
    adopt(next, seq, self);
}

/* The user of session s (re-found by identity if the set changed since:
 * a session the re-link did not reach, NULL when its user is gone). */
static srv_acl_user *session_user(session *s)
{
    if (s->gen != applied && !s->dead) {
        s->user = srv_aclset_find_id(live, s->uid);
        s->gen = applied;
        if (!s->user)
            s->dead = 1;
    }
    return s->dead ? NULL : s->user;
}

static srv_acl_user *user_of(const srv_conn *c)
{
    session *s = session_of(c);
    srv_acl_user *u = s ? session_user(s) : NULL;

    return u ? u : live_default;
}

const srv_aclset *srv_aclconn_users(srv_conn *c)
{
    refresh(c);
    return live;
}

const srv_acl_user *srv_aclconn_user(const srv_conn *c)
{
    if (!live)
        srv_aclconn_region();
    return user_of(c);
}

const char *srv_aclconn_user_name(const srv_conn *c)
{
    const srv_acl_user *u = srv_aclconn_user(c);

    return u ? srv_acl_user_name(u, NULL) : "default";
}

int srv_aclconn_auth_required(void)
{
    if (!live)
        srv_aclconn_region();
    return !live_default || !srv_acl_user_nopass(live_default) ||
           !srv_acl_user_enabled(live_default);
}

int srv_aclconn_default_nopass(void)
{
    refresh(NULL);
    return live_default && srv_acl_user_nopass(live_default);
}

/* ---- the log ---- */

void srv_aclconn_log(srv_conn *c, int reason, int context, int argpos,
                     const srv_slice *user, const srv_slice *object)
{
    struct srv_aclshm *h = srv_aclconn_region();
    srv_buf info = { NULL, 0, 0 };
    const char *uname, *obj;
    size_t ulen, olen;

    if (!h)
        return;
    if (user) {
        uname = user->ptr;
        ulen = user->len;
    } else {
        uname = srv_acl_user_name(user_of(c), &ulen);
    }
    if (object) {
        obj = object->ptr;
        olen = object->len;
    } else if (reason == SRV_ACL_DENIED_CMD) {
        obj = c->cmd->name;
        olen = strlen(obj);
    } else if (reason == SRV_ACL_DENIED_AUTH) {
        obj = c->argv[0].ptr;
        olen = c->argv[0].len;
    } else {
        obj = c->argv[argpos].ptr;
        olen = c->argv[argpos].len;
    }
    /* The command shown is the one the client sent: EXEC for what EXEC's
     * re-check denies. */
    srv_cinfo_line(c, srv_aclconn_user_name(c),
                   c->flags & SRV_CONN_IN_EXEC ? "exec"
                   : c->cmd                    ? c->cmd->name
                                               : NULL,
                   &info);
    size_t ilen = info.len < CLIENT_INFO_MAX ? info.len : CLIENT_INFO_MAX;
    if (ilen && info.data[ilen - 1] == '\n')
        ilen--;
    srv_aclshm_log_add(h, reason, context, obj, olen, uname, ulen,
                       info.data ? info.data : "", ilen, srv_util_mstime(),
                       srv_her.cfg->acllog_max_len);
    srv_buf_free(&info);
}

/* ---- the check ---- */

/* The check past its fast path (see srv_aclconn_check_or_reply). */
static __attribute__((noinline)) int check_slow(srv_conn *c)
{
    session *s;
    srv_acl_user *u;
    int pos = 0, rc;

    if (!live || srv_aclshm_seq(srv_her.aclshm) != applied)
        refresh(c);
    s = session_of(c);
    if (s && !session_user(s)) {
        c->flags |= SRV_CONN_CLOSE_ASAP;
        return -1;
    }
    u = s ? s->user : live_default;
    if (srv_acl_user_unrestricted(u))
        return 0;
    if ((rc = srv_acl_check(u, c->cmd, c->argc, c->argv, &pos)) == SRV_ACL_OK)
        return 0;
    srv_aclconn_log(c, rc,
                    srv_multi_queued(c) >= 0 ? SRV_ACLSHM_CTX_MULTI
                                             : SRV_ACLSHM_CTX_TOPLEVEL,
                    pos, NULL, NULL);
    switch (rc) {
    case SRV_ACL_DENIED_CMD:
        srv_reply_errorf(c,
                         "NOPERM this user has no permissions to run the "
                         "'%s' command",
                         c->cmd->name);
        break;
    case SRV_ACL_DENIED_KEY:
        srv_reply_error(c, "NOPERM this user has no permissions to access "
                           "one of the keys used as arguments");
        break;
    default:
        srv_reply_error(c, "NOPERM this user has no permissions to access "
                           "one of the channels used as arguments");
        break;
    }
    return 1;
}

/*
 * Every command passes here: the common case (a connection of the default
 * user, who may run anything, with no session feature attached and the
 * rules unchanged) is a few loads and no call; anything else takes the
 * whole check.
 */
int srv_aclconn_check_or_reply(srv_conn *c)
{
    if (__builtin_expect(default_open && c->hooks.n == 0 &&
                             srv_aclshm_seq(srv_her.aclshm) == applied,
                         1))
        return 0;
    return check_slow(c);
}

int srv_aclconn_exec_check_or_reply(srv_conn *c)
{
    srv_acl_user *u;
    int pos = 0, rc;
    const char *why;

    refresh(c);
    u = user_of(c);
    if (srv_acl_user_unrestricted(u) ||
        (rc = srv_acl_check(u, c->cmd, c->argc, c->argv, &pos)) == SRV_ACL_OK)
        return 0;
    switch (rc) {
    case SRV_ACL_DENIED_CMD:
        why = "no permission to execute the command or subcommand";
        break;
    case SRV_ACL_DENIED_KEY:
        why = "no permission to touch the specified keys";
        break;
    default:
        why = "no permission to access one of the channels used as arguments";
        break;
    }
    srv_aclconn_log(c, rc, SRV_ACLSHM_CTX_MULTI, pos, NULL, NULL);
    srv_reply_errorf(c,
                     "NOPERM ACLs rules changed between the moment the "
                     "transaction was accumulated and the EXEC call. This "
                     "command is no longer allowed for the following "
                     "reason: %s",
                     why);
    return 1;
}

/* ---- authentication ---- */

/* c runs as u from now on (a session unless u is the default user). */
static int become(srv_conn *c, srv_acl_user *u)
{
    session *s = session_of(c);

    if (!s) {
        if (u == live_default)
            return 0;
        if (!(s = calloc(1, sizeof *s)))
            return -1;
        if (srv_hooks_attach(&c->hooks, &session_hooks, s)) {
            free(s);
            return -1;
        }
    }
    s->user = u;
    s->uid = srv_acl_user_id(u);
    s->gen = applied;
    s->dead = 0;
    return 0;
}

int srv_aclconn_authenticate(srv_conn *c, const srv_slice *user,
                             const srv_slice *pass)
{
    static const srv_slice default_name = { "default", sizeof "default" - 1 };
    srv_acl_user *u;

    refresh(c);
    if (!user)
        user = &default_name;
    u = srv_aclset_find(live, user->ptr, user->len);
    if (u && srv_acl_user_check_password(u, pass->ptr, pass->len) &&
        become(c, u) == 0) {
        c->authed = 1;
        return 0;
    }
    srv_aclconn_log(c, SRV_ACL_DENIED_AUTH,
                    srv_multi_queued(c) >= 0 ? SRV_ACLSHM_CTX_MULTI
                                             : SRV_ACLSHM_CTX_TOPLEVEL,
                    0, user, NULL);
    return -1;
}

void srv_aclconn_reset(srv_conn *c)
{
    refresh(c);
    become(c, live_default);
    c->authed = srv_acl_user_nopass(live_default) &&
                srv_acl_user_enabled(live_default);
}

/* ---- changes ---- */

int srv_aclconn_change(srv_conn *c, srv_aclconn_edit_fn *edit, void *arg)
{
    struct srv_aclshm *h = srv_aclconn_region();
    srv_aclset *cur = NULL, *next = NULL;
    srv_buf text = { 0 };
    uint64_t seq;
    int rc;

    if (!h) {
        srv_reply_error(c, "ERR out of memory");
        return 1;
    }
    if ((rc = srv_aclshm_lock(h))) {
        srv_reply_errorf(c, "ERR the ACL region can't be locked: %s",
                         shm_strerror(rc));
        return 1;
    }
    if (srv_aclshm_seq(h) != applied) {
        if ((rc = read_locked(h, &cur, &seq)) == 0)
            adopt(cur, seq, c);
    }
    if (rc == 0 && !(next = srv_aclset_copy(live)))
        rc = ENOMEM;
    if (rc) {
        srv_aclshm_unlock(h);
        srv_reply_error(c, rc == ENOMEM
                               ? "ERR out of memory reading the ACL rules"
                               : "ERR the published ACL rules are unreadable");
        return 1;
    }
    if ((rc = edit(c, next, arg))) {
        srv_aclshm_unlock(h);
        srv_aclset_destroy(&next);
        return rc;
    }
    if (srv_aclset_write(next, 1, &text) ||
        !(seq = srv_aclshm_publish_locked(h, text.data, text.len))) {
        srv_aclshm_unlock(h);
        srv_aclset_destroy(&next);
        srv_buf_free(&text);
        srv_reply_errorf(c,
                         "ERR the ACL rules would exceed larder's limit of "
                         "%u bytes",
                         (unsigned)SRV_ACLSHM_TEXT_MAX);
        return 1;
    }
    srv_aclshm_unlock(h);
    srv_buf_free(&text);
    adopt(next, seq, c);
    return 0;
}

static int edit_requirepass(srv_conn *c, srv_aclset *next, void *arg)
{
    const char *pass = arg;
    srv_acl_user *d = srv_aclset_default(next);
    char *op = malloc(strlen(pass) + 2);
    int rc = 0;

    if (!op) {
        srv_reply_error(c, "ERR out of memory");
        return 1;
    }
    op[0] = '>';
    strcpy(op + 1, pass);
    srv_acl_user_apply(d, "resetpass", strlen("resetpass"), 0);
    if (pass[0])
        rc = srv_acl_user_apply(d, op, strlen(op), 0);
    else
        rc = srv_acl_user_apply(d, "nopass", strlen("nopass"), 0);
    free(op);
    if (rc) {
        srv_reply_error(c, "ERR out of memory");
        return 1;
    }
    return 0;
}

int srv_aclconn_set_requirepass(srv_conn *c, const char *pass)
{
    return srv_aclconn_change(c, edit_requirepass, (void *)pass);
}

/* ---- boot ---- */

/* The whole of the file `path` into *out. 0 or errno. */
static int read_file(const char *path, srv_buf *out)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return errno;
    do {
        if (srv_buf_reserve(out, FILE_CHUNK)) {
            fclose(f);
            return ENOMEM;
        }
        n = fread(out->data + out->len, 1, FILE_CHUNK, f);
        out->len += n;
    } while (n == FILE_CHUNK);
    fclose(f);
    return 0;
}

int srv_aclconn_boot(char *err, size_t errlen)
{
    const srv_config *cfg = srv_her.cfg;
    srv_aclset *set = NULL;
    srv_buf text = { 0 }, errs = { 0 };
    int rc;

    if (cfg->aclfile[0]) {
        if ((rc = read_file(cfg->aclfile, &text))) {
            snprintf(err, errlen,
                     "Aborting Redis startup because of ACL errors: Error "
                     "loading ACLs, opening file '%s': %s",
                     cfg->aclfile, strerror(rc));
            srv_buf_free(&text);
            return -1;
        }
        rc = srv_aclset_load(text.data ? text.data : "", text.len, cfg->aclfile,
                             1, 2, (int)cfg->acl_pubsub_default, &set, &errs);
        srv_buf_free(&text);
        if (rc) {
            snprintf(err, errlen,
                     "Aborting Redis startup because of ACL errors: %.*s",
                     (int)errs.len, errs.data ? errs.data : "out of memory");
            srv_buf_free(&errs);
            return -1;
        }
    } else {
        if (!(set = srv_aclset_create()))
            goto oom;
        if (cfg->requirepass[0]) {
            srv_buf op = { 0 };
            srv_acl_user *d = srv_aclset_default(set);
            if (srv_buf_append(&op, ">", 1) ||
                srv_buf_append(&op, cfg->requirepass,
                               strlen(cfg->requirepass)) ||
                srv_acl_user_apply(d, "resetpass", strlen("resetpass"), 0) ||
                srv_acl_user_apply(d, op.data, op.len, 0)) {
                srv_buf_free(&op);
                goto oom;
            }
            srv_buf_free(&op);
        }
    }
    if (srv_aclset_write(set, 1, &text))
        goto oom;
    if ((rc = srv_aclshm_create(text.data, text.len, &srv_her.aclshm))) {
        snprintf(err, errlen, "can't create the shared ACL region: %s",
                 rc == E2BIG ? "the users are too many or too long"
                             : strerror(rc));
        srv_buf_free(&text);
        srv_aclset_destroy(&set);
        return -1;
    }
    srv_buf_free(&text);
    srv_buf_free(&errs);
    srv_aclset_destroy(&live);
    live = set;
    live_default = srv_aclset_default(set);
    default_open = srv_acl_user_unrestricted(live_default);
    applied = srv_aclshm_seq(srv_her.aclshm);
    return 0;
oom:
    srv_buf_free(&text);
    srv_buf_free(&errs);
    srv_aclset_destroy(&set);
    snprintf(err, errlen, "out of memory loading the ACL rules");
    return -1;
}

int srv_aclconn_attach(void)
{
    return srv_her.aclshm ? srv_aclshm_attach(srv_her.aclshm) : 0;
}

/* ---- the service ---- */

static struct event *tick_ev;

/* Close the sessions whose user went away (not while the group holds
 * them: the group closes those flagged after its commit). */
static void on_kill(evutil_socket_t fd, short what, void *arg)
{
    srv_worker *w = arg;

    for (srv_conn *x = w->clients, *next; x; x = next) {
        session *s = session_of(x);
        next = x->next;
        if (!s || !s->dead)
            continue;
        /* Closed by the worker at the end of this group turn. */
        x->flags |= SRV_CONN_CLOSE_ASAP;
        event_del(x->ev_read);
        srv_group_join(&w->group, x);
    }
}

/* Changes made elsewhere reach idle connections within a tick. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    if (srv_her.aclshm && srv_aclshm_seq(srv_her.aclshm) != applied)
        refresh(NULL);
}

static void service_start(srv_worker *w)
{
    struct timeval tick = { 0, (int)(MS_PER_S / srv_her.cfg->hz) * US_PER_MS };

    serving = w;
    kill_ev = srv_worker_io_event(w, -1, 0, on_kill, w);
    tick_ev = srv_worker_io_event(w, -1, EV_PERSIST, on_tick, w);
    if (!kill_ev || !tick_ev || event_add(tick_ev, &tick))
        srv_log(SRV_LOG_WARNING, ENOMEM,
                "ACL: closing sessions of deleted users only at their next "
                "command");
}

static void service_stop(srv_worker *w)
{
    if (kill_ev)
        event_free(kill_ev);
    if (tick_ev)
        event_free(tick_ev);
    kill_ev = tick_ev = NULL;
    serving = NULL;
}

/* A loopback or Unix socket peer. */
static int is_local(const srv_conn *c)
{
    return (c->flags & SRV_CONN_UNIX) ||
           strncmp(c->addr, "127.", strlen("127.")) == 0 ||
           strncmp(c->addr, "::1:", strlen("::1:")) == 0;
}

static int service_accepted(srv_worker *w, srv_conn *c)
{
    refresh(NULL);
    c->authed = srv_acl_user_nopass(live_default) &&
                srv_acl_user_enabled(live_default);
    if (srv_her.cfg->protected_mode && srv_acl_user_nopass(live_default) &&
        !is_local(c)) {
        srv_log(SRV_LOG_VERBOSE, 0, "protected mode: refused %s", c->addr);
        srv_reply_error(c, SRV_ACLCONN_DENIED);
        c->flags |= SRV_CONN_CLOSE_AFTER_REPLY;
        event_del(c->ev_read);
        srv_group_join(&w->group, c); /* written, then closed */
        return 1;
    }
    return 0;
}

const srv_service srv_aclconn_service = {
    .name = "acl",
    .start = service_start,
    .stop = service_stop,
    .accepted = service_accepted,
};
