/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The client end of an in-memory TLS pair, for the tests that drive nsrvd's server session
 * without a socket. Header-only: the shared test library does not link OpenSSL, and only the
 * tests that link the crypto implementation include this.
 */
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/*
 * A client context with verification off (Java's test mode) and a client on two memory BIOs
 * (*c_in: what the server sent, *c_out: what the client sends, both reporting "retry" when
 * empty), with its ClientHello already written to *c_out. The client owns both BIOs.
 */
static inline SSL *nsrv_test_tls_client_start(SSL_CTX **client_ctx, BIO **c_in, BIO **c_out) {
    *client_ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(*client_ctx, SSL_VERIFY_NONE, NULL);
    SSL *client = SSL_new(*client_ctx);
    *c_in = BIO_new(BIO_s_mem());
    *c_out = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(*c_in, -1);
    BIO_set_mem_eof_return(*c_out, -1);
    SSL_set_bio(client, *c_in, *c_out);
    SSL_set_connect_state(client);
    /* Stops for the server's reply; what that leaves on the error queue is no error. */
    SSL_do_handshake(client);
    ERR_clear_error();
    return client;
}
