import Foundation
import GrocerContracts
import GrocerCore
import GrocerOps
import GrocerRuntime
import GrocerTestSupport
import Testing

/// The journey SPEC.md promises, end to end through the gateway, with every service a real
/// process on the real broker, starting where the app starts: the door's address resolved to
/// its hub, the home that hub's staff arranged, a category page and the stock of what is on
/// screen; then a cart filled (three fast changes of one line), a count lowered by
/// staff so the cart shows `reduced`, a stale checkout refused, the right one placed, the cart
/// emptied and the stock lowered, tracking from `placed` to `delivered` driven by the simulator,
/// and the Live Activity's pushes recorded by the APNs simulator in order, ending with `end`.
@Suite(.serialized) struct JourneyTests {
  /// Hub h3 is open around the clock, so the journey passes at any hour.
  let hub = "h3"
  let first = "p00011"
  let second = "p00012"

  /// In a broker vhost of its own, with an outside client (pika, `EventWatcher`) reading every
  /// event: envelopes, one sequence per subject, the checkout's correlation id carried on.
  @Test func aCustomerOrdersAndFollowsTheDeliveryToTheDoor() async throws {
    var options = LocalSystem.Options()
    options.isolated = true
    // On PostgreSQL two replicas of every service, the gateway spreading each step over them.
    if options.engine == .postgres { options.replicas = 2 }
    let system = try await LocalSystem.start(options)
    do {
      let watcher = try await EventWatcher(vhost: system.vhost)
      defer { watcher.stop() }
      let (orderId, checkoutRequestId) = try await journey(system)
      let (passed, report) = try await watcher.check(orderId: orderId, checkoutRequestId: checkoutRequestId)
      #expect(passed, "the outside client found: \(report)")
    } catch {
      // The logs and databases say why; a passing run leaves nothing behind.
      await system.stop(keepFiles: true)
      print("journey failed; its logs and data are kept in \(system.directory.path)")
      throw error
    }
    await system.stop()
  }

  /// Address → hub → home → a category page → stock for what is on screen, as the app does
  /// before its cart.
  private func browse(_ system: LocalSystem, _ customer: String) async throws {
    let area = try await system.call("GET", "/v1/delivery-area?lat=52.5155&lng=13.454")
    #expect(area.status == 200, "\(text(area.body))")
    #expect(try object(area.body)["status"] as? String == "served")
    #expect(try object(area.body)["hub"] as? String == hub)
    let potsdam = try await system.call("GET", "/v1/delivery-area?lat=52.40&lng=13.06")
    #expect(try object(potsdam.body)["status"] as? String == "outOfArea")

    let home = try await system.call(
      "GET", "/v1/hubs/\(hub)/home?sections=banners,categories,products,buyAgain", token: customer)
    try #require(home.status == 200, "\(text(home.body))")
    let sections = try #require(try object(home.body)["sections"] as? [[String: Any]])
    #expect(
      sections.map { $0["type"] as? String } == ["banners", "categories", "products", "products", "products"])
    let tiles = try #require(
      sections.first { $0["type"] as? String == "categories" }?["items"] as? [[String: Any]])
    let category = try #require(tiles.first?["id"] as? String)
    let image = try #require((tiles.first?["image"] as? [String: Any])?["url"] as? String)
    let photo = try await system.call("GET", image)
    #expect(
      photo.status == 200 && photo.body.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(image): \(photo.status)")

    // The system's demo has 300 products a hub, 16 in the first category.
    let page = try await system.call("GET", "/v1/hubs/\(hub)/categories/\(category)/products?limit=10")
    try #require(page.status == 200, "\(text(page.body))")
    let items = try #require(try object(page.body)["items"] as? [[String: Any]])
    #expect(items.count == 10)
    #expect(try object(page.body)["nextCursor"] as? String != nil)
    let skus = items.compactMap { $0["sku"] as? String }
    let stock = try await system.call("GET", "/v1/hubs/\(hub)/stock?ids=\(skus.joined(separator: ","))")
    #expect(stock.status == 200)
    #expect((try object(stock.body)["stock"] as? [String: Int])?.count == skus.count)
  }

  /// Returns the order and the request id of its checkout.
  private func journey(_ system: LocalSystem) async throws -> (orderId: String, checkoutRequestId: String) {
    let customer = system.token("e2e-\(UUID().uuidString.prefix(6))")
    let staff = system.token("e2e-staff", role: .staff, hubs: [hub])

    try await browse(system, customer)

    // Known counts to start from.
    for sku in [first, second] {
      let set = try await system.call(
        "PUT", "/v1/hubs/\(hub)/stock/\(sku)", token: staff, json: ["available": 40])
      #expect(set.status == 200, "\(text(set.body))")
    }

    // The catalogue and the new counts reach CartService as events (a count not yet arrived
    // would clamp the line); then three fast changes of one line.
    let arrived = try await eventually(timeout: .seconds(30)) {
      let put = try await system.call(
        "PUT", "/v1/hubs/\(hub)/cart/items/\(first)", token: customer, json: ["quantity": 5])
      guard put.status == 200, let cart = try? JSON.decode(CartView.self, from: put.body) else {
        return false
      }
      return cart.lines.first { $0.sku == first }?.quantity == 5
    }
    try #require(arrived, "the demo catalogue and the new count did not reach CartService")
    for quantity in [2, 3, 4] {
      let put = try await system.call(
        "PUT", "/v1/hubs/\(hub)/cart/items/\(first)", token: customer, json: ["quantity": quantity])
      #expect(put.status == 200, "\(text(put.body))")
    }
    var cart = try await self.cart(system, customer)
    #expect(cart.lines.map(\.quantity) == [4])
    // Enough of the second product to pass the hub's minimum order even after the cut below.
    let price = try #require(cart.lines.first?.unitPrice.minorUnits)
    let needed = max(1, min(30, (1_500 - 2 * price) / max(1, price) + 1))
    let put = try await system.call(
      "PUT", "/v1/hubs/\(hub)/cart/items/\(second)", token: customer, json: ["quantity": needed])
    #expect(put.status == 200, "\(text(put.body))")
    cart = try await self.cart(system, customer)
    let staleVersion = cart.version

    // Staff count 2 of the first product: the cart shows the line reduced, at a new version.
    let lowered = try await system.call(
      "PUT", "/v1/hubs/\(hub)/stock/\(first)", token: staff, json: ["available": 2])
    #expect(lowered.status == 200, "\(text(lowered.body))")
    let reduced = try await eventually(timeout: .seconds(15)) {
      try await self.cart(system, customer).version > staleVersion
    }
    try #require(reduced, "the cart never showed the lowered count")
    cart = try await self.cart(system, customer)
    #expect(cart.adjustments.map(\.change).contains(.reduced(sku: first, to: 2)))
    #expect(cart.lines.first { $0.sku == first }?.quantity == 2)
    #expect(cart.blocker == nil)

    // Paying for the cart as it was: 409. As it is: 201.
    let order: [String: Any] = [
      "hub": hub, "payment": ["method": "applePay", "token": "tok_e2e"],
      "deliverTo": ["lat": 52.5155, "lng": 13.4540],
    ]
    let stale = try await system.call(
      "POST", "/v1/orders", token: customer, json: order.merging(["cartVersion": staleVersion]) { $1 },
      headers: ["Idempotency-Key": UUID().uuidString])
    #expect(stale.status == 409, "\(text(stale.body))")
    let checkoutRequestId = "journey-\(UUID().uuidString.prefix(8))"
    let placed = try await system.call(
      "POST", "/v1/orders", token: customer, json: order.merging(["cartVersion": cart.version]) { $1 },
      headers: ["Idempotency-Key": UUID().uuidString, "X-Request-ID": checkoutRequestId])
    try #require(placed.status == 201, "\(text(placed.body))")
    let orderId = try #require(object(placed.body)["orderId"] as? String)

    // The cart is empty, the stock went down by what was bought.
    let emptied = try await eventually(timeout: .seconds(15)) {
      try await self.cart(system, customer).lines.isEmpty
    }
    #expect(emptied, "the cart was not emptied")
    let secondQuantity = cart.lines.first { $0.sku == second }?.quantity ?? 0
    let counted = try await eventually(timeout: .seconds(15)) {
      let stock = try await system.call("GET", "/v1/hubs/\(hub)/stock?ids=\(first),\(second)")
      let available = (try? self.object(stock.body)["stock"] as? [String: Int]) ?? [:]
      return available == [first: 0, second: 40 - secondQuantity]
    }
    #expect(counted, "the stock did not go down by the order")

    // Tracking shows the order as placed; the customer's Live Activity registers its token.
    let tracked = try await eventually(timeout: .seconds(15)) {
      let tracking = try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer)
      return tracking.status == 200 && (try? self.object(tracking.body)["status"] as? String) == "placed"
    }
    try #require(tracked, "tracking never showed the order as placed")
    let activityToken = (0..<80).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    let registered = try await system.call(
      "PUT", "/v1/orders/\(orderId)/live-activity-token", token: customer, json: ["token": activityToken])
    #expect((200..<300).contains(registered.status), "\(text(registered.body))")

    // The hub's staff post a notice: broadcast to the hub's channel, shown in the order's tracking.
    let posted = try await system.call(
      "POST", "/v1/hubs/\(hub)/notices", token: staff,
      json: ["title": "Rain delay", "body": "Riders are a little slower in the rain."])
    #expect(posted.status == 201, "\(text(posted.body))")
    let noticed = try await eventually(timeout: .seconds(15)) {
      let tracking = try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer)
      return ((try? self.object(tracking.body)["notice"]) as? [String: Any])?["title"] as? String
        == "Rain delay"
    }
    #expect(noticed, "the hub's notice never reached the order's tracking")
    // The channel is made by the gateway's delivery round, which may come after the notice shows.
    let hasChannel = try await eventually(timeout: .seconds(15)) {
      let channel = try await system.call("GET", "/v1/hubs/\(hub)/notices", token: customer)
      return ((try? self.object(channel.body)["channelId"]) as? String)?.isEmpty == false
    }
    #expect(hasChannel, "the hub's notice channel was never made")

    // The app follows it as server-sent events through the gateway (curl, unbuffered).
    let follower = Process()
    follower.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    follower.arguments = [
      "-sN", "--max-time", "60", "-H", "Authorization: Bearer \(customer)",
      system.gateway.absoluteString + "/v1/orders/\(orderId)/tracking/events",
    ]
    let followed = Pipe()
    follower.standardOutput = followed
    try follower.run()

    // Staff and a rider take it to the door.
    var options = TrackingSimulator.Options(baseURL: system.gateway, secret: system.secret)
    options.speedup = 40
    options.hub = hub
    options.rideLength = 400
    options.destination = GeoPoint(lat: 52.5155, lng: 13.4540)
    try await TrackingSimulator(options: options, logger: .discarding()).deliver(orderId)
    let delivered = try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer)
    #expect((try? object(delivered.body)["status"] as? String) == "delivered")

    // The stream sent every version once, in order, and closed after the delivery.
    let closed = try await eventually(timeout: .seconds(15)) { !follower.isRunning }
    if !closed { follower.terminate() }
    let streamed = String(decoding: followed.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let ids = streamed.split(separator: "\n").filter { $0.hasPrefix("id: ") }.compactMap {
      Int($0.dropFirst(4))
    }
    #expect(closed, "the stream stayed open after the delivery")
    #expect(!ids.isEmpty && ids == Array(ids.first!...ids.last!), "\(ids)")
    let lastData = streamed.split(separator: "\n").last { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }
    #expect(lastData?.contains(#""status":"delivered""#) == true, "\(streamed.suffix(300))")

    // The APNs simulator saw the card's updates in order, ending with `end`.
    let seen = Recorder<[LiveActivityPush]>()
    let ended = try await eventually(timeout: .seconds(15)) {
      let device = try await system.call("GET", "/v1/sim/devices/\(activityToken)", token: staff)
      let pushes = (try? self.object(device.body)["pushes"] as? [[String: Any]]) ?? []
      let events = pushes.filter { $0["status"] as? Int == 200 }.compactMap { push -> LiveActivityPush? in
        guard let aps = (push["payload"] as? [String: Any])?["aps"] as? [String: Any],
          let event = aps["event"] as? String, let timestamp = aps["timestamp"] as? Int
        else { return nil }
        return LiveActivityPush(event: event, timestamp: timestamp)
      }
      seen.append(events)
      return events.last?.event == "end"
    }
    let events = seen.all.last ?? []
    #expect(ended, "no `end` reached the Live Activity: \(events)")
    #expect(events.count >= 3, "\(events)")
    #expect(events.dropLast().allSatisfy { $0.event == "update" }, "\(events)")
    #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp < $1.timestamp }, "\(events)")

    // NotifyGateway's push.delivered reached TrackingService: the snapshot says the lock screen
    // shows the end.
    let lockScreen = try await eventually(timeout: .seconds(15)) {
      let tracking = try await system.call("GET", "/v1/orders/\(orderId)/tracking", token: customer)
      let activity = (try? self.object(tracking.body)["liveActivity"]) as? [String: Any]
      return activity?["state"] as? String == "ended" && activity?["lastPushAt"] is String
    }
    #expect(lockScreen, "the snapshot never said the Live Activity ended")
    return (orderId, checkoutRequestId)
  }

  struct LiveActivityPush: Sendable, CustomStringConvertible {
    var event: String
    var timestamp: Int
    var description: String { "\(event)@\(timestamp)" }
  }

  private func cart(_ system: LocalSystem, _ customer: String) async throws -> CartView {
    let reply = try await system.call("GET", "/v1/hubs/\(hub)/cart", token: customer)
    try #require(reply.status == 200, "\(text(reply.body))")
    return try JSON.decode(CartView.self, from: reply.body)
  }

  private func object(_ data: Data) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
  }

  private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
}
