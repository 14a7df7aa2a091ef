import Foundation
import GrocerAMQP
import GrocerAuth
import GrocerCore
import GrocerOps
import GrocerRuntime
import GrocerTestSupport
import Synchronization
import Testing

/// What a command wrote, for assertions.
final class CapturedConsole: Sendable {
  private let outLines = Mutex<[String]>([])
  private let errLines = Mutex<[String]>([])
  var console: Console {
    Console(
      out: { line in self.outLines.withLock { $0.append(line) } },
      err: { line in self.errLines.withLock { $0.append(line) } })
  }
  var out: String { outLines.withLock { $0.joined(separator: "\n") } }
  var err: String { errLines.withLock { $0.joined(separator: "\n") } }
}

func runGrocer(_ arguments: [String], _ values: [String: String] = [:]) async -> (Int32, CapturedConsole) {
  let captured = CapturedConsole()
  var environment = values
  environment["GROCER_RABBITMQ_SCRIPT"] = TestBroker.script
  let status = await GrocerOps.main(
    arguments: arguments, settings: Settings(environment), console: captured.console)
  return (status, captured)
}

@Suite struct CommandLineTests {
  @Test func tokenCommandPrintsATokenTheServicesAcceptWithItsRoleAndHub() async throws {
    let secret = "ops-test-secret"
    let (status, output) = await runGrocer(
      ["token", "s1", "--role", "staff", "--hub", "h2", "--ttl", "600"], ["GROCER_JWT_SECRET": secret])
    #expect(status == 0)
    #expect(output.err.isEmpty)
    let principal = try HS256Verifier(secret: secret, clock: SystemClock()).verify(
      output.out.trimmingCharacters(in: .whitespaces))
    #expect(principal.subject == "s1")
    #expect(principal.role == .staff)
    #expect(principal.hubs == ["h2"])
  }

  @Test func tokenSignedWithTheLocalDefaultSecretWhenNoneIsSet() async throws {
    let (status, output) = await runGrocer(["token", "alice"])
    #expect(status == 0)
    let principal = try HS256Verifier(secret: Settings.localJWTSecret, clock: SystemClock()).verify(
      output.out)
    #expect(principal.subject == "alice")
    #expect(principal.role == .customer)
  }

  @Test(arguments: [
    [],
    ["frobnicate"],
    ["token"],
    ["token", "alice", "--role", "admin"],
    ["token", "alice", "--ttl", "-5"],
    ["demo"],
    ["queues", "a", "b"],
    ["dead-letters", "--limit", "0"],
    ["republish", "cart-service"],
    ["republish", "cart-service", "--all", "--message-id", "m1"],
    ["republish", "--all"],
    ["simulate", "--orders", "0"],
    ["load"],
    ["load", "push", "--rate", "fast"],
    ["load", "everything"],
  ])
  func badArgumentsPrintUsageOnStderrAndExitWith2(_ arguments: [String]) async {
    let (status, output) = await runGrocer(arguments)
    #expect(status == 2)
    #expect(output.out.isEmpty)
    #expect(output.err.hasPrefix("grocer: "))
    #expect(output.err.contains("usage: grocer"))
  }

  @Test func helpListsEveryCommand() async {
    let (status, output) = await runGrocer(["help"])
    #expect(status == 0)
    for command in ["token", "demo load", "queues", "dead-letters", "republish", "simulate", "load push"] {
      #expect(output.out.contains("  \(command)"), "\(command)")
    }
  }

  @Test func parsesTheCommandsFlags() throws {
    let settings = Settings([:])
    guard
      case .republish(let republish) = try GrocerCommand.parse(
        ["republish", "cart-service", "--message-id=m-7"], settings: settings)
    else { Issue.record("not republish"); return }
    #expect(republish == RepublishCommand(queue: "cart-service", messageID: "m-7"))
    guard
      case .loadPush(let push) = try GrocerCommand.parse(
        ["load", "push", "--orders", "10", "--rate", "50", "--seconds", "3"], settings: settings)
    else { Issue.record("not load push"); return }
    #expect(push.orders == 10 && push.rate == 50 && push.seconds == 3)
    guard
      case .simulate(let simulate) = try GrocerCommand.parse(
        ["simulate", "--orders", "3", "--speedup", "10"], settings: Settings(["GROCER_GATEWAY_PORT": "9090"]))
    else { Issue.record("not simulate"); return }
    #expect(simulate.orders == 3 && simulate.speedup == 10)
    #expect(simulate.baseURL.absoluteString == "http://127.0.0.1:9090")
    guard case .benchmark(let bench) = try GrocerCommand.parse(["load", "stock"], settings: settings)
    else { Issue.record("not a benchmark"); return }
    #expect(bench.instructions.contains("Benchmarks/stock-lookup/run.sh"))
  }

  @Test func readsRabbitmqctlsJSONListing() throws {
    let listing = """
      Timeout: 60.0 seconds ...
      [
      {"name":"cart-service","messages_ready":3,"messages_unacknowledged":1,"consumers":2}
      ,{"name":"cart-service.parking","messages_ready":2,"messages_unacknowledged":0,"consumers":0}
      ,{"name":"odd","messages_ready":"","messages_unacknowledged":"","consumers":""}
      ]
      """
    let queues = try QueuesCommand.parse(listing: listing)
    #expect(
      queues == [
        QueueInfo(name: "cart-service", messagesReady: 3, messagesUnacknowledged: 1, consumers: 2),
        QueueInfo(name: "cart-service.parking", messagesReady: 2, messagesUnacknowledged: 0, consumers: 0),
        QueueInfo(name: "odd", messagesReady: 0, messagesUnacknowledged: 0, consumers: 0),
      ])
    let table = QueuesCommand.table(queues).split(separator: "\n")
    #expect(table[1].hasPrefix("cart-service ") && table[1].hasSuffix("2"))
    #expect(table[2].hasSuffix("parking !"))
  }
}
