/*
 * check_cfgshm: unit tests of the shared configuration region
 * (server/srv_cfgshm.h): its pinned layout, the checks on attach, publish
 * and read, the acknowledgement records, writer and reader processes
 * hammering it (no reader ever sees a torn value), and a writer that dies
 * holding the lock (the next locker finishes or keeps the publish).
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/srv_cfgshm.h"
#include "server/srv_config.h"
#include "shm/shm_error.h"
#include "shm/shm_lock.h"

#define TIMEOUT_S 60
#define NACKS 5
#define NWRITERS 2
#define NREADERS 3
#define HAMMER_MS 1500
#define NS_PER_MS 1000000
#define MS_PER_S 1000
#define LETTERS 26
/* The bytes of srv_config's fields: one per row of the directive table
 * (aliases share their row's), and config_file. */
#define FIELD_SIZE(n, f, k, d, lo, hi, fl) \
    +((fl)&SRV_CFG_ALIAS ? 0 : sizeof(((srv_config *)0)->f))
#define CONFIG_FIELDS_SIZE (SRV_PATH_MAX SRV_CONFIG_DIRECTIVES(FIELD_SIZE))

static srv_cfgshm *region(void)
{
    srv_config cfg;
    srv_cfgshm *h = NULL;

    srv_config_defaults(&cfg);
    ck_assert_int_eq(srv_cfgshm_create(&cfg, NACKS, &h), 0);
    ck_assert_ptr_nonnull(h);
    return h;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

/* ------------------------------------------------------------------ */
/* layout */

START_TEST(test_layout_pinned)
{
    /* Every field of the table and config_file, without padding (each
     * is a whole number of words: readers copy the struct word by word). */
    ck_assert_uint_eq(sizeof(srv_config), CONFIG_FIELDS_SIZE);
    ck_assert_uint_eq(SRV_CFGSHM_WORDS * sizeof(uint64_t), sizeof(srv_config));
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, magic), 0);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, version), 8);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, nacks), 12);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, size), 16);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, config_size), 24);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, seq), SRV_CACHELINE);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, writer), 2 * SRV_CACHELINE);
    ck_assert_uint_eq(sizeof(shm_lock_sh), SRV_CACHELINE);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, cur), 3 * SRV_CACHELINE);
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, staged),
                      3 * SRV_CACHELINE + sizeof(srv_config));
    ck_assert_uint_eq(offsetof(srv_cfgshm_sh, ack) % SRV_CACHELINE, 0);
    ck_assert_uint_ge(offsetof(srv_cfgshm_sh, ack),
                      3 * SRV_CACHELINE + 2 * sizeof(srv_config));
    ck_assert_uint_lt(offsetof(srv_cfgshm_sh, ack),
                      4 * SRV_CACHELINE + 2 * sizeof(srv_config));
    ck_assert_uint_eq(sizeof(srv_cfgshm_ack_sh), SRV_CACHELINE);
    ck_assert_uint_eq(offsetof(srv_cfgshm_ack_sh, pid), 0);
    ck_assert_uint_eq(offsetof(srv_cfgshm_ack_sh, seq), 8);
    ck_assert_uint_eq(srv_cfgshm_size(NACKS),
                      offsetof(srv_cfgshm_sh, ack) +
                          NACKS * sizeof(srv_cfgshm_ack_sh));
    ck_assert_uint_eq(SRV_CFGSHM_VERSION, 3);
}
END_TEST

START_TEST(test_create_header)
{
    srv_cfgshm *h = region();

    ck_assert_uint_eq(h->sh->magic, SRV_CFGSHM_MAGIC);
    ck_assert_uint_eq(h->sh->version, SRV_CFGSHM_VERSION);
    ck_assert_uint_eq(h->sh->nacks, NACKS);
    ck_assert_uint_eq(h->sh->size, srv_cfgshm_size(NACKS));
    ck_assert_uint_eq(h->sh->config_size, sizeof(srv_config));
    ck_assert_uint_eq(srv_cfgshm_nacks(h), NACKS);
    ck_assert_uint_eq(srv_cfgshm_seq(h), 2);
    ck_assert_int_eq(srv_cfgshm_attach(h), 0);
    srv_cfgshm_destroy(&h);
    ck_assert_ptr_null(h);
}
END_TEST

START_TEST(test_attach_checks)
{
    srv_cfgshm *h = region();
    srv_cfgshm copy = *h;

    h->sh->magic ^= 1;
    ck_assert_int_eq(srv_cfgshm_attach(h), SHM_EBADMAGIC);
    h->sh->magic ^= 1;
    h->sh->version++;
    ck_assert_int_eq(srv_cfgshm_attach(h), SHM_EVERSION);
    h->sh->version--;
    h->sh->config_size--;
    ck_assert_int_eq(srv_cfgshm_attach(h), SHM_ELAYOUT);
    h->sh->config_size++;
    h->sh->nacks++; /* size no longer matches */
    ck_assert_int_eq(srv_cfgshm_attach(h), SHM_ELAYOUT);
    h->sh->nacks--;
    copy.size--; /* the handle maps less */
    ck_assert_int_eq(srv_cfgshm_attach(&copy), SHM_ELAYOUT);
    copy.size = 1;
    ck_assert_int_eq(srv_cfgshm_attach(&copy), SHM_ELAYOUT);
    ck_assert_int_eq(srv_cfgshm_attach(h), 0);
    srv_cfgshm_destroy(&h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* publish and read */

START_TEST(test_publish_read)
{
    srv_cfgshm *h = region();
    srv_config cfg, got;
    uint64_t seq;

    ck_assert_int_eq(srv_cfgshm_read(h, &got, &seq), 0);
    ck_assert_uint_eq(seq, 2);
    ck_assert_int_eq(got.port, 6379);
    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    srv_cfgshm_current_locked(h, &cfg);
    ck_assert_int_eq(memcmp(&cfg, &got, sizeof cfg), 0);
    cfg.maxclients = 77;
    snprintf(cfg.requirepass, sizeof cfg.requirepass, "%s", "sekrit");
    ck_assert_uint_eq(srv_cfgshm_publish_locked(h, &cfg), 4);
    srv_cfgshm_unlock(h);
    ck_assert_uint_eq(srv_cfgshm_seq(h), 4);
    ck_assert_int_eq(srv_cfgshm_read(h, &got, &seq), 0);
    ck_assert_uint_eq(seq, 4);
    ck_assert_int_eq(got.maxclients, 77);
    ck_assert_str_eq(got.requirepass, "sekrit");
    ck_assert_int_eq(memcmp(&cfg, &got, sizeof cfg), 0);
    srv_cfgshm_destroy(&h);
}
END_TEST

/* A child process sees what the parent publishes after the fork. */
START_TEST(test_shared_across_fork)
{
    srv_cfgshm *h = region();
    srv_config cfg;
    uint64_t seq;
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        while (srv_cfgshm_seq(h) < 4)
            sched_yield();
        if (srv_cfgshm_read(h, &cfg, &seq) || seq != 4 || cfg.timeout != 42)
            _exit(1);
        _exit(0);
    }
    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    srv_cfgshm_current_locked(h, &cfg);
    cfg.timeout = 42;
    srv_cfgshm_publish_locked(h, &cfg);
    srv_cfgshm_unlock(h);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    srv_cfgshm_destroy(&h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* acknowledgements */

START_TEST(test_acks)
{
    srv_cfgshm *h = region();

    for (unsigned i = 0; i < NACKS; i++)
        ck_assert_int_eq(srv_cfgshm_lagging(h, i, 2), 0); /* none */
    srv_cfgshm_expect(h, 1, 4711, 2);
    ck_assert_int_eq(srv_cfgshm_lagging(h, 1, 2), 0); /* has 2 */
    ck_assert_int_eq(srv_cfgshm_lagging(h, 1, 4), 4711);
    srv_cfgshm_ack(h, 1, 4);
    ck_assert_int_eq(srv_cfgshm_lagging(h, 1, 4), 0);
    /* The master's late registration never lowers a newer ack. */
    srv_cfgshm_expect(h, 1, 4711, 2);
    ck_assert_int_eq(srv_cfgshm_lagging(h, 1, 4), 0);
    /* A dead child is not waited for. */
    srv_cfgshm_expect(h, 1, 0, 2);
    ck_assert_int_eq(srv_cfgshm_lagging(h, 1, 100), 0);
    /* Out of range: ignored. */
    srv_cfgshm_ack(h, NACKS, 4);
    srv_cfgshm_expect(h, NACKS, 1, 4);
    ck_assert_int_eq(srv_cfgshm_lagging(h, NACKS, 4), 0);
    srv_cfgshm_destroy(&h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* concurrency */

/*
 * Each published value is self-describing: requirepass is `len` copies of
 * one letter, maxclients is len and timeout the letter. A torn read shows
 * up as mixed letters, a length that is not maxclients, or a timeout that
 * is not the letter.
 */
static void fill(srv_config *cfg, int letter, int len)
{
    memset(cfg->requirepass, letter, (size_t)len);
    cfg->requirepass[len] = '\0';
    cfg->maxclients = len;
    cfg->timeout = letter;
}

static int consistent(const srv_config *cfg)
{
    size_t len = strnlen(cfg->requirepass, SRV_PATH_MAX);

    if (len == SRV_PATH_MAX || (long long)len != cfg->maxclients)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (cfg->requirepass[i] != (char)cfg->timeout)
            return 0;
    return 1;
}

static void writer(srv_cfgshm *h, unsigned seed, int64_t until)
{
    static srv_config cfg;

    while (now_ms() < until) {
        int letter = 'a' + (int)(rand_r(&seed) % LETTERS);
        int len = 1 + (int)(rand_r(&seed) % (SRV_PATH_MAX - 1));
        if (srv_cfgshm_lock(h))
            _exit(2);
        srv_cfgshm_current_locked(h, &cfg);
        if (!consistent(&cfg)) /* the lock holder's own view */
            _exit(3);
        fill(&cfg, letter, len);
        srv_cfgshm_publish_locked(h, &cfg);
        srv_cfgshm_unlock(h);
    }
    _exit(0);
}

/* Exit 0 if every read was consistent, generations never went back and
 * it saw more than one of them. */
static void reader(srv_cfgshm *h, int64_t until)
{
    static srv_config cfg;
    uint64_t last = 0, seq;
    unsigned long changes = 0;

    while (now_ms() < until) {
        if (srv_cfgshm_read(h, &cfg, &seq))
            _exit(2);
        if (!consistent(&cfg))
            _exit(3);
        if (seq & 1 || seq < last)
            _exit(4);
        changes += seq != last;
        last = seq;
    }
    _exit(changes > 1 ? 0 : 5);
}

START_TEST(test_hammer_no_torn_reads)
{
    srv_cfgshm *h = region();
    srv_config cfg;
    pid_t pids[NWRITERS + NREADERS];
    int64_t until;

    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    srv_cfgshm_current_locked(h, &cfg);
    fill(&cfg, 'a', 1);
    srv_cfgshm_publish_locked(h, &cfg);
    srv_cfgshm_unlock(h);
    until = now_ms() + HAMMER_MS;
    for (int i = 0; i < NWRITERS + NREADERS; i++) {
        pids[i] = fork();
        ck_assert_int_ge(pids[i], 0);
        if (pids[i] == 0) {
            if (i < NWRITERS)
                writer(h, (unsigned)i + 1, until);
            reader(h, until);
        }
    }
    for (int i = 0; i < NWRITERS + NREADERS; i++) {
        int status;
        ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "%s %d failed: status %d",
                      i < NWRITERS ? "writer" : "reader", i, status);
    }
    ck_assert_int_eq(srv_cfgshm_read(h, &cfg, &(uint64_t){ 0 }), 0);
    ck_assert(consistent(&cfg));
    srv_cfgshm_destroy(&h);
}
END_TEST

/* ------------------------------------------------------------------ */
/* crash: a writer dies holding the lock */

/* Fork a child that takes the lock, stages `next` and, with `odd`, makes
 * the counter odd and overwrites half the published copy with garbage,
 * then dies without unlocking (as a publish cut short would leave it). */
static void die_mid_publish(srv_cfgshm *h, const srv_config *next, int odd)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (srv_cfgshm_lock(h))
            _exit(2);
        memcpy(h->sh->staged, next, sizeof *next);
        if (odd) {
            atomic_fetch_add(&h->sh->seq, 1);
            memset(h->sh->cur, 'x', sizeof h->sh->cur / 2);
        }
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Died copying: a reader finishes the publish (the stage was complete). */
START_TEST(test_crash_mid_copy_reader_repairs)
{
    srv_cfgshm *h = region();
    srv_config next, got;
    uint64_t seq;

    srv_config_defaults(&next);
    fill(&next, 'q', 100);
    die_mid_publish(h, &next, 1);
    ck_assert_uint_eq(srv_cfgshm_seq(h), 3); /* stuck odd */
    ck_assert_int_eq(srv_cfgshm_read(h, &got, &seq), 0);
    ck_assert_uint_eq(seq, 4);
    ck_assert(consistent(&got));
    ck_assert_int_eq(memcmp(&got, &next, sizeof got), 0);
    ck_assert_uint_eq(shm_lock_owner_dead(&h->sh->writer), 1);
    /* The lock works again. */
    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    srv_cfgshm_unlock(h);
    srv_cfgshm_destroy(&h);
}
END_TEST

/* Died copying: the next writer finishes it, then publishes its own. */
START_TEST(test_crash_mid_copy_writer_repairs)
{
    srv_cfgshm *h = region();
    srv_config next, cur;
    uint64_t seq;

    srv_config_defaults(&next);
    fill(&next, 'r', 10);
    die_mid_publish(h, &next, 1);
    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    ck_assert_uint_eq(srv_cfgshm_seq(h), 4);
    srv_cfgshm_current_locked(h, &cur);
    ck_assert_int_eq(memcmp(&cur, &next, sizeof cur), 0);
    fill(&cur, 's', 20);
    ck_assert_uint_eq(srv_cfgshm_publish_locked(h, &cur), 6);
    srv_cfgshm_unlock(h);
    ck_assert_int_eq(srv_cfgshm_read(h, &next, &seq), 0);
    ck_assert_str_eq(next.requirepass, "ssssssssssssssssssss");
    srv_cfgshm_destroy(&h);
}
END_TEST

/* Died staging (counter still even): the published copy is untouched. */
START_TEST(test_crash_while_staging)
{
    srv_cfgshm *h = region();
    srv_config before, next, got;
    uint64_t seq;

    ck_assert_int_eq(srv_cfgshm_read(h, &before, &seq), 0);
    memset(&next, 'z', sizeof next); /* a half-written stage */
    die_mid_publish(h, &next, 0);
    ck_assert_int_eq(srv_cfgshm_lock(h), 0);
    ck_assert_uint_eq(shm_lock_owner_dead(&h->sh->writer), 1);
    srv_cfgshm_unlock(h);
    ck_assert_int_eq(srv_cfgshm_read(h, &got, &seq), 0);
    ck_assert_uint_eq(seq, 2);
    ck_assert_int_eq(memcmp(&got, &before, sizeof got), 0);
    srv_cfgshm_destroy(&h);
}
END_TEST

static Suite *cfgshm_suite(void)
{
    Suite *s = suite_create("cfgshm");
    TCase *tc;

    tc = tcase_create("layout");
    tcase_add_test(tc, test_layout_pinned);
    tcase_add_test(tc, test_create_header);
    tcase_add_test(tc, test_attach_checks);
    suite_add_tcase(s, tc);

    tc = tcase_create("core");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_publish_read);
    tcase_add_test(tc, test_shared_across_fork);
    tcase_add_test(tc, test_acks);
    suite_add_tcase(s, tc);

    tc = tcase_create("concurrency");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_hammer_no_torn_reads);
    suite_add_tcase(s, tc);

    tc = tcase_create("crash");
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_crash_mid_copy_reader_repairs);
    tcase_add_test(tc, test_crash_mid_copy_writer_repairs);
    tcase_add_test(tc, test_crash_while_staging);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cfgshm_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
