import CCurl
import GrocerCore

/// The HTTP/2 client on libcurl (the only module that imports it). Being written.
enum CurlVersion {
  /// libcurl's version text, e.g. "libcurl/7.88.1 OpenSSL/3.0 … nghttp2/1.52.0".
  static var text: String { String(cString: curl_version()) }
}
