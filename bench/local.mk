# bench/: larder-bench (load generator), the suite runner, compare, gate,
# smoke, validate (against redis-benchmark). The unit tests of its
# histogram and random streams are wired in t/unit/local.mk.
bin_PROGRAMS += larder-bench
larder_bench_SOURCES = \
	bench/larder_bench.c \
	bench/bench_engine.c bench/bench_engine.h \
	bench/bench_hist.c bench/bench_hist.h \
	bench/bench_json.c bench/bench_json.h \
	bench/bench_opts.c bench/bench_opts.h \
	bench/bench_rand.c bench/bench_rand.h \
	bench/bench_report.c bench/bench_report.h \
	bench/bench_resp.c bench/bench_resp.h \
	bench/bench_stats.c bench/bench_stats.h \
	bench/bench_sync.c bench/bench_sync.h \
	bench/bench_work.c bench/bench_work.h
# One event_base per thread and no cross-thread libevent calls, so plain
# libevent_core is enough (no libevent_pthreads).
larder_bench_CFLAGS = $(AM_CFLAGS) $(LIBEVENT_CFLAGS) -pthread
larder_bench_LDADD = $(LIBEVENT_LIBS) -lpthread -lm

EXTRA_DIST += bench/README.md bench/run bench/compare bench/gate bench/smoke \
	bench/validate bench/benchlib.py bench/suite.py bench/sections.py \
	bench/plot.py bench/writes \
	bench/results/README.md

# Storage-level micro-benchmark of the order statistics (st_rank.h).
noinst_PROGRAMS += bench/rank-micro
bench_rank_micro_SOURCES = bench/rank_micro.c
bench_rank_micro_CFLAGS = $(AM_CFLAGS) $(LMDB_CFLAGS)
bench_rank_micro_LDADD = libstorage.a libshm.a $(LMDB_LIBS) $(ZSTD_LIBS) \
	-lpthread -lm
