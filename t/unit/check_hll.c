/*
 * check_hll: unit tests of the HyperLogLog values (server/srv_hll.h):
 * the empty value, sparse updates that split and merge runs, promotion
 * to dense by register value (above 32) and by size, dense and sparse
 * agreeing register by register, the cache bits, corrupt values refused,
 * PFDEBUG's decoding and the self-test.
 */
#include "server/srv_hll.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 60
#define BIG_SPARSE_MAX (SRV_HLL_BUF_MAX - 8)
#define MANY 20000
#define DECODE_ROOM 4096

static uint8_t buf[SRV_HLL_BUF_MAX], other[SRV_HLL_BUF_MAX];
static uint8_t regs[SRV_HLL_REGISTERS], regs2[SRV_HLL_REGISTERS];

static int add(uint8_t *b, size_t *len, size_t max, int i)
{
    char e[32];
    int n = snprintf(e, sizeof e, "el:%d", i);

    return srv_hll_add(b, len, max, e, (size_t)n);
}

START_TEST(test_empty)
{
    size_t len = srv_hll_init(buf);
    uint64_t card = 99;
    char text[DECODE_ROOM];

    ck_assert_uint_eq(len, SRV_HLL_HDR_SIZE + 2);
    ck_assert(srv_hll_valid(buf, len));
    ck_assert_int_eq(srv_hll_encoding(buf), SRV_HLL_SPARSE);
    ck_assert(srv_hll_cached(buf, &card));
    ck_assert_uint_eq(card, 0);
    ck_assert_int_eq(srv_hll_count(buf, len, &card), 0);
    ck_assert_uint_eq(card, 0);
    ck_assert_int_eq(srv_hll_decode(buf, len, text, sizeof text), 7);
    ck_assert_mem_eq(text, "Z:16384", 7);
    srv_hll_invalidate(buf);
    ck_assert(!srv_hll_cached(buf, &card));
    srv_hll_set_cached(buf, 12345);
    ck_assert(srv_hll_cached(buf, &card));
    ck_assert_uint_eq(card, 12345);
}
END_TEST

START_TEST(test_sparse_splits_and_merges)
{
    size_t len = srv_hll_init(buf);
    char text[DECODE_ROOM];
    long n;

    /* A register in the middle of the one XZERO run: XZERO VAL XZERO. */
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 1000, 3), 1);
    n = srv_hll_decode(buf, len, text, sizeof text);
    text[n] = 0;
    ck_assert_str_eq(text, "Z:1000 v:3,1 Z:15383");
    /* Its neighbour with the same value: the two VALs merge. */
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 1001, 3), 1);
    n = srv_hll_decode(buf, len, text, sizeof text);
    text[n] = 0;
    ck_assert_str_eq(text, "Z:1000 v:3,2 Z:15382");
    /* Lower or equal values change nothing. */
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 1000, 2), 0);
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 1001, 3), 0);
    /* A short zero run is a ZERO opcode. */
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 1010, 1), 1);
    n = srv_hll_decode(buf, len, text, sizeof text);
    text[n] = 0;
    ck_assert_str_eq(text, "Z:1000 v:3,2 z:8 v:1,1 Z:15373");
    ck_assert_int_eq(srv_hll_encoding(buf), SRV_HLL_SPARSE);
}
END_TEST

START_TEST(test_promote_by_value)
{
    size_t len = srv_hll_init(buf);

    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 77, 32), 1);
    ck_assert_int_eq(srv_hll_encoding(buf), SRV_HLL_SPARSE);
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX, 78, 40), 1);
    ck_assert_int_eq(srv_hll_encoding(buf), SRV_HLL_DENSE);
    ck_assert_uint_eq(len, SRV_HLL_DENSE_SIZE);
    ck_assert(srv_hll_valid(buf, len));
    ck_assert_int_eq(srv_hll_registers(buf, len, regs), 0);
    ck_assert_uint_eq(regs[77], 32);
    ck_assert_uint_eq(regs[78], 40);
    ck_assert_uint_eq(regs[79], 0);
    /* The last register, whose bits end the dense array. */
    ck_assert_int_eq(srv_hll_set(buf, &len, BIG_SPARSE_MAX,
                                 SRV_HLL_REGISTERS - 1, 51),
                     1);
    ck_assert_int_eq(srv_hll_registers(buf, len, regs), 0);
    ck_assert_uint_eq(regs[SRV_HLL_REGISTERS - 1], 51);
    ck_assert_uint_eq(regs[SRV_HLL_REGISTERS - 2], 0);
}
END_TEST

START_TEST(test_promote_by_size)
{
    size_t len = srv_hll_init(buf), limit = 200;
    int i;

    for (i = 0; srv_hll_encoding(buf) == SRV_HLL_SPARSE; i++) {
        ck_assert_uint_le(len, limit);
        ck_assert_int_ge(add(buf, &len, limit, i), 0);
    }
    ck_assert_int_gt(i, 10);
    ck_assert_uint_eq(len, SRV_HLL_DENSE_SIZE);
    /* A limit of 0 promotes at the first register set. */
    len = srv_hll_init(buf);
    ck_assert_int_eq(add(buf, &len, 0, 1), 1);
    ck_assert_int_eq(srv_hll_encoding(buf), SRV_HLL_DENSE);
}
END_TEST

START_TEST(test_sparse_and_dense_agree)
{
    size_t slen = srv_hll_init(buf), dlen = srv_hll_init(other);
    uint64_t cs, cd;

    ck_assert_int_eq(srv_hll_to_dense(other, &dlen), 1);
    ck_assert_int_eq(srv_hll_to_dense(other, &dlen), 0);
    for (int i = 0; i < MANY; i++) {
        int a = add(buf, &slen, BIG_SPARSE_MAX, i);
        int b = add(other, &dlen, 0, i);
        ck_assert_int_ge(a, 0);
        ck_assert_int_eq(a, b); /* the same registers change */
    }
    ck_assert_int_eq(srv_hll_registers(buf, slen, regs), 0);
    ck_assert_int_eq(srv_hll_registers(other, dlen, regs2), 0);
    ck_assert_mem_eq(regs, regs2, sizeof regs);
    ck_assert_int_eq(srv_hll_count(buf, slen, &cs), 0);
    ck_assert_int_eq(srv_hll_count(other, dlen, &cd), 0);
    ck_assert_uint_eq(cs, cd);
    ck_assert_uint_eq(srv_hll_count_registers(regs), cd);
    ck_assert_msg(cd > MANY * 95 / 100 && cd < MANY * 105 / 100,
                  "estimate %llu for %d", (unsigned long long)cd, MANY);
    /* Merging both gives the same registers again. */
    memset(regs2, 0, sizeof regs2);
    ck_assert_int_eq(srv_hll_merge(regs2, buf, slen), 0);
    ck_assert_int_eq(srv_hll_merge(regs2, other, dlen), 0);
    ck_assert_mem_eq(regs, regs2, sizeof regs);
}
END_TEST

START_TEST(test_corrupt_refused)
{
    uint64_t card;
    size_t len = srv_hll_init(buf);

    ck_assert(!srv_hll_valid(buf, SRV_HLL_HDR_SIZE - 1));
    ck_assert(!srv_hll_valid((const uint8_t *)"HYLX\x01", 18));
    /* One register short: counts, merges and conversions refuse it. */
    buf[SRV_HLL_HDR_SIZE + 1] = 0xfe;
    ck_assert(srv_hll_valid(buf, len));
    ck_assert_int_eq(srv_hll_count(buf, len, &card), -1);
    ck_assert_int_eq(srv_hll_merge(regs, buf, len), -1);
    ck_assert_int_eq(srv_hll_to_dense(buf, &len), -1);
    /* A dense value of the wrong size is not an HLL. */
    len = srv_hll_init(buf);
    ck_assert_int_eq(srv_hll_to_dense(buf, &len), 1);
    ck_assert(!srv_hll_valid(buf, len - 1));
}
END_TEST

START_TEST(test_selftest)
{
    char err[256] = "";

    ck_assert_msg(srv_hll_selftest(err, sizeof err) == 0, "%s", err);
}
END_TEST

static Suite *hll_suite(void)
{
    Suite *s = suite_create("hll");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_sparse_splits_and_merges);
    tcase_add_test(tc, test_promote_by_value);
    tcase_add_test(tc, test_promote_by_size);
    tcase_add_test(tc, test_sparse_and_dense_agree);
    tcase_add_test(tc, test_corrupt_refused);
    tcase_add_test(tc, test_selftest);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hll_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
