/* check_shm_cache.c — the shared-memory cache: index, version ordering,
 * tombstones and stale fills, flush, expiry, budget and eviction policies,
 * the mapped layout, counters, recovery from a process dying inside a
 * stripe lock, and several processes hammering the same keys. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/shm_cache.h"
#include "shm/shm_cache_layout.h"

#define T_KIB 1024u
#define T_MIB (1024u * 1024u)
#define T_VAL_MAX 4096
#define T_WAIT_TIMEOUT 10 /* seconds, for test cases that wait */
#define T_HAMMER_TIMEOUT 30
#define T_FUTEX_WAITERS 0x80000000u /* glibc/Linux futex word bit */
#define T_POLL_NS 1000000L          /* 1 ms between polls */
#define T_POLL_MAX 2000             /* polls before giving up (2 s) */

static shm_cache_t *g_c;

/* --- helpers -------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t hash_key(const void *k, size_t n)
{
    const unsigned char *p = k;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return mix64(h);
}

static shm_cache_t *mk(size_t budget, size_t max, unsigned nstripes,
                       shm_cache_policy_t pol)
{
    shm_cache_opts_t o;
    shm_cache_t *c = NULL;

    memset(&o, 0, sizeof(o));
    o.budget_bytes = budget;
    o.max_bytes = max;
    o.nstripes = nstripes;
    o.policy = pol;
    ck_assert_int_eq(shm_cache_create(&o, &c), 0);
    ck_assert_ptr_nonnull(c);
    return c;
}

static shm_cache_entry_t ent(const char *key, const void *val, size_t vlen,
                             uint64_t version)
{
    shm_cache_entry_t e;

    memset(&e, 0, sizeof(e));
    e.key = key;
    e.klen = strlen(key);
    e.hash = hash_key(key, e.klen);
    e.val = val;
    e.vlen = vlen;
    e.version = version;
    e.type = 1;
    return e;
}

static int put_s(shm_cache_t *c, const char *key, const char *val,
                 uint64_t version)
{
    shm_cache_entry_t e = ent(key, val, strlen(val), version);

    return shm_cache_put(c, &e);
}

static int fill_s(shm_cache_t *c, const char *key, const char *val,
                  uint64_t version, uint64_t snap)
{
    shm_cache_entry_t e = ent(key, val, strlen(val), version);

    return shm_cache_fill(c, &e, snap);
}

static int inv_s(shm_cache_t *c, const char *key, uint64_t version)
{
    return shm_cache_invalidate(c, key, strlen(key), hash_key(key, strlen(key)),
                                version);
}

/* get into a static buffer; returns the code, value NUL-terminated. */
static char g_buf[T_VAL_MAX + 1];
static shm_cache_value_t g_out;

static int get_s(shm_cache_t *c, const char *key, int64_t now)
{
    int rc;

    memset(&g_out, 0, sizeof(g_out));
    g_out.buf = g_buf;
    g_out.cap = T_VAL_MAX;
    rc = shm_cache_get(c, key, strlen(key), hash_key(key, strlen(key)), now,
                       &g_out);
    g_buf[rc == 0 ? g_out.len : 0] = '\0';
    return rc;
}

static shm_cache_stats_t stats(shm_cache_t *c)
{
    shm_cache_stats_t s;

    shm_cache_stats(c, &s);
    return s;
}

static shm_stripe_sh *stripe_of(shm_cache_t *c, const char *key)
{
    size_t len;
    char *base = shm_cache_base(c, &len);
    const shm_region_sh *r = (const shm_region_sh *)(void *)base;
    const shm_cache_hdr_sh *h =
        (const shm_cache_hdr_sh *)(void *)(base + r->payload_off);
    uint64_t hash = hash_key(key, strlen(key));
    unsigned idx = (unsigned)(hash >> SHM_STRIPE_HASH_SHIFT) &
                   (h->nstripes - 1);

    return (shm_stripe_sh *)(void *)(base + h->stripes_off +
                                     (uint64_t)idx * h->stripe_size);
}

static void teardown(void)
{
    ck_assert_int_eq(shm_cache_destroy(&g_c), 0);
    ck_assert_ptr_null(g_c);
}

/* --- core ----------------------------------------------------------- */

START_TEST(put_get_overwrite)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(get_s(g_c, "a", 0), SHM_EMISS);
    ck_assert_int_eq(put_s(g_c, "a", "one", 5), 0);
    ck_assert_int_eq(get_s(g_c, "a", 0), 0);
    ck_assert_str_eq(g_buf, "one");
    ck_assert_uint_eq(g_out.version, 5);
    ck_assert_uint_eq(g_out.type, 1);
    ck_assert_int_eq(put_s(g_c, "a", "two, longer value", 6), 0);
    ck_assert_int_eq(get_s(g_c, "a", 0), 0);
    ck_assert_str_eq(g_buf, "two, longer value");
    ck_assert_uint_eq(g_out.version, 6);
    /* keys are compared as bytes: a prefix is another key */
    ck_assert_int_eq(get_s(g_c, "", 0), SHM_EMISS);
    ck_assert_int_eq(put_s(g_c, "", "", 7), 0);
    ck_assert_int_eq(get_s(g_c, "", 0), 0);
    ck_assert_uint_eq(g_out.len, 0);
    ck_assert_uint_eq(stats(g_c).entries, 2);
}
END_TEST

START_TEST(flags_and_type_round_trip)
{
    shm_cache_entry_t e;
    const char v[] = "\x28\xb5\x2f\xfd compressed";

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    e = ent("z", v, sizeof(v), 9);
    e.type = 7;
    e.flags = 0x81;
    e.expire_at = 123456;
    ck_assert_int_eq(shm_cache_put(g_c, &e), 0);
    ck_assert_int_eq(get_s(g_c, "z", 1000), 0);
    ck_assert_uint_eq(g_out.len, sizeof(v));
    ck_assert_mem_eq(g_buf, v, sizeof(v));
    ck_assert_uint_eq(g_out.type, 7);
    ck_assert_uint_eq(g_out.flags, 0x81);
    ck_assert_int_eq(g_out.expire_at, 123456);
}
END_TEST

START_TEST(older_put_dropped)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "k", "v5", 5), 0);
    ck_assert_int_eq(put_s(g_c, "k", "v3", 3), SHM_ESTALE);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v5");
    ck_assert_int_eq(put_s(g_c, "k", "v7", 7), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v7");
    ck_assert_uint_eq(stats(g_c).puts_dropped, 1);
}
END_TEST

START_TEST(invalidate_leaves_tombstone)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "k", "v5", 5), 0);
    /* an older delete loses to the newer value */
    ck_assert_int_eq(inv_s(g_c, "k", 4), SHM_ESTALE);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_int_eq(inv_s(g_c, "k", 6), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).tombstones, 1);
    ck_assert_uint_eq(stats(g_c).entries, 0);
    /* no resurrection by an older put or fill */
    ck_assert_int_eq(put_s(g_c, "k", "v5", 5), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "k", "v5", 5, 5), SHM_ESTALE);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    /* a newer write replaces the tombstone */
    ck_assert_int_eq(put_s(g_c, "k", "v8", 8), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v8");
    ck_assert_uint_eq(stats(g_c).tombstones, 0);
    /* invalidating a key never cached still blocks older fills */
    ck_assert_int_eq(inv_s(g_c, "never", 10), 0);
    ck_assert_int_eq(fill_s(g_c, "never", "old", 3, 9), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "never", "new", 11, 11), 0);
}
END_TEST

/* Race 1: reader's snapshot S=5 saw v1; writer commits W=7 and updates the
 * cache; then the reader's fill arrives. It must be refused. */
START_TEST(stale_fill_after_invalidate)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(inv_s(g_c, "k", 7), 0);
    ck_assert_int_eq(fill_s(g_c, "k", "v1", 5, 5), SHM_ESTALE);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).fills_refused, 1);
}
END_TEST

START_TEST(stale_fill_after_put)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "k", "v2", 7), 0);
    ck_assert_int_eq(fill_s(g_c, "k", "v1", 5, 6), SHM_ESTALE);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v2");
    ck_assert_uint_eq(stats(g_c).fills_refused, 1);
}
END_TEST

/* Race 2: writer committed W=7 but has not called put; a reader whose
 * snapshot (8) includes W fills the new value: fine, and the writer's put
 * then agrees with it. */
START_TEST(fresh_fill_before_writer_put)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "k", "v1", 5), 0);
    ck_assert_int_eq(fill_s(g_c, "k", "v2", 7, 8), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v2");
    ck_assert_int_eq(put_s(g_c, "k", "v2", 7), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), 0);
    ck_assert_str_eq(g_buf, "v2");
    ck_assert_uint_eq(g_out.version, 7);
    /* a second reader offering the same thing is a no-op */
    ck_assert_int_eq(fill_s(g_c, "k", "v2", 7, 9), 0);
    ck_assert_uint_eq(stats(g_c).fills_refused, 0);
    /* the version a fill carries cannot be newer than its snapshot */
    ck_assert_int_eq(fill_s(g_c, "k", "v9", 9, 8), EINVAL);
}
END_TEST

/* Race 3: reader with S=5 < W fills v1 before the writer's call arrives;
 * the writer's later invalidate/put with W wins. */
START_TEST(early_stale_fill_then_writer_wins)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(fill_s(g_c, "k", "v1", 5, 5), 0);
    ck_assert_int_eq(fill_s(g_c, "j", "v1", 5, 5), 0);
    ck_assert_int_eq(inv_s(g_c, "k", 7), 0);
    ck_assert_int_eq(put_s(g_c, "j", "v2", 7), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    ck_assert_int_eq(get_s(g_c, "j", 0), 0);
    ck_assert_str_eq(g_buf, "v2");
    /* and the reader's retry with its old snapshot is refused */
    ck_assert_int_eq(fill_s(g_c, "k", "v1", 5, 5), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "j", "v1", 5, 5), SHM_ESTALE);
}
END_TEST

/* The tombstone is evicted, yet the stale fill is still refused: its
 * version moved to the stripe's fill floor. Same for an evicted entry. */
START_TEST(stale_fill_after_tombstone_evicted)
{
    char key[32];
    char val[200];
    unsigned i;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    memset(val, 'x', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    ck_assert_int_eq(inv_s(g_c, "dead", 100), 0);
    ck_assert_int_eq(put_s(g_c, "live", "v", 101), 0);
    for (i = 0; i < 2000; i++) {
        snprintf(key, sizeof(key), "filler%u", i);
        ck_assert_int_eq(put_s(g_c, key, val, 200 + i), 0);
    }
    ck_assert_uint_eq(stats(g_c).tombstones, 0);
    ck_assert_int_eq(get_s(g_c, "live", 0), SHM_EMISS);
    ck_assert_int_eq(fill_s(g_c, "dead", "old", 50, 99), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "live", "old", 50, 100), SHM_ESTALE);
    ck_assert_int_eq(put_s(g_c, "live", "old", 100), SHM_ESTALE);
}
END_TEST

START_TEST(flush_all)
{
    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "a", "1", 3), 0);
    ck_assert_int_eq(put_s(g_c, "b", "2", 10), 0);
    ck_assert_int_eq(inv_s(g_c, "c", 4), 0);
    ck_assert_int_eq(put_s(g_c, "d", "newer", 11), 0); /* after flush */
    ck_assert_int_eq(shm_cache_flush_all(g_c, 10), 0);
    ck_assert_int_eq(get_s(g_c, "a", 0), SHM_EMISS);
    ck_assert_int_eq(get_s(g_c, "b", 0), SHM_EMISS);
    ck_assert_int_eq(get_s(g_c, "d", 0), 0);
    ck_assert_str_eq(g_buf, "newer");
    ck_assert_uint_eq(stats(g_c).entries, 1);
    ck_assert_uint_eq(stats(g_c).tombstones, 0);
    /* older fills and puts, on any key, are refused */
    ck_assert_int_eq(fill_s(g_c, "a", "1", 3, 9), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "zz", "?", 3, 9), SHM_ESTALE);
    ck_assert_int_eq(put_s(g_c, "a", "1", 9), SHM_ESTALE);
    ck_assert_int_eq(fill_s(g_c, "zz", "!", 10, 10), 0);
    ck_assert_int_eq(get_s(g_c, "zz", 0), 0);
}
END_TEST

START_TEST(expired_is_miss)
{
    shm_cache_entry_t e;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    e = ent("t", "ttl", 3, 20);
    e.expire_at = 5000;
    ck_assert_int_eq(shm_cache_put(g_c, &e), 0);
    ck_assert_int_eq(get_s(g_c, "t", 4999), 0);
    ck_assert_int_eq(g_out.expire_at, 5000);
    ck_assert_int_eq(get_s(g_c, "t", 5000), SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).entries, 0);
    /* the expired entry's version still refuses older fills */
    ck_assert_int_eq(fill_s(g_c, "t", "pre-ttl", 10, 19), SHM_ESTALE);
    ck_assert_uint_eq(stats(g_c).misses, 1);
}
END_TEST

START_TEST(small_buffer_then_retry)
{
    char small[4];
    char big[64];
    shm_cache_value_t out;
    const char *k = "key";

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, k, "0123456789", 1), 0);
    memset(&out, 0, sizeof(out));
    out.buf = small;
    out.cap = sizeof(small);
    ck_assert_int_eq(shm_cache_get(g_c, k, 3, hash_key(k, 3), 0, &out),
                     SHM_ETOOSMALL);
    ck_assert_uint_eq(out.len, 10);
    out.buf = NULL;
    out.cap = 0;
    ck_assert_int_eq(shm_cache_get(g_c, k, 3, hash_key(k, 3), 0, &out),
                     SHM_ETOOSMALL);
    out.buf = big;
    out.cap = out.len;
    ck_assert_int_eq(shm_cache_get(g_c, k, 3, hash_key(k, 3), 0, &out), 0);
    ck_assert_mem_eq(big, "0123456789", 10);
    ck_assert_uint_eq(stats(g_c).hits, 1);
}
END_TEST

START_TEST(too_big_put_invalidates)
{
    size_t max;
    char *v;
    shm_cache_entry_t e;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    max = shm_cache_max_item(g_c);
    ck_assert_uint_gt(max, 1000);
    v = calloc(1, max + 1);
    ck_assert_ptr_nonnull(v);
    memset(v, 'b', max);
    ck_assert_int_eq(put_s(g_c, "k", "small", 5), 0);
    e = ent("k", v, max, 6); /* klen 1 + max > max_item */
    ck_assert_int_eq(shm_cache_put(g_c, &e), SHM_ETOOBIG);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    ck_assert_int_eq(fill_s(g_c, "k", "small", 5, 5), SHM_ESTALE);
    e = ent("k", v, max - 1, 7); /* exactly the largest item */
    ck_assert_int_eq(shm_cache_put(g_c, &e), 0);
    e = ent("j", v, max, 1);
    ck_assert_int_eq(shm_cache_fill(g_c, &e, 1), SHM_ETOOBIG);
    free(v);
}
END_TEST

START_TEST(cache_off_is_noop)
{
    shm_cache_t *none = NULL;
    shm_cache_stats_t s;

    g_c = mk(0, 0, 0, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(shm_cache_enabled(g_c), 0);
    ck_assert_int_eq(put_s(g_c, "k", "v", 1), 0);
    ck_assert_int_eq(fill_s(g_c, "k", "v", 1, 1), 0);
    ck_assert_int_eq(inv_s(g_c, "k", 2), 0);
    ck_assert_int_eq(get_s(g_c, "k", 0), SHM_EMISS);
    ck_assert_int_eq(shm_cache_flush_all(g_c, 3), 0);
    ck_assert_int_eq(shm_cache_set_budget(g_c, 0), 0);
    ck_assert_int_eq(shm_cache_set_budget(g_c, T_MIB), SHM_ERESTART);
    ck_assert_uint_eq(shm_cache_max_item(g_c), 0);
    shm_cache_stats(g_c, &s);
    ck_assert_uint_eq(s.budget + s.hits + s.misses + s.nstripes, 0);
    ck_assert_int_eq(get_s(none, "k", 0), SHM_EMISS);
    ck_assert_int_eq(put_s(none, "k", "v", 1), 0);
    ck_assert_int_eq(shm_cache_enabled(none), 0);
}
END_TEST

START_TEST(create_rejects_bad_opts)
{
    shm_cache_opts_t o;
    shm_cache_t *c = NULL;

    memset(&o, 0, sizeof(o));
    o.budget_bytes = T_MIB;
    o.nstripes = 3;
    ck_assert_int_eq(shm_cache_create(&o, &c), EINVAL);
    o.nstripes = 2 * SHM_CACHE_STRIPES_MAX;
    ck_assert_int_eq(shm_cache_create(&o, &c), EINVAL);
    o.nstripes = 0;
    o.policy = SHM_POLICY_COUNT;
    ck_assert_int_eq(shm_cache_create(&o, &c), EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(shm_strerror(SHM_ERESTART),
                     "cache budget above mapped size: needs restart");
    ck_assert_str_eq(shm_strerror(ENOMEM), strerror(ENOMEM));
}
END_TEST

START_TEST(attach_checks_header)
{
    shm_cache_t *a = NULL;
    size_t len;
    char *base;
    shm_region_sh *r;
    shm_cache_hdr_sh *h;
    uint32_t saved;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    base = shm_cache_base(g_c, &len);
    r = (shm_region_sh *)(void *)base;
    h = (shm_cache_hdr_sh *)(void *)(base + r->payload_off);
    ck_assert_int_eq(put_s(g_c, "k", "v", 1), 0);
    ck_assert_int_eq(shm_cache_attach(base, len, &a), 0);
    ck_assert_int_eq(get_s(a, "k", 0), 0); /* same data, other handle */
    shm_cache_detach(&a);
    ck_assert_ptr_null(a);
    ck_assert_int_eq(shm_cache_attach(base, len - 4096, &a), SHM_ELAYOUT);
    r->magic ^= 1;
    ck_assert_int_eq(shm_cache_attach(base, len, &a), SHM_EBADMAGIC);
    r->magic ^= 1;
    r->layout_version++;
    ck_assert_int_eq(shm_cache_attach(base, len, &a), SHM_EVERSION);
    r->layout_version--;
    saved = h->nstripes;
    h->nstripes = 3;
    ck_assert_int_eq(shm_cache_attach(base, len, &a), SHM_ELAYOUT);
    h->nstripes = saved;
    h->data_off -= SHM_CACHE_LINE;
    ck_assert_int_eq(shm_cache_attach(base, len, &a), SHM_ELAYOUT);
    h->data_off += SHM_CACHE_LINE;
    ck_assert_int_eq(shm_cache_attach(base, len, &a), 0);
    shm_cache_detach(&a);
}
END_TEST

/* shm_cache_prefetch is only a hint: whatever the hashes (present keys,
 * absent ones, garbage), it changes no result and no counter, and an off
 * or NULL cache ignores it. */
START_TEST(prefetch_is_only_a_hint)
{
    uint64_t h[6];
    shm_cache_stats_t before, after;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    ck_assert_int_eq(put_s(g_c, "a", "1", 1), 0);
    ck_assert_int_eq(put_s(g_c, "b", "2", 2), 0);
    ck_assert_int_eq(inv_s(g_c, "c", 3), 0);
    h[0] = hash_key("a", 1);
    h[1] = hash_key("b", 1);
    h[2] = hash_key("c", 1);
    h[3] = hash_key("absent", 6);
    h[4] = 0;
    h[5] = UINT64_MAX;
    before = stats(g_c);
    shm_cache_prefetch(g_c, h, 6);
    shm_cache_prefetch(g_c, h, 0);
    after = stats(g_c);
    ck_assert_uint_eq(after.hits, before.hits);
    ck_assert_uint_eq(after.misses, before.misses);
    ck_assert_uint_eq(after.entries, before.entries);
    ck_assert_uint_eq(after.tombstones, before.tombstones);
    ck_assert_uint_eq(after.bytes_used, before.bytes_used);
    ck_assert_uint_eq(after.lock_waits, before.lock_waits);
    ck_assert_int_eq(get_s(g_c, "a", 0), 0);
    ck_assert_str_eq(g_buf, "1");
    ck_assert_int_eq(get_s(g_c, "b", 0), 0);
    ck_assert_str_eq(g_buf, "2");
    ck_assert_int_eq(get_s(g_c, "c", 0), SHM_EMISS);
    ck_assert_int_eq(get_s(g_c, "absent", 0), SHM_EMISS);
    shm_cache_prefetch(NULL, h, 6);
    {
        shm_cache_t *offc = mk(0, 0, 0, SHM_POLICY_DEFAULT);
        shm_cache_prefetch(offc, h, 6);
        shm_cache_destroy(&offc);
    }
}
END_TEST

/* --- layout --------------------------------------------------------- */

/* These numbers are the mapped ABI: change them only with
 * SHM_CACHE_LAYOUT_VERSION. */
START_TEST(layout_pins)
{
    ck_assert_uint_eq(SHM_CACHE_LAYOUT_VERSION, 2);
    ck_assert_uint_eq(sizeof(shm_region_sh), 64);
    ck_assert_uint_eq(offsetof(shm_region_sh, layout_version), 8);
    ck_assert_uint_eq(offsetof(shm_region_sh, region_size), 16);
    ck_assert_uint_eq(offsetof(shm_region_sh, payload_off), 24);
    ck_assert_uint_eq(sizeof(shm_lock_sh), 64);
    ck_assert_uint_eq(offsetof(shm_lock_sh, waits), 40);
    ck_assert_uint_eq(sizeof(shm_cache_hdr_sh), 384);
    ck_assert_uint_eq(offsetof(shm_cache_hdr_sh, stripe_size), 32);
    ck_assert_uint_eq(offsetof(shm_cache_hdr_sh, class_size), 80);
    ck_assert_uint_eq(offsetof(shm_cache_hdr_sh, budget), 320);
    ck_assert_uint_eq(sizeof(shm_stripe_sh), 1216);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, lock), 0);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, max_seen), 64);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, floor), 128);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, seg), 136);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, slot_floor), 184);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, ctr), 696);
    ck_assert_uint_eq(offsetof(shm_stripe_sh, slab), 760);
    ck_assert_uint_eq(sizeof(shm_list_sh), 24);
    ck_assert_uint_eq(sizeof(shm_stripe_ctr_sh), 64);
    ck_assert_uint_eq(sizeof(shm_slab_sh), 400);
    ck_assert_uint_eq(sizeof(shm_slab_page_sh), 24);
    ck_assert_uint_eq(sizeof(shm_item_sh), 56);
    ck_assert_uint_eq(offsetof(shm_item_sh, magic), 4);
    ck_assert_uint_eq(offsetof(shm_item_sh, hash), 16);
    ck_assert_uint_eq(offsetof(shm_item_sh, version), 24);
    ck_assert_uint_eq(offsetof(shm_item_sh, expire_at), 32);
    ck_assert_uint_eq(offsetof(shm_item_sh, klen), 40);
    ck_assert_uint_eq(offsetof(shm_item_sh, type), 48);
    ck_assert_uint_eq(offsetof(shm_item_sh, cls), 52);
    ck_assert_uint_eq(offsetof(shm_item_sh, ref), 53);
}
END_TEST

START_TEST(geometry_defaults)
{
    shm_cache_stats_t s;

    g_c = mk(64 * T_MIB, 0, 0, SHM_POLICY_DEFAULT);
    s = stats(g_c);
    ck_assert_uint_eq(s.nstripes, SHM_CACHE_STRIPES_DEFAULT);
    ck_assert_uint_eq(s.budget, 64 * T_MIB);
    ck_assert_uint_eq(s.max_bytes, 64 * T_MIB);
    ck_assert_uint_eq(s.page_size, 16 * T_KIB);
    ck_assert_int_eq(s.policy, SHM_POLICY_SLRU);
    ck_assert_uint_eq(s.max_item, 16 * T_KIB - sizeof(shm_item_sh));
    shm_cache_destroy(&g_c);
    /* a small budget gets fewer stripes, never below 64 KiB each */
    g_c = mk(T_MIB, 0, 0, SHM_POLICY_DEFAULT);
    ck_assert_uint_eq(stats(g_c).nstripes, 16);
}
END_TEST

/* --- counters ------------------------------------------------------- */

START_TEST(counters)
{
    shm_cache_stats_t s;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    put_s(g_c, "a", "1", 1);
    put_s(g_c, "b", "2", 2);
    get_s(g_c, "a", 0);
    get_s(g_c, "a", 0);
    get_s(g_c, "x", 0);
    inv_s(g_c, "b", 3);
    fill_s(g_c, "b", "2", 2, 2);
    put_s(g_c, "a", "0", 0);
    s = stats(g_c);
    ck_assert_uint_eq(s.hits, 2);
    ck_assert_uint_eq(s.misses, 1);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.tombstones, 1);
    ck_assert_uint_eq(s.fills_refused, 1);
    ck_assert_uint_eq(s.puts_dropped, 1);
    ck_assert_uint_eq(s.bytes_used, 2 * SHM_SLAB_MIN_CHUNK);
    ck_assert_uint_ge(s.bytes_slab, s.page_size);
    ck_assert_uint_eq(s.evictions, 0);
    ck_assert_uint_eq(s.owner_dead, 0);
    ck_assert_uint_eq(s.lock_waits, 0);
}
END_TEST

/* --- limits: eviction, budget, policies ----------------------------- */

static char g_val60[61] =
    "012345678901234567890123456789012345678901234567890123456789";

/* Put fixed-size entries k0, k1, ... until the first eviction; returns how
 * many fit. One stripe, so the order is exact. */
static unsigned fill_to_capacity(shm_cache_t *c)
{
    char key[16];
    unsigned i;

    for (i = 0;; i++) {
        snprintf(key, sizeof(key), "k%04u", i);
        ck_assert_int_eq(put_s(c, key, g_val60, i + 1), 0);
        if (stats(c).evictions > 0)
            return i;
    }
}

START_TEST(lru_order)
{
    char key[16];
    unsigned n;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    n = fill_to_capacity(g_c);
    ck_assert_uint_gt(n, 100);
    ck_assert_int_eq(get_s(g_c, "k0000", 0), SHM_EMISS); /* oldest went */
    ck_assert_int_eq(get_s(g_c, "k0001", 0), 0);         /* touch */
    snprintf(key, sizeof(key), "k%04u", n + 1);
    ck_assert_int_eq(put_s(g_c, key, g_val60, n + 2), 0);
    ck_assert_int_eq(get_s(g_c, "k0002", 0), SHM_EMISS); /* next LRU */
    ck_assert_int_eq(get_s(g_c, "k0001", 0), 0);
    ck_assert_int_eq(get_s(g_c, "k0003", 0), 0);
    ck_assert_uint_eq(stats(g_c).evictions, 2);
    ck_assert_uint_le(stats(g_c).bytes_slab, 64 * T_KIB);
}
END_TEST

/* The item of key in a one-stripe cache (walks both lists), or NULL. */
static shm_item_sh *item_of(shm_cache_t *c, const char *key)
{
    shm_stripe_sh *st = stripe_of(c, key);
    size_t klen = strlen(key);
    unsigned seg;

    for (seg = 0; seg < SHM_NSEGS; seg++) {
        uint32_t ref = st->seg[seg].head;
        while (ref != 0) {
            shm_item_sh *it = (shm_item_sh *)(void *)((char *)st + ref);
            if (it->klen == klen && memcmp(it + 1, key, klen) == 0)
                return it;
            ref = it->next;
        }
    }
    return NULL;
}

/* Lazy promotion: a hit sets the item's reference bit and writes nothing
 * else — no list links, no neighbour, no list head — and a second hit
 * writes nothing at all. (The old rule moved the item on every hit.) */
static void hit_writes_only_its_bit(shm_cache_policy_t pol)
{
    char key[16];
    unsigned n;
    shm_stripe_sh *st;
    shm_list_sh before[SHM_NSEGS];
    shm_item_sh *it, *prev, *next, copy_it, copy_prev, copy_next;

    g_c = mk(64 * T_KIB, 0, 1, pol);
    n = fill_to_capacity(g_c);
    snprintf(key, sizeof(key), "k%04u", n / 2);
    st = stripe_of(g_c, key);
    it = item_of(g_c, key);
    ck_assert_ptr_nonnull(it);
    ck_assert_uint_ne(it->prev, 0);
    ck_assert_uint_ne(it->next, 0);
    ck_assert_uint_eq(it->ref, 0);
    prev = (shm_item_sh *)(void *)((char *)st + it->prev);
    next = (shm_item_sh *)(void *)((char *)st + it->next);
    memcpy(before, st->seg, sizeof(before));
    copy_it = *it;
    copy_prev = *prev;
    copy_next = *next;

    ck_assert_int_eq(get_s(g_c, key, 0), 0);
    ck_assert_uint_eq(it->ref, 1);
    ck_assert_uint_eq(it->seg, SHM_SEG_PROBATION);
    ck_assert_int_eq(memcmp(st->seg, before, sizeof(before)), 0);
    ck_assert_int_eq(memcmp(prev, &copy_prev, sizeof(*prev)), 0);
    ck_assert_int_eq(memcmp(next, &copy_next, sizeof(*next)), 0);
    copy_it.ref = 1;
    ck_assert_int_eq(memcmp(it, &copy_it, sizeof(*it)), 0);

    ck_assert_int_eq(get_s(g_c, key, 0), 0);
    ck_assert_int_eq(memcmp(it, &copy_it, sizeof(*it)), 0);
    ck_assert_int_eq(memcmp(st->seg, before, sizeof(before)), 0);
}

START_TEST(lru_hit_writes_only_its_bit)
{
    hit_writes_only_its_bit(SHM_POLICY_LRU);
}
END_TEST

START_TEST(slru_hit_writes_only_its_bit)
{
    hit_writes_only_its_bit(SHM_POLICY_SLRU);
}
END_TEST

/* LRU (CLOCK): a hit item reaching the cold end is spared once — back to
 * the head, bit cleared — and goes on its next turn unless hit again. */
START_TEST(lru_second_chance)
{
    char key[16];
    unsigned n, i;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    n = fill_to_capacity(g_c); /* k0001 .. k<n> present, k0001 coldest */
    ck_assert_int_eq(get_s(g_c, "k0001", 0), 0);
    ck_assert_int_eq(get_s(g_c, "k0003", 0), 0);
    snprintf(key, sizeof(key), "x%04u", 0);
    ck_assert_int_eq(put_s(g_c, key, g_val60, n + 2), 0);
    ck_assert_int_eq(get_s(g_c, "k0002", 0), SHM_EMISS); /* victim */
    ck_assert_ptr_nonnull(item_of(g_c, "k0001"));
    ck_assert_uint_eq(item_of(g_c, "k0001")->ref, 0); /* cleared */
    ck_assert_int_eq(stripe_of(g_c, "k0001")->seg[SHM_SEG_PROBATION].head,
                     (uint32_t)((char *)item_of(g_c, key) -
                                (char *)stripe_of(g_c,
                                                  key))); /* newest first */
    /* k0003 is spared on the next turn (after x0000 went in); then
     * every other one goes in order, and the spared ones go when their
     * turn comes again: k0001, x0000, k0003 */
    for (i = 1; i < n - 2; i++) {
        snprintf(key, sizeof(key), "x%04u", i);
        ck_assert_int_eq(put_s(g_c, key, g_val60, n + 2 + i), 0);
    }
    ck_assert_int_eq(get_s(g_c, "k0004", 0), SHM_EMISS);
    snprintf(key, sizeof(key), "k%04u", n);
    ck_assert_ptr_null(item_of(g_c, key));
    ck_assert_ptr_nonnull(item_of(g_c, "k0001"));
    ck_assert_ptr_nonnull(item_of(g_c, "k0003"));
    ck_assert_int_eq(put_s(g_c, "y0", g_val60, 2 * n + 10), 0);
    ck_assert_ptr_null(item_of(g_c, "k0001"));
    ck_assert_int_eq(put_s(g_c, "y1", g_val60, 2 * n + 11), 0);
    ck_assert_ptr_null(item_of(g_c, "x0000"));
    ck_assert_ptr_nonnull(item_of(g_c, "k0003"));
    ck_assert_int_eq(put_s(g_c, "y2", g_val60, 2 * n + 12), 0);
    ck_assert_ptr_null(item_of(g_c, "k0003"));
}
END_TEST

/* Invalidating a key whose chunk already has the tombstone's size retires
 * the item in place: same chunk, same list position, neighbours and list
 * ends untouched; the rules hold (older fills refused, newer accepted).
 * A big entry is freed instead and the tombstone takes free room. */
START_TEST(invalidate_retires_in_place)
{
    static char big[1500];
    char key[16];
    unsigned n;
    shm_stripe_sh *st;
    shm_list_sh before[SHM_NSEGS];
    shm_item_sh *it, *prev, *next, copy_prev, copy_next;
    shm_cache_stats_t s0, s1;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_SLRU);
    n = fill_to_capacity(g_c);
    snprintf(key, sizeof(key), "k%04u", n / 2);
    ck_assert_int_eq(inv_s(g_c, key, n + 5), 0);          /* v60 -> tomb */
    ck_assert_int_eq(fill_s(g_c, key, "x", 2, n + 5), 0); /* tomb -> 1B */
    st = stripe_of(g_c, key);
    it = item_of(g_c, key);
    prev = (shm_item_sh *)(void *)((char *)st + it->prev);
    next = (shm_item_sh *)(void *)((char *)st + it->next);
    memcpy(before, st->seg, sizeof(before));
    copy_prev = *prev;
    copy_next = *next;
    s0 = stats(g_c);

    ck_assert_int_eq(inv_s(g_c, key, n + 10), 0);
    ck_assert_ptr_eq(item_of(g_c, key), it);
    ck_assert_uint_eq(it->kind, SHM_ITEM_TOMB);
    ck_assert_uint_eq(it->version, n + 10);
    ck_assert_uint_eq(it->vlen, 0);
    ck_assert_int_eq(memcmp(st->seg, before, sizeof(before)), 0);
    ck_assert_int_eq(memcmp(prev, &copy_prev, sizeof(*prev)), 0);
    ck_assert_int_eq(memcmp(next, &copy_next, sizeof(*next)), 0);
    s1 = stats(g_c);
    ck_assert_uint_eq(s1.entries, s0.entries - 1);
    ck_assert_uint_eq(s1.tombstones, s0.tombstones + 1);
    ck_assert_uint_eq(s1.bytes_used, s0.bytes_used);
    ck_assert_uint_eq(s1.evictions, s0.evictions);
    ck_assert_int_eq(get_s(g_c, key, 0), SHM_EMISS);
    ck_assert_int_eq(fill_s(g_c, key, "old", 3, n + 9), SHM_ESTALE);
    ck_assert_int_eq(inv_s(g_c, key, n + 8), SHM_ESTALE); /* older */
    ck_assert_int_eq(inv_s(g_c, key, n + 11), 0);         /* again */
    ck_assert_ptr_eq(item_of(g_c, key), it);
    ck_assert_int_eq(fill_s(g_c, key, "new", n + 11, n + 11), 0);
    ck_assert_int_eq(get_s(g_c, key, 0), 0);
    ck_assert_str_eq(g_buf, "new");
    shm_cache_destroy(&g_c);

    /* a big entry's chunk is not kept for a tombstone */
    g_c = mk(T_MIB, 0, 1, SHM_POLICY_SLRU);
    memset(big, 'b', sizeof(big) - 1);
    ck_assert_int_eq(put_s(g_c, "big", big, 1), 0);
    s0 = stats(g_c);
    ck_assert_int_eq(inv_s(g_c, "big", 2), 0);
    s1 = stats(g_c);
    ck_assert_uint_eq(s1.entries, 0);
    ck_assert_uint_eq(s1.tombstones, 1);
    ck_assert_uint_lt(s1.bytes_used, s0.bytes_used);
    ck_assert_int_eq(fill_s(g_c, "big", "old", 1, 1), SHM_ESTALE);
}
END_TEST

/* One victim search moves at most SHM_SECOND_CHANCES hit items, so an
 * eviction never walks a whole list under the lock: with every entry hit,
 * the first put spares the SHM_SECOND_CHANCES coldest and evicts the
 * next. */
START_TEST(second_chances_bounded)
{
    char key[16];
    unsigned n, i;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    n = fill_to_capacity(g_c);
    ck_assert_uint_gt(n, SHM_SECOND_CHANCES + 2);
    for (i = 1; i <= n; i++) {
        snprintf(key, sizeof(key), "k%04u", i);
        ck_assert_int_eq(get_s(g_c, key, 0), 0);
    }
    ck_assert_int_eq(put_s(g_c, "new", g_val60, n + 2), 0);
    for (i = 1; i <= n; i++) {
        snprintf(key, sizeof(key), "k%04u", i);
        if (i == SHM_SECOND_CHANCES + 1)
            ck_assert_ptr_null(item_of(g_c, key));
        else
            ck_assert_ptr_nonnull(item_of(g_c, key));
    }
}
END_TEST

/* SLRU: hits don't move anything; promotion happens at the probation
 * tail when room is needed. Every entry hit once, then new entries: the
 * hit ones are promoted (bit cleared) until the protected segment is at
 * its share, its overflow goes back to probation, victims come from
 * there, and the protected segment never exceeds its share. */
START_TEST(slru_protected_capped)
{
    char key[16];
    unsigned n, i, kept = 0;
    const shm_stripe_sh *st;
    uint64_t cap = (uint64_t)64 * T_KIB * 80 / 100;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_SLRU);
    n = fill_to_capacity(g_c); /* k0001 .. k<n> present */
    for (i = 1; i <= n; i++) {
        snprintf(key, sizeof(key), "k%04u", i);
        ck_assert_int_eq(get_s(g_c, key, 0), 0);
    }
    st = stripe_of(g_c, "k0001");
    ck_assert_uint_eq(st->seg[SHM_SEG_PROTECTED].count, 0); /* lazy */
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "x%04u", i);
        ck_assert_int_eq(put_s(g_c, key, g_val60, n + 2 + i), 0);
        ck_assert_uint_le(st->seg[SHM_SEG_PROTECTED].bytes, cap);
    }
    ck_assert_uint_gt(st->seg[SHM_SEG_PROTECTED].bytes, cap * 9 / 10);
    ck_assert_uint_gt(st->seg[SHM_SEG_PROBATION].count, 0);
    ck_assert_uint_eq(st->seg[SHM_SEG_PROBATION].count +
                          st->seg[SHM_SEG_PROTECTED].count,
                      stats(g_c).entries);
    /* n new entries went through a full cache: the hit entries that
     * were promoted are still here, the new ones were the victims */
    for (i = 1; i <= n; i++) {
        snprintf(key, sizeof(key), "k%04u", i);
        kept += item_of(g_c, key) != NULL;
    }
    ck_assert_uint_ge(kept, st->seg[SHM_SEG_PROTECTED].count);
    ck_assert_uint_gt(stats(g_c).evictions, n / 2);
}
END_TEST

/* A tombstone sits at the cold end: the first eviction takes it (and its
 * version goes to the floor), not an entry. */
START_TEST(tombstone_evicted_first)
{
    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    ck_assert_int_eq(inv_s(g_c, "gone", 100000), 0);
    ck_assert_uint_eq(stats(g_c).tombstones, 1);
    fill_to_capacity(g_c);
    ck_assert_uint_eq(stats(g_c).evictions, 1);
    ck_assert_uint_eq(stats(g_c).tombstones, 0);
    ck_assert_int_eq(get_s(g_c, "k0000", 0), 0);
    ck_assert_int_eq(fill_s(g_c, "gone", "old", 5, 99999), SHM_ESTALE);
}
END_TEST

/* In a full stripe whose pages all belong to another class, a delete does
 * not evict entries to keep a tombstone: it falls back to the floor. */
START_TEST(tombstone_never_evicts)
{
    unsigned n;
    shm_cache_stats_t before, after;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_LRU);
    n = fill_to_capacity(g_c);
    before = stats(g_c);
    ck_assert_int_eq(inv_s(g_c, "k0005", n + 10), 0);
    after = stats(g_c);
    ck_assert_uint_eq(after.evictions, before.evictions);
    ck_assert_uint_eq(after.entries, before.entries - 1);
    ck_assert_uint_eq(after.tombstones, 0);
    ck_assert_int_eq(get_s(g_c, "k0005", 0), SHM_EMISS);
    ck_assert_int_eq(fill_s(g_c, "k0005", "old", 6, n + 9), SHM_ESTALE);
    /* a key too long for any chunk is still invalidated, by the floor */
    {
        size_t big = shm_cache_max_item(g_c) + 1;
        char *k = malloc(big + 1);
        shm_cache_entry_t e;
        ck_assert_ptr_nonnull(k);
        memset(k, 'q', big);
        k[big] = '\0';
        ck_assert_int_eq(inv_s(g_c, k, n + 20), 0);
        e = ent(k, "v", 1, 3);
        ck_assert_int_eq(shm_cache_fill(g_c, &e, n + 19), SHM_ESTALE);
        free(k);
    }
}
END_TEST

/* A hot set read twice, then a scan of fresh keys three times the cache:
 * SLRU keeps the hot set in its protected segment, LRU loses all of it. */
static unsigned hot_hits_after_scan(shm_cache_policy_t pol)
{
    char key[16];
    unsigned i, hits = 0, cap;
    const unsigned hot = 100;

    g_c = mk(64 * T_KIB, 0, 1, pol);
    cap = 64 * T_KIB / 136; /* 136-byte chunks for these entries */
    for (i = 0; i < hot; i++) {
        snprintf(key, sizeof(key), "h%04u", i);
        put_s(g_c, key, g_val60, i + 1);
        ck_assert_int_eq(get_s(g_c, key, 0), 0);
        ck_assert_int_eq(get_s(g_c, key, 0), 0);
    }
    for (i = 0; i < 3 * cap; i++) {
        snprintf(key, sizeof(key), "s%04u", i);
        ck_assert_int_eq(get_s(g_c, key, 0), SHM_EMISS);
        ck_assert_int_eq(fill_s(g_c, key, g_val60, 1000 + i, 1000 + i), 0);
    }
    for (i = 0; i < hot; i++) {
        snprintf(key, sizeof(key), "h%04u", i);
        hits += get_s(g_c, key, 0) == 0;
    }
    return hits;
}

START_TEST(slru_resists_scan)
{
    ck_assert_uint_eq(hot_hits_after_scan(SHM_POLICY_SLRU), 100);
}
END_TEST

START_TEST(lru_loses_to_scan)
{
    ck_assert_uint_eq(hot_hits_after_scan(SHM_POLICY_LRU), 0);
}
END_TEST

/* SLRU: with no hits, probation is plain LRU; a hit protects. */
START_TEST(slru_order)
{
    char key[16];
    unsigned n;

    g_c = mk(64 * T_KIB, 0, 1, SHM_POLICY_SLRU);
    n = fill_to_capacity(g_c);
    ck_assert_int_eq(get_s(g_c, "k0001", 0), 0); /* promoted */
    snprintf(key, sizeof(key), "k%04u", n + 1);
    ck_assert_int_eq(put_s(g_c, key, g_val60, n + 2), 0);
    ck_assert_int_eq(get_s(g_c, "k0002", 0), SHM_EMISS);
    ck_assert_int_eq(get_s(g_c, "k0001", 0), 0);
}
END_TEST

START_TEST(budget_shrink_evicts)
{
    char key[16], val[500];
    unsigned i;
    shm_cache_stats_t s;

    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = '\0';
    g_c = mk(T_MIB, 2 * T_MIB, 4, SHM_POLICY_DEFAULT);
    for (i = 0; i < 4000; i++) {
        snprintf(key, sizeof(key), "b%u", i);
        ck_assert_int_eq(put_s(g_c, key, val, i + 1), 0);
    }
    s = stats(g_c);
    ck_assert_uint_gt(s.evictions, 0);
    ck_assert_uint_le(s.bytes_slab, T_MIB);
    ck_assert_uint_gt(s.bytes_slab, T_MIB / 2);
    ck_assert_int_eq(shm_cache_set_budget(g_c, T_MIB / 4), 0);
    s = stats(g_c);
    ck_assert_uint_eq(s.budget, T_MIB / 4);
    ck_assert_uint_le(s.bytes_slab, T_MIB / 4);
    ck_assert_uint_le(s.bytes_used, T_MIB / 4);
    /* still works at the small budget, and stays within it */
    for (i = 4000; i < 5000; i++) {
        snprintf(key, sizeof(key), "b%u", i);
        ck_assert_int_eq(put_s(g_c, key, val, i + 1), 0);
    }
    ck_assert_uint_le(stats(g_c).bytes_slab, T_MIB / 4);
    ck_assert_int_eq(get_s(g_c, "b4999", 0), 0);
    /* growing within the mapping works; beyond it needs a restart */
    ck_assert_int_eq(shm_cache_set_budget(g_c, 2 * T_MIB + 1), SHM_ERESTART);
    ck_assert_uint_eq(stats(g_c).budget, T_MIB / 4);
    ck_assert_int_eq(shm_cache_set_budget(g_c, 2 * T_MIB), 0);
    for (i = 5000; i < 12000; i++) {
        snprintf(key, sizeof(key), "b%u", i);
        ck_assert_int_eq(put_s(g_c, key, val, i + 1), 0);
    }
    ck_assert_uint_gt(stats(g_c).bytes_slab, T_MIB);
    /* zero budget: nothing is kept, and nothing stale comes back */
    ck_assert_int_eq(shm_cache_set_budget(g_c, 0), 0);
    ck_assert_uint_eq(stats(g_c).entries, 0);
    ck_assert_int_eq(put_s(g_c, "z", "v", 20000), SHM_ENOSPC);
    ck_assert_int_eq(fill_s(g_c, "z", "old", 19999, 19999), SHM_ESTALE);
}
END_TEST

/* Mixed value sizes (log-uniform 8 B .. 12 KiB) overwriting a key space
 * larger than the cache: carved pages stay within the budget and are
 * mostly used — no fragmentation blow-up. */
START_TEST(churn_mixed_sizes)
{
    static char val[12 * 1024];
    char key[16];
    uint64_t rnd = 88172645463325252u, ver = 1;
    unsigned op, samples = 0;
    double util = 0;
    shm_cache_stats_t s;

    memset(val, 'c', sizeof(val));
    g_c = mk(T_MIB, 0, 1, SHM_POLICY_DEFAULT);
    for (op = 0; op < 60000; op++) {
        shm_cache_entry_t e;
        size_t len;
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        len = (size_t)(8 << (rnd % 11)) + (size_t)((rnd >> 8) % 512);
        if (len > sizeof(val))
            len = sizeof(val);
        snprintf(key, sizeof(key), "m%u", (unsigned)((rnd >> 24) % 3000));
        e = ent(key, val, len, ver++);
        ck_assert_int_eq(shm_cache_put(g_c, &e), 0);
        if (op >= 10000 && op % 1000 == 0) {
            s = stats(g_c);
            ck_assert_uint_le(s.bytes_slab, T_MIB);
            util += (double)s.bytes_used / (double)s.bytes_slab;
            samples++;
        }
    }
    s = stats(g_c);
    ck_assert_uint_gt(s.evictions, 0);
    ck_assert_msg(util / samples > 0.7, "slab utilisation %.2f",
                  util / samples);
}
END_TEST

/* --- crash ---------------------------------------------------------- */

static int g_hook_point;
static int g_hook_fd;
static const char *g_child_key;

/* In the child: tell the parent we are inside the critical section at the
 * wanted point, then wait to be killed. */
static void block_hook(int point, unsigned stripe)
{
    char b = 'x';

    (void)stripe;
    if (point != g_hook_point)
        return;
    if (write(g_hook_fd, &b, 1) != 1)
        _exit(98);
    for (;;)
        pause();
}

static void child_get(void) { get_s(g_c, g_child_key, 0); }

static void child_put_b(void)
{
    static char v[2000];
    shm_cache_entry_t e;

    memset(v, 'B', sizeof(v));
    e = ent(g_child_key, v, sizeof(v), 2);
    shm_cache_put(g_c, &e);
}

/* Fork a child that runs body() with the hook armed at point; return once
 * the child holds the stripe lock at that point. */
static pid_t spawn_blocked(int point, void (*body)(void))
{
    int p[2];
    pid_t pid;
    char b;

    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        g_hook_fd = p[1];
        g_hook_point = point;
        shm_cache_test_hook = block_hook;
        body();
        _exit(97); /* the hook never returns */
    }
    close(p[1]);
    ck_assert_int_eq(read(p[0], &b, 1), 1);
    close(p[0]);
    return pid;
}

static void kill_and_reap(pid_t pid)
{
    int st;

    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static void put_a(const char *key)
{
    static char v[2000];
    shm_cache_entry_t e;

    memset(v, 'A', sizeof(v));
    e = ent(key, v, sizeof(v), 1);
    ck_assert_int_eq(shm_cache_put(g_c, &e), 0);
}

/* A hit must be a whole value: all one letter, matching its version. */
static void assert_not_torn(int rc)
{
    size_t i;

    if (rc != 0)
        return;
    ck_assert_uint_eq(g_out.len, 2000);
    for (i = 0; i < g_out.len; i++)
        ck_assert_int_eq(g_buf[i], g_out.version == 1 ? 'A' : 'B');
}

START_TEST(dies_holding_lock)
{
    pid_t pid;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    g_child_key = "victim";
    put_a("victim");
    ck_assert_int_eq(put_s(g_c, "other", "o", 1), 0);
    pid = spawn_blocked(SHM_HOOK_LOCKED, child_get);
    kill_and_reap(pid);
    /* the next locker recovers: the stripe was reset */
    ck_assert_int_eq(get_s(g_c, "victim", 0), SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).owner_dead, 1);
    /* the reset stripe still refuses fills older than what it knew */
    ck_assert_int_eq(fill_s(g_c, "victim", "old", 0, 0), SHM_ESTALE);
    /* and works normally afterwards */
    ck_assert_int_eq(put_s(g_c, "victim", "new", 3), 0);
    ck_assert_int_eq(get_s(g_c, "victim", 0), 0);
    ck_assert_str_eq(g_buf, "new");
    ck_assert_uint_eq(stats(g_c).owner_dead, 1);
}
END_TEST

START_TEST(killed_mid_copy_in)
{
    pid_t pid;
    int rc;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    g_child_key = "k";
    put_a("k");
    pid = spawn_blocked(SHM_HOOK_COPY_IN, child_put_b); /* 'B' at v2 */
    kill_and_reap(pid);
    rc = get_s(g_c, "k", 0);
    assert_not_torn(rc);
    ck_assert_int_eq(rc, SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).owner_dead, 1);
    /* the dead writer announced v2 before locking: v1 can't come back */
    {
        static char v[2000];
        shm_cache_entry_t e;
        memset(v, 'A', sizeof(v));
        e = ent("k", v, sizeof(v), 1);
        ck_assert_int_eq(shm_cache_fill(g_c, &e, 1), SHM_ESTALE);
        memset(v, 'B', sizeof(v));
        e = ent("k", v, sizeof(v), 2);
        ck_assert_int_eq(shm_cache_fill(g_c, &e, 2), 0);
    }
    rc = get_s(g_c, "k", 0);
    ck_assert_int_eq(rc, 0);
    assert_not_torn(rc);
    ck_assert_uint_eq(g_out.version, 2);
}
END_TEST

START_TEST(killed_mid_copy_out)
{
    pid_t pid;
    int rc;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    g_child_key = "k";
    put_a("k");
    pid = spawn_blocked(SHM_HOOK_COPY_OUT, child_get);
    kill_and_reap(pid);
    rc = get_s(g_c, "k", 0);
    assert_not_torn(rc);
    ck_assert_int_eq(rc, SHM_EMISS);
    ck_assert_uint_eq(stats(g_c).owner_dead, 1);
    put_a("k");
    ck_assert_int_eq(put_s(g_c, "k", "B", 0), SHM_ESTALE);
    rc = get_s(g_c, "k", 0);
    ck_assert_int_eq(rc, 0);
    assert_not_torn(rc);
}
END_TEST

/* A second process is already waiting on the lock when the holder dies:
 * it gets EOWNERDEAD, resets the stripe and answers a miss. The wait is
 * counted. We look at the futex word (glibc: first int of the mutex) to
 * know the waiter is blocked before we kill the holder. */
START_TEST(waiter_recovers)
{
    pid_t holder, waiter;
    shm_stripe_sh *st;
    unsigned polls;
    int wst;

    g_c = mk(T_MIB, 0, 4, SHM_POLICY_DEFAULT);
    g_child_key = "w";
    put_a("w");
    st = stripe_of(g_c, "w");
    holder = spawn_blocked(SHM_HOOK_LOCKED, child_get);
    waiter = fork();
    ck_assert_int_ge(waiter, 0);
    if (waiter == 0)
        _exit(get_s(g_c, "w", 0) == SHM_EMISS ? 0 : 1);
    for (polls = 0; polls < T_POLL_MAX; polls++) {
        struct timespec ts = { 0, T_POLL_NS };
        unsigned word = __atomic_load_n((unsigned *)(void *)&st->lock.mtx,
                                        __ATOMIC_SEQ_CST);
        if (word & T_FUTEX_WAITERS)
            break;
        nanosleep(&ts, NULL);
    }
    kill_and_reap(holder);
    ck_assert_int_eq(waitpid(waiter, &wst, 0), waiter);
    ck_assert(WIFEXITED(wst));
    ck_assert_int_eq(WEXITSTATUS(wst), 0);
    ck_assert_uint_eq(stats(g_c).owner_dead, 1);
    ck_assert_uint_ge(stats(g_c).lock_waits, 1);
    ck_assert_int_eq(get_s(g_c, "w", 0), SHM_EMISS);
}
END_TEST

/* --- concurrency ---------------------------------------------------- */

#define H_PROCS 4
#define H_KEYS 96
#define H_OPS 40000
#define H_VLEN_MAX 3000

/* A toy "LMDB" in shared memory: per-key record under a process-shared
 * mutex, versions from one atomic counter. A writer commits (assigns its
 * version under the key's mutex), then updates the cache, then publishes
 * the version as committed. A reader's snapshot is the counter value read
 * under the key's mutex: every write to that key numbered <= it is in the
 * record, every later one is numbered above it. */
typedef struct hrec {
    pthread_mutex_t mtx;
    uint64_t version;
    int deleted;
} hrec;

typedef struct hshared {
    uint64_t counter;           /* atomic */
    unsigned started;           /* atomic: workers ready to go */
    unsigned stop;              /* atomic: H_UNTIL_STOP workers may end */
    uint64_t committed[H_KEYS]; /* atomic max: cache call returned */
    hrec rec[H_KEYS];
} hshared;

static size_t h_vlen(uint64_t version)
{
    return 1 + (size_t)(mix64(version) % H_VLEN_MAX);
}

static void h_value(uint64_t version, char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        buf[i] = (char)(version * 31 + i);
}

static void h_commit_max(uint64_t *p, uint64_t v)
{
    uint64_t cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);

    while (cur < v &&
           !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

enum h_mode {
    H_FIXED,      /* H_OPS operations */
    H_UNTIL_STOP, /* at least H_OPS / 4, then until sh->stop */
    H_VICTIM      /* until killed (by its own hook) */
};

static int h_more(const hshared *sh, enum h_mode mode, unsigned op)
{
    switch (mode) {
    case H_FIXED: return op < H_OPS;
    case H_UNTIL_STOP:
        return op < H_OPS / 4 || !__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST);
    default: return 1;
    }
}

/* One process's work; returns the number of violations seen. */
static unsigned h_worker(hshared *sh, unsigned seed, enum h_mode mode)
{
    static char val[H_VLEN_MAX], got[H_VLEN_MAX], want[H_VLEN_MAX];
    uint64_t rnd = mix64(seed + 1);
    unsigned op, bad = 0;

    /* start together, or the first worker may finish before the last
     * one is forked */
    if (mode != H_VICTIM) {
        __atomic_add_fetch(&sh->started, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&sh->started, __ATOMIC_SEQ_CST) < H_PROCS)
            sched_yield();
    }

    for (op = 0; h_more(sh, mode, op); op++) {
        char key[16];
        unsigned k, what;
        uint64_t h;
        rnd = mix64(rnd);
        k = (unsigned)(rnd % H_KEYS);
        what = (unsigned)((rnd >> 16) % 10);
        snprintf(key, sizeof(key), "hk%u", k);
        h = hash_key(key, strlen(key));
        if (what < 3) { /* write: commit then put */
            uint64_t v;
            shm_cache_entry_t e;
            pthread_mutex_lock(&sh->rec[k].mtx);
            v = __atomic_add_fetch(&sh->counter, 1, __ATOMIC_SEQ_CST);
            sh->rec[k].version = v;
            sh->rec[k].deleted = 0;
            pthread_mutex_unlock(&sh->rec[k].mtx);
            if ((rnd >> 44) % 2 == 0)
                sched_yield(); /* let others pass us */
            h_value(v, val, h_vlen(v));
            e = ent(key, val, h_vlen(v), v);
            shm_cache_put(g_c, &e);
            h_commit_max(&sh->committed[k], v);
        } else if (what < 4) { /* delete: commit then invalidate */
            uint64_t v;
            pthread_mutex_lock(&sh->rec[k].mtx);
            v = __atomic_add_fetch(&sh->counter, 1, __ATOMIC_SEQ_CST);
            sh->rec[k].version = v;
            sh->rec[k].deleted = 1;
            pthread_mutex_unlock(&sh->rec[k].mtx);
            if ((rnd >> 44) % 2 == 0)
                sched_yield();
            shm_cache_invalidate(g_c, key, strlen(key), h, v);
            h_commit_max(&sh->committed[k], v);
        } else { /* read: get, and on a miss read the "db" and fill */
            uint64_t known = __atomic_load_n(&sh->committed[k],
                                             __ATOMIC_SEQ_CST);
            shm_cache_value_t out;
            int rc;
            memset(&out, 0, sizeof(out));
            out.buf = got;
            out.cap = sizeof(got);
            rc = shm_cache_get(g_c, key, strlen(key), h, 0, &out);
            if (rc == 0) {
                h_value(out.version, want, h_vlen(out.version));
                if (out.version < known || out.len != h_vlen(out.version) ||
                    memcmp(got, want, out.len) != 0)
                    bad++;
            } else if (rc == SHM_EMISS) {
                uint64_t snap, v;
                int deleted;
                shm_cache_entry_t e;
                pthread_mutex_lock(&sh->rec[k].mtx);
                snap = __atomic_load_n(&sh->counter, __ATOMIC_SEQ_CST);
                v = sh->rec[k].version;
                deleted = sh->rec[k].deleted;
                pthread_mutex_unlock(&sh->rec[k].mtx);
                if ((rnd >> 40) % 2 == 0)
                    sched_yield(); /* widen the race window */
                if (!deleted && v != 0) {
                    h_value(v, val, h_vlen(v));
                    e = ent(key, val, h_vlen(v), v);
                    shm_cache_fill(g_c, &e, snap);
                }
            } else {
                bad++;
            }
        }
    }
    return bad;
}

/* The cache (small budget: evictions, page reclaim and floors all get
 * used) and the toy database, both shared with the workers we fork. */
static hshared *h_setup(void)
{
    pthread_mutexattr_t a;
    hshared *sh;
    unsigned i;

    g_c = mk(128 * T_KIB, 0, 2, SHM_POLICY_DEFAULT);
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    for (i = 0; i < H_KEYS; i++)
        pthread_mutex_init(&sh->rec[i].mtx, &a);
    pthread_mutexattr_destroy(&a);
    return sh;
}

START_TEST(hammer_processes)
{
    hshared *sh;
    pid_t pids[H_PROCS];
    unsigned i, bad = 0;
    shm_cache_stats_t s;

    sh = h_setup();
    for (i = 0; i < H_PROCS; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0)
            _exit(h_worker(sh, i, H_FIXED) == 0 ? 0 : 1);
    }
    for (i = 0; i < H_PROCS; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert(WIFEXITED(st));
        bad += WEXITSTATUS(st);
    }
    ck_assert_uint_eq(bad, 0);
    s = stats(g_c);
    ck_assert_uint_gt(s.hits, 0);
    ck_assert_uint_gt(s.misses, 0);
    ck_assert_uint_gt(s.evictions, 0);
    ck_assert_uint_eq(s.owner_dead, 0);
    munmap(sh, sizeof(*sh));
}
END_TEST

#define H_VICTIMS 12
#define H_VICTIM_HOOKS 400 /* a victim dies within this many hook calls */

static unsigned g_victim_countdown;

/* In a victim: die, holding the stripe lock, after a random number of
 * hook calls — just locked, or halfway through copying a value. */
static void victim_hook(int point, unsigned stripe)
{
    (void)point;
    (void)stripe;
    if (--g_victim_countdown == 0)
        raise(SIGKILL);
}

/* Processes keep dying inside stripe locks while others hammer the same
 * keys: every death is recovered once, and the survivors never read a
 * value older than a write they saw complete, nor a torn one. */
START_TEST(deaths_under_load)
{
    hshared *sh;
    pid_t pids[H_PROCS];
    unsigned i, bad = 0;
    shm_cache_stats_t s;

    sh = h_setup();
    for (i = 0; i < H_PROCS; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0)
            _exit(h_worker(sh, i, H_UNTIL_STOP) == 0 ? 0 : 1);
    }
    for (i = 0; i < H_VICTIMS; i++) {
        int st;
        pid_t v = fork();
        ck_assert_int_ge(v, 0);
        if (v == 0) {
            g_victim_countdown = 1 + (unsigned)(mix64(i) % H_VICTIM_HOOKS);
            shm_cache_test_hook = victim_hook;
            h_worker(sh, 1000 + i, H_VICTIM);
            _exit(0);
        }
        ck_assert_int_eq(waitpid(v, &st, 0), v);
        ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < H_PROCS; i++) {
        int st;
        ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
        ck_assert(WIFEXITED(st));
        bad += WEXITSTATUS(st);
    }
    ck_assert_uint_eq(bad, 0);
    /* touch every key, so a stripe whose last locker died recovers too */
    for (i = 0; i < H_KEYS; i++) {
        char key[16];
        snprintf(key, sizeof(key), "hk%u", i);
        get_s(g_c, key, 0);
    }
    s = stats(g_c);
    ck_assert_uint_eq(s.owner_dead, H_VICTIMS);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* --- suite ---------------------------------------------------------- */

static Suite *cache_suite(void)
{
    Suite *s = suite_create("shm_cache");
    TCase *core = tcase_create("core");
    TCase *layout = tcase_create("layout");
    TCase *limits = tcase_create("limits");
    TCase *crash = tcase_create("crash");
    TCase *conc = tcase_create("concurrency");

    tcase_add_checked_fixture(core, NULL, teardown);
    tcase_add_test(core, put_get_overwrite);
    tcase_add_test(core, flags_and_type_round_trip);
    tcase_add_test(core, older_put_dropped);
    tcase_add_test(core, invalidate_leaves_tombstone);
    tcase_add_test(core, stale_fill_after_invalidate);
    tcase_add_test(core, stale_fill_after_put);
    tcase_add_test(core, fresh_fill_before_writer_put);
    tcase_add_test(core, early_stale_fill_then_writer_wins);
    tcase_add_test(core, stale_fill_after_tombstone_evicted);
    tcase_add_test(core, flush_all);
    tcase_add_test(core, expired_is_miss);
    tcase_add_test(core, small_buffer_then_retry);
    tcase_add_test(core, too_big_put_invalidates);
    tcase_add_test(core, cache_off_is_noop);
    tcase_add_test(core, create_rejects_bad_opts);
    tcase_add_test(core, attach_checks_header);
    tcase_add_test(core, counters);
    tcase_add_test(core, prefetch_is_only_a_hint);
    suite_add_tcase(s, core);

    tcase_add_checked_fixture(layout, NULL, teardown);
    tcase_add_test(layout, layout_pins);
    tcase_add_test(layout, geometry_defaults);
    suite_add_tcase(s, layout);

    tcase_add_checked_fixture(limits, NULL, teardown);
    tcase_set_timeout(limits, T_WAIT_TIMEOUT);
    tcase_add_test(limits, lru_order);
    tcase_add_test(limits, slru_order);
    tcase_add_test(limits, slru_resists_scan);
    tcase_add_test(limits, slru_protected_capped);
    tcase_add_test(limits, lru_hit_writes_only_its_bit);
    tcase_add_test(limits, slru_hit_writes_only_its_bit);
    tcase_add_test(limits, lru_second_chance);
    tcase_add_test(limits, second_chances_bounded);
    tcase_add_test(limits, invalidate_retires_in_place);
    tcase_add_test(limits, tombstone_evicted_first);
    tcase_add_test(limits, tombstone_never_evicts);
    tcase_add_test(limits, lru_loses_to_scan);
    tcase_add_test(limits, budget_shrink_evicts);
    tcase_add_test(limits, churn_mixed_sizes);
    suite_add_tcase(s, limits);

    tcase_add_checked_fixture(crash, NULL, teardown);
    tcase_set_timeout(crash, T_WAIT_TIMEOUT);
    tcase_add_test(crash, dies_holding_lock);
    tcase_add_test(crash, killed_mid_copy_in);
    tcase_add_test(crash, killed_mid_copy_out);
    tcase_add_test(crash, waiter_recovers);
    suite_add_tcase(s, crash);

    tcase_add_checked_fixture(conc, NULL, teardown);
    tcase_set_timeout(conc, T_HAMMER_TIMEOUT);
    tcase_add_test(conc, hammer_processes);
    tcase_add_test(conc, deaths_under_load);
    suite_add_tcase(s, conc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cache_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
