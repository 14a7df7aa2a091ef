import Testing

@testable import StockService

/// How holds, commits and stock takes move a product's counts and version.
@Suite struct StockLevelTests {
  @Test func availableIsOnHandMinusHeldNeverBelowZero() {
    #expect(StockLevel(onHand: 5, held: 2, version: 1).available == 3)
    #expect(StockLevel(onHand: 1, held: 3, version: 1).available == 0)
  }

  @Test func aHoldAlwaysRaisesTheVersionAndAReleaseNeverTakesHeldBelowZero() {
    var level = StockLevel(onHand: 5, held: 0, version: 1)
    level.hold(3)
    #expect(level == StockLevel(onHand: 5, held: 3, version: 2))
    level.hold(-4)
    #expect(level == StockLevel(onHand: 5, held: 0, version: 3))
  }

  @Test func aNormalCommitMovesNothingAvailableAndKeepsTheVersion() {
    var level = StockLevel(onHand: 5, held: 2, version: 4)
    let taking = level.take(2, heldToo: true)
    #expect(level == StockLevel(onHand: 3, held: 0, version: 4))
    #expect(taking == StockLevel.Taking(publishes: false, oversold: false))
  }

  @Test func aTakingAfterTheHoldExpiredMovesAvailableAndIsPublished() {
    var level = StockLevel(onHand: 5, held: 0, version: 4)
    let taking = level.take(2, heldToo: false)
    #expect(level == StockLevel(onHand: 3, held: 0, version: 5))
    #expect(taking == StockLevel.Taking(publishes: true, oversold: false))
  }

  @Test func anOversoldShelfStopsAtZeroAndSaysSo() {
    var level = StockLevel(onHand: 1, held: 3, version: 2)
    let taking = level.take(3, heldToo: true)
    #expect(level == StockLevel(onHand: 0, held: 0, version: 2), "available was 0 and stays 0")
    #expect(taking.oversold)
    #expect(!taking.publishes)

    var late = StockLevel(onHand: 1, held: 0, version: 2)
    let lateTaking = late.take(3, heldToo: false)
    #expect(lateTaking == StockLevel.Taking(publishes: true, oversold: true))
    #expect(late == StockLevel(onHand: 0, held: 0, version: 3))
  }

  @Test func aStockTakeOfTheSameCountChangesNothing() {
    var level = StockLevel(onHand: 5, held: 2, version: 3)
    let same = level.count(5)
    #expect(!same)
    #expect(level == StockLevel(onHand: 5, held: 2, version: 3))
    let other = level.count(9)
    #expect(other)
    #expect(level == StockLevel(onHand: 9, held: 2, version: 4), "what is held stays held")
  }

  @Test func finishingAReservationCommitsOrReleasesEachLine() {
    var committed = StockLevel(onHand: 5, held: 2, version: 1)
    let commit = ReservationFinish.apply(.committed, quantity: 2, to: &committed)
    #expect(!commit.publishes)
    #expect(committed == StockLevel(onHand: 3, held: 0, version: 1))

    var released = StockLevel(onHand: 5, held: 2, version: 1)
    let release = ReservationFinish.apply(.released, quantity: 2, to: &released)
    #expect(release.publishes)
    #expect(released == StockLevel(onHand: 5, held: 0, version: 2))
  }
}

/// Staff count changes: the target count, its limits and its reason.
@Suite struct CountChangeTests {
  @Test func aStockTakeSetsTheCount() throws {
    #expect(try CountChange.set(7).target(from: 3) == 7)
    #expect(CountChange.set(7).reason == "stockTake")
  }

  @Test func anAdjustmentMovesTheCountWithinItsLimits() throws {
    #expect(try CountChange.adjust(StockAdjustment(delta: -2, reason: .damaged)).target(from: 3) == 1)
    #expect(CountChange.adjust(StockAdjustment(delta: -2, reason: .damaged)).reason == "damaged")
    #expect(
      errorCode { () throws(DomainError) in
        try CountChange.adjust(StockAdjustment(delta: -4, reason: .lost)).target(from: 3)
      } == "countWouldGoNegative")
    #expect(
      errorCode { () throws(DomainError) in
        try CountChange.adjust(StockAdjustment(delta: 2, reason: .received)).target(
          from: StockSet.maximumCount)
      } == "countTooLarge")
    #expect(
      errorCode { () throws(DomainError) in
        try CountChange.adjust(StockAdjustment(delta: 0, reason: .found)).target(from: 3)
      } == "invalidDelta")
  }
}

/// Only a difference from what is stored is a catalogue change.
@Suite struct CatalogueChangeTests {
  let product = Product(sku: "p1", name: "Oat milk", price: eur(199), deposit: nil, unitPrice: nil)

  @Test func aNewProductIsCreatedAtVersionOne() {
    let change = CatalogueChange.of(product, over: nil)
    #expect(change == .created)
    #expect(change.version(after: 0) == 1)
    #expect(change.productReason == "productCreated")
  }

  @Test func theSameFieldsAreNoChange() {
    let change = CatalogueChange.of(product, over: product)
    #expect(change == .unchanged)
    #expect(change.version(after: 4) == nil)
    #expect(change.productReason == nil)
  }

  @Test func anotherPriceIsAChangeAtTheNextVersion() {
    var dearer = product
    dearer.price = eur(249)
    let change = CatalogueChange.of(dearer, over: product)
    #expect(change == .changed)
    #expect(change.version(after: 4) == 5)
    #expect(change.productReason == "productChanged")
  }
}
