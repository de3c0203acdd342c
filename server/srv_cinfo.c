/*
 * srv_cinfo.c - a client's CLIENT LIST / CLIENT INFO line.
 */
#include "server/srv_cinfo.h"
#include "server/cmd/srv_multi.h"
#include "server/srv_block.h"
#include "server/srv_monitor.h"
#include "server/srv_pubsub.h"
#include "server/srv_track.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"

#include <stdio.h>

#define MS_PER_S 1000
#define LINE_MAX_BYTES 2048
#define FLAGS_MAX 24

/* CLIENT LIST's flags field, in Redis's order. */
static void flags_of(srv_conn *x, char *f)
{
    char *p = f;

    if (srv_monitor_is(x))
        *p++ = 'O';
    if (x->flags & SRV_CONN_SUBSCRIBED)
        *p++ = 'P';
    if (srv_multi_queued(x) >= 0)
        *p++ = 'x';
    if (srv_block_is_blocked(x))
        *p++ = 'b';
    srv_track_list(x, &p); /* t R B */
    if (x->flags & SRV_CONN_CLOSE_AFTER_REPLY)
        *p++ = 'c';
    if (x->flags & SRV_CONN_CLOSE_ASAP)
        *p++ = 'A';
    if (x->flags & SRV_CONN_UNIX)
        *p++ = 'U';
    if (x->flags & SRV_CONN_NO_EVICT)
        *p++ = 'e';
    if (x->flags & SRV_CONN_NO_TOUCH)
        *p++ = 'T';
    if (p == f)
        *p++ = 'N';
    *p = '\0';
}

int srv_cinfo_line(srv_conn *x, const char *user, const char *cmd, srv_buf *out)
{
    int64_t now = srv_util_mstime();
    char flags[FLAGS_MAX], line[LINE_MAX_BYTES];
    size_t pending = x->out.len - x->out_sent;
    int n;

    flags_of(x, flags);
    n = snprintf(line, sizeof line,
                 "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld "
                 "flags=%s db=%u sub=%zu psub=%zu ssub=%zu multi=%d "
                 "qbuf=%zu qbuf-free=%zu argv-mem=0 multi-mem=0 rbs=%zu "
                 "rbp=%zu obl=0 oll=0 omem=%zu tot-mem=%zu events=r%s cmd=%s "
                 "user=%s redir=%lld resp=%d lib-name=%s lib-ver=%s "
                 "worker=%d\n",
                 (unsigned long long)x->id, x->addr, x->laddr, x->fd, x->name,
                 (long long)((now - x->created_ms) / MS_PER_S),
                 (long long)((now - x->last_ms) / MS_PER_S), flags, x->db,
                 srv_pubsub_count(x, SRV_PS_CHANNEL),
                 srv_pubsub_count(x, SRV_PS_PATTERN),
                 srv_pubsub_count(x, SRV_PS_SHARD), srv_multi_queued(x),
                 x->in.len - x->in_done, x->in.cap - x->in.len, x->in.cap,
                 x->in.len, pending, sizeof *x + x->in.cap + x->out.cap,
                 x->writing ? "w" : "",
                 cmd           ? cmd
                 : x->last_cmd ? x->last_cmd
                               : "NULL",
                 user, srv_track_list(x, NULL), x->resp, x->lib_name,
                 x->lib_ver, x->worker->index);
    if (n < 0)
        return -1;
    return srv_buf_append(out, line,
                          (size_t)n < sizeof line ? (size_t)n : sizeof line - 1)
               ? -1
               : 0;
}
