/*
 * check_dict: unit tests of the byte-string hash table (server/srv_dict.h)
 * that holds pub/sub's channel and pattern names: add, find, remove, binary
 * and empty keys, growth past many doublings, iteration that removes what
 * it returns, clear with a callback, and the hash being stable within a
 * process and sensitive to every byte.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_dict.h"

#define TIMEOUT_S 30
#define MANY 100000
#define KEY_MAX 32

static srv_dict_entry *add(srv_dict *d, const char *k, size_t n)
{
    srv_dict_entry *e = srv_dict_add(d, k, n, srv_dict_hash(k, n));

    ck_assert_ptr_nonnull(e);
    return e;
}

static srv_dict_entry *find(const srv_dict *d, const char *k, size_t n)
{
    return srv_dict_find(d, k, n, srv_dict_hash(k, n));
}

START_TEST(test_add_find_remove)
{
    srv_dict d = { 0 };
    srv_dict_entry *a, *b, *e;

    ck_assert_ptr_null(find(&d, "a", 1));
    a = add(&d, "a", 1);
    a->val = &d;
    a->aux = 7;
    b = add(&d, "bb", 2);
    ck_assert_uint_eq(d.count, 2);
    e = find(&d, "a", 1);
    ck_assert_ptr_eq(e, a);
    ck_assert_ptr_eq(e->val, &d);
    ck_assert_uint_eq(e->aux, 7);
    ck_assert_uint_eq(e->klen, 1);
    ck_assert_ptr_eq(find(&d, "bb", 2), b);
    ck_assert_ptr_null(find(&d, "b", 1)); /* a prefix is not it */
    ck_assert_ptr_null(find(&d, "bbb", 3));
    srv_dict_remove(&d, a);
    ck_assert_ptr_null(find(&d, "a", 1));
    ck_assert_ptr_eq(find(&d, "bb", 2), b);
    srv_dict_remove(&d, b);
    ck_assert_uint_eq(d.count, 0);
    ck_assert_ptr_null(d.tab); /* freed when empty */
    ck_assert_ptr_null(find(&d, "bb", 2));
}
END_TEST

START_TEST(test_binary_and_empty_keys)
{
    srv_dict d = { 0 };
    static const char k1[] = { 'x', '\0', 'y' };
    static const char k2[] = { 'x', '\0', 'z' };

    add(&d, "", 0);
    add(&d, k1, sizeof k1);
    ck_assert_ptr_nonnull(find(&d, "", 0));
    ck_assert_ptr_nonnull(find(&d, k1, sizeof k1));
    ck_assert_ptr_null(find(&d, k2, sizeof k2));
    ck_assert_ptr_null(find(&d, "x", 1));
    ck_assert(memcmp(find(&d, k1, sizeof k1)->key, k1, sizeof k1) == 0);
    srv_dict_clear(&d, NULL);
    ck_assert_uint_eq(d.count, 0);
}
END_TEST

START_TEST(test_many_keys_grow)
{
    srv_dict d = { 0 };
    char k[KEY_MAX];

    for (int i = 0; i < MANY; i++) {
        int n = snprintf(k, sizeof k, "channel:%d", i);
        add(&d, k, (size_t)n)->aux = (size_t)i;
    }
    ck_assert_uint_eq(d.count, MANY);
    ck_assert(d.size >= MANY); /* load factor <= 1 */
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(k, sizeof k, "channel:%d", i);
        srv_dict_entry *e = find(&d, k, (size_t)n);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->aux, (size_t)i);
    }
    for (int i = 0; i < MANY; i += 2) {
        int n = snprintf(k, sizeof k, "channel:%d", i);
        srv_dict_remove(&d, find(&d, k, (size_t)n));
    }
    ck_assert_uint_eq(d.count, MANY / 2);
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(k, sizeof k, "channel:%d", i);
        ck_assert((find(&d, k, (size_t)n) != NULL) == (i % 2 == 1));
    }
    srv_dict_clear(&d, NULL);
}
END_TEST

/* Every entry once; removing the returned one is allowed, down to the
 * last (which frees the table mid-iteration). */
START_TEST(test_iterate_and_remove)
{
    srv_dict d = { 0 };
    srv_dict_iter it;
    srv_dict_entry *e;
    char k[KEY_MAX];
    int seen[MANY / 10] = { 0 }, n = 0;

    srv_dict_iter_init(&it, &d);
    ck_assert_ptr_null(srv_dict_iter_next(&it)); /* empty */
    for (int i = 0; i < MANY / 10; i++) {
        int len = snprintf(k, sizeof k, "p%d", i);
        add(&d, k, (size_t)len)->aux = (size_t)i;
    }
    srv_dict_iter_init(&it, &d);
    while ((e = srv_dict_iter_next(&it))) {
        seen[e->aux]++;
        n++;
        srv_dict_remove(&d, e);
    }
    ck_assert_int_eq(n, MANY / 10);
    for (int i = 0; i < MANY / 10; i++)
        ck_assert_int_eq(seen[i], 1);
    ck_assert_uint_eq(d.count, 0);
    ck_assert_ptr_null(d.tab);
}
END_TEST

static int cleared;

static void count_clear(srv_dict_entry *e) { cleared += (int)e->aux; }

START_TEST(test_clear_callback)
{
    srv_dict d = { 0 };

    add(&d, "a", 1)->aux = 1;
    add(&d, "b", 1)->aux = 2;
    add(&d, "c", 1)->aux = 4;
    cleared = 0;
    srv_dict_clear(&d, count_clear);
    ck_assert_int_eq(cleared, 7);
    ck_assert_uint_eq(d.count, 0);
    ck_assert_ptr_null(d.tab);
    add(&d, "again", 5); /* usable after */
    ck_assert_ptr_nonnull(find(&d, "again", 5));
    srv_dict_clear(&d, NULL);
}
END_TEST

START_TEST(test_hash_stable_and_sensitive)
{
    char a[] = "news.sports.football.2026";
    uint64_t h = srv_dict_hash(a, strlen(a));

    ck_assert(srv_dict_hash(a, strlen(a)) == h);
    for (size_t i = 0; i < strlen(a); i++) {
        a[i] ^= 1;
        ck_assert(srv_dict_hash(a, strlen(a)) != h);
        a[i] ^= 1;
    }
    /* The length counts: a key and its prefixes differ. */
    for (size_t n = 0; n < strlen(a); n++)
        ck_assert(srv_dict_hash(a, n) != h);
}
END_TEST

static Suite *dict_suite(void)
{
    Suite *s = suite_create("dict");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_add_find_remove);
    tcase_add_test(tc, test_binary_and_empty_keys);
    tcase_add_test(tc, test_many_keys_grow);
    tcase_add_test(tc, test_iterate_and_remove);
    tcase_add_test(tc, test_clear_callback);
    tcase_add_test(tc, test_hash_stable_and_sensitive);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dict_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
