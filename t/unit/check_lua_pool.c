/*
 * check_lua_pool.c - a Lua state's small-block pool (srv_lua_pool.h):
 * blocks keep their contents across sizes, freed small blocks are reused
 * by their class and kept up to SRV_LUA_POOL_KEEP, large ones go to
 * malloc, and a Lua state runs on it.
 */
#include "server/cmd/srv_lua_pool.h"

#include <check.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void fill(unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(seed + i);
}

static int same(const unsigned char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed + i))
            return 0;
    return 1;
}

START_TEST(test_reuse_by_class)
{
    srv_lua_pool p;
    void *a, *b, *c;

    srv_lua_pool_init(&p);
    a = srv_lua_pool_realloc(&p, NULL, 0, 20);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(srv_lua_pool_realloc(&p, a, 20, 0));
    ck_assert_uint_eq(srv_lua_pool_kept(&p), 1);
    /* 17..32 bytes share a class: the freed block comes back */
    b = srv_lua_pool_realloc(&p, NULL, 0, 32);
    ck_assert_ptr_eq(b, a);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), 0);
    /* another class does not take it */
    srv_lua_pool_realloc(&p, b, 32, 0);
    c = srv_lua_pool_realloc(&p, NULL, 0, 48);
    ck_assert_ptr_ne(c, b);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), 1);
    srv_lua_pool_realloc(&p, c, 48, 0);
    srv_lua_pool_fini(&p);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), 0);
}
END_TEST

START_TEST(test_contents_across_sizes)
{
    static const size_t sizes[] = { 1,   15,  16,   17,  100, 256,
                                    257, 300, 4096, 200, 8,   0 };
    srv_lua_pool p;
    unsigned char *b = NULL;
    size_t have = 0;

    srv_lua_pool_init(&p);
    for (size_t i = 0; sizes[i]; i++) {
        size_t keep = have < sizes[i] ? have : sizes[i];
        b = srv_lua_pool_realloc(&p, b, have, sizes[i]);
        ck_assert_ptr_nonnull(b);
        ck_assert_msg(same(b, keep, 7), "contents kept to %zu", sizes[i]);
        fill(b, sizes[i], 7);
        have = sizes[i];
    }
    ck_assert_ptr_null(srv_lua_pool_realloc(&p, b, have, 0));
    srv_lua_pool_fini(&p);
}
END_TEST

START_TEST(test_keep_is_bounded)
{
    srv_lua_pool p;
    void **v = calloc(SRV_LUA_POOL_KEEP + 10, sizeof *v);

    ck_assert_ptr_nonnull(v);
    srv_lua_pool_init(&p);
    for (int i = 0; i < SRV_LUA_POOL_KEEP + 10; i++)
        ck_assert_ptr_nonnull(v[i] = srv_lua_pool_realloc(&p, NULL, 0, 64));
    for (int i = 0; i < SRV_LUA_POOL_KEEP + 10; i++)
        srv_lua_pool_realloc(&p, v[i], 64, 0);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), SRV_LUA_POOL_KEEP);
    /* large blocks are never kept */
    void *big = srv_lua_pool_realloc(&p, NULL, 0, SRV_LUA_POOL_MAX + 1);
    ck_assert_ptr_nonnull(big);
    srv_lua_pool_realloc(&p, big, SRV_LUA_POOL_MAX + 1, 0);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), SRV_LUA_POOL_KEEP);
    srv_lua_pool_fini(&p);
    free(v);
}
END_TEST

static void *pool_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    return srv_lua_pool_realloc(ud, ptr, osize, nsize);
}

START_TEST(test_lua_state_on_it)
{
    srv_lua_pool p;
    lua_State *L;

    srv_lua_pool_init(&p);
    L = lua_newstate(pool_alloc, &p);
    ck_assert_ptr_nonnull(L);
    luaL_openlibs(L);
    ck_assert_int_eq(luaL_dostring(L, "local t = {} "
                                      "for i = 1, 20000 do "
                                      "t[i % 500] = {tostring(i), i * 2} end "
                                      "local s = '' for i = 1, 300 do "
                                      "s = s .. 'x' end "
                                      "return #s + t[499][2]"),
                     0);
    ck_assert_int_eq(lua_tointeger(L, -1), 300 + 19999 * 2);
    lua_close(L);
    ck_assert_uint_gt(srv_lua_pool_kept(&p), 0);
    srv_lua_pool_fini(&p);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
/* A kept block is poisoned: touching it after its free is caught. */
START_TEST(test_use_after_free_caught)
{
    srv_lua_pool p;
    int status;
    pid_t pid;

    srv_lua_pool_init(&p);
    volatile char *b = srv_lua_pool_realloc(&p, NULL, 0, 64);
    ck_assert_ptr_nonnull((void *)b);
    srv_lua_pool_realloc(&p, (void *)b, 64, 0);
    ck_assert_uint_eq(srv_lua_pool_kept(&p), 1);
    if ((pid = fork()) == 0) {
        b[32] = 1; /* AddressSanitizer stops the child here */
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
                  "the write to a kept block went unnoticed");
    srv_lua_pool_fini(&p);
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("lua_pool");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");

    tcase_add_test(core, test_reuse_by_class);
    tcase_add_test(core, test_contents_across_sizes);
    tcase_add_test(core, test_lua_state_on_it);
    tcase_add_test(limits, test_keep_is_bounded);
#if defined(__SANITIZE_ADDRESS__)
    tcase_add_test(limits, test_use_after_free_caught);
#endif
    suite_add_tcase(s, core);
    suite_add_tcase(s, limits);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    int failed;

    srunner_set_fork_status(r, CK_FORK);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
