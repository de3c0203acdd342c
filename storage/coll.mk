# storage/coll.mk: typed storage of the collection types.
libstorage_a_SOURCES += \
	storage/st_elem.c storage/st_elem.h \
	storage/st_hash.c storage/st_hash.h \
	storage/st_set.c storage/st_set.h \
	storage/st_list.c storage/st_list.h \
	storage/st_rank.c storage/st_rank.h \
	storage/st_zset.c storage/st_zset.h
# ==== issue 13 ====
libstorage_a_SOURCES += storage/st_stream.c storage/st_stream.h
