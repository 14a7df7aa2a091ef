import Foundation
import GrocerAMQP
import GrocerTestSupport
import Synchronization
import Testing

/// `Tests/outside/event_watcher.py`, a pika client none of our code is in, run beside a system:
/// it binds a queue of its own to every event, and once told the order checks what it saw.
final class EventWatcher: @unchecked Sendable {
  static let script = TestBroker.repositoryRoot.appendingPathComponent("Tests/outside/event_watcher.py").path
  private let process: Process
  private let input: Pipe
  private let lines = Mutex<[String]>([])

  /// Starts the watcher on the system's vhost and waits until its queue is bound.
  init(vhost: String?) async throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [Self.script, AMQPConfiguration.defaultURL + (vhost ?? "%2F")]
    input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    // Its stdout, line by line, from a thread of its own (reading blocks).
    Thread.detachNewThread { [self] in
      var pending = Data()
      while true {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          self.lines.withLock { $0.append(line) }
        }
      }
    }
    let ready = await eventually(timeout: .seconds(20)) {
      self.lines.withLock { $0.first?.hasPrefix("ready") == true }
    }
    if !ready { process.terminate() }
    try #require(ready, "the pika watcher did not start (is python3-pika installed? make deps)")
  }

  /// Tells the watcher the order and the checkout's request id, and returns its report once it
  /// has checked (its exit status 0: every check held).
  func check(orderId: String, checkoutRequestId: String) async throws -> (passed: Bool, report: String) {
    let told = try JSONSerialization.data(withJSONObject: [
      "orderId": orderId, "checkoutRequestId": checkoutRequestId,
    ])
    input.fileHandleForWriting.write(told + Data("\n".utf8))
    let finished = await eventually(timeout: .seconds(40)) { !self.process.isRunning }
    if !finished { process.terminate() }
    process.waitUntilExit()
    let report = lines.withLock { $0.dropFirst().joined(separator: "\n") }
    return (finished && process.terminationStatus == 0, report)
  }

  func stop() {
    if process.isRunning { process.terminate() }
  }
}
