import Foundation
import GrocerCore
import Synchronization

/// A structured logger: one JSON object per line.
///
/// Passed in, never created inside a library. Messages are constant; data goes in metadata with
/// dotted keys (`order.id`, `request.id`).
public struct Logger: Sendable {
  public enum Level: Int, Comparable, Sendable {
    case debug, info, notice, warning, error

    public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

    public init?(name: String) {
      switch name.lowercased() {
      case "debug": self = .debug
      case "info": self = .info
      case "notice": self = .notice
      case "warning", "warn": self = .warning
      case "error": self = .error
      default: return nil
      }
    }

    var name: String {
      switch self {
      case .debug: "debug"
      case .info: "info"
      case .notice: "notice"
      case .warning: "warning"
      case .error: "error"
      }
    }
  }

  public let label: String
  public var level: Level
  public var metadata: [String: String]
  private let sink: LogSink

  public init(label: String, level: Level = .info, sink: LogSink = .standardError) {
    self.label = label
    self.level = level
    self.metadata = [:]
    self.sink = sink
  }

  /// A logger that drops everything (for tests that do not look at logs).
  public static func discarding(label: String = "test") -> Logger {
    Logger(label: label, level: .error, sink: .discard)
  }

  public subscript(metadataKey key: String) -> String? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func with(_ extra: [String: String]) -> Logger {
    var copy = self
    copy.metadata.merge(extra) { _, new in new }
    return copy
  }

  public func debug(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    log(.debug, message(), extra)
  }
  public func info(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    log(.info, message(), extra)
  }
  public func notice(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    log(.notice, message(), extra)
  }
  public func warning(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    log(.warning, message(), extra)
  }
  public func error(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    log(.error, message(), extra)
  }

  public func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
    guard level >= self.level else { return }
    var fields = metadata
    fields.merge(extra) { _, new in new }
    var line = "{\"ts\":\"\(Timestamp.string(from: Date()))\",\"level\":\"\(level.name)\","
    line += "\"logger\":\(Self.quote(label)),\"msg\":\(Self.quote(message()))"
    for key in fields.keys.sorted() {
      // Metadata never overrides the line's own fields (readers keep the last duplicate key).
      let name = Self.reservedKeys.contains(key) ? "meta." + key : key
      line += ",\(Self.quote(name)):\(Self.quote(fields[key]!))"
    }
    line += "}\n"
    sink.write(line)
  }

  static let reservedKeys: Set<String> = ["ts", "level", "logger", "msg"]

  static func quote(_ text: String) -> String { JSONText.quoted(text) }
}

/// Where log lines go.
public final class LogSink: Sendable {
  private enum Target { case standardError, discard, memory }
  private let target: Target
  private let captured = Mutex<[String]>([])
  private let writeLock = Mutex(())

  private init(_ target: Target) { self.target = target }

  public static let standardError = LogSink(.standardError)
  public static let discard = LogSink(.discard)
  /// Keeps lines in memory, for tests that assert on logs.
  public static func memory() -> LogSink { LogSink(.memory) }

  public var lines: [String] { captured.withLock { $0 } }

  func write(_ line: String) {
    switch target {
    case .discard: return
    case .memory: captured.withLock { $0.append(line) }
    case .standardError:
      writeLock.withLock { _ in
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
          _ = fputs_bytes(buffer)
        }
      }
    }
  }
}

private func fputs_bytes(_ buffer: UnsafeMutableRawBufferPointer) -> Int {
  var offset = 0
  while offset < buffer.count {
    let written = Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
    if written <= 0 { return offset }
    offset += written
  }
  return offset
}
