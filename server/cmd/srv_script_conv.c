/*
 * srv_script_conv.c - RESP to Lua and Lua to RESP, Redis 7.0's rules (see
 * the header). The RESP side is trusted: it is what a handler of this
 * process just wrote.
 */
#include "server/cmd/srv_script_conv.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"

#include <lauxlib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Stack slots one level of a conversion needs. */
#define CONV_STACK_SLOTS 4
#define VERBATIM_FORMAT_LEN 3

/* ---- RESP -> Lua ---- */

#define NO_LINE ((size_t)-1)

/* The line at p (up to CRLF) and where the next one begins; NO_LINE if
 * there is none. */
static size_t line_end(const char *p, size_t len, size_t *next)
{
    const char *cr = memchr(p, '\r', len);

    if (!cr || (size_t)(cr - p) + 1 >= len || cr[1] != '\n')
        return NO_LINE;
    *next = (size_t)(cr - p) + 2;
    return (size_t)(cr - p);
}

static int parse_ll(const char *p, size_t n, long long *v)
{
    return srv_util_str2ll(p, n, v) ? 0 : -1;
}

static void set_field_string(lua_State *L, const char *field, const char *s,
                             size_t n)
{
    lua_pushstring(L, field);
    lua_pushlstring(L, s, n);
    lua_rawset(L, -3);
}

static size_t parse_value(lua_State *L, const char *p, size_t len);

/* An aggregate of n elements (map: n pairs) into the table at the top. */
static size_t parse_elems(lua_State *L, const char *p, size_t len, long long n,
                          int kind)
{
    size_t used = 0;

    for (long long i = 0; i < n; i++) {
        size_t u = parse_value(L, p + used, len - used);
        if (!u)
            return 0;
        used += u;
        if (kind == '*') {
            lua_rawseti(L, -2, (int)(i + 1));
        } else if (kind == '~') {
            lua_pushboolean(L, 1);
            lua_rawset(L, -3);
        } else { /* map: a value follows its key */
            size_t v = parse_value(L, p + used, len - used);
            if (!v)
                return 0;
            used += v;
            lua_rawset(L, -3);
        }
    }
    return used;
}

static size_t parse_value(lua_State *L, const char *p, size_t len)
{
    size_t next, n;
    long long v;

    if (len < 3 || (n = line_end(p + 1, len - 1, &next)) == NO_LINE)
        return 0;
    next += 1;
    if (!lua_checkstack(L, CONV_STACK_SLOTS))
        luaL_error(L, "reached lua stack limit");
    switch (p[0]) {
    case ':':
        if (parse_ll(p + 1, n, &v))
            return 0;
        lua_pushnumber(L, (lua_Number)v);
        return next;
    case '+':
        lua_newtable(L);
        set_field_string(L, "ok", p + 1, n);
        return next;
    case '-':
        lua_newtable(L);
        set_field_string(L, "err", p + 1, n);
        return next;
    case '_': lua_pushnil(L); return next;
    case '#': lua_pushboolean(L, p[1] == 't'); return next;
    case ',': {
        char buf[64];
        size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
        memcpy(buf, p + 1, m);
        buf[m] = '\0';
        lua_newtable(L);
        lua_pushstring(L, "double");
        lua_pushnumber(L, strtod(buf, NULL));
        lua_rawset(L, -3);
        return next;
    }
    case '(':
        lua_newtable(L);
        set_field_string(L, "big_number", p + 1, n);
        return next;
    case '$':
    case '=':
        if (parse_ll(p + 1, n, &v))
            return 0;
        if (v < 0) {
            lua_pushboolean(L, 0);
            return next;
        }
        if ((size_t)v + 2 > len - next)
            return 0;
        if (p[0] == '$') {
            lua_pushlstring(L, p + next, (size_t)v);
        } else {
            size_t f = (size_t)v >= VERBATIM_FORMAT_LEN + 1
                           ? VERBATIM_FORMAT_LEN
                           : 0;
            lua_newtable(L);
            lua_pushstring(L, "verbatim_string");
            lua_newtable(L);
            set_field_string(L, "format", p + next, f);
            set_field_string(L, "string", p + next + (f ? f + 1 : 0),
                             (size_t)v - (f ? f + 1 : 0));
            lua_rawset(L, -3);
        }
        return next + (size_t)v + 2;
    case '*':
    case '~':
    case '%':
    case '|':
    case '>': {
        size_t used;
        if (parse_ll(p + 1, n, &v))
            return 0;
        if (v < 0) {
            lua_pushboolean(L, 0);
            return next;
        }
        if (p[0] == '|') { /* an attribute: skip it, take what follows */
            lua_newtable(L);
            if (!(used = parse_elems(L, p + next, len - next, v, '%')))
                return 0;
            lua_pop(L, 1);
            size_t u = parse_value(L, p + next + used, len - next - used);
            return u ? next + used + u : 0;
        }
        int wrapped = p[0] == '~' || p[0] == '%';
        if (wrapped) { /* {map = inner} or {set = inner} */
            lua_newtable(L);
            lua_pushstring(L, p[0] == '~' ? "set" : "map");
        }
        lua_createtable(L, wrapped ? 0 : (int)v, wrapped ? (int)v : 0);
        used = parse_elems(L, p + next, len - next, v,
                           p[0] == '>' ? '*' : p[0]);
        if (!used && v > 0)
            return 0;
        if (wrapped)
            lua_rawset(L, -3);
        return next + used;
    }
    default: return 0;
    }
}

size_t srv_script_resp_to_lua(lua_State *L, const char *p, size_t len)
{
    int top = lua_gettop(L);
    size_t used = parse_value(L, p, len);

    if (!used)
        lua_settop(L, top);
    return used;
}

/* ---- Lua -> RESP ---- */

/* A status or error line must not break the protocol. */
static void reply_line(srv_conn *c, char kind, const char *s, size_t n)
{
    char ch = kind;

    srv_reply_raw(c, &ch, 1);
    for (size_t i = 0; i < n; i++) {
        ch = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
        srv_reply_raw(c, &ch, 1);
    }
    srv_reply_raw(c, "\r\n", 2);
}

/* Lua's number as Redis converts it: a C cast to long long (x86 gives
 * LLONG_MIN for what does not fit, NaN included). */
static long long number_to_ll(lua_Number d)
{
    if (isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return INT64_MIN;
    return (long long)d;
}

/* t[field] pushed; 1 if it has Lua type `type`, else popped and 0. */
static int field_of_type(lua_State *L, int t, const char *field, int type)
{
    lua_pushstring(L, field);
    lua_rawget(L, t);
    if (lua_type(L, -1) == type)
        return 1;
    lua_pop(L, 1);
    return 0;
}

static void reply_value(lua_State *L, int idx, srv_conn *c, int script_resp);

/* A map (pairs) or set (keys) of the table at `t`. */
static void reply_pairs(lua_State *L, int t, srv_conn *c, int script_resp,
                        int is_map)
{
    long long n = 0;
    size_t mark;

    lua_pushnil(L);
    while (lua_next(L, t)) {
        n++;
        lua_pop(L, 1);
    }
    if (is_map)
        srv_reply_map(c, n);
    else
        srv_reply_set(c, n);
    mark = (size_t)n;
    lua_pushnil(L);
    while (lua_next(L, t) && mark--) {
        int top = lua_gettop(L);
        reply_value(L, top - 1, c, script_resp);
        if (is_map)
            reply_value(L, top, c, script_resp);
        lua_pop(L, 1);
    }
}

static void reply_table(lua_State *L, int t, srv_conn *c, int script_resp)
{
    size_t n;
    const char *s;

    if (field_of_type(L, t, "err", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        reply_line(c, '-', s, n);
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "ok", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        reply_line(c, '+', s, n);
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "double", LUA_TNUMBER)) {
        srv_reply_double(c, lua_tonumber(L, -1));
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "big_number", LUA_TSTRING)) {
        s = lua_tolstring(L, -1, &n);
        if (c->resp == 3)
            reply_line(c, '(', s, n);
        else
            srv_reply_bulk(c, s, n);
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "map", LUA_TTABLE)) {
        reply_pairs(L, lua_gettop(L), c, script_resp, 1);
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "set", LUA_TTABLE)) {
        reply_pairs(L, lua_gettop(L), c, script_resp, 0);
        lua_pop(L, 1);
        return;
    }
    if (field_of_type(L, t, "verbatim_string", LUA_TTABLE)) {
        int v = lua_gettop(L);
        if (field_of_type(L, v, "format", LUA_TSTRING)) {
            size_t fl;
            const char *f = lua_tolstring(L, -1, &fl);
            if (field_of_type(L, v, "string", LUA_TSTRING)) {
                s = lua_tolstring(L, -1, &n);
                if (c->resp == 3 && fl == VERBATIM_FORMAT_LEN) {
                    char hdr[32];
                    int hl = snprintf(hdr, sizeof hdr, "=%zu\r\n", n + fl + 1);
                    srv_reply_raw(c, hdr, (size_t)hl);
                    srv_reply_raw(c, f, fl);
                    srv_reply_raw(c, ":", 1);
                    srv_reply_raw(c, s, n);
                    srv_reply_raw(c, "\r\n", 2);
                } else {
                    srv_reply_bulk(c, s, n);
                }
                lua_pop(L, 3);
                return;
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    /* An array: its elements up to the first nil (counted first, so
     * the header goes out before them). */
    long long count = 0;
    for (;;) {
        lua_rawgeti(L, t, (int)(count + 1));
        int end = lua_isnil(L, -1);
        lua_pop(L, 1);
        if (end)
            break;
        count++;
    }
    srv_reply_array(c, count);
    for (long long i = 1; i <= count; i++) {
        lua_rawgeti(L, t, (int)i);
        reply_value(L, lua_gettop(L), c, script_resp);
        lua_pop(L, 1);
    }
}

static void reply_value(lua_State *L, int idx, srv_conn *c, int script_resp)
{
    size_t n;
    const char *s;

    if (!lua_checkstack(L, CONV_STACK_SLOTS)) {
        srv_reply_error(c, "ERR reached lua stack limit");
        return;
    }
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &n);
        srv_reply_bulk(c, s, n);
        break;
    case LUA_TBOOLEAN:
        if (script_resp == 3) {
            if (c->resp == 3)
                srv_reply_raw(c, lua_toboolean(L, idx) ? "#t\r\n" : "#f\r\n",
                              4);
            else
                srv_reply_int(c, lua_toboolean(L, idx));
        } else if (lua_toboolean(L, idx)) {
            srv_reply_int(c, 1);
        } else {
            srv_reply_null(c);
        }
        break;
    case LUA_TNUMBER:
        srv_reply_int(c, number_to_ll(lua_tonumber(L, idx)));
        break;
    case LUA_TTABLE: reply_table(L, idx, c, script_resp); break;
    default: srv_reply_null(c); break;
    }
}

void srv_script_lua_reply(lua_State *L, int idx, srv_conn *c, int script_resp)
{
    if (idx < 0)
        idx = lua_gettop(L) + idx + 1;
    reply_value(L, idx, c, script_resp);
}
