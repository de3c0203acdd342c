/*
 * check_acl: unit tests of the ACL rules (server/srv_acl.h), their shared
 * region (server/srv_aclshm.h) and the rules in force through an embedded
 * worker (server/srv_aclconn.h): rules and their description (which must
 * give the same user back, for random rule sequences), the check of keys,
 * channels, first arguments and selectors, sets and their text forms, the
 * aclfile's errors, the region's publish and log (merging, the length
 * bound), and processes that die holding its locks.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/cmd/srv_cmd.h"
#include "server/srv_acl.h"
#include "server/srv_aclset.h"
#include "server/srv_aclshm.h"
#include "t/unit/unit_embed.h"

#define TIMEOUT_S 60
#define RANDOM_USERS 400
#define RANDOM_RULES 12
#define LOG_MAX 5

static srv_acl_user *make(const char *const *rules)
{
    srv_acl_user *u;

    srv_cmd_init();
    u = srv_acl_user_create("u", 1, 0);
    ck_assert_ptr_nonnull(u);
    for (; *rules; rules++)
        ck_assert_msg(srv_acl_user_apply(u, *rules, strlen(*rules), 0) == 0,
                      "rule %s", *rules);
    return u;
}

static char *describe(const srv_acl_user *u)
{
    srv_buf b = { 0 };

    ck_assert_int_eq(srv_acl_user_describe(u, 0, &b), 0);
    ck_assert_int_eq(srv_buf_append(&b, "", 1), 0);
    return b.data;
}

/* Check argv (NULL-terminated) for u: the verdict and the position. */
static int check(const srv_acl_user *u, int *pos, const char *const *args)
{
    srv_slice argv[16];
    int argc = 0;
    const srv_command *cmd;

    for (; args[argc]; argc++) {
        argv[argc].ptr = (char *)args[argc];
        argv[argc].len = strlen(args[argc]);
    }
    ck_assert_int_gt(argc, 0);
    cmd = srv_cmd_lookup(argv[0].ptr, argv[0].len);
    ck_assert_ptr_nonnull(cmd);
    if (cmd->nsubs && argc > 1)
        cmd = srv_cmd_lookup_sub(cmd, argv[1].ptr, argv[1].len);
    ck_assert_ptr_nonnull(cmd);
    *pos = 0;
    return srv_acl_check(u, cmd, argc, argv, pos);
}

#define CHECK(u, want, wantpos, ...)                              \
    do {                                                          \
        int pos_;                                                 \
        const char *args_[] = { __VA_ARGS__, NULL };              \
        ck_assert_int_eq(check((u), &pos_, args_), (want));       \
        if ((want) != SRV_ACL_OK && (want) != SRV_ACL_DENIED_CMD) \
            ck_assert_int_eq(pos_, (wantpos));                    \
    } while (0)

/* ------------------------------------------------------------------ */
/* rules and their description */

START_TEST(test_default_user)
{
    srv_aclset *s;
    char *d;

    srv_cmd_init();
    s = srv_aclset_create();
    ck_assert_ptr_nonnull(s);
    d = describe(srv_aclset_default(s));
    ck_assert_str_eq(d, "on nopass ~* &* +@all");
    ck_assert(srv_acl_user_unrestricted(srv_aclset_default(s)));
    ck_assert(srv_acl_user_check_password(srv_aclset_default(s), "x", 1));
    free(d);
    srv_aclset_destroy(&s);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(test_describe_known_forms)
{
    static const struct {
        const char *rules[8];
        const char *want;
    } cases[] = {
        { { "on", "+@all", "-@dangerous", "~k*" },
          "on ~k* resetchannels +@all -@dangerous" },
        { { "-@all", "+get", "%R~r*", "%W~w*", "&c" },
          "off %R~r* %W~w* resetchannels &c -@all +get" },
        { { "+@all", "-get", "+get" }, "off resetchannels +@all" },
        { { "+config", "-config|set" },
          "off resetchannels -@all +config -config|set" },
        { { "-@all", "+select|0", "+select|1" },
          "off resetchannels -@all +select|0 +select|1" },
        { { "(~a +get)", "clearselectors", "(%W~b +set)" },
          "off resetchannels -@all (%W~b resetchannels -@all +set)" },
        { { "reset" }, "off sanitize-payload resetchannels -@all" },
        { { "%R~", "~a", "%W~a" }, "off %R~ ~a resetchannels -@all" },
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_acl_user *u = make(cases[i].rules);
        char *d = describe(u);
        ck_assert_msg(strcmp(d, cases[i].want) == 0, "%zu: %s", i, d);
        free(d);
        srv_acl_user_destroy(&u);
    }
}
END_TEST

START_TEST(test_rule_errors_leave_the_user)
{
    static const struct {
        const char *rule;
        int err;
    } cases[] = {
        { "foo", SRV_ACL_ESYNTAX },
        { "+nocmd", SRV_ACL_EUNKNOWN },
        { "-@nocat", SRV_ACL_EUNKNOWN },
        { "#abc", SRV_ACL_EBADHASH },
        { "<nope", SRV_ACL_ENOSUCHPASS },
        { "+client|list|x", SRV_ACL_ESUBFIRSTARG },
        { "+select|", SRV_ACL_ESYNTAX },
        { "-select|0", SRV_ACL_EUNKNOWN },
        { "%~a", SRV_ACL_ESYNTAX },
        { "~a b", SRV_ACL_ESYNTAX },
        { "(+get ~a b)", SRV_ACL_ESYNTAX },
    };
    const char *base[] = { "on", ">p", "~a", "+get", NULL };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        srv_acl_user *u = make(base);
        char *before = describe(u), *after;
        ck_assert_int_eq(srv_acl_user_apply(u, cases[i].rule,
                                            strlen(cases[i].rule), 0),
                         cases[i].err);
        after = describe(u);
        ck_assert_str_eq(before, after);
        free(before);
        free(after);
        srv_acl_user_destroy(&u);
    }
    srv_acl_user *u = make((const char *[]){ "~*", NULL });
    ck_assert_int_eq(srv_acl_user_apply(u, "~a", 2, 0), SRV_ACL_EKEYAFTERALL);
    ck_assert_int_eq(srv_acl_user_apply(u, "&*", 2, 0), 0);
    ck_assert_int_eq(srv_acl_user_apply(u, "&a", 2, 0), SRV_ACL_ECHANAFTERALL);
    srv_acl_user_destroy(&u);
}
END_TEST

/* A random rule among those that always apply. */
static const char *random_rule(unsigned *seed)
{
    static const char *const rules[] = {
        "+@all",
        "-@all",
        "+@read",
        "-@read",
        "+@write",
        "-@write",
        "+@admin",
        "-@admin",
        "+@dangerous",
        "-@dangerous",
        "+@string",
        "-@string",
        "+@hash",
        "-@set",
        "+@sortedset",
        "-@list",
        "+@pubsub",
        "-@fast",
        "+@slow",
        "+@keyspace",
        "-@connection",
        "+@transaction",
        "+get",
        "-get",
        "+set",
        "-set",
        "+config",
        "-config|set",
        "+config|get",
        "+client",
        "-client|list",
        "+select|0",
        "+select|9",
        "+debug|sleep",
        "-del",
        "+acl|whoami",
        "nocommands",
        "allcommands",
        "~a*",
        "%R~r*",
        "%W~w*",
        "resetkeys",
        "&c*",
        "resetchannels",
        "(+get ~g*)",
        "(-@all +set %W~s*)",
        "clearselectors",
        "on",
        "off",
        ">pw",
        "nopass",
        "resetpass",
    };

    return rules[(unsigned)rand_r(seed) % (sizeof rules / sizeof rules[0])];
}

START_TEST(test_description_gives_the_user_back)
{
    unsigned seed = 16;

    for (int n = 0; n < RANDOM_USERS; n++) {
        srv_acl_user *u, *v;
        char *d1, *d2;

        srv_cmd_init();
        u = srv_acl_user_create("u", 1, 0);
        for (int i = 0; i < RANDOM_RULES; i++) {
            const char *r = random_rule(&seed);
            srv_acl_user_apply(u, r, strlen(r), 0);
        }
        d1 = describe(u);
        /* Apply the description word by word, selectors whole. */
        v = srv_acl_user_create("u", 1, 0);
        srv_slice words[256], rules[256];
        srv_buf joined = { 0 };
        int nw = 0, bad;
        for (char *p = d1, *e; *p; p = *e ? e + 1 : e) {
            e = strchr(p, ' ');
            if (!e)
                e = p + strlen(p);
            words[nw].ptr = p;
            words[nw++].len = (size_t)(e - p);
        }
        int nr = srv_acl_merge_selectors(words, nw, rules, &joined, &bad);
        ck_assert_int_ge(nr, 0);
        for (int i = 0; i < nr; i++)
            ck_assert_msg(srv_acl_user_apply(v, rules[i].ptr, rules[i].len,
                                             0) == 0,
                          "reapplying %.*s of %s", (int)rules[i].len,
                          rules[i].ptr, d1);
        d2 = describe(v);
        ck_assert_str_eq(d1, d2);
        /* The same verdicts on a few commands. */
        const char *const probes[][4] = {
            { "get", "a1", NULL },          { "set", "w1", "v", NULL },
            { "config", "set", "x", "y" },  { "select", "0", NULL },
            { "select", "1", NULL },        { "client", "list", NULL },
            { "publish", "c1", "m", NULL }, { "del", "r1", NULL },
        };
        for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
            int p1, p2;
            ck_assert_int_eq(check(u, &p1, probes[i]),
                             check(v, &p2, probes[i]));
        }
        srv_buf_free(&joined);
        free(d1);
        free(d2);
        srv_acl_user_destroy(&u);
        srv_acl_user_destroy(&v);
    }
}
END_TEST

/* ------------------------------------------------------------------ */
/* the check */

START_TEST(test_check_keys_by_access)
{
    srv_acl_user *u = make(
        (const char *[]){ "+@all", "%R~r*", "%W~w*", "~k*", NULL });

    CHECK(u, SRV_ACL_OK, 0, "get", "r1");
    CHECK(u, SRV_ACL_DENIED_KEY, 1, "get", "w1");
    CHECK(u, SRV_ACL_OK, 0, "set", "w1", "v"); /* OW UPDATE */
    CHECK(u, SRV_ACL_DENIED_KEY, 1, "set", "r1", "v");
    CHECK(u, SRV_ACL_DENIED_KEY, 1, "set", "w1", "v", "GET"); /* + read */
    CHECK(u, SRV_ACL_OK, 0, "set", "k1", "v", "get");
    CHECK(u, SRV_ACL_DENIED_KEY, 3, "mget", "r1", "k1", "x");
    CHECK(u, SRV_ACL_OK, 0, "del", "w1");
    CHECK(u, SRV_ACL_DENIED_KEY, 2, "rename", "k1", "r1");
    /* A key count the arguments contradict: no keys, as Redis. */
    CHECK(u, SRV_ACL_OK, 0, "lmpop", "5", "x", "LEFT");
    CHECK(u, SRV_ACL_DENIED_KEY, 2, "lmpop", "1", "x", "LEFT");
    srv_acl_user_destroy(&u);
}
END_TEST

START_TEST(test_check_channels_commands_firstargs)
{
    srv_acl_user *u = make(
        (const char *[]){ "-@all", "+publish", "+subscribe", "+psubscribe",
                          "+select|0", "+client|id", "&c*", "&p?", NULL });

    CHECK(u, SRV_ACL_OK, 0, "publish", "c1", "m");
    CHECK(u, SRV_ACL_DENIED_CHANNEL, 1, "publish", "x", "m");
    CHECK(u, SRV_ACL_DENIED_CHANNEL, 2, "subscribe", "c1", "x");
    CHECK(u, SRV_ACL_OK, 0, "psubscribe", "p?"); /* literally */
    CHECK(u, SRV_ACL_DENIED_CHANNEL, 1, "psubscribe", "pa");
    CHECK(u, SRV_ACL_OK, 0, "select", "0");
    CHECK(u, SRV_ACL_DENIED_CMD, 0, "select", "1");
    CHECK(u, SRV_ACL_OK, 0, "client", "id");
    CHECK(u, SRV_ACL_DENIED_CMD, 0, "client", "list");
    CHECK(u, SRV_ACL_OK, 0, "auth", "x"); /* no-auth command */
    CHECK(u, SRV_ACL_DENIED_CMD, 0, "get", "x");
    srv_acl_user_destroy(&u);
}
END_TEST

START_TEST(test_check_selectors_pick_the_reported_denial)
{
    srv_acl_user *u = make((const char *[]){ "-@all", "+get", "~a", "(+set ~b)",
                                             "(+get ~c)", NULL });

    CHECK(u, SRV_ACL_OK, 0, "get", "a");
    CHECK(u, SRV_ACL_OK, 0, "get", "c");
    CHECK(u, SRV_ACL_OK, 0, "set", "b", "v");
    CHECK(u, SRV_ACL_DENIED_KEY, 1, "set", "a", "v");
    CHECK(u, SRV_ACL_DENIED_CMD, 0, "del", "a");
    CHECK(u, SRV_ACL_DENIED_KEY, 1, "get", "zz");
    ck_assert(!srv_acl_user_unrestricted(u));
    srv_acl_user_destroy(&u);
}
END_TEST

START_TEST(test_passwords)
{
    srv_acl_user *u = make((const char *[]){ "on", ">one", ">two", NULL });
    char hex[SRV_ACL_HASH_LEN + 1];

    ck_assert(srv_acl_user_check_password(u, "one", 3));
    ck_assert(srv_acl_user_check_password(u, "two", 3));
    ck_assert(!srv_acl_user_check_password(u, "three", 5));
    ck_assert_int_eq(srv_acl_user_npasswords(u), 2);
    srv_acl_hash_password("one", 3, hex);
    /* Redis's SHA-256 of "one" */
    ck_assert_str_eq(hex, "7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143"
                          "c0add73ff431ed");
    ck_assert_int_eq(srv_acl_user_apply(u, "<one", 4, 0), 0);
    ck_assert(!srv_acl_user_check_password(u, "one", 3));
    ck_assert_int_eq(srv_acl_user_apply(u, "off", 3, 0), 0);
    ck_assert(!srv_acl_user_check_password(u, "two", 3));
    srv_acl_user_destroy(&u);
}
END_TEST

/* ------------------------------------------------------------------ */
/* sets and text */

START_TEST(test_set_text_reads_back_exactly)
{
    srv_aclset *s, *t;
    srv_acl_user *u = make((const char *[]){ "%RW~*", "~a", "on", NULL });
    srv_buf b = { 0 }, c = { 0 };

    s = srv_aclset_create();
    ck_assert_int_eq(srv_aclset_put(s, u, 1), 0);
    ck_assert_uint_eq(srv_acl_user_id(u), 2);
    ck_assert_int_eq(srv_aclset_write(s, 1, &b), 0);
    ck_assert_int_eq(srv_aclset_read(b.data, b.len, &t), 0);
    ck_assert_int_eq(srv_aclset_write(t, 1, &c), 0);
    ck_assert_uint_eq(b.len, c.len);
    ck_assert(memcmp(b.data, c.data, b.len) == 0);
    ck_assert_uint_eq(srv_acl_user_id(srv_aclset_find(t, "u", 1)), 2);
    ck_assert_ptr_null(srv_aclset_find(t, "x", 1));
    ck_assert_int_eq(srv_aclset_remove(t, "u", 1), 1);
    ck_assert_int_eq(srv_aclset_remove(t, "u", 1), 0);
    srv_aclset_destroy(&t);
    ck_assert_int_eq(srv_aclset_read("2\n1 user nodefault on\n", 22, &t),
                     SRV_ACL_ESYNTAX);
    ck_assert_ptr_null(t);
    srv_buf_free(&b);
    srv_buf_free(&c);
    srv_aclset_destroy(&s);
}
END_TEST

START_TEST(test_aclfile_errors)
{
    static const char bad[] = "user alice on +nocmd ~* foo\n"
                              "not a user line\n"
                              "user alice on\n";
    srv_aclset *s;
    srv_buf err = { 0 };

    srv_cmd_init();
    ck_assert_int_eq(srv_aclset_load(bad, strlen(bad), "f.acl", 1, 2, 0, &s,
                                     &err),
                     -1);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(srv_buf_append(&err, "", 1), 0);
    ck_assert_str_eq(err.data,
                     "f.acl:1: Error in applying operation '+nocmd': Unknown "
                     "command or category name in ACL. f.acl:1: Syntax "
                     "error. f.acl:2 should start with user keyword followed "
                     "by the username. WARNING: Duplicate user 'alice' found "
                     "on line 3. WARNING: ACL errors detected, no change to "
                     "the previously active ACL rules was performed");
    srv_buf_free(&err);
    ck_assert_int_eq(srv_aclset_load("user a on\n", 10, "f", 7, 9, 0, &s, &err),
                     0);
    ck_assert_uint_eq(srv_acl_user_id(srv_aclset_default(s)), 7);
    ck_assert_uint_eq(srv_acl_user_id(srv_aclset_find(s, "a", 1)), 9);
    srv_aclset_destroy(&s);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the region */

static srv_aclshm *region(void)
{
    srv_aclshm *h = NULL;

    ck_assert_int_eq(srv_aclshm_create("1\n", 2, &h), 0);
    ck_assert_int_eq(srv_aclshm_attach(h), 0);
    return h;
}

START_TEST(test_region_publish)
{
    srv_aclshm *h = region();
    size_t len;
    uint64_t seq;
    const char *text;

    ck_assert_uint_eq(srv_aclshm_seq(h), 1);
    ck_assert_int_eq(srv_aclshm_lock(h), 0);
    ck_assert_uint_eq(srv_aclshm_publish_locked(h, "abc", 3), 2);
    text = srv_aclshm_text_locked(h, &len, &seq);
    ck_assert_uint_eq(len, 3);
    ck_assert(memcmp(text, "abc", 3) == 0);
    ck_assert_uint_eq(seq, 2);
    char *big = malloc(SRV_ACLSHM_TEXT_MAX + 1);
    memset(big, 'x', SRV_ACLSHM_TEXT_MAX + 1);
    ck_assert_uint_eq(srv_aclshm_publish_locked(h, big,
                                                SRV_ACLSHM_TEXT_MAX + 1),
                      0);
    free(big);
    text = srv_aclshm_text_locked(h, &len, &seq);
    ck_assert_uint_eq(len, 3);
    srv_aclshm_unlock(h);
    h->sh->magic++;
    ck_assert_int_ne(srv_aclshm_attach(h), 0);
    h->sh->magic--;
    srv_aclshm_destroy(&h);
    ck_assert_ptr_null(h);
}
END_TEST

START_TEST(test_region_log_merges_and_bounds)
{
    srv_aclshm *h = region();
    srv_aclshm_entry e[LOG_MAX + 1];

    ck_assert_int_eq(srv_aclshm_log_add(h, SRV_ACL_DENIED_KEY, 0, "k", 1, "u",
                                        1, "i1", 2, 1000, LOG_MAX),
                     0);
    ck_assert_int_eq(srv_aclshm_log_add(h, SRV_ACL_DENIED_KEY, 0, "k", 1, "u",
                                        1, "i2", 2, 2000, LOG_MAX),
                     0);
    ck_assert_int_eq(srv_aclshm_log_read(h, e, LOG_MAX), 1);
    ck_assert_uint_eq(e[0].count, 2);
    ck_assert(memcmp(e[0].cinfo, "i2", 2) == 0);
    /* Over a minute apart: a new entry, newest first. */
    srv_aclshm_log_add(h, SRV_ACL_DENIED_KEY, 0, "k", 1, "u", 1, "i3", 2,
                       2000 + SRV_ACLSHM_LOG_GROUP_MS + 1, LOG_MAX);
    ck_assert_int_eq(srv_aclshm_log_read(h, e, LOG_MAX), 2);
    ck_assert_uint_eq(e[0].count, 1);
    ck_assert(memcmp(e[0].cinfo, "i3", 2) == 0);
    for (int i = 0; i < 2 * LOG_MAX; i++) {
        char obj[8];
        snprintf(obj, sizeof obj, "o%d", i);
        srv_aclshm_log_add(h, SRV_ACL_DENIED_CMD, 0, obj, strlen(obj), "u", 1,
                           "", 0, 5000, LOG_MAX);
    }
    ck_assert_int_eq(srv_aclshm_log_read(h, e, LOG_MAX + 1), LOG_MAX);
    ck_assert(memcmp(e[0].object, "o9", 2) == 0);
    ck_assert_int_eq(srv_aclshm_log_reset(h), 0);
    ck_assert_int_eq(srv_aclshm_log_read(h, e, LOG_MAX), 0);
    srv_aclshm_destroy(&h);
}
END_TEST

/* A child dies holding each lock: the next locker goes on, the rules
 * whole, the log readable. */
START_TEST(test_region_lock_holder_dies)
{
    srv_aclshm *h = region();
    srv_aclshm_entry e[2];
    size_t len;
    uint64_t seq;
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        srv_aclshm_lock(h);
        shm_lock_acquire(&h->sh->log, NULL, NULL);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_int_eq(srv_aclshm_lock(h), 0);
    const char *text = srv_aclshm_text_locked(h, &len, &seq);
    ck_assert_uint_eq(len, 2);
    ck_assert(memcmp(text, "1\n", 2) == 0);
    srv_aclshm_unlock(h);
    ck_assert_int_eq(srv_aclshm_log_read(h, e, 2), 0);
    ck_assert_int_eq(srv_aclshm_log_add(h, 1, 0, "x", 1, "u", 1, "", 0, 1, 2),
                     0);
    ck_assert_int_eq(srv_aclshm_log_read(h, e, 2), 1);
    srv_aclshm_destroy(&h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* through the dispatcher */

START_TEST(test_dispatcher_noperm_and_auth)
{
    srv_conn *a = unit_embed_conn(), *u = unit_embed_conn();

    UNIT_CALL(a, "+OK\r\n", "ACL", "SETUSER", "u", "on", ">pw", "-@all", "+get",
              "~k*", "+multi", "+exec");
    UNIT_CALL(u,
              "-WRONGPASS invalid username-password pair or user is "
              "disabled.\r\n",
              "AUTH", "u", "bad");
    UNIT_CALL(u, "+OK\r\n", "AUTH", "u", "pw");
    UNIT_CALL(u, "$-1\r\n", "GET", "k1");
    UNIT_CALL(u,
              "-NOPERM this user has no permissions to access one of the "
              "keys used as arguments\r\n",
              "GET", "x");
    UNIT_CALL(u,
              "-NOPERM this user has no permissions to run the 'set' "
              "command\r\n",
              "SET", "k", "v");
    UNIT_CALL(u, "+OK\r\n", "MULTI");
    UNIT_CALL(u, "+QUEUED\r\n", "GET", "k1");
    UNIT_CALL(a, "+OK\r\n", "ACL", "SETUSER", "u", "-get");
    UNIT_CALL(u,
              "*1\r\n-NOPERM ACLs rules changed between the moment the "
              "transaction was accumulated and the EXEC call. This "
              "command is no longer allowed for the following reason: "
              "no permission to execute the command or subcommand\r\n",
              "EXEC");
    UNIT_CALL(a, "*2\r\n$7\r\ndefault\r\n$1\r\nu\r\n", "ACL", "USERS");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("acl");
    TCase *tc = tcase_create("rules");

    tcase_add_test(tc, test_default_user);
    tcase_add_test(tc, test_describe_known_forms);
    tcase_add_test(tc, test_rule_errors_leave_the_user);
    tcase_add_test(tc, test_description_gives_the_user_back);
    tcase_set_timeout(tc, TIMEOUT_S);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_test(tc, test_check_keys_by_access);
    tcase_add_test(tc, test_check_channels_commands_firstargs);
    tcase_add_test(tc, test_check_selectors_pick_the_reported_denial);
    tcase_add_test(tc, test_passwords);
    suite_add_tcase(s, tc);
    tc = tcase_create("sets");
    tcase_add_test(tc, test_set_text_reads_back_exactly);
    tcase_add_test(tc, test_aclfile_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("region");
    tcase_add_test(tc, test_region_publish);
    tcase_add_test(tc, test_region_log_merges_and_bounds);
    tcase_add_test(tc, test_region_lock_holder_dies);
    tcase_set_timeout(tc, TIMEOUT_S);
    suite_add_tcase(s, tc);
    tc = tcase_create("dispatcher");
    unit_embed_fixture(tc);
    tcase_add_test(tc, test_dispatcher_noperm_and_auth);
    tcase_set_timeout(tc, TIMEOUT_S);
    suite_add_tcase(s, tc);
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
