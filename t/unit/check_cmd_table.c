/*
 * check_cmd_table: unit tests of the command table (server/cmd/srv_cmd.h,
 * srv_commands.def): every row is well formed and found by its name,
 * subcommands hang off their containers, the legacy key range and
 * movablekeys come out of the key specs as Redis 7 derives them, the
 * dispatcher answers unknown subcommands and subcommand arity from the
 * table, and a debug build stops a command whose row lacks the write flag
 * when it opens a write transaction (through an embedded worker).
 */
#include "t/unit/unit_tmp.h"
#include <check.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_embed.h"

#define ROOT_SIZE 1024
#define DIR_SIZE 2048
#define NAME_SIZE 64
#define TIMEOUT_S 30

static char root[ROOT_SIZE];
static char dir[DIR_SIZE];
static srv_conn *conn;

static void root_setup(void)
{
    unit_tmp_make(root, sizeof root, "check_cmd_table");
}

static void root_teardown(void) { unit_tmp_remove(root); }

/* An embedded worker in a fresh data dir, and one connection to it. */
static void embed_setup(void)
{
    snprintf(dir, sizeof dir, "%s/w.XXXXXX", root);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(srv_embed_open(dir), 0);
    conn = srv_embed_conn();
    ck_assert_ptr_nonnull(conn);
}

static void embed_teardown(void)
{
    srv_embed_close(); /* closes conn too */
    conn = NULL;
}

static const srv_command *named(const char *name)
{
    const srv_command *cmd = srv_cmd_lookup_name(name, strlen(name));

    ck_assert_msg(cmd != NULL, "no row for %s", name);
    return cmd;
}

START_TEST(test_rows_well_formed)
{
    int n;
    const srv_command *t;

    srv_cmd_init();
    t = srv_cmd_table(&n);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) {
        const srv_command *cmd = &t[i];
        ck_assert_msg(cmd->arity != 0, "%s: arity 0", cmd->name);
        /* Redis's docs give LOLWUT, SYNC and MONITOR no complexity */
        ck_assert_msg(cmd->group && cmd->since && cmd->summary &&
                          (cmd->complexity || !strcmp(cmd->name, "lolwut") ||
                           !strcmp(cmd->name, "sync") ||
                           !strcmp(cmd->name, "monitor")),
                      "%s: docs missing", cmd->name);
        ck_assert_msg(cmd->proc || cmd->nsubs, "%s: no handler", cmd->name);
        ck_assert_msg(!(cmd->flags & F_WRITE) || !(cmd->flags & F_READONLY),
                      "%s: write and readonly", cmd->name);
        /* found by its full name, in any case */
        ck_assert_ptr_eq(srv_cmd_lookup_name(cmd->name, strlen(cmd->name)),
                         cmd);
        char upper[NAME_SIZE];
        size_t len = strlen(cmd->name);
        ck_assert_uint_lt(len, sizeof upper);
        for (size_t j = 0; j <= len; j++)
            upper[j] = (char)toupper((unsigned char)cmd->name[j]);
        ck_assert_ptr_eq(srv_cmd_lookup_name(upper, len), cmd);
    }
}
END_TEST

START_TEST(test_subcommands)
{
    const srv_command *client, *list;

    srv_cmd_init();
    client = srv_cmd_lookup("CLIENT", strlen("CLIENT"));
    ck_assert_ptr_nonnull(client);
    ck_assert_ptr_null(client->proc);
    ck_assert_int_gt(client->nsubs, 0);
    list = srv_cmd_lookup_sub(client, "List", strlen("List"));
    ck_assert_ptr_nonnull(list);
    ck_assert_str_eq(list->name, "client|list");
    ck_assert_ptr_eq(list->parent, client);
    ck_assert_ptr_eq(named("client|list"), list);
    /* a subcommand is no top-level command, nor a sub of another */
    ck_assert_ptr_null(srv_cmd_lookup("client|list", strlen("client|list")));
    ck_assert_ptr_null(
        srv_cmd_lookup_name("client|nosuch", strlen("client|nosuch")));
    ck_assert_ptr_null(srv_cmd_lookup_name("get|list", strlen("get|list")));
    /* the worker reads F_BARRIER on the container */
    ck_assert(client->flags & F_BARRIER);
    /* COMMAND is a container with a handler of its own */
    ck_assert_ptr_nonnull(named("command")->proc);
    ck_assert_int_gt(named("command")->nsubs, 0);
    for (int i = 0; i < client->nsubs; i++)
        ck_assert_ptr_eq(client->subs[i].parent, client);
}
END_TEST

static void assert_range(const char *name, int first, int last, int step,
                         int movable)
{
    const srv_command *cmd = named(name);

    ck_assert_msg(cmd->first_key == first && cmd->last_key == last &&
                      cmd->key_step == step,
                  "%s: (%d, %d, %d), want (%d, %d, %d)", name, cmd->first_key,
                  cmd->last_key, cmd->key_step, first, last, step);
    ck_assert_msg(!(cmd->flags & F_MOVABLEKEYS) == !movable,
                  "%s: movablekeys %d", name, !movable);
}

START_TEST(test_key_ranges)
{
    srv_cmd_init();
    assert_range("get", 1, 1, 1, 0);
    assert_range("mset", 1, -1, 2, 0);
    assert_range("del", 1, -1, 1, 0);
    assert_range("rename", 1, 2, 1, 0); /* two adjacent specs */
    assert_range("sinterstore", 1, -1, 1, 0);
    assert_range("zunionstore", 1, 1, 1, 1); /* then a key count */
    assert_range("lmpop", 0, 0, 0, 1);       /* only a key count */
    assert_range("ping", 0, 0, 0, 0);
    assert_range("client|list", 0, 0, 0, 0);
}
END_TEST

/* Feed one inline command; the reply must be exactly `want`. */
static void expect_reply(const char *line, const char *want)
{
    char in[256];

    snprintf(in, sizeof in, "%s\r\n", line);
    conn->out.len = 0;
    ck_assert_int_eq(srv_embed_feed(conn, in, strlen(in)), 0);
    ck_assert_msg(conn->out.len == strlen(want) &&
                      memcmp(conn->out.data, want, conn->out.len) == 0,
                  "%s: got %.*s", line, (int)conn->out.len, conn->out.data);
}

START_TEST(test_dispatch_subcommands)
{
    expect_reply("CLIENT FOO", "-ERR unknown subcommand 'FOO'. Try CLIENT "
                               "HELP.\r\n");
    expect_reply("client setname", "-ERR wrong number of arguments for "
                                   "'client|setname' command\r\n");
    expect_reply("CLIENT", "-ERR wrong number of arguments for 'client' "
                           "command\r\n");
    expect_reply("CLIENT SETNAME x", "+OK\r\n");
    expect_reply("CLIENT GETNAME", "$1\r\nx\r\n");
    expect_reply("COMMAND LIST FILTERBY PATTERN client|getn*",
                 "*1\r\n$14\r\nclient|getname\r\n");
    expect_reply("COMMAND GETKEYS mset a 1 b 2",
                 "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    /* MULTI queues the subcommand's row; an unknown one aborts EXEC */
    expect_reply("MULTI", "+OK\r\n");
    expect_reply("CLIENT NOPE", "-ERR unknown subcommand 'NOPE'. Try CLIENT "
                                "HELP.\r\n");
    expect_reply("EXEC", "-EXECABORT Transaction discarded because of "
                         "previous errors.\r\n");
}
END_TEST

START_TEST(test_write_flag_allows)
{
    /* a row with F_WRITE may open the write transaction */
    conn->cmd = named("set");
    ck_assert_ptr_nonnull(srv_txn_write_or_reply(conn));
}
END_TEST

#ifndef NDEBUG
START_TEST(test_write_flag_checked)
{
    /* GET's row has no F_WRITE: a debug build aborts */
    conn->cmd = named("get");
    srv_txn_write_or_reply(conn);
}
END_TEST
#endif

static Suite *cmd_table_suite(void)
{
    Suite *s = suite_create("cmd_table");
    TCase *tc;

    tc = tcase_create("table");
    tcase_add_test(tc, test_rows_well_formed);
    tcase_add_test(tc, test_subcommands);
    tcase_add_test(tc, test_key_ranges);
    suite_add_tcase(s, tc);

    tc = tcase_create("dispatch");
    tcase_add_unchecked_fixture(tc, root_setup, root_teardown);
    tcase_add_checked_fixture(tc, embed_setup, embed_teardown);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_dispatch_subcommands);
    tcase_add_test(tc, test_write_flag_allows);
#ifndef NDEBUG
    tcase_add_test_raise_signal(tc, test_write_flag_checked, SIGABRT);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cmd_table_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
