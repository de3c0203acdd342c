/*
 * check_multi: unit tests of MULTI / EXEC / DISCARD / WATCH / UNWATCH
 * (server/cmd/srv_multi.h) through an embedded worker
 * (t/unit/unit_embed.h): queued replies and EXEC's array, errors inside
 * EXEC, EXEC and DISCARD without MULTI, nested MULTI, EXECABORT after a
 * command refused while queueing, WATCH broken by a write of a second
 * connection (RESP2 and RESP3 null), by the client's own write, kept by
 * writes to other keys, cleared by UNWATCH, DISCARD and EXEC, WATCH
 * inside MULTI refused, and a whole transaction in one feed. Replies are
 * compared byte for byte with what Redis 7.0 sends.
 */
#include "t/unit/unit_embed.h"

#include <check.h>
#include <stdlib.h>

#define TIMEOUT_S 30

#define QUEUED "+QUEUED\r\n"
#define OK "+OK\r\n"
#define NO_TXN "*-1\r\n" /* EXEC after a watched key changed, RESP2 */
#define EXECABORT \
    "-EXECABORT Transaction discarded because of previous errors.\r\n"

/* ------------------------------------------------------------------ */
/* MULTI, EXEC, DISCARD */

START_TEST(test_multi_exec)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "k", "v");
    UNIT_CALL(c, QUEUED, "INCR", "n");
    UNIT_CALL(c, QUEUED, "GET", "k");
    UNIT_CALL(c, "*3\r\n+OK\r\n:1\r\n$1\r\nv\r\n", "EXEC");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
    /* An empty transaction. */
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, "*0\r\n", "EXEC");
    /* SELECT inside a transaction holds for the commands after it. */
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SELECT", "1");
    UNIT_CALL(c, QUEUED, "SET", "k", "one");
    UNIT_CALL(c, "*2\r\n+OK\r\n+OK\r\n", "EXEC");
    UNIT_CALL(c, "$3\r\none\r\n", "GET", "k");
    UNIT_CALL(c, OK, "SELECT", "0");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
}
END_TEST

START_TEST(test_error_inside_exec)
{
    /* A command failing when it runs fails alone; the others apply. */
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "s", "str");
    UNIT_CALL(c, QUEUED, "LPUSH", "s", "x");
    UNIT_CALL(c, QUEUED, "GET", "s");
    UNIT_CALL(c,
              "*3\r\n+OK\r\n-WRONGTYPE Operation against a key holding the "
              "wrong kind of value\r\n$3\r\nstr\r\n",
              "EXEC");
}
END_TEST

START_TEST(test_without_multi)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, "-ERR EXEC without MULTI\r\n", "EXEC");
    UNIT_CALL(c, "-ERR DISCARD without MULTI\r\n", "DISCARD");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, "*0\r\n", "EXEC");
    UNIT_CALL(c, "-ERR EXEC without MULTI\r\n", "EXEC");
}
END_TEST

START_TEST(test_discard)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "SET", "k", "v");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "k", "w");
    UNIT_CALL(c, QUEUED, "DEL", "k");
    UNIT_CALL(c, OK, "DISCARD");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
    UNIT_CALL(c, "-ERR EXEC without MULTI\r\n", "EXEC");
    /* DISCARD also forgets a refused command. */
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, "-ERR wrong number of arguments for 'get' command\r\n", "GET");
    UNIT_CALL(c, OK, "DISCARD");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "k");
    UNIT_CALL(c, "*1\r\n$1\r\nv\r\n", "EXEC");
}
END_TEST

START_TEST(test_nested_multi)
{
    /* Refused, but the transaction goes on and EXEC runs it. */
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, "-ERR MULTI calls can not be nested\r\n", "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "k", "v");
    UNIT_CALL(c, "-ERR MULTI calls can not be nested\r\n", "MULTI");
    UNIT_CALL(c, "*1\r\n+OK\r\n", "EXEC");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
}
END_TEST

START_TEST(test_execabort)
{
    /* A command refused while queueing discards the whole transaction. */
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "SET", "k", "v");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "k", "x");
    UNIT_CALL(c, "-ERR wrong number of arguments for 'set' command\r\n", "SET",
              "k");
    UNIT_CALL(c,
              "-ERR unknown command 'NOSUCH', with args beginning with: "
              "\r\n",
              "NOSUCH");
    UNIT_CALL(c, QUEUED, "INCR", "n");
    UNIT_CALL(c, EXECABORT, "EXEC");
    UNIT_CALL(c, "$1\r\nv\r\n", "GET", "k");
    UNIT_CALL(c, ":0\r\n", "EXISTS", "n");
    UNIT_CALL(c, "-ERR EXEC without MULTI\r\n", "EXEC");
    /* One refusal is enough. */
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c,
              "-ERR unknown command 'nosuch', with args beginning with: "
              "'a' \r\n",
              "nosuch", "a");
    UNIT_CALL(c, EXECABORT, "EXEC");
}
END_TEST

START_TEST(test_one_feed)
{
    static const char in[] = "MULTI\r\nSET a 1\r\nINCR a\r\nEXEC\r\n";
    srv_conn *c = unit_embed_conn();

    unit_embed_feed(c, in, sizeof in - 1);
    unit_embed_expect(c, "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n:2\r\n");
}
END_TEST

/* ------------------------------------------------------------------ */
/* WATCH */

START_TEST(test_watch_other_connection)
{
    srv_conn *c = unit_embed_conn(), *other = unit_embed_conn();

    UNIT_CALL(c, OK, "WATCH", "w");
    UNIT_CALL(other, OK, "SET", "w", "other");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "SET", "w", "mine");
    UNIT_CALL(c, NO_TXN, "EXEC");
    UNIT_CALL(c, "$5\r\nother\r\n", "GET", "w");
    /* A watched key that did not exist, then created. */
    UNIT_CALL(c, OK, "WATCH", "w", "nokey");
    UNIT_CALL(other, OK, "SET", "nokey", "x");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "w");
    UNIT_CALL(c, NO_TXN, "EXEC");
    /* RESP3: the aborted EXEC is a null. */
    unit_embed_send(c, "HELLO", "3", NULL);
    unit_embed_expect_prefix(c, "%7\r\n$6\r\nserver\r\n");
    UNIT_CALL(c, OK, "WATCH", "w");
    UNIT_CALL(other, ":1\r\n", "DEL", "w");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "PING");
    UNIT_CALL(c, "_\r\n", "EXEC");
}
END_TEST

START_TEST(test_watch_own_write)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, OK, "WATCH", "k");
    UNIT_CALL(c, OK, "SET", "k", "own");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "PING");
    UNIT_CALL(c, NO_TXN, "EXEC");
}
END_TEST

START_TEST(test_watch_kept)
{
    /* Writes to other keys leave a watch intact. */
    srv_conn *c = unit_embed_conn(), *other = unit_embed_conn();

    UNIT_CALL(c, OK, "SET", "k", "v");
    UNIT_CALL(c, OK, "WATCH", "k");
    UNIT_CALL(other, OK, "SET", "other", "x");
    UNIT_CALL(other, "$1\r\nv\r\n", "GET", "k");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "k");
    UNIT_CALL(c, QUEUED, "SET", "k", "w");
    UNIT_CALL(c, "*2\r\n$1\r\nv\r\n+OK\r\n", "EXEC");
    UNIT_CALL(other, "$1\r\nw\r\n", "GET", "k");
}
END_TEST

START_TEST(test_watch_cleared)
{
    /* UNWATCH, DISCARD and EXEC each end the watch. */
    srv_conn *c = unit_embed_conn(), *other = unit_embed_conn();

    UNIT_CALL(c, OK, "WATCH", "w");
    UNIT_CALL(c, OK, "UNWATCH");
    UNIT_CALL(other, OK, "SET", "w", "1");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "w");
    UNIT_CALL(c, "*1\r\n$1\r\n1\r\n", "EXEC");

    UNIT_CALL(c, OK, "WATCH", "w");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, OK, "DISCARD");
    UNIT_CALL(other, OK, "SET", "w", "2");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "w");
    UNIT_CALL(c, "*1\r\n$1\r\n2\r\n", "EXEC");

    UNIT_CALL(other, OK, "SET", "w", "3"); /* after the last EXEC */
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "GET", "w");
    UNIT_CALL(c, "*1\r\n$1\r\n3\r\n", "EXEC");
    UNIT_CALL(c, OK, "UNWATCH"); /* nothing watched: fine */
}
END_TEST

START_TEST(test_watch_survives_failed_exec)
{
    /* EXEC without MULTI is refused and does not end the watch. */
    srv_conn *c = unit_embed_conn(), *other = unit_embed_conn();

    UNIT_CALL(c, OK, "WATCH", "k");
    UNIT_CALL(other, OK, "SET", "k", "x");
    UNIT_CALL(c, "-ERR EXEC without MULTI\r\n", "EXEC");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, NO_TXN, "EXEC");
}
END_TEST

START_TEST(test_watch_refused)
{
    srv_conn *c = unit_embed_conn();

    UNIT_CALL(c, "-ERR wrong number of arguments for 'watch' command\r\n",
              "WATCH");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, "-ERR WATCH inside MULTI is not allowed\r\n", "WATCH", "w");
    UNIT_CALL(c, QUEUED, "SET", "w", "v");
    /* Not a queueing error: EXEC runs the transaction. */
    UNIT_CALL(c, "*1\r\n+OK\r\n", "EXEC");
}
END_TEST

/* ------------------------------------------------------------------ */
/* RESP3 */

START_TEST(test_exec_resp3)
{
    srv_conn *c = unit_embed_conn();

    unit_embed_send(c, "HELLO", "3", NULL);
    unit_embed_expect_prefix(c, "%7\r\n$6\r\nserver\r\n");
    UNIT_CALL(c, ":1\r\n", "HSET", "h", "f", "v");
    UNIT_CALL(c, OK, "MULTI");
    UNIT_CALL(c, QUEUED, "HGETALL", "h");
    UNIT_CALL(c, QUEUED, "HGETALL", "nokey");
    UNIT_CALL(c, QUEUED, "ZSCORE", "nokey", "m");
    UNIT_CALL(c, QUEUED, "ZADD", "z", "2.5", "m");
    UNIT_CALL(c, QUEUED, "ZSCORE", "z", "m");
    UNIT_CALL(c, "*5\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n%0\r\n_\r\n:1\r\n,2.5\r\n",
              "EXEC");
}
END_TEST

static Suite *multi_suite(void)
{
    Suite *s = suite_create("srv_multi");
    TCase *tc;

    tc = tcase_create("core");
    unit_embed_fixture(tc);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_multi_exec);
    tcase_add_test(tc, test_error_inside_exec);
    tcase_add_test(tc, test_without_multi);
    tcase_add_test(tc, test_discard);
    tcase_add_test(tc, test_nested_multi);
    tcase_add_test(tc, test_execabort);
    tcase_add_test(tc, test_one_feed);
    tcase_add_test(tc, test_exec_resp3);
    suite_add_tcase(s, tc);

    tc = tcase_create("watch");
    unit_embed_fixture(tc);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_watch_other_connection);
    tcase_add_test(tc, test_watch_own_write);
    tcase_add_test(tc, test_watch_kept);
    tcase_add_test(tc, test_watch_cleared);
    tcase_add_test(tc, test_watch_survives_failed_exec);
    tcase_add_test(tc, test_watch_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(multi_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
