/*
 * srv_buf.h - a growable byte buffer (connection input and output).
 * Grows by doubling, never shrinks below its initial size on reuse.
 */
#ifndef SRV_BUF_H
#define SRV_BUF_H

#include <stddef.h>

typedef struct srv_buf {
    char *data;
    size_t len;
    size_t cap;
} srv_buf;

/* Make room for `extra` more bytes after len. 0 or ENOMEM. */
int srv_buf_reserve(srv_buf *b, size_t extra);

/* Append `n` bytes. 0 or ENOMEM (the buffer is then unchanged). */
int srv_buf_append(srv_buf *b, const void *p, size_t n);

/* Drop the first `n` bytes, moving the rest to the front. */
void srv_buf_consume(srv_buf *b, size_t n);

/* Release the memory of a buffer above `keep` bytes of capacity. */
void srv_buf_trim(srv_buf *b, size_t keep);

void srv_buf_free(srv_buf *b);

#endif
