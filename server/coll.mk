# server/coll.mk: command handlers of the collection types.
libserver_a_SOURCES += \
	server/cmd/srv_cmd_hash.c server/cmd/srv_cmd_set.c server/cmd/srv_cmd_list.c \
	server/cmd/srv_cmd_zset.c
