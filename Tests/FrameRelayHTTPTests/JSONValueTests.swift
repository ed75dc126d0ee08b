import Foundation
import FrameRelayHTTP
import Testing

/// JSON values as the Janus API's bodies are read and written.
struct JSONValueTests {
    @Test func jsonValuesKeepIntegersApartFromNumbersAndPrintSorted() throws {
        let text = #"{"b":[true,null,1.5,"x\"y"],"a":9007199254740993,"c":-1,"d":{"e":2.0}}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value["a"] == .integer(9_007_199_254_740_993))  // past a Double's 2^53: kept exact
        #expect(value["a"]?.unsigned == 9_007_199_254_740_993)
        #expect(value["c"]?.unsigned == nil)
        #expect(value["b"] == [true, .null, .number(1.5), "x\"y"])
        #expect(value["d"]?["e"]?.unsigned == 2)
        #expect(value["missing"] == nil && value["b"]?["x"] == nil)
        #expect(value.description == #"{"a":9007199254740993,"b":[true,null,1.5,"x\"y"],"c":-1,"d":{"e":2}}"#)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data(value.description.utf8)) == value)
    }
}
