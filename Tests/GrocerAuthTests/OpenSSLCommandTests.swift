import Foundation
import GrocerCore
import Testing

@testable import GrocerAuth

/// Provider tokens checked by someone else: the `openssl` command verifies their ES256
/// signatures against the public key, with a key made by `openssl` itself as Apple's `.p8` is.
@Suite struct OpenSSLCommandTests {
  static let openSSL = "/usr/bin/openssl"

  @Test func aProviderTokenVerifiesWithTheOpenSSLCommandAgainstThePublicKey() throws {
    try Self.inDirectory { directory in
      // A .p8-shaped key (PKCS#8 PEM) made by openssl, not by us.
      try Self.run([
        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
        "\(directory)/AuthKey.p8",
      ])
      try Self.run(["pkey", "-in", "\(directory)/AuthKey.p8", "-pubout", "-out", "\(directory)/public.pem"])
      let key = try ES256Key(contentsOfFile: "\(directory)/AuthKey.p8")
      let provider = try APNsProviderToken(
        key: key, keyID: ES256Fixtures.keyID, teamID: ES256Fixtures.teamID,
        clock: ManualClock(ES256Fixtures.start))
      let token = provider.current()
      let parts = try #require(ES256Fixtures.decodedParts(token))
      let input = ES256Fixtures.signingInput(of: token)
      try Data(input).write(to: URL(fileURLWithPath: "\(directory)/input"))
      try Data(Self.der(raw: parts.signature)).write(to: URL(fileURLWithPath: "\(directory)/signature.der"))

      let verified = try Self.run(
        [
          "dgst", "-sha256", "-verify", "\(directory)/public.pem", "-signature", "\(directory)/signature.der",
          "\(directory)/input",
        ])
      #expect(verified.status == 0)
      #expect(verified.output.contains("Verified OK"))

      // One byte of the claims changed: openssl refuses it too.
      var tampered = input
      tampered[tampered.count - 3] ^= 1
      try Data(tampered).write(to: URL(fileURLWithPath: "\(directory)/input"))
      let refused = try Self.run(
        [
          "dgst", "-sha256", "-verify", "\(directory)/public.pem", "-signature", "\(directory)/signature.der",
          "\(directory)/input",
        ],
        allowFailure: true)
      #expect(refused.status != 0)
      #expect(refused.output.contains("Verification failure"))
    }
  }

  @Test func aSignatureMadeByTheOpenSSLCommandVerifiesWithOurPublicKey() throws {
    try Self.inDirectory { directory in
      let key = try ES256Key.generate()
      try key.pemRepresentation.write(toFile: "\(directory)/AuthKey.p8", atomically: true, encoding: .utf8)
      let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJERUYxMjNHSElKIn0".utf8)
      try Data(message).write(to: URL(fileURLWithPath: "\(directory)/input"))
      try Self.run(
        [
          "dgst", "-sha256", "-sign", "\(directory)/AuthKey.p8", "-out", "\(directory)/signature.der",
          "\(directory)/input",
        ])
      let der = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(directory)/signature.der")))
      let raw = try #require(Self.raw(der: der))
      #expect(key.publicKey.verify(signature: raw, message: message))
      #expect(!key.publicKey.verify(signature: raw, message: message + [0x2e]))
    }
  }

  // MARK: - Helpers

  /// JOSE's r ‖ s (32 + 32 bytes) as the DER `SEQUENCE { INTEGER r, INTEGER s }` openssl reads.
  static func der(raw: [UInt8]) -> [UInt8] {
    func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
      var value = Array(bytes.drop { $0 == 0 })
      if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
      return [0x02, UInt8(value.count)] + value
    }
    let body = integer(raw[0..<32]) + integer(raw[32..<64])
    return [0x30, UInt8(body.count)] + body
  }

  /// The DER signature openssl writes, as JOSE's r ‖ s.
  static func raw(der: [UInt8]) -> [UInt8]? {
    guard der.count > 8, der[0] == 0x30 else { return nil }
    var index = 2
    var out: [UInt8] = []
    for _ in 0..<2 {
      guard index + 2 <= der.count, der[index] == 0x02 else { return nil }
      let length = Int(der[index + 1])
      guard index + 2 + length <= der.count else { return nil }
      let value = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
      guard value.count <= 32 else { return nil }
      out += [UInt8](repeating: 0, count: 32 - value.count) + value
      index += 2 + length
    }
    return out
  }

  static func inDirectory(_ body: (String) throws -> Void) throws {
    try #require(FileManager.default.isExecutableFile(atPath: openSSL), "openssl is not installed")
    let directory = NSTemporaryDirectory() + "grocer-openssl-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try body(directory)
  }

  @discardableResult
  static func run(_ arguments: [String], allowFailure: Bool = false) throws -> (status: Int32, output: String)
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: openSSL)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    if !allowFailure {
      try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")): \(output)")
    }
    return (process.terminationStatus, output)
  }
}
