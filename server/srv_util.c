/*
 * srv_util.c - strict number parsing/formatting, glob matching, clocks.
 */
#include "server/srv_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MS_PER_S 1000
#define US_PER_S 1000000
#define NS_PER_MS 1000000
#define NS_PER_US 1000
#define NS_PER_S 1000000000ll

int srv_util_str2ll(const char *s, size_t len, long long *out)
{
    unsigned long long v = 0;
    size_t i = 0;
    int neg = 0;

    if (len == 0 || len >= SRV_LLSTR_SIZE)
        return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        if (++i == len)
            return 0;
    }
    if (s[i] < '1' || s[i] > '9')
        return 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1)
            return 0;
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN
                                                      : -(long long)v;
    } else {
        if (v > LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

int srv_util_ll2str(char *buf, long long v)
{
    char tmp[SRV_LLSTR_SIZE];
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v
                                 : (unsigned long long)v;
    int n = 0, len = 0;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

/* Copy a slice into a NUL-terminated buffer if it can be a number. */
static int numbuf(const char *s, size_t len, char *buf)
{
    if (len == 0 || len >= SRV_LDSTR_SIZE || isspace((unsigned char)s[0]))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return strlen(buf) == len; /* no embedded NUL */
}

/*
 * Redis's rule for both: the whole text is the number, no leading space,
 * not NaN, and no overflow or underflow (ERANGE to infinity or to zero);
 * an explicit "inf" is fine.
 */
int srv_util_str2ld(const char *s, size_t len, long double *out)
{
    char buf[SRV_LDSTR_SIZE], *end;
    long double v;

    if (!numbuf(s, len, buf))
        return 0;
    errno = 0;
    v = strtold(buf, &end);
    if (*end != '\0' || isnan(v) ||
        (errno == ERANGE && (isinf(v) || fpclassify(v) == FP_ZERO)))
        return 0;
    *out = v;
    return 1;
}

int srv_util_str2d(const char *s, size_t len, double *out)
{
    char buf[SRV_LDSTR_SIZE], *end;
    double v;

    if (!numbuf(s, len, buf))
        return 0;
    errno = 0;
    v = strtod(buf, &end);
    if (*end != '\0' || isnan(v) ||
        (errno == ERANGE && (isinf(v) || fpclassify(v) == FP_ZERO)))
        return 0;
    *out = v;
    return 1;
}

/*
 * s[0..len) up to its first NUL byte as a C string for the C parsers
 * Redis calls on its NUL-terminated arguments: in buf (SRV_LDSTR_SIZE
 * bytes) when it fits, else in memory returned in *heap for the caller to
 * free. NULL when out of memory.
 */
static const char *cstring(const char *s, size_t len, char *buf, char **heap)
{
    const char *nul = memchr(s, '\0', len);
    size_t n = nul ? (size_t)(nul - s) : len;
    char *p = buf;

    *heap = NULL;
    if (n >= SRV_LDSTR_SIZE && !(p = *heap = malloc(n + 1)))
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

int srv_util_str2d_lax(const char *s, size_t len, double *out)
{
    char buf[SRV_LDSTR_SIZE], *heap, *end;
    const char *p = cstring(s, len, buf, &heap);
    int ok;

    if (!p)
        return 0;
    *out = strtod(p, &end);
    ok = *end == '\0' && !isnan(*out);
    free(heap);
    return ok;
}

int srv_util_str2cursor(const char *s, size_t len, uint64_t *out)
{
    char buf[SRV_LDSTR_SIZE], *heap, *end;
    const char *p = cstring(s, len, buf, &heap);
    int ok;

    if (!p)
        return 0;
    errno = 0;
    *out = strtoull(p, &end, 10);
    ok = !isspace((unsigned char)p[0]) && *end == '\0' && errno != ERANGE;
    free(heap);
    return ok;
}

int srv_util_ld2str(char *buf, size_t size, long double v)
{
    int n;

    if (isinf(v) || isnan(v))
        return 0;
    n = snprintf(buf, size, "%.17Lf", v);
    if (n <= 0 || (size_t)n >= size)
        return 0;
    if (strchr(buf, '.')) {
        while (n > 0 && buf[n - 1] == '0')
            n--;
        if (n > 0 && buf[n - 1] == '.')
            n--;
        buf[n] = '\0';
    }
    if (n == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        buf[1] = '\0';
        n = 1;
    }
    return n;
}

int srv_util_d2str(char *buf, size_t size, double v)
{
    if (isinf(v))
        return snprintf(buf, size, v > 0 ? "inf" : "-inf");
    return snprintf(buf, size, "%.17g", v);
}

static int fold(int c, int nocase) { return nocase ? tolower(c) : c; }

/* Match a [...] class at pat[*pi] against c; advances *pi past ']'. */
static int class_match(const char *pat, size_t plen, size_t *pi, int c,
                       int nocase)
{
    size_t i = *pi + 1;
    int neg = 0, hit = 0;

    if (i < plen && pat[i] == '^') {
        neg = 1;
        i++;
    }
    for (; i < plen && pat[i] != ']'; i++) {
        if (pat[i] == '\\' && i + 1 < plen) {
            i++;
            hit |= fold((unsigned char)pat[i], nocase) == fold(c, nocase);
        } else if (i + 2 < plen && pat[i + 1] == '-') {
            int lo = fold((unsigned char)pat[i], nocase);
            int hi = fold((unsigned char)pat[i + 2], nocase);
            int x = fold(c, nocase);
            if (lo > hi) {
                int tmp = lo;
                lo = hi;
                hi = tmp;
            }
            hit |= x >= lo && x <= hi;
            i += 2;
        } else {
            hit |= fold((unsigned char)pat[i], nocase) == fold(c, nocase);
        }
    }
    *pi = i < plen ? i : plen - 1; /* on ']' (or last char if open) */
    return neg ? !hit : hit;
}

int srv_util_glob_match(const char *pat, size_t plen, const char *str,
                        size_t slen, int nocase)
{
    size_t p = 0, s = 0, star_p = (size_t)-1, star_s = 0;

    /* Iterative with one backtrack point: the last '*' seen. */
    while (s < slen) {
        if (p < plen) {
            char pc = pat[p];
            if (pc == '*') {
                while (p < plen && pat[p] == '*')
                    p++;
                if (p == plen)
                    return 1;
                star_p = p;
                star_s = s;
                continue;
            }
            if (pc == '?') {
                p++;
                s++;
                continue;
            }
            if (pc == '[') {
                size_t q = p;
                if (class_match(pat, plen, &q, (unsigned char)str[s], nocase)) {
                    p = q + 1;
                    s++;
                    continue;
                }
            } else {
                if (pc == '\\' && p + 1 < plen)
                    pc = pat[++p];
                if (fold((unsigned char)pc, nocase) ==
                    fold((unsigned char)str[s], nocase)) {
                    p++;
                    s++;
                    continue;
                }
            }
        }
        if (star_p == (size_t)-1)
            return 0;
        p = star_p;
        s = ++star_s;
    }
    while (p < plen && pat[p] == '*')
        p++;
    return p == plen;
}

int64_t srv_util_mstime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

int64_t srv_util_ustime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * US_PER_S + ts.tv_nsec / NS_PER_US;
}

int64_t srv_util_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

int64_t srv_util_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int srv_util_streq(const char *s, size_t len, const char *lit)
{
    return strlen(lit) == len && strncasecmp(s, lit, len) == 0;
}
