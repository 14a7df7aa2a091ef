import Testing

@testable import GrocerAuth

@Suite struct Base64URLTests {
  @Test func encodesWithoutPaddingInTheURLAlphabet() {
    #expect(Base64URL.encode([]) == "")
    #expect(Base64URL.encode(Array("f".utf8)) == "Zg")
    #expect(Base64URL.encode(Array("fo".utf8)) == "Zm8")
    #expect(Base64URL.encode(Array("foo".utf8)) == "Zm9v")
    #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
  }

  @Test func decodesWhatItEncodesForEveryLength() {
    for length in 0..<40 {
      let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
      #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
    }
  }

  @Test func refusesPaddingStandardAlphabetAndGarbage() {
    #expect(Base64URL.decode("Zg==") == nil)
    #expect(Base64URL.decode("+/+/") == nil)
    #expect(Base64URL.decode("Zm 9") == nil)
    #expect(Base64URL.decode("Zm9v\n") == nil)
    #expect(Base64URL.decode("\u{00e9}\u{00e9}") == nil)
  }

  @Test func refusesImpossibleLengthsAndNonCanonicalTrailingBits() {
    #expect(Base64URL.decode("Z") == nil)
    #expect(Base64URL.decode("Zm9vY") == nil)
    #expect(Base64URL.decode("Zh") == nil)  // "Zg" with a stray low bit
    #expect(Base64URL.decode("Zm9") == nil)  // "Zm8" with a stray low bit
  }
}
