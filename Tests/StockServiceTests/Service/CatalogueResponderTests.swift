import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRabbitMQ
import GrocerTestSupport
import Testing

@testable import StockService

/// The `stock.catalogue` request/reply: the snapshot a service reads to fill an empty copy.
@Suite struct CatalogueStoreTests {
  @Test func pagingThroughAHubGivesEveryProductOnceInSKUOrder() throws {
    let fixture = try StockFixture(productsPerHub: 2_500)
    var seen: [SKU] = []
    var after: SKU?
    var pages: [Int] = []
    repeat {
      let page = try #require(
        try fixture.app.commands.catalogueProducts(hub: "h1", after: after, limit: 1_000))
      pages.append(page.products.count)
      seen += page.products.map(\.value.sku)
      #expect(page.products.allSatisfy { $0.value.hub == "h1" })
      if let next = page.next { #expect(next == page.products.last?.value.sku) }
      after = page.next
    } while after != nil && pages.count < 10
    #expect(pages == [1_000, 1_000, 500])
    #expect(seen == fixture.demo.products.map(\.sku).sorted())
    #expect(Set(seen).count == 2_500)
  }

  @Test func aLastPageThatIsExactlyFullSaysNoMore() throws {
    let fixture = try StockFixture(productsPerHub: 40)
    let first = try #require(try fixture.app.commands.catalogueProducts(hub: "h2", after: nil, limit: 20))
    #expect(first.products.count == 20)
    #expect(first.next == first.products.last?.value.sku)
    let second = try #require(
      try fixture.app.commands.catalogueProducts(hub: "h2", after: first.next, limit: 20))
    #expect(second.products.count == 20)
    #expect(second.next == nil)
    let past = try #require(
      try fixture.app.commands.catalogueProducts(hub: "h2", after: second.products.last?.value.sku, limit: 20)
    )
    #expect(past.products.isEmpty)
    #expect(past.next == nil)
  }

  @Test func anUnknownHubHasNoPage() throws {
    let fixture = try StockFixture(productsPerHub: 5)
    #expect(try fixture.app.commands.catalogueProducts(hub: "h9", after: nil, limit: 10) == nil)
  }

  @Test func theSnapshotCarriesWhatTheLatestEventsCarried() throws {
    let fixture = try StockFixture(productsPerHub: 40)
    let (store, commands) = (fixture.app.store, fixture.app.commands)
    let sku = fixture.sku(hub: "h1", minimum: 5)
    let other = fixture.demo.products.map(\.sku).first { $0 != sku }!
    // A price change, a hold (available falls, on hand does not) and a stock take move versions.
    var product = try #require(try store.product(hub: "h1", sku: other)).product
    product.price = Money(minorUnits: product.price.minorUnits + 10, currency: product.price.currency)
    _ = try commands.upsertProduct(hub: "h1", product, correlationID: nil)
    let (reply, _) = try commands.reserve(
      ReservationRequest(orderId: "o-cat", hub: "h1", lines: [ReservationLine(sku: sku, quantity: 2)]),
      correlationID: nil)
    #expect(reply.status == .reserved)
    _ = try commands.setStock(hub: "h1", sku: sku, onHand: 4, actor: "staff-1", correlationID: nil)
    var hub = try #require(try store.hub("h1"))
    hub.name += " Mitte"
    try commands.upsertHub(hub, correlationID: nil)

    var latest: [String: EventEnvelope] = [:]
    for event in try fixture.outbox() where (latest[event.subject]?.sequence ?? 0) < event.sequence {
      latest[event.subject] = event
    }

    let page = try #require(try commands.catalogueProducts(hub: "h1", after: nil, limit: 1_000))
    #expect(page.products.count == 40)
    for snapshot in page.products {
      let event = try #require(latest[StockChanged.subject(hub: "h1", sku: snapshot.value.sku)])
      #expect(event.type == StockEventType.stockChanged)
      #expect(snapshot.version == event.sequence, "\(snapshot.value.sku)")
      var carried = try event.payload(as: StockChanged.self)
      carried.reason = nil
      #expect(snapshot.value == carried, "\(snapshot.value.sku)")
    }
    let moved = try #require(page.products.first { $0.value.sku == sku })
    #expect(moved.value.available == 2, "4 on hand, 2 held")
    #expect(moved.version == 3)
    #expect(page.products.first { $0.value.sku == other }?.version == 2)

    let hubs = try commands.catalogueHubs()
    #expect(hubs.map(\.value.hub) == ["h1", "h2", "h3"])
    for snapshot in hubs {
      let event = try #require(latest[HubChanged.subject(hub: snapshot.value.hub)])
      #expect(event.type == StockEventType.hubChanged)
      #expect(snapshot.version == event.sequence)
      #expect(snapshot.value == (try event.payload(as: HubChanged.self)))
    }
    #expect(hubs.first?.version == 2)
    #expect(hubs.first?.value.name == hub.name)
  }
}

/// The handler's replies, without the broker.
@Suite struct CatalogueResponderTests {
  static let fixture = Result { try StockFixture(productsPerHub: 30) }

  func answer(_ body: String) async throws -> CatalogueReply {
    let fixture = try Self.fixture.get()
    return await CatalogueResponder(commands: fixture.app.commands, logger: .discarding()).answer(
      Data(body.utf8))
  }

  @Test(arguments: [
    "not json", "", "[]", "{}", #"{"kind":"shelves"}"#, #"{"kind":"products"}"#,
    #"{"kind":"products","hub":""}"#, #"{"kind":"products","hub":"h 1"}"#,
    #"{"kind":"products","hub":"h1","limit":0}"#, #"{"kind":"products","hub":"h1","limit":-1}"#,
    #"{"kind":"products","hub":"h1","limit":1001}"#, #"{"kind":"products","hub":"h1","limit":2.5}"#,
    #"{"kind":"products","hub":"h1","limit":"3"}"#, #"{"kind":"products","hub":"h1","after":"p/1"}"#,
    #"{"kind":"products","hub":"h1","after":""}"#,
  ])
  func aMalformedRequestIsABadRequest(_ body: String) async throws {
    let reply = try await answer(body)
    #expect(reply.error?.code == "badRequest", "\(reply)")
    #expect(reply.products == nil && reply.hubs == nil && reply.next == nil)
  }

  @Test func anUnknownHubIsSaidSo() async throws {
    let reply = try await answer(#"{"kind":"products","hub":"h9"}"#)
    #expect(reply.error?.code == "unknownHub")
    #expect(reply.products == nil)
  }

  @Test func withoutALimitAPageIsTheLargestAllowed() async throws {
    let reply = try await answer(#"{"kind":"products","hub":"h1"}"#)
    #expect(reply.error == nil)
    #expect(reply.products?.count == 30)
    #expect(reply.next == nil)
  }

  @Test func aLimitAndAnAfterGiveTheNextPage() async throws {
    let reply = try await answer(#"{"kind":"products","hub":"h2","after":"p00010","limit":5}"#)
    #expect(reply.error == nil)
    #expect(reply.products?.map(\.value.sku) == ["p00011", "p00012", "p00013", "p00014", "p00015"])
    #expect(reply.next == "p00015")
  }

  @Test func hubsAreAnsweredWithTheirVersions() async throws {
    let reply = try await answer(#"{"kind":"hubs"}"#)
    #expect(reply.error == nil)
    #expect(reply.hubs?.map(\.value.hub) == ["h1", "h2", "h3"])
    #expect(reply.hubs?.allSatisfy { $0.version >= 1 } == true)
    #expect(reply.products == nil)
  }
}

/// The catalogue over the real broker, as CartService asks it.
@Suite(.serialized) struct CatalogueRPCTests {
  init() throws { try TestBroker.ensureRunning() }

  @Test func aServiceFillsItsCopyOverRequestReply() async throws {
    let fixture = try StockFixture(productsPerHub: 120)
    try await fixture.start()
    try await withCleanup({ await fixture.stop() }) {
      try await fixture.waitUntilReady()
      let rpc = AMQPRPCClient(
        configuration: TestBroker.configuration("stock-tests-catalogue-rpc"), logger: .discarding())
      try await rpc.start()
      defer { Task { await rpc.shutdown() } }
      func ask(_ body: Data) async throws -> CatalogueReply {
        let data = try await rpc.request(
          routingKey: fixture.configuration.catalogueQueue, body: body, timeout: .seconds(5))
        return try JSON.decode(CatalogueReply.self, from: data)
      }

      let hubs = try await ask(try JSON.encode(CatalogueRequest.hubs))
      #expect(hubs.hubs?.map(\.value.hub) == ["h1", "h2", "h3"])

      var products: [Versioned<StockChanged>] = []
      var after: SKU?
      var requests = 0
      repeat {
        let reply = try await ask(
          try JSON.encode(CatalogueRequest.products(hub: "h3", after: after, limit: 50)))
        #expect(reply.error == nil)
        products += reply.products ?? []
        after = reply.next
        requests += 1
      } while after != nil && requests < 10
      #expect(requests == 3)
      #expect(products.map(\.value.sku) == fixture.demo.products.map(\.sku).sorted())
      let sku = products[0].value.sku
      #expect(products[0].value.available == fixture.demo.counts["h3"]![sku]!)

      // Bad input is answered, not dropped: the caller never waits out its time-out.
      let malformed = try await ask(Data("{".utf8))
      #expect(malformed.error?.code == "badRequest")
      let unknown = try await ask(try JSON.encode(CatalogueRequest.products(hub: "nowhere")))
      #expect(unknown.error?.code == "unknownHub")
    }
  }
}
