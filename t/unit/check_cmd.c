/*
 * check_cmd: unit tests of the command dispatcher (server/cmd/srv_cmd.h)
 * through an embedded worker (t/unit/unit_embed.h): arity errors (fixed
 * and at-least arities, any case of the name), the unknown-command text
 * with its argument list cut as Redis cuts it, NOAUTH until AUTH once a
 * password is set (after the name and arity checks), subcommand errors
 * (unknown, and arity as 'container|sub'), several commands in one feed
 * and one command over several feeds, inline commands, and HELLO 3
 * switching the shapes of maps, sets, nulls and doubles (and HELLO 2
 * switching back). Replies are compared byte for byte with what Redis 7.0
 * sends.
 */
#include "t/unit/unit_embed.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 30
#define HELLO_MAX 512
#define ARGS_SHOWN 128 /* argument bytes an unknown-command error quotes */
#define LONG_ARG 200

#define ARITY(name) "-ERR wrong number of arguments for '" name "' command\r\n"
#define NOAUTH "-NOAUTH Authentication required.\r\n"
/* SET k vv, fed byte by byte */
#define SET_CMD "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n"

/* HELLO's reply to c in protocol `proto` (the server claims Redis
 * 7.0.15, as HELLO and INFO do). */
static const char *hello_reply(const srv_conn *c, int proto)
{
    static char buf[HELLO_MAX];
    char id[32];

    snprintf(id, sizeof id, "%llu", (unsigned long long)c->id);
    snprintf(buf, sizeof buf,
             "%s$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n"
             "$6\r\n7.0.15\r\n$5\r\nproto\r\n:%d\r\n$2\r\nid\r\n:%s\r\n"
             "$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n"
             "$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
             proto == 3 ? "%7\r\n" : "*14\r\n", proto, id);
    return buf;
}

/* ------------------------------------------------------------------ */
/* arity */

START_TEST(test_arity)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, ARITY("get"), "GET");
    UNIT_CALL(c, ARITY("get"), "GET", "a", "b");
    UNIT_CALL(c, ARITY("get"), "GeT"); /* the table's name */
    UNIT_CALL(c, ARITY("set"), "SET", "k");
    UNIT_CALL(c, ARITY("echo"), "ECHO");
    UNIT_CALL(c, ARITY("ping"), "PING", "a", "b");
    UNIT_CALL(c, ARITY("mset"), "MSET", "k"); /* at least 3 */
    UNIT_CALL(c, ARITY("del"), "DEL");        /* at least 2 */
    /* The command did not run, and the connection goes on. */
    UNIT_CALL(c, "$-1\r\n", "GET", "k");
    UNIT_CALL(c, "+OK\r\n", "MSET", "k", "v");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
}
END_TEST

/* ------------------------------------------------------------------ */
/* unknown commands */

START_TEST(test_unknown_command)
{
    srv_conn *c = unit_embed_conn();
    char arg[LONG_ARG + 1], want[LONG_ARG * 2];

    UNIT_CALL(c,
              "-ERR unknown command 'NOSUCH', with args beginning with: "
              "'a' 'b' \r\n",
              "NOSUCH", "a", "b");
    UNIT_CALL(c,
              "-ERR unknown command 'nosuch', with args beginning with: "
              "\r\n",
              "nosuch");
    /* The quoted arguments stop at ARGS_SHOWN bytes. */
    memset(arg, 'x', LONG_ARG);
    arg[LONG_ARG] = '\0';
    snprintf(want, sizeof want,
             "-ERR unknown command 'nosuch', with args beginning with: "
             "'%.*s' \r\n",
             ARGS_SHOWN, arg);
    UNIT_CALL(c, want, "nosuch", arg, "more");
    /* Inline form. */
    unit_embed_feed(c, "FOO bar\r\n", 9);
    unit_embed_expect(c, "-ERR unknown command 'FOO', with args beginning "
                         "with: 'bar' \r\n");
    UNIT_CALL(c, "+PONG\r\n", "PING");
}
END_TEST

/* ------------------------------------------------------------------ */
/* authentication */

START_TEST(test_noauth)
{
    srv_conn *admin = unit_embed_conn(), *c;

    UNIT_CALL(admin, "+OK\r\n", "SET", "k", "v");
    UNIT_CALL(admin, "+OK\r\n", "CONFIG", "SET", "requirepass", "pw");
    /* A connection made after the password is set must AUTH first. */
    c = unit_embed_conn();
    UNIT_CALL(c, NOAUTH, "GET", "k");
    UNIT_CALL(c, NOAUTH, "PING");
    UNIT_CALL(c, NOAUTH, "MULTI");
    /* As in Redis, the name and the arity are checked first. */
    UNIT_CALL(c,
              "-ERR unknown command 'NOSUCH', with args beginning with: "
              "\r\n",
              "NOSUCH");
    UNIT_CALL(c, ARITY("get"), "GET");
    UNIT_CALL(c,
              "-NOAUTH HELLO must be called with the client already "
              "authenticated, otherwise the HELLO AUTH <user> <pass> "
              "option can be used to authenticate the client and select "
              "the RESP protocol version at the same time\r\n",
              "HELLO", "3");
    UNIT_CALL(c,
              "-WRONGPASS invalid username-password pair or user is "
              "disabled.\r\n",
              "AUTH", "wrong");
    UNIT_CALL(c, NOAUTH, "GET", "k");
    UNIT_CALL(c, "+OK\r\n", "AUTH", "pw");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
    UNIT_CALL(c, ARITY("get"), "GET");

    /* HELLO AUTH authenticates and switches protocol at once. */
    c = unit_embed_conn();
    unit_embed_send(c, "HELLO", "3", "AUTH", "default", "pw", NULL);
    unit_embed_expect(c, hello_reply(c, 3));
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
}
END_TEST

/* ------------------------------------------------------------------ */
/* subcommands */

START_TEST(test_subcommand_errors)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, "-ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n",
              "CLIENT", "NOSUCH");
    UNIT_CALL(c, "-ERR unknown subcommand 'nosuch'. Try CONFIG HELP.\r\n",
              "CONFIG", "nosuch");
    UNIT_CALL(c, "-ERR unknown subcommand 'NOSUCH'. Try COMMAND HELP.\r\n",
              "COMMAND", "NOSUCH");
    UNIT_CALL(c, ARITY("client"), "CLIENT");
    UNIT_CALL(c, ARITY("config"), "CONFIG");
    UNIT_CALL(c, ARITY("client|setname"), "CLIENT", "SETNAME");
    UNIT_CALL(c, ARITY("client|setname"), "CLIENT", "SETNAME", "a", "b");
    UNIT_CALL(c, ARITY("config|get"), "CONFIG", "GET");
    UNIT_CALL(c, "+OK\r\n", "CLIENT", "SETNAME", "me");
    UNIT_CALL(c, "$2\r\nme\r\n", "CLIENT", "GETNAME");
}
END_TEST

/* ------------------------------------------------------------------ */
/* pipelines and partial input */

START_TEST(test_pipeline_one_feed)
{
    static const char in[] = "*1\r\n$4\r\nPING\r\n"
                             "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"
                             "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
                             "*1\r\n$3\r\nGET\r\n"
                             "*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"
                             "*2\r\n$6\r\nNOSUCH\r\n$1\r\nx\r\n"
                             "*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"
                             "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    srv_conn *c = unit_embed_conn();

    unit_embed_feed(c, in, sizeof in - 1);
    unit_embed_expect(c, "+PONG\r\n"
                         "$2\r\nhi\r\n"
                         "+OK\r\n"
                         "-ERR wrong number of arguments for 'get' command\r\n"
                         "-ERR value is not an integer or out of range\r\n"
                         "-ERR unknown command 'NOSUCH', with args beginning "
                         "with: 'x' \r\n"
                         ":1\r\n"
                         "$-1\r\n");
    /* Inline commands, quoted arguments included. */
    unit_embed_feed(c, "PING\r\nPING x\r\nECHO \"a b\"\r\n", 27);
    unit_embed_expect(c, "+PONG\r\n$1\r\nx\r\n$3\r\na b\r\n");
}
END_TEST

START_TEST(test_command_over_feeds)
{
    static const char in[] = SET_CMD "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    srv_conn *c = unit_embed_conn();
    size_t n = sizeof in - 1, set_end = sizeof SET_CMD - 2;

    /* One byte at a time: a reply only once its command is whole. */
    for (size_t i = 0; i < n; i++) {
        unit_embed_feed(c, in + i, 1);
        if (i == set_end)
            unit_embed_expect(c, "+OK\r\n");
        else if (i == n - 1)
            unit_embed_expect(c, "$2\r\nvv\r\n");
        else
            unit_embed_expect(c, "");
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* RESP3 */

/* The reply shapes that change with the protocol. */
static void shapes(srv_conn *c, int proto)
{
    if (proto == 3) {
        UNIT_CALL(c, "%1\r\n$1\r\nf\r\n$1\r\nv\r\n", "HGETALL", "h");
        UNIT_CALL(c, "%0\r\n", "HGETALL", "nokey");
        UNIT_CALL(c, "~1\r\n$1\r\nm\r\n", "SMEMBERS", "s");
        UNIT_CALL(c, "~0\r\n", "SMEMBERS", "nokey");
        UNIT_CALL(c, "_\r\n", "GET", "nokey");
        UNIT_CALL(c, ",1.5\r\n", "ZSCORE", "z", "m");
        UNIT_CALL(c, ",1.1000000000000001\r\n", "ZSCORE", "z", "n");
        UNIT_CALL(c, "_\r\n", "ZSCORE", "z", "nomember");
        UNIT_CALL(c, "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n", "CONFIG", "GET",
                  "maxmemory");
    } else {
        UNIT_CALL(c, "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", "HGETALL", "h");
        UNIT_CALL(c, "*0\r\n", "HGETALL", "nokey");
        UNIT_CALL(c, "*1\r\n$1\r\nm\r\n", "SMEMBERS", "s");
        UNIT_CALL(c, "*0\r\n", "SMEMBERS", "nokey");
        UNIT_CALL(c, "$-1\r\n", "GET", "nokey");
        UNIT_CALL(c, "$3\r\n1.5\r\n", "ZSCORE", "z", "m");
        UNIT_CALL(c, "$18\r\n1.1000000000000001\r\n", "ZSCORE", "z", "n");
        UNIT_CALL(c, "$-1\r\n", "ZSCORE", "z", "nomember");
        UNIT_CALL(c, "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n", "CONFIG", "GET",
                  "maxmemory");
    }
    /* The same in both. */
    UNIT_CALL(c, ":1\r\n", "EXISTS", "h");
    UNIT_CALL(c, "$1\r\nv\r\n", "HGET", "h", "f");
}

START_TEST(test_hello3_switches_shapes)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, ":1\r\n", "HSET", "h", "f", "v");
    UNIT_CALL(c, ":1\r\n", "SADD", "s", "m");
    UNIT_CALL(c, ":2\r\n", "ZADD", "z", "1.5", "m", "1.1", "n");
    shapes(c, 2);
    unit_embed_send(c, "HELLO", "3", NULL);
    unit_embed_expect(c, hello_reply(c, 3));
    shapes(c, 3);
    /* HELLO without a version answers in the current protocol. */
    unit_embed_send(c, "HELLO", NULL);
    unit_embed_expect(c, hello_reply(c, 3));
    unit_embed_send(c, "HELLO", "2", NULL);
    unit_embed_expect(c, hello_reply(c, 2));
    shapes(c, 2);
    /* Refused versions leave the protocol as it is. */
    UNIT_CALL(c, "-NOPROTO unsupported protocol version\r\n", "HELLO", "4");
    UNIT_CALL(c, "-ERR Protocol version is not an integer or out of range\r\n",
              "HELLO", "x");
    shapes(c, 2);
}
END_TEST

static Suite *cmd_suite(void)
{
    Suite *s = suite_create("srv_cmd");
    TCase *tc;

    tc = tcase_create("errors");
    unit_embed_fixture(tc);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_arity);
    tcase_add_test(tc, test_unknown_command);
    tcase_add_test(tc, test_noauth);
    tcase_add_test(tc, test_subcommand_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("input");
    unit_embed_fixture(tc);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_pipeline_one_feed);
    tcase_add_test(tc, test_command_over_feeds);
    suite_add_tcase(s, tc);

    tc = tcase_create("resp3");
    unit_embed_fixture(tc);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_hello3_switches_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cmd_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
