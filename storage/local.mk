# storage/: the LMDB keyspace library (libstorage.a).
noinst_LIBRARIES += libstorage.a
libstorage_a_SOURCES = \
	storage/st_err.c storage/st_err.h \
	storage/st_internal.h \
	storage/st_coll.c storage/st_coll.h \
	storage/st_env.c storage/st_env.h \
	storage/st_room.c storage/st_room.h \
	storage/st_durable.c storage/st_durable.h \
	storage/st_metapage.c storage/st_metapage.h \
	storage/st_txn.c storage/st_txn.h \
	storage/st_codec.c storage/st_codec.h \
	storage/st_keyspace.c storage/st_keyspace.h \
	storage/st_script.c storage/st_script.h \
	storage/st_string.c storage/st_string.h \
	storage/st_dbmap.c storage/st_dbmap.h \
	storage/st_bulk.c storage/st_bulk.h
libstorage_a_CFLAGS = $(AM_CFLAGS) $(LMDB_CFLAGS) $(ZSTD_CFLAGS)
include storage/coll.mk
