/*
 * srv_sha1.h - SHA-1 (FIPS 180-4) of a byte string, as the script cache
 * names scripts (40 lower-case hex digits, as Redis's SHA1 of a script
 * body). Not for security.
 */
#ifndef SRV_SHA1_H
#define SRV_SHA1_H

#include <stddef.h>

#define SRV_SHA1_HEX_LEN 40

/* hex gets the 40 hex digits of the SHA-1 of p[0..n) and a NUL. */
void srv_sha1_hex(const void *p, size_t n, char hex[SRV_SHA1_HEX_LEN + 1]);

#endif
