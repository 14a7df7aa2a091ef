import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

@Suite struct ReservationTests {
  let t0 = date("2026-10-20T18:00:00Z")

  func book() -> ReservationBook {
    var book = ReservationBook(timeToLive: 600)
    book.setOnHand(hub: "h1", sku: "p1", count: 5)
    book.setOnHand(hub: "h1", sku: "p2", count: 1)
    book.setOnHand(hub: "h1", sku: "p3", count: 0)
    return book
  }

  func request(_ orderId: String, _ lines: [(String, Int)], hub: String = "h1") -> ReservationRequest {
    ReservationRequest(
      orderId: orderId, hub: hub, lines: lines.map { ReservationLine(sku: $0.0, quantity: $0.1) })
  }

  @Test(
    arguments: [
      ([("p1", 1)], nil),
      ([("p1", 99)], nil),
      ([("p1", 0)], "invalidQuantity"),
      ([("p1", 100)], "invalidQuantity"),
      ([("p1", -1)], "invalidQuantity"),
      ([("p1", 1), ("p1", 2)], "duplicateLine"),
      ([("p 1", 1)], "invalidSKU"),
      ([], "invalidLineCount"),
      ((1...101).map { ("p\($0)", 1) }, "invalidLineCount"),
      ((1...100).map { ("p\($0)", 1) }, nil),
    ] as [([(String, Int)], String?)])
  func requestsAreValidated(lines: [(String, Int)], code: String?) {
    #expect(errorCode { () throws(DomainError) in try request("o1", lines).validate() } == code)
  }

  @Test func badOrderIdsAndHubsAreRejected() {
    #expect(
      errorCode { () throws(DomainError) in try request("", [("p1", 1)]).validate() } == "invalidOrderID")
    #expect(
      errorCode { () throws(DomainError) in try request("o1", [("p1", 1)], hub: "h 1").validate() }
        == "invalidHubID")
    var book = book()
    let reply = book.reserve(request("o1", [("p1", 0)]), now: t0)
    #expect(reply.status == .rejected)
    #expect(reply.error?.code == "invalidQuantity")
    #expect(book.reservations.isEmpty)
  }

  @Test func aReservationHoldsEverythingUntilItExpires() {
    var book = book()
    let reply = book.reserve(request("o1", [("p1", 3), ("p2", 1)]), now: t0)
    #expect(reply == .reserved(orderId: "o1", expiresAt: t0.addingTimeInterval(600)))
    #expect(book.available(hub: "h1", sku: "p1", now: t0) == 2)
    #expect(book.available(hub: "h1", sku: "p2", now: t0) == 0)
    #expect(book.onHand["h1"]?["p1"] == 5)
    #expect(book.available(hub: "h1", sku: "p1", now: t0.addingTimeInterval(600)) == 5)
  }

  @Test func aShortfallHoldsNothingAndSaysWhatIsAvailable() {
    var book = book()
    _ = book.reserve(request("o1", [("p1", 3)]), now: t0)
    let reply = book.reserve(request("o2", [("p1", 3), ("p2", 1), ("p3", 1), ("p9", 2)]), now: t0)
    #expect(reply.status == .shortfall)
    #expect(
      reply.shortfall == [
        .init(sku: "p1", requested: 3, available: 2), .init(sku: "p3", requested: 1, available: 0),
        .init(sku: "p9", requested: 2, available: 0),
      ])
    #expect(book.reservations["o2"] == nil)
    #expect(book.available(hub: "h1", sku: "p2", now: t0) == 1)
  }

  @Test func askingAgainWithTheSameLinesReplaysWithoutHoldingTwice() {
    var book = book()
    let first = book.reserve(request("o1", [("p1", 2), ("p2", 1)]), now: t0)
    let again = book.reserve(request("o1", [("p2", 1), ("p1", 2)]), now: t0.addingTimeInterval(30))
    #expect(again == first)
    #expect(book.available(hub: "h1", sku: "p1", now: t0) == 3)
    let other = book.reserve(request("o1", [("p1", 3)]), now: t0)
    #expect(other.status == .rejected)
    #expect(other.error?.code == "reservationConflict")
    let otherHub = book.reserve(request("o1", [("p1", 2), ("p2", 1)], hub: "h2"), now: t0)
    #expect(otherHub.error?.code == "reservationConflict")
  }

  @Test func commitTakesTheHeldQuantitiesOffOnHandOnce() {
    var book = book()
    _ = book.reserve(request("o1", [("p1", 2), ("p2", 1)]), now: t0)
    let moved = book.commit(orderId: "o1")
    #expect(
      moved == [.init(hub: "h1", sku: "p1", onHand: 3), .init(hub: "h1", sku: "p2", onHand: 0)])
    #expect(book.available(hub: "h1", sku: "p1", now: t0) == 3)
    let r1 = book.commit(orderId: "o1")
    #expect(r1.isEmpty)
    let r2 = book.release(orderId: "o1")
    #expect(r2 == false)
    #expect(book.onHand["h1"]?["p1"] == 3)
    let r3 = book.reserve(request("o1", [("p1", 2), ("p2", 1)]), now: t0)
    #expect(r3.status == .reserved)
  }

  @Test func releaseFreesTheHoldAndLaterAsksAreRejected() {
    var book = book()
    _ = book.reserve(request("o1", [("p1", 5)]), now: t0)
    #expect(book.available(hub: "h1", sku: "p1", now: t0) == 0)
    let r4 = book.release(orderId: "o1")
    #expect(r4)
    #expect(book.available(hub: "h1", sku: "p1", now: t0) == 5)
    let r5 = book.commit(orderId: "o1")
    #expect(r5.isEmpty)
    #expect(book.onHand["h1"]?["p1"] == 5)
    let r6 = book.reserve(request("o1", [("p1", 5)]), now: t0)
    #expect(r6.error?.code == "reservationReleased")
    let r7 = book.release(orderId: "unknown")
    #expect(r7 == false)
    let r8 = book.commit(orderId: "unknown")
    #expect(r8.isEmpty)
  }

  @Test func holdsExpireAfterTheirTimeToLive() {
    var book = book()
    _ = book.reserve(request("o1", [("p1", 4)]), now: t0)
    _ = book.reserve(request("o2", [("p1", 1)]), now: t0.addingTimeInterval(300))
    let r9 = book.expire(now: t0.addingTimeInterval(599))
    #expect(r9.isEmpty)
    let r10 = book.reserve(request("o3", [("p1", 1)]), now: t0.addingTimeInterval(599))
    #expect(r10.status == .shortfall)
    let r11 = book.reserve(request("o3", [("p1", 1)]), now: t0.addingTimeInterval(600))
    #expect(r11.status == .reserved)
    let r12 = book.expire(now: t0.addingTimeInterval(900))
    #expect(r12 == ["o1", "o2"])
    #expect(book.reservations["o1"]?.state == .released)
    let r13 = book.reserve(request("o1", [("p1", 4)]), now: t0.addingTimeInterval(900))
    #expect(r13.error?.code == "reservationReleased")
  }

  @Test func anExpiredButUnsweptHoldIsStillCommittedWhenTheOrderIsConfirmed() {
    var book = book()
    _ = book.reserve(request("o1", [("p1", 2)]), now: t0)
    let r14 = book.commit(orderId: "o1")
    #expect(r14 == [.init(hub: "h1", sku: "p1", onHand: 3)])
  }

  @Test func theReplyHasTheDocumentedWireShape() throws {
    let reply = ReservationReply.shortfall(orderId: "o1", [.init(sku: "p1", requested: 3, available: 2)])
    let json = String(decoding: try JSON.encode(reply), as: UTF8.self)
    #expect(
      json
        == #"{"error":null,"expiresAt":null,"orderId":"o1","shortfall":[{"available":2,"requested":3,"sku":"p1"}],"status":"shortfall"}"#
    )
    #expect(try JSON.decode(ReservationReply.self, from: data(json)) == reply)
    let reserved = ReservationReply.reserved(orderId: "o1", expiresAt: t0)
    #expect(
      String(decoding: try JSON.encode(reserved), as: UTF8.self).contains(
        #""expiresAt":"2026-10-20T18:00:00Z""#))
    let request = try JSON.decode(
      ReservationRequest.self, from: data(#"{"orderId":"o1","hub":"h1","lines":[{"sku":"p1","quantity":2}]}"#)
    )
    #expect(request == self.request("o1", [("p1", 2)]))
  }
}
