import Testing

@testable import StockService

/// A page of the catalogue snapshot from the rows read for it.
@Suite struct CataloguePageTests {
  func rows(_ count: Int) -> [StockedProduct] {
    (1...count).map {
      StockedProduct(
        hub: "h1", product: Product(sku: "p\($0)", name: "P \($0)", price: eur(100)), available: $0,
        version: Int64($0))
    }
  }

  @Test func oneRowMoreThanAskedMeansAnotherPageFollows() {
    #expect(CataloguePage.rowsToRead(limit: 2) == 3)
    let page = CataloguePage(hub: "h1", rows: rows(3), limit: 2)
    #expect(page.products.map(\.value.sku) == ["p1", "p2"])
    #expect(page.next == "p2")
    #expect(page.products.map(\.version) == [1, 2])
    #expect(page.products.allSatisfy { $0.value.reason == nil })
  }

  @Test func theLastPageHasNoNext() {
    let page = CataloguePage(hub: "h1", rows: rows(2), limit: 2)
    #expect(page.products.count == 2)
    #expect(page.next == nil)
  }

  @Test func aLimitBelowOneReadsAPageOfOne() {
    #expect(CataloguePage.rowsToRead(limit: 0) == 2)
    let page = CataloguePage(hub: "h1", rows: rows(2), limit: 0)
    #expect(page.products.map(\.value.sku) == ["p1"])
    #expect(page.next == "p1")
  }
}
