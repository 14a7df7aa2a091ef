import Foundation
import GrocerContracts
import GrocerCore
import GrocerHTTP

/// Address to hub: `GET /v1/delivery-area?lat=&lng=` for the app, `PUT
/// /v1/hubs/{hub}/delivery-area` for staff. The point is only compared, never logged or kept.
extension StockController {
  @Sendable func deliveryArea(_ request: HTTPRequest) async throws -> HTTPResponse {
    let point: GeoPoint?
    do {
      point = try DeliveryAreaAnswer.point(
        latitude: request.queryParameter("lat"), longitude: request.queryParameter("lng"))
    } catch {
      throw error.httpError
    }
    let answer: DeliveryAreaAnswer
    if let point {
      let hub = try await stored { try $0.hub(serving: point) }
      answer = DeliveryAreaAnswer(status: hub == nil ? .outOfArea : .served, hub: hub)
    } else {
      answer = DeliveryAreaAnswer(status: .browsing, hub: defaultHub)
    }
    // The answer is this caller's: never shared by a cache, kept a minute by the app.
    return try .json(status: 200, value: answer, headers: ["Cache-Control": "private, max-age=60"])
  }

  @Sendable func putDeliveryArea(_ request: HTTPRequest) async throws -> HTTPResponse {
    let hub = try request.hubParameter()
    _ = try request.requireStaff(of: hub)
    let body = try request.decodeStrict(DeliveryAreaBody.self)
    let area: DeliveryArea
    do { area = try body.validate() } catch { throw error.httpError }
    guard try await stored({ try $0.setDeliveryArea(hub: hub, area) }) != nil else {
      throw Self.unknownHub(hub)
    }
    return try .json(status: 200, value: DeliveryAreaView(hub: hub, area: area))
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
