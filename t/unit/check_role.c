/*
 * check_role: unit tests of the process roles (server/srv_role.h): the
 * name table, the flags, the role -> stats slot mapping and the log names
 * of the per-child records; and the stats lookup built on it
 * (srv_stats_slot_of) and the stats region's header and layout.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_role.h"
#include "server/srv_stats.h"

#define NAME_SIZE 32
#define NWORKERS 4
/* The stats header of SRV_STATS_VERSION 4: its last field, and its size
 * (three cache lines). A field added moves these: bump the version. */
#define STATS_V5_MONITOR_SEQ_AT 184
#define STATS_V5_KEY_WAITERS_AT 192
#define STATS_V5_HEADER_SIZE 256

START_TEST(test_names)
{
    ck_assert_str_eq(srv_role_name(SRV_ROLE_MASTER), "master");
    ck_assert_str_eq(srv_role_name(SRV_ROLE_WORKER), "worker");
    ck_assert_str_eq(srv_role_name(SRV_ROLE_REAPER), "reaper");
    ck_assert_str_eq(srv_role_name(SRV_ROLE_SYNCER), "syncer");
    ck_assert_str_eq(srv_role_name(SRV_ROLE_BROKER), "broker");
    ck_assert_str_eq(srv_role_name(SRV_NROLES), "?");
    ck_assert_int_eq(SRV_NROLES, 5);
}
END_TEST

START_TEST(test_flags)
{
    ck_assert_int_eq(srv_role_flags(SRV_ROLE_WORKER), SRV_ROLE_CONFIRMS);
    ck_assert_int_eq(srv_role_flags(SRV_ROLE_BROKER), SRV_ROLE_CONFIRMS);
    ck_assert_int_eq(srv_role_flags(SRV_ROLE_MASTER), 0);
    ck_assert_int_eq(srv_role_flags(SRV_ROLE_REAPER), 0);
    ck_assert_int_eq(srv_role_flags(SRV_ROLE_SYNCER), 0);
}
END_TEST

/* The slots of a tree are 0..nslots-1, each used once, in the order the
 * stats region always had: workers, reaper, syncer, broker. */
START_TEST(test_slots)
{
    int used[NWORKERS + SRV_ROLE_DUTY_SLOTS] = { 0 };

    ck_assert_int_eq(srv_role_nslots(NWORKERS), NWORKERS + 3);
    for (int i = 0; i < NWORKERS; i++)
        ck_assert_int_eq(srv_role_slot(SRV_ROLE_WORKER, i, NWORKERS), i);
    ck_assert_int_eq(srv_role_slot(SRV_ROLE_REAPER, -1, NWORKERS), NWORKERS);
    ck_assert_int_eq(srv_role_slot(SRV_ROLE_SYNCER, -1, NWORKERS),
                     NWORKERS + 1);
    ck_assert_int_eq(srv_role_slot(SRV_ROLE_BROKER, -1, NWORKERS),
                     NWORKERS + 2);
    ck_assert_int_eq(srv_role_slot(SRV_ROLE_MASTER, -1, NWORKERS), -1);
    for (int r = SRV_ROLE_WORKER; r < SRV_NROLES; r++)
        for (int i = 0; i < (r == SRV_ROLE_WORKER ? NWORKERS : 1); i++) {
            int s = srv_role_slot((enum srv_role)r, i, NWORKERS);
            ck_assert_int_ge(s, 0);
            ck_assert_int_lt(s, srv_role_nslots(NWORKERS));
            used[s]++;
        }
    for (int s = 0; s < srv_role_nslots(NWORKERS); s++)
        ck_assert_int_eq(used[s], 1);
}
END_TEST

START_TEST(test_proc_names)
{
    srv_proc p;
    char name[NAME_SIZE];

    srv_proc_init(&p, SRV_ROLE_WORKER, 2, NWORKERS);
    ck_assert_int_eq(p.pid, 0);
    ck_assert_int_eq(p.slot, 2);
    srv_proc_name(&p, name, sizeof name);
    ck_assert_str_eq(name, "worker#2");
    srv_proc_init(&p, SRV_ROLE_REAPER, 7, NWORKERS); /* index ignored */
    ck_assert_int_eq(p.index, -1);
    ck_assert_int_eq(p.slot, NWORKERS);
    srv_proc_name(&p, name, sizeof name);
    ck_assert_str_eq(name, "reaper");
    srv_proc_init(&p, SRV_ROLE_MASTER, -1, NWORKERS);
    ck_assert_int_eq(p.slot, -1);
    srv_proc_name(&p, name, sizeof name);
    ck_assert_str_eq(name, "master");
    ck_assert_int_eq(srv_self.role, SRV_ROLE_MASTER); /* until a fork */
    ck_assert_int_eq(srv_self.slot, -1);
}
END_TEST

START_TEST(test_stats_slot_of)
{
    srv_stats *s = srv_stats_create(NWORKERS);

    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(s->nslots, NWORKERS + 3);
    ck_assert_uint_eq(s->nworkers, NWORKERS);
    ck_assert_ptr_eq(srv_stats_slot_of(s, SRV_ROLE_WORKER, 0), &s->slot[0]);
    ck_assert_ptr_eq(srv_stats_slot_of(s, SRV_ROLE_WORKER, 3), &s->slot[3]);
    ck_assert_ptr_eq(srv_stats_slot_of(s, SRV_ROLE_REAPER, -1),
                     &s->slot[NWORKERS]);
    ck_assert_ptr_eq(srv_stats_slot_of(s, SRV_ROLE_SYNCER, -1),
                     &s->slot[NWORKERS + 1]);
    ck_assert_ptr_eq(srv_stats_slot_of(s, SRV_ROLE_BROKER, -1),
                     &s->slot[NWORKERS + 2]);
    ck_assert_ptr_null(srv_stats_slot_of(s, SRV_ROLE_MASTER, -1));
    ck_assert_uint_eq(s->magic, SRV_STATS_MAGIC);
    ck_assert_uint_eq(s->version, SRV_STATS_VERSION);
    srv_stats_destroy(&s);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(test_stats_layout)
{
    ck_assert_int_eq(SRV_STATS_VERSION, 5);
    ck_assert_uint_eq(offsetof(srv_stats, monitor_seq),
                      STATS_V5_MONITOR_SEQ_AT);
    ck_assert_uint_eq(offsetof(srv_stats, key_waiters),
                      STATS_V5_KEY_WAITERS_AT);
    ck_assert_uint_eq(offsetof(srv_stats, slot), STATS_V5_HEADER_SIZE);
    ck_assert_uint_eq(offsetof(srv_stats, slot) % SRV_CACHELINE, 0);
    ck_assert_uint_eq(sizeof(srv_stats_slot) % SRV_CACHELINE, 0);
}
END_TEST

static Suite *role_suite(void)
{
    Suite *s = suite_create("role");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_flags);
    tcase_add_test(tc, test_slots);
    tcase_add_test(tc, test_proc_names);
    tcase_add_test(tc, test_stats_slot_of);
    tcase_add_test(tc, test_stats_layout);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(role_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
