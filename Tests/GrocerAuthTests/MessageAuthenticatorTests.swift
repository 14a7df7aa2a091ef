import GrocerAuth
import Testing

/// Sealed values: what was sealed comes back; anything altered, another key's or another
/// purpose's, or too long, does not.
@Suite struct MessageAuthenticatorTests {
  let authenticator = MessageAuthenticator(secret: "secret", purpose: "cursor")

  @Test func aSealedValueOpensOnlyUnderItsOwnKeyAndPurpose() {
    let message = Array("1\u{1F}h1\u{1F}p00042".utf8)
    let sealed = authenticator.seal(message)
    #expect(authenticator.open(sealed) == message)
    #expect(MessageAuthenticator(secret: "other", purpose: "cursor").open(sealed) == nil)
    #expect(MessageAuthenticator(secret: "secret", purpose: "other").open(sealed) == nil)
    let parts = sealed.split(separator: ".").map(String.init)
    var tag = Array(parts[1])
    tag[0] = tag[0] == "A" ? "B" : "A"
    let anotherMessage = authenticator.seal(Array("else".utf8)).split(separator: ".")[0]
    for bad in [
      parts[0] + "." + String(tag), anotherMessage + "." + parts[1], parts[0], sealed + "=", "", ".", "a.b.c",
      String(repeating: "A", count: 2000) + "." + parts[1],
    ] {
      #expect(authenticator.open(bad) == nil, "\(bad.prefix(40))")
    }
  }
}
