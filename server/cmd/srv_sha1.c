/*
 * srv_sha1.c - SHA-1 from its specification (FIPS 180-4, section 6.1):
 * 512-bit blocks, 80 rounds, big-endian words.
 */
#include "server/cmd/srv_sha1.h"

#include <stdint.h>
#include <string.h>

#define SHA1_BLOCK 64
#define SHA1_WORDS 80
#define SHA1_LEN_BYTES 8
#define BITS_PER_BYTE 8

typedef struct sha1_ctx {
    uint32_t h[5];
    uint8_t block[SHA1_BLOCK];
    size_t used;
    uint64_t total;
} sha1_ctx;

static uint32_t rol(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void compress(sha1_ctx *s, const uint8_t *b)
{
    uint32_t w[SHA1_WORDS], a, bb, c, d, e;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (int i = 16; i < SHA1_WORDS; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    a = s->h[0];
    bb = s->h[1];
    c = s->h[2];
    d = s->h[3];
    e = s->h[4];
    for (int i = 0; i < SHA1_WORDS; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5a827999u;
        } else if (i < 40) {
            f = bb ^ c ^ d;
            k = 0x6ed9eba1u;
        } else if (i < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8f1bbcdcu;
        } else {
            f = bb ^ c ^ d;
            k = 0xca62c1d6u;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += bb;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void update(sha1_ctx *s, const uint8_t *p, size_t n)
{
    s->total += n;
    while (n) {
        size_t take = SHA1_BLOCK - s->used < n ? SHA1_BLOCK - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == SHA1_BLOCK) {
            compress(s, s->block);
            s->used = 0;
        }
    }
}

void srv_sha1_hex(const void *p, size_t n, char hex[SRV_SHA1_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    sha1_ctx s = { { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                     0xc3d2e1f0u },
                   { 0 },
                   0,
                   0 };
    uint8_t pad = 0x80, zero = 0, len[SHA1_LEN_BYTES];
    uint64_t bits;

    update(&s, p, n);
    bits = s.total * BITS_PER_BYTE;
    update(&s, &pad, 1);
    while (s.used != SHA1_BLOCK - SHA1_LEN_BYTES)
        update(&s, &zero, 1);
    for (int i = 0; i < SHA1_LEN_BYTES; i++)
        len[i] = (uint8_t)(bits >> (56 - 8 * i));
    update(&s, len, SHA1_LEN_BYTES);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            uint8_t byte = (uint8_t)(s.h[i] >> (24 - 8 * j));
            hex[i * 8 + j * 2] = digits[byte >> 4];
            hex[i * 8 + j * 2 + 1] = digits[byte & 0xf];
        }
    hex[SRV_SHA1_HEX_LEN] = '\0';
}
