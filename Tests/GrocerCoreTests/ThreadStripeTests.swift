import Foundation
import GrocerFastPath
import Synchronization
import Testing

@testable import GrocerCore

@Suite struct ThreadStripeTests {
  @Test func aThreadKeepsTheStripeItAdopted() {
    ThreadStripe.adopt(5)
    #expect(ThreadStripe.isAssigned)
    #expect(ThreadStripe.current == 5)
    ThreadStripe.adopt(ThreadStripe.count + 2)
    #expect(ThreadStripe.current == 2)
    ThreadStripe.adopt(-1)
    #expect(ThreadStripe.current == ThreadStripe.count - 1)
  }

  @Test func aNewThreadTakesAStripeInRangeAndKeepsIt() {
    let seen = Mutex<[Int]>([])
    let done = DispatchGroup()
    for _ in 0..<(2 * ThreadStripe.count) {
      done.enter()
      Thread {
        let first = ThreadStripe.current
        let again = ThreadStripe.current
        seen.withLock { $0.append(first == again ? first : -1) }
        done.leave()
      }.start()
    }
    done.wait()
    let stripes = seen.withLock { $0 }
    #expect(stripes.count == 2 * ThreadStripe.count)
    #expect(stripes.allSatisfy { (0..<ThreadStripe.count).contains($0) })
    // Turns go round: new threads spread over the stripes rather than piling on one.
    #expect(Set(stripes).count > 1)
  }

  final class Shared: Sendable {
    let counter = StripedWords()
  }

  @Test func stripedWordsAddOnTheCallersStripeAndSumsThemAll() async {
    let shared = Shared()
    ThreadStripe.adopt(3)
    #expect(shared.counter.add(4) == (stripe: 3, value: 4))
    #expect(shared.counter.add(1) == (stripe: 3, value: 5))
    await withTaskGroup(of: Void.self) { group in
      for thread in 0..<(ThreadStripe.count + 4) {
        group.addTask {
          ThreadStripe.adopt(thread)
          for _ in 0..<1_000 { shared.counter.add(1) }
        }
      }
    }
    #expect(shared.counter.total() == 5 + (ThreadStripe.count + 4) * 1_000)
  }

  @Test func stripesAreALineApartAndAligned() {
    let (base, stride) = ThreadStripe.allocate(bytesPerStripe: 8)
    defer { base.deallocate() }
    #expect(stride == ThreadStripe.lineBytes)
    #expect(Int(bitPattern: base) % ThreadStripe.lineBytes == 0)
    let (wider, widerStride) = ThreadStripe.allocate(bytesPerStripe: 130)
    defer { wider.deallocate() }
    #expect(widerStride == 2 * ThreadStripe.lineBytes)
  }
}
