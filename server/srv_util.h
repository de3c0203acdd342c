/*
 * srv_util.h - small pure helpers of the server: strict number parsing and
 * formatting with Redis's rules, glob matching, clocks.
 */
#ifndef SRV_UTIL_H
#define SRV_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Room for any long long in decimal, sign and NUL included. */
#define SRV_LLSTR_SIZE 21
/* Room for a long double printed by srv_util_ld2str. */
#define SRV_LDSTR_SIZE 5120
/* Room for a double printed by srv_util_d2str. */
#define SRV_DSTR_SIZE 128

/*
 * Parse exactly `len` bytes as a long long the way Redis does: optional
 * '-', no spaces, no '+', no leading zeros. Returns 1 on success, 0 else.
 */
int srv_util_str2ll(const char *s, size_t len, long long *out);

/* Decimal text of v into buf (SRV_LLSTR_SIZE bytes); returns its length. */
int srv_util_ll2str(char *buf, long long v);

/* Parse a float as Redis does for INCRBYFLOAT: 1 ok, 0 invalid or NaN. */
int srv_util_str2ld(const char *s, size_t len, long double *out);

/* Parse a double: 1 ok, 0 invalid (spaces, empty, NaN). Accepts inf. */
int srv_util_str2d(const char *s, size_t len, double *out);

/*
 * Parse a score range bound as Redis does (strtod, as ZRANGEBYSCORE's min
 * and max): the text up to its first NUL byte, leading spaces allowed, ""
 * is 0, overflow is +-inf. 1 when strtod used all of that text and the
 * value is not NaN, else 0 (also when a very long text cannot be copied).
 */
int srv_util_str2d_lax(const char *s, size_t len, double *out);

/*
 * Parse a SCAN cursor as Redis does (strtoul): the text up to its first
 * NUL byte, no leading space, a sign allowed ("-1" wraps to the largest
 * cursor), "" is 0. 1 when all of it is used and in range, else 0.
 */
int srv_util_str2cursor(const char *s, size_t len, uint64_t *out);

/*
 * Human text of a long double (INCRBYFLOAT): fixed notation with 17
 * digits after the point, trailing zeros and point trimmed. Returns the
 * length, 0 if it cannot be printed (infinite).
 */
int srv_util_ld2str(char *buf, size_t size, long double v);

/* A double as Redis replies it: "inf", "-inf", or %.17g. */
int srv_util_d2str(char *buf, size_t size, double v);

/* Glob match of Redis's KEYS/SCAN MATCH: * ? [a-z] [^x] and \ escapes. */
int srv_util_glob_match(const char *pat, size_t plen, const char *str,
                        size_t slen, int nocase);

/* Wall-clock time in ms and µs since the epoch. */
int64_t srv_util_mstime(void);
int64_t srv_util_ustime(void);

/* Monotonic time in ms (timeouts, back-off). */
int64_t srv_util_monotonic_ms(void);

/* Monotonic time in ns (command durations). */
int64_t srv_util_monotonic_ns(void);

/* ASCII case-insensitive comparison of a slice with a C string. */
int srv_util_streq(const char *s, size_t len, const char *lit);

#endif
