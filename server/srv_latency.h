/*
 * srv_latency.h - the latency monitor (LATENCY LATEST, HISTORY, RESET,
 * GRAPH, DOCTOR): for each event class ("command", "fast-command",
 * "expire-cycle", ...) the samples at or above latency-monitor-threshold
 * ms of the last SRV_LATENCY_SAMPLES seconds that had one (the highest of
 * each second), and the highest ever. One shared anonymous region for
 * every process, as Redis has one per server.
 *
 * Who may touch what: the master creates it before it forks; children
 * inherit it. Every access takes its lock (shm_lock: robust,
 * process-shared) to copy a sample in or out: no allocation, logging or
 * system call under it. A sample is one store; a dead holder leaves
 * nothing to repair.
 */
#ifndef SRV_LATENCY_H
#define SRV_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#define SRV_LATENCY_MAGIC 0x59434e45544c4c4cull /* "LLLTENCY" */
#define SRV_LATENCY_VERSION 1
#define SRV_LATENCY_SAMPLES 160 /* as Redis's LATENCY_TS_LEN */
#define SRV_LATENCY_EVENTS 16
#define SRV_LATENCY_NAME_MAX 32

typedef struct srv_latency srv_latency;

typedef struct srv_latency_sample {
    int64_t time_s;
    uint32_t latency_ms;
} srv_latency_sample;

/* One event's record as the readers copy it out. */
typedef struct srv_latency_event {
    char name[SRV_LATENCY_NAME_MAX];
    int64_t latest_s;   /* time of the newest sample */
    uint32_t latest_ms; /* its latency */
    uint32_t max_ms;    /* the highest since the last reset */
    int nsamples;
    srv_latency_sample samples[SRV_LATENCY_SAMPLES]; /* oldest first */
} srv_latency_event;

/* Map the region (the master, before fork); it becomes the process's.
 * NULL with errno set. */
srv_latency *srv_latency_create(void);
void srv_latency_destroy(srv_latency **l);

/* Add a sample of event `name` at `time_s`, `latency_ms` long. The caller
 * has compared it with latency-monitor-threshold. No-op without region. */
void srv_latency_add(const char *name, int64_t time_s, uint32_t latency_ms);

/* Copy out event number `i` (0...; in the order first seen). 1 if it
 * exists, 0 past the last. */
int srv_latency_event_at(int i, srv_latency_event *out);

/* Reset the named events (all of them when n is 0); returns how many
 * were reset. */
int srv_latency_reset(const char *const *names, const size_t *lens, int n);

#endif
