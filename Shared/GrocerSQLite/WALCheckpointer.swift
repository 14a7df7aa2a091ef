import CSQLite
import Dispatch
import Foundation
import GrocerRuntime
import Synchronization

/// Copies the write-ahead log into the database file, its bulk on a connection and thread of
/// its own.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the log past its threshold,
/// on whichever thread committed (an HTTP transport's too, `submitWrite`), stalling every
/// connection that thread serves while it copies the log and syncs it and the database file.
/// Here that commit only signals: the bulk is copied and synced beside the writer. The frames
/// committed meanwhile are copied by the next commit, as SQLite would, but few; only then is the
/// whole log in the database file, so the write after starts the log over instead of growing it
/// (a checkpoint that only chases the writer never gets there). Those two commits are left to
/// the writer queue (`wantsWriterQueue`).
final class WALCheckpointer: @unchecked Sendable {
  private enum Step: Int {
    case idle, copyingBulk, restDue, startingOver
  }

  private let connection: SQLiteConnection
  /// The database file, to sync what the bulk copied (SQLite skips that sync when the writer
  /// added frames meanwhile, leaving it to the next commit); -1 if it could not be opened.
  private let databaseFile: Int32
  private let queue = DispatchQueue(label: "grocer.storage.checkpoint", qos: .utility)
  private let threshold: Int32
  private let logger: Logger
  private let step = Atomic<Int>(Step.idle.rawValue)
  /// The log's size in frames after the last checkpoint: a log that could not start over (a
  /// reader still on it) is checkpointed again only after `threshold` more.
  private let lastLog = Atomic<Int32>(0)
  private let stopped = Atomic<Bool>(false)
  private let completed = Atomic<Int>(0)

  init(path: String, synchronous: String, threshold: Int32, logger: Logger) throws {
    connection = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
    sqlite3_busy_timeout(try connection.rawHandle(), SQLiteDatabase.busyTimeoutMilliseconds)
    // The connection that checkpoints decides the fsyncs around it.
    try connection.execute("PRAGMA synchronous=\(synchronous)")
    databaseFile = open(path, O_RDONLY | O_CLOEXEC)
    self.threshold = max(1, threshold)
    self.logger = logger
  }

  deinit {
    // Never stopped: the database's init failed after this was made.
    if !stopped.load(ordering: .acquiring), databaseFile >= 0 { close(databaseFile) }
  }

  /// Bulk copies done so far.
  var checkpoints: Int { completed.load(ordering: .acquiring) }

  /// Whether the next commit copies the rest or starts the log over (each with a sync): better
  /// not on a thread that serves requests.
  var wantsWriterQueue: Bool { step.load(ordering: .relaxed) >= Step.restDue.rawValue }

  /// Takes over from SQLite's automatic checkpoint on `writer` (a WAL hook replaces it). The
  /// writer must be closed before this object goes away.
  func attach(to writer: SQLiteConnection) throws {
    let context = Unmanaged.passUnretained(self).toOpaque()
    sqlite3_wal_hook(
      try writer.rawHandle(),
      { context, writer, _, pages in
        Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue().committed(writer, pages)
        return SQLITE_OK
      }, context)
  }

  /// After each commit, on the committing thread with the writer's lock held: copies the rest
  /// once the bulk is done, or schedules the bulk.
  private func committed(_ writer: OpaquePointer?, _ pages: Int32) {
    switch Step(rawValue: step.load(ordering: .acquiring)) {
    case .restDue:
      if let writer, let log = checkpoint(writer) { lastLog.store(log, ordering: .relaxed) }
      step.store(Step.startingOver.rawValue, ordering: .releasing)
      return
    case .startingOver:
      step.store(Step.idle.rawValue, ordering: .releasing)
    default:
      break
    }
    let last = lastLog.load(ordering: .relaxed)
    guard pages >= threshold, pages < last || pages - last >= threshold, !stopped.load(ordering: .relaxed),
      step.compareExchange(
        expected: Step.idle.rawValue, desired: Step.copyingBulk.rawValue, ordering: .acquiringAndReleasing
      ).exchanged
    else { return }
    queue.async { self.copyBulk() }
  }

  /// On the checkpointer's queue: the bulk, beside the writer.
  private func copyBulk() {
    guard !stopped.load(ordering: .acquiring), let handle = try? connection.rawHandle(),
      checkpoint(handle) != nil
    else { return step.store(Step.idle.rawValue, ordering: .releasing) }
    if databaseFile >= 0 { _ = fdatasync(databaseFile) }
    step.store(Step.restDue.rawValue, ordering: .releasing)
    completed.add(1, ordering: .releasing)
  }

  /// A passive checkpoint (it never waits for the writer or readers); the log's size in frames,
  /// or nil if it failed.
  private func checkpoint(_ handle: OpaquePointer) -> Int32? {
    var log: Int32 = 0
    let rc = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, nil)
    guard rc == SQLITE_OK else {
      // Busy: another process checkpoints. Either way the next commit past the threshold tries again.
      if rc & 0xff != SQLITE_BUSY {
        logger.warning(
          "checkpoint failed", ["error": String(cString: sqlite3_errmsg(handle)), "db.code": String(rc)])
      }
      return nil
    }
    return log
  }

  /// Waits for a running bulk copy and closes the connection; later commits only pass by.
  func stop() {
    stopped.store(true, ordering: .releasing)
    queue.sync {
      connection.close()
      if databaseFile >= 0 { close(databaseFile) }
    }
  }
}
