# shm/: shared-memory cache library (libshm.a) and its unit tests.
noinst_LIBRARIES += libshm.a
libshm_a_SOURCES = \
	shm/shm_error.c shm/shm_error.h \
	shm/shm_region.c shm/shm_region.h \
	shm/shm_lock.c shm/shm_lock.h \
	shm/shm_slab.c shm/shm_slab.h \
	shm/shm_stripe.c shm/shm_stripe.h \
	shm/shm_cache.c shm/shm_cache.h shm/shm_cache_layout.h

check_PROGRAMS += t/unit/check_shm_slab t/unit/check_shm_cache
TESTS += t/unit/check_shm_slab t/unit/check_shm_cache

t_unit_check_shm_slab_SOURCES = t/unit/check_shm_slab.c
t_unit_check_shm_slab_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_shm_slab_LDADD = libshm.a $(CHECK_LIBS) -lpthread

t_unit_check_shm_cache_SOURCES = t/unit/check_shm_cache.c
t_unit_check_shm_cache_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
t_unit_check_shm_cache_LDADD = libshm.a $(CHECK_LIBS) -lpthread

# Eviction-policy simulator: runs the real cache in-process.
noinst_PROGRAMS += tools/cachesim
tools_cachesim_SOURCES = tools/cachesim.c
tools_cachesim_LDADD = libshm.a -lpthread -lm
