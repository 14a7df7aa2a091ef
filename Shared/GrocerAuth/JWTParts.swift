/// The three parts of a compact JWS (`header.payload.signature`), base64url-decoded.
///
/// Only the shape is checked here: three non-empty-header parts of canonical base64url and a
/// total length within bounds. What the parts say is judged by the verifier.
struct JWTParts: Sendable {
  /// The decoded header JSON bytes.
  var header: [UInt8]
  /// The decoded claim-set JSON bytes.
  var payload: [UInt8]
  /// The decoded signature (empty for `alg: none` tokens, which are refused later).
  var signature: [UInt8]
  /// `base64url(header) + "." + base64url(payload)`: the bytes the signature covers.
  var signingInput: [UInt8]

  /// Splits and decodes `token`, or returns nil when it is not three base64url parts or is longer
  /// than `maximumLength` bytes (checked first, so a huge token costs nothing to refuse).
  init?(_ token: String, maximumLength: Int) {
    guard token.utf8.count <= maximumLength else { return nil }
    var token = token
    guard
      let parts = token.withUTF8({ bytes -> JWTParts? in
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
          let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
          !bytes[(secondDot + 1)...].contains(UInt8(ascii: ".")),
          firstDot > 0, secondDot > firstDot + 1,
          let header = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[..<firstDot])),
          let payload = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(firstDot + 1)..<secondDot])),
          let signature = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(secondDot + 1)...]))
        else { return nil }
        return JWTParts(
          header: header, payload: payload, signature: signature, signingInput: Array(bytes[..<secondDot]))
      })
    else { return nil }
    self = parts
  }

  private init(header: [UInt8], payload: [UInt8], signature: [UInt8], signingInput: [UInt8]) {
    self.header = header
    self.payload = payload
    self.signature = signature
    self.signingInput = signingInput
  }
}
