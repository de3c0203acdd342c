# server/coll.mk: command handlers of the collection types.
libserver_a_SOURCES += \
	server/srv_cmd_hash.c
