import Foundation
import GrocerTestSupport
import Testing

/// The fault suite: the whole system under a steady mixed load while services are killed with
/// SIGKILL and restarted, RabbitMQ is restarted and one service's disk fills up; then the
/// promises are checked from the services' data and APIs. The defaults are the short run CI does
/// (about a minute and a half); `make faults` runs the long one. On PostgreSQL
/// (`make test DB=postgres`) every service runs as two replicas and the database server is
/// restarted too; with `GROCER_FAULTS_BROKER=cluster` the system runs on a three-node RabbitMQ
/// cluster whose nodes are killed in turn, and the report says how long checkout was unavailable
/// after each kill (`FaultPlan`). Set the size with
/// `GROCER_FAULTS_SECONDS`, `GROCER_FAULTS_KILLS`, `GROCER_FAULTS_BROKER_RESTARTS`,
/// `GROCER_FAULTS_DISK_FULL`, `GROCER_FAULTS_DISK_FULL_SECONDS`, `GROCER_FAULTS_SEED`
/// (`FaultPlan`); the report is printed and written as JSON to `GROCER_FAULTS_REPORT` (default: a
/// file in the temporary directory, its path printed).
@Suite(.serialized) struct FaultTests {
  /// Hub h3 is open around the clock.
  let hub = "h3"
  let skus = (41...52).map { String(format: "p%05d", $0) }
  let initialStock = 5_000

  /// What the run did and found: written as JSON.
  struct Report: Codable {
    var plan: FaultPlan
    var seconds: [String: Double]
    var operations: [String: Int]
    var faults: [FaultInjector.Fault]
    var invariants: [InvariantChecker.Result]
    var notes: [String: Int]
    var violations: Int
  }

  @Test func noOrderChargeOrEventIsLostOrDoubledWhileServicesCrashTheBrokerRestartsAndTheDiskFills()
    async throws
  {
    let plan = FaultPlan()
    let clock = ContinuousClock()
    let began = clock.now
    let system = try await LocalSystem.start(
      LocalSystem.Options(
        externalAPNs: true, tmpfsServices: plan.diskFullEpisodes > 0 ? [plan.diskFullService] : [],
        // Info: reconnects, relays starting and tokens APNs called gone are in the logs a failed
        // run keeps (a few hundred lines).
        logLevel: "info", isolated: true, replicas: plan.replicas, cluster: plan.cluster))
    let injector = FaultInjector(system: system, plan: plan)
    var failed = true
    try await withCleanup({
      // The broker is shared: it comes back whatever happened.
      try? await injector.startBroker()
      // GROCER_FAULTS_KEEP keeps the data and logs of a run that passed too.
      await system.stop(keepFiles: failed || ProcessInfo.processInfo.environment["GROCER_FAULTS_KEEP"] != nil)
      if plan.cluster { try? await TestCluster.stop() }
    }) {
      let report = try await run(system: system, injector: injector, plan: plan, began: began)
      failed = report.violations > 0
      #expect(report.violations == 0, "fault run violations: see the report")
    }
  }

  private func run(
    system: LocalSystem, injector: FaultInjector, plan: FaultPlan, began: ContinuousClock.Instant
  )
    async throws -> Report
  {
    var seconds: [String: Double] = ["startup": (ContinuousClock.now - began).seconds]
    try await prepareStock(system)

    let ledger = FaultLedger()
    let loadStart = ContinuousClock.now
    let load = FaultLoad(
      system: system, ledger: ledger, plan: plan, hub: hub, skus: skus,
      stopAt: loadStart + .milliseconds(Int(plan.seconds * 1000)))
    async let faults: Void = injector.run(startedAt: loadStart)
    await load.run()
    try await faults
    seconds["load"] = (ContinuousClock.now - loadStart).seconds
    // How long checkout was unavailable after each broker node was killed: until the first order
    // whose POST was sent after the kill was placed.
    injector.faults.withLock { faults in
      for index in faults.indices where faults[index].kind == "node kill" {
        let killed = loadStart + .milliseconds(Int(faults[index].at * 1000))
        faults[index].note =
          ledger.firstPlacement(after: killed).map {
            String(format: "checkout back after %.1f s", $0.seconds)
          }
          ?? "no order placed after it"
      }
    }

    let settleStart = ContinuousClock.now
    let checker = InvariantChecker(
      system: system, ledger: ledger.snapshot, hub: hub, skus: skus, initialStock: initialStock)
    let settled = await eventually(timeout: .seconds(120)) { await checker.settledAndStable() }
    seconds["settle"] = (ContinuousClock.now - settleStart).seconds
    let checkStart = ContinuousClock.now
    var (invariants, notes) = try await checker.check()
    notes["settled"] = settled ? 1 : 0
    seconds["check"] = (ContinuousClock.now - checkStart).seconds
    seconds["total"] = (ContinuousClock.now - began).seconds

    let report = Report(
      plan: plan, seconds: seconds, operations: ledger.snapshot.counters,
      faults: injector.faults.withLock { $0 }, invariants: invariants, notes: notes,
      violations: invariants.reduce(0) { $0 + $1.violations.count })
    try write(report, system: system)
    return report
  }

  /// Known counts to start from, and CartService told of them (a count not yet arrived would
  /// clamp a line).
  private func prepareStock(_ system: LocalSystem) async throws {
    let staff = system.token("fault-staff", role: .staff, hubs: [hub])
    for sku in skus {
      let set = try await system.call(
        "PUT", "/v1/hubs/\(hub)/stock/\(sku)", token: staff, json: ["available": initialStock])
      try #require(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
    }
    let probe = system.token("fault-probe")
    for sku in skus {
      let arrived = try await eventually(timeout: .seconds(30)) {
        let put = try await system.call(
          "PUT", "/v1/hubs/\(hub)/cart/items/\(sku)", token: probe, json: ["quantity": 99])
        let lines =
          ((try? JSONSerialization.jsonObject(with: put.body)) as? [String: Any])?["lines"]
          as? [[String: Any]]
        return put.status == 200 && lines?.first { $0["sku"] as? String == sku }?["quantity"] as? Int == 99
      }
      try #require(arrived, "the count of \(sku) did not reach CartService")
    }
  }

  private func write(_ report: Report, system: LocalSystem) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    let data = try encoder.encode(report)
    let path =
      ProcessInfo.processInfo.environment["GROCER_FAULTS_REPORT"]
      ?? FileManager.default.temporaryDirectory.appendingPathComponent(
        "grocer-faults-\(system.directory.lastPathComponent).json"
      ).path
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: path))
    var lines = ["", "=== Fault run (seed \(report.plan.seed))"]
    lines.append(
      "seconds: "
        + report.seconds.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.1f", $0.value))" }
        .joined(separator: ", "))
    lines.append(
      "operations: "
        + report.operations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    )
    lines.append("faults (\(report.faults.count)):")
    for fault in report.faults {
      let kind = fault.kind.padding(toLength: 15, withPad: " ", startingAt: 0)
      let target = fault.target.padding(toLength: 17, withPad: " ", startingAt: 0)
      lines.append(
        String(format: "  %6.1fs  ", fault.at) + kind + target + String(format: "%5.1fs  ", fault.seconds)
          + (fault.note ?? ""))
    }
    lines.append("invariants (\(report.invariants.count)):")
    for invariant in report.invariants {
      lines.append(
        "  \(invariant.violations.isEmpty ? "ok  " : "FAIL") \(invariant.name): \(invariant.checked) checked, \(invariant.violations.count) violations"
      )
      for violation in invariant.violations.prefix(10) { lines.append("         \(violation)") }
    }
    lines.append(
      "notes: \(report.notes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
    )
    lines.append("violations: \(report.violations)")
    lines.append("report: \(path)")
    if report.violations > 0 { lines.append("data and logs kept in \(system.directory.path)") }
    print(lines.joined(separator: "\n"))
  }
}
