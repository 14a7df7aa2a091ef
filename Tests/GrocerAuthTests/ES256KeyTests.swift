import Foundation
import Testing

@testable import GrocerAuth

@Suite struct ES256KeyTests {
  private let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJERUYxMjNHSElKIn0".utf8)

  // MARK: Signatures

  @Test func aSignatureVerifiesWithTheKeysPublicKeyOnly() throws {
    let key = try ES256Key.generate()
    let signature = key.sign(message)
    #expect(signature.count == 64)
    #expect(key.publicKey.verify(signature: signature, message: message))
    #expect(!key.publicKey.verify(signature: signature, message: message + [0x2E]))
    #expect(!(try ES256Key.generate()).publicKey.verify(signature: signature, message: message))
  }

  @Test func signaturesAreRawRAndSEachBelowTheCurveOrder() throws {
    let key = try ES256Key.generate()
    for _ in 0..<64 {
      let signature = key.sign(message)
      try #require(signature.count == 64)
      #expect(ES256Fixtures.isLess(signature[0..<32], than: ES256Fixtures.curveOrder))
      #expect(ES256Fixtures.isLess(signature[32..<64], than: ES256Fixtures.curveOrder))
      #expect(signature[0..<32].contains { $0 != 0 } && signature[32..<64].contains { $0 != 0 })
    }
  }

  /// About one `r` in 256, and one `s`, is shorter than 32 bytes; DER drops the leading zero, and
  /// the raw form must put it back (left padding), or the signature would not verify.
  @Test func aShortRAndAShortSAreLeftPaddedToThirtyTwoBytes() throws {
    let key = try ES256Key.generate()
    var shortR: [UInt8]?
    var shortS: [UInt8]?
    for _ in 0..<20_000 where shortR == nil || shortS == nil {
      let signature = key.sign(message)
      if signature.count == 64, signature[0] == 0 { shortR = signature }
      if signature.count == 64, signature[32] == 0 { shortS = signature }
    }
    for signature in [try #require(shortR), try #require(shortS)] {
      #expect(key.publicKey.verify(signature: signature, message: message))
      let der = ES256Fixtures.derSignature(raw: signature)
      #expect(der.count < 72)
      #expect(ECDSASignature.raw(fromDER: der) == signature)
    }
  }

  /// The raw signature, turned into DER by hand (not by libcrypto's encoder), is accepted by
  /// `EVP_DigestVerify` directly; and our converter produces the same DER bytes.
  @Test func theRawSignatureIsTheSameSignatureAsTheDERLibcryptoChecks() throws {
    let key = try ES256Key.generate()
    let signature = key.sign(message)
    let der = ES256Fixtures.derSignature(raw: signature)
    #expect(ECDSASignature.der(fromRaw: signature) == der)
    #expect(key.publicKey.verify(derSignature: der, message: message))
    #expect(!key.publicKey.verify(derSignature: der, message: Array("other".utf8)))
  }

  /// RFC 7515 A.3: a signature made by another implementation, in the JWS raw form, verifies
  /// with a public key built from the RFC's coordinates; a changed byte does not.
  @Test func verifiesTheES256ExampleOfRFC7515() throws {
    let publicKey = try ES256PublicKey(
      pem: ES256Fixtures.pem(
        "PUBLIC KEY", ES256Fixtures.publicKeyDER(x: ES256Fixtures.rfcX, y: ES256Fixtures.rfcY)))
    let input = Array(ES256Fixtures.rfcSigningInput.utf8)
    #expect(publicKey.verify(signature: ES256Fixtures.rfcSignature, message: input))
    var tampered = ES256Fixtures.rfcSignature
    tampered[63] ^= 0x01
    #expect(!publicKey.verify(signature: tampered, message: input))
    #expect(!publicKey.verify(signature: ES256Fixtures.rfcSignature, message: input.dropLast() + [0x41]))
  }

  /// The RFC's private key, as a PKCS#8 `.p8`-style PEM, yields exactly the RFC's public key, and
  /// what it signs verifies with the key built from the RFC's coordinates.
  @Test func loadsAPKCS8KeyAndDerivesItsPublicKey() throws {
    let key = try ES256Key(
      pem: ES256Fixtures.pem("PRIVATE KEY", ES256Fixtures.p256PrivateKeyDER(d: ES256Fixtures.rfcD)))
    let expectedPublic = ES256Fixtures.pem(
      "PUBLIC KEY", ES256Fixtures.publicKeyDER(x: ES256Fixtures.rfcX, y: ES256Fixtures.rfcY))
    #expect(key.publicKey.pemRepresentation == expectedPublic)
    let rfcPublicKey = try ES256PublicKey(pem: expectedPublic)
    #expect(rfcPublicKey.verify(signature: key.sign(message), message: message))
  }

  @Test func refusesSignaturesOfTheWrongShape() throws {
    let key = try ES256Key.generate()
    let signature = key.sign(message)
    #expect(!key.publicKey.verify(signature: [], message: message))
    #expect(!key.publicKey.verify(signature: Array(signature.dropLast()), message: message))
    #expect(!key.publicKey.verify(signature: signature + [0], message: message))
    // The DER form is what libcrypto makes, but it is not a JWS signature.
    #expect(!key.publicKey.verify(signature: ES256Fixtures.derSignature(raw: signature), message: message))
    // r = 0, and s = n (out of range).
    #expect(
      !key.publicKey.verify(signature: [UInt8](repeating: 0, count: 32) + signature[32...], message: message))
    #expect(
      !key.publicKey.verify(signature: Array(signature[..<32]) + ES256Fixtures.curveOrder, message: message))
    #expect(ECDSASignature.raw(fromDER: ES256Fixtures.derSignature(raw: signature) + [0]) == nil)
    #expect(ECDSASignature.raw(fromDER: [0x30, 0x00]) == nil)
  }

  @Test func signsFromManyTasksAtOnce() async throws {
    let key = try ES256Key.generate()
    let message = message
    let results = await withTaskGroup(of: Bool.self) { group in
      for task in 0..<8 {
        group.addTask {
          (0..<40).allSatisfy { round in
            let input = message + [UInt8(task), UInt8(round)]
            return key.publicKey.verify(signature: key.sign(input), message: input)
          }
        }
      }
      return await group.reduce(into: [Bool]()) { $0.append($1) }
    }
    #expect(results == Array(repeating: true, count: 8))
  }

  // MARK: Loading

  @Test func aKeySurvivesAPEMRoundTrip() throws {
    let key = try ES256Key.generate()
    let pem = key.pemRepresentation
    #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
    #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
    let reloaded = try ES256Key(pem: pem)
    #expect(reloaded.publicKey.pemRepresentation == key.publicKey.pemRepresentation)
    #expect(key.publicKey.verify(signature: reloaded.sign(message), message: message))
    let publicOnly = try ES256PublicKey(pem: key.publicKey.pemRepresentation)
    #expect(publicOnly.verify(signature: key.sign(message), message: message))
  }

  @Test func loadsAKeyFromAP8File() throws {
    let key = try ES256Key.generate()
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "AuthKey_\(UUID().uuidString).p8"
    ).path
    try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let loaded = try ES256Key(contentsOfFile: path)
    #expect(key.publicKey.verify(signature: loaded.sign(message), message: message))
  }

  @Test func namesWhatIsWrongWithABadKey() throws {
    #expect(
      loadError { try ES256Key(contentsOfFile: "/nonexistent/AuthKey.p8") }.map(isUnreadableFile) == true)
    #expect(loadError { try ES256Key(pem: "") }.map(isNotAKey) == true)
    #expect(loadError { try ES256Key(pem: "not a key at all") }.map(isNotAKey) == true)
    #expect(
      loadError { try ES256Key(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        .map(isNotAKey) == true)
    // A public key where the private key is expected, and the other way round.
    let generated = try ES256Key.generate()
    #expect(loadError { try ES256Key(pem: generated.publicKey.pemRepresentation) }.map(isNotAKey) == true)
    #expect(loadError { try ES256PublicKey(pem: generated.pemRepresentation) }.map(isNotAKey) == true)
    #expect(
      loadError {
        try ES256Key(
          pem: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
      } == .encrypted)
    #expect(
      loadError { try ES256Key(pem: ES256Fixtures.pem("PRIVATE KEY", ES256Fixtures.p384PrivateKeyDER)) }
        == .wrongCurve("secp384r1"))
    #expect(
      loadError { try ES256Key(pem: ES256Fixtures.pem("PRIVATE KEY", ES256Fixtures.ed25519PrivateKeyDER)) }
        == .notAnECKey("ED25519"))
  }

  @Test func errorsReadAsSentences() {
    #expect(
      ES256KeyError.wrongCurve("secp384r1").description
        == "the key is on secp384r1; ES256 needs P-256 (prime256v1)")
    #expect(ES256KeyError.encrypted.description.contains("unencrypted PKCS#8"))
  }

  /// What `load` threw (nil when it succeeded, or threw something other than `ES256KeyError`).
  private func loadError<T>(_ load: () throws -> T) -> ES256KeyError? {
    do {
      _ = try load()
      return nil
    } catch {
      return error as? ES256KeyError
    }
  }

  private func isNotAKey(_ error: ES256KeyError) -> Bool {
    if case .notAKey(let reason) = error { return !reason.isEmpty }
    return false
  }

  private func isUnreadableFile(_ error: ES256KeyError) -> Bool {
    if case .unreadableFile(let path, _) = error { return path == "/nonexistent/AuthKey.p8" }
    return false
  }
}
