# t/integ/: integration tests against the real server (Python 3, stdlib
# only). Each test file starts its own larder-server on a free port in a
# temp dir; LARDER_TEST_AGAINST=redis runs them against redis-server.
INTEG_TESTS = \
	t/integ/test_protocol.py \
	t/integ/test_server.py \
	t/integ/test_config.py \
	t/integ/test_command.py \
	t/integ/test_strings.py \
	t/integ/test_keys.py \
	t/integ/test_longnames.py \
	t/integ/test_consistency.py \
	t/integ/test_differential.py \
	t/integ/test_respawn.py \
	t/integ/test_larder.py \
	t/integ/test_cache.py \
	t/integ/test_multi.py \
	t/integ/test_pubsub.py \
	t/integ/test_hash.py \
	t/integ/test_set.py \
	t/integ/test_list.py \
	t/integ/test_zset.py \
	t/integ/test_bigcoll.py
TESTS += $(INTEG_TESTS)
EXTRA_DIST += t/integ/larder_test.py $(INTEG_TESTS)
TEST_EXTENSIONS = .py
PY_LOG_COMPILER = $(PYTHON3)
AM_TESTS_ENVIRONMENT = \
	LARDER_SERVER=$(abs_top_builddir)/larder-server; export LARDER_SERVER; \
	PYTHONPATH=$(abs_top_srcdir)/t/integ; export PYTHONPATH; \
	PYTHONDONTWRITEBYTECODE=1; export PYTHONDONTWRITEBYTECODE;

# ==== issue 11 ====
INTEG_TESTS_I11 = \
	t/integ/test_blocking.py \
	t/integ/test_clients.py \
	t/integ/test_notify.py \
	t/integ/test_jobqueue.py \
	t/integ/test_clientctl.py
TESTS += $(INTEG_TESTS_I11)
EXTRA_DIST += $(INTEG_TESTS_I11)

# ==== issue 11 x 14: keyspace events of issue 14's write commands ====
INTEG_TESTS_I14N = t/integ/test_notify14.py
TESTS += $(INTEG_TESTS_I14N)
EXTRA_DIST += $(INTEG_TESTS_I14N)

# ==== issue 12 ====
SCRIPT_INTEG_TESTS = \
	t/integ/test_script.py \
	t/integ/test_script_redis.py \
	t/integ/test_script_clients.py \
	t/integ/test_script_pubsub.py
TESTS += $(SCRIPT_INTEG_TESTS)
EXTRA_DIST += $(SCRIPT_INTEG_TESTS) t/integ/bullmq/package.json \
	t/integ/bullmq/setup t/integ/bullmq/e2e.js

# ==== issue 13 ====
INTEG_TESTS_I13 = \
	t/integ/test_stream.py \
	t/integ/test_stream_dump.py
TESTS += $(INTEG_TESTS_I13)
EXTRA_DIST += $(INTEG_TESTS_I13)

# ==== issue 14 ====
# issue 14 (i14a): differential helpers; long strings in spans.
EXTRA_DIST += t/integ/larder_diff.py
I14A_INTEG = t/integ/test_bigstrings.py t/integ/test_bitmap.py \
	t/integ/test_hll.py t/integ/test_geo.py t/integ/test_sort.py \
	t/integ/test_introspect.py
TESTS += $(I14A_INTEG)
EXTRA_DIST += $(I14A_INTEG)
# DUMP/RESTORE, COPY/MOVE/SWAPDB, MIGRATE, SYNC and the RDB import and
# export, each against a redis-server they start (dump_data.py and
# rdb_data.py are their shared data sets). test_rdb.py's size is
# LARDER_RDB_KEYS (200000 by default; the few-million run is
# LARDER_RDB_KEYS=3000000 make check TESTS=t/integ/test_rdb.py).
INTEG_TESTS += t/integ/test_dump.py t/integ/test_dbmove.py \
	t/integ/test_migrate.py t/integ/test_sync.py t/integ/test_rdb.py
EXTRA_DIST += t/integ/dump_data.py t/integ/rdb_data.py
# issue 14 (i14c): a bulk move from redis-server compared key by key
# (every type and encoding, value, TTL, encoding, PFCOUNT); 30000 keys by
# default, the few-million run is
# LARDER_BULK_KEYS=2500000 make check TESTS=t/integ/test_rdb_bulk.py
INTEG_TESTS += t/integ/test_rdb_bulk.py

# ==== issue 15 ====
OPS_TESTS = \
	t/integ/test_config_redis.py \
	t/integ/test_admin.py \
	t/integ/test_install.py \
	t/integ/test_twemproxy.py \
	t/integ/test_client_libs.py \
	t/integ/test_monitoring.py
TESTS += $(OPS_TESTS)
EXTRA_DIST += $(OPS_TESTS)

# ==== issue 16 ====
INTEG_TESTS += t/integ/test_acl.py t/integ/test_tls.py
INTEG_TESTS += t/integ/test_sweep.py t/integ/test_limits.py \
	t/integ/test_chaos.py t/integ/test_connections.py

# ==== issue 17 ====
INTEG_TESTS += t/integ/test_diskfull.py
