#ifndef COpenSSL_SHIM_H
#define COpenSSL_SHIM_H
// libcrypto's MAC and digest APIs, used only by GrocerAuth (HMAC-SHA256 for HS256 tokens).
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#endif
