import Foundation
import GrocerContracts
import GrocerCore
import GrocerTestSupport
import Testing

extension LocalSystem {
  /// Puts enough of `sku` into `customer`'s cart at `hub` to pass the hub's minimum order, once
  /// the catalogue has reached CartService (a product not yet known is refused); returns the cart.
  func fillCart(hub: String, sku: String, customer: String?) async throws -> CartView {
    let carts = Recorder<CartView>()
    let filled = try await eventually(timeout: .seconds(30)) {
      let one = try await self.call(
        "PUT", "/v1/hubs/\(hub)/cart/items/\(sku)", token: customer, json: ["quantity": 1])
      guard one.status == 200, let view = try? JSON.decode(CartView.self, from: one.body),
        let price = view.lines.first?.unitPrice.minorUnits, price > 0
      else { return false }
      let quantity = min(30, 1_500 / price + 1)
      let enough = try await self.call(
        "PUT", "/v1/hubs/\(hub)/cart/items/\(sku)", token: customer, json: ["quantity": quantity])
      guard enough.status == 200, let cart = try? JSON.decode(CartView.self, from: enough.body) else {
        return false
      }
      carts.append(cart)
      return cart.lines.first?.quantity == quantity
    }
    try #require(filled, "the catalogue did not reach CartService")
    return try #require(carts.all.last)
  }

  /// Places `customer`'s order for `cart` with `key`; returns the order id (requires a 201).
  func placeOrder(
    hub: String, cart: CartView, customer: String?, key: String = UUID().uuidString,
    paymentToken: String = "tok_e2e"
  ) async throws -> String {
    let placed = try await call(
      "POST", "/v1/orders", token: customer,
      json: [
        "hub": hub, "cartVersion": cart.version, "payment": ["method": "applePay", "token": paymentToken],
        "deliverTo": ["lat": 52.5155, "lng": 13.4540],
      ], headers: ["Idempotency-Key": key])
    try #require(placed.status == 201, "\(String(decoding: placed.body, as: UTF8.self))")
    return try #require(
      (try JSONSerialization.jsonObject(with: placed.body) as? [String: Any])?["orderId"] as? String)
  }
}
