/*
 * srv_link.h - a worker's link to the broker: the one Unix stream
 * connection that carries every cross-worker feature's frames (pub/sub,
 * blocking wake-ups, keyspace events, client control, tracking, MONITOR;
 * the frames are srv_bproto.h's). Features register with it; it sends
 * their frames, reads the broker's and hands each to the feature that
 * registered its type, reconnects with back-off when the broker goes
 * away, and asks every feature to send its state again on each new
 * connection (the broker's view of a worker is rebuilt from scratch).
 *
 * States: DOWN (no connection; a timer retries with back-off), HELLO
 * (connected, HELLO and every feature's state queued, waiting for the
 * broker's WELCOME), UP. Frames may be queued in HELLO and UP; features
 * that need an answer ask only in UP (srv_link_up), and answer from what
 * their worker knows otherwise, so nothing waits for a broker that is
 * being respawned.
 *
 * Frames from the broker are read by an event of the group's priority
 * and handled in the service's `settled`, after the group's commit: then
 * no connection holds output of an uncommitted command, so output a
 * feature appends to a connection can be marked committed
 * (srv_group_wake) and is never discarded by a later rewind. Everything
 * here runs on the worker's thread. Without the service (the embedded
 * worker) the link stays DOWN and features work worker-local.
 */
#ifndef SRV_LINK_H
#define SRV_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "server/srv_bproto.h"
#include "server/srv_worker.h"

enum srv_link_state { SRV_LINK_DOWN, SRV_LINK_HELLO, SRV_LINK_UP };

/* Features the link can carry. */
#define SRV_LINK_FEATURES_MAX 8

/* A feature of the link. Any function may be NULL. */
typedef struct srv_link_feature {
    const char *name;
    /* the broker -> worker frame types it handles, ending with 0 */
    const int *types;
    /* a new connection (HELLO is queued): queue the state the broker must
     * know again */
    void (*resend)(void);
    /* one of its frames arrived: 0, or -1 for a protocol error (the link
     * is then reset) */
    int (*frame)(const srv_bframe *f);
    /* the link went down: answer what waits for the broker */
    void (*down)(void);
    /* after the frames of a group turn were handled: resume clients, run
     * what arrived; 1 if commands ran (the group must settle again) */
    int (*settled)(srv_worker *w);
} srv_link_feature;

/*
 * The worker service (srv_worker.h), listed before the features' own
 * services. start: connect and wait a bounded time for the broker's
 * welcome, so the first request already reaches every worker. settled:
 * handle the frames read, notice a lost broker (features' `down`), run
 * the features' `settled`, send what is queued. stop: close (no
 * reconnect).
 */
extern const srv_service srv_link_service;

/*
 * Register feature `f` (static storage): its frame types are handed to
 * it from now on. A feature registers once, from its service's start;
 * when the link is already connected its `resend` runs at once. 0, or -1
 * when a type is taken or there are too many features (a bug).
 */
int srv_link_register(const srv_link_feature *f);

/* The link's state (enum srv_link_state). */
int srv_link_state(void);

/* 1 when the broker has welcomed the link and it is not lost: a request
 * sent now will be answered. */
int srv_link_up(void);

/* 1 when a frame can be queued now (HELLO or UP, not lost): srv_link_put
 * fails then only when out of memory. */
int srv_link_usable(void);

/*
 * Queue a frame whose body is p1[0..n1) then p2[0..n2) (sent at the end
 * of the group's turn, or by srv_link_flush). 0, or -1 when the link is
 * down or lost (nothing queued; out of memory loses the link).
 */
int srv_link_put(int type, int kind, uint64_t arg, const void *p1, size_t n1,
                 const void *p2, size_t n2);

/*
 * Build a frame piecewise (srv_bproto_begin and friends on the link's
 * output): begin returns its offset or (size_t)-1 when the link is down
 * or out of memory; field and u64 append to its body (0 or -1: the
 * frame is then dropped, and out of memory loses the link); end closes
 * it. Nothing may be put on the link between begin and end.
 */
size_t srv_link_begin(int type, int kind, uint64_t arg);
int srv_link_field(size_t off, const void *p, size_t n);
int srv_link_u64(size_t off, uint64_t v);
void srv_link_end(size_t off);
/* Set the arg of the frame begun at off (a count known at the end). */
void srv_link_set_arg(size_t off, uint64_t arg);

/* Write what is queued, as far as the socket takes it (the rest when it
 * is writable again). */
void srv_link_flush(void);

/*
 * Write everything queued, waiting up to `timeout_ms` for the socket to
 * take it. 0 when it is all in the socket (so the broker reads it before
 * anything written later), -1 when the link is down or the time ran out
 * (the rest is sent later as usual).
 */
int srv_link_flush_wait(int timeout_ms);

/* What a srv_link_pick_fn says of a frame. */
#define SRV_LINK_LEAVE 0 /* not its: handled as usual, in order */
#define SRV_LINK_TAKEN 1 /* handled now: dropped from the input */
#define SRV_LINK_DONE 2  /* handled now, and the wait is over */

/* Looks at one frame during srv_link_wait; f->body lives until it
 * returns. It may put frames (an answer), never wait itself. */
typedef int srv_link_pick_fn(const srv_bframe *f, void *arg);

/*
 * In the middle of a command (a script that needs an answer now): send
 * what is queued, then read the broker's frames for up to `timeout_ms`,
 * showing each complete one, oldest first, to `pick`. The frames it
 * takes leave the input; the others stay, in order, for the group's
 * turn. 0 once pick said SRV_LINK_DONE; -1 when the time ran out (0 ms:
 * only what already came is looked at) or the link is not up or got
 * lost. Worker thread only; the loop is not run meanwhile.
 */
int srv_link_wait(srv_link_pick_fn *pick, void *arg, int timeout_ms);

/* Times the link has been connected since the worker started (a feature
 * can tell a frame it queued on an earlier connection). */
uint64_t srv_link_generation(void);

/* HELLO's argument of a process that is not a worker (the broker asks it
 * nothing). */
#define SRV_LINK_NOT_A_WORKER UINT64_MAX

/*
 * For a process without an event loop (the reaper, which sends keyspace
 * events): open the link in plain mode and say HELLO as `who`. Frames are
 * put as above and written by srv_link_flush_wait; nothing is read but
 * by srv_link_pump, which drops what the broker sent and connects again
 * (at most once a second) when the link was lost. 0, or -1 (the link
 * stays down until a pump connects it).
 */
int srv_link_open_plain(uint64_t who);
void srv_link_pump(void);
void srv_link_close_plain(void);

#endif
