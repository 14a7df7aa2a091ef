#ifndef CCurl_SHIM_H
#define CCurl_SHIM_H
// libcurl (Debian's libcurl4-openssl-dev, built with nghttp2): the HTTP/2 client for APNs,
// used only by GrocerHTTPClient.
#include <curl/curl.h>

// Swift cannot call variadic C functions nor import cast macros: these typed helpers expose
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt for the argument kinds we use.

static inline CURLcode grocer_curl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
  return curl_easy_setopt(handle, option, value);
}

static inline CURLcode grocer_curl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
  return curl_easy_setopt(handle, option, value);
}

/// Strings are copied by libcurl (all options we pass this way except POSTFIELDS, which we avoid).
static inline CURLcode grocer_curl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
  return curl_easy_setopt(handle, option, value);
}

static inline CURLcode grocer_curl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
  return curl_easy_setopt(handle, option, value);
}

static inline CURLcode grocer_curl_easy_setopt_slist(CURL *handle, CURLoption option,
                                                     struct curl_slist *value) {
  return curl_easy_setopt(handle, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same signature).
static inline CURLcode grocer_curl_easy_setopt_write_callback(CURL *handle, CURLoption option,
                                                              curl_write_callback value) {
  return curl_easy_setopt(handle, option, value);
}

static inline CURLcode grocer_curl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
  return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode grocer_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
  return curl_multi_setopt(multi, option, value);
}

static const long GROCER_CURL_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const long GROCER_CURLPIPE_MULTIPLEX = CURLPIPE_MULTIPLEX;
static const long GROCER_CURL_ERROR_SIZE = CURL_ERROR_SIZE;
static const CURLversion GROCER_CURLVERSION_NOW = CURLVERSION_NOW;
#endif
