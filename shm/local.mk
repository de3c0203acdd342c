# shm/: shared-memory cache library (libshm.a); its unit tests are wired
# in t/unit/local.mk.
noinst_LIBRARIES += libshm.a
libshm_a_SOURCES = \
	shm/shm_error.c shm/shm_error.h \
	shm/shm_region.c shm/shm_region.h \
	shm/shm_lock.c shm/shm_lock.h \
	shm/shm_slab.c shm/shm_slab.h \
	shm/shm_stripe.c shm/shm_stripe.h \
	shm/shm_cache.c shm/shm_cache.h shm/shm_cache_layout.h \
	shm/shm_clock.c shm/shm_clock.h

# Eviction-policy simulator: runs the real cache in-process.
noinst_PROGRAMS += tools/cachesim
tools_cachesim_SOURCES = tools/cachesim.c
tools_cachesim_LDADD = libshm.a -lpthread -lm
