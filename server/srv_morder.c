/*
 * srv_morder.c - the reorder buffer for MONITOR lines (see the header).
 *
 * The lines held are an array sorted by number, oldest first from `lo`:
 * numbers arrive almost in order (each worker's in order, the workers'
 * interleaved), so an insertion moves few entries, and releasing takes
 * from the front. Each line is one allocation, its header and its bytes.
 */
#include "server/srv_morder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ENTRIES_MIN 64
#define NO_GAP (-1)

typedef struct mline {
    uint64_t seq;
    uint64_t round;     /* the round whose sweep (or earlier) read it */
    int64_t arrived_ms; /* when it was added */
    size_t len;
    char line[];
} mline;

struct srv_morder {
    mline **v;
    size_t lo, n, cap; /* held: v[lo..n) */
    size_t bytes;      /* the lines' bytes held */
    uint64_t next;
    int64_t gap_ms;
    int64_t gap_since; /* when a release first stopped at the gap at
                        * `next` (NO_GAP: none seen) */
    size_t max_bytes;
    srv_morder_emit_fn *emit;
    void *ctx;
};

srv_morder *srv_morder_create(uint64_t next, int64_t gap_ms, size_t max_bytes,
                              srv_morder_emit_fn *emit, void *ctx)
{
    srv_morder *m = calloc(1, sizeof *m);

    if (!m)
        return NULL;
    m->next = next;
    m->gap_ms = gap_ms;
    m->gap_since = NO_GAP;
    m->max_bytes = max_bytes;
    m->emit = emit;
    m->ctx = ctx;
    return m;
}

void srv_morder_destroy(srv_morder **mp)
{
    srv_morder *m = *mp;

    if (!m)
        return;
    for (size_t i = m->lo; i < m->n; i++)
        free(m->v[i]);
    free(m->v);
    free(m);
    *mp = NULL;
}

size_t srv_morder_held(const srv_morder *m) { return m->n - m->lo; }

uint64_t srv_morder_next(const srv_morder *m) { return m->next; }

/* Emit and free the oldest line held; the expected number moves past it
 * (a late line leaves it where it is). */
static void pop(srv_morder *m)
{
    mline *e = m->v[m->lo++];

    if (e->seq >= m->next) {
        m->next = e->seq + 1;
        m->gap_since = NO_GAP;
    }
    m->bytes -= e->len;
    m->emit(m->ctx, e->seq, e->line, e->len);
    free(e);
    if (m->lo == m->n)
        m->lo = m->n = 0;
}

/* Room for one more entry at the end of v. */
static int reserve(srv_morder *m)
{
    if (m->n < m->cap)
        return 0;
    if (m->lo > 0) { /* the released front is free again */
        memmove(m->v, m->v + m->lo, (m->n - m->lo) * sizeof *m->v);
        m->n -= m->lo;
        m->lo = 0;
        return 0;
    }
    size_t cap = m->cap ? m->cap * 2 : ENTRIES_MIN;
    mline **v = realloc(m->v, cap * sizeof *v);
    if (!v)
        return ENOMEM;
    m->v = v;
    m->cap = cap;
    return 0;
}

int srv_morder_add(srv_morder *m, uint64_t seq, uint64_t round, int64_t now_ms,
                   const char *line, size_t len)
{
    mline *e;
    size_t i;

    /* Over its bytes the buffer lets the oldest go, in order. */
    while (m->lo < m->n && m->bytes + len > m->max_bytes)
        pop(m);
    if (reserve(m) || !(e = malloc(sizeof *e + len)))
        return ENOMEM;
    e->seq = seq;
    e->round = round;
    e->arrived_ms = now_ms;
    e->len = len;
    memcpy(e->line, line, len);
    /* After every line of a lower or equal number: most come last. */
    for (i = m->n; i > m->lo && m->v[i - 1]->seq > seq; i--)
        ;
    memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
    m->v[i] = e;
    m->n++;
    m->bytes += len;
    return 0;
}

int64_t srv_morder_release(srv_morder *m, uint64_t round, int64_t now_ms)
{
    while (m->lo < m->n) {
        const mline *e = m->v[m->lo];
        if (e->round >= round)
            return 0; /* the next round's sweep first */
        if (e->seq > m->next) {
            /* A gap: known since the first release that stopped at it,
             * or since the line after it came, if that is earlier. */
            if (m->gap_since == NO_GAP)
                m->gap_since = now_ms;
            int64_t since = e->arrived_ms < m->gap_since ? e->arrived_ms
                                                         : m->gap_since;
            if (now_ms - since < m->gap_ms)
                return since + m->gap_ms - now_ms;
        }
        pop(m);
    }
    return -1;
}
