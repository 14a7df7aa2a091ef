import Foundation
import GrocerHTTP
import Synchronization

/// Reads an `HTTPBodyStream` the way the transport does (parking when there is nothing), for
/// in-process tests of streamed responses.
public final class StreamReader: Sendable {
  public let stream: HTTPBodyStream
  private let received = Mutex<[UInt8]>([])
  private let ended = Atomic<Bool>(false)

  public init(_ stream: HTTPBodyStream) { self.stream = stream }

  /// Everything read so far, as text.
  public var text: String { String(decoding: received.withLock { $0 }, as: UTF8.self) }
  /// The stream ended (finished and sent, or cancelled).
  public var isEnded: Bool { ended.load(ordering: .acquiring) }

  /// Reads until the text read so far satisfies `condition` or the stream ends; false after
  /// `timeout` without it.
  public func read(timeout: Duration = .seconds(5), until condition: (String) -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition(text) {
      if isEnded || ContinuousClock.now >= deadline { return condition(text) }
      drain()
      if !condition(text) && !isEnded { try? await Task.sleep(for: .milliseconds(5)) }
    }
    return true
  }

  /// Takes whatever is queued now.
  public func drain() {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let result = buffer.withUnsafeMutableBytes { stream.read(into: $0, park: {}, wake: {}) }
      switch result {
      case .bytes(let count): received.withLock { $0.append(contentsOf: buffer[0..<count]) }
      case .parked: return
      case .end:
        ended.store(true, ordering: .releasing)
        return
      }
    }
  }

  /// The events read so far: each one's fields (`id`, `data`), comments left out.
  public var events: [[String: String]] {
    text.components(separatedBy: "\n\n").compactMap { block -> [String: String]? in
      var fields: [String: String] = [:]
      for line in block.split(separator: "\n") where !line.hasPrefix(":") {
        let parts = line.split(separator: ":", maxSplits: 1)
        guard parts.count == 2 else { continue }
        fields[String(parts[0])] = String(parts[1].dropFirst(parts[1].hasPrefix(" ") ? 1 : 0))
      }
      return fields["data"] == nil ? nil : fields
    }
  }
}
