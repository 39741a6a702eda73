import Testing
@testable import IdPipeCore

/// The writer the reports render into as the plan goes holds what an array would, however it grew; numbers are
/// written as `String` writes them; the rendering of an account is the same into either.
@Suite struct ByteOutputTests {
    @Test func aWriterHoldsWhatAnArrayHolds() {
        let writer = ByteWriter(capacity: 1)
        var out = writer
        var array: [UInt8] = []
        for round in 0..<300 {
            let text = String(repeating: "é\(round)\"", count: round % 17)
            out.put(text)
            array.put(text)
            out.append(UInt8(truncatingIfNeeded: round))
            array.append(UInt8(truncatingIfNeeded: round))
            JSONText.append(round % 3 == 0 ? nil : text + "\n\u{1}", to: &out)
            JSONText.append(round % 3 == 0 ? nil : text + "\n\u{1}", to: &array)
        }
        #expect(writer.count == array.count)
        // Compared to a Bool: a failure would print both arrays, 40,000 bytes each.
        let same = writer.withBytes(0..<writer.count) { Array($0) } == array
        #expect(same, "the writer's bytes differ from the array's")
        #expect(writer.withBytes(5..<9) { Array($0) } == Array(array[5..<9]))
    }

    @Test(arguments: [0, 7, 10, 99, 100, 12_345, Int.max, -1, -907, Int.min])
    func decimalsAreWrittenAsStringWritesThem(_ value: Int) {
        var out: [UInt8] = [UInt8(ascii: "x")]
        out.putDecimal(value)
        #expect(String(decoding: out, as: UTF8.self) == "x" + String(value))
    }

    @Test(arguments: [false, true])
    func anAccountRendersTheSameIntoEither(_ reveal: Bool) {
        let account = ReportAccount(sequence: 3, uid: "u\"1", file: "in/accounts.json", line: 1_204, relay: "relayAddress", consentReview: nil,
                                    selection: "selected", selectionDetail: "deletion requested", nameOutcome: "fill from legacy",
                                    email: "jane@privaterelay.appleid.com", displayName: nil, phone: "+14155550100",
                                    providers: "apple.com facebook.com", deletionRequest: "2025-01-01T00:00:00Z")
        let actions = [ReportAction(sequence: 3, uid: "u\"1", kind: "delete-firestore", state: "planned", detail: "users/{uid}", reason: nil,
                                    value: "Jane", attempts: 12, result: nil, policy: nil, resent: 0, wouldDelete: 4, counted: "yes", deleted: nil)]
        let masking = Masking(reveal: reveal)
        var array: [UInt8] = [], scratch: [UInt8] = []
        JSONReport.appendAccount(account, actions, masking: masking, to: &array, scratch: &scratch)
        let writer = ByteWriter()
        var out = writer
        JSONReport.appendAccount(account, actions, masking: masking, to: &out, scratch: &scratch)
        let text = String(decoding: array, as: UTF8.self)
        #expect(writer.withBytes(0..<writer.count) { Array($0) } == array)
        #expect(text.contains("\"source\": \"in/accounts.json:1204\"") && text.contains("\"attempts\": 12, \"wouldDelete\": 4"), "\(text)")
    }
}
