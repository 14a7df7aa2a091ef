#ifndef COpenSSL_SHIM_H
#define COpenSSL_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
