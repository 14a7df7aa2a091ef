import GrocerContracts
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
