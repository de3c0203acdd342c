/*
 * srv_cmd_ops.c - SLOWLOG and LATENCY: the slow log (srv_slowlog.h), the
 * latency monitor (srv_latency.h) and the per-command latency histograms
 * (srv_cmdstats.h), all of them the whole server's, whatever worker
 * answers.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_cmdstats.h"
#include "server/srv_config.h"
#include "server/srv_conn.h"
#include "server/srv_heritage.h"
#include "server/srv_latency.h"
#include "server/srv_reply.h"
#include "server/srv_slowlog.h"
#include "server/srv_util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SLOWLOG_GET_DEFAULT 10
#define NS_PER_US 1000
#define GRAPH_ROWS 4
#define GRAPH_COLS 80
#define DOCTOR_MAX 4096
#define LINE_MAX_ 256

/* ---- SLOWLOG ---- */

void srv_cmd_slowlog_get(srv_conn *c)
{
    static srv_slowlog_entry e; /* big; one command at a time */
    long long count = SLOWLOG_GET_DEFAULT, max = srv_her.cfg->slowlog_max_len;
    uint64_t cursor = UINT64_MAX;
    size_t mark;
    long long n = 0;

    if (c->argc > 3) {
        srv_reply_errorf(c,
                         "ERR unknown subcommand or wrong number of "
                         "arguments for '%.*s'. Try SLOWLOG HELP.",
                         (int)c->argv[1].len, c->argv[1].ptr);
        return;
    }
    if (c->argc == 3 &&
        (!srv_util_str2ll(c->argv[2].ptr, c->argv[2].len, &count) ||
         count < -1)) {
        srv_reply_error(c, "ERR count should be greater than or equal to -1");
        return;
    }
    mark = srv_reply_defer(c);
    while ((count < 0 || n < count) && srv_slowlog_next(&cursor, max, &e)) {
        srv_reply_array(c, 6);
        srv_reply_int(c, (long long)e.id);
        srv_reply_int(c, (long long)e.time_s);
        srv_reply_int(c, (long long)e.duration_us);
        srv_reply_array(c, e.argc);
        for (int i = 0; i < e.argc; i++)
            srv_reply_bulk(c, e.argv[i].ptr, e.argv[i].len);
        srv_reply_bulk_cstr(c, e.addr);
        srv_reply_bulk_cstr(c, e.name);
        n++;
    }
    srv_reply_defer_array(c, mark, n);
}

void srv_cmd_slowlog_len(srv_conn *c)
{
    srv_reply_int(c, srv_slowlog_len(srv_her.cfg->slowlog_max_len));
}

void srv_cmd_slowlog_reset(srv_conn *c)
{
    srv_slowlog_reset();
    srv_reply_ok(c);
}

void srv_cmd_slowlog_help(srv_conn *c)
{
    static const char *const help[] = {
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 "
        "mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP "
        "and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}

/* ---- LATENCY ---- */

void srv_cmd_latency_latest(srv_conn *c)
{
    static srv_latency_event e;
    size_t mark = srv_reply_defer(c);
    int n = 0;

    while (srv_latency_event_at(n, &e)) {
        srv_reply_array(c, 4);
        srv_reply_bulk_cstr(c, e.name);
        srv_reply_int(c, (long long)e.latest_s);
        srv_reply_int(c, (long long)e.latest_ms);
        srv_reply_int(c, (long long)e.max_ms);
        n++;
    }
    srv_reply_defer_array(c, mark, n);
}

/* The event named by argv[2]; 1 if found. */
static int find_event(srv_conn *c, srv_latency_event *e)
{
    for (int i = 0; srv_latency_event_at(i, e); i++)
        if (strlen(e->name) == c->argv[2].len &&
            strncasecmp(e->name, c->argv[2].ptr, c->argv[2].len) == 0)
            return 1;
    return 0;
}

void srv_cmd_latency_history(srv_conn *c)
{
    static srv_latency_event e;

    if (!find_event(c, &e)) {
        srv_reply_array(c, 0);
        return;
    }
    srv_reply_array(c, e.nsamples);
    for (int i = 0; i < e.nsamples; i++) {
        srv_reply_array(c, 2);
        srv_reply_int(c, (long long)e.samples[i].time_s);
        srv_reply_int(c, (long long)e.samples[i].latency_ms);
    }
}

void srv_cmd_latency_reset(srv_conn *c)
{
    const char *names[SRV_LATENCY_EVENTS];
    size_t lens[SRV_LATENCY_EVENTS];
    int n = 0, total = 0;

    if (c->argc == 2) {
        srv_reply_int(c, srv_latency_reset(NULL, NULL, 0));
        return;
    }
    /* In batches: any number of names, each event reset once. */
    for (int i = 2; i < c->argc; i++) {
        names[n] = c->argv[i].ptr;
        lens[n++] = c->argv[i].len;
        if (n == SRV_LATENCY_EVENTS || i == c->argc - 1) {
            total += srv_latency_reset(names, lens, n);
            n = 0;
        }
    }
    srv_reply_int(c, total);
}

/*
 * LATENCY GRAPH event: the samples as columns of stars, oldest left, the
 * highest at the top row; under it how long ago each was (s, m, h), as
 * Redis's graph reads (the drawing is larder's).
 */
void srv_cmd_latency_graph(srv_conn *c)
{
    static srv_latency_event e;
    srv_buf b = { NULL, 0, 0 };
    char line[LINE_MAX_];
    uint32_t lo = UINT32_MAX, hi = 0;
    int64_t now = srv_util_mstime() / 1000;
    int cols;

    if (!find_event(c, &e) || e.nsamples == 0) {
        srv_reply_errorf(c, "ERR No samples available for event '%.*s'",
                         (int)c->argv[2].len, c->argv[2].ptr);
        return;
    }
    cols = e.nsamples < GRAPH_COLS ? e.nsamples : GRAPH_COLS;
    for (int i = e.nsamples - cols; i < e.nsamples; i++) {
        lo = e.samples[i].latency_ms < lo ? e.samples[i].latency_ms : lo;
        hi = e.samples[i].latency_ms > hi ? e.samples[i].latency_ms : hi;
    }
    int n = snprintf(line, sizeof line,
                     "%s - high %u ms, low %u ms (all time high %u ms)\n",
                     e.name, hi, lo, e.max_ms);
    srv_buf_append(&b, line, (size_t)n);
    memset(line, '-', (size_t)cols);
    line[cols] = '\n';
    srv_buf_append(&b, line, (size_t)cols + 1);
    for (int row = GRAPH_ROWS; row >= 1; row--) {
        for (int k = 0; k < cols; k++) {
            uint32_t v = e.samples[e.nsamples - cols + k].latency_ms;
            uint32_t span = hi > lo ? hi - lo : 1;
            int h = hi > lo ? 1 + (int)((v - lo) * (GRAPH_ROWS - 1) / span)
                            : GRAPH_ROWS;
            line[k] = h >= row ? (h == row ? '*' : '|') : ' ';
        }
        line[cols] = '\n';
        srv_buf_append(&b, line, (size_t)cols + 1);
    }
    for (int k = 0; k < cols; k++) {
        int64_t ago = now - e.samples[e.nsamples - cols + k].time_s;
        line[k] = ago < 60 ? 's' : ago < 3600 ? 'm' : 'h';
    }
    line[cols] = '\n';
    srv_buf_append(&b, line, (size_t)cols + 1);
    srv_reply_verbatim(c, b.data, b.len);
    srv_buf_free(&b);
}

/* LATENCY DOCTOR: what the monitor saw, and what to look at. */
void srv_cmd_latency_doctor(srv_conn *c)
{
    static srv_latency_event e;
    char text[DOCTOR_MAX];
    size_t n = 0;
    int events = 0;

    if (srv_her.cfg->latency_monitor_threshold == 0)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "The latency monitor is off "
                              "(latency-monitor-threshold 0): set it to a "
                              "number of milliseconds to record the events "
                              "that take at least that long.\n");
    for (int i = 0; srv_latency_event_at(i, &e) && n < sizeof text; i++) {
        uint64_t sum = 0;
        for (int k = 0; k < e.nsamples; k++)
            sum += e.samples[k].latency_ms;
        n += (size_t)snprintf(
            text + n, sizeof text - n,
            "%d. %s: %d latency spikes (average %llu ms, mean deviation "
            "aside), worst %u ms.\n",
            ++events, e.name, e.nsamples,
            (unsigned long long)(e.nsamples ? sum / (unsigned)e.nsamples : 0),
            e.max_ms);
    }
    if (events == 0 && n < sizeof text)
        n += (size_t)snprintf(text + n, sizeof text - n,
                              "No latency spike was recorded since the "
                              "server started or the monitor was last "
                              "reset.\n");
    else if (n < sizeof text)
        n += (size_t)snprintf(
            text + n, sizeof text - n,
            "\nWhat to look at: SLOWLOG GET for the commands that took "
            "longest; INFO commandstats and LATENCY HISTOGRAM for which "
            "commands are slow as a rule; a command over a large "
            "collection (KEYS, SMEMBERS, HGETALL) blocks its worker for "
            "as long as it runs; under sync always every write waits for "
            "a flush to disk.\n");
    srv_reply_verbatim(c, text, n < sizeof text ? n : sizeof text - 1);
}

/* One command's histogram: its calls, and the calls at or under each
 * power of two microseconds, cumulative (the steps where it grows). */
static void histogram_one(srv_conn *c, const srv_command *cmd,
                          const srv_cmdstat_sum *s)
{
    uint64_t bound = 1, seen = 0, last = 0;
    long long steps = 0;
    size_t mark;
    unsigned i = 0;

    srv_reply_bulk_cstr(c, cmd->name);
    srv_reply_map(c, 2);
    srv_reply_bulk_cstr(c, "calls");
    srv_reply_int(c, (long long)s->calls);
    srv_reply_bulk_cstr(c, "histogram_usec");
    mark = srv_reply_defer(c);
    while (seen < s->calls && i < SRV_HIST_BUCKETS) {
        /* Count the buckets that end at or before bound us. */
        while (i < SRV_HIST_BUCKETS &&
               srv_cmdstats_bucket_ns(i) <= bound * NS_PER_US)
            seen += s->hist[i++];
        if (seen > last) {
            srv_reply_int(c, (long long)bound);
            srv_reply_int(c, (long long)seen);
            steps++;
            last = seen;
        }
        bound *= 2;
    }
    if (c->resp == 3) {
        char head[SRV_REPLY_DEFER_MAX];
        int n = snprintf(head, sizeof head, "%%%lld\r\n", steps);
        srv_reply_defer_fill(c, mark, head, (size_t)n);
    } else {
        srv_reply_defer_array(c, mark, steps * 2);
    }
}

void srv_cmd_latency_histogram(srv_conn *c)
{
    static srv_cmdstat_sum s;
    int n;
    const srv_command *table = srv_cmd_table(&n);
    size_t mark = srv_reply_defer(c);
    long long count = 0;

    for (int i = 0; i < n; i++) {
        const srv_command *cmd = &table[i];
        int asked = c->argc == 2;
        for (int j = 2; j < c->argc && !asked; j++)
            asked = srv_cmd_lookup_name(c->argv[j].ptr, c->argv[j].len) == cmd;
        if (!asked)
            continue;
        srv_cmdstats_sum(srv_cmdstats_region(), (unsigned)i, &s);
        if (!s.calls)
            continue;
        histogram_one(c, cmd, &s);
        count++;
    }
    if (c->resp == 3) {
        char head[SRV_REPLY_DEFER_MAX];
        int k = snprintf(head, sizeof head, "%%%lld\r\n", count);
        srv_reply_defer_fill(c, mark, head, (size_t)k);
    } else {
        srv_reply_defer_array(c, mark, count * 2);
    }
}

void srv_cmd_latency_help(srv_conn *c)
{
    static const char *const help[] = {
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of "
        "a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    };

    srv_reply_lines(c, help, sizeof help / sizeof help[0]);
}
