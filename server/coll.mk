# server/coll.mk: command handlers of the collection types.
libserver_a_SOURCES += \
	server/cmd/srv_cmd_hash.c server/cmd/srv_cmd_set.c server/cmd/srv_cmd_list.c \
	server/cmd/srv_cmd_zset.c

# Unit tests of the collection storage.
check_PROGRAMS += t/unit/check_st_coll
t_unit_check_st_coll_SOURCES = t/unit/check_st_coll.c $(UNIT_ST)
t_unit_check_st_coll_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_coll_LDADD = $(SERVER_LIBS) $(CHECK_LIBS)
TESTS += t/unit/check_st_coll

# Integration tests of the collection commands.
COLL_INTEG_TESTS = \
	t/integ/test_hash.py \
	t/integ/test_set.py \
	t/integ/test_list.py \
	t/integ/test_zset.py \
	t/integ/test_bigcoll.py
TESTS += $(COLL_INTEG_TESTS)
EXTRA_DIST += $(COLL_INTEG_TESTS)
