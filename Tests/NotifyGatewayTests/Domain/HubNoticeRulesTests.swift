import Foundation
import GrocerContracts
import Testing

@testable import NotifyGateway

/// What a hub notice may be and how long it lives, without I/O.
@Suite struct HubNoticeRulesTests {
  let now = Date(timeIntervalSince1970: 1_790_000_000.7)

  func make(_ title: String = "Rain", _ body: String = "Slower today.", minutes: Int? = nil)
    throws(HubNoticeRules.Refusal) -> HubNotice
  {
    try HubNoticeRules.notice(id: "ntc_1", hub: "h1", title: title, body: body, minutes: minutes, at: now)
  }

  @Test func aNoticeLivesItsMinutesFromTheWholeSecondItWasPosted() throws {
    let notice = try make("  Rain delay \n", " Riders are slower. ", minutes: 90)
    #expect(notice.title == "Rain delay" && notice.body == "Riders are slower.")
    #expect(notice.postedAt == Date(timeIntervalSince1970: 1_790_000_000))
    #expect(notice.expiresAt == notice.postedAt + 90 * 60)
    #expect(try make().expiresAt == notice.postedAt + 60 * 60, "an hour when not said")
    #expect(notice.isCurrent(at: notice.expiresAt - 1) && !notice.isCurrent(at: notice.expiresAt))
    #expect(HubNoticeRules.isWorthBroadcasting(notice, at: notice.postedAt))
    #expect(!HubNoticeRules.isWorthBroadcasting(notice, at: notice.expiresAt))
  }

  @Test func badNoticesAreRefusedNamingTheField() {
    func code(_ title: String, _ body: String, _ minutes: Int? = nil) -> String? {
      do {
        _ = try make(title, body, minutes: minutes)
        return nil
      } catch { return error.code }
    }
    #expect(code("", "x") == "titleRequired")
    #expect(code("x", " ") == "bodyRequired")
    #expect(code(String(repeating: "t", count: 61), "x") == "titleRequired")
    #expect(code(String(repeating: "t", count: 60), String(repeating: "b", count: 240)) == nil)
    #expect(code("x", String(repeating: "b", count: 241)) == "bodyRequired")
    #expect(code("a\u{7}b", "x") == "titleInvalid")
    #expect(code("x", "tab\there") == "bodyInvalid")
    #expect(code("x", "y", 0) == "invalidDuration" && code("x", "y", 1441) == "invalidDuration")
    #expect(code("x", "y", 1) == nil && code("x", "y", 1440) == nil)
  }
}
