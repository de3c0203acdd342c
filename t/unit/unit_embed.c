/*
 * unit_embed.c - the embedded-worker fixture and helpers (see
 * unit_embed.h).
 */
#include "t/unit/unit_embed.h"
#include "server/srv_buf.h"
#include "t/unit/unit_tmp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOT_SIZE 1024
#define DIR_SIZE 2048
#define SHOW_MAX 4096 /* escaped replies shown in a failure message */

static char root[ROOT_SIZE];
static char dir[DIR_SIZE];

static void root_setup(void)
{
    unit_tmp_make(root, sizeof root, program_invocation_short_name);
}

static void root_teardown(void) { unit_tmp_remove(root); }

static void worker_setup(void)
{
    snprintf(dir, sizeof dir, "%s/worker.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(srv_embed_open(dir), 0);
}

static void worker_teardown(void) { srv_embed_close(); }

void unit_embed_fixture(TCase *tc)
{
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, worker_setup, worker_teardown);
}

srv_conn *unit_embed_conn(void)
{
    srv_conn *c = srv_embed_conn();

    ck_assert_ptr_nonnull(c);
    return c;
}

void unit_embed_feed(srv_conn *c, const char *data, size_t len)
{
    ck_assert_msg(srv_embed_feed(c, data, len) == 0,
                  "the connection was closed");
}

/* Append "<t><n>\r\n" to b. */
static void put_head(srv_buf *b, char t, size_t n)
{
    char head[32];
    int len = snprintf(head, sizeof head, "%c%zu\r\n", t, n);

    ck_assert_int_eq(srv_buf_append(b, head, (size_t)len), 0);
}

void unit_embed_send(srv_conn *c, const char *arg, ...)
{
    srv_buf b = { 0 };
    va_list ap;
    size_t argc = 0;

    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *))
        argc++;
    va_end(ap);
    put_head(&b, '*', argc);
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        put_head(&b, '$', strlen(a));
        ck_assert_int_eq(srv_buf_append(&b, a, strlen(a)), 0);
        ck_assert_int_eq(srv_buf_append(&b, "\r\n", 2), 0);
    }
    va_end(ap);
    unit_embed_feed(c, b.data, b.len);
    srv_buf_free(&b);
}

/* p[0..n) with CR, LF and other unprintable bytes escaped. */
static const char *show(const char *p, size_t n, char *buf, size_t size)
{
    size_t o = 0;

    for (size_t i = 0; i < n && o + 5 < size; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\r')
            o += (size_t)snprintf(buf + o, size - o, "\\r");
        else if (ch == '\n')
            o += (size_t)snprintf(buf + o, size - o, "\\n");
        else if (ch < ' ' || ch > '~')
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    buf[o] = '\0';
    return buf;
}

void unit_embed_expect(srv_conn *c, const char *want)
{
    static char got_s[SHOW_MAX], want_s[SHOW_MAX];
    size_t n = strlen(want);

    ck_assert_msg(c->out.len == n &&
                      (n == 0 || memcmp(c->out.data, want, n) == 0),
                  "replies\n  got:  %s\n  want: %s",
                  show(c->out.data, c->out.len, got_s, sizeof got_s),
                  show(want, n, want_s, sizeof want_s));
    c->out.len = 0;
}

void unit_embed_expect_prefix(srv_conn *c, const char *prefix)
{
    static char got_s[SHOW_MAX], want_s[SHOW_MAX];
    size_t n = strlen(prefix);

    ck_assert_msg(c->out.len >= n &&
                      (n == 0 || memcmp(c->out.data, prefix, n) == 0),
                  "replies\n  got:         %s\n  want prefix: %s",
                  show(c->out.data, c->out.len, got_s, sizeof got_s),
                  show(prefix, n, want_s, sizeof want_s));
    c->out.len = 0;
}
