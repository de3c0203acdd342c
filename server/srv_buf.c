/*
 * srv_buf.c - growable byte buffers.
 */
#include "server/srv_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 256

int srv_buf_reserve(srv_buf *b, size_t extra)
{
    size_t cap;
    char *p;

    if (b->cap - b->len >= extra)
        return 0;
    cap = b->cap ? b->cap : BUF_MIN_CAP;
    while (cap - b->len < extra) {
        if (cap > (size_t)-1 / 2)
            return ENOMEM;
        cap *= 2;
    }
    if (!(p = realloc(b->data, cap)))
        return ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int srv_buf_append(srv_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (srv_buf_reserve(b, n))
        return ENOMEM;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void srv_buf_consume(srv_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

void srv_buf_trim(srv_buf *b, size_t keep)
{
    if (b->len == 0 && b->cap > keep) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

void srv_buf_free(srv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
