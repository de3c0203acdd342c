/*
 * srv_bproto.c - encoding and decoding of worker <-> broker frames (the
 * layout is in srv_bproto.h). Numbers are little-endian whatever the host.
 */
#include "server/srv_bproto.h"

#include <errno.h>
#include <string.h>

#define OFF_MAGIC0 0
#define OFF_MAGIC1 1
#define OFF_TYPE 2
#define OFF_KIND 3
#define OFF_RESERVED 4
#define RESERVED_LEN 4
#define OFF_ARG 8
#define OFF_LEN 16
#define U64_BYTES 8

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < U64_BYTES; i++, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = U64_BYTES - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* Kinds a frame type may carry. */
static int kind_ok(int type, int kind)
{
    switch (type) {
    case SRV_BP_COUNT: return kind < SRV_BP_NKINDS;
    case SRV_BP_PUBLISH:
    case SRV_BP_DELIVER:
    case SRV_BP_NUMSUB:
    case SRV_BP_CHANNELS:
    case SRV_BP_R_NUMSUB:
    case SRV_BP_R_CHANNELS:
        return kind == SRV_BP_CHANNEL || kind == SRV_BP_SHARD;
    case SRV_BP_SERVED:
    case SRV_BP_COMMITTED: return kind == SRV_BP_STILL || kind == SRV_BP_DONE;
    case SRV_BP_WAIT: return kind == 0 || kind == SRV_BP_GROUP;
    case SRV_BP_ASK:
    case SRV_BP_QUERY:
    case SRV_BP_REPLY: return kind < SRV_BP_NQUERIES;
    case SRV_BP_INTEREST: return kind < SRV_BP_NINTERESTS;
    default: return kind == 0;
    }
}

/* What the header says must fit the type (a length within the body ...). */
static int arg_ok(int type, uint64_t arg, uint64_t len)
{
    switch (type) {
    case SRV_BP_PUBLISH:
    case SRV_BP_DELIVER: return arg <= len;
    case SRV_BP_CHANNELS: return arg <= 1 && (arg == 1 || len == 0);
    case SRV_BP_HELLO:
    case SRV_BP_WELCOME:
    case SRV_BP_PUBCOUNT:
    case SRV_BP_R_NUMPAT:
    case SRV_BP_NUMPAT:
    case SRV_BP_UNWAIT:
    case SRV_BP_INTEREST: return len == 0;
    default: return 1;
    }
}

int srv_bproto_decode(const char *buf, size_t len, uint64_t max_body,
                      srv_bframe *f, size_t *size)
{
    const unsigned char *h = (const unsigned char *)buf;
    uint64_t body;

    /* Check what has arrived of the header, so garbage fails early. */
    if ((len > OFF_MAGIC0 && h[OFF_MAGIC0] != SRV_BP_MAGIC0) ||
        (len > OFF_MAGIC1 && h[OFF_MAGIC1] != SRV_BP_MAGIC1))
        return SRV_BP_EMAGIC;
    if (len > OFF_TYPE && (h[OFF_TYPE] == 0 || h[OFF_TYPE] >= SRV_BP_NTYPES))
        return SRV_BP_ETYPE;
    if (len > OFF_KIND && !kind_ok(h[OFF_TYPE], h[OFF_KIND]))
        return SRV_BP_EKIND;
    for (size_t i = OFF_RESERVED; i < OFF_RESERVED + RESERVED_LEN && i < len;
         i++)
        if (h[i])
            return SRV_BP_ERESERVED;
    if (len < SRV_BP_HDR_SIZE) {
        *size = SRV_BP_HDR_SIZE;
        return SRV_BP_MORE;
    }
    body = get_le64(h + OFF_LEN);
    if (body > max_body || body > (uint64_t)((size_t)-1 - SRV_BP_HDR_SIZE))
        return SRV_BP_ETOOBIG;
    f->type = h[OFF_TYPE];
    f->kind = h[OFF_KIND];
    f->arg = get_le64(h + OFF_ARG);
    f->len = body;
    if (!arg_ok(f->type, f->arg, f->len))
        return SRV_BP_EARG;
    *size = SRV_BP_HDR_SIZE + (size_t)body;
    if (len < *size)
        return SRV_BP_MORE;
    f->body = buf + SRV_BP_HDR_SIZE;
    return 0;
}

const char *srv_bproto_strerror(int code)
{
    switch (code) {
    case 0: return "ok";
    case SRV_BP_MORE: return "incomplete frame";
    case SRV_BP_EMAGIC: return "bad magic";
    case SRV_BP_ETYPE: return "unknown frame type";
    case SRV_BP_EKIND: return "bad kind for the frame type";
    case SRV_BP_ERESERVED: return "reserved bytes not zero";
    case SRV_BP_ETOOBIG: return "frame body too big";
    case SRV_BP_EARG: return "bad argument for the frame type";
    default: return "unknown error";
    }
}

uint64_t srv_bproto_max_body(long long max_bulk)
{
    uint64_t b = max_bulk > 0 ? (uint64_t)max_bulk : 0;

    if (b > (UINT64_MAX - SRV_BP_BODY_SLACK) / 2)
        return UINT64_MAX;
    return 2 * b + SRV_BP_BODY_SLACK;
}

static void fill_header(unsigned char *h, int type, int kind, uint64_t arg,
                        uint64_t len)
{
    h[OFF_MAGIC0] = SRV_BP_MAGIC0;
    h[OFF_MAGIC1] = SRV_BP_MAGIC1;
    h[OFF_TYPE] = (unsigned char)type;
    h[OFF_KIND] = (unsigned char)kind;
    memset(h + OFF_RESERVED, 0, RESERVED_LEN);
    put_le64(h + OFF_ARG, arg);
    put_le64(h + OFF_LEN, len);
}

int srv_bproto_put(srv_buf *b, int type, int kind, uint64_t arg, const void *p1,
                   size_t n1, const void *p2, size_t n2)
{
    unsigned char *h;

    if (n1 > (size_t)-1 - n2 || n1 + n2 > (size_t)-1 - SRV_BP_HDR_SIZE ||
        srv_buf_reserve(b, SRV_BP_HDR_SIZE + n1 + n2))
        return ENOMEM;
    h = (unsigned char *)b->data + b->len;
    fill_header(h, type, kind, arg, (uint64_t)(n1 + n2));
    b->len += SRV_BP_HDR_SIZE;
    if (n1)
        memcpy(b->data + b->len, p1, n1);
    b->len += n1;
    if (n2)
        memcpy(b->data + b->len, p2, n2);
    b->len += n2;
    return 0;
}

size_t srv_bproto_begin(srv_buf *b, int type, int kind, uint64_t arg)
{
    size_t off = b->len;

    if (srv_buf_reserve(b, SRV_BP_HDR_SIZE))
        return (size_t)-1;
    fill_header((unsigned char *)b->data + off, type, kind, arg, 0);
    b->len += SRV_BP_HDR_SIZE;
    return off;
}

int srv_bproto_put_u64(srv_buf *b, uint64_t v)
{
    unsigned char n[U64_BYTES];

    put_le64(n, v);
    return srv_buf_append(b, n, sizeof n);
}

int srv_bproto_put_field(srv_buf *b, const void *p, size_t n)
{
    if (n > (size_t)-1 - SRV_BP_FIELD_HDR ||
        srv_buf_reserve(b, SRV_BP_FIELD_HDR + n))
        return ENOMEM;
    srv_bproto_put_u64(b, (uint64_t)n);
    return srv_buf_append(b, p, n);
}

void srv_bproto_end(srv_buf *b, size_t offset)
{
    put_le64((unsigned char *)b->data + offset + OFF_LEN,
             (uint64_t)(b->len - offset - SRV_BP_HDR_SIZE));
}

void srv_bproto_set_arg(srv_buf *b, size_t offset, uint64_t arg)
{
    put_le64((unsigned char *)b->data + offset + OFF_ARG, arg);
}

void srv_bproto_cursor(srv_bcursor *c, const srv_bframe *f)
{
    c->p = f->body;
    c->end = f->body + f->len;
}

int srv_bproto_get_u64(srv_bcursor *c, uint64_t *v)
{
    if ((size_t)(c->end - c->p) < U64_BYTES)
        return -1;
    *v = get_le64((const unsigned char *)c->p);
    c->p += U64_BYTES;
    return 0;
}

int srv_bproto_get_field(srv_bcursor *c, const char **p, size_t *n)
{
    srv_bcursor save = *c;
    uint64_t len;

    if (srv_bproto_get_u64(c, &len))
        return -1;
    if (len > (uint64_t)(c->end - c->p)) {
        *c = save;
        return -1;
    }
    *p = c->p;
    *n = (size_t)len;
    c->p += len;
    return 0;
}
