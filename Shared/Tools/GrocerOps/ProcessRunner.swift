import Foundation

/// Runs a program to its end and collects its output (stdout and stderr together).
///
/// `posix_spawn` and `waitpid` on a thread of its own, not `Foundation.Process` (which sometimes
/// missed the exit of a script whose children detach, see `TestBroker`) and not on Swift's
/// cooperative pool (rabbitmqctl takes about half a second).
enum ProcessRunner {
  struct Outcome: Sendable {
    var status: Int32
    var output: String
  }

  /// Runs `arguments[0]` (a path) with `arguments`, the environment `environment`.
  static func run(_ arguments: [String], environment: [String: String]) async throws -> Outcome {
    try await withCheckedThrowingContinuation { continuation in
      Thread { continuation.resume(with: Result { try runBlocking(arguments, environment: environment) }) }
        .start()
    }
  }

  private static func runBlocking(_ arguments: [String], environment: [String: String]) throws -> Outcome {
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
    var cEnvironment = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in cEnvironment { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, nil, &cArguments, &cEnvironment)
    guard spawned == 0 else {
      throw CommandFailure("could not run \(arguments[0]): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
      guard errno == EINTR else { throw CommandFailure("waitpid failed: errno \(errno)") }
    }
    let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS by hand (they are macros).
    let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return Outcome(status: exitCode, output: text)
  }
}
