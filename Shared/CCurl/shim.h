#ifndef CCurl_SHIM_H
#define CCurl_SHIM_H
// libcurl (Debian's libcurl4-openssl-dev, built with nghttp2): the HTTP/2 client for APNs,
// used only by GrocerHTTPClient.
#include <curl/curl.h>
#endif
