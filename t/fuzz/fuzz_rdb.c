/*
 * fuzz_rdb.c - libFuzzer target for the RDB codec (rdb/), the decoder a
 * client's RESTORE payload reaches: the input is taken as a DUMP payload
 * (type byte and object; the trailer check is skipped so every input
 * reaches the decoder) and as a whole RDB file. No input may read out of
 * bounds, leak or crash; a decoded string or element is touched byte by
 * byte so a bad pointer shows.
 */
#include "rdb/rdb_err.h"
#include "rdb/rdb_file.h"
#include "rdb/rdb_io.h"
#include "rdb/rdb_obj.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_STRING (1u << 20)

static volatile uint8_t sink_byte;

static void touch(const uint8_t *p, size_t n)
{
    uint8_t x = 0;

    for (size_t i = 0; i < n; i++)
        x ^= p[i];
    sink_byte = x;
}

static int f_string(void *ctx, const uint8_t *p, size_t n)
{
    touch(p, n);
    return 0;
}

static int f_pair(void *ctx, const uint8_t *f, size_t fn, const uint8_t *v,
                  size_t vn)
{
    touch(f, fn);
    touch(v, vn);
    return 0;
}

static int f_scored(void *ctx, const uint8_t *m, size_t mn, double s)
{
    touch(m, mn);
    return 0;
}

static const rdb_sink values = {
    .string = f_string, .elem = f_string, .pair = f_pair, .scored = f_scored
};

static int f_key(void *ctx, uint64_t db, const uint8_t *name, size_t n,
                 int type, int64_t expire, const rdb_sink **obj)
{
    touch(name, n);
    *obj = &values;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rdb_file_sink fs = { .key = f_key };
    rdb_scratch sc = { 0 };
    rdb_buf kb = { 0 };
    rdb_reader r;
    int version;

    if (size >= 1) {
        rdb_reader_mem(&r, data + 1, size - 1, MAX_STRING);
        rdb_obj_decode(&r, data[0], &values, &sc);
        rdb_dump_verify(data, size);
    }
    rdb_reader_mem(&r, data, size, MAX_STRING);
    rdb_file_read(&r, &fs, &sc, &kb, &version);
    rdb_scratch_free(&sc);
    rdb_buf_free(&kb);
    return 0;
}
