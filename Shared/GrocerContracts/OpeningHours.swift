import Foundation

/// A hub's weekly opening hours in its own IANA time zone.
///
/// Wire shape: `{ "timeZone": "Europe/Berlin", "weekly": [ { "day": "mon", "opens": "07:00",
/// "closes": "23:00" }, … ] }`. A day may have several intervals. `closes` at or before `opens`
/// means the interval runs past midnight into the next day (`"22:00"`–`"02:00"`); a whole day is
/// `"00:00"`–`"24:00"`, and intervals that touch are one opening (a 24/7 hub never "closes").
/// Times are wall-clock times in `timeZone`, so daylight-saving changes are followed.
public struct OpeningHours: Codable, Hashable, Sendable {
  public var timeZone: String
  public var weekly: [Interval]

  /// One opening: `day` at `opens` until `closes` (the next day if `closes <= opens`).
  public struct Interval: Codable, Hashable, Sendable {
    public var day: Weekday
    public var opens: LocalTime
    public var closes: LocalTime

    public init(day: Weekday, opens: LocalTime, closes: LocalTime) {
      self.day = day
      self.opens = opens
      self.closes = closes
    }
  }

  public init(timeZone: String, weekly: [Interval]) {
    self.timeZone = timeZone
    self.weekly = weekly
  }

  /// The same hours every day of the week.
  public static func daily(opens: LocalTime, closes: LocalTime, timeZone: String = "Europe/Berlin") -> Self {
    OpeningHours(
      timeZone: timeZone, weekly: Weekday.allCases.map { Interval(day: $0, opens: opens, closes: closes) })
  }

  /// At most this many intervals, so `status(at:)` stays cheap.
  public static let maximumIntervals = 28

  /// Known time zone, `opens` not `24:00`, no empty interval, at most 28 intervals.
  public func validate() throws(ContractError) {
    guard TimeZone(identifier: timeZone) != nil else {
      throw .invalidHours("`timeZone` `\(timeZone.prefix(64))` is not an IANA time zone")
    }
    guard weekly.count <= Self.maximumIntervals else {
      throw .invalidHours("may have at most \(Self.maximumIntervals) intervals")
    }
    for (index, interval) in weekly.enumerated() {
      guard interval.opens.minutes < LocalTime.endOfDay.minutes else {
        throw .invalidHours("`weekly[\(index)].opens` must be before 24:00")
      }
      guard interval.opens != interval.closes else {
        throw .invalidHours(
          "`weekly[\(index)]` opens and closes at the same time; use 00:00–24:00 for all day")
      }
    }
  }

  /// Whether the hub is open at `now`; if closed, when it next opens (nil if never within a
  /// week); if open, when it closes (nil if not within a week, e.g. a 24/7 hub).
  public func status(at now: Date) -> HoursStatus {
    guard let zone = TimeZone(identifier: timeZone), !weekly.isEmpty else {
      return HoursStatus(isOpen: false, opensAt: nil, closesAt: nil)
    }
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = zone
    let today = calendar.startOfDay(for: now)
    // Day starts (local midnight) from yesterday (for openings past midnight) to 8 days ahead.
    var days: [DateComponents] = []
    for offset in -1...8 {
      guard let day = calendar.date(byAdding: .day, value: offset, to: today) else { return .closed }
      days.append(calendar.dateComponents([.year, .month, .day, .weekday], from: day))
    }
    func instant(_ dayIndex: Int, _ minutes: Int) -> Date? {
      var index = dayIndex
      var minutes = minutes
      if minutes >= LocalTime.endOfDay.minutes {
        index += 1
        minutes -= LocalTime.endOfDay.minutes
      }
      guard index < days.count else { return nil }
      var components = days[index]
      components.weekday = nil
      components.hour = minutes / 60
      components.minute = minutes % 60
      return calendar.date(from: components)
    }
    var spans: [(start: Date, end: Date)] = []
    for dayIndex in 0..<(days.count - 1) {
      let weekday = Weekday(calendarWeekday: days[dayIndex].weekday ?? 1)
      for interval in weekly where interval.day == weekday {
        let closes =
          interval.closes.minutes <= interval.opens.minutes
          ? interval.closes.minutes + LocalTime.endOfDay.minutes : interval.closes.minutes
        guard let start = instant(dayIndex, interval.opens.minutes), let end = instant(dayIndex, closes),
          start < end
        else { continue }
        spans.append((start, end))
      }
    }
    spans.sort { $0.start < $1.start }
    var merged: [(start: Date, end: Date)] = []
    for span in spans {
      if let last = merged.last, span.start <= last.end {
        merged[merged.count - 1].end = max(last.end, span.end)
      } else {
        merged.append(span)
      }
    }
    let horizon = instant(days.count - 1, 0) ?? now
    for span in merged where span.end > now {
      if span.start <= now {
        return HoursStatus(isOpen: true, opensAt: nil, closesAt: span.end >= horizon ? nil : span.end)
      }
      return HoursStatus(isOpen: false, opensAt: span.start, closesAt: nil)
    }
    return .closed
  }
}

/// Whether a hub is open at one instant. Encodes `opensAt`/`closesAt` as `null` when absent.
public struct HoursStatus: Codable, Hashable, Sendable {
  public var isOpen: Bool
  /// When a closed hub opens next; nil when open or when it never opens within a week.
  public var opensAt: Date?
  /// When an open hub closes; nil when closed or when it stays open for more than a week.
  public var closesAt: Date?

  public init(isOpen: Bool, opensAt: Date?, closesAt: Date?) {
    self.isOpen = isOpen
    self.opensAt = opensAt
    self.closesAt = closesAt
  }

  public static let closed = HoursStatus(isOpen: false, opensAt: nil, closesAt: nil)

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(isOpen, forKey: .isOpen)
    try container.encode(opensAt, forKey: .opensAt)
    try container.encode(closesAt, forKey: .closesAt)
  }
}

/// A day of the week on the wire: `"mon"` … `"sun"`.
public enum Weekday: String, Codable, Hashable, Sendable, CaseIterable {
  case mon, tue, wed, thu, fri, sat, sun

  /// From `Calendar`'s numbering (1 = Sunday … 7 = Saturday).
  public init(calendarWeekday: Int) {
    self = [.sun, .mon, .tue, .wed, .thu, .fri, .sat][(calendarWeekday - 1 + 7) % 7]
  }

  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    guard let day = Weekday(rawValue: text) else {
      throw ContractError.invalidHours(
        "`day` must be one of mon, tue, wed, thu, fri, sat, sun, got `\(text.prefix(16))`")
    }
    self = day
  }
}

/// A wall-clock time of day, `"HH:MM"` from `"00:00"` to `"24:00"` (only as a closing time).
public struct LocalTime: Codable, Hashable, Sendable, Comparable, CustomStringConvertible {
  /// Minutes since midnight, 0…1440.
  public let minutes: Int

  public static let endOfDay = LocalTime(validMinutes: 1440)
  public static let midnight = LocalTime(validMinutes: 0)

  private init(validMinutes: Int) { minutes = validMinutes }

  /// Nil unless `hour:minute` is a time of day or exactly 24:00.
  public init?(hour: Int, minute: Int) {
    guard (0...23).contains(hour) && (0...59).contains(minute) || (hour == 24 && minute == 0) else {
      return nil
    }
    minutes = hour * 60 + minute
  }

  /// Parses exactly `HH:MM`.
  public init?(_ text: String) {
    let bytes = Array(text.utf8)
    guard bytes.count == 5, bytes[2] == UInt8(ascii: ":") else { return nil }
    func digit(_ byte: UInt8) -> Int? {
      byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int(byte - UInt8(ascii: "0")) : nil
    }
    guard let h1 = digit(bytes[0]), let h2 = digit(bytes[1]), let m1 = digit(bytes[3]),
      let m2 = digit(bytes[4])
    else { return nil }
    self.init(hour: h1 * 10 + h2, minute: m1 * 10 + m2)
  }

  public var description: String {
    let hour = minutes / 60
    let minute = minutes % 60
    return (hour < 10 ? "0" : "") + String(hour) + ":" + (minute < 10 ? "0" : "") + String(minute)
  }

  public static func < (lhs: LocalTime, rhs: LocalTime) -> Bool { lhs.minutes < rhs.minutes }

  public init(from decoder: any Decoder) throws {
    let text = try decoder.singleValueContainer().decode(String.self)
    guard let time = LocalTime(text) else {
      throw ContractError.invalidHours(
        "times must be HH:MM between 00:00 and 24:00, got `\(text.prefix(16))`")
    }
    self = time
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }
}
