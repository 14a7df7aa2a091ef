import Foundation
import GrocerCore

/// Runs a program to its end and collects its output (stdout and stderr together, in a temporary
/// file), for tools and tests that drive scripts (`rabbitmqctl`, `deploy/local/*.sh`).
///
/// `posix_spawn` and `waitpid`, not `Foundation.Process`: when a script starts a daemon that
/// detaches (the broker node), Process sometimes never noticed the script's exit and
/// `waitUntilExit` hung. The async form runs on a thread of its own, not on Swift's cooperative
/// pool (rabbitmqctl takes about half a second).
public enum Subprocess {
  public struct Outcome: Sendable {
    /// The exit status, or 128 + the signal that ended it.
    public var status: Int32
    public var output: String
  }

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Runs `arguments[0]` (a path) with `arguments`; `environment` nil: this process's own.
  public static func run(_ arguments: [String], environment: [String: String]? = nil) async throws -> Outcome
  {
    try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try runBlocking(arguments, environment: environment) }) }
        .start()
    }
  }

  /// `run` on the calling thread.
  public static func runBlocking(_ arguments: [String], environment: [String: String]? = nil) throws
    -> Outcome
  {
    let output = FileManager.default.temporaryDirectory
      .appendingPathComponent("grocer-\(UUID().uuidString).log").path
    defer { try? FileManager.default.removeItem(atPath: output) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var cArguments = arguments.map { strdup($0) } + [nil]
    defer { for pointer in cArguments { free(pointer) } }
    let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
    var cEnvironment = variables.map { strdup($0) } + [nil]
    defer { for pointer in cEnvironment { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, nil, &cArguments, &cEnvironment)
    guard spawned == 0 else {
      throw Failure(description: "could not run \(arguments[0]): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
      guard errno == EINTR else { throw Failure(description: "waitpid failed: errno \(errno)") }
    }
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS by hand (they are macros).
    let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return Outcome(status: exitCode, output: text)
  }
}
