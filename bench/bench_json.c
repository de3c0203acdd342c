/*
 * bench_json: streaming JSON writer (see bench_json.h).
 */
#include "bench/bench_json.h"

#include <math.h>
#include <string.h>

#define INDENT 2
#define CONTROL_LIMIT 0x20
#define ASCII_LAST 0x7e

void bench_json_init(bench_json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
}

static void put_string(bench_json *j, const char *s, size_t len)
{
    size_t i;

    fputc('"', j->f);
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];

        switch (ch) {
        case '"': fputs("\\\"", j->f); break;
        case '\\': fputs("\\\\", j->f); break;
        case '\n': fputs("\\n", j->f); break;
        case '\r': fputs("\\r", j->f); break;
        case '\t': fputs("\\t", j->f); break;
        default:
            /* Bytes past ASCII are written as Latin-1 escapes: the output
             * stays valid JSON whatever a server sends. */
            if (ch < CONTROL_LIMIT || ch > ASCII_LAST)
                fprintf(j->f, "\\u%04x", ch);
            else
                fputc(ch, j->f);
        }
    }
    fputc('"', j->f);
}

/* Comma, newline, indentation and key before a value. */
static void item(bench_json *j, const char *key)
{
    if (j->depth > 0) {
        if (j->has_items[j->depth])
            fputc(',', j->f);
        fprintf(j->f, "\n%*s", j->depth * INDENT, "");
        j->has_items[j->depth] = true;
    }
    if (key != NULL) {
        put_string(j, key, strlen(key));
        fputs(": ", j->f);
    }
}

static void open_(bench_json *j, const char *key, char ch)
{
    item(j, key);
    fputc(ch, j->f);
    if (j->depth + 1 < BENCH_JSON_MAX_DEPTH)
        j->depth++;
    j->has_items[j->depth] = false;
}

static void close_(bench_json *j, char ch)
{
    bool had = j->has_items[j->depth];

    if (j->depth > 0)
        j->depth--;
    if (had)
        fprintf(j->f, "\n%*s", j->depth * INDENT, "");
    fputc(ch, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void bench_json_object_begin(bench_json *j, const char *key)
{
    open_(j, key, '{');
}

void bench_json_object_end(bench_json *j) { close_(j, '}'); }

void bench_json_array_begin(bench_json *j, const char *key)
{
    open_(j, key, '[');
}

void bench_json_array_end(bench_json *j) { close_(j, ']'); }

void bench_json_strn(bench_json *j, const char *key, const char *v, size_t len)
{
    item(j, key);
    put_string(j, v, len);
}

void bench_json_str(bench_json *j, const char *key, const char *v)
{
    if (v == NULL) {
        bench_json_null(j, key);
        return;
    }
    bench_json_strn(j, key, v, strlen(v));
}

void bench_json_u64(bench_json *j, const char *key, uint64_t v)
{
    item(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void bench_json_i64(bench_json *j, const char *key, int64_t v)
{
    item(j, key);
    fprintf(j->f, "%lld", (long long)v);
}

void bench_json_double(bench_json *j, const char *key, double v, int digits)
{
    item(j, key);
    if (!isfinite(v))
        fputs("null", j->f);
    else
        fprintf(j->f, "%.*f", digits, v);
}

void bench_json_bool(bench_json *j, const char *key, bool v)
{
    item(j, key);
    fputs(v ? "true" : "false", j->f);
}

void bench_json_null(bench_json *j, const char *key)
{
    item(j, key);
    fputs("null", j->f);
}

void bench_json_raw(bench_json *j, const char *key, const char *text,
                    size_t len)
{
    item(j, key);
    fwrite(text, 1, len, j->f);
}
