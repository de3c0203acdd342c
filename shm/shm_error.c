/* shm_error.c — names of the shm/ library's return codes. */
#include <string.h>

#include "shm/shm_error.h"

const char *shm_strerror(int code)
{
    if (code > 0)
        return strerror(code);
    switch (code) {
    case 0: return "success";
    case SHM_EMISS: return "not in cache";
    case SHM_ESTALE: return "a newer version is known";
    case SHM_ETOOSMALL: return "buffer too small";
    case SHM_ETOOBIG: return "entry larger than the largest cache chunk";
    case SHM_ENOSPC: return "cache budget too small for entry";
    case SHM_EBADMAGIC: return "shared region has a bad magic number";
    case SHM_EVERSION: return "shared region has another layout version";
    case SHM_ELAYOUT: return "shared region sizes are inconsistent";
    case SHM_ERESTART: return "cache budget above mapped size: needs restart";
    case SHM_ENOTRECOVERABLE: return "stripe lock not recoverable";
    default: return "unknown shm error";
    }
}
