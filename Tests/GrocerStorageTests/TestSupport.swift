import Dispatch
import Foundation
import GrocerCore
import Synchronization

@testable import GrocerSQLite
@testable import GrocerStorage

/// A fresh database path in its own temporary folder (a nested one, to check folder creation).
struct TemporaryDatabase {
  let folder: URL
  var path: String { folder.appendingPathComponent("data/service.sqlite").path }

  init() {
    folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("grocer-storage-tests-\(UUID().uuidString)")
  }

  func open(
    migrations: [Migration] = [], durability: SQLiteDatabase.Durability = .normal, readers: Int = 2,
    checkpointPages: Int = 1000
  ) throws -> SQLiteDatabase {
    try SQLiteDatabase(
      path: path, migrations: migrations, durability: durability, readers: readers,
      checkpointPages: checkpointPages, logger: .discarding())
  }

  /// The size in bytes of the database file, or of its log with `suffix` "-wal"; 0 if missing.
  func fileSize(_ suffix: String = "") -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? Int) ?? 0
  }

  func remove() { try? FileManager.default.removeItem(at: folder) }
}

struct TestFailure: Error, Equatable {}
struct BrokerDown: Error {}

func message(_ number: Int, type: String = "stock.changed") -> OutgoingMessage {
  OutgoingMessage(
    messageID: "msg-\(number)", routingKey: type, type: type, body: Data("{\"n\":\(number)}".utf8),
    timestamp: Date(timeIntervalSince1970: 1_790_000_000 + Double(number)), correlationID: "req-\(number)")
}

/// Records what it is asked to publish; fails the first `failures` calls (without recording).
final class RecordingPublisher: ConfirmedPublisher {
  private struct State {
    var published: [OutgoingMessage] = []
    var failuresLeft: Int
    var calls = 0
  }
  private let state: Mutex<State>

  init(failures: Int = 0) { state = Mutex(State(failuresLeft: failures)) }

  var published: [OutgoingMessage] { state.withLock { $0.published } }
  var calls: Int { state.withLock { $0.calls } }

  func publish(_ messages: [OutgoingMessage]) async throws {
    try state.withLock { state in
      state.calls += 1
      if state.failuresLeft > 0 {
        state.failuresLeft -= 1
        throw BrokerDown()
      }
      state.published.append(contentsOf: messages)
    }
  }
}

/// Confirms the first `succeeding` batches, then fails every later call: a broker that went away.
final class FailingAfterPublisher: ConfirmedPublisher {
  private let remaining: Mutex<Int>
  private let recorded = Mutex<[OutgoingMessage]>([])

  init(succeeding: Int) { remaining = Mutex(succeeding) }

  var published: [OutgoingMessage] { recorded.withLock { $0 } }

  func publish(_ messages: [OutgoingMessage]) async throws {
    let allowed = remaining.withLock { left -> Bool in
      guard left > 0 else { return false }
      left -= 1
      return true
    }
    guard allowed else { throw BrokerDown() }
    recorded.withLock { $0.append(contentsOf: messages) }
  }
}

/// Confirms everything at once, for throughput.
struct NoOpPublisher: ConfirmedPublisher {
  func publish(_ messages: [OutgoingMessage]) async throws {}
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) async rethrows -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try condition() { return true }
    try? await Task.sleep(for: .milliseconds(2))
  }
  return try condition()
}

/// Runs each body on its own `Thread` (not the Dispatch pool, which may run them one after the
/// other on a small machine) and returns when all are done.
func runOnThreads(_ bodies: [@Sendable () -> Void]) {
  let group = DispatchGroup()
  for body in bodies {
    group.enter()
    let thread = Thread {
      body()
      group.leave()
    }
    thread.start()
  }
  group.wait()
}

/// Records what it publishes; runs `duringFirst` while the first batch is at the "broker" (a
/// commit of another writer landing then).
final class LateCommitPublisher: ConfirmedPublisher {
  private let duringFirst: @Sendable () throws -> Void
  private let state = Mutex<(published: [OutgoingMessage], calls: Int)>(([], 0))

  init(duringFirst: @escaping @Sendable () throws -> Void) { self.duringFirst = duringFirst }

  var published: [OutgoingMessage] { state.withLock { $0.published } }

  func publish(_ messages: [OutgoingMessage]) async throws {
    let first = state.withLock { state -> Bool in
      state.calls += 1
      return state.calls == 1
    }
    if first { try duringFirst() }
    state.withLock { $0.published.append(contentsOf: messages) }
  }
}
