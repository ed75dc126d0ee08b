// OpenSSL (Debian libssl-dev) for DTLS-SRTP, as Janus itself uses it.
// Swift cannot call OpenSSL's macros (SSL_ctrl and BIO_ctrl behind names)
// nor its variadic key generation: they are wrapped here.
#pragma once
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/// A new P-256 key pair, or NULL.
static inline EVP_PKEY *cssl_generate_p256_key(void) { return EVP_EC_gen("P-256"); }

/// How long until the handshake's retransmission is due; 1 and *usec set
/// when a timer runs, 0 when none does.
static inline int cssl_dtls_timeout(SSL *ssl, long long *usec) {
    struct timeval tv = { 0, 0 };
    if (DTLSv1_get_timeout(ssl, &tv) != 1) return 0;
    *usec = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
    return 1;
}

/// Retransmits the handshake flight when its timer has run out.
static inline int cssl_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }

/// A memory BIO that reads as "retry later" (not end of file) when empty.
static inline BIO *cssl_datagram_memory_bio(void) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio) BIO_set_mem_eof_return(bio, -1);
    return bio;
}

/// The largest DTLS record OpenSSL may write (no path MTU discovery on a memory BIO).
static inline void cssl_set_mtu(SSL *ssl, long mtu) {
    SSL_set_options(ssl, SSL_OP_NO_QUERY_MTU);
    DTLS_set_link_mtu(ssl, mtu);
}
