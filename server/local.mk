# server/: the program (libserver.a holds all but main, so tests link it).
# The processes, connections and protocol live in server/; the command
# layer (table, dispatcher, argument helpers, one file per data type) in
# server/cmd/.
noinst_LIBRARIES += libserver.a
libserver_a_SOURCES = \
	server/srv_buf.c server/srv_buf.h \
	server/srv_bproto.c server/srv_bproto.h \
	server/srv_broker.c server/srv_broker.h \
	server/srv_bsubs.c server/srv_bsubs.h \
	server/srv_cfgshm.c server/srv_cfgshm.h \
	server/srv_child.c server/srv_child.h \
	server/srv_cinfo.c server/srv_cinfo.h \
	server/srv_config.c server/srv_config.h \
	server/srv_conn.c server/srv_conn.h \
	server/srv_dict.c server/srv_dict.h \
	server/srv_embed.c server/srv_embed.h \
	server/srv_group.c server/srv_group.h \
	server/srv_heritage.c server/srv_heritage.h \
	server/srv_hooks.h \
	server/srv_log.c server/srv_log.h \
	server/srv_master.c server/srv_master.h \
	server/srv_pubsub.c server/srv_pubsub.h \
	server/srv_reaper.c server/srv_reaper.h \
	server/srv_reply.c server/srv_reply.h \
	server/srv_resp.c server/srv_resp.h \
	server/srv_role.c server/srv_role.h \
	server/srv_services.c server/srv_services.h \
	server/srv_stats.c server/srv_stats.h \
	server/srv_syncer.c server/srv_syncer.h \
	server/srv_util.c server/srv_util.h \
	server/srv_worker.c server/srv_worker.h
libserver_a_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) $(LMDB_CFLAGS)

# Everything a binary or test linking the server needs, in link order.
SERVER_LIBS = libserver.a libstorage.a libshm.a $(LIBEVENT_LIBS) $(LMDB_LIBS) \
	$(ZSTD_LIBS) -lpthread -lm

bin_PROGRAMS += larder-server
larder_server_SOURCES = server/srv_main.c
larder_server_LDADD = $(SERVER_LIBS)
include server/cmd/local.mk
include server/coll.mk

# ==== issue 11 ====
libserver_a_SOURCES += \
	server/srv_link.c server/srv_link.h \
	server/srv_block.c server/srv_block.h \
	server/srv_bwait.c server/srv_bwait.h \
	server/srv_morder.c server/srv_morder.h \
	server/srv_keys.c server/srv_keys.h \
	server/srv_ask.c server/srv_ask.h \
	server/srv_clients.c server/srv_clients.h \
	server/srv_notify.c server/srv_notify.h \
	server/srv_pause.c server/srv_pause.h \
	server/srv_monitor.c server/srv_monitor.h \
	server/srv_track.c server/srv_track.h

# ==== issue 12 ====
libserver_a_SOURCES += server/srv_scriptshm.c server/srv_scriptshm.h
SERVER_LIBS += $(LUACJSON_LIBS) $(LUABITOP_LIBS) $(LUA_LIBS)

# ==== issue 13 ====

# ==== issue 14 ====
# issue 14 (i14a): HyperLogLog values.
libserver_a_SOURCES += server/srv_hll.c server/srv_hll.h \
	server/srv_geo.c server/srv_geo.h
# The RDB codec (rdb/), used by DUMP/RESTORE, MIGRATE, SYNC and the RDB
# import and export; it comes after libserver.a in link order.
SERVER_LIBS += librdb.a -lm
libserver_a_SOURCES += server/srv_rdbkey.c server/srv_rdbkey.h \
	server/srv_rdbfile.c server/srv_rdbfile.h \
	server/srv_rdbtool.c server/srv_rdbtool.h

# ==== issue 15 ====
libserver_a_SOURCES += \
	server/srv_config_redis.c server/srv_config_redis.h \
	server/srv_cfgops.c server/srv_cfgops.h \
	server/srv_cmdstats.c server/srv_cmdstats.h \
	server/srv_slowlog.c server/srv_slowlog.h \
	server/srv_latency.c server/srv_latency.h \
	server/srv_admin.c server/srv_admin.h \
	server/srv_daemon.c server/srv_daemon.h
include tools/larderctl/local.mk
include tools/init/local.mk
include doc/local.mk

# ==== issue 16 ====
# ACL (rules, the shared region, the rules in force) and TLS.
libserver_a_SOURCES += \
	server/srv_acl.c server/srv_acl.h \
	server/srv_aclset.c server/srv_aclset.h \
	server/srv_aclshm.c server/srv_aclshm.h \
	server/srv_aclconn.c server/srv_aclconn.h \
	server/srv_tls.c server/srv_tls.h
libserver_a_CFLAGS += $(OPENSSL_CFLAGS)
SERVER_LIBS += $(OPENSSL_LIBS)

# ==== issue 17 ====
