/*
 * rdb_lzf.h - LZF, the compression of RDB strings: a stream of literal
 * runs (control byte 000LLLLL, then L+1 bytes) and back-references into
 * the output already produced (LLLooooo oooooooo for lengths 3..8, or
 * 111ooooo LLLLLLLL oooooooo for lengths 9..264; offset o+1 back, up to
 * 8192 bytes).
 */
#ifndef RDB_LZF_H
#define RDB_LZF_H

#include <stddef.h>
#include <stdint.h>

/* Entries of the compressor's match table (the caller's memory). */
#define RDB_LZF_HTAB_LOG 14
#define RDB_LZF_HTAB (1u << RDB_LZF_HTAB_LOG)

/*
 * Compress `n` bytes at `in` into at most `cap` bytes at `out`, using the
 * caller's table `htab` of RDB_LZF_HTAB entries (any contents: stale
 * entries are checked against the input, so it needs no clearing between
 * calls). Returns the compressed size, or 0 when the result would not fit
 * in `cap` (callers pass cap < n to keep only a real saving). Inputs
 * longer than UINT32_MAX are not compressed (0).
 */
size_t rdb_lzf_compress(const void *in, size_t n, void *out, size_t cap,
                        uint32_t *htab);

/*
 * Decompress `n` bytes at `in` into exactly `out_len` bytes at `out`.
 * 0, or RDB_ECORRUPT when the input is malformed, refers before the start
 * of the output, or does not produce exactly out_len bytes.
 */
int rdb_lzf_decompress(const void *in, size_t n, void *out, size_t out_len);

#endif
