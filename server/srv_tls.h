/*
 * srv_tls.h - TLS with OpenSSL: the server context made from Redis's
 * tls-* directives (certificate and key, CA file or directory for client
 * certificates, tls-auth-clients, tls-protocols, tls-ciphers,
 * tls-ciphersuites, tls-prefer-server-ciphers, tls-session-caching and
 * its size and timeout, tls-dh-params-file), and the transport
 * (srv_conn.h) of the connections accepted on tls-port: a non-blocking
 * handshake driven by the connection's events, then SSL_read/SSL_write.
 *
 * The master builds the context before it forks (a bad certificate stops
 * the start, as in Redis); the workers inherit it, each its own session
 * cache, all the same session ticket keys.
 */
#ifndef SRV_TLS_H
#define SRV_TLS_H

#include <stddef.h>

#include "server/srv_conn.h"

/*
 * The master, before fork: if tls-port is set, build the context from the
 * configuration and set srv_her.tls to the TLS transport. 0 (also when
 * there is no tls-port), or -1 with the reason in err (Redis's words
 * where it has them).
 */
int srv_tls_boot(char *err, size_t errlen);

/* The TLS transport (its context built by srv_tls_boot). */
extern const srv_transport srv_tls_transport;

#endif
