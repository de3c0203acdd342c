# rdb/: the RDB codec library (librdb.a): CRC64, LZF, the compact blobs
# (listpack, ziplist, intset, zipmap), objects and whole files. Pure: it
# calls nothing of larder's; server/ uses it for DUMP/RESTORE, MIGRATE,
# SYNC and the RDB import and export.
noinst_LIBRARIES += librdb.a
librdb_a_SOURCES = \
	rdb/rdb_err.c rdb/rdb_err.h \
	rdb/rdb_crc64.c rdb/rdb_crc64.h \
	rdb/rdb_lzf.c rdb/rdb_lzf.h \
	rdb/rdb_io.c rdb/rdb_io.h \
	rdb/rdb_pack.c rdb/rdb_pack.h \
	rdb/rdb_obj.c rdb/rdb_obj.h \
	rdb/rdb_file.c rdb/rdb_file.h
librdb_a_CFLAGS = $(AM_CFLAGS)
