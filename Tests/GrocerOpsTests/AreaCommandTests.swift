import Foundation
import GrocerCore
import GrocerOps
import GrocerRuntime
import GrocerTestSupport
import StockService
import Synchronization
import Testing

/// `grocer area`: its arguments, and both actions against a StockService listening on a port
/// (no broker needed: the delivery area is read and written in its database).
@Suite(.serialized) struct AreaCommandTests {
  static func run(_ arguments: [String], port: Int) async -> (status: Int32, out: String, err: String) {
    let out = Mutex("")
    let err = Mutex("")
    let console = Console(
      out: { line in out.withLock { $0 += line + "\n" } }, err: { line in err.withLock { $0 += line + "\n" } }
    )
    let settings = Settings(["GROCER_GATEWAY_PORT": "\(port)", "GROCER_JWT_SECRET": "area-test-secret"])
    let status = await GrocerOps.main(arguments: arguments, settings: settings, console: console)
    return (status, out.withLock { $0 }, err.withLock { $0 })
  }

  @Test func badArgumentsAreRefusedWithTheUsage() async {
    for arguments in [
      ["area"], ["area", "draw"], ["area", "set", "h1"], ["area", "which", "52.5"],
      ["area", "which", "x", "13"],
      ["area", "set", "h1", "f.json", "--priority", "high"],
      ["area", "which", "1", "2", "--base-url", "ftp://x"],
    ] {
      let result = await Self.run(arguments, port: 1)
      #expect(result.status == 2, "\(arguments)")
      #expect(result.err.contains("usage: grocer area"), "\(arguments)")
    }
  }

  @Test func staffSetAnAreaFromAFileAndAPointFindsItsHub() async throws {
    let port = try LocalPort.free()
    let directory = NSTemporaryDirectory() + "grocer-area-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let settings = Settings([
      "GROCER_DATA_DIR": directory, "GROCER_JWT_SECRET": "area-test-secret", "GROCER_HTTP_PORT": "\(port)",
      "GROCER_HTTP_HOST": "127.0.0.1",
    ])
    let configuration = StockServiceConfiguration(settings: settings)
    _ = try loadDemoAssortment(configuration: configuration, logger: .discarding())
    let app = try buildStockService(configuration: configuration, logger: .discarding())
    try await app.http.start()
    defer { Task { await app.http.shutdown() } }

    #expect(await Self.run(["area", "which", "52.5155", "13.454"], port: port).out == "h3\n")
    let file = directory + "/lisbon.geojson"
    let feature =
      #"{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[-9.2,38.7],[-9.1,38.7],[-9.1,38.8],[-9.2,38.8],[-9.2,38.7]]]}}"#
    try Data(feature.utf8).write(to: URL(fileURLWithPath: file))
    let set = await Self.run(["area", "set", "h2", file, "--priority", "2"], port: port)
    #expect(set.status == 0, "\(set.err)")
    let lisbon = await Self.run(["area", "which", "38.75", "-9.15"], port: port)
    #expect(lisbon.out == "h2\n", "\(lisbon)")
    #expect(await Self.run(["area", "which", "52.40", "13.06"], port: port).out == "outOfArea\n")

    // What the service refuses comes back as the command's failure.
    let open = #"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}"#
    try Data(open.utf8).write(to: URL(fileURLWithPath: file))
    let refused = await Self.run(["area", "set", "h2", file], port: port)
    #expect(refused.status == 1 && refused.err.contains("invalidArea"), "\(refused.err)")
    let missing = await Self.run(["area", "set", "h2", directory + "/none.json"], port: port)
    #expect(missing.status == 1 && missing.err.contains("cannot read"))
    try Data(feature.utf8).write(to: URL(fileURLWithPath: file))
    let unknown = await Self.run(["area", "set", "h9", file], port: port)
    #expect(unknown.status == 1 && unknown.err.contains("unknownHub"), "\(unknown.err)")
  }
}
