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

# ==== issue 12 ====

# ==== issue 13 ====

# ==== issue 14 ====

# ==== issue 15 ====
OPS_TESTS = \
	t/integ/test_config_redis.py \
	t/integ/test_admin.py \
	t/integ/test_install.py \
	t/integ/test_twemproxy.py \
	t/integ/test_clients.py \
	t/integ/test_monitoring.py
TESTS += $(OPS_TESTS)
EXTRA_DIST += $(OPS_TESTS)

# ==== issue 16 ====

# ==== issue 17 ====
