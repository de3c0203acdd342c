# t/fault/: fsync-aware fault injection (power-cut images) for crash tests.
#
# libfault.so is an LD_PRELOAD shim that journals every write to LMDB's
# data.mdb and to the durable record data.durable, and every
# fsync/fdatasync/msync barrier (fault_shim.c); powercut.py rebuilds the
# files as a power cut would leave them (with or without reordered
# writes) and checks them with fault_dump (boots an image as the master
# would with `-b`, opens it read-only and walks every page; `fault_dump -r
# DIR S` holds a reader, a control for file-growth tests). The crash and durability integration tests live
# in t/integ/ but are wired here because they need the shim.
# bench_durability.sh measures SET throughput and latency per sync mode
# against redis-server with appendfsync (not run by make check).

check_PROGRAMS += t/fault/libfault.so
t_fault_libfault_so_SOURCES = t/fault/fault_shim.c
t_fault_libfault_so_CFLAGS = $(AM_CFLAGS) -fPIC
t_fault_libfault_so_LDFLAGS = -shared
t_fault_libfault_so_LDADD = -ldl

check_PROGRAMS += t/fault/fault_dump
t_fault_fault_dump_SOURCES = t/fault/fault_dump.c
t_fault_fault_dump_CFLAGS = $(AM_CFLAGS) $(LMDB_CFLAGS)
t_fault_fault_dump_LDADD = libstorage.a libshm.a $(LMDB_LIBS) $(ZSTD_LIBS) \
	-lpthread

FAULT_TESTS = \
	t/integ/test_durability.py \
	t/integ/test_crash.py \
	t/integ/test_expiry_load.py
TESTS += $(FAULT_TESTS)
EXTRA_DIST += $(FAULT_TESTS) t/fault/powercut.py t/fault/bench_durability.sh
