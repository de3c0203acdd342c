/*
 * srv_reply.c - RESP reply encoding into the output buffer.
 */
#include "server/srv_reply.h"
#include "server/srv_cmdstats.h"
#include "server/srv_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_MAX (1 + SRV_LLSTR_SIZE + 2)
#define ERROR_MAX 1024
#define VERBATIM_TAG "txt:"
#define VERBATIM_TAG_LEN 4

const char SRV_ERR_SYNTAX[] = "ERR syntax error";
const char SRV_ERR_NOT_INT[] = "ERR value is not an integer or out of range";
const char SRV_ERR_NOT_FLOAT[] = "ERR value is not a valid float";
const char SRV_ERR_WRONGTYPE[] =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
const char SRV_ERR_NO_KEY[] = "ERR no such key";
const char SRV_ERR_OVERFLOW[] = "ERR increment or decrement would overflow";

/* n more bytes would take c's output past its limit: drop c. */
static int over_limit(srv_conn *c, size_t n)
{
    if (c->out_limit == 0 || c->out.len + n <= c->out_limit)
        return 0;
    c->flags |= SRV_CONN_CLOSE_ASAP | SRV_CONN_OVER_LIMIT;
    return 1;
}

void srv_reply_raw(srv_conn *c, const void *p, size_t n)
{
    if (c->flags & SRV_CONN_CLOSE_ASAP || over_limit(c, n))
        return;
    if (srv_buf_append(&c->out, p, n))
        c->flags |= SRV_CONN_CLOSE_ASAP;
}

int srv_reply_room_or_drop(srv_conn *c, unsigned long long n, size_t each)
{
    size_t room;

    if (c->out_limit == 0)
        return 0;
    room = c->out.len < c->out_limit ? c->out_limit - c->out.len : 0;
    if (n <= room / each)
        return 0;
    c->flags |= SRV_CONN_CLOSE_ASAP | SRV_CONN_OVER_LIMIT;
    return -1;
}

/* "<t><n>\r\n" */
static void header(srv_conn *c, char t, long long n)
{
    char buf[HEADER_MAX];

    buf[0] = t;
    int len = 1 + srv_util_ll2str(buf + 1, n);
    buf[len++] = '\r';
    buf[len++] = '\n';
    srv_reply_raw(c, buf, (size_t)len);
}

void srv_reply_ok(srv_conn *c) { srv_reply_raw(c, "+OK\r\n", 5); }

void srv_reply_simple(srv_conn *c, const char *s)
{
    srv_reply_raw(c, "+", 1);
    srv_reply_raw(c, s, strlen(s));
    srv_reply_raw(c, "\r\n", 2);
}

void srv_reply_lines(srv_conn *c, const char *const *lines, size_t n)
{
    srv_reply_array(c, (long long)n);
    for (size_t i = 0; i < n; i++)
        srv_reply_simple(c, lines[i]);
}

void srv_reply_error(srv_conn *c, const char *msg)
{
    size_t n = strlen(msg);

    srv_cmdstats_error(msg); /* errorstats, and the command's failed_calls */
    srv_reply_raw(c, "-", 1);
    /* An error line must not break the protocol: no CR/LF inside (each
     * becomes a space; the runs between them go in one append). */
    for (size_t i = 0; i < n;) {
        size_t run = strcspn(msg + i, "\r\n");
        srv_reply_raw(c, msg + i, run);
        i += run;
        if (i < n) {
            srv_reply_raw(c, " ", 1);
            i++;
        }
    }
    srv_reply_raw(c, "\r\n", 2);
}

/* Errors quote names of any length whole, as Redis's do (a group name of
 * 100,000 bytes in NOGROUP): a long one is formatted on the heap. */
void srv_reply_errorf(srv_conn *c, const char *fmt, ...)
{
    char buf[ERROR_MAX], *big;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n < sizeof buf || !(big = malloc((size_t)n + 1))) {
        srv_reply_error(c, buf);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    srv_reply_error(c, big);
    free(big);
}

void srv_reply_int(srv_conn *c, long long v) { header(c, ':', v); }

void srv_reply_bulk(srv_conn *c, const void *p, size_t n)
{
    if (c->flags & SRV_CONN_CLOSE_ASAP || over_limit(c, n))
        return;
    if (srv_buf_reserve(&c->out, n + HEADER_MAX + 2)) {
        c->flags |= SRV_CONN_CLOSE_ASAP;
        return;
    }
    header(c, '$', (long long)n);
    srv_reply_raw(c, p, n);
    srv_reply_raw(c, "\r\n", 2);
}

void srv_reply_bulk_head(srv_conn *c, size_t n)
{
    if (srv_buf_reserve(&c->out, n + HEADER_MAX + 2)) {
        c->flags |= SRV_CONN_CLOSE_ASAP;
        return;
    }
    header(c, '$', (long long)n);
}

void srv_reply_bulk_cstr(srv_conn *c, const char *s)
{
    srv_reply_bulk(c, s, strlen(s));
}

void srv_reply_bulk_ll(srv_conn *c, long long v)
{
    char buf[SRV_LLSTR_SIZE];
    int n = srv_util_ll2str(buf, v);

    srv_reply_bulk(c, buf, (size_t)n);
}

void srv_reply_null(srv_conn *c)
{
    if (c->resp == 3)
        srv_reply_raw(c, "_\r\n", 3);
    else
        srv_reply_raw(c, "$-1\r\n", 5);
}

void srv_reply_null_array(srv_conn *c)
{
    if (c->resp == 3)
        srv_reply_raw(c, "_\r\n", 3);
    else
        srv_reply_raw(c, "*-1\r\n", 5);
}

void srv_reply_array(srv_conn *c, long long n) { header(c, '*', n); }

void srv_reply_map(srv_conn *c, long long n)
{
    if (c->resp == 3)
        header(c, '%', n);
    else
        header(c, '*', n * 2);
}

void srv_reply_set(srv_conn *c, long long n)
{
    header(c, c->resp == 3 ? '~' : '*', n);
}

void srv_reply_double(srv_conn *c, double d)
{
    char buf[SRV_DSTR_SIZE];
    int n = srv_util_d2str(buf, sizeof buf, d);

    if (c->resp == 3) {
        srv_reply_raw(c, ",", 1);
        srv_reply_raw(c, buf, (size_t)n);
        srv_reply_raw(c, "\r\n", 2);
    } else {
        srv_reply_bulk(c, buf, (size_t)n);
    }
}

void srv_reply_verbatim(srv_conn *c, const char *p, size_t n)
{
    if (c->resp != 3) {
        srv_reply_bulk(c, p, n);
        return;
    }
    header(c, '=', (long long)(n + VERBATIM_TAG_LEN));
    srv_reply_raw(c, VERBATIM_TAG, VERBATIM_TAG_LEN);
    srv_reply_raw(c, p, n);
    srv_reply_raw(c, "\r\n", 2);
}

size_t srv_reply_defer(srv_conn *c)
{
    size_t mark = c->out.len;
    char pad[SRV_REPLY_DEFER_MAX];

    memset(pad, 0, sizeof pad);
    srv_reply_raw(c, pad, sizeof pad);
    return mark;
}

void srv_reply_defer_fill(srv_conn *c, size_t mark, const char *prefix,
                          size_t n)
{
    char *at = c->out.data + mark;

    if (c->flags & SRV_CONN_CLOSE_ASAP)
        return;
    memcpy(at, prefix, n);
    memmove(at + n, at + SRV_REPLY_DEFER_MAX,
            c->out.len - mark - SRV_REPLY_DEFER_MAX);
    c->out.len -= SRV_REPLY_DEFER_MAX - n;
}

void srv_reply_defer_array(srv_conn *c, size_t mark, long long n)
{
    char buf[HEADER_MAX];
    size_t len;

    buf[0] = '*';
    len = 1 + (size_t)srv_util_ll2str(buf + 1, n);
    buf[len++] = '\r';
    buf[len++] = '\n';
    srv_reply_defer_fill(c, mark, buf, len);
}
