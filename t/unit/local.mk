# t/unit/: Check suites for server/, storage/ and bench/ modules.
# Each suite is one program linking the convenience libraries; `make check`
# runs them all (CK_FORK is on by default, so a crash fails one test only).

UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LIBS = $(SERVER_LIBS) $(CHECK_LIBS)
# scratch directories shared by the suites that need files
UNIT_TMP = t/unit/unit_tmp.c t/unit/unit_tmp.h

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
t_unit_check_config_SOURCES = t/unit/check_config.c $(UNIT_TMP)
t_unit_check_config_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_config_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_config

check_PROGRAMS += t/unit/check_storage
t_unit_check_storage_SOURCES = t/unit/check_storage.c $(UNIT_TMP)
t_unit_check_storage_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_storage_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_storage

check_PROGRAMS += t/unit/check_st_durable
t_unit_check_st_durable_SOURCES = t/unit/check_st_durable.c $(UNIT_TMP)
t_unit_check_st_durable_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_durable_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_durable

# larder-bench's RESP reply parser (bench/ has no library: link the module).
check_PROGRAMS += t/unit/check_bench_resp
t_unit_check_bench_resp_SOURCES = t/unit/check_bench_resp.c \
	bench/bench_resp.c bench/bench_resp.h
t_unit_check_bench_resp_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_bench_resp_LDADD = $(CHECK_LIBS)
TESTS += t/unit/check_bench_resp

check_PROGRAMS += t/unit/check_bproto
t_unit_check_bproto_SOURCES = t/unit/check_bproto.c
t_unit_check_bproto_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_bproto_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_bproto

check_PROGRAMS += t/unit/check_dict
t_unit_check_dict_SOURCES = t/unit/check_dict.c
t_unit_check_dict_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_dict_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_dict

check_PROGRAMS += t/unit/check_st_rank
t_unit_check_st_rank_SOURCES = t/unit/check_st_rank.c $(UNIT_TMP)
t_unit_check_st_rank_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_rank_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_rank
