import GrocerHTTP
import Testing

@Suite struct PathParametersTests {
  @Test func valuesAreFoundByNameAndReplaced() {
    var parameters: PathParameters = ["hub": "h1", "sku": "p1"]
    #expect(parameters["hub"] == "h1")
    #expect(parameters["sku"] == "p1")
    #expect(parameters["order"] == nil)
    parameters["hub"] = "h2"
    #expect(parameters["hub"] == "h2")
    #expect(parameters.pairs.map(\.name) == ["sku", "hub"])
    parameters["sku"] = nil
    #expect(parameters == ["hub": "h2"])
    #expect(!parameters.isEmpty)
    #expect(PathParameters().isEmpty)
  }

  @Test func moreThanFourAreKept() {
    var parameters = PathParameters()
    for index in 1...6 { parameters["p\(index)"] = "value-\(index)-that-is-longer-than-fifteen-bytes" }
    for index in 1...6 {
      #expect(parameters["p\(index)"] == "value-\(index)-that-is-longer-than-fifteen-bytes")
    }
    parameters["p2"] = nil
    #expect(parameters.pairs.map(\.name) == ["p1", "p3", "p4", "p5", "p6"])
    #expect(parameters["p6"] != nil)
  }
}
