/*
 * srv_script_conv.h - Redis 7.0's conversions between RESP and Lua values,
 * both ways: a command's reply as redis.call / redis.pcall hands it to the
 * script (RESP2 or RESP3, as the script chose with redis.setresp), and a
 * script's return value as the client receives it (in the client's
 * protocol). Single-threaded: the caller's Lua state.
 */
#ifndef SRV_SCRIPT_CONV_H
#define SRV_SCRIPT_CONV_H

#include <stddef.h>

#include <lua.h>

#include "server/srv_conn.h"

/*
 * Push the Lua value of the one RESP reply at p[0..len) (complete, as a
 * command wrote it in protocol `resp`): integer -> number, bulk -> string,
 * null bulk or array -> false (RESP3 null -> nil), array -> table, status
 * -> {ok=...}, error -> {err=...}, map -> {map={...}}, set -> {set={m=true}},
 * double -> {double=n}, boolean -> boolean, big number -> {big_number=s},
 * verbatim -> {verbatim_string={format=, string=}}; attributes are
 * skipped. Returns the bytes consumed, 0 for a malformed reply (nothing is
 * pushed). Raises a Lua error when out of memory or stack (the caller
 * runs in a protected call).
 */
size_t srv_script_resp_to_lua(lua_State *L, const char *p, size_t len);

/*
 * Reply the Lua value at stack index `idx` to c, in c's protocol, as Redis
 * converts a script's return value: number -> integer (truncated), string
 * -> bulk, true -> 1 (a boolean when the script's `script_resp` is 3),
 * false and nil -> null, a table by its first field found of err, ok,
 * double, big_number, map, set, verbatim_string, else the array of its
 * elements up to the first nil. Nested tables deeper than the Lua stack
 * allows become "ERR reached lua stack limit" in place.
 */
void srv_script_lua_reply(lua_State *L, int idx, srv_conn *c, int script_resp);

#endif
