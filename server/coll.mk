# server/coll.mk: command handlers of the collection types.
libserver_a_SOURCES += \
	server/srv_cmd_hash.c server/srv_cmd_set.c server/srv_cmd_list.c \
	server/srv_cmd_zset.c
