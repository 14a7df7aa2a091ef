import Foundation

/// RFC 3339 timestamps in UTC with whole seconds (`2026-10-20T18:42:00Z`), the only time format
/// on the wire.
///
/// Formatting is done by hand from the epoch seconds: it is on hot paths (`asOf` in stock
/// replies) where a `DateFormatter` would cost more than the rest of the reply.
public enum Timestamp {
  public static func string(from date: Date) -> String {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(20)
    append(date, to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Appends the RFC 3339 text of `date` (20 ASCII bytes) to `bytes`, for writers that build
  /// a body by hand.
  public static func append(_ date: Date, to bytes: inout [UInt8]) {
    let seconds = Int(date.timeIntervalSince1970.rounded(.down))
    var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = seconds - days * 86_400
    // Civil-from-days (Howard Hinnant's algorithm).
    days += 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    appendDigits(year, 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(month, 2, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(day, 2, to: &bytes)
    bytes.append(UInt8(ascii: "T"))
    appendDigits(secondOfDay / 3600, 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(secondOfDay % 3600 / 60, 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(secondOfDay % 60, 2, to: &bytes)
    bytes.append(UInt8(ascii: "Z"))
  }

  /// `value` in at least `width` decimal digits (a year past 9999 keeps all of its digits).
  private static func appendDigits(_ value: Int, _ width: Int, to bytes: inout [UInt8]) {
    var digits: [UInt8] = []
    var rest = max(0, value)
    repeat {
      digits.append(UInt8(ascii: "0") + UInt8(rest % 10))
      rest /= 10
    } while rest > 0
    for _ in digits.count..<max(width, digits.count) { bytes.append(UInt8(ascii: "0")) }
    bytes.append(contentsOf: digits.reversed())
  }

  /// Parses RFC 3339 with `Z` or a numeric offset, with or without fractional seconds.
  ///
  /// The wire's own form (`2026-10-20T18:42:00Z`) is parsed by hand: consumers parse a time in
  /// every event, and a formatter per call (ICU underneath) cost more than the rest of the event.
  public static func date(from string: String) -> Date? {
    if let date = fastDate(from: string) { return date }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    if let date = formatter.date(from: string) { return date }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: string)
  }

  /// `YYYY-MM-DDTHH:MM:SSZ` exactly, or nil.
  static func fastDate(from string: String) -> Date? {
    let bytes = Array(string.utf8)
    guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
      bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
      bytes[19] == UInt8(ascii: "Z")
    else { return nil }
    func number(_ range: Range<Int>) -> Int? {
      var value = 0
      for index in range {
        let digit = Int(bytes[index]) - 48
        guard (0...9).contains(digit) else { return nil }
        value = value * 10 + digit
      }
      return value
    }
    guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
      let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
      (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
      second < 60
    else { return nil }
    // Days-from-civil (Howard Hinnant's algorithm), the inverse of `string(from:)`.
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let days = era * 146_097 + dayOfEra - 719_468
    return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
  }

  private static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

}
