/*
 * srv_morder.h - the broker's reorder buffer for MONITOR lines: it puts
 * the lines of every worker back in the order their commands ran.
 *
 * Each line carries a sequence number its worker drew from one shared
 * counter after the command ran and before its reply could leave, so a
 * command that finished before another started has the lower number.
 * Lines arrive out of that order (each worker's frames race the others'
 * to the broker); the buffer holds them and releases them in increasing
 * number. A number it has not seen (a gap: a line still on its way, or
 * never sent, its worker killed) is waited for a bounded time, then
 * skipped; a skipped line that arrives later is released as it comes.
 *
 * Rounds (the broker's, see srv_broker.c): a line read during a round's
 * sweep is released no earlier than the next round, whose sweep reads
 * every link again; then every line whose command finished before the
 * released one started has been read (a worker writes a line to the
 * broker before its command's reply), so it is held or gone already and
 * is released first. Past a gap only lines of an earlier round leave, so
 * skipping never overtakes a line that was in a socket.
 *
 * Pure and single-threaded (the broker's); time and rounds are the
 * caller's; unit tests drive it directly. Lines are delivered through a
 * callback, during the call that releases them.
 */
#ifndef SRV_MORDER_H
#define SRV_MORDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_morder srv_morder;

/* A released line (`len` bytes, valid during the call) and its number. */
typedef void srv_morder_emit_fn(void *ctx, uint64_t seq, const char *line,
                                size_t len);

/*
 * A buffer expecting line `next` first (the counter's value when the
 * broker starts: lines numbered below arrive late and leave as they
 * come). A gap is waited for `gap_ms` at most; the lines held take at
 * most `max_bytes`, past which the oldest numbers leave at once, gaps or
 * not. Lines go to `emit(ctx, ...)`. NULL on ENOMEM.
 */
srv_morder *srv_morder_create(uint64_t next, int64_t gap_ms, size_t max_bytes,
                              srv_morder_emit_fn *emit, void *ctx);

/* Free the buffer, dropping the lines it holds, and NULL *m. */
void srv_morder_destroy(srv_morder **m);

/*
 * Hold line `seq` (a copy of line[0..len)), read in round `round` at
 * `now_ms` (a monotonic clock). Lines may be emitted (the oldest ones,
 * when the buffer is over its bytes). 0, or ENOMEM: the line is not
 * held and the caller sends it as it is.
 */
int srv_morder_add(srv_morder *m, uint64_t seq, uint64_t round, int64_t now_ms,
                   const char *line, size_t len);

/*
 * At the end of round `round` (rounds increase), at `now_ms`: emit, in
 * increasing number, the lines read in earlier rounds that are next in
 * line (or late), and past a gap once it has been waited for long
 * enough. Returns when to call again: -1 nothing is held; 0 after the
 * next round (held lines of this round); n > 0 in n ms (a gap's wait
 * runs out), or earlier when more arrives.
 */
int64_t srv_morder_release(srv_morder *m, uint64_t round, int64_t now_ms);

/* The number of lines held. */
size_t srv_morder_held(const srv_morder *m);

/* The number the buffer expects next (every lower one was released or
 * skipped). */
uint64_t srv_morder_next(const srv_morder *m);

#endif
