import Foundation
import GrocerContracts
import GrocerCore

/// The answer an idempotency key replays: status, content type and body, stored with the
/// attempt and replayed byte for byte. The HTTP layer writes it (`OrderReply+Answers.swift`).
public struct OrderReply: Sendable, Hashable {
  public var status: Int
  public var contentType: String
  public var body: [UInt8]

  public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
    self.status = status
    self.contentType = contentType
    self.body = body
  }
}
