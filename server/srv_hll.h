/*
 * srv_hll.h - HyperLogLog values in Redis's own format, byte for byte, so
 * that counts match Redis's and a value (GET, DUMP) moves between the two:
 * a 16-byte header ("HYLL", encoding, 3 unused bytes, the cached
 * cardinality: 8 bytes little endian, its top bit set when stale), then
 * 16384 six-bit registers, dense (packed little-endian, 12288 bytes) or
 * sparse (run-length opcodes ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL
 * 1vvvvvxx). An element hashes with MurmurHash64A (seed 0xadc83b19): the
 * low 14 bits pick the register, the run of zero bits above them (plus
 * one) is its candidate value. A sparse value is updated in place exactly
 * as Redis updates it (same splits, same merges of neighbouring runs) and
 * promoted to dense when a value exceeds 32 or it would outgrow the
 * configured byte limit. The estimate is Ertl's improved estimator.
 *
 * Pure functions over caller buffers: no allocation, no I/O. Buffers the
 * writers take have SRV_HLL_BUF_MAX bytes of room.
 */
#ifndef SRV_HLL_H
#define SRV_HLL_H

#include <stddef.h>
#include <stdint.h>

#define SRV_HLL_P 14
#define SRV_HLL_REGISTERS (1 << SRV_HLL_P)
#define SRV_HLL_BITS 6
#define SRV_HLL_HDR_SIZE 16
#define SRV_HLL_DENSE_SIZE \
    (SRV_HLL_HDR_SIZE + (SRV_HLL_REGISTERS * SRV_HLL_BITS + 7) / 8)
/* A sparse value never needs more than one opcode byte per register. */
#define SRV_HLL_BUF_MAX (SRV_HLL_HDR_SIZE + SRV_HLL_REGISTERS + 8)
/* Redis's default hll-sparse-max-bytes. */
#define SRV_HLL_SPARSE_MAX_DEFAULT 3000

enum srv_hll_encoding { SRV_HLL_DENSE = 0, SRV_HLL_SPARSE = 1 };

/* 1 if the `len` bytes at p are an HLL value Redis accepts: the magic, a
 * known encoding and, for dense, the exact size. */
int srv_hll_valid(const uint8_t *p, size_t len);

/* Write an empty (sparse) HLL at buf; returns its length. */
size_t srv_hll_init(uint8_t *buf);

/* The encoding of a valid value. */
int srv_hll_encoding(const uint8_t *p);

/*
 * Add element `ele` (n bytes) to the valid value of *len bytes at buf.
 * A sparse value that would pass `sparse_max` bytes, or needs a register
 * above 32, becomes dense. Returns 1 when a register changed (the cached
 * cardinality is then marked stale), 0 when not, -1 if the value is
 * corrupt.
 */
int srv_hll_add(uint8_t *buf, size_t *len, size_t sparse_max, const void *ele,
                size_t n);

/* Raise register `index` to `count` if below it (the merge of PFMERGE),
 * as srv_hll_add does. 1 changed, 0 not, -1 corrupt. */
int srv_hll_set(uint8_t *buf, size_t *len, size_t sparse_max, long index,
                int count);

/* Make the value dense: 1 converted, 0 it was dense, -1 corrupt. */
int srv_hll_to_dense(uint8_t *buf, size_t *len);

/* The cached cardinality: 1 and *card when it is fresh, 0 when stale. */
int srv_hll_cached(const uint8_t *p, uint64_t *card);
void srv_hll_set_cached(uint8_t *p, uint64_t card);
void srv_hll_invalidate(uint8_t *p);

/* Estimate the cardinality from the registers of a valid value: 0, or
 * -1 when a sparse value does not cover exactly 16384 registers. */
int srv_hll_count(const uint8_t *p, size_t len, uint64_t *card);

/* max[i] = MAX(max[i], register i) over the value's registers (max has
 * SRV_HLL_REGISTERS bytes). 0, or -1 if corrupt. */
int srv_hll_merge(uint8_t *max, const uint8_t *p, size_t len);

/* The estimate for registers given one byte each (PFCOUNT of keys). */
uint64_t srv_hll_count_registers(const uint8_t *max);

/* Every register of a valid value into out[SRV_HLL_REGISTERS]. 0 / -1. */
int srv_hll_registers(const uint8_t *p, size_t len, uint8_t *out);

/*
 * The opcodes of a sparse value as PFDEBUG DECODE shows them ("z:N",
 * "Z:N", "v:VALUE,N", space separated) into out (cap bytes); returns the
 * length, or -1 if it does not fit.
 */
long srv_hll_decode(const uint8_t *p, size_t len, char *out, size_t cap);

/* MurmurHash64A of n bytes with `seed` (the HLL's hash). */
uint64_t srv_hll_hash(const void *p, size_t n, uint64_t seed);

/*
 * Check this implementation (PFSELFTEST): the dense register packing, a
 * sparse and a dense HLL fed the same elements agreeing register by
 * register and in their estimates, and the estimate's error within bounds.
 * 0, or -1 with a message in err.
 */
int srv_hll_selftest(char *err, size_t errlen);

#endif
