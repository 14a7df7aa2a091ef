import Foundation
import GrocerRuntime
import Testing

@testable import GrocerCore

@Suite struct LoggerTests {
  private func objects(_ sink: LogSink) throws -> [[String: String]] {
    try sink.lines.map { line in
      #expect(line.hasSuffix("\n"))
      #expect(line.dropLast().contains("\n") == false)
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
      return try #require(object)
    }
  }

  @Test func writesOneJSONObjectPerLine() throws {
    let sink = LogSink.memory()
    let logger = Logger(label: "stock", sink: sink).with(["service": "stock-service"])
    logger.info("reservation made", ["order.id": "o1", "hub": "h1"])
    logger.warning("cache refresh slow")
    let lines = try objects(sink)
    #expect(lines.count == 2)
    #expect(lines[0]["level"] == "info")
    #expect(lines[0]["logger"] == "stock")
    #expect(lines[0]["msg"] == "reservation made")
    #expect(lines[0]["order.id"] == "o1")
    #expect(lines[0]["hub"] == "h1")
    #expect(lines[0]["service"] == "stock-service")
    #expect(lines[1]["level"] == "warning")
    let ts = try #require(lines[0]["ts"])
    #expect(Timestamp.date(from: ts) != nil)
    #expect(ts.hasSuffix("Z"))
  }

  @Test func escapesQuotesBackslashesAndControlCharacters() throws {
    let sink = LogSink.memory()
    let tricky = "a \"quote\", a \\ backslash,\na newline, a\ttab, \u{01}\u{1f} controls and é 😀"
    Logger(label: "l\"abel", sink: sink).error(tricky, ["k\"ey": tricky])
    let line = try #require(try objects(sink).first)
    #expect(line["msg"] == tricky)
    #expect(line["k\"ey"] == tricky)
    #expect(line["logger"] == "l\"abel")
  }

  @Test func dropsMessagesBelowItsLevelWithoutBuildingThem() throws {
    let sink = LogSink.memory()
    let logger = Logger(label: "l", level: .warning, sink: sink)
    var built = false
    logger.debug(
      {
        built = true; return "debug"
      }())
    logger.info("info")
    logger.notice("notice")
    logger.warning("warning")
    logger.error("error")
    logger.log(.info, "info again")
    #expect(!built)
    #expect(try objects(sink).map { $0["msg"] } == ["warning", "error"])
  }

  @Test func extraMetadataOverridesTheLoggersOwn() throws {
    let sink = LogSink.memory()
    var logger = Logger(label: "l", sink: sink).with(["request.id": "r1", "a": "1"])
    logger[metadataKey: "b"] = "2"
    logger.info("m", ["a": "override"])
    let line = try #require(try objects(sink).first)
    #expect(line["request.id"] == "r1")
    #expect(line["a"] == "override")
    #expect(line["b"] == "2")
    #expect(logger[metadataKey: "b"] == "2")
  }

  @Test func parsesLevelNames() {
    #expect(Logger.Level(name: "DEBUG") == .debug)
    #expect(Logger.Level(name: "warn") == .warning)
    #expect(Logger.Level(name: "Error") == .error)
    #expect(Logger.Level(name: "verbose") == nil)
    #expect(Logger.Level.debug < .info && Logger.Level.warning < .error)
  }

  @Test func theDiscardingLoggerKeepsNothing() {
    let logger = Logger.discarding()
    logger.error("nothing")
    #expect(logger.level == .error)
  }
}
