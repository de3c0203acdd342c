/* check_shm_slab.c — the per-stripe slab allocator: size classes, carving
 * and releasing pages, the page limit, churn of mixed sizes. The slab is
 * exercised on private memory; then, through the cache, exhaustion leads
 * to eviction, also of whole pages when a class has none of its own. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/shm_cache.h"
#include "shm/shm_slab.h"

#define T_PAGE 4096u
#define T_NPAGES 32u
#define T_DATA_OFF 64u /* refs are offsets; keep 0 out of the data */
#define T_CHURN_OPS 200000
#define T_CHURN_LIVE 600

typedef struct fixture {
    char *mem;
    shm_slab_sh sh;
    shm_slab_page_sh pages[T_NPAGES];
    uint32_t sizes[SHM_SLAB_MAX_CLASSES];
    shm_slab s;
} fixture;

static fixture *fx;

static void setup(void)
{
    fx = calloc(1, sizeof(*fx));
    ck_assert_ptr_nonnull(fx);
    fx->mem = aligned_alloc(64, T_DATA_OFF + (size_t)T_NPAGES * T_PAGE);
    ck_assert_ptr_nonnull(fx->mem);
    fx->s.sh = &fx->sh;
    fx->s.pages = fx->pages;
    fx->s.base = fx->mem;
    fx->s.data_off = T_DATA_OFF;
    fx->s.page_size = T_PAGE;
    fx->s.nclasses = shm_slab_classes(T_PAGE, fx->sizes);
    fx->s.class_size = fx->sizes;
    shm_slab_init_locked(&fx->s, T_NPAGES, T_NPAGES);
}

static void teardown(void)
{
    free(fx->mem);
    free(fx);
    fx = NULL;
}

/* Mark an allocated chunk the way the cache does (bytes 4..7 non-free). */
static void stamp(uint32_t ref, uint32_t tag)
{
    uint32_t *p = (uint32_t *)(void *)(fx->mem + ref);

    p[1] = tag;
    p[2] = tag;
}

START_TEST(classes_are_sane)
{
    unsigned n = fx->s.nclasses, i;

    ck_assert_uint_ge(n, 2);
    ck_assert_uint_le(n, SHM_SLAB_MAX_CLASSES);
    ck_assert_uint_eq(fx->sizes[0], SHM_SLAB_MIN_CHUNK);
    ck_assert_uint_eq(fx->sizes[n - 1], T_PAGE);
    for (i = 1; i < n; i++) {
        uint32_t per = T_PAGE / fx->sizes[i];
        ck_assert_uint_gt(fx->sizes[i], fx->sizes[i - 1]);
        ck_assert_uint_eq(fx->sizes[i] % SHM_SLAB_ALIGN, 0);
        if (per > SHM_SLAB_EXACT_COUNT) {
            /* small: growth at most 5/4 (+ alignment) */
            ck_assert_uint_le(fx->sizes[i],
                              fx->sizes[i - 1] * 5 / 4 + SHM_SLAB_ALIGN);
        } else {
            /* big: page/n, so a page leaves (almost) no tail */
            ck_assert_uint_lt(T_PAGE - per * fx->sizes[i],
                              per * SHM_SLAB_ALIGN);
        }
    }
    ck_assert_int_eq(shm_slab_class_of(&fx->s, 1), 0);
    ck_assert_int_eq(shm_slab_class_of(&fx->s, SHM_SLAB_MIN_CHUNK), 0);
    ck_assert_int_eq(shm_slab_class_of(&fx->s, SHM_SLAB_MIN_CHUNK + 1), 1);
    ck_assert_int_eq(shm_slab_class_of(&fx->s, T_PAGE), (int)n - 1);
    ck_assert_int_eq(shm_slab_class_of(&fx->s, T_PAGE + 1), -1);
    /* a 1 MiB page still fits in SHM_SLAB_MAX_CLASSES */
    {
        uint32_t big[SHM_SLAB_MAX_CLASSES];
        unsigned nb = shm_slab_classes(1024u * 1024, big);
        ck_assert_uint_le(nb, SHM_SLAB_MAX_CLASSES);
        ck_assert_uint_eq(big[nb - 1], 1024u * 1024);
    }
}
END_TEST

START_TEST(carve_fill_release)
{
    unsigned cls = 3;
    uint32_t per = T_PAGE / fx->sizes[cls];
    uint32_t refs[2 * T_PAGE / SHM_SLAB_MIN_CHUNK];
    uint32_t i;

    for (i = 0; i < per; i++) {
        refs[i] = shm_slab_alloc_locked(&fx->s, cls);
        ck_assert_uint_ne(refs[i], 0);
        stamp(refs[i], i + 1);
        ck_assert_uint_eq(shm_slab_chunk_size(&fx->s, refs[i]), fx->sizes[cls]);
    }
    ck_assert_uint_eq(shm_slab_carved(&fx->sh), 1);
    ck_assert_uint_eq(fx->sh.cls[cls].partial, 0); /* page is full */
    refs[per] = shm_slab_alloc_locked(&fx->s, cls);
    ck_assert_uint_eq(shm_slab_carved(&fx->sh), 2);
    ck_assert_uint_ne(shm_slab_page_of(&fx->s, refs[per]),
                      shm_slab_page_of(&fx->s, refs[0]));
    /* chunks never overlap and stay inside their page */
    for (i = 1; i < per; i++)
        ck_assert_uint_ge(refs[i], refs[i - 1] + fx->sizes[cls]);
    /* a freed chunk is reused first, and recognisable as free */
    shm_slab_free_locked(&fx->s, refs[5]);
    ck_assert(shm_slab_chunk_is_free(&fx->s, refs[5]));
    ck_assert_uint_eq(shm_slab_alloc_locked(&fx->s, cls), refs[5]);
    ck_assert(!shm_slab_chunk_is_free(&fx->s, refs[5]));
    /* emptying a page returns it to the pool at once */
    shm_slab_free_locked(&fx->s, refs[per]);
    ck_assert_uint_eq(shm_slab_carved(&fx->sh), 1);
    for (i = 0; i < per; i++)
        shm_slab_free_locked(&fx->s, refs[i]);
    ck_assert_uint_eq(shm_slab_carved(&fx->sh), 0);
    ck_assert_uint_eq(fx->sh.cls[cls].npages, 0);
}
END_TEST

START_TEST(page_limit_is_exhaustion)
{
    unsigned big = fx->s.nclasses - 1; /* one chunk per page */
    uint32_t i, ref;

    shm_slab_set_limit_locked(&fx->s, 4);
    for (i = 0; i < 4; i++)
        ck_assert_uint_ne(shm_slab_alloc_locked(&fx->s, big), 0);
    ck_assert_uint_eq(shm_slab_alloc_locked(&fx->s, big), 0);
    ck_assert_uint_eq(shm_slab_alloc_locked(&fx->s, 0), 0);
    /* a page moves to another class once freed */
    ref = fx->s.data_off; /* page 0, chunk 0 */
    shm_slab_free_locked(&fx->s, ref);
    ck_assert_uint_ne(shm_slab_alloc_locked(&fx->s, 0), 0);
    ck_assert_uint_eq(fx->sh.cls[0].npages, 1);
    ck_assert_uint_eq(fx->sh.cls[big].npages, 3);
}
END_TEST

/* Random mixed sizes: when the slab says "full", free a random live chunk
 * (what eviction does) and retry. The allocator must never hand out a live
 * chunk twice, never exceed its limit, keep per-class page counts right,
 * and give every page back once everything is freed. */
START_TEST(churn_mixed_sizes)
{
    static uint32_t live[T_CHURN_LIVE];
    static uint32_t tag[T_CHURN_LIVE];
    unsigned nlive = 0, i, op;
    uint64_t rnd = 0x9e3779b97f4a7c15u;
    unsigned long fails = 0;

    for (op = 0; op < T_CHURN_OPS; op++) {
        unsigned cls, c, sum;
        uint32_t ref;
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        /* skew toward small classes like real values */
        cls = (unsigned)(rnd % fx->s.nclasses);
        cls = (unsigned)((rnd >> 20) % (cls + 1));
        if (nlive == T_CHURN_LIVE || (nlive > 0 && (rnd >> 40) % 3 == 0)) {
            i = (unsigned)((rnd >> 32) % nlive);
            ck_assert_uint_eq(((uint32_t *)(void *)(fx->mem + live[i]))[2],
                              tag[i]);
            shm_slab_free_locked(&fx->s, live[i]);
            live[i] = live[--nlive];
            tag[i] = tag[nlive];
            continue;
        }
        while ((ref = shm_slab_alloc_locked(&fx->s, cls)) == 0) {
            fails++;
            ck_assert_uint_gt(nlive, 0);
            i = (unsigned)((rnd >> 32) % nlive);
            shm_slab_free_locked(&fx->s, live[i]);
            live[i] = live[--nlive];
            tag[i] = tag[nlive];
        }
        ck_assert(ref >= T_DATA_OFF &&
                  ref + fx->sizes[cls] <= T_DATA_OFF + T_NPAGES * T_PAGE);
        stamp(ref, op + 1);
        live[nlive] = ref;
        tag[nlive++] = op + 1;
        ck_assert_uint_le(shm_slab_carved(&fx->sh), T_NPAGES);
        if (op % 1024 == 0) {
            for (c = 0, sum = 0; c < fx->s.nclasses; c++)
                sum += fx->sh.cls[c].npages;
            ck_assert_uint_eq(sum, shm_slab_carved(&fx->sh));
        }
    }
    ck_assert_uint_gt(fails, 0); /* exhaustion was actually reached */
    while (nlive > 0) {
        nlive--;
        ck_assert_uint_eq(((uint32_t *)(void *)(fx->mem + live[nlive]))[2],
                          tag[nlive]);
        shm_slab_free_locked(&fx->s, live[nlive]);
    }
    ck_assert_uint_eq(shm_slab_carved(&fx->sh), 0);
    /* every page is back: the full limit can be carved again */
    for (i = 0; i < T_NPAGES; i++)
        ck_assert_uint_ne(shm_slab_alloc_locked(&fx->s, fx->s.nclasses - 1), 0);
}
END_TEST

static uint64_t hash_of(const char *k)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    while (*k != '\0') {
        h ^= (unsigned char)*k++;
        h *= UINT64_C(0x100000001b3);
    }
    h ^= h >> 31;
    h *= UINT64_C(0x94d049bb133111eb);
    return h ^ (h >> 29);
}

static int cache_put(shm_cache_t *c, const char *key, const void *val,
                     size_t vlen, uint64_t version)
{
    shm_cache_entry_t e;

    memset(&e, 0, sizeof(e));
    e.key = key;
    e.klen = strlen(key);
    e.hash = hash_of(key);
    e.val = val;
    e.vlen = vlen;
    e.version = version;
    return shm_cache_put(c, &e);
}

static int cache_has(shm_cache_t *c, const char *key)
{
    static char buf[T_PAGE];
    shm_cache_value_t out;

    memset(&out, 0, sizeof(out));
    out.buf = buf;
    out.cap = sizeof(buf);
    return shm_cache_get(c, key, strlen(key), hash_of(key), 0, &out) == 0;
}

/* A stripe full of small entries (every page carved to their class) takes
 * a page-sized entry: a few LRU evictions free no page, so the allocator
 * evicts the LRU victim's whole page and carves it for the big class. */
START_TEST(exhaustion_evicts_a_page)
{
    shm_cache_opts_t o;
    shm_cache_t *c = NULL;
    shm_cache_stats_t s;
    static char big[T_PAGE];
    char key[16];
    unsigned i, n;

    memset(&o, 0, sizeof(o));
    o.budget_bytes = 16 * T_PAGE; /* one stripe of 16 4 KiB pages */
    o.nstripes = 1;
    o.policy = SHM_POLICY_LRU;
    ck_assert_int_eq(shm_cache_create(&o, &c), 0);
    for (n = 0;; n++) {
        snprintf(key, sizeof(key), "s%05u", n);
        ck_assert_int_eq(cache_put(c, key, "12345678", 8, n + 1), 0);
        shm_cache_stats(c, &s);
        if (s.evictions > 0)
            break;
    }
    ck_assert_uint_eq(s.bytes_slab, 16 * T_PAGE);
    memset(big, 'B', sizeof(big));
    ck_assert_int_eq(cache_put(c, "big", big, shm_cache_max_item(c) - 3, n + 2),
                     0);
    ck_assert(cache_has(c, "big"));
    shm_cache_stats(c, &s);
    ck_assert_uint_le(s.bytes_slab, 16 * T_PAGE);
    ck_assert_uint_gt(s.evictions, 1);
    /* only the cold end paid: the newest small entries are still there
     * (but s<n>, which took the chunk of the first victim on page 0) */
    for (i = n - 100; i < n; i++) {
        snprintf(key, sizeof(key), "s%05u", i);
        ck_assert(cache_has(c, key));
    }
    shm_cache_destroy(&c);
}
END_TEST

static Suite *slab_suite(void)
{
    Suite *s = suite_create("shm_slab");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");

    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, classes_are_sane);
    tcase_add_test(core, carve_fill_release);
    tcase_add_checked_fixture(limits, setup, teardown);
    tcase_add_test(limits, page_limit_is_exhaustion);
    tcase_add_test(limits, churn_mixed_sizes);
    tcase_add_test(limits, exhaustion_evicts_a_page);
    suite_add_tcase(s, core);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(slab_suite());
    int failed;

    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
