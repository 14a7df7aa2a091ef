import Foundation
import GrocerCore

/// Runs short actions at deadlines, all of them from one thread: a time limit that costs no
/// task and no Dispatch timer of its own.
///
/// A `Task.sleep` per time limit (one per checkout, one per idle wait of every outbox relay)
/// registers a Dispatch timer that stays armed until its deadline even when the wait ended long
/// before; at a few hundred checkouts a second that timer work was 3-4% of OrderService's CPU.
/// Here a deadline is an entry in a heap; `cancel` forgets its action at once, and the entry is
/// dropped when it reaches the top. Actions run on the scheduler's thread, so keep them short:
/// resume a continuation, cancel a task.
///
/// A service that needs time limits owns an instance and passes it down. The thread starts with
/// the first deadline and ends after a while without any (`idleLifetime`), so an instance nobody
/// uses any more holds no thread.
public final class Deadlines: @unchecked Sendable {
  /// The scheduler of the shared storage primitives (`WakeSignal`).
  public static let shared = Deadlines()

  /// What `cancel` takes back.
  public struct Token: Hashable, Sendable {
    fileprivate let id: UInt64
  }

  private struct Entry {
    var at: ContinuousClock.Instant
    var id: UInt64
  }

  private let condition = NSCondition()
  // Guarded by `condition`.
  private var heap: [Entry] = []
  private var actions: [UInt64: @Sendable () -> Void] = [:]
  private var lastID: UInt64 = 0
  private var started = false

  /// How long the thread waits for a deadline before it ends (the next `schedule` starts another).
  private let idleLifetime: TimeInterval

  public init(idleLifetime: Duration = .seconds(2)) {
    let (seconds, attoseconds) = idleLifetime.components
    self.idleLifetime = Double(seconds) + Double(attoseconds) / 1e18
  }

  /// Runs `action` once `delay` has passed, unless `cancel` comes first.
  @discardableResult
  public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
    let at = ContinuousClock.now + delay
    condition.lock()
    lastID += 1
    let id = lastID
    actions[id] = action
    push(Entry(at: at, id: id))
    let becameFirst = heap[0].id == id
    if !started {
      started = true
      let thread = Thread { [self] in run() }
      thread.name = "grocer-deadlines"
      thread.start()
    }
    condition.unlock()
    // The thread sleeps until the first deadline: wake it when this one comes sooner.
    if becameFirst { condition.signal() }
    return Token(id: id)
  }

  /// Forgets the action of `token` (nothing happens if it ran already). Returns whether it was
  /// still waiting.
  @discardableResult
  public func cancel(_ token: Token) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    return actions.removeValue(forKey: token.id) != nil
  }

  /// How many actions wait (tests).
  public var pending: Int {
    condition.lock()
    defer { condition.unlock() }
    return actions.count
  }

  private func run() {
    condition.lock()
    while true {
      // Cancelled entries leave as soon as they are first.
      while let first = heap.first, actions[first.id] == nil { pop() }
      guard let first = heap.first else {
        if !condition.wait(until: Date(timeIntervalSinceNow: idleLifetime)) && heap.isEmpty {
          started = false
          condition.unlock()
          return
        }
        continue
      }
      let now = ContinuousClock.now
      if first.at <= now {
        pop()
        let action = actions.removeValue(forKey: first.id)
        condition.unlock()
        action?()
        condition.lock()
      } else {
        let (seconds, attoseconds) = (now.duration(to: first.at)).components
        _ = condition.wait(
          until: Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18))
      }
    }
  }

  // MARK: - Min-heap on `at`

  private func push(_ entry: Entry) {
    heap.append(entry)
    var child = heap.count - 1
    while child > 0 {
      let parent = (child - 1) / 2
      guard heap[child].at < heap[parent].at else { break }
      heap.swapAt(child, parent)
      child = parent
    }
  }

  private func pop() {
    let last = heap.removeLast()
    guard !heap.isEmpty else { return }
    heap[0] = last
    var parent = 0
    while true {
      let left = 2 * parent + 1
      let right = left + 1
      var smallest = parent
      if left < heap.count, heap[left].at < heap[smallest].at { smallest = left }
      if right < heap.count, heap[right].at < heap[smallest].at { smallest = right }
      guard smallest != parent else { return }
      heap.swapAt(parent, smallest)
      parent = smallest
    }
  }
}
