/*
 * srv_tls.c - TLS (see srv_tls.h): the context from the tls-* directives
 * and the transport of TLS connections.
 *
 * The transport never blocks: the handshake and every SSL_read and
 * SSL_write run from the connection's read and write events. When one
 * direction needs the other (a handshake that must send while reading, a
 * write that must first read), the transport says so in c->tr_want and
 * the connection layer calls it back on that event (srv_conn.c).
 */
#include "server/srv_tls.h"
#include "server/srv_heritage.h"
#include "server/srv_log.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERRTEXT_MAX 256
/* The session id context of larder's server sessions. */
#define SESSION_CONTEXT "larder"

/* tls-auth-clients, as SRV_CFG_CHOICE indexes its "yes|no|optional". */
enum { AUTH_YES, AUTH_NO, AUTH_OPTIONAL };

static SSL_CTX *ctx;

typedef struct tls_conn {
    SSL *ssl;
    int established;
} tls_conn;

/* OpenSSL's last error as text. */
static const char *ssl_error(char *buf, size_t size)
{
    unsigned long e = ERR_peek_last_error();

    if (!e)
        return "no further detail";
    ERR_error_string_n(e, buf, size);
    ERR_clear_error();
    return buf;
}

/* tls-protocols: the versions listed, or TLSv1.2 and TLSv1.3. */
static int set_protocols(const char *list, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        long op;
    } protos[] = {
        { "TLSv1", SSL_OP_NO_TLSv1 },
        { "TLSv1.1", SSL_OP_NO_TLSv1_1 },
        { "TLSv1.2", SSL_OP_NO_TLSv1_2 },
        { "TLSv1.3", SSL_OP_NO_TLSv1_3 },
    };
    size_t n = sizeof protos / sizeof protos[0];
    long no = 0;
    char words[SRV_PATH_MAX], *save = NULL;

    for (size_t i = 0; i < n; i++)
        no |= protos[i].op;
    if (!list[0]) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1);
        return 0;
    }
    snprintf(words, sizeof words, "%s", list);
    for (char *w = strtok_r(words, " ", &save); w;
         w = strtok_r(NULL, " ", &save)) {
        size_t i;
        for (i = 0; i < n && strcasecmp(w, protos[i].name); i++)
            ;
        if (i == n) {
            snprintf(err, errlen,
                     "Invalid tls-protocols specified. Use a combination "
                     "of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.");
            return -1;
        }
        no &= ~protos[i].op;
    }
    SSL_CTX_set_options(ctx, (uint64_t)no);
    return 0;
}

/* tls-key-file-pass for an encrypted key. */
static int key_password(char *buf, int size, int rwflag, void *arg)
{
    const char *pass = arg;
    int n = (int)strlen(pass);

    if (n > size)
        n = size;
    memcpy(buf, pass, (size_t)n);
    return n;
}

static int load_dh_params(const char *path, char *err, size_t errlen)
{
    char e[ERRTEXT_MAX];
    BIO *bio = BIO_new_file(path, "r");
    EVP_PKEY *dh = bio ? PEM_read_bio_Parameters(bio, NULL) : NULL;

    BIO_free(bio);
    if (!dh || !SSL_CTX_set0_tmp_dh_pkey(ctx, dh)) {
        snprintf(err, errlen, "Failed to load %s: %s", path,
                 ssl_error(e, sizeof e));
        EVP_PKEY_free(dh);
        return -1;
    }
    return 0;
}

static int configure(const srv_config *cfg, char *err, size_t errlen)
{
    char e[ERRTEXT_MAX];
    int verify = SSL_VERIFY_NONE;

    if (!cfg->tls_cert_file[0]) {
        snprintf(err, errlen, "No tls-cert-file configured!");
        return -1;
    }
    if (!cfg->tls_key_file[0]) {
        snprintf(err, errlen, "No tls-key-file configured!");
        return -1;
    }
    if (cfg->tls_auth_clients != AUTH_NO && !cfg->tls_ca_cert_file[0] &&
        !cfg->tls_ca_cert_dir[0]) {
        snprintf(err, errlen,
                 "Either tls-ca-cert-file or tls-ca-cert-dir must be "
                 "specified when tls-cluster, tls-replication or "
                 "tls-auth-clients are enabled!");
        return -1;
    }
    if (!(ctx = SSL_CTX_new(TLS_server_method()))) {
        snprintf(err, errlen, "Failed to create the TLS context: %s",
                 ssl_error(e, sizeof e));
        return -1;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 |
                                 SSL_OP_NO_COMPRESSION |
                                 SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_SINGLE_DH_USE);
    if (set_protocols(cfg->tls_protocols, err, errlen))
        return -1;
    if (cfg->tls_prefer_server_ciphers)
        SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Writes go out of a buffer that may grow (move) between retries. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)SESSION_CONTEXT,
                                   strlen(SESSION_CONTEXT));
    if (cfg->tls_session_caching) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ctx, cfg->tls_session_cache_size);
        SSL_CTX_set_timeout(ctx, (long)cfg->tls_session_cache_timeout);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    }
    if (cfg->tls_key_file_pass[0]) {
        SSL_CTX_set_default_passwd_cb(ctx, key_password);
        SSL_CTX_set_default_passwd_cb_userdata(ctx,
                                               (void *)cfg->tls_key_file_pass);
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert_file) <= 0) {
        snprintf(err, errlen, "Failed to load certificate: %s: %s",
                 cfg->tls_cert_file, ssl_error(e, sizeof e));
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) <=
        0) {
        snprintf(err, errlen, "Failed to load private key: %s: %s",
                 cfg->tls_key_file, ssl_error(e, sizeof e));
        return -1;
    }
    if (!SSL_CTX_check_private_key(ctx)) {
        snprintf(err, errlen,
                 "The private key does not match the "
                 "certificate: %s",
                 ssl_error(e, sizeof e));
        return -1;
    }
    if ((cfg->tls_ca_cert_file[0] || cfg->tls_ca_cert_dir[0]) &&
        SSL_CTX_load_verify_locations(
            ctx, cfg->tls_ca_cert_file[0] ? cfg->tls_ca_cert_file : NULL,
            cfg->tls_ca_cert_dir[0] ? cfg->tls_ca_cert_dir : NULL) <= 0) {
        snprintf(err, errlen,
                 "Failed to configure CA certificate(s) file/directory: %s",
                 ssl_error(e, sizeof e));
        return -1;
    }
    if (cfg->tls_ciphers[0] &&
        !SSL_CTX_set_cipher_list(ctx, cfg->tls_ciphers)) {
        snprintf(err, errlen, "Failed to configure ciphers: %s",
                 ssl_error(e, sizeof e));
        return -1;
    }
    if (cfg->tls_ciphersuites[0] &&
        !SSL_CTX_set_ciphersuites(ctx, cfg->tls_ciphersuites)) {
        snprintf(err, errlen, "Failed to configure ciphersuites: %s",
                 ssl_error(e, sizeof e));
        return -1;
    }
    if (cfg->tls_dh_params_file[0]) {
        if (load_dh_params(cfg->tls_dh_params_file, err, errlen))
            return -1;
    } else {
        SSL_CTX_set_dh_auto(ctx, 1);
    }
    if (cfg->tls_auth_clients == AUTH_YES)
        verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    else if (cfg->tls_auth_clients == AUTH_OPTIONAL)
        verify = SSL_VERIFY_PEER;
    SSL_CTX_set_verify(ctx, verify, NULL);
    return 0;
}

int srv_tls_boot(char *err, size_t errlen)
{
    if (!srv_her.cfg->tls_port)
        return 0;
    if (configure(srv_her.cfg, err, errlen)) {
        SSL_CTX_free(ctx);
        ctx = NULL;
        return -1;
    }
    srv_her.tls = &srv_tls_transport;
    return 0;
}

/* ---- the transport ---- */

static int tls_open(srv_conn *c)
{
    tls_conn *t = calloc(1, sizeof *t);

    if (!t || !(t->ssl = SSL_new(ctx)) || !SSL_set_fd(t->ssl, c->fd)) {
        if (t)
            SSL_free(t->ssl);
        free(t);
        return -1;
    }
    SSL_set_accept_state(t->ssl);
    c->tr_state = t;
    return 0;
}

static void tls_close(srv_conn *c)
{
    tls_conn *t = c->tr_state;

    if (!t)
        return;
    if (t->established)
        SSL_shutdown(t->ssl); /* one try: the socket closes next */
    SSL_free(t->ssl);
    free(t);
    c->tr_state = NULL;
    ERR_clear_error();
}

/*
 * What an SSL_* call that returned rc means for the connection layer: 0
 * (wait, errno EAGAIN, with c->tr_want set for the other direction), or
 * -1 (failed: errno set, c is to be closed). `is_read` names the
 * direction of the call.
 */
static int wait_or_fail(srv_conn *c, tls_conn *t, int rc, int is_read)
{
    char e[ERRTEXT_MAX];
    int saved = errno;

    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        if (!is_read)
            c->tr_want |= SRV_TR_WRITE_WANTS_READ;
        errno = EAGAIN;
        return 0;
    case SSL_ERROR_WANT_WRITE:
        if (is_read) {
            c->tr_want |= SRV_TR_READ_WANTS_WRITE;
            srv_conn_want_write(c);
        }
        errno = EAGAIN;
        return 0;
    case SSL_ERROR_ZERO_RETURN: errno = 0; return -1;
    case SSL_ERROR_SYSCALL:
        errno = saved ? saved : ECONNRESET;
        ERR_clear_error();
        return -1;
    default:
        srv_log(SRV_LOG_VERBOSE, 0, "TLS error with %s: %s", c->addr,
                ssl_error(e, sizeof e));
        errno = EPROTO;
        return -1;
    }
}

/* Finish the handshake: 0 done, -1 with errno (EAGAIN: not yet). */
static int handshake(srv_conn *c, tls_conn *t, int is_read)
{
    char e[ERRTEXT_MAX];
    int rc;

    ERR_clear_error();
    rc = SSL_do_handshake(t->ssl);
    if (rc == 1) {
        t->established = 1;
        return 0;
    }
    if (wait_or_fail(c, t, rc, is_read) == 0)
        return -1;
    if (errno == EPROTO || errno == ECONNRESET)
        srv_log(SRV_LOG_VERBOSE, 0,
                "Error accepting a client connection: %s (addr=%s)",
                errno == EPROTO ? ssl_error(e, sizeof e) : "connection reset",
                c->addr);
    return -1;
}

static ssize_t tls_read(srv_conn *c, void *buf, size_t n)
{
    tls_conn *t = c->tr_state;
    int rc;

    if (!t->established && handshake(c, t, 1))
        return errno == 0 ? 0 : -1;
    ERR_clear_error();
    rc = SSL_read(t->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    if (wait_or_fail(c, t, rc, 1) == 0)
        return -1;
    return errno == 0 ? 0 : -1; /* 0: the peer closed */
}

static ssize_t tls_write(srv_conn *c, const void *buf, size_t n)
{
    tls_conn *t = c->tr_state;
    int rc;

    if (!t->established && handshake(c, t, 0))
        return -1;
    ERR_clear_error();
    rc = SSL_write(t->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    wait_or_fail(c, t, rc, 0);
    if (errno == 0)
        errno = EPIPE;
    return -1;
}

static size_t tls_pending(const srv_conn *c)
{
    const tls_conn *t = c->tr_state;

    return t && t->established ? (size_t)SSL_pending(t->ssl) : 0;
}

const srv_transport srv_tls_transport = {
    .name = "tls",
    .open = tls_open,
    .read = tls_read,
    .write = tls_write,
    .pending = tls_pending,
    .close = tls_close,
};
