import Foundation
import GrocerFastPath
import Testing

@testable import GrocerCore

@Suite struct TimestampTests {
  @Test func formatsUTCWithWholeSeconds() {
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 1_792_521_720.7)) == "2026-10-20T18:42:00Z")
    #expect(Timestamp.string(from: Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00Z")
  }

  @Test func parsesWhatItFormats() {
    let date = Date(timeIntervalSince1970: 1_792_521_720)
    #expect(Timestamp.date(from: Timestamp.string(from: date)) == date)
    #expect(Timestamp.date(from: "2026-10-20T20:42:00+02:00") == date)
    #expect(Timestamp.date(from: "yesterday") == nil)
  }
}

@Suite struct HTTPDateTests {
  static func httpDate(_ seconds: Int) -> String {
    var bytes = [UInt8](repeating: 0, count: Timestamp.httpDateLength)
    bytes.withUnsafeMutableBytes { Timestamp.writeHTTPDate(seconds, into: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  @Test(arguments: [
    (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
    (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),  // RFC 9110's own example
    (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
    (1_709_251_199, "Thu, 29 Feb 2024 23:59:59 GMT"),
    (1_796_169_600, "Wed, 02 Dec 2026 00:00:00 GMT"),
    (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
    (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
  ])
  func knownDates(seconds: Int, expected: String) {
    #expect(Self.httpDate(seconds) == expected)
  }

  /// Agrees with Foundation's formatter on a spread of times, every weekday and month.
  @Test func agreesWithDateFormatter() {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    var seconds = 0
    while seconds < 4_000_000_000 {
      #expect(Self.httpDate(seconds) == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))))
      seconds += 7_919_993  // about 92 days: walks through weekdays, months and leap years
    }
  }
}

@Suite struct UniqueIDTests {
  @Test func randomIDsAreVersionFourUUIDs() {
    let ids = RandomIDs()
    let values = (0..<1000).map { _ in ids.next() }
    #expect(Set(values).count == 1000)
    for value in values.prefix(50) {
      let parsed = UUID(uuidString: value)
      #expect(parsed != nil, "\(value)")
      #expect(value == value.lowercased())
      let characters = Array(value)
      #expect(characters[14] == "4")
      #expect("89ab".contains(characters[19]))
    }
  }

  @Test func processUniqueIDsNeverRepeatAndDifferBetweenGenerators() async {
    let first = ProcessUniqueIDs()
    let values = await withTaskGroup(of: [String].self) { group in
      for _ in 0..<4 { group.addTask { (0..<500).map { _ in first.next() } } }
      return await group.reduce(into: []) { $0 += $1 }
    }
    #expect(Set(values).count == 2000)
    // Threads on one stripe, and on each of the others.
    let striped = await withTaskGroup(of: [String].self) { group in
      for stripe in 0..<(2 * ThreadStripe.count) {
        group.addTask {
          ThreadStripe.adopt(stripe)
          return (0..<200).map { _ in first.next() }
        }
      }
      return await group.reduce(into: []) { $0 += $1 }
    }
    #expect(Set(striped + values).count == 2000 + 200 * 2 * ThreadStripe.count)
    let second = ProcessUniqueIDs()
    #expect(second.next().split(separator: "-").first != first.next().split(separator: "-").first)
  }

  /// Short enough to be an inline `String` (15 bytes) for billions of ids: base 32, 7 + 1 + n.
  /// Stripe 3 of 8 counts 11, 19, 27, 35, …
  @Test func processUniqueIDsAreShortBase32() {
    ThreadStripe.adopt(3)
    let ids = ProcessUniqueIDs()
    let first = ids.next()
    let parts = first.split(separator: "-")
    #expect(parts.count == 2)
    #expect(parts[0].utf8.count == 7)
    #expect(parts[1] == "b")  // 11
    #expect(ids.next().hasSuffix("-j"))  // 19
    #expect(ids.next().hasSuffix("-r"))  // 27
    #expect(ids.next().hasSuffix("-13"))  // 35
    #expect(
      first.utf8.allSatisfy {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
          || (UInt8(ascii: "a")...UInt8(ascii: "v")).contains($0) || $0 == UInt8(ascii: "-")
      })
    #expect(first.utf8.count <= 15)
  }
}

@Suite struct TimestampParsingTests {
  @Test(arguments: [0, 951_782_400, 1_792_521_720, 4_102_444_799, -86_400])
  func theFastPathReadsWhatTheFormatterWrites(seconds: Int) {
    let date = Date(timeIntervalSince1970: TimeInterval(seconds))
    #expect(Timestamp.fastDate(from: Timestamp.string(from: date)) == date)
  }

  @Test(arguments: [
    "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-10-20T24:00:00Z", "2026-10-20 18:42:00Z",
  ])
  func theFastPathRefusesWhatIsNotATime(text: String) {
    #expect(Timestamp.fastDate(from: text) == nil)
  }
}
