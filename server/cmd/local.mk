# server/cmd/: the command layer of libserver.a.
libserver_a_SOURCES += \
	server/cmd/srv_cmd.c server/cmd/srv_cmd.h server/cmd/srv_commands.def \
	server/cmd/srv_commands_conn.def server/cmd/srv_commands_server.def \
	server/cmd/srv_commands_string.def server/cmd/srv_commands_keys.def \
	server/cmd/srv_commands_multi.def server/cmd/srv_commands_hash.def \
	server/cmd/srv_commands_set.def server/cmd/srv_commands_list.def \
	server/cmd/srv_commands_zset.def server/cmd/srv_commands_pubsub.def \
	server/cmd/srv_cmd_command.c \
	server/cmd/srv_dispatch.c server/cmd/srv_dispatch.h \
	server/cmd/srv_txn.c server/cmd/srv_txn.h \
	server/cmd/srv_args.c server/cmd/srv_args.h \
	server/cmd/srv_key.c server/cmd/srv_key.h \
	server/cmd/srv_coll.c server/cmd/srv_coll.h \
	server/cmd/srv_scan.c server/cmd/srv_scan.h \
	server/cmd/srv_multi.c server/cmd/srv_multi.h \
	server/cmd/srv_cmd_conn.c server/cmd/srv_cmd_keys.c \
	server/cmd/srv_cmd_server.c server/cmd/srv_cmd_string.c \
	server/cmd/srv_cmd_pubsub.c

# ==== issue 11 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_blocking.def \
	server/cmd/srv_cmd_ctl.c

# ==== issue 12 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_script.def server/cmd/srv_cmd_script.c \
	server/cmd/srv_script.c server/cmd/srv_script.h \
	server/cmd/srv_scriptgate.c server/cmd/srv_scriptgate.h \
	server/cmd/srv_script_fn.c \
	server/cmd/srv_script_lua.c server/cmd/srv_script_lua.h \
	server/cmd/srv_lua_pool.c server/cmd/srv_lua_pool.h \
	server/cmd/srv_script_conv.c server/cmd/srv_script_conv.h \
	server/cmd/srv_script_libs.c server/cmd/srv_script_libs.h \
	server/cmd/srv_sha1.c server/cmd/srv_sha1.h
libserver_a_CFLAGS += $(LUA_CFLAGS) $(LUACJSON_CFLAGS) $(LUABITOP_CFLAGS)

# ==== issue 13 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_stream.def \
	server/cmd/srv_stream.c server/cmd/srv_stream.h \
	server/cmd/srv_cmd_stream.c \
	server/cmd/srv_sgroup.h server/cmd/srv_cmd_sgroup.c

# ==== issue 14 ====
# issue 14 (i14a): bitmaps, HyperLogLog, geo, SORT, LCS, OBJECT, MEMORY.
libserver_a_SOURCES += \
	server/cmd/srv_commands_bitmap.def server/cmd/srv_cmd_bitmap.c \
	server/cmd/srv_commands_hll.def server/cmd/srv_cmd_hll.c \
	server/cmd/srv_commands_geo.def server/cmd/srv_cmd_geo.c \
	server/cmd/srv_commands_misc14.def server/cmd/srv_cmd_sort.c \
	server/cmd/srv_cmd_lcs.c server/cmd/srv_cmd_object.c \
	server/cmd/srv_objinfo.c server/cmd/srv_objinfo.h
# DUMP/RESTORE, MIGRATE, MOVE and SWAPDB.
libserver_a_SOURCES += server/cmd/srv_commands_dump.def \
	server/cmd/srv_cmd_dump.c server/cmd/srv_cmd_migrate.c \
	server/cmd/srv_cmd_db.c server/cmd/srv_cmd_sync.c

# ==== issue 15 ====
libserver_a_SOURCES += \
	server/cmd/srv_cmd_config.c server/cmd/srv_cmd_info.c \
	server/cmd/srv_cmd_ops.c server/cmd/srv_commands_ops.def

# ==== issue 16 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_acl.def server/cmd/srv_cmd_acl.c

# ==== issue 17 ====
