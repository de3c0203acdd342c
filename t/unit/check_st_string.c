/*
 * check_st_string: unit tests of string values (storage/st_string.h):
 * the inline/chunked boundary, reads across spans and gaps, sparse writes
 * at high offsets (one span stored, not the value), a random-write model
 * check with and without span compression, patches across a span
 * boundary, the encodings writes leave, what DEL, overwrite, COPY, RENAME
 * and expiry do with spans (detached, freed, deep-copied, moved), and the
 * version 2 -> 3 schema migration with a long inline string of version 2.
 */
#include "storage/st_codec.h"
#include "storage/st_coll.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_string.h"
#include "storage/st_txn.h"
#include "t/unit/unit_st.h"

#include <check.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t/unit/unit_tmp.h"

#define NOW UNIT_ST_NOW
#define SEC UNIT_ST_SEC
#define TIMEOUT_S 60
#define CHUNK ST_STRING_CHUNK
#define MIB (1024 * 1024)
#define HIGH_OFFSET (1ull << 30)     /* a 1 GiB sparse string */
#define SPARSE_MAX_USED (4u * MIB)   /* what its environment may grow to */
#define MODEL_MAX (20 * CHUNK + 123) /* model strings stay under this */
#define MODEL_ROUNDS 300
#define MODEL_WRITE_MAX (2 * CHUNK + 7)
#define MODEL_SEED 12345u
#define FREE_BUDGET ST_CHUNK_KEYS
/* A SET this long is chunked; a partial write past PATCH_MAX chunks. */
#define BIG (ST_STRING_INLINE_MAX + 1)
#define PATCH_MAX ST_STRING_PATCH_INLINE_MAX
#define SPANS(len) (((len) + CHUNK - 1) / CHUNK)
#define V2_SCHEMA 2
#define V1_SCHEMA 1
#define V2_MAXDBS 16

/* ------------------------------------------------------------------ */
/* helpers */

static void write_at(const char *name, uint64_t off, const void *val,
                     size_t len, uint64_t want_len)
{
    st_txn *t = unit_st_wbegin();
    st_keyref k;
    uint64_t n;

    st_codec_keyref_init(&k, 0, name, strlen(name));
    ck_assert_int_eq(st_string_write(t, &k, NOW, off, val, len,
                                     ST_STRING_ENC_RAW, &n),
                     0);
    ck_assert_uint_eq(n, want_len);
    unit_st_commit(&t);
}

/* Store `val` at `name` as a chunked string (a partial write from 0 of
 * more than PATCH_MAX bytes; zero spans are stored too). */
static void put_chunked(const char *name, const uint8_t *val, size_t len)
{
    ck_assert_uint_gt(len, PATCH_MAX);
    write_at(name, 0, val, len, len);
}

/* The record of `name` in read transaction t (which the caller ends). */
static st_rec lookup(st_txn *t, const char *name)
{
    st_rec r;

    ck_assert_int_eq(unit_st_lookup(t, 0, name, NOW, &r), 0);
    ck_assert_int_eq(r.type, ST_TYPE_STRING);
    return r;
}

/* Free every detached collection and span; returns how many went. */
static size_t free_all(void)
{
    size_t freed, total = 0;
    uint64_t pending = 1;

    while (pending) {
        ck_assert_int_eq(st_coll_free_chunk(unit_st_env, FREE_BUDGET, &freed,
                                            &pending),
                         0);
        total += freed;
        if (!freed && pending)
            ck_abort_msg("garbage does not shrink");
    }
    return total;
}

/* Pieces of a read, concatenated (zeros written out). */
struct collect {
    uint8_t *buf;
    size_t len;
    size_t pieces, zero_pieces;
};

static int collect_piece(void *ctx, const uint8_t *p, size_t n)
{
    struct collect *c = ctx;

    if (p)
        memcpy(c->buf + c->len, p, n);
    else
        memset(c->buf + c->len, 0, n);
    c->len += n;
    c->pieces++;
    c->zero_pieces += p == NULL;
    return 0;
}

/* ------------------------------------------------------------------ */
/* core */

START_TEST(test_inline_chunked_boundary)
{
    uint8_t *v = unit_st_make_name(BIG, 3);
    st_txn *t = unit_st_wbegin();
    st_rec r;

    /* SET: inline up to ST_STRING_INLINE_MAX. */
    ck_assert_int_eq(unit_st_putn(t, 0, "in", 2, v, BIG - 1, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "ch", 2, v, BIG, 0), 0);
    unit_st_commit(&t);
    t = unit_st_rbegin();
    r = lookup(t, "in");
    ck_assert(!st_string_is_chunked(&r));
    ck_assert_uint_eq(st_string_len(&r), BIG - 1);
    r = lookup(t, "ch");
    ck_assert(st_string_is_chunked(&r));
    ck_assert_uint_eq(st_string_len(&r), BIG);
    unit_st_commit(&t);
    unit_st_expect_bytes(0, "in", v, BIG - 1);
    unit_st_expect_bytes(0, "ch", v, BIG);
    /* Partial writes: inline up to PATCH_MAX, then spans. */
    write_at("p", 0, v, PATCH_MAX, PATCH_MAX);
    t = unit_st_rbegin();
    r = lookup(t, "p");
    ck_assert(!st_string_is_chunked(&r));
    unit_st_commit(&t);
    write_at("p", PATCH_MAX, v + PATCH_MAX, 1, PATCH_MAX + 1);
    t = unit_st_rbegin();
    r = lookup(t, "p");
    ck_assert(st_string_is_chunked(&r));
    unit_st_commit(&t);
    unit_st_expect_bytes(0, "p", v, PATCH_MAX + 1);
    /* A long inline string moves into spans at its first partial write. */
    write_at("in", 5, "x", 1, BIG - 1);
    t = unit_st_rbegin();
    r = lookup(t, "in");
    ck_assert(st_string_is_chunked(&r));
    unit_st_commit(&t);
    v[5] = 'x';
    unit_st_expect_bytes(0, "in", v, BIG - 1);
    /* The inline-only reserve refuses what needs spans. */
    {
        st_keyref k;
        uint8_t *dst;
        t = unit_st_wbegin();
        st_codec_keyref_init(&k, 0, "x", 1);
        ck_assert_int_eq(st_keyspace_string_reserve(t, &k, BIG, 0, &dst),
                         EINVAL);
        unit_st_commit(&t);
    }
    free(v);
}
END_TEST

START_TEST(test_read_ranges_across_spans)
{
    const size_t len = 9 * CHUNK + 100;
    uint8_t *v = unit_st_make_name(len, 9);
    uint8_t *buf = malloc(len);
    const uint64_t offs[] = { 0,       1,         CHUNK - 1,
                              CHUNK,   CHUNK + 1, 2 * CHUNK - 3,
                              len - 1, len,       len + 5 };
    st_txn *t;

    put_chunked("s", v, len);
    t = unit_st_rbegin();
    st_rec r = lookup(t, "s");
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        for (uint64_t n = 0; n < 2 * CHUNK + 10; n += CHUNK / 3 + 1) {
            struct collect c = { buf, 0, 0, 0 };
            uint64_t want = offs[i] >= len      ? 0
                            : n < len - offs[i] ? n
                                                : len - offs[i];
            ck_assert_int_eq(st_string_read(t, &r, offs[i], n, collect_piece,
                                            &c),
                             0);
            ck_assert_uint_eq(c.len, want);
            ck_assert_int_eq(memcmp(buf, v + offs[i], (size_t)want), 0);
            ck_assert_uint_eq(c.zero_pieces, 0);
        }
    }
    /* copy_out pads past the end with zeros */
    memset(buf, 0xee, 20);
    ck_assert_int_eq(st_string_copy_out(t, &r, len - 10, 20, buf), 0);
    ck_assert_int_eq(memcmp(buf, v + len - 10, 10), 0);
    for (int i = 10; i < 20; i++)
        ck_assert_uint_eq(buf[i], 0);
    unit_st_commit(&t);
    free(buf);
    free(v);
}
END_TEST

START_TEST(test_sparse_high_offset)
{
    st_env_stat st;
    uint8_t probe[8];
    st_txn *t;

    /* One byte at 1 GiB: one span stored, the rest reads as zeros. */
    write_at("bits", HIGH_OFFSET, "\x80", 1, HIGH_OFFSET + 1);
    ck_assert_int_eq(st_env_stat_get(unit_st_env, &st), 0);
    ck_assert_msg(st.used_bytes < SPARSE_MAX_USED,
                  "a sparse 1 GiB string used %llu bytes",
                  (unsigned long long)st.used_bytes);
    t = unit_st_rbegin();
    st_rec r = lookup(t, "bits");
    ck_assert(st_string_is_chunked(&r));
    ck_assert_uint_eq(st_string_len(&r), HIGH_OFFSET + 1);
    ck_assert_int_eq(st_string_copy_out(t, &r, HIGH_OFFSET - 4, 8, probe), 0);
    ck_assert_mem_eq(probe, "\0\0\0\0\x80\0\0\0", 8);
    ck_assert_int_eq(st_string_copy_out(t, &r, 12345678, 8, probe), 0);
    ck_assert_mem_eq(probe, "\0\0\0\0\0\0\0\0", 8);
    /* A read of the gap is a few zero pieces, not one per span. */
    {
        uint8_t *buf = malloc(64 * CHUNK);
        struct collect c = { buf, 0, 0, 0 };
        ck_assert_int_eq(st_string_read(t, &r, 0, 64 * CHUNK, collect_piece,
                                        &c),
                         0);
        ck_assert_uint_eq(c.len, 64 * CHUNK);
        ck_assert_uint_eq(c.pieces, 1);
        free(buf);
    }
    unit_st_commit(&t);
    /* Bytes near the first one share its span: the data stays small. */
    for (int i = 1; i < 100; i++)
        write_at("bits", HIGH_OFFSET - (uint64_t)i * 97, "\x01", 1,
                 HIGH_OFFSET + 1);
    ck_assert_int_eq(st_env_stat_get(unit_st_env, &st), 0);
    ck_assert_uint_lt(st.used_bytes, SPARSE_MAX_USED);
}
END_TEST

/* Random SETRANGE/APPEND writes on a model buffer and on storage agree,
 * across the inline limit and span boundaries. */
START_TEST(test_model_random_writes)
{
    uint8_t *model = calloc(1, MODEL_MAX + MODEL_WRITE_MAX);
    uint8_t *val = malloc(MODEL_WRITE_MAX);
    size_t mlen = 0;
    unsigned x = MODEL_SEED;

    for (int round = 0; round < MODEL_ROUNDS; round++) {
        x = x * 1103515245u + 12345u;
        size_t n = (x >> 8) % (round % 5 == 0 ? MODEL_WRITE_MAX : 64) + 1;
        x = x * 1103515245u + 12345u;
        int append = (x >> 12) % 4 == 0;
        uint64_t off = append ? mlen : (x >> 4) % (MODEL_MAX - n);
        for (size_t i = 0; i < n; i++)
            val[i] = (uint8_t)(round % 3 == 0 ? 0 : (x >> (i % 24)) + i);
        if (append && mlen + n > MODEL_MAX)
            continue;
        memcpy(model + off, val, n);
        if (off + n > mlen)
            mlen = off + n;
        write_at("m", append ? ST_STRING_APPEND : off, val, n, mlen);
        if (round % 10 == 0 || round == MODEL_ROUNDS - 1)
            unit_st_expect_bytes(0, "m", model, mlen);
    }
    ck_assert_uint_gt(mlen, PATCH_MAX);
    {
        st_txn *t = unit_st_rbegin();
        st_rec r = lookup(t, "m");
        ck_assert(st_string_is_chunked(&r));
        unit_st_commit(&t);
    }
    free(model);
    free(val);
}
END_TEST

struct flip {
    uint8_t seen[ST_STRING_PATCH_MAX];
};

static void flip_bits(void *ctx, uint8_t *bytes, size_t len)
{
    struct flip *f = ctx;

    memcpy(f->seen, bytes, len);
    for (size_t i = 0; i < len; i++)
        bytes[i] ^= 0xff;
}

START_TEST(test_patch_across_span_boundary)
{
    const size_t len = 9 * CHUNK;
    uint8_t *v = unit_st_make_name(len, 4);
    struct flip f;
    st_keyref k;
    uint64_t n;
    st_txn *t;

    put_chunked("p", v, len);
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, "p", 1);
    ck_assert_int_eq(st_string_patch(t, &k, NOW, CHUNK - 2, 4, flip_bits, &f,
                                     &n),
                     0);
    ck_assert_uint_eq(n, len);
    ck_assert_mem_eq(f.seen, v + CHUNK - 2, 4);
    for (int i = 0; i < 4; i++)
        v[CHUNK - 2 + i] ^= 0xff;
    /* Past the end: the string grows with zeros, the patch sees zeros. */
    ck_assert_int_eq(st_string_patch(t, &k, NOW, len + CHUNK, 2, flip_bits, &f,
                                     &n),
                     0);
    ck_assert_uint_eq(n, len + CHUNK + 2);
    ck_assert_mem_eq(f.seen, "\0\0", 2);
    /* A new key is created; too long a patch is refused. */
    st_codec_keyref_init(&k, 0, "new", 3);
    ck_assert_int_eq(st_string_patch(t, &k, NOW, 5, 1, flip_bits, &f, &n), 0);
    ck_assert_uint_eq(n, 6);
    ck_assert_int_eq(st_string_patch(t, &k, NOW, 0, ST_STRING_PATCH_MAX + 1,
                                     flip_bits, &f, &n),
                     EINVAL);
    unit_st_commit(&t);
    {
        uint8_t *want = calloc(1, len + CHUNK + 2);
        memcpy(want, v, len);
        want[len + CHUNK] = want[len + CHUNK + 1] = 0xff;
        unit_st_expect_bytes(0, "p", want, len + CHUNK + 2);
        free(want);
    }
    unit_st_expect_bytes(0, "new", "\0\0\0\0\0\xff", 6);
    free(v);
}
END_TEST

START_TEST(test_wrong_type)
{
    st_txn *t = unit_st_wbegin();
    st_keyref k;
    st_obj o;
    int created;
    uint64_t n;

    st_codec_keyref_init(&k, 0, "h", 1);
    ck_assert_int_eq(st_coll_open(t, &k, ST_TYPE_HASH, NOW, &o), ST_ENOTFOUND);
    ck_assert_int_eq(st_coll_create(t, &o), 0);
    o.c.card = 1;
    ck_assert_int_eq(st_coll_save(t, &o, NOW), 0);
    (void)created;
    ck_assert_int_eq(st_string_write(t, &k, NOW, 0, "x", 1, ST_STRING_ENC_RAW,
                                     &n),
                     ST_EWRONGTYPE);
    unit_st_commit(&t);
}
END_TEST

START_TEST(test_encodings)
{
    st_txn *t = unit_st_wbegin();
    st_keyref k;
    st_rec r;
    uint64_t n;
    struct flip f;

    st_codec_keyref_init(&k, 0, "e", 1);
    ck_assert_int_eq(st_keyspace_string_set(t, &k, "12", 2, 0), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(st_string_enc(&r), ST_STRING_ENC_AUTO);
    ck_assert_int_eq(st_string_set(t, &k, "12", 2, 0, ST_STRING_ENC_NOINT), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(st_string_enc(&r), ST_STRING_ENC_NOINT);
    ck_assert_int_eq(st_string_write(t, &k, NOW, ST_STRING_APPEND, "3", 1,
                                     ST_STRING_ENC_RAW, &n),
                     0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(st_string_enc(&r), ST_STRING_ENC_RAW);
    /* TTL and RENAME keep it; SET forgets it. */
    ck_assert_int_eq(st_keyspace_expire_set(t, &k, NOW, NOW + SEC), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(st_string_enc(&r), ST_STRING_ENC_RAW);
    ck_assert_int_eq(st_keyspace_string_set(t, &k, "1", 1, 0), 0);
    ck_assert_int_eq(st_string_patch(t, &k, NOW, 0, 1, flip_bits, &f, &n), 0);
    ck_assert_int_eq(st_keyspace_lookup(t, &k, NOW, &r), 0);
    ck_assert_int_eq(st_string_enc(&r), ST_STRING_ENC_RAW);
    unit_st_commit(&t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* spans and the keyspace */

START_TEST(test_delete_and_overwrite_free_spans)
{
    const size_t len = BIG;
    uint8_t *v = unit_st_make_name(len, 6);
    st_txn *t = unit_st_wbegin();
    st_keyref k;

    ck_assert_int_eq(unit_st_putn(t, 0, "a", 1, v, len, 0), 0);
    ck_assert_int_eq(unit_st_putn(t, 0, "b", 1, v, len, 0), 0);
    unit_st_commit(&t);
    ck_assert_uint_eq(free_all(), 0);
    /* DEL detaches a's spans; an inline SET over b detaches b's. */
    t = unit_st_wbegin();
    st_codec_keyref_init(&k, 0, "a", 1);
    ck_assert_int_eq(st_keyspace_delete(t, &k, NOW), 0);
    ck_assert_int_eq(unit_st_put(t, 0, "b", "small", 0), 0);
    unit_st_commit(&t);
    ck_assert_uint_eq(free_all(), 2 * SPANS(len));
    unit_st_expect(0, "a", NULL);
    unit_st_expect(0, "b", "small");
    /* A chunked SET over a chunked string: the old spans go. */
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 0, "c", 1, v, len, 0), 0);
    unit_st_commit(&t);
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 0, "c", 1, v + CHUNK, len - CHUNK, 0), 0);
    unit_st_commit(&t);
    ck_assert_uint_eq(free_all(), SPANS(len));
    unit_st_expect_bytes(0, "c", v + CHUNK, len - CHUNK);
    free(v);
}
END_TEST

START_TEST(test_copy_rename_expire)
{
    const size_t len = 9 * CHUNK + 5;
    uint8_t *v = unit_st_make_name(len, 8);
    st_txn *t;
    st_keyref ks;

    put_chunked("src", v, len);
    t = unit_st_wbegin();
    st_codec_keyref_init(&ks, 0, "src", 3);
    ck_assert_int_eq(st_keyspace_expire_set(t, &ks, NOW, NOW + 10 * SEC), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(unit_st_copy(0, "src", 1, "dup", 0), 0);
    ck_assert_int_eq(unit_st_rename(0, "src", "moved", 0), 0);
    ck_assert_uint_eq(free_all(), 0); /* the rename moved the spans */
    /* A write to the copy leaves the original alone: a deep copy. */
    {
        st_keyref k;
        uint64_t n;
        t = unit_st_wbegin();
        st_codec_keyref_init(&k, 1, "dup", 3);
        ck_assert_int_eq(st_string_write(t, &k, NOW, 0, "ZZZZ", 4,
                                         ST_STRING_ENC_RAW, &n),
                         0);
        unit_st_commit(&t);
    }
    unit_st_expect_bytes(0, "moved", v, len);
    ck_assert_int_eq(unit_st_ttl_of(0, "moved"), NOW + 10 * SEC);
    ck_assert_int_eq(unit_st_ttl_of(1, "dup"), NOW + 10 * SEC);
    memcpy(v, "ZZZZ", 4);
    unit_st_expect_bytes(1, "dup", v, len);
    /* Active expiry frees both strings' spans. */
    ck_assert_uint_eq(unit_st_expire_due(NOW + 11 * SEC, ST_CHUNK_KEYS, NULL),
                      2);
    ck_assert_uint_eq(free_all(), 2 * SPANS(len));
    free(v);
}
END_TEST

START_TEST(test_compressed_spans)
{
    const size_t len = BIG + 77;
    uint8_t *v = unit_st_compressible(len, 'c');
    st_env_stat before, after;
    st_txn *t;

    ck_assert_int_eq(st_env_stat_get(unit_st_env, &before), 0);
    t = unit_st_wbegin();
    ck_assert_int_eq(unit_st_putn(t, 0, "z", 1, v, len, 0), 0);
    unit_st_commit(&t);
    ck_assert_int_eq(st_env_stat_get(unit_st_env, &after), 0);
    ck_assert_msg(after.used_bytes - before.used_bytes < len / 2,
                  "compressed spans took %llu bytes for %zu",
                  (unsigned long long)(after.used_bytes - before.used_bytes),
                  len);
    unit_st_expect_bytes(0, "z", v, len);
    /* A write into a compressed span keeps the rest of it. */
    write_at("z", CHUNK + 10, "hello", 5, len);
    memcpy(v + CHUNK + 10, "hello", 5);
    unit_st_expect_bytes(0, "z", v, len);
    free(v);
}
END_TEST

/* ------------------------------------------------------------------ */
/* schema */

/* Make unit_st_dir a version `ver` environment as version 2 left it (no
 * chunks database) holding `name` as an inline string of `len` bytes. */
static void make_old_env(uint32_t ver, const char *name, const uint8_t *val,
                         size_t len)
{
    static const char *const v2_dbis[] = { "keys",  "expires",  "hashes",
                                           "sets",  "zmembers", "zscores",
                                           "lists", "garbage",  "meta" };
    MDB_env *e;
    MDB_txn *txn;
    MDB_dbi dbi[sizeof v2_dbis / sizeof v2_dbis[0]];
    MDB_val k, v;
    st_keyref kr;
    uint8_t *p;
    int64_t counts[2] = { 1, 0 };

    ck_assert_int_eq(mdb_env_create(&e), 0);
    mdb_env_set_maxdbs(e, V2_MAXDBS);
    mdb_env_set_mapsize(e, UNIT_ST_MAP_SIZE);
    ck_assert_int_eq(mdb_env_open(e, unit_st_dir, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(e, NULL, 0, &txn), 0);
    for (size_t i = 0; i < sizeof v2_dbis / sizeof v2_dbis[0]; i++)
        ck_assert_int_eq(mdb_dbi_open(txn, v2_dbis[i], MDB_CREATE, &dbi[i]), 0);
    k.mv_size = 6;
    k.mv_data = "schema";
    v.mv_size = sizeof ver;
    v.mv_data = &ver;
    ck_assert_int_eq(mdb_put(txn, dbi[8], &k, &v, 0), 0);
    k.mv_size = 6;
    k.mv_data = "counts";
    v.mv_size = sizeof counts;
    v.mv_data = counts;
    ck_assert_int_eq(mdb_put(txn, dbi[8], &k, &v, 0), 0);
    st_codec_keyref_init(&kr, 0, name, strlen(name));
    k.mv_size = kr.enc_len;
    k.mv_data = kr.enc;
    v.mv_size = st_codec_rec_size(&kr, len);
    v.mv_data = NULL;
    ck_assert_int_eq(mdb_put(txn, dbi[0], &k, &v, MDB_RESERVE), 0);
    p = st_codec_rec_encode_head(v.mv_data, &kr, ST_TYPE_STRING, 0, 1, 0);
    memcpy(p, val, len);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(e);
}

START_TEST(test_migrate_v2)
{
    const size_t len = PATCH_MAX + 100; /* inline, as version 2 kept it */
    uint8_t *v = unit_st_make_name(len + 1, 2);
    st_txn *t;

    st_env_close(&unit_st_env);
    unit_tmp_remove(unit_st_dir);
    ck_assert_int_eq(mkdir(unit_st_dir, 0700), 0);
    make_old_env(V2_SCHEMA, "old", v, len);
    unit_st_env_open();
    unit_st_expect_bytes(0, "old", v, len);
    t = unit_st_rbegin();
    st_rec r = lookup(t, "old");
    ck_assert(!st_string_is_chunked(&r));
    unit_st_commit(&t);
    /* The first write moves it into spans. */
    write_at("old", len, v + len, 1, len + 1);
    t = unit_st_rbegin();
    r = lookup(t, "old");
    ck_assert(st_string_is_chunked(&r));
    unit_st_commit(&t);
    unit_st_expect_bytes(0, "old", v, len + 1);
    /* Reopened, it is version 3 and stays readable. */
    st_env_close(&unit_st_env);
    unit_st_env_open();
    unit_st_expect_bytes(0, "old", v, len + 1);
    free(v);
}
END_TEST

START_TEST(test_refuse_v1)
{
    st_env_opts o = { .dir = unit_st_dir,
                      .map_size = UNIT_ST_MAP_SIZE,
                      .databases = UNIT_ST_DATABASES,
                      .nosync = 1 };
    st_env *e = NULL;

    st_env_close(&unit_st_env);
    unit_tmp_remove(unit_st_dir);
    ck_assert_int_eq(mkdir(unit_st_dir, 0700), 0);
    make_old_env(V1_SCHEMA, "old", (const uint8_t *)"x", 1);
    ck_assert_int_eq(st_env_open(&o, &e), ST_ESCHEMA);
    ck_assert_ptr_null(e);
    /* Refused means untouched: still version 1 for the next opener. */
    ck_assert_int_eq(st_env_open(&o, &e), ST_ESCHEMA);
}
END_TEST

/* A cached inline string moved into spans by a partial write: no read
 * after the commit sees the old value (the cache rule, shm_cache.h). */
START_TEST(test_cache_sees_conversion)
{
    uint8_t *v = unit_st_make_name(PATCH_MAX, 11);
    st_txn *t = unit_st_wbegin();

    ck_assert_int_eq(unit_st_putn(t, 0, "c", 1, v, PATCH_MAX, 0), 0);
    unit_st_commit(&t);
    unit_st_expect_bytes(0, "c", v, PATCH_MAX); /* fills the cache */
    unit_st_expect_bytes(0, "c", v, PATCH_MAX); /* a hit */
    write_at("c", PATCH_MAX, "!", 1, PATCH_MAX + 1);
    {
        uint8_t *w = malloc(PATCH_MAX + 1);
        memcpy(w, v, PATCH_MAX);
        w[PATCH_MAX] = '!';
        unit_st_expect_bytes(0, "c", w, PATCH_MAX + 1);
        /* and a write inside the spans is seen too */
        write_at("c", 3, "?", 1, PATCH_MAX + 1);
        w[3] = '?';
        unit_st_expect_bytes(0, "c", w, PATCH_MAX + 1);
        free(w);
    }
    free(v);
}
END_TEST

static Suite *string_suite(void)
{
    Suite *s = suite_create("st_string");
    TCase *tc = tcase_create("core");

    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_inline_chunked_boundary);
    tcase_add_test(tc, test_read_ranges_across_spans);
    tcase_add_test(tc, test_sparse_high_offset);
    tcase_add_test(tc, test_model_random_writes);
    tcase_add_test(tc, test_patch_across_span_boundary);
    tcase_add_test(tc, test_wrong_type);
    tcase_add_test(tc, test_encodings);
    suite_add_tcase(s, tc);

    tc = tcase_create("keyspace");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_delete_and_overwrite_free_spans);
    tcase_add_test(tc, test_copy_rename_expire);
    suite_add_tcase(s, tc);

    tc = tcase_create("compress");
    unit_st_fixture(tc, UNIT_ST_COMPRESS);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_compressed_spans);
    tcase_add_test(tc, test_model_random_writes);
    tcase_add_test(tc, test_copy_rename_expire);
    suite_add_tcase(s, tc);

    tc = tcase_create("cache");
    unit_st_fixture(tc, UNIT_ST_CACHE);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_model_random_writes);
    tcase_add_test(tc, test_inline_chunked_boundary);
    tcase_add_test(tc, test_cache_sees_conversion);
    suite_add_tcase(s, tc);

    tc = tcase_create("schema");
    unit_st_fixture(tc, UNIT_ST_PLAIN);
    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_migrate_v2);
    tcase_add_test(tc, test_refuse_v1);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(string_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
