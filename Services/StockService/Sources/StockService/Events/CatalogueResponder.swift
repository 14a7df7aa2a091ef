import Foundation
import GrocerAMQP
import GrocerContracts
import GrocerCore
import GrocerRuntime

/// Answers the `stock.catalogue` request/reply: every hub, or a page of a hub's products, each
/// as its latest `hub.changed`/`stock.changed` carried it and with that event's `sequence` as
/// `version`, so a service filling an empty copy can merge the snapshot with the events in any
/// order by keeping the higher version.
///
/// Always replies: a malformed request gets `badRequest`, an unknown hub `unknownHub`, and a
/// database failure `unavailable` (ask again).
struct CatalogueResponder: Sendable {
  let commands: StockCommands
  let logger: Logger

  func handle(_ delivery: AMQPDelivery) async -> Data {
    let reply = await answer(delivery.body)
    return (try? JSON.encode(reply)) ?? Data(#"{"error":{"code":"unavailable","detail":"no reply"}}"#.utf8)
  }

  /// The reply to the request `body`.
  func answer(_ body: Data) async -> CatalogueReply {
    let request: CatalogueRequest
    do {
      request = try JSON.decode(CatalogueRequest.self, from: body)
    } catch {
      return Self.badRequest("the request is not a catalogue request: \(error)")
    }
    let commands = self.commands
    switch request.kind {
    case .hubs:
      do {
        return CatalogueReply(hubs: try await runBlocking { try commands.catalogueHubs() })
      } catch {
        return unavailable(error, request)
      }
    case .products:
      guard let hub = request.hub else { return Self.badRequest("`hub` is required for products") }
      guard Identifier.isValid(hub) else { return Self.badRequest("`hub` is not a valid id: \(hub)") }
      if let after = request.after, !Identifier.isValid(after) {
        return Self.badRequest("`after` is not a valid SKU: \(after)")
      }
      let limit = request.limit ?? CatalogueQueue.maximumPageSize
      guard (1...CatalogueQueue.maximumPageSize).contains(limit) else {
        return Self.badRequest("`limit` must be 1…\(CatalogueQueue.maximumPageSize), got \(limit)")
      }
      do {
        let after = request.after
        guard
          let page = try await runBlocking({
            try commands.catalogueProducts(hub: hub, after: after, limit: limit)
          })
        else {
          return CatalogueReply(error: RemoteError(code: "unknownHub", detail: "there is no hub \(hub)"))
        }
        return CatalogueReply(products: page.products, next: page.next)
      } catch {
        return unavailable(error, request)
      }
    }
  }

  private static func badRequest(_ detail: String) -> CatalogueReply {
    CatalogueReply(error: RemoteError(code: "badRequest", detail: detail))
  }

  private func unavailable(_ error: any Error, _ request: CatalogueRequest) -> CatalogueReply {
    logger.error(
      "catalogue read failed",
      ["error": "\(error)", "catalogue.kind": request.kind.rawValue, "hub": request.hub ?? ""])
    return CatalogueReply(
      error: RemoteError(code: "unavailable", detail: "the catalogue could not be read; ask again"))
  }
}
