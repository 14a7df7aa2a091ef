import Foundation
import GrocerFastPath
import Synchronization
import Testing

@testable import GrocerCore

@Suite struct ByteKeyIndexTests {
  final class Box: Sendable {
    let value: Int
    let deinits: Deinits?

    init(_ value: Int, deinits: Deinits? = nil) {
      self.value = value
      self.deinits = deinits
    }

    deinit { deinits?.count.add(1, ordering: .relaxed) }
  }

  final class Deinits: Sendable {
    let count = Atomic<Int>(0)
  }

  final class Shared: Sendable {
    let index = ByteKeyIndex<Box>()
  }

  @Test func findsWhatWasInsertedAndNothingElse() {
    let index = ByteKeyIndex<Box>()
    #expect(index.find("GET", "/a") { $0.value } == nil)
    #expect(index.insert(Box(1), "GET", "/a") == nil)
    #expect(index.insert(Box(2), "PUT", "/a") == nil)
    #expect(index.find("GET", "/a") { $0.value } == 1)
    #expect(index.find("PUT", "/a") { $0.value } == 2)
    #expect(index.find("GET", "/b") { $0.value } == nil)
    #expect(index.find("GET", "/a/") { $0.value } == nil)
    #expect(index.count == 2)
  }

  @Test func theTwoPartsOfAKeyStayApart() {
    let index = ByteKeyIndex<Box>()
    index.insert(Box(1), "ab", "c")
    index.insert(Box(2), "a", "bc")
    index.insert(Box(3), "", "abc")
    index.insert(Box(4), "abc", "")
    #expect(index.find("ab", "c") { $0.value } == 1)
    #expect(index.find("a", "bc") { $0.value } == 2)
    #expect(index.find("", "abc") { $0.value } == 3)
    #expect(index.find("abc", "") { $0.value } == 4)
    #expect(index.find("", "") { $0.value } == nil)
    #expect(index.count == 4)
  }

  @Test func insertingAnExistingKeyReplacesItsObjectAndReturnsTheOld() {
    let index = ByteKeyIndex<Box>()
    index.insert(Box(1), "h1", "ids=p1")
    #expect(index.insert(Box(2), "h1", "ids=p1")?.value == 1)
    #expect(index.find("h1", "ids=p1") { $0.value } == 2)
    #expect(index.count == 1)
  }

  /// Past its load the table grows; every key is still found, long ones and non-ASCII too.
  @Test func everyKeyIsFoundAfterTheTableGrows() {
    let index = ByteKeyIndex<Box>()
    for number in 0..<3_000 {
      index.insert(
        Box(number), "h\(number % 7)", "ids=p\(number)é" + String(repeating: "x", count: number % 200))
    }
    #expect(index.count == 3_000)
    for number in 0..<3_000 {
      #expect(
        index.find("h\(number % 7)", "ids=p\(number)é" + String(repeating: "x", count: number % 200)) {
          $0.value
        } == number)
    }
  }

  /// Removal places the survivors again: a key whose run went through a removed slot is still
  /// found.
  @Test func removingSomeKeepsTheRestFindable() {
    let deinits = Deinits()
    let index = ByteKeyIndex<Box>()
    for number in 0..<500 { index.insert(Box(number, deinits: deinits), "h\(number % 2)", "q\(number)") }
    index.removeAll { $0.value % 2 == 0 }
    #expect(index.count == 250)
    #expect(deinits.count.load(ordering: .relaxed) == 250)
    for number in 0..<500 {
      #expect(index.find("h\(number % 2)", "q\(number)") { $0.value } == (number % 2 == 0 ? nil : number))
    }
    index.removeAll()
    #expect(index.count == 0)
    #expect(index.find("h1", "q1") { $0.value } == nil)
    #expect(deinits.count.load(ordering: .relaxed) == 500)
    index.insert(Box(7), "h1", "q1")
    #expect(index.find("h1", "q1") { $0.value } == 7)
  }

  @Test func theIndexReleasesItsObjectsWhenItGoes() {
    let deinits = Deinits()
    do {
      let index = ByteKeyIndex<Box>()
      for number in 0..<40 { index.insert(Box(number, deinits: deinits), "a", "\(number)") }
      index.insert(Box(99, deinits: deinits), "a", "0")  // replaces (and releases) one
      #expect(deinits.count.load(ordering: .relaxed) == 1)
      #expect(index.count == 40)
    }
    #expect(deinits.count.load(ordering: .relaxed) == 41)
  }

  @Test func readersOnEveryStripeFindWhatWritersInsert() async {
    let shared = Shared()
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for number in 0..<2_000 { shared.index.insert(Box(number), "w", "\(number)") }
      }
      for reader in 0..<ThreadStripe.count {
        group.addTask {
          ThreadStripe.adopt(reader)
          for number in 0..<2_000 {
            // Either not there yet or the right object, never another one.
            if let found = shared.index.find("w", "\(number)", { $0.value }) { #expect(found == number) }
          }
        }
      }
    }
    #expect(shared.index.count == 2_000)
  }
}
