/*
 * srv_script_libs.c - struct and cmsgpack for scripts (see the header).
 *
 * struct: a format is a sequence of options, each with an optional size:
 * > < = endianness, ![n] maximum alignment (default: none until given;
 * "!" alone 8), x one zero byte, b B h H l L T i[n] I[n] integers (lower
 * case signed; i/I of n bytes, 4 by default, at most 32), f d floats, c[n]
 * n raw bytes (c0: the whole string when packing, the length unpacked
 * just before when unpacking), s a zero-terminated string, spaces
 * ignored. Items are aligned to min(their size, the maximum alignment).
 *
 * cmsgpack: numbers that are whole and fit 64 bits pack as the smallest
 * integer, other numbers as float 32 when exact, else float 64; strings
 * as fixstr / str 8 / 16 / 32; a table whose keys are exactly 1..n as an
 * array, any other as a map; tables nested deeper than 16 and values of
 * other types as nil.
 */
#include "server/cmd/srv_script_libs.h"

#include <lauxlib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- struct ---- */

#define STRUCT_MAXINT 32  /* longest integer option */
#define STRUCT_MAXALIGN 8 /* "!" without a number */
#define STRUCT_INT_DEFAULT 4
#define BYTE_BITS 8

typedef struct fmt_state {
    int little;
    int align;
} fmt_state;

static int read_num(const char **f, int dflt)
{
    int n = 0;

    if (**f < '0' || **f > '9')
        return dflt;
    while (**f >= '0' && **f <= '9' && n < 1000000)
        n = n * 10 + (*(*f)++ - '0');
    return n;
}

/* The size of option `opt` (its digits read from *f), or -1 for 's'. */
static int opt_size(lua_State *L, int opt, const char **f, fmt_state *h)
{
    switch (opt) {
    case 'B':
    case 'b': return 1;
    case 'H':
    case 'h': return 2;
    case 'L':
    case 'l': return (int)sizeof(long);
    case 'T': return (int)sizeof(size_t);
    case 'f': return (int)sizeof(float);
    case 'd': return (int)sizeof(double);
    case 'x': return 1;
    case 'c': return read_num(f, 1);
    case 'i':
    case 'I': {
        int n = read_num(f, STRUCT_INT_DEFAULT);
        if (n > STRUCT_MAXINT)
            luaL_error(L, "integral size %d is larger than limit of %d", n,
                       STRUCT_MAXINT);
        return n;
    }
    default: return 0;
    }
}

/* Options without data: endianness, alignment, space. 1 if consumed. */
static int control(lua_State *L, int opt, const char **f, fmt_state *h)
{
    switch (opt) {
    case ' ': return 1;
    case '>': h->little = 0; return 1;
    case '<':
    case '=': h->little = 1; return 1;
    case '!': {
        int a = read_num(f, STRUCT_MAXALIGN);
        if (a <= 0 || (a & (a - 1)))
            luaL_error(L, "alignment %d is not a power of 2", a);
        h->align = a;
        return 1;
    }
    default: return 0;
    }
}

static size_t pad_for(size_t pos, const fmt_state *h, int opt, int size)
{
    int a = size;

    if (a <= 1 || opt == 'c' || opt == 's')
        return 0;
    if (a > h->align)
        a = h->align;
    if (a <= 1)
        return 0;
    return ((size_t)a - (pos & ((size_t)a - 1))) & ((size_t)a - 1);
}

static void put_int(luaL_Buffer *b, lua_Number n, int little, int size)
{
    uint64_t v = n < 0 ? (uint64_t)(int64_t)n : (uint64_t)n;
    char buf[STRUCT_MAXINT];

    for (int i = 0; i < size; i++) {
        buf[little ? i : size - 1 - i] = (char)(v & 0xff);
        v = i < 7 ? v >> BYTE_BITS : 0;
    }
    luaL_addlstring(b, buf, (size_t)size);
}

static void swap_if(char *p, int size, int little)
{
    if (little) /* x86: native is little-endian */
        return;
    for (int i = 0; i < size / 2; i++) {
        char t = p[i];
        p[i] = p[size - 1 - i];
        p[size - 1 - i] = t;
    }
}

static int st_pack(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    fmt_state h = { 1, 1 };
    int arg = 2;
    size_t pos = 0;
    luaL_Buffer b;

    luaL_buffinit(L, &b);
    while (*f) {
        int opt = *f++;
        if (control(L, opt, &f, &h))
            continue;
        int size = opt == 's' ? 0 : opt_size(L, opt, &f, &h);
        if (size == 0 && opt != 's' && opt != 'c')
            luaL_argerror(L, 1,
                          lua_pushfstring(L,
                                          "invalid format option "
                                          "'%c'",
                                          opt));
        size_t pad = pad_for(pos, &h, opt, size);
        for (size_t i = 0; i < pad; i++)
            luaL_addchar(&b, '\0');
        pos += pad;
        switch (opt) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I':
            put_int(&b, luaL_checknumber(L, arg++), h.little, size);
            break;
        case 'x': luaL_addchar(&b, '\0'); break;
        case 'f': {
            float v = (float)luaL_checknumber(L, arg++);
            swap_if((char *)&v, size, h.little);
            luaL_addlstring(&b, (char *)&v, (size_t)size);
            break;
        }
        case 'd': {
            double v = luaL_checknumber(L, arg++);
            swap_if((char *)&v, size, h.little);
            luaL_addlstring(&b, (char *)&v, (size_t)size);
            break;
        }
        case 'c':
        case 's': {
            size_t l;
            const char *s = luaL_checklstring(L, arg++, &l);
            if (opt == 's') {
                luaL_addlstring(&b, s, l + 1);
                size = (int)(l + 1);
                break;
            }
            if (size == 0)
                size = (int)l;
            luaL_argcheck(L, l >= (size_t)size, arg, "string too short");
            luaL_addlstring(&b, s, (size_t)size);
            break;
        }
        }
        pos += (size_t)size;
    }
    luaL_pushresult(&b);
    return 1;
}

static lua_Number get_int(lua_State *L, const char *p, int little,
                          int is_signed, int size)
{
    uint64_t v = 0;

    for (int i = size - 1; i >= 0; i--) {
        unsigned char byte = (unsigned char)p[little ? i : size - 1 - i];
        if (i >= 8) {
            unsigned char fill = is_signed && (int64_t)v < 0 ? 0xff : 0;
            if (byte != 0 && byte != 0xff && byte != fill)
                luaL_error(L, "%d-byte integer does not fit into Lua Integer",
                           size);
            continue;
        }
        v = (v << BYTE_BITS) | byte;
    }
    if (is_signed && size < 8) {
        uint64_t mask = ~(uint64_t)0 << (size * BYTE_BITS - 1);
        if (v & mask)
            return (lua_Number)(int64_t)(v | mask);
        return (lua_Number)v;
    }
    return is_signed ? (lua_Number)(int64_t)v : (lua_Number)v;
}

static int st_unpack(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    size_t ld;
    const char *data = luaL_checklstring(L, 2, &ld);
    size_t pos = (size_t)luaL_optinteger(L, 3, 1) - 1;
    fmt_state h = { 1, 1 };
    int n = 0;

    luaL_argcheck(L, pos <= ld, 3, "offset must be 1 or greater");
    while (*f) {
        int opt = *f++;
        if (control(L, opt, &f, &h))
            continue;
        int size = opt == 's' ? 0 : opt_size(L, opt, &f, &h);
        if (size == 0 && opt != 's' && opt != 'c')
            luaL_argerror(L, 1,
                          lua_pushfstring(L,
                                          "invalid format option "
                                          "'%c'",
                                          opt));
        pos += pad_for(pos, &h, opt, size);
        luaL_checkstack(L, 2, "too many results");
        switch (opt) {
        case 'b':
        case 'B':
        case 'h':
        case 'H':
        case 'l':
        case 'L':
        case 'T':
        case 'i':
        case 'I':
            luaL_argcheck(L, pos + (size_t)size <= ld, 2,
                          "data string too short");
            lua_pushnumber(L, get_int(L, data + pos, h.little,
                                      opt >= 'a' && opt <= 'z', size));
            n++;
            break;
        case 'x': break;
        case 'f': {
            float v;
            luaL_argcheck(L, pos + (size_t)size <= ld, 2,
                          "data string too short");
            memcpy(&v, data + pos, sizeof v);
            swap_if((char *)&v, size, h.little);
            lua_pushnumber(L, v);
            n++;
            break;
        }
        case 'd': {
            double v;
            luaL_argcheck(L, pos + (size_t)size <= ld, 2,
                          "data string too short");
            memcpy(&v, data + pos, sizeof v);
            swap_if((char *)&v, size, h.little);
            lua_pushnumber(L, v);
            n++;
            break;
        }
        case 'c':
            if (size == 0) {
                if (n == 0 || !lua_isnumber(L, -1))
                    luaL_error(L, "format 'c0' needs a previous size");
                size = (int)lua_tonumber(L, -1);
                lua_pop(L, 1);
                n--;
            }
            luaL_argcheck(L, pos + (size_t)size <= ld, 2,
                          "data string too short");
            lua_pushlstring(L, data + pos, (size_t)size);
            n++;
            break;
        case 's': {
            const char *e = memchr(data + pos, '\0', ld - pos);
            if (!e)
                luaL_error(L, "unfinished string in data");
            size = (int)(e - (data + pos)) + 1;
            lua_pushlstring(L, data + pos, (size_t)size - 1);
            n++;
            break;
        }
        }
        pos += (size_t)size;
    }
    lua_pushinteger(L, (lua_Integer)pos + 1);
    return n + 1;
}

static int st_size(lua_State *L)
{
    const char *f = luaL_checkstring(L, 1);
    fmt_state h = { 1, 1 };
    size_t pos = 0;

    while (*f) {
        int opt = *f++;
        if (control(L, opt, &f, &h))
            continue;
        int size = opt == 's' ? 0 : opt_size(L, opt, &f, &h);
        if (opt == 's' || (opt == 'c' && size == 0))
            luaL_argerror(L, 1,
                          lua_pushfstring(L,
                                          "option '%c' has no fixed "
                                          "size",
                                          opt));
        if (size == 0)
            luaL_argerror(L, 1,
                          lua_pushfstring(L,
                                          "invalid format option "
                                          "'%c'",
                                          opt));
        pos += pad_for(pos, &h, opt, size) + (size_t)size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

int srv_script_luaopen_struct(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "pack", st_pack },
        { "unpack", st_unpack },
        { "size", st_size },
        { NULL, NULL },
    };

    lua_newtable(L);
    luaL_register(L, NULL, fns);
    return 1;
}

/* ---- cmsgpack ---- */

#define MP_MAX_NESTING 16
#define MP_FIXMAP_MAX 15
#define MP_FIXARRAY_MAX 15
#define MP_FIXSTR_MAX 31

static void mp_bytes(luaL_Buffer *b, const void *p, size_t n)
{
    luaL_addlstring(b, p, n);
}

static void mp_be(luaL_Buffer *b, unsigned char tag, uint64_t v, int n)
{
    unsigned char buf[9];

    buf[0] = tag;
    for (int i = 0; i < n; i++)
        buf[1 + i] = (unsigned char)(v >> (BYTE_BITS * (n - 1 - i)));
    mp_bytes(b, buf, (size_t)n + 1);
}

static void mp_int(luaL_Buffer *b, int64_t v)
{
    if (v >= 0) {
        if (v < 128) {
            unsigned char c = (unsigned char)v;
            mp_bytes(b, &c, 1);
        } else if (v <= 0xff) {
            mp_be(b, 0xcc, (uint64_t)v, 1);
        } else if (v <= 0xffff) {
            mp_be(b, 0xcd, (uint64_t)v, 2);
        } else if (v <= 0xffffffffll) {
            mp_be(b, 0xce, (uint64_t)v, 4);
        } else {
            mp_be(b, 0xcf, (uint64_t)v, 8);
        }
    } else if (v >= -32) {
        unsigned char c = (unsigned char)(int8_t)v;
        mp_bytes(b, &c, 1);
    } else if (v >= -128) {
        mp_be(b, 0xd0, (uint64_t)v, 1);
    } else if (v >= -32768) {
        mp_be(b, 0xd1, (uint64_t)v, 2);
    } else if (v >= -2147483648ll) {
        mp_be(b, 0xd2, (uint64_t)v, 4);
    } else {
        mp_be(b, 0xd3, (uint64_t)v, 8);
    }
}

static void mp_number(luaL_Buffer *b, lua_Number n)
{
    if (!isinf(n) && !isnan(n) && n >= -9223372036854775808.0 &&
        n < 9223372036854775808.0 && (lua_Number)(int64_t)n == n) {
        mp_int(b, (int64_t)n);
    } else if ((lua_Number)(float)n == n) {
        float f = (float)n;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        mp_be(b, 0xca, u, 4);
    } else {
        uint64_t u;
        memcpy(&u, &n, sizeof u);
        mp_be(b, 0xcb, u, 8);
    }
}

static void mp_len(luaL_Buffer *b, size_t n, unsigned char fix, size_t fixmax,
                   unsigned char t8, unsigned char t16, unsigned char t32)
{
    if (n <= fixmax) {
        unsigned char c = (unsigned char)(fix | n);
        mp_bytes(b, &c, 1);
    } else if (t8 && n <= 0xff) {
        mp_be(b, t8, n, 1);
    } else if (n <= 0xffff) {
        mp_be(b, t16, n, 2);
    } else {
        mp_be(b, t32, n, 4);
    }
}

/* Keys exactly 1..n: the array length n, else -1. */
static long array_len(lua_State *L, int t)
{
    long count = 0, max = 0;

    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TNUMBER) {
            lua_pop(L, 1);
            return -1;
        }
        lua_Number k = lua_tonumber(L, -1);
        if (k <= 0 || (lua_Number)(long)k != k) {
            lua_pop(L, 1);
            return -1;
        }
        if ((long)k > max)
            max = (long)k;
        count++;
    }
    return max == count ? count : -1;
}

static void mp_encode(lua_State *L, luaL_Buffer *b, int idx, int level);

static void mp_table(lua_State *L, luaL_Buffer *b, int t, int level)
{
    long n = array_len(L, t);

    if (n >= 0) {
        mp_len(b, (size_t)n, 0x90, MP_FIXARRAY_MAX, 0, 0xdc, 0xdd);
        for (long i = 1; i <= n; i++) {
            lua_rawgeti(L, t, (int)i);
            mp_encode(L, b, lua_gettop(L), level + 1);
            lua_pop(L, 1);
        }
        return;
    }
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        count++;
    }
    mp_len(b, count, 0x80, MP_FIXMAP_MAX, 0, 0xde, 0xdf);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        int top = lua_gettop(L);
        mp_encode(L, b, top - 1, level + 1);
        mp_encode(L, b, top, level + 1);
        lua_pop(L, 1);
    }
}

static void mp_encode(lua_State *L, luaL_Buffer *b, int idx, int level)
{
    unsigned char c;

    luaL_checkstack(L, 4, "too deep to encode");
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        c = lua_toboolean(L, idx) ? 0xc3 : 0xc2;
        mp_bytes(b, &c, 1);
        return;
    case LUA_TNUMBER: mp_number(b, lua_tonumber(L, idx)); return;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        mp_len(b, n, 0xa0, MP_FIXSTR_MAX, 0xd9, 0xda, 0xdb);
        mp_bytes(b, s, n);
        return;
    }
    case LUA_TTABLE:
        if (level < MP_MAX_NESTING) {
            mp_table(L, b, idx, level);
            return;
        }
        break;
    default: break;
    }
    c = 0xc0;
    mp_bytes(b, &c, 1);
}

/*
 * luaL_Buffer keeps pieces on the Lua stack: encode each value into its
 * own string first, so the buffer's stack use never mixes with the
 * values' (a table's traversal pushes and pops under it).
 */
static int mp_pack(lua_State *L)
{
    int n = lua_gettop(L);

    if (n == 0)
        return luaL_argerror(L, 0, "MessagePack pack needs input.");
    for (int i = 1; i <= n; i++) {
        luaL_Buffer b;
        lua_pushvalue(L, i);
        int v = lua_gettop(L);
        luaL_buffinit(L, &b);
        mp_encode(L, &b, v, 0);
        luaL_pushresult(&b);
        lua_replace(L, v);
    }
    lua_concat(L, n);
    return 1;
}

typedef struct mp_cur {
    const unsigned char *p;
    size_t left;
    int err; /* 1 missing bytes, 2 bad format */
} mp_cur;

static uint64_t mp_read_be(mp_cur *c, int n)
{
    uint64_t v = 0;

    if (c->left < (size_t)n) {
        c->err = 1;
        return 0;
    }
    for (int i = 0; i < n; i++)
        v = (v << BYTE_BITS) | c->p[i];
    c->p += n;
    c->left -= (size_t)n;
    return v;
}

static void mp_decode(lua_State *L, mp_cur *c);

static void mp_decode_str(lua_State *L, mp_cur *c, size_t n)
{
    if (c->err)
        return;
    if (c->left < n) {
        c->err = 1;
        return;
    }
    lua_pushlstring(L, (const char *)c->p, n);
    c->p += n;
    c->left -= n;
}

static void mp_decode_array(lua_State *L, mp_cur *c, size_t n)
{
    if (c->err)
        return;
    lua_newtable(L);
    for (size_t i = 1; i <= n && !c->err; i++) {
        mp_decode(L, c);
        if (!c->err)
            lua_rawseti(L, -2, (int)i);
    }
}

static void mp_decode_map(lua_State *L, mp_cur *c, size_t n)
{
    if (c->err)
        return;
    lua_newtable(L);
    for (size_t i = 0; i < n && !c->err; i++) {
        mp_decode(L, c);
        if (c->err)
            return;
        mp_decode(L, c);
        if (c->err) {
            lua_pop(L, 1);
            return;
        }
        lua_settable(L, -3);
    }
}

static void mp_decode(lua_State *L, mp_cur *c)
{
    unsigned t;

    luaL_checkstack(L, 4, "too deep to decode");
    if (c->left < 1) {
        c->err = 1;
        return;
    }
    t = *c->p++;
    c->left--;
    if (t <= 0x7f) {
        lua_pushnumber(L, t);
    } else if (t >= 0xe0) {
        lua_pushnumber(L, (int8_t)t);
    } else if ((t & 0xe0) == 0xa0) {
        mp_decode_str(L, c, t & 0x1f);
    } else if ((t & 0xf0) == 0x90) {
        mp_decode_array(L, c, t & 0x0f);
    } else if ((t & 0xf0) == 0x80) {
        mp_decode_map(L, c, t & 0x0f);
    } else {
        uint64_t v;
        switch (t) {
        case 0xc0: lua_pushnil(L); return;
        case 0xc2: lua_pushboolean(L, 0); return;
        case 0xc3: lua_pushboolean(L, 1); return;
        case 0xc4:
        case 0xd9:
            v = mp_read_be(c, 1);
            mp_decode_str(L, c, (size_t)v);
            return;
        case 0xc5:
        case 0xda:
            v = mp_read_be(c, 2);
            mp_decode_str(L, c, (size_t)v);
            return;
        case 0xc6:
        case 0xdb:
            v = mp_read_be(c, 4);
            mp_decode_str(L, c, (size_t)v);
            return;
        case 0xca: {
            uint32_t u = (uint32_t)mp_read_be(c, 4);
            float f;
            memcpy(&f, &u, sizeof f);
            if (!c->err)
                lua_pushnumber(L, f);
            return;
        }
        case 0xcb: {
            uint64_t u = mp_read_be(c, 8);
            double d;
            memcpy(&d, &u, sizeof d);
            if (!c->err)
                lua_pushnumber(L, d);
            return;
        }
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf:
            v = mp_read_be(c, 1 << (t - 0xcc));
            if (!c->err)
                lua_pushnumber(L, (lua_Number)v);
            return;
        case 0xd0:
            v = mp_read_be(c, 1);
            if (!c->err)
                lua_pushnumber(L, (int8_t)v);
            return;
        case 0xd1:
            v = mp_read_be(c, 2);
            if (!c->err)
                lua_pushnumber(L, (int16_t)v);
            return;
        case 0xd2:
            v = mp_read_be(c, 4);
            if (!c->err)
                lua_pushnumber(L, (int32_t)v);
            return;
        case 0xd3:
            v = mp_read_be(c, 8);
            if (!c->err)
                lua_pushnumber(L, (lua_Number)(int64_t)v);
            return;
        case 0xdc:
            v = mp_read_be(c, 2);
            mp_decode_array(L, c, (size_t)v);
            return;
        case 0xdd:
            v = mp_read_be(c, 4);
            mp_decode_array(L, c, (size_t)v);
            return;
        case 0xde:
            v = mp_read_be(c, 2);
            mp_decode_map(L, c, (size_t)v);
            return;
        case 0xdf:
            v = mp_read_be(c, 4);
            mp_decode_map(L, c, (size_t)v);
            return;
        default: c->err = 2; return;
        }
    }
}

/* Decode up to `limit` objects (0: all) from offset; push the offset
 * after them first (-1 at the end) when `with_offset`. */
static int mp_unpack_full(lua_State *L, int limit, size_t offset,
                          int with_offset)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    mp_cur c;
    int n = 0, base;

    if (offset > len)
        return luaL_error(L, "Start offset %d greater than input length %d.",
                          (int)offset, (int)len);
    c.p = (const unsigned char *)s + offset;
    c.left = len - offset;
    c.err = 0;
    if (with_offset)
        lua_pushnil(L); /* placeholder for the offset */
    base = lua_gettop(L);
    while (c.left > 0 && (limit == 0 || n < limit)) {
        mp_decode(L, &c);
        if (c.err)
            return luaL_error(L, c.err == 1 ? "Missing bytes in input."
                                            : "Bad data format in input.");
        n++;
    }
    if (with_offset) {
        lua_pushnumber(L, c.left == 0 ? -1 : (lua_Number)(len - c.left));
        lua_replace(L, base);
        return n + 1;
    }
    return n;
}

static int mp_unpack(lua_State *L) { return mp_unpack_full(L, 0, 0, 0); }

static int mp_unpack_one(lua_State *L)
{
    long offset = (long)luaL_optinteger(L, 2, 0);

    lua_settop(L, 1);
    return mp_unpack_full(L, 1, offset < 0 ? 0 : (size_t)offset, 1);
}

static int mp_unpack_limit(lua_State *L)
{
    int limit = (int)luaL_checkinteger(L, 2);
    long offset = (long)luaL_optinteger(L, 3, 0);

    lua_settop(L, 1);
    return mp_unpack_full(L, limit, offset < 0 ? 0 : (size_t)offset, 1);
}

int srv_script_luaopen_cmsgpack(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "pack", mp_pack },
        { "unpack", mp_unpack },
        { "unpack_one", mp_unpack_one },
        { "unpack_limit", mp_unpack_limit },
        { NULL, NULL },
    };

    lua_newtable(L);
    luaL_register(L, NULL, fns);
    lua_pushstring(L, "lua-cmsgpack");
    lua_setfield(L, -2, "_NAME");
    return 1;
}
