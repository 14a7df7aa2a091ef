import Foundation
import GrocerCore

@testable import StockService

/// The `code` of the `DomainError` `body` throws, or nil if it succeeds.
func errorCode<T>(_ body: () throws(DomainError) -> T) -> String? {
  do {
    _ = try body()
    return nil
  } catch {
    return error.code
  }
}

func eur(_ minorUnits: Int) -> Money { Money(minorUnits: minorUnits, currency: "EUR") }

func date(_ text: String) -> Date { Timestamp.date(from: text)! }

func data(_ text: String) -> Data { Data(text.utf8) }
