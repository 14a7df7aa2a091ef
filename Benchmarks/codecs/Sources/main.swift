import Foundation
import GrocerAuth
import GrocerContracts
import GrocerCore
import OrderService

// Each hand-written codec against `JSON.encode` / `JSON.decode` (Codable) on the same value, in one
// process, taking turns round by round (this machine is shared and noisy). Prints nanoseconds per
// operation for both, the ratio and what the codec saves per use; `run.sh` and Benchmarks/README.md
// say which path each one is on.

let rounds = Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 5
let budget = Double(ProcessInfo.processInfo.environment["BENCH_ROUND_SECONDS"] ?? "") ?? 0.2

/// Keeps results alive so the optimizer cannot drop the work.
nonisolated(unsafe) var sink = 0

func eur(_ units: Int) -> Money { Money(minorUnits: units, currency: "EUR") }
let noon = Date(timeIntervalSince1970: 1_792_584_000)

let milk = CartLineView(
  sku: "p00001", name: "Milk 1 l", quantity: 3, unitPrice: eur(129), deposit: eur(25), lineTotal: eur(387))
let bread = CartLineView(
  sku: "p00002", name: "Sourdough bread", quantity: 1, unitPrice: eur(249), deposit: nil, lineTotal: eur(249))
let totals = CartTotals(
  subtotal: eur(636), deposit: eur(75), deliveryFee: eur(299), smallBasketFee: eur(0), discount: eur(0),
  total: eur(1010))
// A cart of five lines: the app's usual basket.
let cart = CartView(
  hub: "h1", version: 18,
  lines: (1...5).map { index in
    CartLineView(
      sku: "p0000\(index)", name: "Product number \(index)", quantity: index, unitPrice: eur(100 + index),
      deposit: index % 2 == 0 ? eur(25) : nil, lineTotal: eur((100 + index) * index))
  }, adjustments: [], promo: nil, totals: totals, blocker: nil)
let checkoutRequest = CartCheckoutRequest(
  kind: .applyCounts, userId: "alice", hub: "h1", cartVersion: 18,
  counts: (1...5).map { .init(sku: "p0000\($0)", available: 40) }, correlationId: "req-1")
let checkoutReply = CartCheckoutReply(cart: cart, matches: true)
let cartChanged = CartChanged(
  userId: "alice", hub: "h1", version: 19, lines: (1...5).map { .init(sku: "p0000\($0)", quantity: $0) },
  promo: nil, reason: "quantity")
let orderConfirmed = OrderConfirmed(
  orderId: "o-1", userId: "alice", hub: "h1", cartVersion: 18, lines: cart.lines.map(OrderLine.init),
  totals: totals, deliverTo: GeoPoint(lat: 52.520_008, lng: 13.404_954), paymentId: "pay_1", placedAt: noon)
let reservationRequest = ReservationRequest(
  orderId: "o-1", hub: "h1", lines: (1...5).map { .init(sku: "p0000\($0)", quantity: $0) },
  correlationId: "req-1")
let reservationReply = ReservationReply.reserved(orderId: "o-1", expiresAt: noon)
let stockChanged = StockChanged(
  hub: "h1", sku: "p00001", name: "Milk 1 l", available: 40, price: eur(129), deposit: eur(25),
  unitPrice: UnitPrice(amount: eur(129), per: .litre), reason: "reservation")
let snapshot = TrackingSnapshot(
  orderId: "o-1", version: 9, status: .onTheWay, problem: nil,
  eta: ETARange(earliest: noon, latest: noon.addingTimeInterval(300)),
  rider: RiderView(firstName: "Sam", lat: 52.51, lng: 13.41, recordedAt: noon),
  destination: GeoPoint(lat: 52.520_008, lng: 13.404_954), generatedAt: noon)
let trackingUpdated = TrackingUpdated(
  userId: "alice", hub: "h1", snapshot: snapshot, changed: [.rider], previousStatus: .onTheWay)
let outcome = OrderOutcome(orderId: "o-1", hub: "h1", userId: "alice")
let placeOrder = PlaceOrderBody(
  hub: "h1", cartVersion: 18, payment: .init(method: "applePay", token: String(repeating: "t", count: 120)),
  deliverTo: GeoPoint(lat: 52.520_008, lng: 13.404_954))

func encoded(_ value: some Encodable) -> Data { try! JSON.encode(value) }

/// One codec: what it does, the path it is on, and the two ways of doing it.
struct Case {
  var name: String
  var path: String
  var handWritten: () -> Int
  var codable: () -> Int
}

func writing<T: Encodable>(_ name: String, _ path: String, _ value: T, _ hand: @escaping (T) -> [UInt8])
  -> Case
{
  Case(
    name: "write " + name, path: path, handWritten: { hand(value).count },
    codable: { (try! JSON.encode(value)).count })
}

func reading<T: Decodable & JSONReadable>(_ name: String, _ path: String, _ value: some Encodable, as: T.Type)
  -> Case
{
  let bytes = [UInt8](encoded(value))
  let data = Data(bytes)
  return Case(
    name: "read " + name, path: path,
    handWritten: {
      var reader = JSONReader(bytes)
      _ = try! T(reading: &reader)
      return 1
    },
    codable: {
      _ = try! JSON.decode(T.self, from: data)
      return 1
    })
}

let placeOrderBytes = [UInt8](encoded(placeOrder))
let cases: [Case] = [
  writing("CartView (5 lines)", "every cart reply (GET/PUT cart)", cart) { $0.jsonBytes() },
  writing("CartChanged", "every cart write (cart.changed)", cartChanged) { $0.jsonBytes() },
  writing("CartCheckoutRequest", "every order (cart.checkout RPC, twice)", checkoutRequest) { $0.jsonBytes },
  reading(
    "CartCheckoutRequest", "every order (cart.checkout RPC, twice)", checkoutRequest,
    as: CartCheckoutRequest.self),
  writing("CartCheckoutReply", "every order (cart.checkout RPC, twice)", checkoutReply) { $0.jsonBytes() },
  reading(
    "CartCheckoutReply", "every order (cart.checkout RPC, twice)", checkoutReply, as: CartCheckoutReply.self),
  writing("OrderConfirmed", "every order (order.confirmed)", orderConfirmed) { $0.jsonBytes },
  writing("ReservationRequest", "every order (stock.reserve RPC)", reservationRequest) { $0.jsonBytes },
  reading(
    "ReservationRequest", "every order (stock.reserve RPC)", reservationRequest, as: ReservationRequest.self),
  writing("ReservationReply", "every order (stock.reserve RPC)", reservationReply) { $0.jsonBytes },
  reading("ReservationReply", "every order (stock.reserve RPC)", reservationReply, as: ReservationReply.self),
  reading(
    "OrderOutcome", "every order event at CartService and StockService", outcome, as: OrderOutcome.self),
  writing("StockChanged", "every stock move (stock.changed)", stockChanged) { $0.jsonBytes },
  reading("StockChanged", "every stock.changed at CartService", stockChanged, as: StockChanged.self),
  writing("TrackingSnapshot", "every tracking reply and rider fix", snapshot) { $0.jsonBytes },
  writing("TrackingUpdated", "every rider fix (tracking.updated)", trackingUpdated) { $0.jsonBytes },
  reading(
    "TrackingUpdated", "every tracking.updated at NotifyGateway (and its pending update)", trackingUpdated,
    as: TrackingUpdated.self),
  reading("GeoPoint", "every rider fix (POST rider)", GeoPoint(lat: 52.51, lng: 13.41), as: GeoPoint.self),
  Case(
    name: "read PlaceOrderBody", path: "every order (POST /v1/orders)",
    handWritten: { PlaceOrderBody.fast(placeOrderBytes) == nil ? 0 : 1 },
    codable: { (try? StrictJSON.decode(PlaceOrderBody.self, from: Data(placeOrderBytes))) == nil ? 0 : 1 }),
  Case(
    name: "fingerprint PlaceOrderBody", path: "every order (POST /v1/orders)",
    handWritten: { placeOrder.fingerprint.utf8.count },
    codable: { SHA256.hex([UInt8](try! JSON.encode(placeOrder))).utf8.count }),
]

/// Nanoseconds per call of `body`, run for about `budget` seconds.
func measure(_ body: () -> Int) -> Double {
  var calls = 0
  let start = DispatchTime.now().uptimeNanoseconds
  var elapsed: UInt64 = 0
  repeat {
    for _ in 0..<64 { sink &+= body() }
    calls += 64
    elapsed = DispatchTime.now().uptimeNanoseconds - start
  } while Double(elapsed) < budget * 1e9
  return Double(elapsed) / Double(calls)
}

var hand = [[Double]](repeating: [], count: cases.count)
var codable = [[Double]](repeating: [], count: cases.count)
for round in 0..<rounds {
  for (index, item) in cases.enumerated() {
    // Odd rounds measure Codable first, so a slow spell does not always fall on one side.
    if round % 2 == 0 {
      hand[index].append(measure(item.handWritten))
      codable[index].append(measure(item.codable))
    } else {
      codable[index].append(measure(item.codable))
      hand[index].append(measure(item.handWritten))
    }
  }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
func pad(_ text: String, _ width: Int) -> String {
  text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}
func number(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

print("codec benchmark: median of \(rounds) rounds of \(budget) s per side")
print(
  pad("codec", 30) + pad("hand ns", 10) + pad("Codable ns", 12) + pad("Codable/hand", 14)
    + pad("saves µs", 10)
    + "path")
for (index, item) in cases.enumerated() {
  let handNs = median(hand[index])
  let codableNs = median(codable[index])
  print(
    pad(item.name, 30) + pad(number(handNs), 10) + pad(number(codableNs), 12)
      + pad(number(codableNs / handNs, 1) + "×", 14) + pad(number((codableNs - handNs) / 1000, 1), 10)
      + item.path)
}
if sink == 42 { print("") }
