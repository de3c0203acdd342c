# server/: the program (libserver.a holds all but main, so tests link it).
noinst_LIBRARIES += libserver.a
libserver_a_SOURCES = \
	server/srv_buf.c server/srv_buf.h \
	server/srv_cmd.c server/srv_cmd.h server/srv_commands.def \
	server/srv_commands_coll.def server/srv_command_docs.def \
	server/srv_cmd_conn.c server/srv_cmd_keys.c \
	server/srv_cmd_server.c server/srv_cmd_string.c \
	server/srv_multi.c server/srv_multi.h \
	server/srv_cmd_pubsub.c server/srv_commands_pubsub.def \
	server/srv_pubsub.c server/srv_pubsub.h \
	server/srv_broker.c server/srv_broker.h \
	server/srv_bproto.c server/srv_bproto.h \
	server/srv_dict.c server/srv_dict.h \
	server/srv_duty.c server/srv_duty.h \
	server/srv_heritage.h \
	server/srv_keyspace.c server/srv_keyspace.h \
	server/srv_master.c server/srv_master.h \
	server/srv_stats.c server/srv_stats.h \
	server/srv_worker.c server/srv_worker.h \
	server/srv_config.c server/srv_config.h \
	server/srv_conn.h \
	server/srv_log.c server/srv_log.h \
	server/srv_reply.c server/srv_reply.h \
	server/srv_resp.c server/srv_resp.h \
	server/srv_util.c server/srv_util.h
libserver_a_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(LMDB_CFLAGS)

# Everything a binary or test linking the server needs, in link order.
SERVER_LIBS = libserver.a libstorage.a libshm.a $(LIBEVENT_LIBS) $(LMDB_LIBS) \
	$(ZSTD_LIBS) -lpthread -lm

bin_PROGRAMS += larder-server
larder_server_SOURCES = server/srv_main.c
larder_server_LDADD = $(SERVER_LIBS)
include server/coll.mk
