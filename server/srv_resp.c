/*
 * srv_resp.c - incremental RESP request parser and inline splitter.
 */
#include "server/srv_resp.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define ARGV_INITIAL 16
#define CRLF_LEN 2
#define HEX_BASE 16

void srv_resp_parser_init(srv_parser *p, long long max_bulk)
{
    memset(p, 0, sizeof *p);
    p->max_bulk = max_bulk;
    p->bulk = -1;
}

void srv_resp_parser_fini(srv_parser *p)
{
    free(p->off);
    free(p->argv);
    free(p->inl);
    memset(p, 0, sizeof *p);
}

void srv_resp_parser_reset(srv_parser *p)
{
    p->kind = 0;
    p->left = 0;
    p->bulk = -1;
    p->cur = 0;
    p->argc = 0;
    p->consumed = 0;
    p->need = 0;
    p->error = NULL;
}

static int grow_argv(srv_parser *p, long long want)
{
    if (want <= p->argv_cap)
        return 0;
    long long cap = p->argv_cap ? p->argv_cap : ARGV_INITIAL;
    while (cap < want)
        cap *= 2;
    size_t *off = realloc(p->off, (size_t)cap * sizeof *off);
    if (!off)
        return -1;
    p->off = off;
    srv_slice *argv = realloc(p->argv, (size_t)cap * sizeof *argv);
    if (!argv)
        return -1;
    p->argv = argv;
    p->argv_cap = (int)cap;
    return 0;
}

/*
 * Read a "<c>NUMBER\r\n" line at buf[p->cur]. Returns 1 with *v and cur
 * moved past it, 0 if incomplete, -1 if the line is too long.
 */
static int read_number_line(srv_parser *p, const char *buf, size_t len,
                            long long *v, int *ok)
{
    const char *start = buf + p->cur;
    size_t avail = len - p->cur;
    const char *cr = memchr(start, '\r', avail);

    if (!cr || (size_t)(cr - start) + 1 >= avail) {
        if (avail > SRV_PROTO_INLINE_MAX)
            return -1;
        return 0;
    }
    *ok = srv_util_str2ll(start + 1, (size_t)(cr - start - 1), v);
    p->cur = (size_t)(cr - buf) + CRLF_LEN;
    return 1;
}

static int parse_multibulk(srv_parser *p, char *buf, size_t len)
{
    long long v;
    int ok, rc;

    if (p->kind == 0) {
        rc = read_number_line(p, buf, len, &v, &ok);
        if (rc < 0) {
            p->error = "Protocol error: too big mbulk count string";
            return SRV_PARSE_ERROR;
        }
        if (rc == 0)
            return SRV_PARSE_MORE;
        if (!ok || v > SRV_PROTO_MAX_ARGS) {
            p->error = "Protocol error: invalid multibulk length";
            return SRV_PARSE_ERROR;
        }
        p->kind = '*';
        p->left = v > 0 ? v : 0;
        p->argc = 0;
        /* Grow gradually: a huge count costs memory only as args arrive. */
        if (grow_argv(p, p->left < ARGV_INITIAL * 64 ? p->left
                                                     : ARGV_INITIAL * 64))
            return SRV_PARSE_NOMEM;
    }
    while (p->left > 0) {
        if (p->bulk < 0) {
            if (p->cur >= len)
                return SRV_PARSE_MORE;
            if (buf[p->cur] != '$') {
                static char msg[] = "Protocol error: expected '$', got ' '";
                msg[sizeof msg - 3] = buf[p->cur];
                p->error = msg;
                return SRV_PARSE_ERROR;
            }
            rc = read_number_line(p, buf, len, &v, &ok);
            if (rc < 0) {
                p->error = "Protocol error: too big bulk count string";
                return SRV_PARSE_ERROR;
            }
            if (rc == 0)
                return SRV_PARSE_MORE;
            if (!ok || v < 0 || v > p->max_bulk) {
                p->error = "Protocol error: invalid bulk length";
                return SRV_PARSE_ERROR;
            }
            p->bulk = v;
        }
        if (len - p->cur < (size_t)p->bulk + CRLF_LEN) {
            p->need = p->cur + (size_t)p->bulk + CRLF_LEN;
            return SRV_PARSE_MORE;
        }
        if (p->argc == p->argv_cap && grow_argv(p, p->argc + 1))
            return SRV_PARSE_NOMEM;
        p->off[p->argc] = p->cur;
        p->argv[p->argc].len = (size_t)p->bulk;
        p->argc++;
        p->cur += (size_t)p->bulk + CRLF_LEN;
        p->bulk = -1;
        p->left--;
        p->need = 0;
    }
    for (int i = 0; i < p->argc; i++)
        p->argv[i].ptr = buf + p->off[i];
    p->consumed = p->cur;
    return SRV_PARSE_DONE;
}

static int parse_inline(srv_parser *p, char *buf, size_t len)
{
    char *nl = memchr(buf, '\n', len);
    size_t linelen;
    int argc;

    if (!nl) {
        if (len > SRV_PROTO_INLINE_MAX) {
            p->error = "Protocol error: too big inline request";
            return SRV_PARSE_ERROR;
        }
        return SRV_PARSE_MORE;
    }
    linelen = (size_t)(nl - buf);
    p->consumed = linelen + 1;
    if (linelen && buf[linelen - 1] == '\r')
        linelen--;
    if (linelen + 1 > p->inl_cap) {
        char *n = realloc(p->inl, linelen + 1);
        if (!n)
            return SRV_PARSE_NOMEM;
        p->inl = n;
        p->inl_cap = linelen + 1;
    }
    if (grow_argv(p, (long long)(linelen / 2 + 1)))
        return SRV_PARSE_NOMEM;
    argc = srv_resp_split_args(buf, linelen, p->inl, p->argv, p->argv_cap);
    if (argc < 0) {
        p->error = "Protocol error: unbalanced quotes in request";
        return SRV_PARSE_ERROR;
    }
    p->argc = argc;
    p->kind = 'i';
    return SRV_PARSE_DONE;
}

int srv_resp_parse(srv_parser *p, char *buf, size_t len)
{
    if (len == 0)
        return SRV_PARSE_MORE;
    if (p->kind == '*' || (p->kind == 0 && buf[0] == '*'))
        return parse_multibulk(p, buf, len);
    return parse_inline(p, buf, len);
}

/* "<lead>DIGITS\r\n" at *p (before end): 1 with *v, *p past it; else 0. */
static int peek_number(const char **p, const char *end, char lead, long long *v)
{
    const char *q = *p;
    long long n = 0;

    if (q >= end || *q++ != lead || q >= end || !isdigit((unsigned char)*q))
        return 0;
    while (q < end && isdigit((unsigned char)*q)) {
        if (n > SRV_PROTO_MAX_ARGS)
            return 0; /* absurd: leave it to srv_resp_parse */
        n = n * 10 + (*q++ - '0');
    }
    if (end - q < CRLF_LEN || q[0] != '\r' || q[1] != '\n')
        return 0;
    *p = q + CRLF_LEN;
    *v = n;
    return 1;
}

size_t srv_resp_peek(const char *buf, size_t len, srv_slice *argv, int max,
                     long long *argc)
{
    const char *p = buf, *end = buf + len;
    long long n, i, bulk;

    if (!peek_number(&p, end, '*', &n) || n < 1)
        return 0;
    for (i = 0; i < n; i++) {
        if (!peek_number(&p, end, '$', &bulk) ||
            (size_t)(end - p) < (size_t)bulk + CRLF_LEN || p[bulk] != '\r' ||
            p[bulk + 1] != '\n')
            return 0;
        if (i < max) {
            argv[i].ptr = (char *)p;
            argv[i].len = (size_t)bulk;
        }
        p += bulk + CRLF_LEN;
    }
    *argc = n;
    return (size_t)(p - buf);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

/* The escape after a backslash inside double quotes. */
static char unescape(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'a': return '\a';
    default: return c;
    }
}

int srv_resp_split_args(const char *line, size_t len, char *out,
                        srv_slice *argv, int maxargs)
{
    size_t i = 0, o = 0;
    int argc = 0;

    for (;;) {
        while (i < len && isspace((unsigned char)line[i]))
            i++;
        if (i >= len)
            return argc;
        if (argc == maxargs)
            return SRV_SPLIT_ETOOMANY;
        char *start = out + o;
        char q = 0; /* the open quote, or 0 outside quotes */
        for (;;) {
            if (i >= len) {
                if (q)
                    return SRV_SPLIT_EQUOTES;
                break;
            }
            char c = line[i];
            if (!q) {
                if (isspace((unsigned char)c))
                    break;
                if (c == '"' || c == '\'') {
                    q = c; /* quotes may start mid-word, as Redis */
                    i++;
                    continue;
                }
                out[o++] = c;
                i++;
            } else if (q == '"' && c == '\\' && i + 3 < len &&
                       line[i + 1] == 'x' &&
                       isxdigit((unsigned char)line[i + 2]) &&
                       isxdigit((unsigned char)line[i + 3])) {
                out[o++] = (char)(hexval(line[i + 2]) * HEX_BASE +
                                  hexval(line[i + 3]));
                i += 4;
            } else if (q == '"' && c == '\\' && i + 1 < len) {
                out[o++] = unescape(line[i + 1]);
                i += 2;
            } else if (q == '\'' && c == '\\' && i + 1 < len &&
                       line[i + 1] == '\'') {
                out[o++] = '\'';
                i += 2;
            } else if (c == q) {
                /* A closing quote must end the argument. */
                if (i + 1 < len && !isspace((unsigned char)line[i + 1]))
                    return SRV_SPLIT_EQUOTES;
                i++;
                break;
            } else {
                out[o++] = c;
                i++;
            }
        }
        argv[argc].ptr = start;
        argv[argc].len = (size_t)(out + o - start);
        argc++;
        out[o++] = '\0';
    }
}
