/*
 * check_bsubs: unit tests of the broker's subscription counts
 * (server/srv_bsubs.h): counts are absolute per link and a name leaves at
 * total 0; a lost link's counts go; a message's receivers are its
 * channel's and its matching patterns' subscriptions (not a shard
 * channel's patterns), with every link that has one named; NUMSUB and
 * CHANNELS answers, and a CHANNELS list cut at what a frame holds.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/srv_bsubs.h"

#define MAX_TARGETS 64
#define MAX_BODY (SRV_BP_BODY_SLACK + 1024)
#define MANY_NAMES 200
#define NAME_MAX_LEN 32
#define NAME_LEN 16 /* "channel-%08d" */
#define CUT_NAMES 10

static uint32_t targets[MAX_TARGETS];
static int ntargets;

static void on_target(void *ctx, uint32_t link)
{
    ck_assert_int_lt(ntargets, MAX_TARGETS);
    targets[ntargets++] = link;
}

/* Whether on_target named `link` since the last reset. */
static int targeted(uint32_t link)
{
    for (int i = 0; i < ntargets; i++)
        if (targets[i] == link)
            return 1;
    return 0;
}

static uint64_t route(srv_bsubs *s, int kind, const char *ch)
{
    ntargets = 0;
    return srv_bsubs_route(s, kind, ch, strlen(ch), on_target, NULL);
}

static void set(srv_bsubs *s, int kind, const char *name, uint32_t link,
                uint64_t n)
{
    srv_bsubs_set(s, kind, name, strlen(name), link, n);
}

/* Decode the one frame in b. */
static srv_bframe decode(const srv_buf *b, int type)
{
    srv_bframe f;
    size_t size;

    ck_assert_int_eq(srv_bproto_decode(b->data, b->len, MAX_BODY, &f, &size),
                     0);
    ck_assert_uint_eq(size, b->len);
    ck_assert_int_eq(f.type, type);
    return f;
}

/* NUMSUB's total of `name` of `kind`. */
static uint64_t numsub(srv_bsubs *s, int kind, const char *name)
{
    srv_buf req = { 0 }, out = { 0 };
    size_t off = srv_bproto_begin(&req, SRV_BP_NUMSUB, kind, 0);
    srv_bframe f;
    srv_bcursor cur;
    const char *p;
    size_t n;
    uint64_t total;

    ck_assert(off != (size_t)-1);
    ck_assert_int_eq(srv_bproto_put_field(&req, name, strlen(name)), 0);
    srv_bproto_end(&req, off);
    f = decode(&req, SRV_BP_NUMSUB);
    ck_assert_int_eq(srv_bsubs_numsub(s, &f, &out), 0);
    f = decode(&out, SRV_BP_R_NUMSUB);
    ck_assert_int_eq(f.kind, kind);
    srv_bproto_cursor(&cur, &f);
    ck_assert_int_eq(srv_bproto_get_field(&cur, &p, &n), 0);
    ck_assert(n == strlen(name) && memcmp(p, name, n) == 0);
    ck_assert_int_eq(srv_bproto_get_u64(&cur, &total), 0);
    ck_assert(cur.p == cur.end);
    srv_buf_free(&req);
    srv_buf_free(&out);
    return total;
}

/* CHANNELS of `kind` matching `pattern` (NULL: all): the answer's count;
 * its names in out (the caller frees it). */
static uint64_t channels(srv_bsubs *s, int kind, const char *pattern,
                         uint64_t max_body, srv_buf *out)
{
    srv_buf req = { 0 };
    srv_bframe f;
    uint64_t n = 0;
    srv_bcursor cur;
    const char *p;
    size_t len;

    ck_assert_int_eq(srv_bproto_put(&req, SRV_BP_CHANNELS, kind,
                                    pattern != NULL, pattern,
                                    pattern ? strlen(pattern) : 0, NULL, 0),
                     0);
    f = decode(&req, SRV_BP_CHANNELS);
    ck_assert_int_eq(srv_bsubs_channels(s, &f, max_body, out), 0);
    f = decode(out, SRV_BP_R_CHANNELS);
    srv_bproto_cursor(&cur, &f);
    while (srv_bproto_get_field(&cur, &p, &len) == 0)
        n++;
    ck_assert(cur.p == cur.end);
    ck_assert_uint_eq(n, f.arg);
    srv_buf_free(&req);
    return n;
}

START_TEST(test_counts_are_absolute_per_link)
{
    srv_bsubs *s = srv_bsubs_create();

    ck_assert_ptr_nonnull(s);
    set(s, SRV_BP_CHANNEL, "news", 0, 2);
    set(s, SRV_BP_CHANNEL, "news", 1, 3);
    ck_assert_uint_eq(numsub(s, SRV_BP_CHANNEL, "news"), 5);
    set(s, SRV_BP_CHANNEL, "news", 0, 1);
    ck_assert_uint_eq(numsub(s, SRV_BP_CHANNEL, "news"), 4);
    ck_assert_uint_eq(numsub(s, SRV_BP_SHARD, "news"), 0);
    ck_assert_uint_eq(numsub(s, SRV_BP_CHANNEL, "other"), 0);
    ck_assert_uint_eq(srv_bsubs_names(s, SRV_BP_CHANNEL), 1);
    set(s, SRV_BP_CHANNEL, "news", 0, 0);
    set(s, SRV_BP_CHANNEL, "news", 1, 0);
    ck_assert_uint_eq(srv_bsubs_names(s, SRV_BP_CHANNEL), 0);
    set(s, SRV_BP_CHANNEL, "never", 2, 0);
    ck_assert_uint_eq(srv_bsubs_names(s, SRV_BP_CHANNEL), 0);
    srv_bsubs_destroy(&s);
    ck_assert_ptr_null(s);
}
END_TEST

START_TEST(test_drop_link)
{
    srv_bsubs *s = srv_bsubs_create();

    set(s, SRV_BP_CHANNEL, "a", 0, 1);
    set(s, SRV_BP_CHANNEL, "a", 1, 2);
    set(s, SRV_BP_PATTERN, "a*", 1, 1);
    set(s, SRV_BP_SHARD, "b", 1, 1);
    srv_bsubs_drop_link(s, 1);
    ck_assert_uint_eq(numsub(s, SRV_BP_CHANNEL, "a"), 1);
    ck_assert_uint_eq(srv_bsubs_names(s, SRV_BP_PATTERN), 0);
    ck_assert_uint_eq(srv_bsubs_names(s, SRV_BP_SHARD), 0);
    ck_assert_uint_eq(route(s, SRV_BP_CHANNEL, "a"), 1);
    ck_assert(targeted(0) && !targeted(1));
    srv_bsubs_destroy(&s);
}
END_TEST

START_TEST(test_route_channel_and_patterns)
{
    srv_bsubs *s = srv_bsubs_create();

    set(s, SRV_BP_CHANNEL, "news.sport", 0, 2);
    set(s, SRV_BP_PATTERN, "news.*", 1, 1);
    set(s, SRV_BP_PATTERN, "*", 0, 1);
    set(s, SRV_BP_PATTERN, "other.*", 2, 1);
    ck_assert_uint_eq(route(s, SRV_BP_CHANNEL, "news.sport"), 4);
    ck_assert(targeted(0) && targeted(1) && !targeted(2));
    ck_assert_uint_eq(route(s, SRV_BP_CHANNEL, "nobody"), 1);
    ck_assert_int_eq(ntargets, 1);
    ck_assert(targeted(0));
    /* A shard channel's receivers are its own subscribers only. */
    set(s, SRV_BP_SHARD, "news.sport", 2, 1);
    ck_assert_uint_eq(route(s, SRV_BP_SHARD, "news.sport"), 1);
    ck_assert_int_eq(ntargets, 1);
    ck_assert(targeted(2));
    srv_bsubs_destroy(&s);
}
END_TEST

START_TEST(test_channels)
{
    srv_bsubs *s = srv_bsubs_create();
    srv_buf out = { 0 };

    set(s, SRV_BP_CHANNEL, "news.sport", 0, 1);
    set(s, SRV_BP_CHANNEL, "news.art", 1, 1);
    set(s, SRV_BP_CHANNEL, "weather", 1, 1);
    set(s, SRV_BP_PATTERN, "news.*", 1, 1);
    ck_assert_uint_eq(channels(s, SRV_BP_CHANNEL, NULL, MAX_BODY, &out), 3);
    out.len = 0;
    ck_assert_uint_eq(channels(s, SRV_BP_CHANNEL, "news.*", MAX_BODY, &out), 2);
    out.len = 0;
    ck_assert_uint_eq(channels(s, SRV_BP_SHARD, NULL, MAX_BODY, &out), 0);
    srv_buf_free(&out);
    srv_bsubs_destroy(&s);
}
END_TEST

/* Past what a frame holds the list is cut, whole names only. */
START_TEST(test_channels_cut_at_the_frame)
{
    srv_bsubs *s = srv_bsubs_create();
    srv_buf out = { 0 };
    char name[NAME_MAX_LEN];
    uint64_t small = SRV_BP_BODY_SLACK + SRV_BP_HDR_SIZE +
                     CUT_NAMES * (SRV_BP_FIELD_HDR + NAME_LEN);
    uint64_t n;

    for (int i = 0; i < MANY_NAMES; i++) {
        snprintf(name, sizeof name, "channel-%08d", i);
        set(s, SRV_BP_CHANNEL, name, 0, 1);
    }
    n = channels(s, SRV_BP_CHANNEL, NULL, small, &out);
    ck_assert_uint_eq(n, CUT_NAMES);
    srv_buf_free(&out);
    srv_bsubs_destroy(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bsubs");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_counts_are_absolute_per_link);
    tcase_add_test(tc, test_drop_link);
    tcase_add_test(tc, test_route_channel_and_patterns);
    tcase_add_test(tc, test_channels);
    suite_add_tcase(s, tc);
    tc = tcase_create("limits");
    tcase_add_test(tc, test_channels_cut_at_the_frame);
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
