/*
 * st_string.h - string values, small and large. A string lives in its
 * key record (st_keyspace.h) unless it is long (see ST_STRING_INLINE_MAX):
 * then it is "chunked": its record holds a descriptor (chunk id, length;
 * flag ST_REC_CHUNKED) and its bytes live in the chunks database as
 * fixed spans of ST_STRING_CHUNK bytes keyed by (chunk id, span number). A span
 * that was never written reads as zeros, so a bitmap set at a high offset costs
 * one span, and SETBIT, SETRANGE, GETRANGE and APPEND touch only the spans they
 * cover: updating one bit of a 512 MB string copies one span, not the value. A
 * chunked string's spans are freed like a collection's elements (detached into
 * the garbage database by DEL, overwrite and expiry; freed in bounded chunks by
 * the reaper).
 *
 * Records handed out by st_keyspace_lookup() keep the chunked form: for
 * such a record `payload` is the descriptor, not the bytes. Read string
 * bytes through this module (st_string_len, _read, _copy_out, _flat) and
 * never through r->payload unless !st_string_is_chunked(r).
 */
#ifndef ST_STRING_H
#define ST_STRING_H

#include <stddef.h>
#include <stdint.h>

#include "storage/st_codec.h"
#include "storage/st_env.h"

/*
 * A span holds ST_STRING_CHUNK bytes, sized so that two spans (each an
 * LMDB leaf node: an 8-byte header, the 12-byte key, a tag byte and the
 * bytes) and their two 2-byte slots fill a 4 KiB leaf page less its
 * 16-byte header: a write to a span copies one page, with no overflow
 * pages to allocate or free (measured against one- and four-page
 * overflow spans: the CPU per SETBIT of the former, half of the latter's;
 * PERFORMANCE.md, "Span size"). Other page sizes work, less densely.
 */
#define ST_STRING_CHUNK 2017
#define ST_STRING_TAG_BYTES 1
/*
 * Longest string a whole-value write (SET) keeps in its key record (one
 * LMDB value, cacheable: a GET is one read), and longest a partial write
 * (SETRANGE, APPEND, SETBIT, BITFIELD) leaves there: a partial write to a
 * longer string moves it into spans, after which each such write touches
 * only the spans it covers.
 */
#define ST_STRING_INLINE_MAX (1024 * 1024)
#define ST_STRING_PATCH_INLINE_MAX (16 * 1024)
/* The descriptor of a chunked string: chunk id, length (native u64s). */
#define ST_STRING_DESC_BYTES 16
/* Key of a span: chunk id (BE u64), span number (BE u32). */
#define ST_STRING_SPAN_KEY_BYTES 12

/* 1 if record `r` (a string) keeps its bytes in spans. */
int st_string_is_chunked(const st_rec *r);

/* Length in bytes of the string of record `r`. */
uint64_t st_string_len(const st_rec *r);

/*
 * Called with the pieces of a range in order; `p` NULL stands for `n`
 * zero bytes. `p` is valid for the call only. Non-zero stops the walk
 * and is returned.
 */
typedef int (*st_string_fn)(void *ctx, const uint8_t *p, size_t n);

/*
 * Visit bytes [off, off + len) of the string of `r` (clamped to its
 * length) as pieces, in order. Any transaction that `r` came from, before
 * it writes. 0, fn's non-zero return, or a storage error.
 */
int st_string_read(st_txn *t, const st_rec *r, uint64_t off, uint64_t len,
                   st_string_fn fn, void *ctx);

/* Copy bytes [off, off + len) of the string of `r` into dst; bytes past
 * its end are zeros. 0 or an error. */
int st_string_copy_out(st_txn *t, const st_rec *r, uint64_t off, size_t len,
                       uint8_t *dst);

/*
 * The whole string of `r` in one piece: an inline value as it is, a
 * chunked one assembled in the transaction's arena (valid until the
 * transaction ends). For commands that need every byte at once (LCS,
 * SORT, HyperLogLog); GET streams with st_string_read instead. 0, ENOMEM
 * or an error.
 */
int st_string_flat(st_txn *t, const st_rec *r, const uint8_t **p, size_t *len);

/* How a write leaves the value's Redis encoding (OBJECT ENCODING): what
 * Redis would make of the bytes (int, embstr or raw by their form), an
 * embstr-or-raw string never shown as int (INCRBYFLOAT), or raw
 * whatever its size (SETRANGE, APPEND to an existing key, SETBIT ...). */
enum st_string_enc {
    ST_STRING_ENC_AUTO,
    ST_STRING_ENC_NOINT,
    ST_STRING_ENC_RAW
};

/*
 * Replace whatever `k` holds with the string `val` of `len` bytes expiring
 * at `expire_at` (0 = never), reported with encoding `enc`: inline (and
 * compressed when the environment says so and it pays), or in spans when
 * longer than ST_STRING_INLINE_MAX (each span compressed on its own; spans
 * of zeros are not stored). A replaced collection or chunked string is
 * detached for lazy freeing. st_keyspace_string_set() is this with
 * ST_STRING_ENC_AUTO. Write transaction. 0, ST_EFULL, ST_ETXNFULL, errno.
 */
int st_string_set(st_txn *t, st_keyref *k, const void *val, size_t len,
                  int64_t expire_at, int enc);

/* The encoding the record's writes left (enum st_string_enc). */
int st_string_enc(const st_rec *r);

/*
 * Write `len` bytes of `val` at byte `off` of the string at `k` (SETRANGE;
 * with off == ST_STRING_APPEND at its end: APPEND), creating it if absent
 * and zero-filling any gap; TTL kept. A string that is or becomes longer
 * than ST_STRING_PATCH_INLINE_MAX is chunked; only the spans the range
 * covers are rewritten. `enc` is the encoding the result is reported with.
 * *newlen gets the resulting length. The caller checks off + len against
 * its size limit. Write transaction; `val` must not point into LMDB.
 * 0, ST_EWRONGTYPE, ST_EFULL, ST_ETXNFULL or an errno.
 */
#define ST_STRING_APPEND UINT64_MAX
int st_string_write(st_txn *t, st_keyref *k, int64_t now, uint64_t off,
                    const void *val, size_t len, int enc, uint64_t *newlen);

/*
 * Read-modify-write of a few bytes (SETBIT, BITFIELD): the string at `k`
 * is extended with zeros to at least off + len bytes (created if absent),
 * then `fn` gets bytes [off, off + len) in a buffer it may change, and
 * what it leaves is written back. len <= ST_STRING_PATCH_MAX. The result
 * is reported raw (as Redis's bit commands leave it). *newlen as above.
 */
#define ST_STRING_PATCH_MAX 16
typedef void (*st_string_patch_fn)(void *ctx, uint8_t *bytes, size_t len);
int st_string_patch(st_txn *t, st_keyref *k, int64_t now, uint64_t off,
                    size_t len, st_string_patch_fn fn, void *ctx,
                    uint64_t *newlen);

#endif
