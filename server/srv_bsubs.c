/*
 * srv_bsubs.c - the broker's subscription counts (see the header).
 *
 * Per kind a dict from name to a bentry: the links' counts, unordered
 * (one per link at most, so a name has few), and their total.
 */
#include "server/srv_bsubs.h"
#include "server/srv_dict.h"
#include "server/srv_log.h"
#include "server/srv_util.h"

#include <errno.h>
#include <stdlib.h>

#define COUNTS_MIN 2

/* One link's subscriptions to a name. */
typedef struct bcount {
    uint32_t link;
    uint32_t n;
} bcount;

/* A name's counts; the value of its dict entry. */
typedef struct bentry {
    uint64_t total;
    unsigned n, cap;
    bcount *per;
} bentry;

struct srv_bsubs {
    srv_dict names[SRV_BP_NKINDS];
};

static void entry_free(srv_dict_entry *de)
{
    bentry *b = de->val;

    if (b) {
        free(b->per);
        free(b);
    }
}

srv_bsubs *srv_bsubs_create(void) { return calloc(1, sizeof(srv_bsubs)); }

void srv_bsubs_destroy(srv_bsubs **sp)
{
    srv_bsubs *s = *sp;

    if (!s)
        return;
    for (int k = 0; k < SRV_BP_NKINDS; k++)
        srv_dict_clear(&s->names[k], entry_free);
    free(s);
    *sp = NULL;
}

/* Set link `id`'s subscriptions to a name; drop the name at total 0. */
void srv_bsubs_set(srv_bsubs *s, int kind, const char *name, size_t len,
                   uint32_t id, uint64_t n64)
{
    uint32_t n = n64 > UINT32_MAX ? UINT32_MAX : (uint32_t)n64;
    uint64_t h = srv_dict_hash(name, len);
    srv_dict_entry *de = srv_dict_find(&s->names[kind], name, len, h);
    bentry *b;
    unsigned i;

    if (!de) {
        if (n == 0)
            return;
        if (!(b = calloc(1, sizeof *b)) ||
            !(de = srv_dict_add(&s->names[kind], name, len, h))) {
            free(b);
            srv_log(SRV_LOG_WARNING, ENOMEM, "subscription count lost");
            return;
        }
        de->val = b;
    }
    b = de->val;
    for (i = 0; i < b->n && b->per[i].link != id; i++)
        ;
    if (i < b->n) {
        b->total -= b->per[i].n;
        if (n)
            b->per[i].n = n;
        else
            b->per[i] = b->per[--b->n];
    } else if (n) {
        if (b->n == b->cap) {
            unsigned cap = b->cap ? b->cap * 2 : COUNTS_MIN;
            bcount *p = realloc(b->per, cap * sizeof *p);
            if (!p) {
                srv_log(SRV_LOG_WARNING, ENOMEM, "subscription count lost");
                n = 0;
            } else {
                b->per = p;
                b->cap = cap;
            }
        }
        if (n)
            b->per[b->n++] = (bcount){ id, n };
    }
    b->total += n;
    if (b->total == 0) {
        entry_free(de);
        srv_dict_remove(&s->names[kind], de);
    }
}

/* A link went away: its workers' subscriptions leave every count. */
void srv_bsubs_drop_link(srv_bsubs *s, uint32_t id)
{
    for (int k = 0; k < SRV_BP_NKINDS; k++) {
        srv_dict_iter it;
        srv_dict_entry *de;
        srv_dict_iter_init(&it, &s->names[k]);
        while ((de = srv_dict_iter_next(&it))) {
            bentry *b = de->val;
            for (unsigned i = 0; i < b->n; i++)
                if (b->per[i].link == id) {
                    b->total -= b->per[i].n;
                    b->per[i] = b->per[--b->n];
                    break;
                }
            if (b->total == 0) {
                entry_free(de);
                srv_dict_remove(&s->names[k], de);
            }
        }
    }
}

static uint64_t total_of(const srv_bsubs *s, int kind, const char *name,
                         size_t len)
{
    srv_dict_entry *de = srv_dict_find(&s->names[kind], name, len,
                                       srv_dict_hash(name, len));

    return de ? ((bentry *)de->val)->total : 0;
}

static void target(const bentry *b, srv_bsubs_target_fn *fn, void *ctx)
{
    for (unsigned i = 0; i < b->n; i++)
        fn(ctx, b->per[i].link);
}

uint64_t srv_bsubs_route(const srv_bsubs *s, int kind, const char *ch,
                         size_t chlen, srv_bsubs_target_fn *fn, void *ctx)
{
    uint64_t receivers = 0;
    srv_dict_entry *de;

    if ((de = srv_dict_find(&s->names[kind], ch, chlen,
                            srv_dict_hash(ch, chlen)))) {
        receivers += ((bentry *)de->val)->total;
        target(de->val, fn, ctx);
    }
    if (kind == SRV_BP_CHANNEL) {
        srv_dict_iter it;
        srv_dict_iter_init(&it, &s->names[SRV_BP_PATTERN]);
        while ((de = srv_dict_iter_next(&it)))
            if (srv_util_glob_match(de->key, de->klen, ch, chlen, 0)) {
                receivers += ((bentry *)de->val)->total;
                target(de->val, fn, ctx);
            }
    }
    return receivers;
}

size_t srv_bsubs_names(const srv_bsubs *s, int kind)
{
    return s->names[kind].count;
}

int srv_bsubs_numsub(const srv_bsubs *s, const srv_bframe *f, srv_buf *out)
{
    size_t off = srv_bproto_begin(out, SRV_BP_R_NUMSUB, f->kind, 0);
    srv_bcursor cur;
    const char *name;
    size_t len;

    if (off == (size_t)-1)
        goto nomem;
    srv_bproto_cursor(&cur, f);
    while (srv_bproto_get_field(&cur, &name, &len) == 0)
        if (srv_bproto_put_field(out, name, len) ||
            srv_bproto_put_u64(out, total_of(s, f->kind, name, len)))
            goto nomem;
    srv_bproto_end(out, off);
    return 0;
nomem:
    srv_log(SRV_LOG_WARNING, ENOMEM, "PUBSUB NUMSUB answer");
    return ENOMEM;
}

/* Names of a kind matching the pattern (all without one). A list past
 * what a worker accepts in one frame is cut there. */
int srv_bsubs_channels(const srv_bsubs *s, const srv_bframe *f,
                       uint64_t max_body, srv_buf *out)
{
    size_t off = srv_bproto_begin(out, SRV_BP_R_CHANNELS, f->kind, 0);
    uint64_t limit = max_body - SRV_BP_BODY_SLACK, n = 0;
    srv_dict_iter it;
    srv_dict_entry *de;

    if (off == (size_t)-1)
        goto nomem;
    srv_dict_iter_init(&it, &s->names[f->kind]);
    while ((de = srv_dict_iter_next(&it))) {
        if (f->arg &&
            !srv_util_glob_match(f->body, (size_t)f->len, de->key, de->klen, 0))
            continue;
        if (out->len - off + SRV_BP_FIELD_HDR + de->klen > limit)
            break;
        if (srv_bproto_put_field(out, de->key, de->klen))
            goto nomem;
        n++;
    }
    srv_bproto_set_arg(out, off, n);
    srv_bproto_end(out, off);
    return 0;
nomem:
    srv_log(SRV_LOG_WARNING, ENOMEM, "PUBSUB CHANNELS answer");
    return ENOMEM;
}
