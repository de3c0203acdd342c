/*
 * srv_script_libs.h - the two libraries Redis gives scripts that Debian
 * does not package: struct (binary packing: struct.pack, unpack, size)
 * and cmsgpack (MessagePack: cmsgpack.pack, unpack, unpack_one,
 * unpack_limit), written here to Redis's behaviour. Lua's open functions:
 * each pushes its library table.
 */
#ifndef SRV_SCRIPT_LIBS_H
#define SRV_SCRIPT_LIBS_H

#include <lua.h>

int srv_script_luaopen_struct(lua_State *L);
int srv_script_luaopen_cmsgpack(lua_State *L);

#endif
