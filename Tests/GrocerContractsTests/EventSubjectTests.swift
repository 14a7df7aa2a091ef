import Foundation
import GrocerContracts
import GrocerCore
import Testing

@Suite struct EventSubjectTests {
  @Test func subjectsNameTheirKind() {
    #expect(EventSubject.order("ord_1") == "order/ord_1")
    #expect(EventSubject.tracking("ord_1") == "tracking/ord_1")
    #expect(EventSubject.liveActivity("ord_1") == "liveActivity/ord_1")
    #expect(EventSubject.stock(hub: "h1", sku: "p1") == "stock/h1/p1")
    #expect(EventSubject.hub("h1") == "hub/h1")
    #expect(EventSubject.catalogue(hub: "h1") == "catalogue/h1")
    #expect(EventSubject.cart(userId: "u1", hub: "h1") == "cart/u1/h1")
    #expect(EventSubject.push("p_1") == "push/p_1")
  }

  @Test func stockSubjectsAreReadWithOrWithoutTheirKind() {
    #expect(EventSubject.stockParts("stock/h1/p/1")! == ("h1", "p/1"))
    #expect(EventSubject.stockParts("h1/p1")! == ("h1", "p1"))
    #expect(EventSubject.stockParts("stock/h1") == nil)
    #expect(EventSubject.stockParts("h1") == nil)
  }

  @Test func anIdIsReadOnlyFromItsOwnKind() {
    #expect(EventSubject.id(of: "hub/h1", kind: "hub") == "h1")
    #expect(EventSubject.id(of: "catalogue/h1", kind: "hub") == nil)
    #expect(EventSubject.id(of: "hub/", kind: "hub") == nil)
    #expect(EventSubject.id(of: "hubs/h1", kind: "hub") == nil)
  }
}

@Suite struct PushOutcomeTests {
  @Test func writtenByHandAsTheEncoderWritesIt() throws {
    let at = Date(timeIntervalSince1970: 1_790_000_000)
    for outcome in [
      PushOutcome(
        pushId: "5e1c", tokenKind: .liveActivity, token: "ab", orderId: "o1", userId: "u1",
        pushType: "liveactivity",
        event: "update", version: 3, priority: 10, status: 200, reason: nil, latencyMs: 12, answeredAt: at,
        staleDate: at + 180),
      PushOutcome(
        pushId: "5e1d", tokenKind: .device, token: "cd", orderId: "o\"2", userId: "u1", pushType: "alert",
        priority: 10, status: nil, reason: "NoAnswer", latencyMs: 0, answeredAt: at),
    ] {
      #expect(outcome.jsonBytes == Array(try JSON.encode(outcome)))
      #expect(try JSON.decode(PushOutcome.self, from: Data(outcome.jsonBytes)) == outcome)
      let message = outcome.message(id: "e1", delivered: outcome.status == 200)
      let envelope = try JSON.decode(EventEnvelope.self, from: message.body)
      #expect(envelope.subject == "push/" + outcome.pushId && envelope.sequence == 1)
      #expect(envelope.type == (outcome.status == 200 ? "push.delivered" : "push.failed"))
    }
  }
}
