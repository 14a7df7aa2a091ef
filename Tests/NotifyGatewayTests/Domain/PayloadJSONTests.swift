import APNsSimulator
import Foundation
import GrocerContracts
import GrocerCore
import Testing

@testable import NotifyGateway

/// The hand-written Live Activity JSON against what `JSON.encode` writes for the same shapes
/// (the Codable types below are the reference), over every optional part and awkward text.
@Suite struct PayloadJSONTests {
  struct Reference: Encodable {
    struct APS: Encodable {
      var timestamp: Int
      var event: String
      var contentState: LiveActivityContent
      var staleDate: Int?
      var dismissalDate: Int?
      var alert: AlertText?
      var relevanceScore: Double?
      var attributesType: String?
      var attributes: PushPayloads.StartAttributes?

      enum CodingKeys: String, CodingKey {
        case timestamp, event, alert, attributes
        case contentState = "content-state"
        case staleDate = "stale-date"
        case dismissalDate = "dismissal-date"
        case relevanceScore = "relevance-score"
        case attributesType = "attributes-type"
      }
    }
    var aps: APS
  }

  static let contents = [
    LiveActivityContent(
      status: "onTheWay", etaEarliest: 1_792_521_720, etaLatest: 1_792_521_960, riderFirstName: "Ana"),
    LiveActivityContent(status: "placed", etaEarliest: nil, etaLatest: nil, riderFirstName: nil),
    LiveActivityContent(
      status: "arriving", etaEarliest: 5, etaLatest: nil, riderFirstName: "Zoë \"Z\" /\n\u{1}"),
  ]

  static let alerts: [AlertText?] = [
    nil, AlertText(title: "Arriving", body: "Ana is 2 minutes away"), AlertText(title: "\\ \t", body: "€ 😀"),
  ]

  @Test(arguments: contents) func aContentIsWrittenAndReadAsTheCoderWouldIt(content: LiveActivityContent)
    throws
  {
    #expect(
      String(decoding: content.jsonBytes, as: UTF8.self)
        == String(decoding: try JSON.encode(content), as: UTF8.self))
    #expect(try JSON.read(LiveActivityContent.self, from: Data(content.jsonBytes)) == content)
  }

  @Test(arguments: [LiveActivityEvent.start, .update, .end])
  func aLiveActivityPushIsWrittenAsTheEncoderWouldWriteIt(event: LiveActivityEvent) throws {
    for content in Self.contents {
      for alert in Self.alerts {
        for relevance in [nil, 291, 100.5, 0] as [Double?] {
          let start = event == .start ? PushPayloads.StartAttributes(orderId: "ord_1", hub: "h\"1") : nil
          let (stale, dismissal) = event == .end ? (nil, 1_792_522_380) : (1_792_521_660, nil) as (Int?, Int?)
          let written = PushPayloads.liveActivityBytes(
            content, event: event, alert: alert, timestamp: 1_792_521_480, staleDate: stale,
            dismissalDate: dismissal,
            relevance: relevance, start: start)
          let reference = Reference(
            aps: .init(
              timestamp: 1_792_521_480, event: event.rawValue, contentState: content, staleDate: stale,
              dismissalDate: dismissal, alert: alert, relevanceScore: relevance,
              attributesType: start.map { _ in PushPayloads.attributesType }, attributes: start))
          #expect(
            String(decoding: written, as: UTF8.self)
              == String(decoding: try JSON.encode(reference), as: UTF8.self))
        }
      }
    }
  }

  @Test func headersAreKeptAsAJSONObject() throws {
    let headers = ["apns-topic": "com.grocer.app", "apns-push-type": "liveactivity", "x": "\"quoted\" \\"]
    let text = SimulatorJournalStore.text(headers)
    #expect(try JSON.decode([String: String].self, from: Data(text.utf8)) == headers)
    #expect(text == String(decoding: try JSON.encode(headers), as: UTF8.self))
  }
}
