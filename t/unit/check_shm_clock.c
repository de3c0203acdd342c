/*
 * check_shm_clock: unit tests of the shared access clock
 * (shm/shm_clock.h): slots start at the creation time, a touch is seen by
 * a read of the same hash (and of a hash sharing its slot), other slots
 * keep their time, a forked child's touches are seen by the parent,
 * sizes that are not a power of two are refused, and a new clock's slots
 * take no memory until touched.
 */
#include "shm/shm_clock.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_S 10
#define SLOTS 1024
#define T0 1700000000u
#define LATER (T0 + 42)
#define HASH 0x123456789abcdefull

START_TEST(test_touch_and_get)
{
    shm_clock_t *c;

    ck_assert_int_eq(shm_clock_create(SLOTS, T0, &c), 0);
    ck_assert_int_eq(shm_clock_check(c), 0);
    ck_assert_uint_eq(shm_clock_get(c, HASH), T0);
    shm_clock_touch(c, HASH, LATER);
    ck_assert_uint_eq(shm_clock_get(c, HASH), LATER);
    /* A hash of the same slot shares it; the next slot does not. */
    ck_assert_uint_eq(shm_clock_get(c, HASH + SLOTS), LATER);
    ck_assert_uint_eq(shm_clock_get(c, HASH + 1), T0);
    shm_clock_destroy(&c);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_shared_across_fork)
{
    shm_clock_t *c;
    pid_t pid;
    int status;

    ck_assert_int_eq(shm_clock_create(SLOTS, T0, &c), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        shm_clock_touch(c, HASH, LATER);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_uint_eq(shm_clock_get(c, HASH), LATER);
    shm_clock_destroy(&c);
}
END_TEST

/* Pages of [p, p + len) resident (mincore). */
static size_t resident_pages(const void *p, size_t len)
{
    long psz = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(psz - 1);
    size_t n = ((uintptr_t)p + len - a + (size_t)psz - 1) / (size_t)psz;
    unsigned char *v = malloc(n);
    size_t in = 0;

    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(mincore((void *)a, n * (size_t)psz, v), 0);
    for (size_t i = 0; i < n; i++)
        in += v[i] & 1;
    free(v);
    return in;
}

START_TEST(test_new_clock_costs_no_memory)
{
    shm_clock_t *c;
    const size_t slots = SHM_CLOCK_DEFAULT_SLOTS;
    const size_t bytes = slots * sizeof(uint32_t);

    ck_assert_int_eq(shm_clock_create(slots, T0, &c), 0);
    /* The header's page, maybe the next: not the 4 MB of slots. */
    ck_assert_uint_le(resident_pages(c, bytes), 2);
    ck_assert_uint_eq(shm_clock_get(c, HASH), T0);
    ck_assert_uint_eq(shm_clock_get(c, HASH + slots / 2), T0);
    shm_clock_touch(c, HASH, LATER);
    ck_assert_uint_le(resident_pages(c, bytes), 3);
    ck_assert_uint_eq(shm_clock_get(c, HASH), LATER);
    shm_clock_destroy(&c);
}
END_TEST

START_TEST(test_bad_sizes)
{
    shm_clock_t *c = (shm_clock_t *)1;

    ck_assert_int_eq(shm_clock_create(0, T0, &c), EINVAL);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(shm_clock_create(SLOTS + 1, T0, &c), EINVAL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("shm_clock");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_touch_and_get);
    tcase_add_test(tc, test_shared_across_fork);
    tcase_add_test(tc, test_bad_sizes);
    tcase_add_test(tc, test_new_clock_costs_no_memory);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
