/* shm_error.h — the shm/ library's error codes.
 *
 * Every fallible shm_ function returns 0 on success, a positive errno passed
 * through from the system (mmap, pthread), or one of the negative SHM_E*
 * codes below. shm_strerror() names any of them.
 */
#ifndef SHM_ERROR_H
#define SHM_ERROR_H

enum shm_error {
    SHM_EMISS = -1001,     /* not cached, expired, tombstone, cache off */
    SHM_ESTALE = -1002,    /* dropped or refused: a newer version is known */
    SHM_ETOOSMALL = -1003, /* caller's buffer too small (size returned) */
    SHM_ETOOBIG = -1004,   /* entry larger than the biggest slab chunk */
    SHM_ENOSPC = -1005,    /* budget too small to hold even this entry */
    SHM_EBADMAGIC = -1006, /* region header magic mismatch on attach */
    SHM_EVERSION = -1007,  /* region layout version mismatch on attach */
    SHM_ELAYOUT = -1008,   /* region sizes/offsets inconsistent on attach */
    SHM_ERESTART = -1009,  /* budget above the mapped size: needs restart */
    SHM_ENOTRECOVERABLE = -1010 /* stripe mutex not recoverable */
};

/* Name of an shm_ return code: 0, a positive errno or an SHM_E* code.
 * Returns a static string; any process or thread may call it. */
const char *shm_strerror(int code);

#endif /* SHM_ERROR_H */
