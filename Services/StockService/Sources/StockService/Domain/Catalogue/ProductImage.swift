import GrocerCore

/// A photo as the app sizes its tile before the bytes arrive: `{ url, width, height }` in pixels.
///
/// `url` is absolute (`https://…`) or a path on our gateway (`/images/…`); photo URLs carry no
/// hub, so the app's image cache survives a hub switch.
public struct ProductImage: Codable, Hashable, Sendable {
  public var url: String
  public var width: Int
  public var height: Int

  public init(url: String, width: Int, height: Int) {
    self.url = url
    self.width = width
    self.height = height
  }

  public static let maximumSide = 10_000
  public static let maximumURLLength = 500

  /// Checks the rules; `field` names where it sits in the body (`image`, `banners[0].image`).
  public func validate(field: String) throws(DomainError) {
    guard !url.isEmpty, url.utf8.count <= Self.maximumURLLength else {
      throw .invalidImage(field: field, detail: "`url` must be 1 to \(Self.maximumURLLength) bytes")
    }
    guard url.hasPrefix("https://") || url.hasPrefix("http://") || url.hasPrefix("/"),
      !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0 == "\"" || $0 == "\\" })
    else {
      throw .invalidImage(
        field: field, detail: "`url` must be an http(s) URL or a path starting with /, without spaces")
    }
    guard (1...Self.maximumSide).contains(width), (1...Self.maximumSide).contains(height) else {
      throw .invalidImage(
        field: field, detail: "`width` and `height` must be 1 to \(Self.maximumSide) pixels")
    }
  }

  /// Written into a reply by hand (keys sorted, as `JSONEncoder` would).
  func write(to json: inout JSONBytes) {
    json.beginObject()
    json.key("height")
    json.int(height)
    json.key("url")
    json.string(url)
    json.key("width")
    json.int(width)
    json.endObject()
  }
}
