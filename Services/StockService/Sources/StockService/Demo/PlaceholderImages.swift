import Foundation

/// The demo's placeholder photos: a PNG for every image the demo catalogue names, of the size it
/// names, so the app sizes tiles and loads real files from the gateway's `/images/`.
///
/// Each is a two-colour image (a disc on a background, colours from the path), written as a
/// 1-bit palette PNG in stored (uncompressed) deflate blocks: a few kilobytes each, no zlib.
public enum PlaceholderImages {
  /// Writes every image of `DemoCatalogue.images` under `directory` (their URL paths without
  /// `/images/`); returns how many were written.
  @discardableResult
  public static func write(to directory: URL) throws -> Int {
    var written = 0
    for image in DemoCatalogue.images where image.url.hasPrefix("/images/") {
      let file = directory.appendingPathComponent(String(image.url.dropFirst("/images/".count)))
      try FileManager.default.createDirectory(
        at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data(png(width: image.width, height: image.height, seed: image.url)).write(
        to: file, options: .atomic)
      written += 1
    }
    return written
  }

  /// A `width` × `height` PNG whose colours are chosen by `seed`.
  public static func png(width: Int, height: Int, seed: String) -> [UInt8] {
    var hash: UInt32 = 2_166_136_261
    for byte in seed.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
    let hue = Double(hash % 360)
    let palette = rgb(hue: hue, lightness: 0.45) + rgb(hue: hue, lightness: 0.8)
    // Rows of 1-bit pixels, each after its filter byte (0: none); bit 1 is the disc.
    let rowBytes = (width + 7) / 8
    let (centerX, centerY) = (Double(width) / 2, Double(height) / 2)
    let radius = Double(min(width, height)) * 0.3
    var raw: [UInt8] = []
    raw.reserveCapacity((rowBytes + 1) * height)
    for y in 0..<height {
      raw.append(0)
      var row = [UInt8](repeating: 0, count: rowBytes)
      let dy = Double(y) + 0.5 - centerY
      for x in 0..<width {
        let dx = Double(x) + 0.5 - centerX
        if dx * dx + dy * dy <= radius * radius { row[x / 8] |= 0x80 >> UInt8(x % 8) }
      }
      raw += row
    }
    var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    png += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [1, 3, 0, 0, 0])
    png += chunk("PLTE", palette)
    png += chunk("IDAT", zlibStored(raw))
    png += chunk("IEND", [])
    return png
  }

  private static func rgb(hue: Double, lightness: Double) -> [UInt8] {
    // HSL with saturation 0.5.
    let chroma = (1 - abs(2 * lightness - 1)) * 0.5
    let h = hue / 60
    let x = chroma * (1 - abs(h.truncatingRemainder(dividingBy: 2) - 1))
    let (r, g, b): (Double, Double, Double) =
      switch Int(h) {
      case 0: (chroma, x, 0)
      case 1: (x, chroma, 0)
      case 2: (0, chroma, x)
      case 3: (0, x, chroma)
      case 4: (x, 0, chroma)
      default: (chroma, 0, x)
      }
    let m = lightness - chroma / 2
    return [r, g, b].map { UInt8(max(0, min(255, (($0 + m) * 255).rounded()))) }
  }

  /// A zlib stream of `data` in stored deflate blocks (at most 65,535 bytes each).
  private static func zlibStored(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
      let length = min(65_535, data.count - offset)
      let last: UInt8 = offset + length == data.count ? 1 : 0
      out.append(last)
      out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
      out += data[offset..<offset + length]
      offset += length
    } while offset < data.count
    var a: UInt32 = 1
    var b: UInt32 = 0
    for byte in data {
      a = (a + UInt32(byte)) % 65_521
      b = (b + a) % 65_521
    }
    return out + bigEndian(b << 16 | a)
  }

  private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let typed = Array(type.utf8) + data
    return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
  }

  private static let crcTable: [UInt32] = (0..<256).map { n in
    var c = UInt32(n)
    for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
    return c
  }

  private static func crc32(_ bytes: [UInt8]) -> UInt32 {
    var c: UInt32 = 0xFFFF_FFFF
    for byte in bytes { c = crcTable[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
    return c ^ 0xFFFF_FFFF
  }

  private static func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
  }
}
