import Foundation
import GrocerContracts
import GrocerCore

/// How each answer of `POST /v1/orders` is written: its status, and JSON or problem+json.
extension OrderReply {
  private static func json(_ status: Int, _ value: [String: JSONValue], problem: Bool = false) -> OrderReply {
    let bytes = (try? JSON.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8)
    return OrderReply(
      status: status, contentType: problem ? "application/problem+json" : "application/json", body: bytes)
  }

  private static func value(_ encodable: some Encodable) -> JSONValue {
    (try? JSON.decode(JSONValue.self, from: JSON.encode(encodable))) ?? .null
  }

  /// 201 `{ orderId, status: "confirmed", total }`.
  /// Written by hand (one per order): the bytes `json(_:_:)` writes for the same fields.
  public static func confirmed(orderId: String, total: Money) -> OrderReply {
    var out = JSONBytes(capacity: 112)
    out.beginObject()
    out.key("orderId")
    out.string(orderId)
    out.key("status")
    out.string("confirmed")
    out.key("total")
    out.money(total)
    out.endObject()
    return OrderReply(status: 201, body: out.bytes)
  }

  /// 202 `{ orderId, status: "needsAction", paymentId, action: { type, url } }`.
  public static func needsAction(orderId: String, paymentId: String, action: PaymentAction) -> OrderReply {
    json(
      202,
      [
        "orderId": .string(orderId), "status": .string("needsAction"), "paymentId": .string(paymentId),
        "action": value(action),
      ])
  }

  /// 202 `{ orderId, status: "pending" }`: not known yet; ask by key or id (never stored).
  public static func pending(orderId: String) -> OrderReply {
    json(202, ["orderId": .string(orderId), "status": .string("pending")])
  }

  /// 402 `{ orderId, status: "declined", message }`.
  public static func declined(orderId: String, message: String) -> OrderReply {
    json(402, ["orderId": .string(orderId), "status": .string("declined"), "message": .string(message)])
  }

  /// 409 `{ orderId, status: "cartChanged", cart }`: nothing reserved, nothing charged.
  public static func cartChanged(orderId: String, cart: CartView) -> OrderReply {
    json(
      409,
      [
        "orderId": .string(orderId), "status": .string("cartChanged"), "code": .string("cartChanged"),
        "cart": value(cart),
      ])
  }

  /// A problem+json answer that ends the attempt (an empty or blocked cart, 422; an unknown hub,
  /// 404), with the cart when there is one.
  public static func problem(
    status: Int, orderId: String, code: String, detail: String, extra: [String: JSONValue] = [:]
  ) -> OrderReply {
    var members = extra
    members["type"] = .string("https://grocer.example/problems/\(code)")
    members["title"] = .string(status == 404 ? "Not Found" : "Unprocessable Content")
    members["status"] = .number(Double(status))
    members["code"] = .string(code)
    members["detail"] = .string(detail)
    members["orderId"] = .string(orderId)
    return json(status, members, problem: true)
  }

  /// 422 for a cart that cannot be checked out: empty, or with a blocker.
  public static func blocked(orderId: String, cart: CartView) -> OrderReply {
    if cart.lines.isEmpty {
      return problem(
        status: 422, orderId: orderId, code: "emptyCart", detail: "the cart has nothing to order",
        extra: ["cart": value(cart)])
    }
    let detail =
      switch cart.blocker {
      case .belowMinimum(let missing)?:
        "the order is below the hub's minimum by \(missing.minorUnits) minor units of \(missing.currency)"
      case .hubClosed?: "the hub is closed"
      case nil: "the cart cannot be checked out"
      }
    return problem(
      status: 422, orderId: orderId, code: "checkoutBlocked", detail: detail,
      extra: ["cart": value(cart), "blocker": value(cart.blocker)])
  }
}

extension OrderReply {
  /// The reply a checkout's answer is given as (and stored as, for its key to replay).
  public init(_ answer: CheckoutAnswer) {
    switch answer {
    case .confirmed(let orderId, let total): self = .confirmed(orderId: orderId, total: total)
    case .needsAction(let orderId, let paymentId, let action):
      self = .needsAction(orderId: orderId, paymentId: paymentId, action: action)
    case .declined(let orderId, let message): self = .declined(orderId: orderId, message: message)
    case .cartChanged(let orderId, let cart): self = .cartChanged(orderId: orderId, cart: cart)
    case .blocked(let orderId, let cart): self = .blocked(orderId: orderId, cart: cart)
    case .unknownHub(let orderId, let hub):
      self = .problem(status: 404, orderId: orderId, code: "unknownHub", detail: "there is no hub \(hub)")
    case .refused(let orderId, let code, let detail):
      self = .problem(status: 422, orderId: orderId, code: code, detail: detail)
    }
  }
}
