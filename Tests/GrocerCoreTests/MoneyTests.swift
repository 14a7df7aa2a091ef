import Foundation
import Testing

@testable import GrocerCore

@Suite struct MoneyTests {
  @Test func encodesAsMinorUnitsAndCurrency() throws {
    let json = try JSON.encode(Money(minorUnits: 129, currency: "EUR"))
    #expect(String(decoding: json, as: UTF8.self) == #"{"currency":"EUR","minorUnits":129}"#)
  }

  @Test func decodesWhatItEncodes() throws {
    let money = Money(minorUnits: -250, currency: "CHF")
    #expect(try JSON.decode(Money.self, from: JSON.encode(money)) == money)
  }

  @Test func refusesAFractionalAmount() {
    #expect(throws: (any Error).self) {
      try JSON.decode(Money.self, from: Data(#"{"minorUnits":1.5,"currency":"EUR"}"#.utf8))
    }
  }

  @Test func defaultsToEuroAndHasAZero() {
    #expect(Money(minorUnits: 5).currency == "EUR")
    #expect(Money.zero() == Money(minorUnits: 0, currency: "EUR"))
    #expect(Money.zero("USD").currency == "USD")
    #expect(Money(minorUnits: 129).description == "129 EUR")
  }

  @Test func checksTheCurrencyShape() {
    #expect(Money(minorUnits: 1, currency: "EUR").hasValidCurrency)
    #expect(!Money(minorUnits: 1, currency: "eur").hasValidCurrency)
    #expect(!Money(minorUnits: 1, currency: "EURO").hasValidCurrency)
    #expect(!Money(minorUnits: 1, currency: "").hasValidCurrency)
    #expect(!Money(minorUnits: 1, currency: "ÄÖÜ").hasValidCurrency)
  }
}
