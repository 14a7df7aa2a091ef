import Foundation
import GrocerAMQP
import GrocerRabbitMQ
import GrocerTestSupport
import Testing

/// The `stock-service` executable itself: it starts from its environment alone, answers, and
/// drains and exits 0 on SIGTERM.
@Suite(.serialized) struct StockProcessTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func theExecutableServesAndExitsCleanlyOnSIGTERM() async throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let name = "stock-process-\(unique)"
    let port = try LocalPort.free()
    let executable = try ServiceExecutable(
      "stock-service",
      environment: [
        "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-\(name)", "GROCER_HTTP_PORT": String(port),
        "GROCER_SERVICE_NAME": name, "GROCER_QUEUE_EXPIRES": "600",
        "GROCER_RESERVATION_QUEUE": "\(name).reservations", "GROCER_CATALOGUE_QUEUE": "\(name).catalogue",
      ])
    let queues = [name, "\(name).parking", "\(name).reservations", "\(name).catalogue"]
    try await withCleanup({
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }) {
      #expect(try executable.runToEnd(["load-demo"]) == 0)
      let service = try executable.start()
      let url = URL(string: "http://127.0.0.1:\(port)/v1/hubs/h1/stock?ids=p00001,p00002")!
      #expect(await service.answers(url), "the service never answered on port \(port)")
      let ending = await service.terminate()
      #expect(ending.exited, "the service did not exit after SIGTERM")
      #expect(ending.status == 0)
      #expect(ending.log.contains("\"msg\":\"stopping\""))
      #expect(ending.log.contains("\"service\":\"http\""))
    }
  }

  /// The fault drill `GROCER_FAULT_RELAY_DIES` makes the outbox relay's loop fail after its
  /// first pass: the process must not go on serving without it.
  @Test func aRelayThatDiesTakesTheProcessDownWithANonZeroStatus() async throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let name = "stock-relay-dies-\(unique)"
    let executable = try ServiceExecutable(
      "stock-service",
      environment: [
        "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-\(name)",
        "GROCER_HTTP_PORT": String(try LocalPort.free()), "GROCER_SERVICE_NAME": name,
        "GROCER_QUEUE_EXPIRES": "600", "GROCER_RESERVATION_QUEUE": "\(name).reservations",
        "GROCER_CATALOGUE_QUEUE": "\(name).catalogue", "GROCER_FAULT_RELAY_DIES": "1",
      ])
    let queues = [name, "\(name).parking", "\(name).reservations", "\(name).catalogue"]
    try await withCleanup({
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }) {
      let service = try executable.start()
      let status = await service.exitStatus(within: .seconds(15))
      #expect(status != nil, "the service kept running without its relay")
      #expect(status != 0)
      #expect(service.logText.contains("service ended unexpectedly"))
      #expect(service.logText.contains("\"service\":\"outbox-relay\""))
    }
  }

  /// The fault drill `GROCER_FAULT_CONSUMER_DIES` makes the order-outcome consumer's connection
  /// loop fail right after it connected: the process must not go on without that consumer.
  @Test func aConsumerThatDiesTakesTheProcessDownWithANonZeroStatus() async throws {
    let unique = UUID().uuidString.prefix(8).lowercased()
    let name = "stock-consumer-dies-\(unique)"
    let executable = try ServiceExecutable(
      "stock-service",
      environment: [
        "GROCER_DATA_DIR": NSTemporaryDirectory() + "grocer-\(name)",
        "GROCER_HTTP_PORT": String(try LocalPort.free()), "GROCER_SERVICE_NAME": name,
        "GROCER_QUEUE_EXPIRES": "600", "GROCER_RESERVATION_QUEUE": "\(name).reservations",
        "GROCER_CATALOGUE_QUEUE": "\(name).catalogue", "GROCER_FAULT_CONSUMER_DIES": "1",
      ])
    let queues = [name, "\(name).parking", "\(name).reservations", "\(name).catalogue"]
    try await withCleanup({
      try? await AMQPAdmin.deleteQueues(configuration: TestBroker.configuration(), queues)
    }) {
      let service = try executable.start()
      let status = await service.exitStatus(within: .seconds(15))
      #expect(status != nil, "the service kept running without its consumer")
      #expect(status != 0)
      #expect(service.logText.contains("service ended unexpectedly"))
      #expect(service.logText.contains("\"service\":\"amqp-consumer-\(name)\""))
      #expect(service.logText.contains("fault drill"))
    }
  }
}
