/*
 * rdb_file.c - reading and writing whole RDB files.
 */
#include "rdb/rdb_file.h"
#include "rdb/rdb_err.h"

#include <stdio.h>
#include <string.h>

#define MS_PER_S 1000
#define BYTE_BITS 8
#define DECIMAL 10

/* A key name fit for an error text: printable bytes as they are, the
 * rest as \xHH, cut to RDB_FILE_NAME_IN_ERRORS bytes. */
static void quote_name(const uint8_t *p, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i;

    for (i = 0; i < n && i < RDB_FILE_NAME_IN_ERRORS && o + 5 < cap; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\') {
            out[o++] = (char)p[i];
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[p[i] >> 4];
            out[o++] = hex[p[i] & 0xf];
        }
    }
    if (i < n && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* Prefix the reader's reason with the key it happened in. */
static void name_the_key(rdb_reader *r, uint64_t db, const uint8_t *name,
                         size_t n)
{
    char q[RDB_FILE_NAME_IN_ERRORS * 4 + 8], why[RDB_WHY_MAX];
    int len;

    quote_name(name, n, q, sizeof q);
    len = snprintf(why, sizeof why, "key \"%s\" (db %llu): ", q,
                   (unsigned long long)db);
    if (len > 0 && (size_t)len < sizeof why)
        snprintf(why + len, sizeof why - (size_t)len, "%.*s",
                 (int)(sizeof why - (size_t)len - 1), r->why);
    memcpy(r->why, why, sizeof why);
}

static int refused(rdb_reader *r, const char *what)
{
    return rdb_reader_fail(r, RDB_ESINK, "the %s was refused", what);
}

static int read_header(rdb_reader *r, int *version)
{
    uint8_t h[RDB_HEADER_LEN];
    int v = 0, rc;

    if ((rc = rdb_read(r, h, sizeof h))) {
        if (rc == RDB_ETRUNC) {
            r->err = 0;
            r->p = r->crc_mark = r->win; /* report offset 0 */
            return rdb_reader_fail(r, RDB_ECORRUPT,
                                   "not an RDB file (shorter than its "
                                   "header)");
        }
        return rc;
    }
    if (memcmp(h, RDB_MAGIC, RDB_MAGIC_LEN) != 0) {
        r->p = r->crc_mark = r->win; /* report offset 0 */
        return rdb_reader_fail(r, RDB_ECORRUPT,
                               "not an RDB file (no \"REDIS\" signature)");
    }
    for (int i = RDB_MAGIC_LEN; i < RDB_HEADER_LEN; i++) {
        if (h[i] < '0' || h[i] > '9')
            return rdb_reader_fail(r, RDB_ECORRUPT,
                                   "a malformed RDB version \"%.4s\"",
                                   (const char *)h + RDB_MAGIC_LEN);
        v = v * DECIMAL + (h[i] - '0');
    }
    *version = v;
    if (v < RDB_VERSION_MIN || v > RDB_VERSION)
        return rdb_reader_fail(r, RDB_EVERSION,
                               "RDB version %d (this reads %d to %d: Redis "
                               "2.6 to 7.0)",
                               v, RDB_VERSION_MIN, RDB_VERSION);
    return 0;
}

static int read_trailer(rdb_reader *r)
{
    uint64_t want = rdb_reader_crc(r), got;
    int rc = rdb_read_le64(r, &got);

    if (rc)
        return rc;
    if (got != 0 && got != want) {
        r->p -= 8; /* the offset of the trailer */
        return rdb_reader_fail(r, RDB_ECHECKSUM,
                               "checksum mismatch: the file says %016llx, "
                               "its bytes give %016llx",
                               (unsigned long long)got,
                               (unsigned long long)want);
    }
    return 0;
}

static int read_key(rdb_reader *r, const rdb_file_sink *s, rdb_scratch *sc,
                    rdb_buf *keybuf, int type, uint64_t db, int64_t expire)
{
    uint64_t type_off = rdb_reader_offset(r) - 1; /* the type byte */
    const uint8_t *name;
    const rdb_sink *obj = NULL;
    const char *what;
    size_t n;
    int rc;

    if ((rc = rdb_read_string(r, keybuf, &name, &n)))
        return rc;
    /* A type that cannot be read: said at its byte, with the key. */
    if ((rc = rdb_obj_kind(type, &what)) < 0) {
        if (rc == RDB_EUNSUPPORTED)
            rdb_reader_fail(r, rc, "a %s (type %d)", what, type);
        else
            rdb_reader_fail(r, rc, "unknown object type %d", type);
        r->err_off = type_off;
        name_the_key(r, db, name, n);
        return rc;
    }
    if (s->key && s->key(s->ctx, db, name, n, type, expire, &obj)) {
        rc = refused(r, "key");
        name_the_key(r, db, name, n);
        return rc;
    }
    rc = obj ? rdb_obj_decode(r, type, obj, sc) : rdb_obj_skip(r, type, sc);
    if (rc && rc != RDB_EEMPTY) {
        name_the_key(r, db, name, n);
        return rc;
    }
    if (rc == RDB_EEMPTY)
        r->err = 0; /* not a failure of the file */
    if (s->key_done && s->key_done(s->ctx, rc)) {
        rc = refused(r, "key");
        name_the_key(r, db, name, n);
        return rc;
    }
    return 0;
}

int rdb_file_read(rdb_reader *r, const rdb_file_sink *s, rdb_scratch *sc,
                  rdb_buf *keybuf, int *version)
{
    int64_t expire = -1;
    uint64_t db = 0, a, b;
    const uint8_t *k, *v;
    size_t kn, vn;
    uint8_t op;
    uint32_t secs;
    int rc;

    if ((rc = read_header(r, version)))
        return rc;
    for (;;) {
        if ((rc = rdb_read_u8(r, &op)))
            return rc;
        switch (op) {
        case RDB_OP_EXPIRETIME:
            if ((rc = rdb_read_le32(r, &secs)))
                return rc;
            expire = (int64_t)secs * MS_PER_S;
            continue;
        case RDB_OP_EXPIRETIME_MS:
            if ((rc = rdb_read_le64(r, &a)))
                return rc;
            expire = (int64_t)a;
            continue;
        case RDB_OP_FREQ:
            if ((rc = rdb_read_u8(r, &op)))
                return rc;
            continue;
        case RDB_OP_IDLE:
            if ((rc = rdb_read_len(r, &a, NULL)))
                return rc;
            continue;
        case RDB_OP_SELECTDB:
            if ((rc = rdb_read_len(r, &db, NULL)))
                return rc;
            if (s->select_db && s->select_db(s->ctx, db))
                return refused(r, "database number");
            continue;
        case RDB_OP_RESIZEDB:
            if ((rc = rdb_read_len(r, &a, NULL)) ||
                (rc = rdb_read_len(r, &b, NULL)))
                return rc;
            if (s->resize_db && s->resize_db(s->ctx, a, b))
                return refused(r, "database size");
            continue;
        case RDB_OP_AUX:
            if ((rc = rdb_read_string(r, &sc->a, &k, &kn)) ||
                (rc = rdb_read_string(r, &sc->b, &v, &vn)))
                return rc;
            if (s->aux && s->aux(s->ctx, k, kn, v, vn))
                return refused(r, "auxiliary field");
            continue;
        case RDB_OP_MODULE_AUX:
            r->p--;
            return rdb_reader_fail(r, RDB_EUNSUPPORTED,
                                   "module auxiliary data: larder has no "
                                   "modules");
        case RDB_OP_FUNCTION_PRE_GA:
        case RDB_OP_FUNCTION2:
            r->p--;
            return rdb_reader_fail(r, RDB_EUNSUPPORTED,
                                   "a function library (FUNCTION LOAD): "
                                   "functions are not supported yet "
                                   "(issue #12)");
        case RDB_OP_EOF:
            return *version >= RDB_VERSION_MIN ? read_trailer(r) : 0;
        default:
            if ((rc = read_key(r, s, sc, keybuf, op, db, expire)))
                return rc;
            expire = -1;
            continue;
        }
    }
}

int rdb_file_write_header(rdb_writer *w)
{
    char h[RDB_HEADER_LEN + 1];

    snprintf(h, sizeof h, "%s%04d", RDB_MAGIC, RDB_VERSION);
    return rdb_put(w, h, RDB_HEADER_LEN);
}

int rdb_file_write_aux(rdb_writer *w, const char *key, const char *val)
{
    int rc = rdb_put_u8(w, RDB_OP_AUX);

    if (rc == 0)
        rc = rdb_put_string(w, key, strlen(key));
    if (rc == 0)
        rc = rdb_put_string(w, val, strlen(val));
    return rc;
}

int rdb_file_write_select(rdb_writer *w, uint64_t db, uint64_t keys,
                          uint64_t expires)
{
    int rc = rdb_put_u8(w, RDB_OP_SELECTDB);

    if (rc == 0)
        rc = rdb_put_len(w, db);
    if (rc == 0)
        rc = rdb_put_u8(w, RDB_OP_RESIZEDB);
    if (rc == 0)
        rc = rdb_put_len(w, keys);
    if (rc == 0)
        rc = rdb_put_len(w, expires);
    return rc;
}

int rdb_file_write_expire(rdb_writer *w, int64_t ms)
{
    int rc = rdb_put_u8(w, RDB_OP_EXPIRETIME_MS);

    return rc ? rc : rdb_put_le64(w, (uint64_t)ms);
}

int rdb_file_write_end(rdb_writer *w)
{
    int rc = rdb_put_u8(w, RDB_OP_EOF);

    if (rc == 0)
        rc = rdb_put_le64(w, rdb_writer_crc(w));
    return rc ? rc : rdb_writer_flush(w);
}
