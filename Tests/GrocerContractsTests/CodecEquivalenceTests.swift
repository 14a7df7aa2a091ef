import Foundation
import GrocerContracts
import GrocerCore
import Testing

/// Every contract type with a hand-written codec writes the bytes `JSON.encode` writes and reads
/// what `JSON.decode` reads, over samples that reach each optional, escape and number form. The
/// benchmark that justifies each codec is `Benchmarks/codecs/`.
@Suite struct CodecEquivalenceTests {
  static func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }
  static let noon = Date(timeIntervalSince1970: 1_792_584_000)
  static let later = Date(timeIntervalSince1970: 1_792_584_000.25)

  /// The hand-written bytes are the encoder's, byte for byte.
  static func expectWritesLikeTheEncoder<T: Encodable>(
    _ value: T, _ handWritten: [UInt8], sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let encoded = try JSON.encode(value)
    #expect(
      String(decoding: handWritten, as: UTF8.self) == String(decoding: encoded, as: UTF8.self),
      sourceLocation: sourceLocation)
  }

  /// The hand-written reader, given the encoder's bytes, gives what the decoder gives (a time
  /// with a fraction may differ from `value` in its last bit on both), and reads the whole text.
  static func expectReadsLikeTheDecoder<T: Codable & JSONReadable & Equatable>(
    _ value: T, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let encoded = try JSON.encode(value)
    var reader = JSONReader(encoded)
    let read = try T(reading: &reader)
    try reader.finish()
    let decoded = try JSON.decode(T.self, from: encoded)
    #expect(read == decoded, sourceLocation: sourceLocation)
  }

  // MARK: Samples

  static let milk = CartLineView(
    sku: "p00001", name: "Milk \"fresh\" 1 l", quantity: 3, unitPrice: eur(129), deposit: eur(25),
    lineTotal: eur(387))
  static let bread = CartLineView(
    sku: "p00002", name: "Brot / Bäckerei\n", quantity: 1, unitPrice: eur(249), deposit: nil,
    lineTotal: eur(249))
  static let totals = CartTotals(
    subtotal: eur(636), deposit: eur(75), deliveryFee: eur(299), smallBasketFee: eur(0), discount: eur(-39),
    total: eur(971))

  static let carts: [CartView] = [
    CartView(
      hub: "h1", version: 0, lines: [], adjustments: [], promo: nil, totals: .zero("EUR"), blocker: nil),
    CartView(
      hub: "h1", version: 18, lines: [milk, bread], adjustments: [],
      promo: CartPromoView(code: "WELCOME5", description: "5 % off", applied: true, notice: nil),
      totals: totals, blocker: nil),
    CartView(
      hub: "h-2", version: Int64(Int32.max) + 7, lines: [bread],
      adjustments: [
        CartAdjustment(.outOfStock(sku: "p9"), version: 3),
        CartAdjustment(.reduced(sku: "p1", to: 2), version: 4),
        CartAdjustment(.priceChanged(sku: "p2", from: eur(249), to: eur(259)), version: 5),
        CartAdjustment(.promoRemoved(code: "SPRING"), version: 6),
      ],
      promo: CartPromoView(code: "BIG", description: "Over €40", applied: false, notice: "add €3.10"),
      totals: totals, blocker: .belowMinimum(missing: eur(310))),
    CartView(
      hub: "h1", version: 2, lines: [milk], adjustments: [], promo: nil, totals: totals,
      blocker: .hubClosed(opensAt: noon)),
    CartView(
      hub: "h1", version: 2, lines: [milk], adjustments: [], promo: nil, totals: totals,
      blocker: .hubClosed(opensAt: nil)),
  ]

  /// The carts the hand-written reader takes (no adjustments, no blocker: a checkout's cart).
  static let checkoutCarts = carts.filter { $0.adjustments.isEmpty && $0.blocker == nil }

  static let checkoutRequests: [CartCheckoutRequest] = [
    CartCheckoutRequest(
      kind: .price, userId: "alice", hub: "h1", cartVersion: nil, counts: nil, correlationId: nil),
    CartCheckoutRequest(
      kind: .applyCounts, userId: "b\\o\"b", hub: "h1", cartVersion: 12,
      counts: [.init(sku: "p1", available: 0), .init(sku: "p2", available: 40)], correlationId: "req-7"),
    CartCheckoutRequest(
      kind: .price, userId: "carol", hub: "h3", cartVersion: 1, counts: [], correlationId: "x"),
  ]

  static let checkoutReplies: [CartCheckoutReply] =
    checkoutCarts.map { CartCheckoutReply(cart: $0, matches: true) } + [
      CartCheckoutReply(
        cart: nil, matches: false, error: RemoteError(code: "cartEmpty", detail: "the cart is empty")),
      CartCheckoutReply(cart: checkoutCarts[1], matches: false),
    ]

  static let cartChanges: [CartChanged] = [
    CartChanged(userId: "alice", hub: "h1", version: 4, lines: [], promo: nil, reason: "cleared"),
    CartChanged(
      userId: "alice", hub: "h1", version: 5,
      lines: [.init(sku: "p1", quantity: 2), .init(sku: "p2", quantity: 9)],
      promo: "WELCOME5", reason: "quantity"),
  ]

  static let orderConfirmations: [OrderConfirmed] = [
    OrderConfirmed(
      orderId: "o-1", userId: "alice", hub: "h1", cartVersion: 7, lines: [OrderLine(milk), OrderLine(bread)],
      totals: totals, deliverTo: GeoPoint(lat: 52.520_008, lng: 13.404_954), paymentId: "pay_1",
      placedAt: noon),
    OrderConfirmed(
      orderId: "o-2", userId: "bob", hub: "h1", cartVersion: 1, lines: [OrderLine(bread)], totals: totals,
      deliverTo: nil, paymentId: "pay_2", placedAt: later),
  ]

  static let reservationRequests: [ReservationRequest] = [
    ReservationRequest(
      orderId: "o-1", hub: "h1", lines: [.init(sku: "p1", quantity: 3)], correlationId: "req-1"),
    ReservationRequest(
      orderId: "o-2", hub: "h2", lines: [.init(sku: "p1", quantity: 1), .init(sku: "p\"2", quantity: 20)]),
  ]

  static let reservationReplies: [ReservationReply] = [
    .reserved(orderId: "o-1", expiresAt: noon),
    .shortfall(
      orderId: "o-2",
      [.init(sku: "p1", requested: 3, available: 0), .init(sku: "p2", requested: 2, available: 1)]),
    ReservationReply(
      orderId: "o-3", status: .rejected, error: RemoteError(code: "unknownHub", detail: "no hub \"h9\"")),
    ReservationReply(orderId: "o-4", status: .reserved, expiresAt: later),
  ]

  static let stockChanges: [StockChanged] = [
    StockChanged(hub: "h1", sku: "p1", name: "Milk", available: 0, price: eur(129)),
    StockChanged(
      hub: "h1", sku: "p2", name: "Äpfel \u{1} \"Elstar\"", available: 1_000_000, price: eur(349),
      deposit: eur(25),
      unitPrice: UnitPrice(amount: eur(698), per: .kilogram), reason: "stockTake"),
  ]

  static let snapshots: [TrackingSnapshot] = [
    TrackingSnapshot(
      orderId: "o-1", version: 1, status: .placed, problem: nil, eta: nil, rider: nil, destination: nil,
      generatedAt: noon),
    TrackingSnapshot(
      orderId: "o-2", version: 9, status: .onTheWay, problem: "running late",
      eta: ETARange(earliest: noon, latest: later),
      rider: RiderView(firstName: "Sam", lat: 52.5, lng: -0.000_1, recordedAt: later),
      destination: GeoPoint(lat: 52.520_008, lng: 13.404_954), generatedAt: later),
    TrackingSnapshot(
      orderId: "o-3", version: 2, status: .delivered, problem: nil, eta: nil,
      rider: RiderView(firstName: "Zoë", lat: 0, lng: 180, recordedAt: noon),
      destination: GeoPoint(lat: -33.868_82, lng: 151.209_29), generatedAt: noon),
  ]

  // MARK: Writers

  @Test(arguments: carts) func aCartIsWrittenAsTheEncoderWritesIt(cart: CartView) throws {
    try Self.expectWritesLikeTheEncoder(cart, cart.jsonBytes())
  }

  @Test(arguments: checkoutRequests)
  func aCheckoutRequestIsWrittenAsTheEncoderWritesIt(request: CartCheckoutRequest) throws {
    try Self.expectWritesLikeTheEncoder(request, request.jsonBytes)
  }

  @Test(arguments: checkoutReplies)
  func aCheckoutReplyIsWrittenAsTheEncoderWritesIt(reply: CartCheckoutReply) throws {
    try Self.expectWritesLikeTheEncoder(reply, reply.jsonBytes())
  }

  @Test(arguments: cartChanges) func cartChangedIsWrittenAsTheEncoderWritesIt(change: CartChanged) throws {
    try Self.expectWritesLikeTheEncoder(change, change.jsonBytes())
  }

  @Test(arguments: orderConfirmations)
  func orderConfirmedIsWrittenAsTheEncoderWritesIt(confirmed: OrderConfirmed) throws {
    try Self.expectWritesLikeTheEncoder(confirmed, confirmed.jsonBytes)
  }

  @Test(arguments: reservationRequests)
  func aReservationRequestIsWrittenAsTheEncoderWritesIt(request: ReservationRequest) throws {
    try Self.expectWritesLikeTheEncoder(request, request.jsonBytes)
    try Self.expectWritesLikeTheEncoder(request.lines, ReservationLine.jsonBytes(request.lines))
  }

  @Test(arguments: reservationReplies)
  func aReservationReplyIsWrittenAsTheEncoderWritesIt(reply: ReservationReply) throws {
    try Self.expectWritesLikeTheEncoder(reply, reply.jsonBytes)
  }

  @Test(arguments: stockChanges) func stockChangedIsWrittenAsTheEncoderWritesIt(change: StockChanged) throws {
    try Self.expectWritesLikeTheEncoder(change, change.jsonBytes)
  }

  @Test(arguments: snapshots) func aSnapshotIsWrittenAsTheEncoderWritesIt(snapshot: TrackingSnapshot) throws {
    try Self.expectWritesLikeTheEncoder(snapshot, snapshot.jsonBytes)
    let update = TrackingUpdated(
      userId: "alice", hub: "h1", snapshot: snapshot, changed: [.stage, .eta, .rider],
      previousStatus: .picking)
    try Self.expectWritesLikeTheEncoder(update, update.jsonBytes)
  }

  @Test func anErrorIsWrittenAsTheEncoderWritesIt() throws {
    for error in [RemoteError(code: "x", detail: ""), RemoteError(code: "unknownHub", detail: "no \"h9\"\t")]
    {
      var out = JSONBytes(capacity: 64)
      error.write(into: &out)
      try Self.expectWritesLikeTheEncoder(error, out.bytes)
    }
  }

  @Test(arguments: stockChanges) func anEnvelopeIsWrittenAsTheEncoderWritesIt(change: StockChanged) throws {
    for correlationId in ["req-1", nil, "quote \" and \\"] as [String?] {
      let message = change.message(
        id: "e-1", occurredAt: Self.later, correlationId: correlationId, version: 12)
      let envelope = try EventEnvelope(
        id: "e-1", type: StockEventType.stockChanged, occurredAt: Self.later, source: StockEventType.source,
        correlationId: correlationId, subject: StockChanged.subject(hub: change.hub, sku: change.sku),
        sequence: 12,
        payload: change)
      try Self.expectWritesLikeTheEncoder(envelope, [UInt8](message.body))
    }
  }

  // MARK: Readers

  @Test(arguments: snapshots) func aSnapshotIsReadAsTheDecoderReadsIt(snapshot: TrackingSnapshot) throws {
    try Self.expectReadsLikeTheDecoder(snapshot)
    // As replies carry them: the lock screen's state and the hub's notice.
    var reply = snapshot
    reply.liveActivity = LiveActivityView(state: .stale, lastPushAt: Self.later)
    reply.notice = HubNoticeView(
      title: "Rain \"delay\"", body: "Riders\nare slower", postedAt: Self.noon, expiresAt: Self.later)
    try Self.expectReadsLikeTheDecoder(reply)
    reply.liveActivity = LiveActivityView(state: .none, lastPushAt: nil)
    try Self.expectReadsLikeTheDecoder(reply)
    for previousStatus in [TrackingStatus.picking, .problem] {
      try Self.expectReadsLikeTheDecoder(
        TrackingUpdated(
          userId: "alice", hub: "h1", snapshot: snapshot,
          changed: previousStatus == .problem ? [] : [.stage, .rider],
          previousStatus: previousStatus))
    }
  }

  @Test func trackingTheReaderRefusesIsLeftToTheDecoder() throws {
    // An unknown stage: the reader refuses, and the decoder's own error is what the caller sees.
    let unknown = Data(
      #"{"orderId":"o-1","version":1,"status":"teleported","generatedAt":"2026-10-20T12:00:00Z"}"#.utf8)
    var reader = JSONReader(unknown)
    #expect(throws: JSONReader.Failure.self) { try TrackingSnapshot(reading: &reader) }
    #expect(throws: DecodingError.self) { try JSON.read(TrackingSnapshot.self, from: unknown) }
    // Absent optionals read as nil, as the decoder reads them.
    let bare = Data(
      #"{"orderId":"o-1","version":1,"status":"placed","generatedAt":"2026-10-20T12:00:00Z"}"#.utf8)
    let read = try JSON.read(TrackingSnapshot.self, from: bare)
    #expect(read == (try JSON.decode(TrackingSnapshot.self, from: bare)))
    #expect(read.eta == nil && read.rider == nil && read.destination == nil && read.liveActivity == nil)
  }

  @Test(arguments: checkoutCarts) func aCheckoutsCartIsReadAsTheDecoderReadsIt(cart: CartView) throws {
    try Self.expectReadsLikeTheDecoder(cart)
  }

  @Test func cartsTheReaderDoesNotTakeAreLeftToTheDecoder() throws {
    for cart in Self.carts where !Self.checkoutCarts.contains(cart) {
      let encoded = try JSON.encode(cart)
      var reader = JSONReader(encoded)
      #expect(throws: JSONReader.Failure.self) { try CartView(reading: &reader) }
      #expect(try JSON.read(CartView.self, from: encoded) == cart)
    }
  }

  @Test(arguments: checkoutRequests)
  func aCheckoutRequestIsReadAsTheDecoderReadsIt(request: CartCheckoutRequest) throws {
    try Self.expectReadsLikeTheDecoder(request)
  }

  @Test(arguments: checkoutReplies)
  func aCheckoutReplyIsReadAsTheDecoderReadsIt(reply: CartCheckoutReply) throws {
    try Self.expectReadsLikeTheDecoder(reply)
  }

  @Test(arguments: reservationRequests)
  func aReservationRequestIsReadAsTheDecoderReadsIt(request: ReservationRequest) throws {
    try Self.expectReadsLikeTheDecoder(request)
  }

  @Test(arguments: reservationReplies)
  func aReservationReplyIsReadAsTheDecoderReadsIt(reply: ReservationReply) throws {
    try Self.expectReadsLikeTheDecoder(reply)
  }

  @Test(arguments: stockChanges) func stockChangedIsReadAsTheDecoderReadsIt(change: StockChanged) throws {
    try Self.expectReadsLikeTheDecoder(change)
  }

  @Test func pointsPricesTotalsAndErrorsAreReadAsTheDecoderReadsThem() throws {
    try Self.expectReadsLikeTheDecoder(GeoPoint(lat: 52.520_008, lng: -13.404_954))
    try Self.expectReadsLikeTheDecoder(GeoPoint(lat: 0, lng: 180))
    try Self.expectReadsLikeTheDecoder(UnitPrice(amount: Self.eur(698), per: .kilogram))
    try Self.expectReadsLikeTheDecoder(Self.totals)
    try Self.expectReadsLikeTheDecoder(Self.milk)
    try Self.expectReadsLikeTheDecoder(Self.bread)
    try Self.expectReadsLikeTheDecoder(
      CartPromoView(code: "A", description: "B \"c\"", applied: true, notice: "d"))
    try Self.expectReadsLikeTheDecoder(RemoteError(code: "x", detail: "y\n"))
    try Self.expectReadsLikeTheDecoder(CartCheckoutRequest.Count(sku: "p1", available: 3))
  }

  @Test func anOrderOutcomeIsReadAsTheDecoderReadsIt() throws {
    try Self.expectReadsLikeTheDecoder(OrderOutcome(orderId: "o-1", hub: "h1", userId: "alice"))
    try Self.expectReadsLikeTheDecoder(OrderOutcome(orderId: "o-2", hub: nil))
  }
}
