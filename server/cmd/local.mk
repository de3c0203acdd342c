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

# ==== issue 12 ====

# ==== issue 13 ====

# ==== issue 14 ====

# ==== issue 15 ====
libserver_a_SOURCES += \
	server/cmd/srv_cmd_config.c server/cmd/srv_cmd_info.c \
	server/cmd/srv_cmd_ops.c server/cmd/srv_commands_ops.def

# ==== issue 16 ====

# ==== issue 17 ====
