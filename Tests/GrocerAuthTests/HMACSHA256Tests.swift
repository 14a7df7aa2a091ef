import Testing

@testable import GrocerAuth

/// Known answers from RFC 4231 (HMAC-SHA256 test cases 1, 2 and 6).
@Suite struct HMACSHA256Tests {
  @Test func matchesRFC4231TestCase1() {
    let mac = HMACSHA256(key: [UInt8](repeating: 0x0b, count: 20))!
    #expect(
      mac.authenticationCode(for: Array("Hi There".utf8)).hex
        == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
  }

  @Test func matchesRFC4231TestCase2() {
    let mac = HMACSHA256(key: Array("Jefe".utf8))!
    #expect(
      mac.authenticationCode(for: Array("what do ya want for nothing?".utf8)).hex
        == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
  }

  @Test func matchesRFC4231TestCase6WithAKeyLongerThanTheBlock() {
    let mac = HMACSHA256(key: [UInt8](repeating: 0xaa, count: 131))!
    #expect(
      mac.authenticationCode(for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)).hex
        == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
  }

  @Test func givesTheSameTagOnEveryCallFromOneKey() {
    let mac = HMACSHA256(key: Array("Jefe".utf8))!
    let first = mac.authenticationCode(for: Array("a".utf8))
    #expect(mac.authenticationCode(for: Array("b".utf8)) != first)
    #expect(mac.authenticationCode(for: Array("a".utf8)) == first)
  }

  @Test func comparesTagsOnlyWhenLengthAndBytesMatch() {
    let tag = [UInt8](repeating: 7, count: 32)
    #expect(tag.withUnsafeBytes { HMACSHA256.tagsMatch(tag, $0) })
    var other = tag
    other[31] = 8
    #expect(!other.withUnsafeBytes { HMACSHA256.tagsMatch(tag, $0) })
    #expect(!Array(tag.prefix(31)).withUnsafeBytes { HMACSHA256.tagsMatch(tag, $0) })
    #expect(![UInt8]().withUnsafeBytes { HMACSHA256.tagsMatch(tag, $0) })
  }
}
