import Foundation
import GrocerCore
import Synchronization
import Testing

@testable import GrocerSQLite
@testable import GrocerStorage

/// Writes queued on the writer queue commit together, each in its own savepoint.
@Suite struct GroupCommitTests {
  static let items = Migration(
    version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")

  @Test func concurrentWritesAllCommitAndAFailingOneIsRolledBackAlone() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let commits = Atomic<Int>(0)
    database.onCommit { commits.add(1, ordering: .relaxed) }
    let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
      for index in 0..<200 {
        group.addTask {
          do {
            try await database.onWriterQueue {
              try database.write { db in
                try db.execute("INSERT INTO items (id, name) VALUES (?, ?)", index, "item-\(index)")
                db.wakeCommitObservers()
                // Every tenth write breaks a rule after its insert: only it is undone.
                if index % 10 == 0 {
                  try db.execute(
                    "INSERT INTO items (id, name) VALUES (?, ?)", 10_000 + index, "item-\(index)")
                }
              }
            }
            return (index, true)
          } catch {
            return (index, false)
          }
        }
      }
      var all: [Int: Bool] = [:]
      for await (index, ok) in group { all[index] = ok }
      return all
    }
    #expect(outcomes.filter { !$0.value }.keys.sorted() == Array(stride(from: 0, to: 200, by: 10)))
    let stored = try database.read { try $0.query("SELECT id FROM items ORDER BY id").map { try $0.int(0) } }
    #expect(stored == (0..<200).filter { $0 % 10 != 0 })
    // Fewer commits than writes: they were grouped (at least the first one runs alone).
    #expect(commits.load(ordering: .relaxed) >= 1)
    #expect(commits.load(ordering: .relaxed) < 200)
  }

  @Test func aWriteSubmittedToAnIdleWriterIsCommittedAndAnsweredOnTheCallersThread() throws {
    for durability in [SQLiteDatabase.Durability.normal, .full] {
      let temp = TemporaryDatabase()
      defer { temp.remove() }
      let database = try temp.open(migrations: [Self.items], durability: durability)
      let caller = pthread_self()
      let answer = Mutex<(onCaller: Bool, result: Result<Int, any Error>)?>(nil)
      let done = DispatchSemaphore(value: 0)
      database.submitWrite({
        try database.write { db in
          try db.execute("INSERT INTO items (id, name) VALUES (1, 'one')")
          return 1
        }
      }) { result in
        answer.withLock { $0 = (pthread_equal(pthread_self(), caller) != 0, result) }
        done.signal()
      }
      // `.normal`: answered before `submitWrite` returned; `.full` (whose commit waits for the
      // disk) goes through the writer queue's thread.
      let answeredAtOnce = answer.withLock { $0 != nil }
      done.wait()
      let (onCaller, result) = try #require(answer.withLock { $0 })
      #expect(try result.get() == 1)
      if durability == .normal { #expect(answeredAtOnce) }
      #expect(onCaller == (durability == .normal))
      #expect(try database.read { try $0.queryOne("SELECT count(*) FROM items")?.int(0) } == 1)
    }
  }

  @Test func afterCommitActionsRunOnceCommittedAndNeverForARolledBackWrite() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let seen = Mutex<[String]>([])
    try database.write { db in
      try db.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
      database.afterCommit {
        // By now the row is visible to readers.
        let visible = (try? database.read { try $0.queryOne("SELECT 1 FROM items WHERE id = 1") }) != nil
        seen.withLock { $0.append("sync committed, visible: \(visible == true)") }
      }
    }
    #expect(throws: TestFailure.self) {
      try database.write { _ in
        database.afterCommit { seen.withLock { $0.append("rolled back") } }
        throw TestFailure()
      }
    }
    _ = try? await database.onWriterQueue {
      try database.write { _ in
        database.afterCommit { seen.withLock { $0.append("savepoint rolled back") } }
        throw TestFailure()
      }
    }
    try await database.onWriterQueue {
      try database.write { db in
        try db.execute("INSERT INTO items (id, name) VALUES (2, 'b')")
        database.afterCommit { seen.withLock { $0.append("batch committed") } }
      }
    }
    #expect(seen.withLock { $0 } == ["sync committed, visible: true", "batch committed"])
  }

  /// A statement that ends the whole transaction (`INSERT OR ROLLBACK`, and SQLite does the same
  /// by itself on some I/O or memory errors) inside one write of a batch: the writes after it must
  /// not commit on their own while their batch is reported failed, and none reported done may be
  /// lost.
  @Test func aWriteThatEndsTheBatchTransactionFailsTheBatchWithoutCommittingTheRest() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (1, 'taken')") }
    var reportedDone = true
    do {
      try await database.onWriterQueue {
        try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (2, 'before')") }
        _ = try? database.write {
          try $0.execute("INSERT OR ROLLBACK INTO items (id, name) VALUES (3, 'taken')")
        }
        try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (4, 'after')") }
      }
    } catch {
      reportedDone = false
    }
    let stored = try database.read { try $0.query("SELECT id FROM items ORDER BY id").map { try $0.int(0) } }
    switch reportedDone {
    case true:
      // Reported done: both writes that succeeded must be there.
      #expect(stored == [1, 2, 4])
    case false:
      // Reported failed: nothing of it may have committed.
      #expect(stored == [1])
    }
  }

  /// The outbox relay's `writeAsync` shares the writer queue with batched HTTP writes; a steady
  /// stream of batches (more writers than one batch holds, so some are always waiting) must not
  /// hold it back until the stream stops.
  @Test func aWriteAsyncIsNotStarvedByAStreamOfBatchedWrites() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let stop = StopFlag()
    let next = StopFlag()
    let streams = (0..<300).map { _ in
      Task {
        while !stop.stopped.load(ordering: .relaxed) {
          let id = next.count.add(1, ordering: .relaxed).newValue
          try await database.onWriterQueue {
            try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (?, ?)", id, "s\(id)") }
            usleep(50)
          }
        }
      }
    }
    // Whatever happens, the stream stops after three seconds.
    let stopper = Task {
      try await Task.sleep(for: .seconds(3))
      stop.stopped.store(true, ordering: .relaxed)
    }
    try await Task.sleep(for: .milliseconds(100))
    let started = ContinuousClock.now
    try await database.writeAsync { try $0.execute("INSERT INTO items (id, name) VALUES (-1, 'relay')") }
    let waited = ContinuousClock.now - started
    stop.stopped.store(true, ordering: .relaxed)
    for stream in streams { try await stream.value }
    try await stopper.value
    #expect(waited < .seconds(1), "writeAsync waited \(waited) behind the batches")
  }

  @Test func aWriteInsideAWriteIsRefusedInABatchAsOutsideOne() async throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    await #expect(throws: StorageError.self) { () async throws in
      try await database.onWriterQueue {
        try database.write { db in
          try db.execute("INSERT INTO items (id, name) VALUES (1, 'outer')")
          try database.write { try $0.execute("INSERT INTO items (id, name) VALUES (2, 'inner')") }
        }
      }
    }
    #expect(try database.read { try $0.query("SELECT id FROM items").count } == 0)
  }

  @Test func anAfterCommitActionOutsideAWriteRunsAtOnce() throws {
    let temp = TemporaryDatabase()
    defer { temp.remove() }
    let database = try temp.open(migrations: [Self.items])
    let ran = Atomic<Bool>(false)
    database.afterCommit { ran.store(true, ordering: .relaxed) }
    let didRun = ran.load(ordering: .relaxed)
    #expect(didRun)
    // And it does not linger to run at the next, unrelated commit.
    let later = Atomic<Int>(0)
    database.onCommit { later.add(1, ordering: .relaxed) }
    try database.write { db in
      try db.execute("INSERT INTO items (id, name) VALUES (1, 'a')")
      db.wakeCommitObservers()
    }
    let commits = later.load(ordering: .relaxed)
    #expect(commits == 1)
  }
}

/// Shared between the tasks of a test.
private final class StopFlag: Sendable {
  let stopped = Atomic<Bool>(false)
  let count = Atomic<Int>(0)
}
