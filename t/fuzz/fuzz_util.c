/*
 * fuzz_util: libFuzzer target comparing server/srv_util.c with small
 * reference implementations written here for clarity, not speed:
 *   - srv_util_glob_match against a recursive matcher with the rules of Redis's
 *     stringmatchlen (KEYS, SCAN MATCH, CONFIG GET), both case modes;
 *   - srv_util_str2ll against "0 | -?[1-9][0-9]* that fits a long long", and
 *     srv_util_ll2str round trips.
 * Input layout: byte 0 picks the case mode and where the pattern ends
 * (byte 1 is the pattern length, modulo what is left); the rest after the
 * pattern is the subject. The whole input is also parsed as a number.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_util.h"

#define HEADER_BYTES 2
#define DECIMAL_BASE 10
#define NUMBUF 64
/*
 * The reference recurses once per star; its failures are remembered per
 * (pattern suffix, subject suffix), which keeps it polynomial (each state
 * costs at most the subject's length), and a few stars keep that product
 * small: six stars against a 3,000-byte run of one letter took libFuzzer's
 * 10 s timeout without the memo.
 */
#define MAX_REF_STARS 6

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

static int fold(unsigned char c, int nocase) { return nocase ? tolower(c) : c; }

/*
 * Redis's stringmatchlen, restated: * any run, ? one byte, [set] with ^,
 * ranges (either order) and \ escapes, an unclosed [ running to the end
 * of the pattern, \ escaping outside sets, a trailing \ matching itself.
 * Bytes compare unsigned. (Redis answers 0 for "*" against an empty
 * subject when called directly; KEYS and SCAN never call it for "*", and
 * srv answers 1: the reference follows srv there.)
 */
static int ref_match(const unsigned char *p, size_t plen,
                     const unsigned char *s, size_t slen, int nocase);

/* One bit per (pattern suffix length, subject suffix length) known not to
 * match; sized per input by ref_memo_reset. */
static unsigned char *ref_failed;
static size_t ref_failed_size, ref_stride;

static void ref_memo_reset(size_t plen, size_t slen)
{
    size_t bytes = (plen + 1) * (slen + 1) / CHAR_BIT + 1;
    if (bytes > ref_failed_size) {
        free(ref_failed);
        ref_failed = malloc(bytes);
        check(ref_failed != NULL);
        ref_failed_size = bytes;
    }
    memset(ref_failed, 0, bytes);
    ref_stride = slen + 1;
}

static int ref_memo_get(size_t plen, size_t slen)
{
    size_t bit = plen * ref_stride + slen;
    return ref_failed[bit / CHAR_BIT] >> (bit % CHAR_BIT) & 1;
}

static void ref_memo_fail(size_t plen, size_t slen)
{
    size_t bit = plen * ref_stride + slen;
    ref_failed[bit / CHAR_BIT] |= (unsigned char)(1u << (bit % CHAR_BIT));
}

static int ref_match_at(const unsigned char *p, size_t plen,
                        const unsigned char *s, size_t slen, int nocase)
{
    while (plen && slen) {
        switch (p[0]) {
        case '*':
            while (plen > 1 && p[1] == '*') {
                p++;
                plen--;
            }
            if (plen == 1)
                return 1;
            while (slen) {
                if (ref_match(p + 1, plen - 1, s, slen, nocase))
                    return 1;
                s++;
                slen--;
            }
            return 0;
        case '?':
            s++;
            slen--;
            break;
        case '[': {
            int neg, hit = 0;
            p++;
            plen--;
            neg = plen > 0 && p[0] == '^';
            if (neg) {
                p++;
                plen--;
            }
            for (;;) {
                if (plen >= 2 && p[0] == '\\') {
                    p++;
                    plen--;
                    hit |= fold(p[0], nocase) == fold(s[0], nocase);
                } else if (plen > 0 && p[0] == ']') {
                    break;
                } else if (plen == 0) {
                    p--; /* unclosed: stand on the last byte */
                    plen++;
                    break;
                } else if (plen >= 3 && p[1] == '-') {
                    int lo = fold(p[0], nocase), hi = fold(p[2], nocase);
                    int c = fold(s[0], nocase);
                    if (lo > hi) {
                        int tmp = lo;
                        lo = hi;
                        hi = tmp;
                    }
                    hit |= c >= lo && c <= hi;
                    p += 2;
                    plen -= 2;
                } else {
                    hit |= fold(p[0], nocase) == fold(s[0], nocase);
                }
                p++;
                plen--;
            }
            if (neg)
                hit = !hit;
            if (!hit)
                return 0;
            s++;
            slen--;
            break;
        }
        case '\\':
            if (plen >= 2) {
                p++;
                plen--;
            }
            /* fall through */
        default:
            if (fold(p[0], nocase) != fold(s[0], nocase))
                return 0;
            s++;
            slen--;
            break;
        }
        p++;
        plen--;
    }
    if (slen == 0)
        while (plen && p[0] == '*') {
            p++;
            plen--;
        }
    return plen == 0 && slen == 0;
}

static int ref_match(const unsigned char *p, size_t plen,
                     const unsigned char *s, size_t slen, int nocase)
{
    if (ref_memo_get(plen, slen))
        return 0;
    if (ref_match_at(p, plen, s, slen, nocase))
        return 1;
    ref_memo_fail(plen, slen);
    return 0;
}

/* Strict decimal as Redis's string2ll accepts it. */
static int ref_str2ll(const uint8_t *s, size_t len, long long *out)
{
    char buf[NUMBUF], *end;
    size_t i = 0;

    if (len == 0 || len >= sizeof buf)
        return 0;
    if (s[0] == '-')
        i = 1;
    if (i == len)
        return 0;
    if (s[i] == '0' && !(i == 0 && len == 1))
        return 0; /* leading zero, "-0" */
    for (size_t j = i; j < len; j++)
        if (s[j] < '0' || s[j] > '9')
            return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    *out = strtoll(buf, &end, DECIMAL_BASE);
    return errno == 0 && *end == '\0';
}

static void fuzz_numbers(const uint8_t *data, size_t size)
{
    long long a = 0, b = 0;
    int ra = srv_util_str2ll((const char *)data, size, &a);
    int rb = ref_str2ll(data, size, &b);
    char text[SRV_LLSTR_SIZE];

    check(ra == rb);
    if (ra) {
        check(a == b);
        int n = srv_util_ll2str(text, a);
        check(n > 0 && (size_t)n == size && memcmp(text, data, size) == 0);
    }
    /* Any long long made of the input's bytes survives a round trip. */
    if (size >= sizeof a) {
        long long v, back;
        memcpy(&v, data, sizeof v);
        int n = srv_util_ll2str(text, v);
        check(n > 0 && n < SRV_LLSTR_SIZE && text[n] == '\0');
        check(srv_util_str2ll(text, (size_t)n, &back) && back == v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t plen, slen;
    const uint8_t *pat, *str;
    int nocase;

    fuzz_numbers(data, size);
    if (size < HEADER_BYTES)
        return 0;
    nocase = data[0] & 1;
    plen = data[1];
    data += HEADER_BYTES;
    size -= HEADER_BYTES;
    if (plen > size)
        plen = size;
    pat = data;
    str = data + plen;
    slen = size - plen;
    {
        size_t stars = 0;
        for (size_t i = 0; i < plen; i++)
            stars += pat[i] == '*';
        if (stars > MAX_REF_STARS) {
            /* No reference, but the matcher must still finish in time. */
            (void)srv_util_glob_match((const char *)pat, plen,
                                      (const char *)str, slen, nocase);
            return 0;
        }
    }
    ref_memo_reset(plen, slen);
    check(srv_util_glob_match((const char *)pat, plen, (const char *)str, slen,
                              nocase) ==
          ref_match(pat, plen, str, slen, nocase));
    return 0;
}
