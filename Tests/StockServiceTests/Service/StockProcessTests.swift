import Foundation
import GrocerAMQP
import GrocerTestSupport
import Testing

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The `stock-service` executable itself: it starts from its environment alone, answers, and
/// drains and exits 0 on SIGTERM.
@Suite(.serialized) struct StockProcessTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func theExecutableServesAndExitsCleanlyOnSIGTERM() async throws {
    let binary = TestBroker.repositoryRoot.appendingPathComponent(".build/debug/stock-service").path
    try #require(
      FileManager.default.isExecutableFile(atPath: binary), "build it first (make test does): \(binary)")
    let unique = UUID().uuidString.prefix(8).lowercased()
    let directory = NSTemporaryDirectory() + "grocer-stock-process-\(unique)"
    let port = Int.random(in: 20_000...29_000)
    let environment = ProcessInfo.processInfo.environment.merging([
      "GROCER_DATA_DIR": directory, "GROCER_HTTP_PORT": String(port),
      "GROCER_SERVICE_NAME": "stock-process-\(unique)", "GROCER_QUEUE_EXPIRES": "600",
      "GROCER_RESERVATION_QUEUE": "stock-process-\(unique).reservations",
      "GROCER_CATALOGUE_QUEUE": "stock-process-\(unique).catalogue",
    ]) { $1 }

    let demo = Process()
    demo.executableURL = URL(fileURLWithPath: binary)
    demo.arguments = ["load-demo"]
    demo.environment = environment
    demo.standardError = FileHandle.nullDevice
    try demo.run()
    demo.waitUntilExit()
    #expect(demo.terminationStatus == 0)

    let service = Process()
    service.executableURL = URL(fileURLWithPath: binary)
    service.environment = environment
    let log = Pipe()
    service.standardError = log
    try service.run()
    defer { if service.isRunning { service.terminate() } }

    let url = URL(string: "http://127.0.0.1:\(port)/v1/hubs/h1/stock?ids=p00001,p00002")!
    let answered = await eventually(timeout: .seconds(20)) {
      guard let (_, response) = try? await URLSession.shared.data(from: url) else { return false }
      return (response as? HTTPURLResponse)?.statusCode == 200
    }
    #expect(answered, "the service never answered on port \(port)")

    kill(service.processIdentifier, SIGTERM)
    let exited = await eventually(timeout: .seconds(20)) { !service.isRunning }
    #expect(exited, "the service did not exit after SIGTERM")
    #expect(service.terminationStatus == 0)
    let lines = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(lines.contains("\"msg\":\"stopping\""))
    #expect(lines.contains("\"service\":\"http\""))
    try? await AMQPAdmin.deleteQueues(
      configuration: TestBroker.configuration(),
      [
        "stock-process-\(unique)", "stock-process-\(unique).parking", "stock-process-\(unique).reservations",
        "stock-process-\(unique).catalogue",
      ])
  }
}
