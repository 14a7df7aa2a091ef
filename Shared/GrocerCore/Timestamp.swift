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
    let time = CivilTime(secondsSince1970: Int(date.timeIntervalSince1970.rounded(.down)))
    appendDigits(time.year, 4, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(time.month, 2, to: &bytes)
    bytes.append(UInt8(ascii: "-"))
    appendDigits(time.day, 2, to: &bytes)
    bytes.append(UInt8(ascii: "T"))
    appendDigits(time.secondOfDay / 3600, 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(time.secondOfDay % 3600 / 60, 2, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    appendDigits(time.secondOfDay % 60, 2, to: &bytes)
    bytes.append(UInt8(ascii: "Z"))
  }

  /// Length of an HTTP date (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`).
  public static let httpDateLength = 29

  /// Writes the HTTP date of `secondsSince1970` into `buffer` (at least `httpDateLength`
  /// bytes), for a `Date` header on every response. By hand and without a lock: `gmtime_r`
  /// takes glibc's process-wide time-zone lock, which libmicrohttpd's threads fought over once
  /// per response (a thread that found it held slept in the kernel until the holder, perhaps
  /// preempted, let go). The year is written in four digits (clamped to 0–9999).
  public static func writeHTTPDate(_ secondsSince1970: Int, into buffer: UnsafeMutableRawBufferPointer) {
    let time = CivilTime(secondsSince1970: secondsSince1970)
    let names: StaticString = "SunMonTueWedThuFriSatJanFebMarAprMayJunJulAugSepOctNovDec"
    var index = 0
    func put(_ byte: UInt8) {
      buffer[index] = byte
      index += 1
    }
    func put(name: Int) {
      for offset in 0..<3 { put(names.utf8Start[name * 3 + offset]) }
    }
    func put(digits value: Int, _ width: Int) {
      var divisor = 1
      for _ in 1..<width { divisor *= 10 }
      var rest = value
      while divisor > 0 {
        put(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor % 10))
        rest %= divisor
        divisor /= 10
      }
    }
    put(name: time.weekday)
    put(UInt8(ascii: ","))
    put(UInt8(ascii: " "))
    put(digits: time.day, 2)
    put(UInt8(ascii: " "))
    put(name: 7 + time.month - 1)
    put(UInt8(ascii: " "))
    put(digits: min(max(time.year, 0), 9999), 4)
    put(UInt8(ascii: " "))
    put(digits: time.secondOfDay / 3600, 2)
    put(UInt8(ascii: ":"))
    put(digits: time.secondOfDay % 3600 / 60, 2)
    put(UInt8(ascii: ":"))
    put(digits: time.secondOfDay % 60, 2)
    put(UInt8(ascii: " "))
    put(UInt8(ascii: "G"))
    put(UInt8(ascii: "M"))
    put(UInt8(ascii: "T"))
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

/// The UTC calendar fields of a time in seconds since 1970 (Howard Hinnant's civil-from-days).
struct CivilTime {
  var year: Int
  /// 1–12.
  var month: Int
  /// 1–31.
  var day: Int
  var secondOfDay: Int
  /// 0 (Sunday) – 6 (Saturday).
  var weekday: Int

  init(secondsSince1970 seconds: Int) {
    var days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    secondOfDay = seconds - days * 86_400
    weekday = ((days % 7) + 11) % 7  // 1970-01-01 was a Thursday
    days += 719_468
    let era = (days >= 0 ? days : days - 146_096) / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    day = dayOfYear - (153 * mp + 2) / 5 + 1
    month = mp < 10 ? mp + 3 : mp - 9
    year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  }
}
