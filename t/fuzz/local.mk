# t/fuzz/: libFuzzer targets. `make fuzz` builds them with clang
# (-fsanitize=fuzzer,address,undefined), compiling the server sources they
# need directly rather than linking the gcc-built libraries, and runs each
# for FUZZ_SECONDS. Nothing here is built by `make` or `make check`.
# New inputs go to t/fuzz/work/ in the build tree; the committed seeds in
# t/fuzz/corpus/ are only read. Crashes are saved as t/fuzz/crash-*.

FUZZ_SECONDS ?= 60
# fuzz_dispatch keeps its scratch LMDB environment under FUZZ_TMPDIR
# (default /dev/shm when there is one: its commits, SAVE and FLUSHALL then
# cost no disk flushes, several times the executions per second).
# One input running longer than FUZZ_TIMEOUT seconds is a hang (libFuzzer
# saves it as t/fuzz/timeout-*); growing past FUZZ_RSS_MB is a finding too.
FUZZ_TIMEOUT ?= 10
FUZZ_RSS_MB ?= 2048
# More libFuzzer flags, e.g. FUZZ_FLAGS=-max_len=70000 to reach the 64 KiB
# line limits, or -jobs=4.
FUZZ_FLAGS =
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) \
	-rss_limit_mb=$(FUZZ_RSS_MB) -artifact_prefix=t/fuzz/ \
	-print_final_stats=1
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CPPFLAGS = -I$(srcdir) -D_GNU_SOURCE

FUZZ_RESP_SRC = $(srcdir)/t/fuzz/fuzz_resp.c \
	$(srcdir)/server/srv_resp.c $(srcdir)/server/srv_util.c
FUZZ_RESP_DEPS = $(FUZZ_RESP_SRC) $(srcdir)/server/srv_resp.h \
	$(srcdir)/server/srv_util.h
FUZZ_UTIL_SRC = $(srcdir)/t/fuzz/fuzz_util.c $(srcdir)/server/srv_util.c
FUZZ_UTIL_DEPS = $(FUZZ_UTIL_SRC) $(srcdir)/server/srv_util.h
# fuzz_dispatch embeds a whole worker: every library source, by clang.
FUZZ_DISPATCH_DEPS = $(srcdir)/t/fuzz/fuzz_dispatch.c \
	$(libserver_a_SOURCES) $(libstorage_a_SOURCES) $(libshm_a_SOURCES) \
	$(librdb_a_SOURCES)
FUZZ_DISPATCH_CFLAGS = -I. $(LIBEVENT_CFLAGS) $(LMDB_CFLAGS) $(ZSTD_CFLAGS) \
	$(LUA_CFLAGS) $(LUACJSON_CFLAGS) $(LUABITOP_CFLAGS) $(OPENSSL_CFLAGS)
FUZZ_DISPATCH_LIBS = $(LIBEVENT_LIBS) $(LMDB_LIBS) $(ZSTD_LIBS) \
	$(LUACJSON_LIBS) $(LUABITOP_LIBS) $(LUA_LIBS) $(OPENSSL_LIBS) -lpthread -lm
# issue 14: the RDB codec on its own (what RESTORE payloads reach).
FUZZ_RDB_DEPS = $(srcdir)/t/fuzz/fuzz_rdb.c $(librdb_a_SOURCES)
FUZZ_TARGETS = t/fuzz/fuzz_resp t/fuzz/fuzz_util t/fuzz/fuzz_dispatch \
	t/fuzz/fuzz_rdb

EXTRA_DIST += t/fuzz/fuzz_resp.c t/fuzz/fuzz_util.c t/fuzz/fuzz_dispatch.c \
	t/fuzz/fuzz_rdb.c t/fuzz/resp.dict t/fuzz/dispatch.dict t/fuzz/corpus

if HAVE_CLANG
t/fuzz/fuzz_resp: $(FUZZ_RESP_DEPS)
	@$(MKDIR_P) t/fuzz
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_CPPFLAGS) $(WARN_CFLAGS) \
		-o $@ $(FUZZ_RESP_SRC)

t/fuzz/fuzz_rdb: $(FUZZ_RDB_DEPS)
	@$(MKDIR_P) t/fuzz
	$(AM_V_CC)srcs=; \
	for f in $(librdb_a_SOURCES); do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f";; esac; \
	done; \
	$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_CPPFLAGS) $(WARN_CFLAGS) \
		-o $@ $(srcdir)/t/fuzz/fuzz_rdb.c $$srcs -lm

t/fuzz/fuzz_util: $(FUZZ_UTIL_DEPS)
	@$(MKDIR_P) t/fuzz
	$(AM_V_CC)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_CPPFLAGS) $(WARN_CFLAGS) \
		-o $@ $(FUZZ_UTIL_SRC)

# The .c files among the library sources (the lists also hold headers).
t/fuzz/fuzz_dispatch: $(FUZZ_DISPATCH_DEPS)
	@$(MKDIR_P) t/fuzz
	$(AM_V_CC)srcs=; \
	for f in $(libserver_a_SOURCES) $(libstorage_a_SOURCES) \
	         $(libshm_a_SOURCES) $(librdb_a_SOURCES); do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f";; esac; \
	done; \
	$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_CPPFLAGS) $(FUZZ_DISPATCH_CFLAGS) \
		$(WARN_CFLAGS) -o $@ $(srcdir)/t/fuzz/fuzz_dispatch.c $$srcs \
		$(FUZZ_DISPATCH_LIBS)

# Each target runs FUZZ_SECONDS; the first failure stops the run.
fuzz: $(FUZZ_TARGETS)
	@$(MKDIR_P) t/fuzz/work/resp t/fuzz/work/util t/fuzz/work/dispatch
	./t/fuzz/fuzz_resp $(FUZZ_RUN) -dict=$(srcdir)/t/fuzz/resp.dict \
		$(FUZZ_FLAGS) t/fuzz/work/resp $(srcdir)/t/fuzz/corpus/resp
	./t/fuzz/fuzz_util $(FUZZ_RUN) $(FUZZ_FLAGS) \
		t/fuzz/work/util $(srcdir)/t/fuzz/corpus/util
	tmp=$${FUZZ_TMPDIR:-/dev/shm}; test -d "$$tmp" || tmp=/tmp; \
	TMPDIR=$$tmp ./t/fuzz/fuzz_dispatch $(FUZZ_RUN) \
		-dict=$(srcdir)/t/fuzz/dispatch.dict $(FUZZ_FLAGS) \
		t/fuzz/work/dispatch $(srcdir)/t/fuzz/corpus/dispatch
	@$(MKDIR_P) t/fuzz/work/rdb
	./t/fuzz/fuzz_rdb $(FUZZ_RUN) $(FUZZ_FLAGS) \
		t/fuzz/work/rdb $(srcdir)/t/fuzz/corpus/rdb

# After a long run: the committed seeds plus what the run found, minimized
# (libFuzzer -merge=1 keeps the inputs that add coverage) back into
# t/fuzz/corpus/ for review and commit.
fuzz-corpus: $(FUZZ_TARGETS)
	@for t in resp util dispatch rdb; do \
	  rm -rf t/fuzz/merged-$$t; $(MKDIR_P) t/fuzz/merged-$$t t/fuzz/work/$$t; \
	  ./t/fuzz/fuzz_$$t -merge=1 -timeout=$(FUZZ_TIMEOUT) \
	    t/fuzz/merged-$$t $(srcdir)/t/fuzz/corpus/$$t t/fuzz/work/$$t \
	    || exit 1; \
	  rm -rf $(srcdir)/t/fuzz/corpus/$$t; \
	  mv t/fuzz/merged-$$t $(srcdir)/t/fuzz/corpus/$$t; \
	done
else
fuzz fuzz-corpus:
	@echo "make fuzz: clang not found at configure time (apt-get install clang)" >&2
	@exit 1
endif

fuzz-clean:
	-rm -rf t/fuzz/work t/fuzz/merged-*
	-rm -f $(FUZZ_TARGETS) t/fuzz/crash-* t/fuzz/leak-* t/fuzz/timeout-* \
		t/fuzz/oom-* t/fuzz/slow-unit-*

clean-local: fuzz-clean
.PHONY: fuzz fuzz-corpus fuzz-clean
