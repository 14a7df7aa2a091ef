import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import Synchronization
import Testing

@testable import OrderService

/// `BrokerCheckoutClients` asks a question once more when its connection was down or broke
/// (a cluster node died), and says whether the question may have been received.
@Suite struct BrokerCheckoutClientsTests {
  /// Answers each request with the next scripted outcome; records what it was asked.
  final class ScriptedRequester: AMQPRequester {
    private let script: Mutex<[Result<Data, AMQPError>]>
    let asked = Mutex(0)
    let reconnects: Bool

    init(_ script: [Result<Data, AMQPError>], reconnects: Bool = true) {
      self.script = Mutex(script)
      self.reconnects = reconnects
    }

    func request(routingKey: String, body: Data, timeout: Duration) async throws -> Data {
      asked.withLock { $0 += 1 }
      return try script.withLock { $0.removeFirst() }.get()
    }

    func waitUntilConnected(timeout: Duration) async -> Bool { reconnects }
  }

  let request = ReservationRequest(
    orderId: "ord_1", hub: "h1", lines: [ReservationLine(sku: "p00001", quantity: 1)])
  let answer = ReservationReply.reserved(
    orderId: "ord_1", expiresAt: Date(timeIntervalSince1970: 1_800_000_000))

  func clients(_ requester: ScriptedRequester) -> BrokerCheckoutClients {
    BrokerCheckoutClients(
      client: requester, cartQueue: "cart.checkout", reservationQueue: "stock.reservations",
      timeout: .seconds(1))
  }

  @Test func aQuestionWhoseConnectionBrokeIsAskedAgainOnceReconnected() async throws {
    let requester = ScriptedRequester([
      .failure(.connectionLost("node died")), .success(try JSON.encode(answer)),
    ])
    #expect(try await clients(requester).reserve(request) == answer)
    #expect(requester.asked.withLock { $0 } == 2)
  }

  @Test func aQuestionAskedWhileDisconnectedIsAskedOnceReconnected() async throws {
    let requester = ScriptedRequester([.failure(.notConnected), .success(try JSON.encode(answer))])
    #expect(try await clients(requester).reserve(request) == answer)
  }

  @Test func aSecondBreakIsNoAnswerAndNoReconnectionSaysWhetherItWasSent() async throws {
    let twice = ScriptedRequester([.failure(.connectionLost("died")), .failure(.connectionLost("again"))])
    await #expect(throws: RemoteCallError.noAnswer) { try await clients(twice).reserve(request) }
    #expect(twice.asked.withLock { $0 } == 2)
    // Never sent: not sent. Perhaps received before the break: no answer (it may have been made).
    let down = ScriptedRequester([.failure(.notConnected)], reconnects: false)
    await #expect(throws: RemoteCallError.notSent) { try await clients(down).reserve(request) }
    let broke = ScriptedRequester([.failure(.connectionLost("died"))], reconnects: false)
    await #expect(throws: RemoteCallError.noAnswer) { try await clients(broke).reserve(request) }
    let brokeThenDown = ScriptedRequester([.failure(.connectionLost("died")), .failure(.notConnected)])
    await #expect(throws: RemoteCallError.noAnswer) { try await clients(brokeThenDown).reserve(request) }
    // A time-out is not asked again (the question may be on its way): the saga decides.
    let slow = ScriptedRequester([.failure(.timeout)])
    await #expect(throws: RemoteCallError.noAnswer) { try await clients(slow).reserve(request) }
    #expect(slow.asked.withLock { $0 } == 1)
  }

  @Test func aQuestionThatFoundNoQueueIsAskedAgainUntilTheQueueIsBackOrTheTimeOutPasses() async throws {
    // The servers declare the queue again on another node after a moment.
    let back = ScriptedRequester([
      .failure(.unroutable(messageID: "c1")), .failure(.unroutable(messageID: "c2")),
      .success(try JSON.encode(answer)),
    ])
    #expect(try await clients(back).reserve(request) == answer)
    #expect(back.asked.withLock { $0 } == 3)
    // Never back within the time-out (1 s): delivered to nobody, so not sent.
    let gone = ScriptedRequester(Array(repeating: .failure(.unroutable(messageID: "c")), count: 10))
    await #expect(throws: RemoteCallError.notSent) { try await clients(gone).reserve(request) }
    #expect((2...4).contains(gone.asked.withLock { $0 }))
  }
}
