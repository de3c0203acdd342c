/*
 * check_shm_clock: unit tests of the shared access clock
 * (shm/shm_clock.h): slots start at the creation time, a touch is seen by
 * a read of the same hash (and of a hash sharing its slot), other slots
 * keep their time, a forked child's touches are seen by the parent, and
 * sizes that are not a power of two are refused.
 */
#include "shm/shm_clock.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
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
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
