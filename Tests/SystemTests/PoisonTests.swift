import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRabbitMQ
import GrocerRuntime
import GrocerTestSupport
import Testing

/// Poison on every queue of the running system (its own vhost): for every event type a service
/// consumes, a body that is not JSON, JSON that is no envelope, an envelope whose payload is of
/// the wrong shape, and a 4 MB body; a message of a type nobody handles straight into each
/// event queue; garbage on the request/reply queues. As README.md documents it, an unreadable
/// event is dead-lettered to its queue's parking queue, an event of an unknown type is acked and
/// ignored, a malformed request is answered or dropped. No service dies, no queue is left with
/// a message in it, and an order placed afterwards goes through every queue as usual.
@Suite(.serialized) struct PoisonTests {
  let hub = "h3"
  let sku = "p00011"

  /// The event types each service queue is bound to (deploy/rabbitmq/definitions.json).
  static let bindings: [String: [String]] = [
    "stock-service": ["order.confirmed", "order.declined", "order.cancelled"],
    "cart-service": ["stock.changed", "hub.changed", "order.confirmed"],
    "tracking-service": ["order.confirmed"],
    "notify-gateway": ["tracking.updated", "liveActivity.token", "order.confirmed", "order.declined"],
  ]

  /// Bodies no consumer can read, whatever the type.
  static func poisons(type: String, index: Int) -> [(String, Data)] {
    let now = Timestamp.string(from: Date())
    let wrongPayload = """
      {"id":"poison-\(index)","type":"\(type)","source":"poison-test","subject":"x","sequence":1,\
      "occurredAt":"\(now)","data":{"unexpected":[1,2,3]}}
      """
    var huge = Data("{\"id\":\"poison-huge-\(index)\",\"type\":\"\(type)\",\"data\":\"".utf8)
    huge.append(Data(repeating: UInt8(ascii: "x"), count: 4 << 20))
    return [
      ("not-json", Data("this is not json \u{0}\u{1}".utf8)),
      ("no-envelope", Data(#"{"hello":"world","n":[1,2,3]}"#.utf8)),
      ("wrong-payload", Data(wrongPayload.utf8)),
      ("huge", huge),
    ]
  }

  @Test func poisonOnEveryQueueIsParkedOrIgnoredAndNothingStops() async throws {
    let system = try await LocalSystem.start(LocalSystem.Options(isolated: true))
    try await withCleanup({ await system.stop() }) {
      let amqp = system.amqp
      let publisher = AMQPPublisher(configuration: amqp, logger: .discarding(), metrics: MetricsRegistry())
      try await publisher.start()
      defer { Task { await publisher.shutdown() } }

      // Unreadable events of every consumed type, through grocer.events.
      var expectedParked: [String: Int] = [:]
      var index = 0
      for type in Set(Self.bindings.values.flatMap { $0 }).sorted() {
        for (kind, body) in Self.poisons(type: type, index: index) {
          index += 1
          try await publisher.publish([
            OutgoingMessage(
              messageID: "poison-\(kind)-\(index)", routingKey: type, type: type, body: body,
              timestamp: Date(),
              correlationID: nil)
          ])
        }
        for (service, types) in Self.bindings where types.contains(type) {
          expectedParked[service, default: 0] += 4
        }
      }
      // A type nobody handles, straight into each event queue, and garbage on the request/reply
      // queues (no reply-to: nobody to answer).
      for queue in Array(system.queueNames.values) + system.rpcQueues {
        try await publisher.publish([
          OutgoingMessage(
            messageID: "unknown-\(queue)", routingKey: queue, type: "nobody.handles.this",
            body: Data(#"{"id":"x","type":"nobody.handles.this","data":{}}"#.utf8), timestamp: Date(),
            correlationID: nil, exchange: ""),
          OutgoingMessage(
            messageID: "garbage-\(queue)", routingKey: queue, type: "garbage",
            body: Data("\u{0}garbage".utf8),
            timestamp: Date(), correlationID: nil, exchange: ""),
        ])
      }

      // Every queue drains; the unreadable events are parked, each in its own queue's parking
      // queue, and nothing else is.
      let depths = ["list_queues", "-p", system.vhost!, "name", "messages", "messages_unacknowledged"]
      var expected: [String: Int] = [:]
      for (service, queue) in system.queueNames {
        expected[queue] = 0
        expected["\(queue).parking"] = expectedParked[service, default: 0]
      }
      for queue in system.rpcQueues { expected[queue] = 0 }
      let wanted = expected
      let settled = Recorder<[String: Int]>()
      let drained = try await eventually(timeout: .seconds(60)) {
        var seen: [String: Int] = [:]
        for row in try await TestBroker.table(depths) where row.count == 3 && wanted[row[0]] != nil {
          seen[row[0]] = (Int(row[1]) ?? -1) + (Int(row[2]) ?? -1)
        }
        settled.append(seen)
        return seen == wanted
      }
      #expect(drained, "queues \(settled.all.last ?? [:]), expected \(wanted)")
      #expect(system.allRunning, "a service died of poison")

      // And the system still works: an order goes through the cart, stock and tracking queues.
      let customer = system.token("poison-\(UUID().uuidString.prefix(6))")
      let staff = system.token("poison-staff", role: .staff, hubs: [hub])
      let stocked = try await system.call(
        "PUT", "/v1/hubs/\(hub)/stock/\(sku)", token: staff, json: ["available": 100])
      #expect(stocked.status == 200)
      let cart = try await system.fillCart(hub: hub, sku: sku, customer: customer)
      let orderId = try await system.placeOrder(
        hub: hub, cart: cart, customer: customer, paymentToken: "tok_poison")
      let tracked = try await eventually(timeout: .seconds(15)) {
        try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer).status == 200
      }
      #expect(tracked, "tracking never saw the order")
      let emptied = try await eventually(timeout: .seconds(15)) {
        let cart = try await system.call("GET", "/v1/hubs/\(hub)/cart", token: customer)
        return (try? JSON.decode(CartView.self, from: cart.body))?.lines.isEmpty == true
      }
      #expect(emptied, "the cart was not emptied")
      #expect(system.allRunning)
    }
  }

}
