#ifndef COpenSSL_SHIM_H
#define COpenSSL_SHIM_H
// libcrypto, used only by GrocerAuth: MAC and digest APIs (HMAC-SHA256 for HS256 tokens), and
// PEM keys, EC key generation and ECDSA signatures (ES256 tokens for APNs).
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#endif
