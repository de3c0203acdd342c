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

# ==== issue 13 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_stream.def \
	server/cmd/srv_stream.c server/cmd/srv_stream.h \
	server/cmd/srv_cmd_stream.c \
	server/cmd/srv_sgroup.h server/cmd/srv_cmd_sgroup.c

# ==== issue 14 ====

# ==== issue 15 ====

# ==== issue 16 ====
libserver_a_SOURCES += \
	server/cmd/srv_commands_acl.def server/cmd/srv_cmd_acl.c

# ==== issue 17 ====
