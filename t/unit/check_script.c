/*
 * check_script.c - the scripting engine's parts without a server: RESP to
 * Lua and Lua to RESP (srv_script_conv.h) in both protocols, the sandbox
 * and the redis library (srv_script_lua.h) run on a bare connection with
 * a fake host, the memory cap, the interrupt, shebang flags, SHA-1, and
 * the struct and cmsgpack libraries.
 */
#include "server/cmd/srv_script_conv.h"
#include "server/cmd/srv_script_libs.h"
#include "server/cmd/srv_script_lua.h"
#include "server/cmd/srv_sha1.h"
#include "server/srv_buf.h"
#include "server/srv_scriptshm.h"

#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static srv_conn *bare_conn(int resp)
{
    srv_conn *c = calloc(1, sizeof *c);

    ck_assert_ptr_nonnull(c);
    c->resp = resp;
    return c;
}

static void free_conn(srv_conn *c)
{
    srv_buf_free(&c->out);
    free(c);
}

static void assert_out(srv_conn *c, const char *want, size_t n)
{
    ck_assert_uint_eq(c->out.len, n);
    ck_assert_int_eq(memcmp(c->out.data, want, n), 0);
    c->out.len = 0;
}
#define ASSERT_OUT(c, lit) assert_out((c), (lit), sizeof(lit) - 1)

/* Lua value of RESP `r` (a literal), then back to RESP for a client of
 * protocol `resp`, the script having chosen `script_resp`. */
static void round_trip(const char *r, size_t n, int resp, int script_resp,
                       const char *want, size_t wn)
{
    lua_State *L = luaL_newstate();
    srv_conn *c = bare_conn(resp);

    ck_assert_uint_eq(srv_script_resp_to_lua(L, r, n), n);
    ck_assert_int_eq(lua_gettop(L), 1);
    srv_script_lua_reply(L, -1, c, script_resp);
    assert_out(c, want, wn);
    free_conn(c);
    lua_close(L);
}
#define RT(r, resp, sresp, want) \
    round_trip((r), sizeof(r) - 1, (resp), (sresp), (want), sizeof(want) - 1)

/* Run Lua code in a plain state and reply its value (conversion only). */
static void reply_of(const char *code, int resp, int script_resp,
                     const char *want, size_t wn)
{
    lua_State *L = luaL_newstate();
    srv_conn *c = bare_conn(resp);

    luaL_openlibs(L);
    ck_assert_int_eq(luaL_dostring(L, code), 0);
    srv_script_lua_reply(L, -1, c, script_resp);
    assert_out(c, want, wn);
    free_conn(c);
    lua_close(L);
}
#define REPLY_OF(code, resp, sresp, want) \
    reply_of((code), (resp), (sresp), (want), sizeof(want) - 1)

/* ---- RESP -> Lua ---- */

START_TEST(resp_to_lua_types)
{
    lua_State *L = luaL_newstate();
    static const char arr[] = "*3\r\n:7\r\n$2\r\nab\r\n$-1\r\n";

    ck_assert_uint_eq(srv_script_resp_to_lua(L, ":-42\r\n", 6), 6);
    ck_assert_int_eq(lua_type(L, -1), LUA_TNUMBER);
    ck_assert(lua_tonumber(L, -1) == -42);
    lua_pop(L, 1);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "$-1\r\n", 5), 5);
    ck_assert(lua_isboolean(L, -1) && !lua_toboolean(L, -1));
    lua_pop(L, 1);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "_\r\n", 3), 3);
    ck_assert(lua_isnil(L, -1));
    lua_pop(L, 1);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "+OK\r\n", 5), 5);
    lua_getfield(L, -1, "ok");
    ck_assert_str_eq(lua_tostring(L, -1), "OK");
    lua_pop(L, 2);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "-ERR x y\r\n", 10), 10);
    lua_getfield(L, -1, "err");
    ck_assert_str_eq(lua_tostring(L, -1), "ERR x y");
    lua_pop(L, 2);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, arr, sizeof arr - 1),
                      sizeof arr - 1);
    ck_assert_uint_eq(lua_objlen(L, -1), 3);
    lua_rawgeti(L, -1, 2);
    ck_assert_str_eq(lua_tostring(L, -1), "ab");
    lua_pop(L, 1);
    lua_rawgeti(L, -1, 3);
    ck_assert(lua_isboolean(L, -1));
    lua_pop(L, 2);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, ",1.5\r\n", 6), 6);
    lua_getfield(L, -1, "double");
    ck_assert(lua_tonumber(L, -1) == 1.5);
    lua_pop(L, 2);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "#t\r\n", 4), 4);
    ck_assert(lua_toboolean(L, -1));
    lua_pop(L, 1);
    ck_assert_uint_eq(srv_script_resp_to_lua(L, "%1\r\n+a\r\n:1\r\n", 12), 12);
    lua_getfield(L, -1, "map");
    ck_assert_int_eq(lua_type(L, -1), LUA_TTABLE);
    lua_pop(L, 2);
    ck_assert_int_eq(lua_gettop(L), 0);
    lua_close(L);
}
END_TEST

START_TEST(resp_to_lua_malformed)
{
    lua_State *L = luaL_newstate();
    static const char *const bad[] = {
        "",       ":",        ":12",    "$3\r\nab",    "*2\r\n:1\r\n",
        "?x\r\n", ":abc\r\n", "$x\r\n", "%1\r\n+a\r\n"
    };

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_uint_eq(srv_script_resp_to_lua(L, bad[i], strlen(bad[i])), 0);
        ck_assert_int_eq(lua_gettop(L), 0);
    }
    lua_close(L);
}
END_TEST

/* ---- both ways ---- */

START_TEST(round_trips)
{
    RT(":5\r\n", 2, 2, ":5\r\n");
    RT("$3\r\nabc\r\n", 2, 2, "$3\r\nabc\r\n");
    RT("+OK\r\n", 2, 2, "+OK\r\n");
    RT("-ERR bad\r\n", 2, 2, "-ERR bad\r\n");
    RT("$-1\r\n", 2, 2, "$-1\r\n");
    RT("$-1\r\n", 3, 2, "_\r\n");
    RT("*2\r\n:1\r\n*1\r\n$1\r\nx\r\n", 2, 2, "*2\r\n:1\r\n*1\r\n$1\r\nx\r\n");
    /* RESP3 values to a RESP3 client come back as they were */
    RT("%1\r\n$1\r\na\r\n$1\r\nb\r\n", 3, 3, "%1\r\n$1\r\na\r\n$1\r\nb\r\n");
    RT("~1\r\n$1\r\nm\r\n", 3, 3, "~1\r\n$1\r\nm\r\n");
    RT(",3.5\r\n", 3, 3, ",3.5\r\n");
    RT("#t\r\n", 3, 3, "#t\r\n");
    RT("#f\r\n", 3, 3, "#f\r\n");
    RT("_\r\n", 3, 3, "_\r\n");
    RT("(12345678901234567890\r\n", 3, 3, "(12345678901234567890\r\n");
    RT("=7\r\ntxt:abc\r\n", 3, 3, "=7\r\ntxt:abc\r\n");
    /* and downgraded for a RESP2 client */
    RT("%1\r\n$1\r\na\r\n$1\r\nb\r\n", 2, 3, "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    RT("~1\r\n$1\r\nm\r\n", 2, 3, "*1\r\n$1\r\nm\r\n");
    RT(",3.5\r\n", 2, 3, "$3\r\n3.5\r\n");
    RT("#t\r\n", 2, 3, ":1\r\n");
    RT("(123\r\n", 2, 3, "$3\r\n123\r\n");
    RT("=7\r\ntxt:abc\r\n", 2, 3, "$3\r\nabc\r\n");
    /* a boolean when the script speaks RESP2: 1 or null */
    RT("#f\r\n", 3, 2, "_\r\n");
    RT("#t\r\n", 3, 2, ":1\r\n");
    /* an attribute is skipped */
    RT("|1\r\n+k\r\n+v\r\n:9\r\n", 2, 2, ":9\r\n");
}
END_TEST

START_TEST(lua_to_resp_rules)
{
    REPLY_OF("return 3.99", 2, 2, ":3\r\n");
    REPLY_OF("return -3.99", 2, 2, ":-3\r\n");
    REPLY_OF("return 1e300", 2, 2, ":-9223372036854775808\r\n");
    REPLY_OF("return 0/0", 2, 2, ":-9223372036854775808\r\n");
    REPLY_OF("return {1, nil, 3}", 2, 2, "*1\r\n:1\r\n");
    REPLY_OF("return {1, false, 3}", 2, 2, "*3\r\n:1\r\n$-1\r\n:3\r\n");
    REPLY_OF("return {a = 1}", 2, 2, "*0\r\n");
    REPLY_OF("return {err = 'x\\r\\ny', ok = 'z'}", 2, 2, "-x  y\r\n");
    REPLY_OF("return {ok = 'fine'}", 2, 2, "+fine\r\n");
    REPLY_OF("return {err = 5}", 2, 2, "*0\r\n");
    REPLY_OF("return {double = 1/0}", 3, 2, ",inf\r\n");
    REPLY_OF("return {double = 'x'}", 3, 2, "*0\r\n");
    REPLY_OF("return {big_number = 5}", 3, 2, "*0\r\n");
    REPLY_OF("return {map = {a = {1, 2}}}", 3, 2,
             "%1\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n");
    REPLY_OF("return {verbatim_string = {format = 'markdown', string = 'x'}}",
             3, 2, "$1\r\nx\r\n");
    REPLY_OF("return true", 2, 3, ":1\r\n");
    REPLY_OF("return false", 2, 3, ":0\r\n");
    REPLY_OF("return false", 2, 2, "$-1\r\n");
    REPLY_OF("return nil", 3, 2, "_\r\n");
    REPLY_OF("return function() end", 2, 2, "$-1\r\n");
}
END_TEST

START_TEST(lua_to_resp_cycle)
{
    lua_State *L = luaL_newstate();
    srv_conn *c = bare_conn(2);
    static const char tail[] = "-ERR reached lua stack limit\r\n";

    ck_assert_int_eq(luaL_dostring(L, "local t = {} t[1] = t return t"), 0);
    srv_script_lua_reply(L, -1, c, 2);
    ck_assert_uint_gt(c->out.len, sizeof tail);
    ck_assert_int_eq(memcmp(c->out.data + c->out.len - (sizeof tail - 1), tail,
                            sizeof tail - 1),
                     0);
    free_conn(c);
    lua_close(L);
}
END_TEST

/* ---- the engine ---- */

static int interrupts_left;

static const char *fake_call(void *ctx, int argc, const srv_slice *argv,
                             int resp, const char **reply, size_t *len,
                             int *abort)
{
    static const char pong[] = "+PONG\r\n", err[] = "-ERR nope\r\n";

    *abort = 0;
    if (argv[0].len == 4 && !memcmp(argv[0].ptr, "ping", 4)) {
        *reply = pong;
        *len = sizeof pong - 1;
        return NULL;
    }
    if (argv[0].len == 4 && !memcmp(argv[0].ptr, "fail", 4)) {
        *reply = err;
        *len = sizeof err - 1;
        return NULL;
    }
    if (argv[0].len == 4 && !memcmp(argv[0].ptr, "echo", 4) && argc == 2) {
        static char buf[64];
        *len = (size_t)snprintf(buf, sizeof buf, "$%zu\r\n%.*s\r\n",
                                argv[1].len, (int)argv[1].len, argv[1].ptr);
        *reply = buf;
        return NULL;
    }
    return "ERR Unknown Redis command called from script";
}

static const char *fake_interrupt(void *ctx)
{
    if (interrupts_left > 0 && --interrupts_left == 0)
        return "Script killed by user with SCRIPT KILL...";
    return NULL;
}

static const srv_lua_host fake_host = { .call = fake_call,
                                        .interrupt = fake_interrupt };

/* Compile and run `body` with KEYS {k1} ARGV {a1}; the reply in c. */
static int run(srv_lua *l, srv_conn *c, const char *body, size_t limit)
{
    char err[1024];
    int ref, rc;
    srv_slice keys[] = { { "k1", 2 } }, args[] = { { "a1", 2 } };

    if (srv_lua_compile(l, body, strlen(body), &ref, err, sizeof err)) {
        srv_buf_append(&c->out, err, strlen(err));
        return -1;
    }
    rc = srv_lua_run(l, ref, "sha", 1, keys, 1, args, limit, &fake_host, NULL,
                     c);
    srv_lua_unref(l, ref);
    return rc;
}

static void expect_run(srv_lua *l, const char *body, const char *want)
{
    srv_conn *c = bare_conn(2);

    run(l, c, body, 0);
    srv_buf_append(&c->out, "", 1);
    ck_assert_msg(strcmp(c->out.data, want) == 0, "%s: got %s want %s", body,
                  c->out.data, want);
    free_conn(c);
}

START_TEST(engine_basics)
{
    srv_lua *l = srv_lua_create(SRV_LUA_EVAL);

    ck_assert_ptr_nonnull(l);
    expect_run(l, "return {KEYS[1], ARGV[1]}",
               "*2\r\n$2\r\nk1\r\n$2\r\na1\r\n");
    expect_run(l, "return redis.call('ping')", "+PONG\r\n");
    expect_run(l, "return redis.call('echo', 12.5)", "$4\r\n12.5\r\n");
    expect_run(l, "return redis.pcall('fail')", "-ERR nope\r\n");
    expect_run(l, "return redis.call('fail')",
               "-ERR nope script: sha, on @user_script:1.\r\n");
    expect_run(l, "return redis.call('nosuch')",
               "-ERR Unknown Redis command called from script script: sha, "
               "on @user_script:1.\r\n");
    expect_run(l, "error('boom')",
               "-ERR user_script:1: boom script: sha, on @user_script:1.\r\n");
    expect_run(l, "return 1 +",
               "ERR Error compiling script (new function): user_script:1: "
               "unexpected symbol near '<eof>'");
    expect_run(l, "#!lua flags=no-writes,allow-oom\nreturn 2", ":2\r\n");
    expect_run(l, "return redis.sha1hex('abc')",
               "$40\r\na9993e364706816aba3e25717850c26c9cd0d89d\r\n");
    srv_lua_destroy(&l);
    ck_assert_ptr_null(l);
}
END_TEST

START_TEST(engine_sandbox)
{
    srv_lua *l = srv_lua_create(SRV_LUA_EVAL);

    expect_run(l, "x = 1",
               "-ERR user_script:1: Attempt to modify a readonly table "
               "script: sha, on @user_script:1.\r\n");
    expect_run(l, "return os",
               "-ERR user_script:1: Script attempted to access nonexistent "
               "global variable 'os' script: sha, on @user_script:1.\r\n");
    expect_run(l, "rawset(_G, 'x', 1)",
               "-ERR Attempt to modify a readonly table script: sha, on "
               "@user_script:1.\r\n");
    expect_run(l, "setmetatable(redis, {})",
               "-ERR Attempt to modify a readonly table script: sha, on "
               "@user_script:1.\r\n");
    expect_run(l, "table.insert = nil",
               "-ERR user_script:1: Attempt to modify a readonly table "
               "script: sha, on @user_script:1.\r\n");
    expect_run(l,
               "local n = 0 for k in pairs(math) do n = n + 1 end "
               "return n > 10",
               ":1\r\n");
    expect_run(l, "return rawget(string, 'upper') == string.upper", ":1\r\n");
    expect_run(l, "return {loadstring(string.dump(function() end))}", "*0\r\n");
    expect_run(l, "return (loadstring('return _G == ...')(_G))", ":1\r\n");
    /* KEYS of one run are gone in the next */
    expect_run(l, "return KEYS == nil", "$-1\r\n");
    srv_lua_destroy(&l);
}
END_TEST

START_TEST(engine_memory_cap)
{
    srv_lua *l = srv_lua_create(SRV_LUA_EVAL);
    srv_conn *c = bare_conn(2);
    size_t before = srv_lua_memory(l);
    static const char want[] = "-ERR Lua script exceeded lua-memory-limit "
                               "(1048576 bytes) script: sha\r\n";

    run(l, c, "local t = {} for i = 1, 1e7 do t[i] = 'x' .. i end", 1 << 20);
    assert_out(c, want, sizeof want - 1);
    /* the garbage is collected; the engine works on */
    ck_assert_uint_lt(srv_lua_memory(l), before + (1 << 20));
    run(l, c, "return 7", 1 << 20);
    ASSERT_OUT(c, ":7\r\n");
    free_conn(c);
    srv_lua_destroy(&l);
}
END_TEST

START_TEST(engine_interrupt)
{
    srv_lua *l = srv_lua_create(SRV_LUA_EVAL);
    srv_conn *c = bare_conn(2);

    interrupts_left = 3;
    /* pcall in the script cannot keep the interrupt from ending it */
    ck_assert_int_eq(run(l, c,
                         "while true do pcall(function() while true do "
                         "end end) end",
                         0),
                     1);
    srv_buf_append(&c->out, "", 1);
    ck_assert_msg(strstr(c->out.data, "-ERR Script killed by user with SCRIPT "
                                      "KILL... script: sha, on "
                                      "@user_script:1.") == c->out.data,
                  "%s", c->out.data);
    c->out.len = 0;
    interrupts_left = 0;
    ck_assert_int_eq(run(l, c, "return 1", 0), 0);
    ASSERT_OUT(c, ":1\r\n");
    free_conn(c);
    srv_lua_destroy(&l);
}
END_TEST

START_TEST(shebang)
{
    unsigned flags;
    size_t skip;
    char err[256];

    ck_assert_int_eq(srv_lua_shebang("return 1", 8, &flags, &skip, err,
                                     sizeof err),
                     0);
    ck_assert_uint_eq(flags, 0);
    ck_assert_int_eq(srv_lua_shebang("#!lua flags=no-writes,allow-stale\nx", 35,
                                     &flags, &skip, err, sizeof err),
                     0);
    ck_assert_uint_eq(flags, SRV_LUA_FLAG_SHEBANG | SRV_LUA_FLAG_NO_WRITES |
                                 SRV_LUA_FLAG_ALLOW_STALE);
    ck_assert_uint_eq(skip, 33);
    ck_assert_int_eq(srv_lua_shebang("#!lua\n", 6, &flags, &skip, err,
                                     sizeof err),
                     0);
    ck_assert_uint_eq(flags, SRV_LUA_FLAG_SHEBANG);
    ck_assert_int_eq(srv_lua_shebang("#!lua", 5, &flags, &skip, err,
                                     sizeof err),
                     -1);
    ck_assert_str_eq(err, "ERR Invalid script shebang");
    ck_assert_int_eq(srv_lua_shebang("#!lua flags=x\n", 14, &flags, &skip, err,
                                     sizeof err),
                     -1);
    ck_assert_str_eq(err, "ERR Unexpected flag in script shebang: x");
    ck_assert_int_eq(srv_lua_shebang("#!py\n", 5, &flags, &skip, err,
                                     sizeof err),
                     -1);
    ck_assert_str_eq(err, "ERR Unexpected engine in script shebang: #!py");
    ck_assert_int_eq(srv_lua_shebang("#!lua x=y\n", 10, &flags, &skip, err,
                                     sizeof err),
                     -1);
    ck_assert_str_eq(err, "ERR Unknown lua shebang option: x=y");
}
END_TEST

START_TEST(sha1_vectors)
{
    char hex[SRV_SHA1_HEX_LEN + 1];
    char *million = malloc(1000000);

    srv_sha1_hex("", 0, hex);
    ck_assert_str_eq(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    srv_sha1_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    srv_sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
                 hex);
    ck_assert_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    memset(million, 'a', 1000000);
    srv_sha1_hex(million, 1000000, hex);
    ck_assert_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    free(million);
}
END_TEST

/* struct and cmsgpack through the engine (their tables are read-only). */
START_TEST(libs)
{
    srv_lua *l = srv_lua_create(SRV_LUA_EVAL);

    expect_run(l, "return struct.pack('>I2', 258)", "$2\r\n\x01\x02\r\n");
    expect_run(l, "return {struct.unpack('<i4', struct.pack('<i4', -5))}",
               "*2\r\n:-5\r\n:5\r\n");
    expect_run(l, "return struct.size('!4bi')", ":8\r\n");
    expect_run(l, "return cmsgpack.pack({1, 2})", "$3\r\n\x92\x01\x02\r\n");
    expect_run(l, "return cmsgpack.unpack(cmsgpack.pack({a = 'b'})).a",
               "$1\r\nb\r\n");
    expect_run(l, "return {cmsgpack.unpack(cmsgpack.pack(-1, 300, 'x'))}",
               "*3\r\n:-1\r\n:300\r\n$1\r\nx\r\n");
    expect_run(l, "return cjson.encode({a = {1, 2}})",
               "$11\r\n{\"a\":[1,2]}\r\n");
    expect_run(l, "return bit.bxor(6, 3)", ":5\r\n");
    srv_lua_destroy(&l);
}
END_TEST

/* ---- the scripting region ---- */

START_TEST(region_layout)
{
    /* pinned: a change of layout must bump SRV_SCRIPTSHM_VERSION */
    ck_assert_uint_eq(sizeof(srv_scriptshm_slot_sh), 128);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, run), 0);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, started_ms), 8);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, flags), 16);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, pid), 20);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, kill), 24);
    ck_assert_uint_eq(offsetof(srv_scriptshm_slot_sh, name), 32);
    ck_assert_uint_eq(offsetof(srv_scriptshm_sh, cache_gen), 24);
    ck_assert_uint_eq(offsetof(srv_scriptshm_sh, slot) % 64, 0);
}
END_TEST

START_TEST(region_runs_and_kills)
{
    srv_scriptshm_sh *sh = srv_scriptshm_create(3);
    srv_scriptshm_run r;
    uint64_t id;

    ck_assert_ptr_nonnull(sh);
    ck_assert_int_eq(srv_scriptshm_check(sh), 0);
    for (int i = 0; i < 3; i++)
        srv_scriptshm_reset_slot(sh, i);
    ck_assert_int_eq(srv_scriptshm_find(sh, -1, &r), 0);
    id = srv_scriptshm_begin(sh, 1, SRV_SCRIPTSHM_WRITE, "abc", 100);
    ck_assert_uint_ne(id, 0);
    ck_assert_int_eq(srv_scriptshm_find(sh, 1, &r), 0); /* not its own */
    ck_assert_int_eq(srv_scriptshm_find(sh, 0, &r), 1);
    ck_assert_int_eq(r.slot, 1);
    ck_assert_uint_eq(r.run, id);
    ck_assert_str_eq(r.name, "abc");
    ck_assert_uint_eq(r.flags, SRV_SCRIPTSHM_WRITE);
    ck_assert_int_eq(srv_scriptshm_killed(sh, 1, id), 0);
    ck_assert_int_eq(srv_scriptshm_kill(sh, &r), 1);
    ck_assert_int_eq(srv_scriptshm_killed(sh, 1, id), 1);
    srv_scriptshm_end(sh, 1);
    ck_assert_int_eq(srv_scriptshm_find(sh, 0, &r), 0);
    /* a kill meant for an earlier run does not reach the next one */
    id = srv_scriptshm_begin(sh, 1, 0, "next", 200);
    ck_assert_int_eq(srv_scriptshm_killed(sh, 1, id), 0);
    srv_scriptshm_kill_all(sh);
    ck_assert_int_eq(srv_scriptshm_killed(sh, 1, id), 1);
    srv_scriptshm_end(sh, 1);
    /* the oldest run is the one found */
    srv_scriptshm_begin(sh, 0, 0, "young", 300);
    srv_scriptshm_begin(sh, 2, SRV_SCRIPTSHM_FUNCTION, "old", 250);
    ck_assert_int_eq(srv_scriptshm_find(sh, 1, &r), 1);
    ck_assert_str_eq(r.name, "old");
    ck_assert_uint_eq(r.flags, SRV_SCRIPTSHM_FUNCTION);
}
END_TEST

START_TEST(region_dead_worker)
{
    srv_scriptshm_sh *sh = srv_scriptshm_create(2);
    srv_scriptshm_run r;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* a worker that dies in the middle of a script */
        srv_scriptshm_reset_slot(sh, 1);
        srv_scriptshm_begin(sh, 1, SRV_SCRIPTSHM_WRITE, "dying", 1);
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    srv_scriptshm_reset_slot(sh, 0);
    /* its record still claims a run, but a dead pid counts as idle */
    ck_assert_uint_ne(atomic_load(&sh->slot[1].run), 0);
    ck_assert_int_eq(srv_scriptshm_find(sh, 0, &r), 0);
    srv_scriptshm_reset_slot(sh, 1); /* its successor */
    ck_assert_uint_eq(atomic_load(&sh->slot[1].run), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("script");
    TCase *conv = tcase_create("conversions");
    TCase *eng = tcase_create("engine");

    tcase_add_test(conv, resp_to_lua_types);
    tcase_add_test(conv, resp_to_lua_malformed);
    tcase_add_test(conv, round_trips);
    tcase_add_test(conv, lua_to_resp_rules);
    tcase_add_test(conv, lua_to_resp_cycle);
    tcase_add_test(eng, engine_basics);
    tcase_add_test(eng, engine_sandbox);
    tcase_add_test(eng, engine_memory_cap);
    tcase_add_test(eng, engine_interrupt);
    tcase_add_test(eng, shebang);
    tcase_add_test(eng, sha1_vectors);
    tcase_add_test(eng, libs);
    tcase_set_timeout(eng, 30);
    TCase *reg = tcase_create("region");
    tcase_add_test(reg, region_layout);
    tcase_add_test(reg, region_runs_and_kills);
    tcase_add_test(reg, region_dead_worker);
    suite_add_tcase(s, conv);
    suite_add_tcase(s, eng);
    suite_add_tcase(s, reg);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
