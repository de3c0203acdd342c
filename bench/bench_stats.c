/*
 * bench_stats: per-thread and per-run figures (see bench_stats.h).
 */
#include "bench/bench_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERIES_MIN_CAP 64
#define OTHER_KIND "other"

void bench_errors_add_sample(bench_errors *e, const char *kind, size_t len,
                             uint64_t n, const char *sample)
{
    unsigned i;

    if (len >= BENCH_ERR_KIND_LEN)
        len = BENCH_ERR_KIND_LEN - 1;
    for (i = 0; i < e->n; i++) {
        if (strncmp(e->kind[i], kind, len) == 0 && e->kind[i][len] == '\0')
            break;
    }
    if (i == e->n) {
        if (e->n == BENCH_ERR_KINDS) {
            e->other += n;
            return;
        }
        memcpy(e->kind[i], kind, len);
        e->kind[i][len] = '\0';
        e->sample[i][0] = '\0';
        e->count[i] = 0;
        e->n++;
    }
    e->count[i] += n;
    if (sample != NULL && e->sample[i][0] == '\0')
        snprintf(e->sample[i], sizeof(e->sample[i]), "%s", sample);
}

void bench_errors_add(bench_errors *e, const char *kind, size_t len, uint64_t n)
{
    bench_errors_add_sample(e, kind, len, n, NULL);
}

void bench_errors_merge(bench_errors *dst, const bench_errors *src)
{
    unsigned i;

    for (i = 0; i < src->n; i++)
        bench_errors_add_sample(dst, src->kind[i], strlen(src->kind[i]),
                                src->count[i], src->sample[i]);
    if (src->other)
        bench_errors_add(dst, OTHER_KIND, strlen(OTHER_KIND), src->other);
}

uint64_t bench_errors_total(const bench_errors *e)
{
    uint64_t total = e->other;
    unsigned i;

    for (i = 0; i < e->n; i++)
        total += e->count[i];
    return total;
}

int bench_stats_init(bench_stats *s)
{
    memset(s, 0, sizeof(*s));
    if (bench_hist_create(&s->latency) != 0 ||
        bench_hist_create(&s->delivery) != 0 || bench_hist_create(&s->lag) != 0)
        return ENOMEM;
    return 0;
}

void bench_stats_fini(bench_stats *s)
{
    bench_hist_destroy(&s->latency);
    bench_hist_destroy(&s->delivery);
    bench_hist_destroy(&s->lag);
    free(s->series);
    free(s->series_max);
    s->series = s->series_max = NULL;
    s->series_len = s->series_cap = 0;
}

/* Grow *p from old to cap entries, zeroing the new ones. */
static int grow(uint64_t **p, size_t old, size_t cap)
{
    uint64_t *q = realloc(*p, cap * sizeof(*q));

    if (q == NULL)
        return ENOMEM;
    memset(q + old, 0, (cap - old) * sizeof(*q));
    *p = q;
    return 0;
}

int bench_stats_series_add(bench_stats *s, size_t sec, uint64_t n,
                           uint64_t max_ns)
{
    if (sec >= s->series_cap) {
        size_t cap = s->series_cap ? s->series_cap : SERIES_MIN_CAP;

        while (cap <= sec)
            cap *= 2;
        if (grow(&s->series, s->series_cap, cap) != 0 ||
            grow(&s->series_max, s->series_cap, cap) != 0)
            return ENOMEM;
        s->series_cap = cap;
    }
    s->series[sec] += n;
    if (max_ns > s->series_max[sec])
        s->series_max[sec] = max_ns;
    if (sec >= s->series_len)
        s->series_len = sec + 1;
    return 0;
}

int bench_stats_merge(bench_stats *dst, const bench_stats *src)
{
    size_t i;
    int rc;

    dst->ops += src->ops;
    for (i = 0; i < BENCH_OUT_COUNT; i++)
        dst->outcomes[i] += src->outcomes[i];
    bench_hist_merge(dst->latency, src->latency);
    bench_hist_merge(dst->delivery, src->delivery);
    bench_hist_merge(dst->lag, src->lag);
    dst->delivered += src->delivered;
    bench_errors_merge(&dst->errors, &src->errors);
    for (i = 0; i < src->series_len; i++) {
        rc = bench_stats_series_add(dst, i, src->series[i], src->series_max[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}
