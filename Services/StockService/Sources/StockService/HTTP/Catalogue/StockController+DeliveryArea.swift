import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP

/// Address to hub: `GET /v1/delivery-area?lat=&lng=` for the app, `PUT
/// /v1/hubs/{hub}/delivery-area` for staff. The point is only compared, never logged or kept.
extension StockController {
  /// Answers from the areas in memory; nil leaves the request to `deliveryArea`.
  @Sendable func deliveryAreaFromMemory(_ request: inout HTTPRequest) throws -> HTTPResponse? {
    guard let areas = catalogue.areas else { return nil }
    return try deliveryArea(request, among: areas)
  }

  @Sendable func deliveryArea(_ request: HTTPRequest) async throws -> HTTPResponse {
    try deliveryArea(request, among: try await deliveryAreas())
  }

  private func deliveryArea(_ request: HTTPRequest, among areas: [HubID: DeliveryArea]) throws -> HTTPResponse
  {
    let query = request.query
    let point: GeoPoint?
    do {
      point = try DeliveryAreaAnswer.point(latitude: query["lat"], longitude: query["lng"])
    } catch {
      throw error.httpError
    }
    let answer: DeliveryAreaAnswer
    if let point {
      let hub = DeliveryAreaRules.hub(serving: point, among: areas)
      answer = DeliveryAreaAnswer(status: hub == nil ? .outOfArea : .served, hub: hub)
    } else {
      answer = DeliveryAreaAnswer(status: .browsing, hub: defaultHub)
    }
    // The answer is this caller's: never shared by a cache, kept a minute by the app.
    return .json(status: 200, bytes: answer.json, headers: Self.deliveryAreaHeaders)
  }

  private static let deliveryAreaHeaders: HTTPHeaders = ["Cache-Control": "private, max-age=60"]

  @Sendable func putDeliveryArea(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    _ = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(DeliveryAreaBody.self)
    let area: DeliveryArea
    do { area = try body.validate() } catch { throw error.httpError }
    let correlationID = request.requestID
    guard try await stored({ try $0.setDeliveryArea(hub: hub, area, correlationID: correlationID) }) != nil
    else {
      throw Self.unknownHub(hub)
    }
    catalogue.invalidate(hub: hub)
    return try .json(status: 200, value: DeliveryAreaView(hub: hub, area: area))
  }
}

extension StockController {
  /// Every hub's area from memory, or read and kept.
  func deliveryAreas() async throws -> [HubID: DeliveryArea] {
    if let areas = catalogue.areas { return areas }
    let generation = catalogue.areasGeneration
    let areas = try await stored { try $0.deliveryAreas() }
    catalogue.keep(areas: areas, generation: generation)
    return areas
  }
}

/// The reply of `PUT /v1/hubs/{hub}/delivery-area`: `{ hub, area, priority }`.
struct DeliveryAreaView: Encodable {
  var hub: HubID
  var area: JSONValue
  var priority: Int

  init(hub: HubID, area: DeliveryArea) {
    self.hub = hub
    self.area = area.geoJSON
    self.priority = area.priority
  }
}
