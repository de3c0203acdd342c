/*
 * check_st_keyspace_model: a model check of the keyspace
 * (storage/st_keyspace.h): seeded random SET [PX], DEL, PEXPIREAT /
 * PERSIST, RENAME[NX], COPY [REPLACE], active expiry, FLUSHDB and the
 * passing of time over three databases of short and long names, checked
 * against a plain in-memory model (every value, TTL, count and SCAN),
 * in a plain environment, with writemap and behind the shared cache.
 */
#include "storage/st_codec.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW UNIT_ST_NOW
#define TIMEOUT_S 30
#define NAME_SIZE 64
#define BATCH_ALL 100000 /* an expiry batch bigger than any test */

#define MODEL_DBS 3
#define MODEL_SHORT 20
#define MODEL_LONG 4
#define MODEL_NAMES (MODEL_SHORT + MODEL_LONG)
#define MODEL_LONG_LEN 600
#define MODEL_OPS 3000
#define MODEL_CHECK_EVERY 50
#define MODEL_STEP_MS 10
#define MODEL_TTL_MS 2000
#define MODEL_VAL 2200 /* values up to this long */
#define MODEL_SEED 0x5eed1234u
#define MODEL_FLUSH_ODDS 20 /* one idle step in this many flushes */

typedef struct model_key {
    int present; /* stored (maybe expired, not reaped) */
    int64_t at;
    size_t len;
    char val[MODEL_VAL];
} model_key;

typedef struct model {
    model_key k[MODEL_DBS][MODEL_NAMES];
    uint8_t *names[MODEL_NAMES];
    size_t lens[MODEL_NAMES];
    int64_t now;
    uint32_t rng;
} model;

static uint32_t model_rand(model *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 17;
    m->rng ^= m->rng << 5;
    return m->rng;
}

static int model_live(const model *m, const model_key *k)
{
    return k->present && (k->at == 0 || k->at > m->now);
}

/* A write transaction's lookup: an expired key is deleted on the spot. */
static int model_touch(model *m, model_key *k)
{
    if (k->present && !model_live(m, k))
        k->present = 0;
    return k->present;
}

/* An expire-at in the future that no stored key has (no ties). */
static int64_t model_unique_at(model *m)
{
    int64_t at = m->now + 1 + model_rand(m) % MODEL_TTL_MS;

    for (;;) {
        int clash = 0;
        for (int d = 0; d < MODEL_DBS; d++)
            for (int i = 0; i < MODEL_NAMES; i++)
                clash |= m->k[d][i].present && m->k[d][i].at == at;
        if (!clash)
            return at;
        at++;
    }
}

static void model_keyref(const model *m, st_keyref *k, int db, int i)
{
    st_codec_keyref_init(k, (unsigned)db, m->names[i], m->lens[i]);
}

static void model_verify(model *m)
{
    for (int d = 0; d < MODEL_DBS; d++) {
        uint64_t keys = 0, exps = 0, live = 0;
        unit_st_names c = { 0 };
        st_txn *t = unit_st_rbegin();
        for (int i = 0; i < MODEL_NAMES; i++) {
            model_key *mk = &m->k[d][i];
            st_keyref k;
            st_rec r;
            int rc;
            model_keyref(m, &k, d, i);
            rc = st_keyspace_lookup(t, &k, m->now, &r);
            keys += mk->present;
            exps += mk->present && mk->at;
            live += model_live(m, mk);
            if (!model_live(m, mk)) {
                ck_assert_msg(rc == ST_ENOTFOUND,
                              "db %d name %d: rc %d, model says absent", d, i,
                              rc);
                continue;
            }
            ck_assert_msg(rc == 0, "db %d name %d: %s, model says present", d,
                          i, st_strerror(rc));
            ck_assert_int_eq(r.expire_at, mk->at);
            ck_assert_uint_eq(r.payload_len, mk->len);
            ck_assert_int_eq(memcmp(r.payload, mk->val, mk->len), 0);
        }
        unit_st_commit(&t);
        unit_st_counts((unsigned)d, keys, exps);
        unit_st_scan_all((unsigned)d, 5, m->now, &c);
        ck_assert_uint_eq(c.n, live);
        for (int i = 0; i < MODEL_NAMES; i++)
            ck_assert_int_eq(unit_st_times_seen(&c, m->names[i], m->lens[i]),
                             model_live(m, &m->k[d][i]));
        unit_st_names_free(&c);
    }
}

static void model_step(model *m, int op)
{
    int db = (int)(model_rand(m) % MODEL_DBS);
    int i = (int)(model_rand(m) % MODEL_NAMES);
    int db2 = (int)(model_rand(m) % MODEL_DBS);
    int j = (int)(model_rand(m) % MODEL_NAMES);
    int flag = (int)(model_rand(m) % 2);
    model_key *a = &m->k[db][i], *b = &m->k[db2][j];
    st_keyref ka, kb;
    st_txn *t;
    int rc, want;

    model_keyref(m, &ka, db, i);
    model_keyref(m, &kb, db2, j);
    switch (model_rand(m) % 8) {
    case 0:
    case 1: { /* SET [PX] */
        int64_t at = flag ? model_unique_at(m) : 0;
        size_t len = model_rand(m) % 8
                         ? (size_t)snprintf(a->val, sizeof a->val, "v%d", op)
                         : MODEL_VAL;
        if (len == MODEL_VAL)
            for (size_t x = 0; x < len; x++)
                a->val[x] = (char)('a' + (op + (int)x / 50) % 26);
        t = unit_st_wbegin();
        ck_assert_int_eq(st_keyspace_string_set(t, &ka, a->val, len, at), 0);
        unit_st_commit(&t);
        a->present = 1;
        a->at = at;
        a->len = len;
        break;
    }
    case 2: /* DEL */
        want = model_touch(m, a) ? 0 : ST_ENOTFOUND;
        t = unit_st_wbegin();
        rc = st_keyspace_delete(t, &ka, m->now);
        unit_st_commit(&t);
        ck_assert_int_eq(rc, want);
        a->present = 0;
        break;
    case 3: { /* PEXPIREAT / PERSIST */
        int64_t at = flag ? model_unique_at(m) : 0;
        want = model_touch(m, a) ? 0 : ST_ENOTFOUND;
        t = unit_st_wbegin();
        rc = st_keyspace_expire_set(t, &ka, m->now, at);
        unit_st_commit(&t);
        ck_assert_int_eq(rc, want);
        if (rc == 0)
            a->at = at;
        break;
    }
    case 4: /* RENAME[NX] in db */
        b = &m->k[db][j];
        model_keyref(m, &kb, db, j);
        if (!model_touch(m, a))
            want = ST_ENOTFOUND;
        else if (i == j)
            want = flag ? ST_EEXISTS : 0;
        else if (model_touch(m, b) && flag)
            want = ST_EEXISTS;
        else
            want = 0;
        t = unit_st_wbegin();
        rc = st_keyspace_rename(t, &ka, &kb, m->now, flag);
        unit_st_commit(&t);
        ck_assert_msg(rc == want, "op %d rename: rc %d want %d", op, rc, want);
        if (rc == 0 && i != j) {
            *b = *a;
            a->present = 0;
        }
        break;
    case 5: /* COPY [REPLACE] */
        if (!model_touch(m, a))
            want = ST_ENOTFOUND;
        else if (model_touch(m, b) && (!flag || a == b))
            want = ST_EEXISTS;
        else
            want = 0;
        t = unit_st_wbegin();
        rc = st_keyspace_copy(t, &ka, &kb, m->now, flag);
        unit_st_commit(&t);
        ck_assert_msg(rc == want, "op %d copy: rc %d want %d", op, rc, want);
        if (rc == 0)
            *b = *a;
        break;
    case 6: { /* active expiry */
        size_t due = 0;
        for (int d = 0; d < MODEL_DBS; d++)
            for (int x = 0; x < MODEL_NAMES; x++)
                if (m->k[d][x].present && m->k[d][x].at &&
                    m->k[d][x].at <= m->now) {
                    m->k[d][x].present = 0;
                    due++;
                }
        ck_assert_uint_eq(unit_st_expire_due(m->now, BATCH_ALL, NULL), due);
        break;
    }
    default: /* time passes; rarely a flush */
        if (model_rand(m) % MODEL_FLUSH_ODDS == 0) {
            uint64_t ver;
            ck_assert_int_eq(st_keyspace_flush(unit_st_env, db, &ver), 0);
            for (int x = 0; x < MODEL_NAMES; x++)
                m->k[db][x].present = 0;
        }
        break;
    }
    m->now += MODEL_STEP_MS;
}

START_TEST(test_model_random_ops)
{
    model *m = calloc(1, sizeof *m);

    ck_assert_ptr_nonnull(m);
    m->rng = MODEL_SEED;
    m->now = NOW;
    for (int i = 0; i < MODEL_NAMES; i++) {
        if (i < MODEL_SHORT) {
            char tmp[NAME_SIZE];
            m->lens[i] = (size_t)snprintf(tmp, sizeof tmp, "k%d", i);
            m->names[i] = malloc(m->lens[i]);
            ck_assert_ptr_nonnull(m->names[i]);
            memcpy(m->names[i], tmp, m->lens[i]);
        } else {
            /* Long names sharing a long prefix, differing at the end. */
            m->lens[i] = MODEL_LONG_LEN;
            m->names[i] = unit_st_make_name(MODEL_LONG_LEN, 42);
            m->names[i][MODEL_LONG_LEN - 1] = (uint8_t)i;
        }
    }
    for (int op = 0; op < MODEL_OPS; op++) {
        model_step(m, op);
        if (op % MODEL_CHECK_EVERY == 0)
            model_verify(m);
    }
    model_verify(m);
    for (int i = 0; i < MODEL_NAMES; i++)
        free(m->names[i]);
    free(m);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("st_keyspace_model");
    TCase *tc;

    tc = tcase_create("model");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create("writemap");
    unit_st_fixture(tc, UNIT_ST_WRITEMAP);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create("model_cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_ops);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
