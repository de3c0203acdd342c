/*
 * bench_json: a small streaming JSON writer for larder-bench's report:
 * it places commas and indentation, escapes strings, and writes
 * non-finite numbers as null.  Keys are given with each value; pass NULL
 * inside arrays and for the top-level value.
 */
#ifndef BENCH_JSON_H
#define BENCH_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_JSON_MAX_DEPTH 16

typedef struct bench_json {
    FILE *f;
    int depth;
    bool has_items[BENCH_JSON_MAX_DEPTH];
} bench_json;

void bench_json_init(bench_json *j, FILE *f);
void bench_json_object_begin(bench_json *j, const char *key);
void bench_json_object_end(bench_json *j);
void bench_json_array_begin(bench_json *j, const char *key);
void bench_json_array_end(bench_json *j);
/* A string value; v == NULL writes null. */
void bench_json_str(bench_json *j, const char *key, const char *v);
void bench_json_strn(bench_json *j, const char *key, const char *v, size_t len);
void bench_json_u64(bench_json *j, const char *key, uint64_t v);
void bench_json_i64(bench_json *j, const char *key, int64_t v);
/* A number with up to 'digits' decimals; NaN and infinities write null. */
void bench_json_double(bench_json *j, const char *key, double v, int digits);
void bench_json_bool(bench_json *j, const char *key, bool v);
void bench_json_null(bench_json *j, const char *key);
/* A number given as text already known to be valid JSON. */
void bench_json_raw(bench_json *j, const char *key, const char *text,
                    size_t len);

#endif /* BENCH_JSON_H */
