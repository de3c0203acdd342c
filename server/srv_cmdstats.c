/*
 * srv_cmdstats.c - the shared per-command and per-error statistics.
 */
#include "server/srv_cmdstats.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define PERCENT 100.0

/* The mapped region: header, then nslots slots of ncmds command records
 * and SRV_ERRSTATS_MAX error records each. */
struct srv_cmdstats {
    uint64_t magic;   /* immutable after init */
    uint32_t version; /* immutable after init */
    uint32_t nslots;  /* immutable after init */
    uint32_t ncmds;   /* immutable after init */
    uint32_t pad_;
    uint64_t size;      /* immutable after init: bytes mapped */
    uint64_t slot_size; /* immutable after init: bytes per slot */
    /* atomic; per slot, by its worker: error replies sent */
    _Atomic uint64_t errors[];
};

/* The process's region and its own slot (inherited across fork; a worker
 * sets its slot after fork). */
static srv_cmdstats *region;
static int own_slot = -1;
/* This process's error replies, region or not. */
static uint64_t errors_sent;

static size_t header_size(unsigned nslots)
{
    size_t n = sizeof(srv_cmdstats) + nslots * sizeof(_Atomic uint64_t);
    return (n + 63) & ~(size_t)63;
}

static size_t slot_size(unsigned ncmds)
{
    return ncmds * sizeof(srv_cmdstat_sh) +
           SRV_ERRSTATS_MAX * sizeof(srv_errstat_sh);
}

static srv_cmdstat_sh *cmd_rec(const srv_cmdstats *s, unsigned slot,
                               unsigned cmd)
{
    char *base = (char *)s + header_size(s->nslots) + slot * s->slot_size;
    return (srv_cmdstat_sh *)(void *)base + cmd;
}

static srv_errstat_sh *err_rec(const srv_cmdstats *s, unsigned slot)
{
    return (srv_errstat_sh *)(void *)cmd_rec(s, slot, s->ncmds);
}

srv_cmdstats *srv_cmdstats_create(unsigned nslots, unsigned ncmds)
{
    size_t size = header_size(nslots) + nslots * slot_size(ncmds);
    srv_cmdstats *s = mmap(NULL, size, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (s == MAP_FAILED)
        return NULL;
    /* Fresh anonymous memory is zero: only the header needs values. */
    s->magic = SRV_CMDSTATS_MAGIC;
    s->version = SRV_CMDSTATS_VERSION;
    s->nslots = nslots;
    s->ncmds = ncmds;
    s->size = size;
    s->slot_size = slot_size(ncmds);
    region = s;
    return s;
}

void srv_cmdstats_destroy(srv_cmdstats **sp)
{
    if (!*sp)
        return;
    if (region == *sp) {
        region = NULL;
        own_slot = -1;
    }
    munmap(*sp, (*sp)->size);
    *sp = NULL;
}

srv_cmdstats *srv_cmdstats_region(void) { return region; }

void srv_cmdstats_use(unsigned slot)
{
    own_slot = region && slot < region->nslots ? (int)slot : -1;
}

#define ADD(field, n) \
    atomic_fetch_add_explicit(&(field), (n), memory_order_relaxed)
#define LOAD(field) atomic_load_explicit(&(field), memory_order_relaxed)

/* The bucket of a duration: see SRV_HIST_* in the header. */
static unsigned bucket_of(uint64_t ns)
{
    unsigned e, sub, i;

    if (ns < (1ull << SRV_HIST_MIN_SHIFT))
        return 0;
    e = 63u - (unsigned)__builtin_clzll(ns);
    sub = (unsigned)(ns >> (e - SRV_HIST_SUB_BITS)) &
          ((1u << SRV_HIST_SUB_BITS) - 1);
    i = 1 + ((e - SRV_HIST_MIN_SHIFT) << SRV_HIST_SUB_BITS) + sub;
    return i < SRV_HIST_BUCKETS ? i : SRV_HIST_BUCKETS - 1;
}

uint64_t srv_cmdstats_bucket_ns(unsigned i)
{
    unsigned e, sub;

    if (i == 0)
        return 1ull << SRV_HIST_MIN_SHIFT;
    i--;
    e = SRV_HIST_MIN_SHIFT + (i >> SRV_HIST_SUB_BITS);
    sub = i & ((1u << SRV_HIST_SUB_BITS) - 1);
    /* [2^e + sub * 2^(e-3), + 2^(e-3)) */
    return (1ull << e) + ((uint64_t)(sub + 1) << (e - SRV_HIST_SUB_BITS));
}

void srv_cmdstats_call(unsigned cmd, int64_t ns, int failed)
{
    srv_cmdstat_sh *r;

    if (own_slot < 0 || cmd >= region->ncmds)
        return;
    if (ns < 0)
        ns = 0;
    r = cmd_rec(region, (unsigned)own_slot, cmd);
    ADD(r->calls, 1);
    ADD(r->ns, (uint64_t)ns);
    ADD(r->hist[bucket_of((uint64_t)ns)], 1);
    if (failed)
        ADD(r->failed, 1);
}

void srv_cmdstats_rejected(unsigned cmd)
{
    if (own_slot < 0 || cmd >= region->ncmds)
        return;
    ADD(cmd_rec(region, (unsigned)own_slot, cmd)->rejected, 1);
}

void srv_cmdstats_error(const char *msg)
{
    char code[SRV_ERRCODE_MAX];
    size_t n = 0;
    srv_errstat_sh *e;

    errors_sent++;
    if (own_slot < 0)
        return;
    ADD(region->errors[own_slot], 1);
    while (msg[n] && msg[n] != ' ' && n < sizeof code - 1) {
        code[n] = msg[n];
        n++;
    }
    code[n] = '\0';
    e = err_rec(region, (unsigned)own_slot);
    for (unsigned i = 0; i < SRV_ERRSTATS_MAX; i++) {
        if (atomic_load_explicit(&e[i].count, memory_order_acquire) == 0 &&
            e[i].code[0] == '\0') {
            /* A free record: ours alone to claim (one writer per slot). */
            memcpy(e[i].code, code, n + 1);
            atomic_store_explicit(&e[i].count, 1, memory_order_release);
            return;
        }
        if (strcmp(e[i].code, code) == 0) {
            ADD(e[i].count, 1);
            return;
        }
    }
    /* More distinct codes than records: counted in the total only. */
}

uint64_t srv_cmdstats_errors(void) { return errors_sent; }

void srv_cmdstats_sum(const srv_cmdstats *s, unsigned cmd, srv_cmdstat_sum *out)
{
    memset(out, 0, sizeof *out);
    if (!s || cmd >= s->ncmds)
        return;
    for (unsigned slot = 0; slot < s->nslots; slot++) {
        srv_cmdstat_sh *r = cmd_rec(s, slot, cmd);
        uint64_t calls = LOAD(r->calls);
        if (calls == 0 && LOAD(r->rejected) == 0)
            continue;
        out->calls += calls;
        out->ns += LOAD(r->ns);
        out->rejected += LOAD(r->rejected);
        out->failed += LOAD(r->failed);
        for (unsigned i = 0; i < SRV_HIST_BUCKETS; i++)
            out->hist[i] += LOAD(r->hist[i]);
    }
}

uint64_t srv_cmdstats_total_errors(const srv_cmdstats *s)
{
    uint64_t n = 0;

    for (unsigned slot = 0; s && slot < s->nslots; slot++)
        n += LOAD(s->errors[slot]);
    return n;
}

int srv_cmdstats_each_error(const srv_cmdstats *s,
                            void (*fn)(void *ctx, const char *code,
                                       uint64_t count),
                            void *ctx)
{
    int ncodes = 0;

    for (unsigned slot = 0; s && slot < s->nslots; slot++) {
        srv_errstat_sh *e = err_rec(s, slot);
        for (unsigned i = 0; i < SRV_ERRSTATS_MAX; i++) {
            if (atomic_load_explicit(&e[i].count, memory_order_acquire) == 0) {
                if (e[i].code[0] == '\0')
                    break; /* the rest are free */
                continue;  /* reset, or being claimed */
            }
            const char *code = e[i].code;
            int seen = 0;
            /* Listed where it was first seen; summed over the slots. */
            for (unsigned p = 0; p < slot && !seen; p++) {
                srv_errstat_sh *q = err_rec(s, p);
                for (unsigned j = 0; j < SRV_ERRSTATS_MAX && q[j].code[0]; j++)
                    if (strcmp(q[j].code, code) == 0) {
                        seen = 1;
                        break;
                    }
            }
            if (seen)
                continue;
            uint64_t total = 0;
            for (unsigned p = slot; p < s->nslots; p++) {
                srv_errstat_sh *q = err_rec(s, p);
                for (unsigned j = 0; j < SRV_ERRSTATS_MAX && q[j].code[0]; j++)
                    if (strcmp(q[j].code, code) == 0) {
                        total += LOAD(q[j].count);
                        break;
                    }
            }
            if (total) {
                fn(ctx, code, total);
                ncodes++;
            }
        }
    }
    return ncodes;
}

uint64_t srv_cmdstats_percentile_ns(const srv_cmdstat_sum *sum, double pct)
{
    uint64_t total = 0, seen = 0, want;

    for (unsigned i = 0; i < SRV_HIST_BUCKETS; i++)
        total += sum->hist[i];
    if (total == 0)
        return 0;
    want = (uint64_t)(pct / PERCENT * (double)total + 0.5);
    if (want < 1)
        want = 1;
    if (want > total)
        want = total;
    for (unsigned i = 0; i < SRV_HIST_BUCKETS; i++) {
        seen += sum->hist[i];
        if (seen >= want)
            return srv_cmdstats_bucket_ns(i);
    }
    return srv_cmdstats_bucket_ns(SRV_HIST_BUCKETS - 1);
}

void srv_cmdstats_reset(srv_cmdstats *s)
{
    for (unsigned slot = 0; s && slot < s->nslots; slot++) {
        atomic_store(&s->errors[slot], 0);
        for (unsigned c = 0; c < s->ncmds; c++) {
            srv_cmdstat_sh *r = cmd_rec(s, slot, c);
            if (LOAD(r->calls) == 0 && LOAD(r->rejected) == 0)
                continue;
            atomic_exchange(&r->calls, 0);
            atomic_exchange(&r->ns, 0);
            atomic_exchange(&r->rejected, 0);
            atomic_exchange(&r->failed, 0);
            for (unsigned i = 0; i < SRV_HIST_BUCKETS; i++)
                atomic_exchange(&r->hist[i], 0);
        }
        /* Error records stay claimed (their codes keep their place);
         * a zero count hides them from INFO. */
        srv_errstat_sh *e = err_rec(s, slot);
        for (unsigned i = 0; i < SRV_ERRSTATS_MAX && e[i].code[0]; i++)
            atomic_exchange(&e[i].count, 0);
    }
}
