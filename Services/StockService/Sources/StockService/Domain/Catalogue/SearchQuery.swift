import Foundation

/// What a customer typed into search, made into terms both engines match as prefixes: "hafer"
/// finds "Haferdrink", "müsli" finds "Müsli" and "Musli".
///
/// Terms are the runs of letters and digits, lowercased and stripped of diacritics (what FTS5's
/// `unicode61 remove_diacritics 2` does to the indexed text), so no character of the query can
/// reach either engine's query syntax.
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

  /// FTS5's MATCH text: every term as a prefix, all of them required.
  public var ftsMatch: String { terms.map { "\"\($0)\"*" }.joined(separator: " ") }

  /// PostgreSQL's `to_tsquery('simple', …)` text: every term as a prefix, all of them required.
  public var tsQuery: String { terms.map { "\($0):*" }.joined(separator: " & ") }

  /// Lowercased runs of letters and digits with their diacritics removed.
  public static func terms(of text: String) -> [String] {
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
