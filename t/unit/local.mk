# t/unit/: Check suites for server/ and storage/ modules.
# Each suite is one program linking the convenience libraries; `make check`
# runs them all (CK_FORK is on by default, so a crash fails one test only).

UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LIBS = $(SERVER_LIBS) $(CHECK_LIBS)

check_PROGRAMS += t/unit/check_resp
t_unit_check_resp_SOURCES = t/unit/check_resp.c
t_unit_check_resp_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_resp_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_resp

check_PROGRAMS += t/unit/check_util
t_unit_check_util_SOURCES = t/unit/check_util.c
t_unit_check_util_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_util_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_util

check_PROGRAMS += t/unit/check_config
t_unit_check_config_SOURCES = t/unit/check_config.c
t_unit_check_config_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_config_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_config

check_PROGRAMS += t/unit/check_storage
t_unit_check_storage_SOURCES = t/unit/check_storage.c
t_unit_check_storage_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_storage_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_storage

check_PROGRAMS += t/unit/check_st_rank
t_unit_check_st_rank_SOURCES = t/unit/check_st_rank.c
t_unit_check_st_rank_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_rank_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_rank
