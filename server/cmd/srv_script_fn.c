/*
 * srv_script_fn.c - function libraries: FUNCTION LOAD / LIST / DELETE /
 * FLUSH / DUMP / RESTORE / STATS and FCALL / FCALL_RO.
 *
 * The libraries' code lives in LMDB (st_script.h), persistent; every
 * change bumps their generation. Each worker compiles all of them into a
 * Lua engine of its own and, before any FUNCTION or FCALL command, checks
 * the generation in its transaction: a change made anywhere (or a rewind
 * of its own change) makes it load them again, so every worker runs what
 * is committed. FUNCTION DUMP and RESTORE use Redis's payload: each
 * library's code as an RDB function record (opcode 245, RDB string), the
 * RDB version (10) and a CRC-64 (Jones), so payloads move between Redis
 * and larder either way (RESTORE also reads LZF-compressed strings).
 */
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_script.h"
#include "server/cmd/srv_script_lua.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_dict.h"
#include "server/srv_group.h"
#include "server/srv_log.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "server/srv_worker.h"
#include "storage/st_err.h"
#include "storage/st_script.h"
#include "storage/st_txn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERR_MAX 1024
#define GEN_STALE UINT64_MAX
#define RDB_OPCODE_FUNCTION2 245
#define RDB_OPCODE_FUNCTION_PRE_GA 246
#define RDB_VERSION 10
#define RDB_FOOTER 10 /* version (2) + CRC-64 (8) */
#define RDB_ENC_LZF 3
#define CRC64_POLY_REFLECTED 0x95ac9329ac4bc9b5ull
#define RUNNING_NAME_MAX 128

typedef struct fn {
    srv_lua_fn f;     /* name, desc (owned), flags, ref */
    unsigned learned; /* SRV_SCRIPT_LEARNED_* */
    struct lib *lib;
} fn;

typedef struct lib {
    char *name;
    char *code;
    size_t clen;
    fn **fns;
    int nfns;
    struct lib *next; /* name order */
} lib;

static struct {
    srv_lua *engine;
    uint64_t gen; /* LMDB generation loaded; GEN_STALE: load again */
    lib *libs;
    srv_dict fns; /* function name -> fn */
    int nlibs, nfns;
} fx = { .gen = GEN_STALE };

/* ---- the worker's compiled libraries ---- */

static void free_lib(lib *l)
{
    for (int i = 0; i < l->nfns; i++) {
        free(l->fns[i]->f.name);
        free(l->fns[i]->f.desc);
        free(l->fns[i]);
    }
    free(l->fns);
    free(l->name);
    free(l->code);
    free(l);
}

static void drop_all(void)
{
    while (fx.libs) {
        lib *n = fx.libs->next;
        free_lib(fx.libs);
        fx.libs = n;
    }
    srv_dict_clear(&fx.fns, NULL);
    srv_lua_destroy(&fx.engine);
    fx.nlibs = fx.nfns = 0;
}

static int name_valid(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_'))
            return 0;
    }
    return 1;
}

/* Parse "#!lua name=<lib>" into name: 0, or -1 with Redis's error. */
static int parse_meta(const char *code, size_t len, char *name, size_t size,
                      char *err, size_t errlen)
{
    const char *nl, *p, *end, *w;
    int have_name = 0;

    if (len < 2 || code[0] != '#' || code[1] != '!') {
        snprintf(err, errlen, "ERR Missing library metadata");
        return -1;
    }
    if (!(nl = memchr(code, '\n', len))) {
        snprintf(err, errlen, "ERR Invalid library metadata");
        return -1;
    }
    p = code + 2;
    end = nl;
    w = p;
    while (p < end && *p != ' ')
        p++;
    if ((size_t)(p - w) != 3 || strncasecmp(w, "lua", 3) != 0) {
        snprintf(err, errlen, "ERR Engine '%.*s' not found", (int)(p - w), w);
        return -1;
    }
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\r'))
            p++;
        if (p == end)
            break;
        w = p;
        while (p < end && *p != ' ' && *p != '\r')
            p++;
        if ((size_t)(p - w) > 5 && memcmp(w, "name=", 5) == 0) {
            size_t n = (size_t)(p - w) - 5;
            if (n >= size)
                n = size - 1;
            memcpy(name, w + 5, n);
            name[n] = '\0';
            have_name = 1;
        } else {
            snprintf(err, errlen, "ERR Invalid metadata value given: %.*s",
                     (int)(p - w), w);
            return -1;
        }
    }
    if (!have_name) {
        snprintf(err, errlen, "ERR Library name was not given");
        return -1;
    }
    if (!name_valid(name, strlen(name))) {
        snprintf(err, errlen,
                 "ERR Library names can only contain letters, numbers, or "
                 "underscores(_) and must be at least one character long");
        return -1;
    }
    return 0;
}

typedef struct loading {
    lib *l;
    const char *replacing; /* the library a REPLACE drops, or NULL */
} loading;

static fn *find_fn(const char *name, size_t n)
{
    srv_dict_entry *e = srv_dict_find(&fx.fns, name, n, srv_dict_hash(name, n));
    return e ? e->val : NULL;
}

static int on_register(void *ctx, const srv_lua_fn *f, char *err, size_t errlen)
{
    loading *ld = ctx;
    lib *l = ld->l;
    size_t n = strlen(f->name);
    fn *x, **grown;

    if (!name_valid(f->name, n)) { /* (Redis's text says "Library") */
        snprintf(err, errlen,
                 "Library names can only contain letters, numbers, or "
                 "underscores(_) and must be at least one character long");
        return -1;
    }
    for (int i = 0; i < l->nfns; i++)
        if (!strcmp(l->fns[i]->f.name, f->name)) {
            snprintf(err, errlen, "Function already exists in the library");
            return -1;
        }
    if (!(x = calloc(1, sizeof *x)) ||
        !(grown = realloc(l->fns, (size_t)(l->nfns + 1) * sizeof *grown))) {
        free(x);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->fns = grown;
    x->f = *f;
    x->f.name = strdup(f->name);
    x->f.desc = f->desc ? strdup(f->desc) : NULL;
    x->lib = l;
    l->fns[l->nfns++] = x;
    return 0;
}

static void unlink_lib(lib *l)
{
    for (lib **p = &fx.libs; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            break;
        }
    for (int i = 0; i < l->nfns; i++) {
        srv_dict_entry *e = srv_dict_find(
            &fx.fns, l->fns[i]->f.name, strlen(l->fns[i]->f.name),
            srv_dict_hash(l->fns[i]->f.name, strlen(l->fns[i]->f.name)));
        if (e && e->val == l->fns[i])
            srv_dict_remove(&fx.fns, e);
        srv_lua_unref(fx.engine, l->fns[i]->f.ref);
    }
    fx.nlibs--;
    fx.nfns -= l->nfns;
}

static lib *find_lib(const char *name)
{
    for (lib *l = fx.libs; l; l = l->next)
        if (!strcmp(l->name, name))
            return l;
    return NULL;
}

/*
 * Compile library code into the engine and link it in (dropping a
 * library of the same name when `replace`): the new library, or NULL with
 * err filled.
 */
static lib *compile_lib(const char *code, size_t len, int replace,
                        int restoring, char *err, size_t errlen)
{
    char name[ST_FUNC_NAME_MAX + 1];
    loading ld = { 0 };
    lib *l, *old;

    if (parse_meta(code, len, name, sizeof name, err, errlen))
        return NULL;
    if ((old = find_lib(name)) && !replace) {
        snprintf(err, errlen,
                 restoring ? "ERR Library %s already exists"
                           : "ERR Library '%s' already exists",
                 name);
        return NULL;
    }
    if (!fx.engine && !(fx.engine = srv_lua_create(SRV_LUA_FUNCTIONS))) {
        snprintf(err, errlen, "ERR out of memory");
        return NULL;
    }
    if (!(l = calloc(1, sizeof *l)) || !(l->name = strdup(name)) ||
        !(l->code = malloc(len ? len : 1))) {
        if (l) {
            free(l->name);
            free(l);
        }
        snprintf(err, errlen, "ERR out of memory");
        return NULL;
    }
    memcpy(l->code, code, len);
    l->clen = len;
    ld.l = l;
    ld.replacing = old ? old->name : NULL;
    if (srv_lua_load_library(fx.engine, code, len, on_register, &ld, err,
                             errlen) ||
        (l->nfns == 0 &&
         snprintf(err, errlen, "ERR No functions registered") > 0)) {
        for (int i = 0; i < l->nfns; i++)
            srv_lua_unref(fx.engine, l->fns[i]->f.ref);
        free_lib(l);
        return NULL;
    }
    /* A name another library has (not the one replaced) is refused. */
    for (int i = 0; i < l->nfns; i++) {
        fn *x = find_fn(l->fns[i]->f.name, strlen(l->fns[i]->f.name));
        if (x && x->lib != old) {
            snprintf(err, errlen, "ERR Function %s already exists",
                     l->fns[i]->f.name);
            for (int j = 0; j < l->nfns; j++)
                srv_lua_unref(fx.engine, l->fns[j]->f.ref);
            free_lib(l);
            return NULL;
        }
    }
    if (old) {
        unlink_lib(old);
        free_lib(old);
    }
    /* link in name order, index its functions */
    lib **p = &fx.libs;
    while (*p && strcmp((*p)->name, l->name) < 0)
        p = &(*p)->next;
    l->next = *p;
    *p = l;
    for (int i = 0; i < l->nfns; i++) {
        const char *fnm = l->fns[i]->f.name;
        srv_dict_entry *e = srv_dict_add(&fx.fns, fnm, strlen(fnm),
                                         srv_dict_hash(fnm, strlen(fnm)));
        if (e)
            e->val = l->fns[i];
    }
    fx.nlibs++;
    fx.nfns += l->nfns;
    return l;
}

static int load_one(void *ctx, const char *name, size_t nlen,
                    const uint8_t *code, size_t clen)
{
    char err[ERR_MAX];

    if (!compile_lib((const char *)code, clen, 1, 0, err, sizeof err))
        srv_log(SRV_LOG_WARNING, 0, "function library '%.*s' not loaded: %s",
                (int)nlen, name, err);
    return 0;
}

/* Bring the compiled libraries in line with LMDB as t sees it. */
static int sync_libs(struct st_txn *t)
{
    uint64_t gen;
    int rc = st_func_generation(t, &gen);

    if (rc)
        return rc;
    if (gen == fx.gen)
        return 0;
    drop_all();
    if ((rc = st_func_each(t, load_one, NULL)))
        return rc;
    fx.gen = gen;
    return 0;
}

/* The read transaction, libraries in sync; NULL after replying. */
static struct st_txn *synced_or_reply(srv_conn *c, int write)
{
    struct st_txn *t = write ? srv_txn_write_or_reply(c)
                             : srv_txn_read_or_reply(c);
    int rc;

    if (t && (rc = sync_libs(t))) {
        srv_txn_error(c, rc);
        return NULL;
    }
    return t;
}

/* ---- FCALL ---- */

void srv_script_fcall(srv_conn *c, int ro)
{
    long long nkeys;
    fn *f;

    if (!synced_or_reply(c, 0))
        return;
    if (!(f = find_fn(c->argv[1].ptr, c->argv[1].len))) {
        srv_reply_error(c, "ERR Function not found");
        return;
    }
    if (srv_script_numkeys_or_reply(c, 1, &nkeys))
        return;
    srv_script_run(c, fx.engine, f->f.ref, f->f.name,
                   f->f.flags | SRV_LUA_FLAG_SHEBANG, &f->learned, 1, ro,
                   (int)nkeys, c->argv + 3, c->argc - 3 - (int)nkeys,
                   c->argv + 3 + nkeys);
}

/* ---- FUNCTION LOAD / DELETE / FLUSH ---- */

/* After a change stored in t: every worker (this one included) loads the
 * libraries again from what commits. */
static void changed(srv_conn *c)
{
    fx.gen = GEN_STALE;
    srv_group_commit_after(&c->worker->group);
}

void srv_script_function_load(srv_conn *c)
{
    char err[ERR_MAX];
    int replace = 0, rc;
    struct st_txn *t;
    lib *l;

    if (c->argc > 4 ||
        (c->argc == 4 &&
         !srv_util_streq(c->argv[2].ptr, c->argv[2].len, "replace"))) {
        srv_reply_errorf(c, "ERR Unknown option given: %.*s",
                         (int)c->argv[2].len, c->argv[2].ptr);
        return;
    }
    replace = c->argc == 4;
    if (!(t = synced_or_reply(c, 1)))
        return;
    const srv_slice *code = &c->argv[c->argc - 1];
    if (!(l = compile_lib(code->ptr, code->len, replace, 0, err, sizeof err))) {
        srv_reply_error(c, err);
        return;
    }
    if ((rc = st_func_put(t, l->name, strlen(l->name), code->ptr, code->len))) {
        fx.gen = GEN_STALE;
        srv_txn_error(c, rc);
        return;
    }
    changed(c);
    srv_reply_bulk_cstr(c, l->name);
}

void srv_script_function_delete(srv_conn *c)
{
    struct st_txn *t = synced_or_reply(c, 1);
    int rc;

    if (!t)
        return;
    rc = st_func_delete(t, c->argv[2].ptr, c->argv[2].len);
    if (rc == ST_ENOTFOUND) {
        srv_reply_error(c, "ERR Library not found");
        return;
    }
    if (rc) {
        srv_txn_error(c, rc);
        return;
    }
    changed(c);
    srv_reply_ok(c);
}

/* FLUSH's and RESTORE's [ASYNC|SYNC] or policy argument. */
static int flush_mode_ok(const srv_slice *a)
{
    return srv_util_streq(a->ptr, a->len, "async") ||
           srv_util_streq(a->ptr, a->len, "sync");
}

void srv_script_function_flush(srv_conn *c)
{
    struct st_txn *t;
    int rc;

    if (c->argc > 3 || (c->argc == 3 && !flush_mode_ok(&c->argv[2]))) {
        srv_reply_error(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC "
                           "option");
        return;
    }
    if (!(t = srv_txn_write_or_reply(c)))
        return;
    if ((rc = st_func_flush(t))) {
        srv_txn_error(c, rc);
        return;
    }
    changed(c);
    srv_reply_ok(c);
}

/* ---- FUNCTION LIST / STATS ---- */

static void reply_flags(srv_conn *c, unsigned flags)
{
    int n = 0;

    for (unsigned bit = 1; bit <= SRV_LUA_FLAG_ALLOW_CROSS_SLOT; bit <<= 1)
        n += (flags & bit) && srv_lua_flag_name(bit);
    srv_reply_set(c, n);
    for (unsigned bit = 1; bit <= SRV_LUA_FLAG_ALLOW_CROSS_SLOT; bit <<= 1)
        if ((flags & bit) && srv_lua_flag_name(bit))
            srv_reply_simple(c, srv_lua_flag_name(bit));
}

void srv_script_function_list(srv_conn *c)
{
    const srv_slice *pattern = NULL;
    int withcode = 0, n = 0;

    for (int i = 2; i < c->argc; i++) {
        const srv_slice *a = &c->argv[i];
        if (srv_util_streq(a->ptr, a->len, "withcode") && !withcode) {
            withcode = 1;
        } else if (srv_util_streq(a->ptr, a->len, "libraryname") && !pattern) {
            if (i + 1 >= c->argc) {
                srv_reply_error(c, "ERR library name argument was not given");
                return;
            }
            pattern = &c->argv[++i];
        } else {
            srv_reply_errorf(c, "ERR Unknown argument %.*s", (int)a->len,
                             a->ptr);
            return;
        }
    }
    if (!synced_or_reply(c, 0))
        return;
    for (lib *l = fx.libs; l; l = l->next)
        n += !pattern || srv_util_glob_match(pattern->ptr, pattern->len,
                                             l->name, strlen(l->name), 0);
    srv_reply_array(c, n);
    for (lib *l = fx.libs; l; l = l->next) {
        if (pattern && !srv_util_glob_match(pattern->ptr, pattern->len, l->name,
                                            strlen(l->name), 0))
            continue;
        srv_reply_map(c, withcode ? 4 : 3);
        srv_reply_bulk_cstr(c, "library_name");
        srv_reply_bulk_cstr(c, l->name);
        srv_reply_bulk_cstr(c, "engine");
        srv_reply_bulk_cstr(c, "LUA");
        srv_reply_bulk_cstr(c, "functions");
        srv_reply_array(c, l->nfns);
        for (int i = 0; i < l->nfns; i++) {
            const srv_lua_fn *f = &l->fns[i]->f;
            srv_reply_map(c, 3);
            srv_reply_bulk_cstr(c, "name");
            srv_reply_bulk_cstr(c, f->name);
            srv_reply_bulk_cstr(c, "description");
            if (f->desc)
                srv_reply_bulk_cstr(c, f->desc);
            else
                srv_reply_null(c);
            srv_reply_bulk_cstr(c, "flags");
            reply_flags(c, f->flags);
        }
        if (withcode) {
            srv_reply_bulk_cstr(c, "library_code");
            srv_reply_bulk(c, l->code, l->clen);
        }
    }
}

void srv_script_function_stats(srv_conn *c)
{
    char name[RUNNING_NAME_MAX];
    long long ms;
    int function;

    if (!synced_or_reply(c, 0))
        return;
    srv_reply_map(c, 2);
    srv_reply_bulk_cstr(c, "running_script");
    if (srv_script_running(name, sizeof name, &ms, &function)) {
        srv_reply_map(c, 3);
        srv_reply_bulk_cstr(c, "name");
        srv_reply_bulk_cstr(c, name);
        srv_reply_bulk_cstr(c, "command");
        srv_reply_array(c, 1);
        srv_reply_bulk_cstr(c, function ? "fcall" : "eval");
        srv_reply_bulk_cstr(c, "duration_ms");
        srv_reply_int(c, ms);
    } else {
        srv_reply_null(c);
    }
    srv_reply_bulk_cstr(c, "engines");
    srv_reply_map(c, 1);
    srv_reply_bulk_cstr(c, "LUA");
    srv_reply_map(c, 2);
    srv_reply_bulk_cstr(c, "libraries_count");
    srv_reply_int(c, fx.nlibs);
    srv_reply_bulk_cstr(c, "functions_count");
    srv_reply_int(c, fx.nfns);
}

/* ---- FUNCTION DUMP / RESTORE ---- */

static uint64_t crc64(uint64_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (CRC64_POLY_REFLECTED & (0 - (crc & 1)));
    }
    return crc;
}

/* RDB length encoding. */
static int put_len(srv_buf *b, uint64_t n)
{
    uint8_t h[9];
    size_t k;

    if (n < (1u << 6)) {
        h[0] = (uint8_t)n;
        k = 1;
    } else if (n < (1u << 14)) {
        h[0] = (uint8_t)(0x40 | (n >> 8));
        h[1] = (uint8_t)n;
        k = 2;
    } else if (n <= UINT32_MAX) {
        h[0] = 0x80;
        for (int i = 0; i < 4; i++)
            h[1 + i] = (uint8_t)(n >> (24 - 8 * i));
        k = 5;
    } else {
        h[0] = 0x81;
        for (int i = 0; i < 8; i++)
            h[1 + i] = (uint8_t)(n >> (56 - 8 * i));
        k = 9;
    }
    return srv_buf_append(b, h, k);
}

void srv_script_function_dump(srv_conn *c)
{
    srv_buf b = { 0 };
    uint8_t tail[RDB_FOOTER];
    uint64_t crc;
    int fail = 0;

    if (!synced_or_reply(c, 0))
        return;
    for (lib *l = fx.libs; l; l = l->next) {
        uint8_t op = RDB_OPCODE_FUNCTION2;
        fail |= srv_buf_append(&b, &op, 1) || put_len(&b, l->clen) ||
                srv_buf_append(&b, l->code, l->clen);
    }
    tail[0] = RDB_VERSION & 0xff;
    tail[1] = (RDB_VERSION >> 8) & 0xff;
    fail |= srv_buf_append(&b, tail, 2);
    crc = crc64(0, (const uint8_t *)b.data, b.len);
    for (int i = 0; i < 8; i++)
        tail[2 + i] = (uint8_t)(crc >> (8 * i));
    fail |= srv_buf_append(&b, tail + 2, 8);
    if (fail)
        srv_reply_error(c, "ERR out of memory");
    else
        srv_reply_bulk(c, b.data, b.len);
    srv_buf_free(&b);
}

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
} reader;

static int get_len(reader *r, uint64_t *n, int *enc)
{
    uint8_t h;

    *enc = -1;
    if (r->at >= r->n)
        return -1;
    h = r->p[r->at++];
    switch (h >> 6) {
    case 0: *n = h & 0x3f; return 0;
    case 1:
        if (r->at >= r->n)
            return -1;
        *n = ((uint64_t)(h & 0x3f) << 8) | r->p[r->at++];
        return 0;
    case 2: {
        int k = h == 0x80 ? 4 : h == 0x81 ? 8 : 0;
        if (!k || r->n - r->at < (size_t)k)
            return -1;
        *n = 0;
        for (int i = 0; i < k; i++)
            *n = (*n << 8) | r->p[r->at++];
        return 0;
    }
    default: *enc = h & 0x3f; return 0;
    }
}

/* LZF decompression into out (exactly `want` bytes): 0 or -1. */
static int lzf_expand(const uint8_t *in, size_t n, uint8_t *out, size_t want)
{
    size_t i = 0, o = 0;

    while (i < n) {
        unsigned ctrl = in[i++];
        if (ctrl < (1u << 5)) {
            size_t run = ctrl + 1;
            if (i + run > n || o + run > want)
                return -1;
            memcpy(out + o, in + i, run);
            i += run;
            o += run;
        } else {
            size_t len = ctrl >> 5;
            if (len == 7) {
                if (i >= n)
                    return -1;
                len += in[i++];
            }
            if (i >= n)
                return -1;
            size_t back = ((ctrl & 0x1f) << 8) + in[i++] + 1;
            len += 2;
            if (back > o || o + len > want)
                return -1;
            for (size_t k = 0; k < len; k++, o++)
                out[o] = out[o - back];
        }
    }
    return o == want ? 0 : -1;
}

/* An RDB string: *s (malloc'd, caller frees) and *len; -1 malformed. */
static int get_string(reader *r, char **s, size_t *len)
{
    uint64_t n, clen, ulen;
    int enc;

    if (get_len(r, &n, &enc))
        return -1;
    if (enc == RDB_ENC_LZF) {
        if (get_len(r, &clen, &enc) || enc >= 0 || get_len(r, &ulen, &enc) ||
            enc >= 0 || r->n - r->at < clen || ulen > SIZE_MAX - 1)
            return -1;
        if (!(*s = malloc(ulen ? ulen : 1)))
            return -1;
        if (lzf_expand(r->p + r->at, clen, (uint8_t *)*s, ulen)) {
            free(*s);
            return -1;
        }
        r->at += clen;
        *len = ulen;
        return 0;
    }
    if (enc >= 0 || r->n - r->at < n) /* integer encodings: not code */
        return -1;
    if (!(*s = malloc(n ? n : 1)))
        return -1;
    memcpy(*s, r->p + r->at, n);
    r->at += n;
    *len = n;
    return 0;
}

enum restore_policy { RESTORE_APPEND, RESTORE_REPLACE, RESTORE_FLUSH };

void srv_script_function_restore(srv_conn *c)
{
    const srv_slice *pl = &c->argv[2];
    const uint8_t *p = (const uint8_t *)pl->ptr;
    enum restore_policy policy = RESTORE_APPEND;
    char err[ERR_MAX];
    struct st_txn *t;
    reader r;
    uint64_t crc = 0;
    int rc;

    if (c->argc > 4) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (c->argc == 4) {
        const srv_slice *a = &c->argv[3];
        if (srv_util_streq(a->ptr, a->len, "append"))
            policy = RESTORE_APPEND;
        else if (srv_util_streq(a->ptr, a->len, "replace"))
            policy = RESTORE_REPLACE;
        else if (srv_util_streq(a->ptr, a->len, "flush"))
            policy = RESTORE_FLUSH;
        else {
            srv_reply_error(c, "ERR Wrong restore policy given, value should "
                               "be either FLUSH, APPEND or REPLACE.");
            return;
        }
    }
    if (pl->len < RDB_FOOTER) {
        srv_reply_error(c, "ERR DUMP payload version or checksum are wrong");
        return;
    }
    for (int i = 0; i < 8; i++)
        crc |= (uint64_t)p[pl->len - 8 + (size_t)i] << (8 * i);
    unsigned ver = p[pl->len - RDB_FOOTER] |
                   (unsigned)p[pl->len - RDB_FOOTER + 1] << 8;
    if (ver > RDB_VERSION || crc64(0, p, pl->len - 8) != crc) {
        srv_reply_error(c, "ERR DUMP payload version or checksum are wrong");
        return;
    }
    if (!(t = synced_or_reply(c, 1)))
        return;
    if (policy == RESTORE_FLUSH) {
        if ((rc = st_func_flush(t))) {
            srv_txn_error(c, rc);
            return;
        }
        drop_all();
    }
    r = (reader){ p, pl->len - RDB_FOOTER, 0 };
    while (r.at < r.n) {
        char *code;
        size_t clen;
        lib *l;
        if (r.p[r.at] == RDB_OPCODE_FUNCTION_PRE_GA) {
            snprintf(err, sizeof err,
                     "ERR Pre-GA function format not "
                     "supported");
            goto fail;
        }
        if (r.p[r.at++] != RDB_OPCODE_FUNCTION2) {
            snprintf(err, sizeof err, "ERR given type is not a function");
            goto fail;
        }
        if (get_string(&r, &code, &clen)) {
            snprintf(err, sizeof err,
                     "ERR DUMP payload version or checksum "
                     "are wrong");
            goto fail;
        }
        l = compile_lib(code, clen, policy != RESTORE_APPEND, 1, err,
                        sizeof err);
        if (l && (rc = st_func_put(t, l->name, strlen(l->name), code, clen))) {
            free(code);
            fx.gen = GEN_STALE;
            srv_txn_error(c, rc);
            return;
        }
        free(code);
        if (!l)
            goto fail;
    }
    changed(c);
    srv_reply_ok(c);
    return;
fail:
    /* Nothing of a failed RESTORE stays: its transaction is lost. */
    fx.gen = GEN_STALE;
    srv_reply_error(c, err);
    if (c->worker->group.wtxn)
        srv_group_poison(&c->worker->group);
}
