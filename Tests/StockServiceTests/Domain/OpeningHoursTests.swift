import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import StockService

@Suite struct OpeningHoursTests {
  static let daily = OpeningHours.daily(opens: LocalTime("07:00")!, closes: LocalTime("23:00")!)
  static let allDay = OpeningHours.daily(opens: .midnight, closes: .endOfDay)
  static let lateFriday = OpeningHours(
    timeZone: "Europe/Berlin",
    weekly: [
      .init(day: .fri, opens: LocalTime("18:00")!, closes: LocalTime("02:00")!)
    ])
  static let mondayThroughTuesdayNoon = OpeningHours(
    timeZone: "Europe/Berlin",
    weekly: [
      .init(day: .mon, opens: .midnight, closes: .endOfDay),
      .init(day: .tue, opens: .midnight, closes: LocalTime("12:00")!),
    ])

  // 2026-10-20 is a Tuesday; Berlin is UTC+2 until 2026-10-25 03:00 local, then UTC+1.
  @Test(
    arguments: [
      (daily, "2026-10-20T18:42:00Z", true, nil, "2026-10-20T21:00:00Z"),
      (daily, "2026-10-20T21:30:00Z", false, "2026-10-21T05:00:00Z", nil),
      (daily, "2026-10-20T04:59:59Z", false, "2026-10-20T05:00:00Z", nil),
      (daily, "2026-10-20T05:00:00Z", true, nil, "2026-10-20T21:00:00Z"),
      (daily, "2026-10-20T21:00:00Z", false, "2026-10-21T05:00:00Z", nil),
      (daily, "2026-10-25T03:00:00Z", false, "2026-10-25T06:00:00Z", nil),  // after the DST change
      (allDay, "2026-10-20T03:00:00Z", true, nil, nil),
      (lateFriday, "2026-10-23T22:30:00Z", true, nil, "2026-10-24T00:00:00Z"),  // Sat 00:30 local
      (lateFriday, "2026-10-24T00:00:00Z", false, "2026-10-30T17:00:00Z", nil),  // next Friday, CET
      (lateFriday, "2026-10-20T12:00:00Z", false, "2026-10-23T16:00:00Z", nil),
      (mondayThroughTuesdayNoon, "2026-10-19T21:59:00Z", true, nil, "2026-10-20T10:00:00Z"),
      (OpeningHours(timeZone: "Europe/Berlin", weekly: []), "2026-10-20T12:00:00Z", false, nil, nil),
      (
        OpeningHours(timeZone: "America/New_York", weekly: daily.weekly), "2026-10-20T12:00:00Z", true, nil,
        "2026-10-21T03:00:00Z"
      ),
    ] as [(OpeningHours, String, Bool, String?, String?)])
  func statusSaysOpenOrWhenItOpens(
    hours: OpeningHours, now: String, isOpen: Bool, opensAt: String?, closesAt: String?
  ) {
    let status = hours.status(at: date(now))
    #expect(status.isOpen == isOpen)
    #expect(status.opensAt.map(Timestamp.string(from:)) == opensAt)
    #expect(status.closesAt.map(Timestamp.string(from:)) == closesAt)
  }

  @Test func hoursRoundTripThroughTheWireShape() throws {
    let json = #"{"timeZone":"Europe/Berlin","weekly":[{"closes":"24:00","day":"sun","opens":"00:00"}]}"#
    let hours = try JSON.decode(OpeningHours.self, from: data(json))
    #expect(hours.weekly == [.init(day: .sun, opens: .midnight, closes: .endOfDay)])
    #expect(String(decoding: try JSON.encode(hours), as: UTF8.self) == json)
  }

  @Test(
    arguments: [
      ("00:00", 0), ("07:30", 450), ("23:59", 1439), ("24:00", 1440), ("24:30", nil), ("7:00", nil),
      ("07-00", nil), ("ab:cd", nil), ("", nil),
    ] as [(String, Int?)])
  func localTimesParseExactlyHHMM(text: String, minutes: Int?) {
    #expect(LocalTime(text)?.minutes == minutes)
    if let time = LocalTime(text) { #expect(time.description == text) }
  }

  @Test func hubViewHasTheStatusAtTheTimeAsked() throws {
    let hub = Hub(
      id: "h1", name: "Mitte", hours: Self.daily,
      pricing: PricingSettings(minimumOrder: eur(1000), deliveryFee: eur(199)), currency: "EUR")
    let view = HubView(hub: hub, now: date("2026-10-20T21:30:00Z"))
    let object = try #require(
      try JSONSerialization.jsonObject(with: JSON.encode(view)) as? [String: Any])
    #expect(object["hub"] as? String == "h1")
    let hours = try #require(object["hours"] as? [String: Any])
    #expect(hours["isOpen"] as? Bool == false)
    #expect(hours["opensAt"] as? String == "2026-10-21T05:00:00Z")
    #expect(hours["closesAt"] is NSNull)
    #expect(object["pricing"] is [String: Any])
    #expect(object["schedule"] is [String: Any])
  }
}
