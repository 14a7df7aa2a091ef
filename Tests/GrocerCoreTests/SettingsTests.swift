import GrocerRuntime
import Testing

@testable import GrocerCore

@Suite struct SettingsTests {
  private let settings = Settings([
    "GROCER_HTTP_PORT": " 9090 ", "EMPTY": "", "BAD_INT": "80a", "RATIO": "0.75", "ON": "Yes", "OFF": "0",
    "MAYBE": "perhaps", "GROCER_DATA_DIR": "/tmp/grocer",
  ])

  @Test func readsStringsWithDefaultsForMissingOrEmpty() {
    #expect(settings.string("GROCER_DATA_DIR", default: "data") == "/tmp/grocer")
    #expect(settings.string("MISSING", default: "data") == "data")
    #expect(settings.string("EMPTY", default: "data") == "data")
  }

  @Test func readsIntegersTrimmingSpaces() {
    #expect(settings.int("GROCER_HTTP_PORT", default: 8081) == 9090)
    #expect(settings.int("BAD_INT", default: 8081) == 8081)
    #expect(settings.int("EMPTY", default: 8081) == 8081)
    #expect(settings.int("MISSING", default: 8081) == 8081)
  }

  @Test func readsDoubles() {
    #expect(settings.double("RATIO", default: 1) == 0.75)
    #expect(settings.double("BAD_INT", default: 1) == 1)
  }

  @Test func readsBooleansInTheUsualSpellings() {
    #expect(settings.bool("ON", default: false))
    #expect(!settings.bool("OFF", default: true))
    #expect(settings.bool("MAYBE", default: true))
    #expect(!settings.bool("MAYBE", default: false))
    #expect(settings.bool("MISSING", default: true))
    for spelling in ["1", "true", "TRUE", "yes", "on"] {
      #expect(Settings(["X": spelling]).bool("X", default: false), "\(spelling)")
    }
    for spelling in ["0", "false", "no", "OFF"] {
      #expect(!Settings(["X": spelling]).bool("X", default: true), "\(spelling)")
    }
  }

  @Test func documentsALocalJWTSecret() {
    #expect(!Settings.localJWTSecret.isEmpty)
    #expect(
      Settings([:]).string("GROCER_JWT_SECRET", default: Settings.localJWTSecret) == Settings.localJWTSecret)
  }
}
