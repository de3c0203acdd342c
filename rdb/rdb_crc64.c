/*
 * rdb_crc64.c - CRC64/Jones, reflected, by slicing eight bytes a step:
 * table[0] is the classic byte-at-a-time table of the reflected
 * polynomial; table[k][b] is the CRC of byte b followed by k zero bytes,
 * so eight table look-ups fold eight input bytes at once.
 */
#include "rdb/rdb_crc64.h"

#include <pthread.h>
#include <string.h>

#define BYTE_VALUES 256
#define SLICES 8
#define BITS_PER_BYTE 8
#define BYTE_MASK 0xffu

static uint64_t table[SLICES][BYTE_VALUES];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* The polynomial with its 64 bits in reverse order (reflected form). */
static uint64_t reflect64(uint64_t v)
{
    uint64_t r = 0;

    for (int i = 0; i < 64; i++, v >>= 1)
        r = (r << 1) | (v & 1);
    return r;
}

static void build_tables(void)
{
    uint64_t poly = reflect64(RDB_CRC64_POLY);

    for (unsigned b = 0; b < BYTE_VALUES; b++) {
        uint64_t crc = b;
        for (int i = 0; i < BITS_PER_BYTE; i++)
            crc = (crc & 1) ? (crc >> 1) ^ poly : crc >> 1;
        table[0][b] = crc;
    }
    for (unsigned b = 0; b < BYTE_VALUES; b++)
        for (int k = 1; k < SLICES; k++)
            table[k][b] = (table[k - 1][b] >> BITS_PER_BYTE) ^
                          table[0][table[k - 1][b] & BYTE_MASK];
}

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = SLICES - 1; i >= 0; i--)
        v = (v << BITS_PER_BYTE) | p[i];
    return v;
}

uint64_t rdb_crc64(uint64_t crc, const void *data, size_t len)
{
    const uint8_t *p = data;

    pthread_once(&table_once, build_tables);
    while (len >= SLICES) {
        uint64_t v = crc ^ load_le64(p);
        crc = table[7][v & BYTE_MASK] ^ table[6][(v >> 8) & BYTE_MASK] ^
              table[5][(v >> 16) & BYTE_MASK] ^
              table[4][(v >> 24) & BYTE_MASK] ^
              table[3][(v >> 32) & BYTE_MASK] ^
              table[2][(v >> 40) & BYTE_MASK] ^
              table[1][(v >> 48) & BYTE_MASK] ^ table[0][v >> 56];
        p += SLICES;
        len -= SLICES;
    }
    while (len--)
        crc = table[0][(crc ^ *p++) & BYTE_MASK] ^ (crc >> BITS_PER_BYTE);
    return crc;
}
