import Foundation
import GrocerAMQP
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// `deploy/rabbitmq/definitions.json` against the real broker, and `deploy/check/validate.py`
/// (the syntax checks of the Docker, Kubernetes and systemd files, which cannot run here).
@Suite struct DeployDefinitionsTests {
  init() throws { try TestBroker.ensureRunning() }

  static let definitionsPath = TestBroker.repositoryRoot.appendingPathComponent(
    "deploy/rabbitmq/definitions.json"
  ).path

  /// The durable queues the services declare at run time, with their binding keys on
  /// `grocer.events`. This test target cannot see the services' constants (it depends on
  /// GrocerAMQP only, and the handlers' `bindingKeys` are internal), so they are listed here;
  /// `deploy/check/validate.py` reads the same lists out of the services' sources, so a key
  /// added there and not here or in the definitions fails CI. OrderService consumes no events
  /// (it asks Cart and Stock over request/reply), so it has no queue.
  static let serviceQueues: [String: Set<String>] = [
    // StockService: StockEventType.orderOutcomes
    "stock-service": ["order.confirmed", "order.declined", "order.cancelled"],
    // CartService: CartEventHandler.bindingKeys
    "cart-service": ["stock.changed", "hub.changed", "order.confirmed"],
    // TrackingService: TrackingEventHandler.bindingKeys
    "tracking-service": ["order.confirmed", "push.delivered", "push.failed", "hub.notice"],
    // NotifyGateway: NotifyEventHandler.bindingKeys
    "notify-gateway": ["tracking.updated", "liveActivity.token", "order.confirmed", "order.declined"],
  ]

  static func definitions() throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: definitionsPath))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  static func list(_ key: String, in definitions: [String: Any]) -> [[String: Any]] {
    definitions[key] as? [[String: Any]] ?? []
  }

  @Test func theDefinitionsHoldEveryQueueAndBindingTheServicesDeclare() throws {
    let definitions = try Self.definitions()
    var queues: [String: [String: Any]] = [:]
    for queue in Self.list("queues", in: definitions) {
      queues[queue["name"] as? String ?? ""] = queue
    }
    var bindings = Set<String>()
    var parkingBindings: [String: [String: Any]] = [:]
    for binding in Self.list("bindings", in: definitions) {
      if binding["source"] as? String == EventTopology.deadLetterExchange {
        parkingBindings[binding["destination"] as? String ?? ""] =
          binding["arguments"] as? [String: Any] ?? [:]
        continue
      }
      bindings.insert(
        "\(binding["source"] ?? "")|\(binding["destination"] ?? "")|\(binding["routing_key"] ?? "")")
    }
    for (name, keys) in Self.serviceQueues {
      let queue = try #require(queues[name], "no queue \(name)")
      let arguments = queue["arguments"] as? [String: Any] ?? [:]
      #expect(queue["durable"] as? Bool == true)
      // Dead-lettering and the delivery limit come from the policy, not from arguments.
      #expect(arguments.keys.sorted() == ["x-queue-type"])
      #expect(arguments["x-queue-type"] as? String == "quorum")
      let spec = QueueSpec(name: name, bindingKeys: Array(keys))
      let parking = try #require(queues[spec.parkingQueueName], "no queue \(spec.parkingQueueName)")
      // Quorum too, so a parking queue is not lost with one node of a cluster.
      let parkingArguments = parking["arguments"] as? [String: Any] ?? [:]
      #expect(parkingArguments.keys.sorted() == ["x-queue-type"])
      #expect(parkingArguments["x-queue-type"] as? String == "quorum")
      for key in keys {
        #expect(bindings.contains("\(EventTopology.exchange)|\(name)|\(key)"), "\(name) misses \(key)")
      }
      let parkingBinding = try #require(
        parkingBindings[spec.parkingQueueName], "\(spec.parkingQueueName) unbound")
      #expect(parkingBinding["x-match"] as? String == "all-with-x")
      #expect(parkingBinding["x-first-death-queue"] as? String == name)
    }
    // Nothing more: a queue nobody consumes would collect events forever.
    #expect(queues.count == Self.serviceQueues.count * 2)
    #expect(bindings.count == Self.serviceQueues.values.map(\.count).reduce(0, +))
    #expect(parkingBindings.count == Self.serviceQueues.count)

    // One policy, the one `deploy/local/rabbitmq.sh` sets and EventTopology describes.
    let policies = Self.list("policies", in: definitions)
    #expect(policies.count == 1)
    let policy = try #require(policies.first)
    #expect(policy["name"] as? String == EventTopology.deadLetterPolicy)
    #expect(policy["pattern"] as? String == EventTopology.deadLetterPolicyPattern)
    #expect(policy["apply-to"] as? String == "queues")
    let definition = policy["definition"] as? [String: Any] ?? [:]
    #expect(definition.count == 2)
    #expect(definition["dead-letter-exchange"] as? String == EventTopology.deadLetterExchange)
    #expect(definition["delivery-limit"] as? Int == EventTopology.deliveryLimit)
    let script = try String(contentsOfFile: TestBroker.script, encoding: .utf8)
    #expect(script.contains("'\(EventTopology.deadLetterPolicyPattern)'"), "rabbitmq.sh sets another pattern")
    #expect(
      script.contains(
        "'{\"dead-letter-exchange\":\"\(EventTopology.deadLetterExchange)\",\"delivery-limit\":\(EventTopology.deliveryLimit)}'"
      ), "rabbitmq.sh sets another definition")
  }

  @Test func importDefinitionsCreatesTheTopologyAndThePoliciesAndTheServicesDeclarationsMatchIt()
    async throws
  {
    let vhost = "grocer-deploy-test-\(UUID().uuidString.prefix(8).lowercased())"
    let copy = FileManager.default.temporaryDirectory.appendingPathComponent("\(vhost).json")
    try await withCleanup({
      _ = try? await TestBroker.ctl(["delete_vhost", vhost])
      try? FileManager.default.removeItem(at: copy)
    }) {
      try await TestBroker.ctl(["add_vhost", vhost])
      try await TestBroker.ctl(["set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"])
      try Self.rewrittenDefinitions(vhost: vhost).write(to: copy)
      try await TestBroker.ctl(["import_definitions", copy.path])

      // The import runs asynchronously: wait until every queue is there.
      let expectedQueues = Set(Self.serviceQueues.keys.flatMap { [$0, "\($0).parking"] })
      let listQueues = ["list_queues", "-p", vhost, "name", "type", "durable", "arguments", "policy"]
      _ = try await eventually(timeout: .seconds(30)) {
        Set(try await TestBroker.table(listQueues).map { $0[0] }) == expectedQueues
      }
      let queueLines = try await TestBroker.table(listQueues)
      #expect(Set(queueLines.map { $0[0] }) == expectedQueues)
      for line in queueLines where line.count == 5 {
        let (name, type, durable, arguments, policy) = (line[0], line[1], line[2], line[3], line[4])
        #expect(durable == "true")
        #expect(type == "quorum", "\(name)")
        #expect(arguments == "[{\"x-queue-type\",\"quorum\"}]", "\(name)")
        if name.hasSuffix(".parking") {
          #expect(policy.isEmpty, "\(name) is governed by \(policy)")
        } else {
          #expect(policy == EventTopology.deadLetterPolicy, "\(name) is governed by \(policy)")
        }
      }

      let exchanges = try await TestBroker.table(["list_exchanges", "-p", vhost, "name", "type", "durable"])
      #expect(exchanges.contains([EventTopology.exchange, "topic", "true"]), "\(exchanges)")
      #expect(exchanges.contains([EventTopology.deadLetterExchange, "headers", "true"]), "\(exchanges)")

      let bindingRows = try await TestBroker.table(
        ["list_bindings", "-p", vhost, "source_name", "destination_name", "routing_key"])
      let bindings = Set(bindingRows.filter { !$0[0].isEmpty }.map { $0.joined(separator: "|") })
      var expectedBindings = Set<String>()
      for (name, keys) in Self.serviceQueues {
        for key in keys { expectedBindings.insert("\(EventTopology.exchange)|\(name)|\(key)") }
        expectedBindings.insert("\(EventTopology.deadLetterExchange)|\(name).parking|")
      }
      #expect(bindings == expectedBindings)

      // list_policies has fixed columns: vhost, name, pattern, apply-to, definition, priority.
      let policyRows = try await TestBroker.table(["list_policies", "-p", vhost])
      #expect(policyRows.map { $0[1] } == [EventTopology.deadLetterPolicy])

      // The services' own declarations (the same QueueSpec they use) are accepted as they are…
      var configuration = TestBroker.configuration("grocer-deploy-definitions-test")
      configuration.url = AMQPConfiguration.defaultURL + vhost
      try await Self.expectServicesDeclareTheirQueues(configuration, "as the definitions have them")
      // The policy parks poison messages, each in its own queue's parking queue:
      // `order.confirmed` reaches stock, tracking, notify and cart; stock's consumer fails it
      // until the delivery limit, tracking's rejects it at once, the other two have no consumer.
      let stockAttempts = Recorder<Int>()
      let retrying = AMQPConsumer(
        configuration: configuration,
        queue: QueueSpec(name: "stock-service", bindingKeys: Array(Self.serviceQueues["stock-service"]!)),
        logger: Logger.discarding(), metrics: MetricsRegistry(),
        handler: { delivery in
          stockAttempts.append(delivery.deliveryCount)
          return .retry
        })
      let rejecting = AMQPConsumer(
        configuration: configuration,
        queue: QueueSpec(
          name: "tracking-service", bindingKeys: Array(Self.serviceQueues["tracking-service"]!)),
        logger: Logger.discarding(), metrics: MetricsRegistry(), handler: { _ in .reject })
      let publisher = AMQPPublisher(
        configuration: configuration, logger: Logger.discarding(), metrics: MetricsRegistry())
      for role in [retrying, rejecting] { try await role.start() }
      try await publisher.start()
      #expect(await retrying.waitUntilConnected(timeout: .seconds(10)))
      #expect(await rejecting.waitUntilConnected(timeout: .seconds(10)))
      try await publisher.publish([message("order.confirmed", 1)])
      let depths = ["list_queues", "-p", vhost, "name", "messages"]
      let expectedDepths: Set<[String]> = [
        ["stock-service", "0"], ["stock-service.parking", "1"], ["tracking-service", "0"],
        ["tracking-service.parking", "1"], ["notify-gateway", "1"], ["notify-gateway.parking", "0"],
        ["cart-service", "1"], ["cart-service.parking", "0"],
      ]
      let parked = try await eventually(timeout: .seconds(30)) {
        Set(try await TestBroker.table(depths)) == expectedDepths
      }
      for role in [retrying, rejecting] { await role.shutdown() }
      await publisher.shutdown()
      let finalDepths = try await TestBroker.table(depths)
      #expect(parked, "\(finalDepths)")
      #expect(stockAttempts.all == Array(0...EventTopology.deliveryLimit))

      // …and a declaration that differs (an expiry) is refused, so the check above would notice
      // a definitions file that drifted from the code.
      let differing = AMQPConsumer(
        configuration: configuration,
        queue: QueueSpec(
          name: "stock-service", bindingKeys: [], kind: .durableQuorum(expiresAfter: .seconds(60))),
        logger: Logger.discarding(), metrics: MetricsRegistry(), handler: { _ in .retry })
      try await differing.start()
      let differingConnected = await differing.waitUntilConnected(timeout: .seconds(3))
      await differing.shutdown()
      #expect(!differingConnected)
    }
  }

  /// A broker set up by a build before the dead-letter policy: the service queues carry
  /// `x-dead-letter-*` arguments and each has a policy of its own. `rabbitmq.sh migrate` clears
  /// those policies and names each old-style queue with what to do, deleting none (a message in
  /// one stays); once the operator has deleted them, the new definitions import and the
  /// services' declarations are taken.
  @Test func migrateUpgradesWhatABuildBeforeThePolicyDeclared() async throws {
    let vhost = "grocer-migrate-test-\(UUID().uuidString.prefix(8).lowercased())"
    let directory = FileManager.default.temporaryDirectory
    let old = directory.appendingPathComponent("\(vhost)-old.json")
    let new = directory.appendingPathComponent("\(vhost)-new.json")
    try await withCleanup({
      _ = try? await TestBroker.ctl(["delete_vhost", vhost])
      try? FileManager.default.removeItem(at: old)
      try? FileManager.default.removeItem(at: new)
    }) {
      try await TestBroker.ctl(["add_vhost", vhost])
      try await TestBroker.ctl(["set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"])
      try Self.oldStyleDefinitions(vhost: vhost).write(to: old)
      try await TestBroker.ctl(["import_definitions", old.path])
      let listQueues = ["list_queues", "-p", vhost, "name", "messages", "arguments", "policy"]
      let imported = try await eventually(timeout: .seconds(30)) {
        try await TestBroker.table(listQueues).count == 4
      }
      try #require(imported, "the old-style definitions did not import")

      // One message waits in the old cart-service queue.
      var configuration = TestBroker.configuration("grocer-deploy-migrate-test")
      configuration.url = AMQPConfiguration.defaultURL + vhost
      let publisher = AMQPPublisher(
        configuration: configuration, logger: Logger.discarding(), metrics: MetricsRegistry())
      try await publisher.start()
      try await publisher.publish([message("stock.changed", 1)])
      await publisher.shutdown()

      let said = try await TestBroker.migrate(vhost: vhost)
      #expect(said.contains("cleared the policy grocer-dead-letter-stock-service"), "\(said)")
      #expect(said.contains("cleared the policy grocer-dead-letter-cart-service"), "\(said)")
      for name in ["stock-service", "cart-service"] {
        #expect(said.contains("warning: \(name) (vhost \(vhost)"), "\(said)")
        #expect(said.contains("delete_queue -p \(vhost) \(name)"), "\(said)")
      }
      #expect(!said.contains("warning: stock-service.parking"), "\(said)")
      #expect(Set(try await TestBroker.table(listQueues).map { $0[0] }).count == 4, "no queue was deleted")
      let kept = try await AMQPAdmin.messageCount(configuration: configuration, queue: "cart-service")
      #expect(kept == 1)
      let policiesLeft = try await TestBroker.table(["list_policies", "-p", vhost])
      #expect(policiesLeft.isEmpty, "\(policiesLeft)")
      // Migrating again clears nothing more.
      let again = try await TestBroker.migrate(vhost: vhost)
      #expect(!again.contains("cleared"), "\(again)")

      // The operator drains and deletes the old queues as told; then the new topology goes in.
      for name in ["stock-service", "cart-service"] {
        try await TestBroker.ctl(["delete_queue", "-p", vhost, name])
      }
      try Self.rewrittenDefinitions(vhost: vhost).write(to: new)
      try await TestBroker.ctl(["import_definitions", new.path])
      let upgraded = try await eventually(timeout: .seconds(30)) {
        let rows = try await TestBroker.table(listQueues).filter { !$0[0].hasSuffix(".parking") }
        return rows.count == Self.serviceQueues.count
          && rows.allSatisfy {
            $0[2] == "[{\"x-queue-type\",\"quorum\"}]" && $0[3] == EventTopology.deadLetterPolicy
          }
      }
      let upgradedQueues = try await TestBroker.table(listQueues)
      #expect(upgraded, "\(upgradedQueues)")
      try await Self.expectServicesDeclareTheirQueues(configuration, "after the migration")
    }
  }

  /// What a build before the dead-letter policy left in a broker: per-queue dead-letter
  /// arguments and policies, the topic exchange `grocer.dead-letter`.
  static func oldStyleDefinitions(vhost: String) throws -> Data {
    func queue(_ name: String) -> [String: Any] {
      [
        "name": name, "vhost": vhost, "durable": true, "auto_delete": false,
        "arguments": [
          "x-queue-type": "quorum", "x-dead-letter-exchange": "grocer.dead-letter",
          "x-dead-letter-routing-key": name, "x-delivery-limit": 5,
        ],
      ]
    }
    func parking(_ name: String) -> [String: Any] {
      ["name": "\(name).parking", "vhost": vhost, "durable": true, "auto_delete": false, "arguments": [:]]
    }
    func exchange(_ name: String) -> [String: Any] {
      [
        "name": name, "vhost": vhost, "type": "topic", "durable": true, "auto_delete": false,
        "internal": false, "arguments": [:],
      ]
    }
    func policy(_ name: String) -> [String: Any] {
      [
        "vhost": vhost, "name": "grocer-dead-letter-\(name)", "pattern": "^\(name)$", "apply-to": "queues",
        "priority": 10,
        "definition": [
          "dead-letter-exchange": "grocer.dead-letter", "dead-letter-routing-key": name, "delivery-limit": 5,
        ],
      ]
    }
    let definitions: [String: Any] = [
      "vhosts": [["name": vhost]],
      "exchanges": [exchange("grocer.events"), exchange("grocer.dead-letter")],
      "queues": [
        queue("stock-service"), parking("stock-service"), queue("cart-service"), parking("cart-service"),
      ],
      "bindings": [
        [
          "source": "grocer.events", "vhost": vhost, "destination": "cart-service",
          "destination_type": "queue",
          "routing_key": "stock.changed", "arguments": [:],
        ]
      ],
      "policies": [policy("stock-service"), policy("cart-service")],
    ]
    return try JSONSerialization.data(withJSONObject: definitions, options: [.sortedKeys])
  }

  @Test func theDeployFilesPassTheirValidationScript() async throws {
    let script = TestBroker.repositoryRoot.appendingPathComponent("deploy/check/validate.py").path
    let (status, output) = try await Self.runOnOwnThread(["/usr/bin/env", "python3", script])
    #expect(status == 0, "validate.py failed:\n\(output)")
    #expect(output.contains("all checks passed"), "\(output)")
  }

  /// Each service's queue declared as the service declares it (the same QueueSpec) is accepted.
  static func expectServicesDeclareTheirQueues(_ configuration: AMQPConfiguration, _ when: String)
    async throws
  {
    for (name, keys) in serviceQueues.sorted(by: { $0.key < $1.key }) {
      let consumer = AMQPConsumer(
        configuration: configuration, queue: QueueSpec(name: name, bindingKeys: Array(keys)),
        logger: Logger.discarding(), metrics: MetricsRegistry(), handler: { _ in .retry })
      try await consumer.start()
      let connected = await consumer.waitUntilConnected(timeout: .seconds(10))
      await consumer.shutdown()
      #expect(connected, "declaring \(name) as the service does was refused \(when)")
    }
  }

  /// The definitions with every `vhost` field (and the vhost list) moved to `vhost`.
  static func rewrittenDefinitions(vhost: String) throws -> Data {
    var definitions = try definitions()
    definitions["vhosts"] = [["name": vhost]]
    for key in ["exchanges", "queues", "bindings", "policies"] {
      definitions[key] = list(key, in: definitions).map { item in
        var item = item
        item["vhost"] = vhost
        return item
      }
    }
    return try JSONSerialization.data(withJSONObject: definitions, options: [.sortedKeys])
  }

  /// Runs a command to its end on a thread of its own (not the cooperative pool).
  static func runOnOwnThread(_ arguments: [String]) async throws -> (Int32, String) {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<(Int32, String), any Error>) in
      Thread {
        continuation.resume(
          with: Result {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: arguments[0])
            process.arguments = Array(arguments.dropFirst())
            process.currentDirectoryURL = TestBroker.repositoryRoot
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
          })
      }.start()
    }
  }
}
