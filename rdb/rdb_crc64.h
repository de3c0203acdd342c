/*
 * rdb_crc64.h - the CRC64 that RDB files and DUMP payloads carry: the
 * "Jones" polynomial 0xad93d23594c935a9, reflected input and output,
 * initial value 0, no final xor (check value of "123456789":
 * 0xe9c6d914c4b8d9ca). Table driven, eight bytes a step.
 */
#ifndef RDB_CRC64_H
#define RDB_CRC64_H

#include <stddef.h>
#include <stdint.h>

#define RDB_CRC64_POLY 0xad93d23594c935a9ull

/*
 * Continue a CRC `crc` (0 to start) over `len` bytes at `p`; returns the
 * new value. Pure; any thread (the tables are built on first use and are
 * identical whoever builds them).
 */
uint64_t rdb_crc64(uint64_t crc, const void *p, size_t len);

#endif
