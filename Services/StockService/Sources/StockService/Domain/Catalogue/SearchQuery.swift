import Foundation

/// What a customer typed into search, made into terms that match as prefixes: "hafer" finds
/// "Haferdrink", "müsli" finds "Müsli" and "Musli".
///
/// Terms are the runs of letters and digits, lowercased and stripped of diacritics; a hub's
/// `SearchIndex` folds its products' words the same way.
public struct SearchQuery: Hashable, Sendable {
  public let terms: [String]

  public static let maximumLength = 100
  public static let maximumTerms = 8

  public init(_ text: String?) throws(DomainError) {
    guard let text else { throw .invalidQuery("is required") }
    guard text.count <= Self.maximumLength else {
      throw .invalidQuery("must be at most \(Self.maximumLength) characters")
    }
    let terms = Self.terms(of: text)
    guard !terms.isEmpty else { throw .invalidQuery("must contain a letter or a digit") }
    guard terms.count <= Self.maximumTerms else {
      throw .invalidQuery("must have at most \(Self.maximumTerms) words")
    }
    self.terms = terms
  }

  /// The terms joined by spaces: what a search cursor is bound to, so "Hafer " and "hafer"
  /// share their pages.
  public var normalized: String { terms.joined(separator: " ") }

  /// Lowercased runs of letters and digits with their diacritics removed.
  ///
  /// A hub's search index takes every word of its products through here, so the text is cut at
  /// ASCII punctuation and spaces first and only pieces holding other characters are folded by
  /// Foundation; an ASCII piece is a word already.
  public static func terms(of text: String) -> [String] {
    var terms: [String] = []
    var piece: [UInt8] = []
    var pieceIsASCII = true
    func endPiece() {
      guard !piece.isEmpty else { return }
      if pieceIsASCII {
        terms.append(String(decoding: piece, as: UTF8.self))
      } else {
        terms += foldedTerms(of: String(decoding: piece, as: UTF8.self))
      }
      piece.removeAll(keepingCapacity: true)
      pieceIsASCII = true
    }
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): piece.append(byte)
      case UInt8(ascii: "A")...UInt8(ascii: "Z"): piece.append(byte + 32)
      case 0x80...:
        // Part of a character beyond ASCII (none of whose UTF-8 bytes is below 0x80).
        piece.append(byte)
        pieceIsASCII = false
      default: endPiece()
      }
    }
    endPiece()
    return terms
  }

  /// `terms(of:)` for text holding characters beyond ASCII: folded whole, then cut into runs.
  private static func foldedTerms(of text: String) -> [String] {
    var terms: [String] = []
    var current = String.UnicodeScalarView()
    for scalar in fold(text).unicodeScalars {
      if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
        current.append(scalar)
      } else if !current.isEmpty {
        terms.append(String(current))
        current = String.UnicodeScalarView()
      }
    }
    if !current.isEmpty { terms.append(String(current)) }
    return terms
  }

  /// `text` lowercased, its letters decomposed and their combining marks dropped ("Ä" → "a").
  public static func fold(_ text: String) -> String {
    var folded = String.UnicodeScalarView()
    for scalar in text.lowercased().decomposedStringWithCanonicalMapping.unicodeScalars
    where scalar.properties.generalCategory != .nonspacingMark {
      folded.append(scalar)
    }
    return String(folded)
  }
}
