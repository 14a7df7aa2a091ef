import Dispatch
import GrocerCore

/// Runs blocking work (a SQLite transaction, a file read) on a Dispatch queue and awaits it,
/// so Swift's cooperative pool — two threads on our machines — is never parked on a lock or a
/// disk. Dispatch adds threads when its own block, which the cooperative pool does not.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue.global().async {
      continuation.resume(with: Result { try body() })
    }
  }
}
