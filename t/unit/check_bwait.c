/*
 * check_bwait: unit tests of the broker's waiter registry
 * (server/srv_bwait.h): grants go to the oldest free waiter of a key, as
 * many as the key is believed to hold; a waiter holds one grant at a
 * time and keeps its place when it finds nothing; removal, a finished
 * waiter and a lost link pass grants on; stale reports change nothing;
 * queues ordered by when clients blocked, not by when their
 * registrations arrived; whole-database readiness; a consumer group's
 * readers granted one at a time beside plain readers, and a check's hint
 * granted to the oldest waiter, not the one that looked; and a randomized
 * model run against a simple reference that checks no grant is ever lost.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_bwait.h"

#define TIMEOUT_S 60
#define MAX_GRANTS 4096
#define MODEL_LINKS 3
#define MODEL_TOKENS 40
#define MODEL_KEYS 4
#define MODEL_STEPS 20000

typedef struct grant_rec {
    uint32_t link;
    uint64_t token;
    char key[32];
} grant_rec;

static grant_rec grants[MAX_GRANTS];
static int ngrants;

static void on_grant(void *ctx, uint32_t link, uint64_t token, const char *key,
                     size_t len)
{
    ck_assert_int_lt(ngrants, MAX_GRANTS);
    ck_assert_uint_lt(len, sizeof grants[0].key);
    grants[ngrants].link = link;
    grants[ngrants].token = token;
    memcpy(grants[ngrants].key, key, len);
    grants[ngrants].key[len] = '\0';
    ngrants++;
}

static srv_bwait *fresh(void)
{
    srv_bwait *w = srv_bwait_create(on_grant, NULL);

    ck_assert_ptr_nonnull(w);
    ngrants = 0;
    return w;
}

/* Register a waiter on one key, in arrival order (places increase). */
static void add1(srv_bwait *w, uint32_t link, uint64_t token, const char *key)
{
    static uint64_t place;
    const char *keys[] = { key };
    size_t lens[] = { strlen(key) };

    ck_assert_int_eq(srv_bwait_add(w, link, token, 0, ++place, NULL, 0, 1, keys,
                                   lens),
                     0);
}

static void ready(srv_bwait *w, const char *key, uint64_t n, uint64_t txn)
{
    srv_bwait_ready(w, 0, key, strlen(key), n, txn);
}

static void served(srv_bwait *w, uint32_t link, uint64_t token, int done,
                   const char *key, uint64_t left, uint64_t txn)
{
    srv_bwait_served(w, link, token, done, 0, key, strlen(key), NULL, 0, left,
                     txn);
}

static void assert_grant(int i, uint32_t link, uint64_t token, const char *key)
{
    ck_assert_int_gt(ngrants, i);
    ck_assert_uint_eq(grants[i].link, link);
    ck_assert_uint_eq(grants[i].token, token);
    ck_assert_str_eq(grants[i].key, key);
}

START_TEST(test_fifo_one_grant_per_element)
{
    srv_bwait *w = fresh();

    add1(w, 1, 10, "q");
    add1(w, 2, 20, "q");
    add1(w, 1, 11, "q");
    ck_assert_uint_eq(srv_bwait_waiters(w), 3);
    ck_assert_uint_eq(srv_bwait_keys(w), 1);
    ck_assert_int_eq(ngrants, 0); /* registering grants nothing */
    ready(w, "q", 1, 100);
    ck_assert_int_eq(ngrants, 1);
    assert_grant(0, 1, 10, "q");
    /* Served, nothing left: no one else is granted. */
    served(w, 1, 10, 1, "q", 0, 101);
    ck_assert_int_eq(ngrants, 1);
    ck_assert_uint_eq(srv_bwait_waiters(w), 2);
    /* Two elements: the two oldest. */
    ready(w, "q", 2, 102);
    ck_assert_int_eq(ngrants, 3);
    assert_grant(1, 2, 20, "q");
    assert_grant(2, 1, 11, "q");
    served(w, 2, 20, 1, "q", 1, 103);
    served(w, 1, 11, 1, "q", 0, 104);
    ck_assert_int_eq(ngrants, 3);
    ck_assert_uint_eq(srv_bwait_waiters(w), 0);
    ck_assert_uint_eq(srv_bwait_keys(w), 0);
    srv_bwait_destroy(&w);
    ck_assert_ptr_null(w);
}
END_TEST

START_TEST(test_what_is_left_is_granted_on)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    add1(w, 1, 2, "q");
    add1(w, 1, 3, "q");
    ready(w, "q", 1, 10); /* created with one, then pushed to meanwhile */
    ck_assert_int_eq(ngrants, 1);
    served(w, 1, 1, 1, "q", 2, 11);
    ck_assert_int_eq(ngrants, 3);
    assert_grant(1, 1, 2, "q");
    assert_grant(2, 1, 3, "q");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_found_nothing_keeps_its_place)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    add1(w, 2, 2, "q");
    ready(w, "q", 1, 10);
    assert_grant(0, 1, 1, "q");
    /* Another client took the element first. */
    served(w, 1, 1, 0, "q", 0, 11);
    ck_assert_int_eq(ngrants, 1);
    ready(w, "q", 1, 12);
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 1, 1, "q"); /* still first in line */
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_ready_while_granted_is_not_lost)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    ready(w, "q", 1, 10);
    ck_assert_int_eq(ngrants, 1);
    /* A newer creation while the only waiter holds its grant. */
    ready(w, "q", 1, 12);
    ck_assert_int_eq(ngrants, 1);
    /* Its attempt (older than the creation) found nothing: the newer
     * report stands and the key is granted again. */
    served(w, 1, 1, 0, "q", 0, 11);
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 1, 1, "q");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_stale_report_changes_nothing)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    add1(w, 1, 2, "q");
    ready(w, "q", 1, 20);
    ck_assert_int_eq(ngrants, 1);
    /* An old transaction says the key held 5: ignored. */
    served(w, 9, 99, 1, "q", 5, 3);
    ck_assert_int_eq(ngrants, 1);
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_remove_passes_the_grant_on)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    add1(w, 2, 2, "q");
    ready(w, "q", 1, 10);
    assert_grant(0, 1, 1, "q");
    srv_bwait_remove(w, 1, 1); /* timed out with its grant */
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 2, 2, "q");
    srv_bwait_remove(w, 7, 7); /* unknown: ignored */
    srv_bwait_remove(w, 2, 2);
    ck_assert_uint_eq(srv_bwait_keys(w), 0);
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_drop_link)
{
    srv_bwait *w = fresh();

    add1(w, 1, 1, "q");
    add1(w, 1, 2, "q");
    add1(w, 2, 1, "q"); /* the same token on another link */
    ready(w, "q", 1, 10);
    assert_grant(0, 1, 1, "q");
    srv_bwait_drop_link(w, 1);
    ck_assert_uint_eq(srv_bwait_waiters(w), 1);
    assert_grant(ngrants - 1, 2, 1, "q");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_one_grant_per_waiter)
{
    srv_bwait *w = fresh();
    const char *keys[] = { "a", "b", "a" };
    size_t lens[] = { 1, 1, 1 };

    ck_assert_int_eq(srv_bwait_add(w, 1, 1, 0, 1, NULL, 0, 3, keys, lens), 0);
    ck_assert_int_eq(srv_bwait_add(w, 1, 1, 0, 1, NULL, 0, 1, keys, lens),
                     EEXIST);
    ck_assert_int_eq(srv_bwait_add(w, 1, 5, 0, 5, NULL, 0, 0, keys, lens),
                     EINVAL);
    add1(w, 2, 2, "b");
    ck_assert_uint_eq(srv_bwait_keys(w), 2);
    ready(w, "a", 1, 10);
    assert_grant(0, 1, 1, "a");
    /* The first waiter is busy on a: b goes to the next. */
    ready(w, "b", 1, 11);
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 2, 2, "b");
    /* Served from a: it leaves every queue. */
    served(w, 1, 1, 1, "a", 0, 12);
    ck_assert_uint_eq(srv_bwait_waiters(w), 1);
    ck_assert_uint_eq(srv_bwait_keys(w), 1);
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_queue_by_order_not_arrival)
{
    srv_bwait *w = fresh();
    const char *keys[] = { "a", "b", "a" };
    size_t lens[] = { 1, 1, 1 };

    /* Places 30, 10, 20 arrive in that order (three workers' WAITs read
     * in one round, or a slow one); the one that blocked first, with
     * three keys of which one twice, is served first from each. */
    ck_assert_int_eq(srv_bwait_add(w, 3, 7, 0, 30, NULL, 0, 1, keys, lens), 0);
    ck_assert_int_eq(srv_bwait_add(w, 1, 8, 0, 10, NULL, 0, 3, keys, lens), 0);
    ck_assert_int_eq(srv_bwait_add(w, 2, 9, 0, 20, NULL, 0, 2, keys, lens), 0);
    ready(w, "a", 3, 100);
    ck_assert_int_eq(ngrants, 3);
    assert_grant(0, 1, 8, "a");
    assert_grant(1, 2, 9, "a");
    assert_grant(2, 3, 7, "a");
    /* Places 10 and 20 are served from a and leave; b's queue then holds
     * nobody older than a newcomer at place 5... */
    served(w, 1, 8, 1, "a", 2, 101);
    served(w, 2, 9, 1, "a", 1, 102);
    served(w, 3, 7, 1, "a", 0, 103);
    ck_assert_uint_eq(srv_bwait_waiters(w), 0);
    ck_assert_uint_eq(srv_bwait_keys(w), 0);
    /* ...and equal places queue in arrival. */
    ck_assert_int_eq(srv_bwait_add(w, 2, 11, 0, 40, NULL, 0, 1, keys + 1, lens),
                     0);
    ck_assert_int_eq(srv_bwait_add(w, 1, 12, 0, 40, NULL, 0, 1, keys + 1, lens),
                     0);
    ck_assert_int_eq(srv_bwait_add(w, 3, 13, 0, 35, NULL, 0, 1, keys + 1, lens),
                     0);
    ready(w, "b", 3, 104);
    assert_grant(3, 3, 13, "b");
    assert_grant(4, 2, 11, "b");
    assert_grant(5, 1, 12, "b");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_free_again_takes_the_other_key)
{
    srv_bwait *w = fresh();
    const char *keys[] = { "a", "b" };
    size_t lens[] = { 1, 1 };

    ck_assert_int_eq(srv_bwait_add(w, 1, 1, 0, 1, NULL, 0, 2, keys, lens), 0);
    ready(w, "a", 1, 10);
    ready(w, "b", 1, 11); /* it holds a's grant: b waits for it */
    ck_assert_int_eq(ngrants, 1);
    served(w, 1, 1, 0, "a", 0, 12); /* a was empty after all */
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 1, 1, "b");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_databases_apart_and_db_ready)
{
    srv_bwait *w = fresh();
    const char *k[] = { "q" };
    size_t l[] = { 1 };

    ck_assert_int_eq(srv_bwait_add(w, 1, 1, 0, 1, NULL, 0, 1, k, l), 0);
    ck_assert_int_eq(srv_bwait_add(w, 1, 2, 3, 2, NULL, 0, 1, k, l), 0);
    ck_assert_uint_eq(srv_bwait_keys(w), 2);
    srv_bwait_ready(w, 3, "q", 1, 1, 10);
    assert_grant(0, 1, 2, "q");
    ck_assert_int_eq(ngrants, 1);
    srv_bwait_db_ready(w, 0, 11);
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 1, 1, "q");
    srv_bwait_db_ready(w, 5, 12); /* nobody there */
    ck_assert_int_eq(ngrants, 2);
    srv_bwait_destroy(&w);
}
END_TEST

/* Register waiter `token` of link 1 on "s" as a reader of `group` (NULL:
 * a plain reader). */
static void add_reader(srv_bwait *w, uint64_t token, uint64_t place,
                       const char *group)
{
    const char *keys[] = { "s" };
    size_t lens[] = { 1 };

    ck_assert_int_eq(srv_bwait_add(w, 1, token, 0, place, group,
                                   group ? strlen(group) : 0, 1, keys, lens),
                     0);
}

static void group_served(srv_bwait *w, uint64_t token, int done,
                         const char *group, uint64_t left, uint64_t txn)
{
    srv_bwait_served(w, 1, token, done, 0, "s", 1, group, strlen(group), left,
                     txn);
}

START_TEST(test_group_readers_one_at_a_time)
{
    srv_bwait *w = fresh();

    /* Two readers of g, one of h, two plain readers of stream s. */
    add_reader(w, 1, 1, "g");
    add_reader(w, 2, 2, "g");
    add_reader(w, 3, 3, "h");
    add_reader(w, 4, 4, NULL);
    add_reader(w, 5, 5, NULL);
    ck_assert_uint_eq(srv_bwait_waiters(w), 5);
    ck_assert_uint_eq(srv_bwait_keys(w), 3); /* s, and g's and h's queues */
    /* An entry (a stream tells "any number of readers"): every plain
     * reader, and the oldest reader of each group; all named "s". */
    ready(w, "s", 1u << 30, 10);
    ck_assert_int_eq(ngrants, 4);
    for (int i = 0; i < ngrants; i++) {
        ck_assert_str_eq(grants[i].key, "s");
        ck_assert_uint_ne(grants[i].token, 2);
    }
    /* Another entry while 1 is on its way: still one grant for g. */
    ready(w, "s", 1u << 30, 11);
    ck_assert_int_eq(ngrants, 4);
    /* 1 took one entry and one is left for g: 2 is next. */
    group_served(w, 1, 1, "g", 1, 12);
    ck_assert_int_eq(ngrants, 5);
    assert_grant(4, 1, 2, "s");
    /* 2 takes the last; h's reader found nothing and waits on. */
    group_served(w, 2, 1, "g", 0, 13);
    group_served(w, 3, 0, "h", 0, 14);
    ck_assert_int_eq(ngrants, 5);
    ck_assert_uint_eq(srv_bwait_waiters(w), 3);
    /* g's queue went with its readers; s stays for 4, 5 and h's 3. */
    ck_assert_uint_eq(srv_bwait_keys(w), 2);
    srv_bwait_remove(w, 1, 3);
    srv_bwait_remove(w, 1, 4);
    srv_bwait_remove(w, 1, 5);
    ck_assert_uint_eq(srv_bwait_keys(w), 0);
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_hint_grants_the_oldest)
{
    srv_bwait *w = fresh();

    /* Readers 1 and 2 of g; 2's check finds an entry for g: 1 gets it. */
    add_reader(w, 1, 1, "g");
    add_reader(w, 2, 2, "g");
    srv_bwait_hint(w, 0, "s", 1, "g", 1, 1, 20);
    ck_assert_int_eq(ngrants, 1);
    assert_grant(0, 1, 1, "s");
    /* The entry's own signal, same transaction: nothing more. */
    ready(w, "s", 1u << 30, 20);
    ck_assert_int_eq(ngrants, 1);
    /* A hint for another group, or a key nobody waits on, grants
     * nothing here. */
    srv_bwait_hint(w, 0, "s", 1, "x", 1, 1, 21);
    srv_bwait_hint(w, 0, "t", 1, NULL, 0, 1, 21);
    ck_assert_int_eq(ngrants, 1);
    /* A plain key's hint: its oldest free plain waiter. */
    add1(w, 1, 7, "l");
    add1(w, 1, 8, "l");
    srv_bwait_hint(w, 0, "l", 1, NULL, 0, 1, 22);
    ck_assert_int_eq(ngrants, 2);
    assert_grant(1, 1, 7, "l");
    srv_bwait_destroy(&w);
}
END_TEST

START_TEST(test_group_queue_and_key_names_apart)
{
    srv_bwait *w = fresh();
    /* A plain key named like a group's queue could be, in another db. */
    const char *keys[] = { "sg" };
    size_t lens[] = { 2 };

    add_reader(w, 1, 1, "g");
    ck_assert_int_eq(srv_bwait_add(w, 1, 2, 0, 2, NULL, 0, 1, keys, lens), 0);
    ck_assert_int_eq(srv_bwait_add(w, 1, 3, 0, 3, "", 0, 1, keys, lens), 0);
    ready(w, "sg", 1, 5);
    ck_assert_int_eq(ngrants, 2); /* 2, and 3 (group "") */
    assert_grant(0, 1, 2, "sg");
    assert_grant(1, 1, 3, "sg");
    srv_bwait_db_ready(w, 0, 6); /* s's group g too */
    ck_assert_int_eq(ngrants, 3);
    assert_grant(2, 1, 1, "s");
    srv_bwait_drop_link(w, 1);
    ck_assert_uint_eq(srv_bwait_waiters(w), 0);
    ck_assert_uint_eq(srv_bwait_keys(w), 0);
    srv_bwait_destroy(&w);
}
END_TEST

/*
 * The model: a key holds some elements; waiters come, go, and are served
 * only through grants (as a worker pops after a grant); pushes create the
 * key. After every step, if the key holds elements and someone waits,
 * a grant must be outstanding: no wake-up is lost.
 */
typedef struct mwaiter {
    int live, granted; /* granted: 1 + the key's index, or 0 */
    int key;
    uint32_t link;
    uint64_t token;
} mwaiter;

static mwaiter mw[MODEL_LINKS * MODEL_TOKENS];
static uint64_t melems[MODEL_KEYS];

static mwaiter *mfind(uint32_t link, uint64_t token)
{
    for (size_t i = 0; i < sizeof mw / sizeof mw[0]; i++)
        if (mw[i].live && mw[i].link == link && mw[i].token == token)
            return &mw[i];
    return NULL;
}

static void model_grant(void *ctx, uint32_t link, uint64_t token,
                        const char *key, size_t len)
{
    mwaiter *x = mfind(link, token);

    ck_assert_ptr_nonnull(x);        /* never a gone waiter */
    ck_assert_int_eq(x->granted, 0); /* one at a time */
    x->granted = 1 + (key[0] - 'a');
}

START_TEST(test_model_no_lost_wakeup)
{
    srv_bwait *w = srv_bwait_create(model_grant, NULL);
    uint64_t txn = 1, next_token = 1;
    unsigned seed = 12345;

    ck_assert_ptr_nonnull(w);
    memset(mw, 0, sizeof mw);
    memset(melems, 0, sizeof melems);
    for (int step = 0; step < MODEL_STEPS; step++) {
        int op = rand_r(&seed) % 10;
        int k = rand_r(&seed) % MODEL_KEYS;
        char key[2] = { (char)('a' + k), 0 };
        size_t i = (size_t)rand_r(&seed) % (sizeof mw / sizeof mw[0]);
        mwaiter *x = &mw[i];

        txn++;
        if (op < 3 && !x->live) {
            /* A client finds every key empty and blocks on one. */
            if (melems[k])
                continue;
            const char *keys[] = { key };
            size_t lens[] = { 1 };
            x->live = 1;
            x->granted = 0;
            x->key = k;
            x->link = (uint32_t)(i % MODEL_LINKS);
            x->token = next_token++;
            ck_assert_int_eq(srv_bwait_add(w, x->link, x->token, 0, x->token,
                                           NULL, 0, 1, keys, lens),
                             0);
        } else if (op < 5) {
            /* A push: creation is reported, a push to a present key is
             * not (waiters learn of it through what pops leave). */
            uint64_t n = 1 + (uint64_t)(rand_r(&seed) % 3);
            int created = melems[k] == 0;
            melems[k] += n;
            if (created)
                srv_bwait_ready(w, 0, key, 1, melems[k], txn);
        } else if (op < 8 && x->live && x->granted) {
            /* A granted waiter pops if it can. */
            int gk = x->granted - 1;
            char gkey[2] = { (char)('a' + gk), 0 };
            int done = melems[gk] > 0;
            if (done)
                melems[gk]--;
            x->granted = 0;
            if (done)
                x->live = 0;
            srv_bwait_served(w, x->link, x->token, done, 0, gkey, 1, NULL, 0,
                             melems[gk], txn);
        } else if (op == 8 && x->live) {
            /* Timed out or gone. */
            x->live = 0;
            srv_bwait_remove(w, x->link, x->token);
        } else if (op == 9 && melems[k]) {
            /* A plain pop by another client. */
            melems[k]--;
        }
        /* No lost wake-up: a key that holds elements and has waiters
         * has a grant outstanding. */
        for (int kk = 0; kk < MODEL_KEYS; kk++) {
            int waiting = 0, granted = 0;
            for (size_t j = 0; j < sizeof mw / sizeof mw[0]; j++) {
                if (!mw[j].live || mw[j].key != kk)
                    continue;
                waiting++;
                if (mw[j].granted == kk + 1)
                    granted++;
            }
            if (melems[kk] && waiting && !granted)
                ck_abort_msg("step %d: key %d holds %llu for %d waiters, "
                             "none granted",
                             step, kk, (unsigned long long)melems[kk], waiting);
        }
    }
    srv_bwait_destroy(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bwait");
    TCase *tc = tcase_create("grants");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_fifo_one_grant_per_element);
    tcase_add_test(tc, test_what_is_left_is_granted_on);
    tcase_add_test(tc, test_found_nothing_keeps_its_place);
    tcase_add_test(tc, test_ready_while_granted_is_not_lost);
    tcase_add_test(tc, test_stale_report_changes_nothing);
    tcase_add_test(tc, test_remove_passes_the_grant_on);
    tcase_add_test(tc, test_drop_link);
    tcase_add_test(tc, test_one_grant_per_waiter);
    tcase_add_test(tc, test_queue_by_order_not_arrival);
    tcase_add_test(tc, test_free_again_takes_the_other_key);
    tcase_add_test(tc, test_databases_apart_and_db_ready);
    tcase_add_test(tc, test_group_readers_one_at_a_time);
    tcase_add_test(tc, test_hint_grants_the_oldest);
    tcase_add_test(tc, test_group_queue_and_key_names_apart);
    suite_add_tcase(s, tc);
    tc = tcase_create("model");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_no_lost_wakeup);
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
