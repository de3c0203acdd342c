/*
 * srv_dict.c - byte-string hash table with SipHash-1-3 (Aumasson and
 * Bernstein's construction: one compression round per 8-byte word, three
 * finalisation rounds) under a key drawn from getrandom() on first use.
 */
#include "server/srv_dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DICT_MIN_SIZE 16
#define SIP_WORD 8
#define SIP_LEN_SHIFT 56
#define SIP_FINAL 0xff

static uint64_t sip_k0, sip_k1;
static int sip_keyed;

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;

    for (int i = SIP_WORD - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND           \
    do {                   \
        v0 += v1;          \
        v1 = rotl(v1, 13); \
        v1 ^= v0;          \
        v0 = rotl(v0, 32); \
        v2 += v3;          \
        v3 = rotl(v3, 16); \
        v3 ^= v2;          \
        v0 += v3;          \
        v3 = rotl(v3, 21); \
        v3 ^= v0;          \
        v2 += v1;          \
        v1 = rotl(v1, 17); \
        v1 ^= v2;          \
        v2 = rotl(v2, 32); \
    } while (0)

/* A key per process; a weak one (time and pid) only if getrandom fails. */
static void sip_key(void)
{
    uint64_t k[2];

    if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
        k[1] = (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts;
    }
    sip_k0 = k[0];
    sip_k1 = k[1];
    sip_keyed = 1;
}

uint64_t srv_dict_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t v0, v1, v2, v3, m, last;
    size_t i, words = len / SIP_WORD;

    if (!sip_keyed)
        sip_key();
    v0 = sip_k0 ^ 0x736f6d6570736575ull;
    v1 = sip_k1 ^ 0x646f72616e646f6dull;
    v2 = sip_k0 ^ 0x6c7967656e657261ull;
    v3 = sip_k1 ^ 0x7465646279746573ull;
    for (i = 0; i < words; i++) {
        m = load_le64(p + i * SIP_WORD);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    last = (uint64_t)len << SIP_LEN_SHIFT;
    for (i = 0; i < len % SIP_WORD; i++)
        last |= (uint64_t)p[words * SIP_WORD + i] << (8 * i);
    v3 ^= last;
    SIPROUND;
    v0 ^= last;
    v2 ^= SIP_FINAL;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

srv_dict_entry *srv_dict_find(const srv_dict *d, const void *key, size_t len,
                              uint64_t hash)
{
    if (!d->tab)
        return NULL;
    for (srv_dict_entry *e = d->tab[hash & (d->size - 1)]; e; e = e->next)
        if (e->hash == hash && e->klen == len && memcmp(e->key, key, len) == 0)
            return e;
    return NULL;
}

static int grow(srv_dict *d)
{
    size_t size = d->size ? d->size * 2 : DICT_MIN_SIZE;
    srv_dict_entry **tab = calloc(size, sizeof *tab);

    if (!tab)
        return ENOMEM;
    for (size_t i = 0; i < d->size; i++)
        for (srv_dict_entry *e = d->tab[i], *next; e; e = next) {
            next = e->next;
            e->next = tab[e->hash & (size - 1)];
            tab[e->hash & (size - 1)] = e;
        }
    free(d->tab);
    d->tab = tab;
    d->size = size;
    return 0;
}

srv_dict_entry *srv_dict_add(srv_dict *d, const void *key, size_t len,
                             uint64_t hash)
{
    srv_dict_entry *e;

    if (d->count >= d->size && grow(d) && !d->tab)
        return NULL; /* a full table still takes more */
    if (len > (size_t)-1 - sizeof *e || !(e = malloc(sizeof *e + len)))
        return NULL;
    e->hash = hash;
    e->val = NULL;
    e->aux = 0;
    e->klen = len;
    if (len)
        memcpy(e->key, key, len);
    e->next = d->tab[hash & (d->size - 1)];
    d->tab[hash & (d->size - 1)] = e;
    d->count++;
    return e;
}

void srv_dict_remove(srv_dict *d, srv_dict_entry *e)
{
    srv_dict_entry **pp = &d->tab[e->hash & (d->size - 1)];

    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    free(e);
    if (--d->count == 0) {
        free(d->tab);
        d->tab = NULL;
        d->size = 0;
    }
}

void srv_dict_clear(srv_dict *d, void (*fn)(srv_dict_entry *e))
{
    for (size_t i = 0; i < d->size; i++)
        for (srv_dict_entry *e = d->tab[i], *next; e; e = next) {
            next = e->next;
            if (fn)
                fn(e);
            free(e);
        }
    free(d->tab);
    d->tab = NULL;
    d->size = d->count = 0;
}

void srv_dict_iter_init(srv_dict_iter *it, const srv_dict *d)
{
    it->d = d;
    it->bucket = 0;
    it->next = NULL;
    while (it->bucket < d->size && !(it->next = d->tab[it->bucket]))
        it->bucket++;
}

srv_dict_entry *srv_dict_iter_next(srv_dict_iter *it)
{
    srv_dict_entry *e = it->next;

    if (!e)
        return NULL;
    /* Step past e now, so the caller may remove it. */
    if (!(it->next = e->next)) {
        /* The table may be freed by removing its last entry: only look at
         * further buckets while the iteration still has some. */
        while (++it->bucket < it->d->size &&
               !(it->next = it->d->tab[it->bucket]))
            ;
    }
    return e;
}
