# t/unit/: Check suites for the server/, storage/, shm/ and bench/ modules.
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

check_PROGRAMS += t/unit/check_cfgshm
t_unit_check_cfgshm_SOURCES = t/unit/check_cfgshm.c
t_unit_check_cfgshm_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_cfgshm_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_cfgshm

check_PROGRAMS += t/unit/check_role
t_unit_check_role_SOURCES = t/unit/check_role.c
t_unit_check_role_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_role_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_role

# The reply builder on a bare connection.
check_PROGRAMS += t/unit/check_reply
t_unit_check_reply_SOURCES = t/unit/check_reply.c
t_unit_check_reply_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_reply_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_reply

# The dispatcher and MULTI through an embedded worker (unit_embed.h).
UNIT_EMBED = t/unit/unit_embed.c t/unit/unit_embed.h \
	$(UNIT_TMP)

check_PROGRAMS += t/unit/check_cmd
t_unit_check_cmd_SOURCES = t/unit/check_cmd.c $(UNIT_EMBED)
t_unit_check_cmd_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_cmd_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_cmd

check_PROGRAMS += t/unit/check_multi
t_unit_check_multi_SOURCES = t/unit/check_multi.c $(UNIT_EMBED)
t_unit_check_multi_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_multi_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_multi

# The storage suites, one per module (st_keyspace's by concern, four),
# share one fixture: a fresh environment per test (unit_st.h).
UNIT_ST = t/unit/unit_st.c t/unit/unit_st.h $(UNIT_TMP)

check_PROGRAMS += t/unit/check_st_codec
t_unit_check_st_codec_SOURCES = t/unit/check_st_codec.c $(UNIT_ST)
t_unit_check_st_codec_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_codec_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_codec

check_PROGRAMS += t/unit/check_st_env
t_unit_check_st_env_SOURCES = t/unit/check_st_env.c $(UNIT_ST)
t_unit_check_st_env_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_env_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_env

check_PROGRAMS += t/unit/check_st_txn
t_unit_check_st_txn_SOURCES = t/unit/check_st_txn.c $(UNIT_ST)
t_unit_check_st_txn_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_txn_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_txn

check_PROGRAMS += t/unit/check_st_keyspace
t_unit_check_st_keyspace_SOURCES = t/unit/check_st_keyspace.c $(UNIT_ST)
t_unit_check_st_keyspace_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_keyspace_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_keyspace

check_PROGRAMS += t/unit/check_st_keyspace_names
t_unit_check_st_keyspace_names_SOURCES = t/unit/check_st_keyspace_names.c \
	$(UNIT_ST)
t_unit_check_st_keyspace_names_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_keyspace_names_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_keyspace_names

check_PROGRAMS += t/unit/check_st_keyspace_cache
t_unit_check_st_keyspace_cache_SOURCES = t/unit/check_st_keyspace_cache.c \
	$(UNIT_ST)
t_unit_check_st_keyspace_cache_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_keyspace_cache_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_keyspace_cache

check_PROGRAMS += t/unit/check_st_keyspace_model
t_unit_check_st_keyspace_model_SOURCES = t/unit/check_st_keyspace_model.c \
	$(UNIT_ST)
t_unit_check_st_keyspace_model_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_keyspace_model_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_keyspace_model

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

check_PROGRAMS += t/unit/check_st_coll
t_unit_check_st_coll_SOURCES = t/unit/check_st_coll.c $(UNIT_ST)
t_unit_check_st_coll_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_coll_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_coll

check_PROGRAMS += t/unit/check_st_rank
t_unit_check_st_rank_SOURCES = t/unit/check_st_rank.c $(UNIT_ST)
t_unit_check_st_rank_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_rank_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_rank

# shm/ links nothing above it: its suites link libshm.a alone.
check_PROGRAMS += t/unit/check_shm_slab
t_unit_check_shm_slab_SOURCES = t/unit/check_shm_slab.c
t_unit_check_shm_slab_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_shm_slab_LDADD = libshm.a $(CHECK_LIBS) -lpthread
TESTS += t/unit/check_shm_slab

check_PROGRAMS += t/unit/check_shm_cache
t_unit_check_shm_cache_SOURCES = t/unit/check_shm_cache.c
t_unit_check_shm_cache_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_shm_cache_LDADD = libshm.a $(CHECK_LIBS) -lpthread
TESTS += t/unit/check_shm_cache

# larder-bench's histogram and random streams (bench/ has no library:
# link the modules).
check_PROGRAMS += t/unit/check_bench_hist
t_unit_check_bench_hist_SOURCES = t/unit/check_bench_hist.c \
	bench/bench_hist.c bench/bench_hist.h
t_unit_check_bench_hist_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_bench_hist_LDADD = $(CHECK_LIBS) -lm
TESTS += t/unit/check_bench_hist

check_PROGRAMS += t/unit/check_bench_rand
t_unit_check_bench_rand_SOURCES = t/unit/check_bench_rand.c \
	bench/bench_rand.c bench/bench_rand.h
t_unit_check_bench_rand_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_bench_rand_LDADD = $(CHECK_LIBS) -lm
TESTS += t/unit/check_bench_rand

check_PROGRAMS += t/unit/check_cmd_table
t_unit_check_cmd_table_SOURCES = t/unit/check_cmd_table.c $(UNIT_TMP)
t_unit_check_cmd_table_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_cmd_table_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_cmd_table

# ==== issue 11 ====
# The broker's registry of blocked clients, driven directly.
check_PROGRAMS += t/unit/check_bwait
t_unit_check_bwait_SOURCES = t/unit/check_bwait.c
t_unit_check_bwait_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_bwait_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_bwait

# The broker's reorder buffer for MONITOR lines, driven directly.
check_PROGRAMS += t/unit/check_morder
t_unit_check_morder_SOURCES = t/unit/check_morder.c
t_unit_check_morder_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_morder_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_morder

# The broker's subscription counts, driven directly.
check_PROGRAMS += t/unit/check_bsubs
t_unit_check_bsubs_SOURCES = t/unit/check_bsubs.c
t_unit_check_bsubs_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_bsubs_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_bsubs

# larder-bench's blocking workloads (wake, jobs): their modules linked in.
check_PROGRAMS += t/unit/check_bench_work
t_unit_check_bench_work_SOURCES = t/unit/check_bench_work.c \
	bench/bench_work.c bench/bench_work.h bench/bench_opts.c \
	bench/bench_opts.h bench/bench_rand.c bench/bench_rand.h \
	bench/bench_resp.c bench/bench_resp.h bench/bench_sync.c \
	bench/bench_sync.h
t_unit_check_bench_work_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_bench_work_LDADD = $(CHECK_LIBS) -lm
TESTS += t/unit/check_bench_work

# ==== issue 12 ====
# larder-bench's scripting workloads (bench/ has no library: link the
# modules; the SHA1 of the scripts is checked with the server's).
check_PROGRAMS += t/unit/check_bench_lua
t_unit_check_bench_lua_SOURCES = t/unit/check_bench_lua.c \
	bench/bench_work.c bench/bench_work.h bench/bench_opts.c \
	bench/bench_opts.h bench/bench_resp.c bench/bench_resp.h \
	bench/bench_rand.c bench/bench_rand.h bench/bench_sync.c \
	bench/bench_sync.h server/cmd/srv_sha1.c server/cmd/srv_sha1.h
t_unit_check_bench_lua_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_bench_lua_LDADD = $(CHECK_LIBS) -lm
TESTS += t/unit/check_bench_lua

# The scripting engine without a server: conversions, sandbox, libraries.
check_PROGRAMS += t/unit/check_script
t_unit_check_script_SOURCES = t/unit/check_script.c
t_unit_check_script_CFLAGS = $(UNIT_CFLAGS) $(LUA_CFLAGS)
t_unit_check_script_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_script

# A Lua state's small-block pool (server/cmd/srv_lua_pool.h).
check_PROGRAMS += t/unit/check_lua_pool
t_unit_check_lua_pool_SOURCES = t/unit/check_lua_pool.c
t_unit_check_lua_pool_CFLAGS = $(UNIT_CFLAGS) $(LUA_CFLAGS)
t_unit_check_lua_pool_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_lua_pool

# ==== issue 13 ====
# Streams: entries, groups, consumers, PEL (storage/st_stream.h).
check_PROGRAMS += t/unit/check_st_stream
t_unit_check_st_stream_SOURCES = t/unit/check_st_stream.c $(UNIT_ST)
t_unit_check_st_stream_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_stream_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_stream
# Streams as RDB objects (rdb/rdb_stream.h).
check_PROGRAMS += t/unit/check_rdb_stream
t_unit_check_rdb_stream_SOURCES = t/unit/check_rdb_stream.c
t_unit_check_rdb_stream_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_rdb_stream_LDADD = librdb.a $(CHECK_LIBS) -lm -lpthread
TESTS += t/unit/check_rdb_stream

# ==== issue 14 ====
# issue 14 (i14a): string values inline and in spans.
check_PROGRAMS += t/unit/check_st_string
t_unit_check_st_string_SOURCES = t/unit/check_st_string.c $(UNIT_ST)
t_unit_check_st_string_CFLAGS = $(UNIT_CFLAGS) $(LMDB_CFLAGS)
t_unit_check_st_string_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_string

check_PROGRAMS += t/unit/check_hll
t_unit_check_hll_SOURCES = t/unit/check_hll.c
t_unit_check_hll_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_hll_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_hll

check_PROGRAMS += t/unit/check_geo
t_unit_check_geo_SOURCES = t/unit/check_geo.c
t_unit_check_geo_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_geo_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_geo

check_PROGRAMS += t/unit/check_shm_clock
t_unit_check_shm_clock_SOURCES = t/unit/check_shm_clock.c
t_unit_check_shm_clock_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_shm_clock_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_shm_clock
# The RDB codec (rdb/): pure, so it links only librdb.a.
check_PROGRAMS += t/unit/check_rdb_io
t_unit_check_rdb_io_SOURCES = t/unit/check_rdb_io.c
t_unit_check_rdb_io_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_rdb_io_LDADD = librdb.a $(CHECK_LIBS) -lm -lpthread
TESTS += t/unit/check_rdb_io

check_PROGRAMS += t/unit/check_rdb_obj
t_unit_check_rdb_obj_SOURCES = t/unit/check_rdb_obj.c
t_unit_check_rdb_obj_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_rdb_obj_LDADD = librdb.a $(CHECK_LIBS) -lm -lpthread
TESTS += t/unit/check_rdb_obj

check_PROGRAMS += t/unit/check_rdb_file
t_unit_check_rdb_file_SOURCES = t/unit/check_rdb_file.c
t_unit_check_rdb_file_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_rdb_file_LDADD = librdb.a $(CHECK_LIBS) -lm -lpthread
TESTS += t/unit/check_rdb_file

# The database map behind SWAPDB and the RDB import's switch.
check_PROGRAMS += t/unit/check_st_dbmap
t_unit_check_st_dbmap_SOURCES = t/unit/check_st_dbmap.c $(UNIT_ST)
t_unit_check_st_dbmap_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_st_dbmap_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_st_dbmap

# ==== issue 15 ====
check_PROGRAMS += t/unit/check_monitor
t_unit_check_monitor_SOURCES = t/unit/check_monitor.c
t_unit_check_monitor_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_monitor_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_monitor

# ==== issue 16 ====
# ACL: the rules, their shared region, the dispatcher's check.
check_PROGRAMS += t/unit/check_acl
t_unit_check_acl_SOURCES = t/unit/check_acl.c $(UNIT_EMBED)
t_unit_check_acl_CFLAGS = $(UNIT_CFLAGS)
t_unit_check_acl_LDADD = $(UNIT_LIBS)
TESTS += t/unit/check_acl

# ==== issue 17 ====
